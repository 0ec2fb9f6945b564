import { accessTokenExpiry, jwtExpiry } from '../../../src/core/tokens/token-expiry';

const jwt = (claims: unknown) => ['e30', Buffer.from(JSON.stringify(claims)).toString('base64url'), 'c2lnbmF0dXJl'].join('.');

describe('access token expiry', () => {
  const issuedAt = Date.UTC(2026, 10, 1, 9, 0, 0);
  const lifetimeMs = 30 * 60_000;

  it('prefers the JWT exp claim over expiresIn and the lifetime', () => {
    const exp = issuedAt / 1000 + 600;
    expect(accessTokenExpiry({ accessToken: jwt({ exp }), expiresIn: 1800 }, issuedAt, lifetimeMs)).toEqual({
      expiresAt: exp * 1000,
      source: 'jwt',
    });
  });

  it('falls back to expiresIn, counted from when the request was sent', () => {
    expect(accessTokenExpiry({ accessToken: 'opaque-token', expiresIn: 900 }, issuedAt, lifetimeMs)).toEqual({
      expiresAt: issuedAt + 900_000,
      source: 'expires_in',
    });
  });

  it('reads the common expiry fields of a reply, choosing the earliest when it states several', () => {
    const at = (minutes: number) => new Date(issuedAt + minutes * 60_000).toISOString();
    expect(accessTokenExpiry({ accessToken: 'opaque-token', accessTokenExpiresAt: at(10) }, issuedAt, lifetimeMs)).toEqual({
      expiresAt: issuedAt + 10 * 60_000,
      source: 'expires_at',
    });
    expect(accessTokenExpiry({ accessToken: 'opaque-token', expires_in: '300' }, issuedAt, lifetimeMs)).toEqual({
      expiresAt: issuedAt + 300_000,
      source: 'expires_in',
    });
    // Epoch seconds and milliseconds both read as instants.
    expect(accessTokenExpiry({ accessToken: 'opaque-token', accessExpires: issuedAt / 1000 + 120 }, issuedAt, lifetimeMs).expiresAt).toBe(
      issuedAt + 120_000,
    );
    expect(accessTokenExpiry({ accessToken: 'opaque-token', expires_at: issuedAt + 240_000 }, issuedAt, lifetimeMs).expiresAt).toBe(
      issuedAt + 240_000,
    );
    expect(
      accessTokenExpiry(
        { accessToken: 'opaque-token', expiresIn: 1800, expiresAt: at(20), accessTokenExpiresIn: 900 },
        issuedAt,
        lifetimeMs,
      ),
    ).toEqual({ expiresAt: issuedAt + 15 * 60_000, source: 'expires_in' });
    // A stated time at or before the request says nothing usable; garbage neither.
    expect(accessTokenExpiry({ accessToken: 'opaque-token', expiresAt: at(-5), expires_at: 'soon' }, issuedAt, lifetimeMs).source).toBe(
      'lifetime',
    );
  });

  it('falls back to issued-at plus the configured lifetime', () => {
    expect(accessTokenExpiry({ accessToken: 'opaque-token' }, issuedAt, lifetimeMs)).toEqual({
      expiresAt: issuedAt + lifetimeMs,
      source: 'lifetime',
    });
    expect(accessTokenExpiry({ accessToken: 'opaque-token', expiresIn: 0 }, issuedAt, lifetimeMs).source).toBe('lifetime');
    // The client's reading of a reply without expiresIn (an opaque token, the minimal dialect).
    expect(accessTokenExpiry({ accessToken: 'opaque-token', expiresIn: null }, issuedAt, lifetimeMs)).toEqual({
      expiresAt: issuedAt + lifetimeMs,
      source: 'lifetime',
    });
  });

  it.each([
    ['three parts but no JSON', 'a.b.c'],
    ['no exp', jwt({ sub: 'x' })],
    ['exp as a string', jwt({ exp: '1800000000' })],
    ['negative exp', jwt({ exp: -5 })],
    ['absurd exp', jwt({ exp: 1e300 })],
    ['a JSON array payload', jwt([1, 2])],
    ['null payload', jwt(null)],
  ])('ignores a JWT with %s', (_name, token) => {
    expect(jwtExpiry(token)).toBeUndefined();
  });

  it('reads fractional exp to the millisecond below', () => {
    expect(jwtExpiry(jwt({ exp: 1_800_000_000.5678 }))).toBe(1_800_000_000_567);
  });
});
