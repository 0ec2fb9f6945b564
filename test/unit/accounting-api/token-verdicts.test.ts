import { expiryOf, verdictOf } from '../../../src/core/accounting-api/token-verdicts';

/** The 2xx bodies of verify and expire, which spec §4.1 does not show (docs/assumptions.md, "Verify and expire bodies"). */

const OPAQUE = 'opaque-access-token-0123456789';

function jwt(payload: Record<string, unknown>): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(payload)}.c2lnbmF0dXJl`;
}

describe('verdictOf: a verify 2xx is valid unless a recognised marker says no', () => {
  it.each([
    ['valid: false', { valid: false }, 'invalid'],
    ['RFC 7662 active: false', { active: false }, 'invalid'],
    ['isValid: false', { isValid: false }, 'invalid'],
    ['is_valid: false', { is_valid: false }, 'invalid'],
    ['a flag sent as the string "false"', { is_valid: 'False' }, 'invalid'],
    ['expired: true', { expired: true }, 'expired'],
    ['revoked: true', { revoked: true }, 'revoked'],
    ['success: false', { success: false }, 'invalid'],
    ['status INVALID', { status: 'INVALID' }, 'invalid'],
    ['status inactive', { status: 'inactive' }, 'invalid'],
    ['status expired', { status: 'expired' }, 'expired'],
    ['state Revoked', { state: 'Revoked' }, 'revoked'],
    ['token_status revoked', { token_status: 'revoked' }, 'revoked'],
    ['tokenStatus EXPIRED', { tokenStatus: ' EXPIRED ' }, 'expired'],
    ['result invalid', { result: 'invalid' }, 'invalid'],
    ['status FAILED', { status: 'FAILED' }, 'invalid'],
    ['status error', { status: 'error' }, 'invalid'],
  ])('%s is invalid (%s)', (_name, body, reason) => {
    expect(verdictOf(body, OPAQUE)).toEqual({ ...body, valid: false, reason });
  });

  it.each([
    ['valid: true with status INVALID', { valid: true, status: 'INVALID' }, 'invalid'],
    ['active: true with expired: true', { active: true, expired: true }, 'expired'],
    ['isValid: true with result revoked', { isValid: true, result: 'revoked' }, 'revoked'],
  ])('a contradictory body (%s) is read on the safe side: invalid', (_name, body, reason) => {
    expect(verdictOf(body, OPAQUE)).toMatchObject({ valid: false, reason });
  });

  it.each([
    ["the body's own reason, one of ours", { valid: false, reason: 'Revoked', status: 'expired' }, 'revoked'],
    ['a specific marker over a generic one', { valid: false, status: 'expired' }, 'expired'],
    ['a specific marker over free text', { status: 'revoked', reason: 'refresh token reused' }, 'revoked'],
    ['free text when no marker says why', { valid: false, reason: 'signature mismatch' }, 'signature mismatch'],
  ])('the reason: %s', (_name, body, reason) => {
    expect(verdictOf(body, OPAQUE)).toMatchObject({ valid: false, reason });
  });

  it.each([
    ['an empty body', ''],
    ['null', null],
    ['an array', [{ valid: false }]],
    ['{}', {}],
    ['status OK', { status: 'OK' }],
    ['status ACTIVE', { status: 'ACTIVE' }],
    ['status valid', { status: 'valid' }],
    ['result success', { result: 'success' }],
    ['a status word we do not know', { state: 'suspicious' }],
    ['a numeric status', { status: 200 }],
    ['expired: false', { expired: false }],
    ['success: true', { success: true }],
    ['valid: 0 (not a flag we read)', { valid: 0 }],
    ['a marker one level down (not read)', { data: { valid: false } }],
    ['a reason without a marker', { reason: 'expired' }],
  ])('%s stays valid', (_name, body) => {
    expect(verdictOf(body, OPAQUE)).toMatchObject({ valid: true, expiresAt: null });
  });

  it("a valid verdict's expiry is the body's as sent, else the JWT's exp", () => {
    const exp = Date.UTC(2026, 10, 27, 10, 0, 0) / 1000;
    expect(verdictOf({ status: 'ACTIVE' }, jwt({ exp }))).toMatchObject({ valid: true, expiresAt: '2026-11-27T10:00:00.000Z' });
    expect(verdictOf({ expiresAt: '2026-11-27T11:00:00Z' }, jwt({ exp }))).toMatchObject({
      valid: true,
      expiresAt: '2026-11-27T11:00:00Z',
    });
  });
});

describe('expiryOf: an expire 2xx is done unless the body says it was not', () => {
  it.each([
    ['expired: false', { expired: false }],
    ['success: false', { success: false }],
    ['status FAILED', { status: 'FAILED' }],
    ['result error', { result: 'error' }],
    ['a contradictory body: expired: true with status failed', { expired: true, status: 'failed' }],
  ])('%s is not done', (_name, body) => {
    expect(expiryOf(body)).toEqual({ ...body, expired: false });
  });

  it.each([
    ['an empty body', ''],
    ['{}', {}],
    ['expired: true', { expired: true }],
    ['status OK', { status: 'OK' }],
    // Token-state words describe the tokens after the call: an expired or revoked token is what expire is for.
    ['status expired', { status: 'expired' }],
    ['status revoked', { status: 'REVOKED' }],
    ['status invalid', { status: 'invalid' }],
    ['valid: false', { valid: false }],
  ])('%s is done', (_name, body) => {
    expect(expiryOf(body)).toMatchObject({ expired: true });
  });
});
