import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call, jwtPayload } from './support';

describe('sandbox: institution users and tokens', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0, 0));
  let sandbox: RunningSandbox;
  let institution: string;
  let companyId: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock, demo: false });
    institution = (await sandbox.admin.createInstitution({ id: 'inst_test' })).header;
    companyId = (await sandbox.admin.createCompany({ name: 'Token Co' })).publicId;
  });
  afterAll(() => sandbox.stop());

  const post = (path: string, body: unknown, header = institution) => call(sandbox.baseUrl, path, { institution: header, body });

  async function newUser(name = `u-${randomUUID().slice(0, 8)}`) {
    const identity = { username: name, email: `${name}@example.com`, external_id: randomUUID() };
    const created = await post('/institution/users/create/', identity);
    expect(created.status).toBe(201);
    return { identity, tokens: created.body as { accessToken: string; refreshToken: string; expiresIn: number } };
  }

  it('creates a user: 201 with the user, a JWT pair living 30 minutes on the clock, and a request id', async () => {
    const identity = { username: 'dana', email: 'dana@example.com', external_id: randomUUID() };
    const res = await post('/institution/users/create/', identity);
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]+$/);
    expect(res.body.user).toEqual(identity);
    expect(res.body.expiresIn).toBe(1800);
    const access = jwtPayload(res.body.accessToken);
    expect(access).toMatchObject({
      sub: identity.external_id,
      token_type: 'access',
      iat: clock.now() / 1000,
      exp: clock.now() / 1000 + 1800,
    });
    expect(jwtPayload(res.body.refreshToken)).toMatchObject({ token_type: 'refresh', exp: clock.now() / 1000 + 7 * 86400 });
  });

  it('refuses a second user with the same external_id or username (409 user_exists)', async () => {
    const { identity } = await newUser();
    const again = await post('/institution/users/create/', { ...identity, username: 'someone-else' });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ type: 'conflict_error', code: 'user_exists', requestId: again.headers.get('x-request-id') });
    const sameName = await post('/institution/users/create/', { ...identity, external_id: randomUUID() });
    expect(sameName.status).toBe(409);
  });

  it('names the bad field of a body (400 invalid_request) and refuses a bad or missing Institution header (401)', async () => {
    const bad = await post('/institution/users/create/', { username: 'x', email: 'not-an-email', external_id: randomUUID() });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: 'validation_error', code: 'invalid_request', param: 'email' });
    const wrongSecret = await post('/institution/users/create/', { username: 'x' }, 'inst_test:wrong-secret');
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.error.code).toBe('institution_invalid');
    const missing = await call(sandbox.baseUrl, '/institution/users/token/verify/', { body: { token: 'x' } });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('missing_credentials');
  });

  it('rotates refresh tokens: the one used is dead, and reusing it kills the tokens issued from it', async () => {
    const { identity, tokens } = await newUser();
    const first = await post('/institution/users/token/refresh/', { refresh: tokens.refreshToken });
    expect(first.status).toBe(200);
    expect(first.body.refreshToken).not.toBe(tokens.refreshToken);
    expect(first.body.expiresIn).toBe(1800);

    const reused = await post('/institution/users/token/refresh/', { refresh: tokens.refreshToken });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toMatchObject({ type: 'invalid_grant', code: 'refresh_token_used' });
    // Two holders of one refresh token: the whole family is revoked.
    const afterReuse = await post('/institution/users/token/refresh/', { refresh: first.body.refreshToken });
    expect(afterReuse.body.error.code).toBe('refresh_token_revoked');

    const stats = await sandbox.admin.stats();
    expect(stats.refreshesPerUser[identity.external_id]).toBe(1);
    expect(stats.refusedRefreshesPerUser[identity.external_id]).toBe(2);
  });

  it('expires access tokens after 30 minutes and refresh tokens after 7 days, on the sandbox clock', async () => {
    const { tokens } = await newUser();
    await sandbox.admin.grantCompanyAccess({
      userId: (await sandbox.admin.findUser({ externalId: jwtPayload(tokens.accessToken).sub as string })).userId,
      companyId,
    });
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: tokens.accessToken })).status).toBe(200);
    clock.advance(30 * 60_000 - 1000);
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: tokens.accessToken })).status).toBe(200);
    clock.advance(1000);
    const expired = await call(sandbox.baseUrl, '/companies/', { bearer: tokens.accessToken });
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe('token_expired');
    expect((await post('/institution/users/token/verify/', { token: tokens.accessToken })).body).toEqual({
      valid: false,
      reason: 'expired',
    });

    const refreshed = await post('/institution/users/token/refresh/', { refresh: tokens.refreshToken });
    expect(refreshed.status).toBe(200);
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: refreshed.body.accessToken })).status).toBe(200);
    clock.advance(7 * 86_400_000);
    const stale = await post('/institution/users/token/refresh/', { refresh: refreshed.body.refreshToken });
    expect(stale.body.error.code).toBe('refresh_token_expired');
  });

  it('verifies tokens: valid with expiresAt, revoked after expire, invalid when forged or from another institution', async () => {
    const { tokens } = await newUser();
    const ok = await post('/institution/users/token/verify/', { token: tokens.accessToken });
    expect(ok.body).toEqual({ valid: true, expiresAt: new Date((jwtPayload(tokens.accessToken).exp as number) * 1000).toISOString() });
    expect((await post('/institution/users/token/verify/', { token: tokens.refreshToken })).body.valid).toBe(true);

    const [h, p] = tokens.accessToken.split('.');
    expect((await post('/institution/users/token/verify/', { token: `${h}.${p}.forged` })).body).toEqual({
      valid: false,
      reason: 'invalid',
    });
    const other = await sandbox.admin.createInstitution({ id: 'inst_other' });
    expect((await post('/institution/users/token/verify/', { token: tokens.accessToken }, other.header)).body.reason).toBe('invalid');
    expect((await post('/institution/users/token/refresh/', { refresh: tokens.refreshToken }, other.header)).body.error.code).toBe(
      'refresh_token_invalid',
    );

    await post('/institution/users/token/expire/', { refresh: tokens.refreshToken });
    expect((await post('/institution/users/token/verify/', { token: tokens.accessToken })).body).toEqual({
      valid: false,
      reason: 'revoked',
    });
  });

  it('expire kills every token of the user, is idempotent, and refuses a token it never issued', async () => {
    const { identity, tokens } = await newUser();
    const second = await post('/institution/users/token/retrieve/', identity);
    const expire = await post('/institution/users/token/expire/', { refresh: tokens.refreshToken });
    expect(expire.status).toBe(200);
    expect(expire.body).toEqual({ expired: true });
    expect((await post('/institution/users/token/expire/', { refresh: tokens.refreshToken })).status).toBe(200);

    const revokedAccess = await call(sandbox.baseUrl, '/companies/', { bearer: second.body.accessToken });
    expect(revokedAccess.body.error.code).toBe('token_revoked');
    expect((await post('/institution/users/token/refresh/', { refresh: second.body.refreshToken })).body.error.code).toBe(
      'refresh_token_revoked',
    );

    const unknown = await post('/institution/users/token/expire/', { refresh: 'eyJhbGciOiJIUzI1NiJ9.eyJqdGkiOiJ4In0.sig' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ type: 'invalid_grant', code: 'refresh_token_invalid' });

    // Recovery after expire: retrieve issues a working pair again.
    const recovered = await post('/institution/users/token/retrieve/', identity);
    expect((await post('/institution/users/token/verify/', { token: recovered.body.accessToken })).body.valid).toBe(true);
  });

  it('retrieve issues a new pair and leaves the earlier tokens valid; 404 unless all three fields match', async () => {
    const { identity, tokens } = await newUser();
    const res = await post('/institution/users/token/retrieve/', identity);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['accessToken', 'expiresIn', 'refreshToken']);
    expect(res.body.accessToken).not.toBe(tokens.accessToken);
    expect((await post('/institution/users/token/verify/', { token: tokens.accessToken })).body.valid).toBe(true);
    expect((await post('/institution/users/token/refresh/', { refresh: tokens.refreshToken })).status).toBe(200);

    const wrongEmail = await post('/institution/users/token/retrieve/', { ...identity, email: 'other@example.com' });
    expect(wrongEmail.status).toBe(404);
    expect(wrongEmail.body.error.code).toBe('not_found');
    expect((await sandbox.admin.stats()).retrievesPerUser[identity.external_id]).toBe(1);
  });

  it('refuses tokens of a disabled user', async () => {
    const { identity, tokens } = await newUser();
    const user = await sandbox.admin.findUser({ externalId: identity.external_id });
    await sandbox.admin.grantCompanyAccess({ userId: user.userId, companyId });
    await sandbox.admin.disableUser({ userId: user.userId });
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: tokens.accessToken })).body.error.code).toBe('user_disabled');
    expect((await post('/institution/users/token/retrieve/', identity)).body.error.code).toBe('user_disabled');
    await sandbox.admin.enableUser({ userId: user.userId });
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: tokens.accessToken })).status).toBe(200);
  });
});
