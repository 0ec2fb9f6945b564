import {
  AccountingApiError,
  ApiValidationError,
  AuthenticationError,
  CompanyAccessRemovedError,
  CompanyMismatchError,
  ConflictError,
  CreatorDisabledError,
  InvalidGrantError,
  KeyExpiredError,
  KeyRevokedError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  TokenExpiredError,
  TokenRevokedError,
  UserExistsError,
  describeRequest,
  errorFromResponse,
  parseRetryAfter,
} from '../../../src/core/accounting-api';
import { AcctopsError } from '../../../src/core/shared/errors';
import { apiError } from './fake-transport';

const context = { request: 'GET /api/v1/companies/', now: Date.UTC(2026, 10, 1, 9, 0, 0) };

describe('errorFromResponse', () => {
  // Every row of the error table in docs/assumptions.md.
  const cases: [number, string, string, new (...args: never[]) => AccountingApiError][] = [
    [401, 'authentication_error', 'missing_credentials', AuthenticationError],
    [401, 'authentication_error', 'invalid_credentials', AuthenticationError],
    [401, 'authentication_error', 'institution_invalid', AuthenticationError],
    [401, 'authentication_error', 'key_expired', KeyExpiredError],
    [401, 'authentication_error', 'key_revoked', KeyRevokedError],
    [401, 'authentication_error', 'creator_disabled', CreatorDisabledError],
    [401, 'authentication_error', 'company_access_removed', CompanyAccessRemovedError],
    [401, 'authentication_error', 'token_expired', TokenExpiredError],
    [401, 'authentication_error', 'token_revoked', TokenRevokedError],
    [401, 'authentication_error', 'token_invalid', AuthenticationError],
    [400, 'invalid_grant', 'refresh_token_invalid', InvalidGrantError],
    [400, 'invalid_grant', 'refresh_token_expired', InvalidGrantError],
    [400, 'invalid_grant', 'refresh_token_used', InvalidGrantError],
    [400, 'invalid_grant', 'refresh_token_revoked', InvalidGrantError],
    [403, 'permission_error', 'permission_denied', PermissionDeniedError],
    [403, 'company_mismatch_error', 'company_mismatch', CompanyMismatchError],
    [404, 'not_found_error', 'not_found', NotFoundError],
    [409, 'conflict_error', 'user_exists', UserExistsError],
    [409, 'conflict_error', 'state_prevents_change', ConflictError],
    [400, 'validation_error', 'invalid_request', ApiValidationError],
    [429, 'rate_limit_error', 'rate_limited', RateLimitError],
    [500, 'api_error', 'internal_error', ServerError],
    [502, 'api_error', 'bad_gateway', ServerError],
    [503, 'api_error', 'unavailable', ServerError],
  ];

  it.each(cases)('%i %s/%s becomes the right class', (status, type, code, Cls) => {
    const error = errorFromResponse(apiError(status, type, code), context);
    expect(error).toBeInstanceOf(Cls);
    expect(error.constructor).toBe(Cls);
    expect(error).toBeInstanceOf(AccountingApiError);
    expect(error).toBeInstanceOf(AcctopsError);
    expect(error.status).toBe(status);
    expect(error.apiType).toBe(type);
    expect(error.apiCode).toBe(code);
    expect(error.requestId).toBe('req_0123abcd');
    expect(error.request).toBe(context.request);
    expect(error.message).toContain('GET /api/v1/companies/');
    expect(error.message).toContain(code);
  });

  it('keeps the class-specific fields', () => {
    const permission = errorFromResponse(
      apiError(403, 'permission_error', 'permission_denied', { permission: 'manage_api_keys' }),
      context,
    );
    expect((permission as PermissionDeniedError).permission).toBe('manage_api_keys');
    const mismatch = errorFromResponse(apiError(403, 'company_mismatch_error', 'company_mismatch', { param: 'X-Company-Id' }), context);
    expect((mismatch as CompanyMismatchError).param).toBe('X-Company-Id');
    const invalid = errorFromResponse(apiError(400, 'validation_error', 'invalid_request', { param: 'page_size' }), context);
    expect((invalid as ApiValidationError).param).toBe('page_size');
    const limited = errorFromResponse(apiError(429, 'rate_limit_error', 'rate_limited', {}, { 'retry-after': '3' }), context);
    expect((limited as RateLimitError).retryAfterMs).toBe(3000);
  });

  it('maps invalid_grant whatever the status', () => {
    for (const status of [400, 401, 403]) {
      expect(errorFromResponse(apiError(status, 'invalid_grant', 'refresh_token_used'), context)).toBeInstanceOf(InvalidGrantError);
    }
  });

  it('falls back to the status alone when the body is not the envelope', () => {
    const html = (status: number) => ({ status, headers: {}, body: '<html><body>Bad Gateway</body></html>' });
    expect(errorFromResponse(html(400), context)).toBeInstanceOf(ApiValidationError);
    expect(errorFromResponse(html(401), context)).toBeInstanceOf(AuthenticationError);
    expect(errorFromResponse(html(403), context)).toBeInstanceOf(PermissionDeniedError);
    expect(errorFromResponse(html(404), context)).toBeInstanceOf(NotFoundError);
    expect(errorFromResponse(html(409), context)).toBeInstanceOf(ConflictError);
    expect(errorFromResponse(html(429), context)).toBeInstanceOf(RateLimitError);
    expect(errorFromResponse(html(502), context)).toBeInstanceOf(ServerError);
    const odd = errorFromResponse(html(302), context);
    expect(odd.constructor).toBe(AccountingApiError);
    expect(odd.code).toBe('unexpected_response');
    // `{"error": "<code>"}` is the OAuth 2.0 shape (RFC 6749 §5.2): its code is read, the status still decides the class.
    const oauth = errorFromResponse({ status: 500, headers: {}, body: '{"error": "boom"}' }, context);
    expect([oauth.constructor, oauth.apiCode]).toEqual([ServerError, 'boom']);
    expect(errorFromResponse({ status: 500, headers: {}, body: '{"error": 42}' }, context).apiCode).toBeUndefined();
  });

  it('marks as ambiguous only what the service may have processed', () => {
    expect(errorFromResponse(apiError(503, 'api_error', 'unavailable'), context).ambiguous).toBe(true);
    expect(errorFromResponse(apiError(429, 'rate_limit_error', 'rate_limited'), context).ambiguous).toBe(false);
    expect(errorFromResponse(apiError(400, 'invalid_grant', 'refresh_token_used'), context).ambiguous).toBe(false);
  });

  it('a key the 1000-character bound cuts leaves none of itself in the message, even when redaction earlier shrinks the text', () => {
    // A JWT of ~850 characters is redacted to a few, which brings the text's end under the 300 kept:
    // the key's head that the bound left (19 characters after `sbx_`) was too short for the key rule.
    const jwt = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from('x'.repeat(600)).toString('base64url')}.${Buffer.from('y'.repeat(30)).toString('base64url')}`;
    const key = 'sbx_Ab3dEfGh7jKlMn0pQrStUvWxYz012345';
    const message = `${`${jwt} ${'x '.repeat(200)}`.slice(0, 1000 - 23)}${key}`;
    const error = errorFromResponse(apiError(400, 'invalid_request_error', 'bad', { message }), context);
    expect(error.message).not.toMatch(/sbx_[A-Za-z0-9]{9,}/);
    expect(error.message).not.toContain('Ab3dEfGh7jKlMn0');
  });

  it('gives each class a stable code of its own', () => {
    expect(errorFromResponse(apiError(401, 'authentication_error', 'key_revoked'), context).code).toBe('key_revoked');
    expect(errorFromResponse(apiError(401, 'authentication_error', 'invalid_credentials'), context).code).toBe('authentication_failed');
    expect(errorFromResponse(apiError(503, 'api_error', 'unavailable'), context).code).toBe('server_error');
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 10, 1, 9, 0, 0);
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter(new Date(now + 90_000).toUTCString(), now)).toBe(90_000);
    expect(parseRetryAfter(new Date(now - 5_000).toUTCString(), now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
  });
});

describe('describeRequest', () => {
  it('keeps method, path and the values of known-safe query parameters only', () => {
    const url = new URL('http://api.test/api/v1/accounting/transactions/?date_from=2026-10-01&page=2&page_size=1000&token=s3cr3t-value');
    expect(describeRequest('GET', url)).toBe(
      'GET /api/v1/accounting/transactions/?date_from=2026-10-01&page=2&page_size=1000&token=[REDACTED]',
    );
  });
});
