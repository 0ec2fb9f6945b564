import {
  AccountingClient,
  type AccountingApiWarning,
  ApiValidationError,
  AuthenticationError,
  type CredentialProvider,
  InvalidGrantError,
  NotFoundError,
  PaginationError,
  PermissionDeniedError,
  RateLimitError,
  ResponseTooLargeError,
  ResponseValidationError,
  ServerError,
  UserExistsError,
  apiKeyAuth,
  errorFromResponse,
  institutionAuth,
  readErrorBody,
  type TransportResponse,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { redactString, registerSecret } from '../../../src/core/shared/redact';
import { BASE_URL, COMPANY_A, COMPANY_B, type Handler, fakeTransport, json, sequence } from './fake-transport';

/** Bodies the spec allows but our default sandbox never sends (docs/assumptions.md, "What a response must carry"). */

const PK = '7c0e8a9b-1d2e-4f3a-8b4c-5d6e7f8a9b0c';
const OPAQUE_ACCESS = 'opaque-access-token-0123456789';
const OPAQUE_REFRESH = 'opaque-refresh-token-9876543210';
const USER = { username: 'ada', email: 'ada@example.test', externalId: '11111111-2222-4333-8444-555555555555' };

function text(status: number, body: string, contentType = 'text/plain'): TransportResponse {
  return { status, headers: { 'content-type': contentType }, body };
}

function setup(handler: Handler, options: { credentials?: CredentialProvider; maxResponseBytes?: number } = {}) {
  const fake = fakeTransport(handler);
  const warnings: AccountingApiWarning[] = [];
  const client = new AccountingClient({
    baseUrl: BASE_URL,
    credentials: options.credentials ?? apiKeyAuth('sbx_TolerantKey0123456789abcdefghijk'),
    transport: fake.transport,
    clock: ManualClock.autoAdvancing(),
    random: () => 0,
    onWarning: (w) => warnings.push(w),
    maxResponseBytes: options.maxResponseBytes,
  });
  return { client, fake, warnings };
}

function institution(handler: Handler, onAuthenticationError?: () => Promise<boolean>) {
  const base = institutionAuth({ institutionId: 'inst-1', secretKey: 'sk_tolerant_0123456789abcdef' });
  return setup(handler, { credentials: { get: () => base.get(), onAuthenticationError } });
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as Error,
  );
}

describe('tolerant reader: only fields the spec names are required', () => {
  it('reads a tax report that carries nothing but pk, and keeps the raw object with fields we do not know', async () => {
    const report = { pk: PK, period: '2026-10', total: '12.34', reportKind: 'vat' };
    const { client, warnings } = setup(() => json(200, { count: 1, next: null, previous: null, results: [report] }));
    const [item] = await client.taxReports.list(COMPANY_A).all();
    expect(item?.raw).toEqual(report);
    expect(item?.parsed).toMatchObject({
      pk: PK,
      periodStart: null,
      periodEnd: null,
      amountDue: null,
      status: null,
      currency: null,
      createdAt: null,
    });
    expect(warnings).toEqual([]);
  });

  it('refuses a tax report without pk, naming the field', async () => {
    const { client } = setup(() => json(200, { count: 1, next: null, previous: null, results: [{ id: PK }] }));
    const error = await rejection(client.taxReports.list(COMPANY_A).all());
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as ResponseValidationError).field).toBe('results[0].pk');
  });

  it('reads an optional field of the wrong type as absent, warns once per field, and keeps the value in raw', async () => {
    const reports = [
      { pk: PK, amountDue: { value: 12 }, periodStart: '2026-10-01' },
      { pk: '8c0e8a9b-1d2e-4f3a-8b4c-5d6e7f8a9b0c', amountDue: [1], periodStart: 'October' },
    ];
    const { client, warnings } = setup(() => json(200, { count: 2, next: null, previous: null, results: reports }));
    const items = await client.taxReports.list(COMPANY_A).all();
    expect(items.map((i) => [i.parsed.amountDue, i.parsed.periodStart])).toEqual([
      [null, '2026-10-01'],
      [null, null],
    ]);
    expect(items[0]?.raw.amountDue).toEqual({ value: 12 });
    expect(warnings).toEqual([
      expect.objectContaining({ type: 'ignored_field', path: 'results[0]', fields: ['amountDue'] }),
      expect.objectContaining({ type: 'ignored_field', path: 'results[1]', fields: ['periodStart'] }),
    ]);
  });

  it('requires publicId, amount and valueDate of a transaction; cashflowType and currency may be absent', async () => {
    const minimal = { publicId: PK, amount: '-49.99', valueDate: '2026-10-31T23:30:00-02:00' };
    const { client } = setup(
      sequence(
        json(200, { count: 1, next: null, previous: null, results: [minimal] }),
        json(200, { count: 1, next: null, previous: null, results: [{ publicId: PK, valueDate: minimal.valueDate }] }),
      ),
    );
    const [item] = await client.transactions.list().all();
    expect(item?.parsed).toMatchObject({ amount: -4999n, cashflowType: null, currency: null, category: null });
    const error = await rejection(client.transactions.list().all());
    expect((error as ResponseValidationError).field).toBe('results[0].amount');
  });

  it('reads a valueDate with lower-case t and z (RFC 3339 §5.6), keeping the text as sent', async () => {
    const item = { publicId: PK, amount: -104, valueDate: '2026-10-28t08:00:00z' };
    const { client } = setup(() => json(200, { count: 1, next: null, previous: null, results: [item] }));
    const [read] = await client.transactions.list().all();
    expect(read?.parsed).toMatchObject({ amount: -104n, valueDate: '2026-10-28t08:00:00z' });
    expect(read?.raw).toEqual(item);
  });

  it('requires publicId and name of a category', async () => {
    const { client } = setup(
      sequence(
        json(200, { count: 1, next: null, previous: null, results: [{ publicId: PK, name: 'Rent' }] }),
        json(200, { count: 1, next: null, previous: null, results: [{ publicId: PK }] }),
      ),
    );
    expect((await client.categories.list().all())[0]?.parsed).toMatchObject({ name: 'Rent', parent: null, metadata: null });
    expect(((await rejection(client.categories.list().all())) as ResponseValidationError).field).toBe('results[0].name');
  });
});

describe('API keys: the list shows "the key prefix, its permissions and its last use" (spec §5.1.2)', () => {
  const KEY_ID = '4a5b6c7d-8e9f-4012-8345-6789abcdef01';
  const listed = {
    publicId: KEY_ID,
    permissions: ['full_access'],
    lastUsedAt: null,
    createdAt: '2026-10-01T00:00:00Z',
    expiresAt: null,
    revokedAt: null,
  };

  it.each([
    ['prefix', { ...listed, prefix: 'acme_Zx9QwErT', label: 'primary' }],
    ['keyPrefix', { ...listed, keyPrefix: 'acme_Zx9QwErT' }],
    ['key_prefix', { ...listed, key_prefix: 'acme_Zx9QwErT' }],
  ])('reads a key without a name whose prefix is spelled %s, keeping the raw item as received', async (_spelling, item) => {
    const { client, warnings } = setup(() => json(200, { count: 1, next: null, previous: null, results: [item] }));
    const [key] = await client.apiKeys.list().all();
    expect(key?.parsed).toMatchObject({ publicId: KEY_ID, name: null, prefix: 'acme_Zx9QwErT', permissions: ['full_access'] });
    expect(key?.raw).toEqual(item);
    expect(warnings).toEqual([]);
  });

  it('uses a name when present and prefers the spelling prefix', async () => {
    const item = { ...listed, name: 'acctops-rotation-v1', prefix: 'acme_Zx9QwErT', keyPrefix: 'acme_other' };
    const { client } = setup(() => json(200, { count: 1, next: null, previous: null, results: [item] }));
    expect((await client.apiKeys.list().all())[0]?.parsed).toMatchObject({ name: 'acctops-rotation-v1', prefix: 'acme_Zx9QwErT' });
  });

  it('refuses a key without any prefix, naming prefix', async () => {
    const { client } = setup(() => json(200, { count: 1, next: null, previous: null, results: [{ ...listed, name: 'x' }] }));
    expect(((await rejection(client.apiKeys.list().all())) as ResponseValidationError).field).toBe('results[0].prefix');
  });

  it('reads a create reply without a name, its prefix as keyPrefix', async () => {
    const { client } = setup(() => json(201, { ...listed, keyPrefix: 'acme_Zx9QwErT', key: 'acme_Zx9QwErTyUiOp1234567890AbCdEfGh' }));
    const created = await client.apiKeys.create({ name: 'acctops-rotation-v2', permissions: ['full_access'] });
    expect(created).toMatchObject({ publicId: KEY_ID, name: null, prefix: 'acme_Zx9QwErT', key: 'acme_Zx9QwErTyUiOp1234567890AbCdEfGh' });
  });
});

describe('GET /companies/: an object or a list envelope', () => {
  const company = { publicId: COMPANY_A, title: 'Acme GmbH' };

  it.each([
    ['the company as an object (spec §4.2: "the company the key belongs to")', company],
    ['a list envelope', { count: 1, next: null, previous: null, results: [company] }],
    ['a bare array', [company]],
  ])('reads %s', async (_name, body) => {
    const { client } = setup(() => json(200, body));
    const items = await client.companies.list().all();
    expect(items.map((i) => [i.parsed.publicId, i.parsed.name, i.raw])).toEqual([[COMPANY_A, null, company]]);
  });

  it('reads the company one level down beside other objects ({data, meta}), as token replies are read', async () => {
    const { client, fake } = setup(() => json(200, { data: company, meta: { apiVersion: 'v1' } }));
    const items = await client.companies.list().all();
    expect(items.map((i) => [i.parsed.publicId, i.raw])).toEqual([[COMPANY_A, company]]);
    const other = '9a8b7c6d-5e4f-4321-8fed-cba987654321';
    await expect(client.taxReports.list(other).all()).rejects.toMatchObject({ code: 'company_mismatch' });
    expect(fake.requests).toHaveLength(1);
  });

  it('reads the body itself when it is a company, whatever objects it holds; refuses two companies one level down', async () => {
    const nested = { ...company, address: { publicId: COMPANY_B, city: 'Köln' } };
    const { client } = setup(() => json(200, nested));
    expect((await client.companies.list().all()).map((i) => i.parsed.publicId)).toEqual([COMPANY_A]);
    const two = setup(() => json(200, { data: company, other: { publicId: COMPANY_B } }));
    expect(((await rejection(two.client.companies.list().all())) as ResponseValidationError).field).toBe('publicId');
  });

  it('learns the key’s company from the object form, as from a one-item list', async () => {
    const { client, fake } = setup(() => json(200, company));
    await client.companies.list().all();
    const other = '9a8b7c6d-5e4f-4321-8fed-cba987654321';
    await expect(client.taxReports.list(other).all()).rejects.toMatchObject({ code: 'company_mismatch', param: 'company_pk' });
    expect(fake.requests).toHaveLength(1);
  });

  it('refuses a company object without publicId, naming the field where it is missing', async () => {
    const { client } = setup(() => json(200, { id: 1, name: 'Acme' }));
    expect(((await rejection(client.companies.list().all())) as ResponseValidationError).field).toBe('publicId');
    const wrapped = setup(() => json(200, { company: { id: 1, name: 'Acme' } }));
    expect(((await rejection(wrapped.client.companies.list().all())) as ResponseValidationError).field).toBe('company.publicId');
  });

  it('reads the company wrapped in a single-property object, and learns it as the key’s company', async () => {
    const { client, fake } = setup(() => json(200, { company }));
    const items = await client.companies.list().all();
    expect(items.map((i) => [i.parsed.publicId, i.raw])).toEqual([[COMPANY_A, company]]);
    const other = '9a8b7c6d-5e4f-4321-8fed-cba987654321';
    await expect(client.taxReports.list(other).all()).rejects.toMatchObject({ code: 'company_mismatch' });
    expect(fake.requests).toHaveLength(1);
  });
});

describe('institution operations in the shapes the spec allows', () => {
  it('create may answer with the access token alone: refreshToken is null, user absent', async () => {
    const { client } = institution(() => json(201, { accessToken: OPAQUE_ACCESS }));
    expect(await client.institution.createUser(USER)).toMatchObject({
      accessToken: OPAQUE_ACCESS,
      refreshToken: null,
      expiresIn: null,
      user: null,
    });
  });

  it('refresh without a refresh token keeps the one in use; with one, reports the rotation', async () => {
    const { client } = institution(
      sequence(
        json(200, { accessToken: OPAQUE_ACCESS }),
        json(200, { accessToken: OPAQUE_ACCESS, refreshToken: 'rotated-refresh-token-01' }),
      ),
    );
    expect(await client.institution.refreshToken(OPAQUE_REFRESH)).toMatchObject({
      accessToken: OPAQUE_ACCESS,
      refreshToken: OPAQUE_REFRESH,
      refreshTokenRotated: false,
    });
    expect(await client.institution.refreshToken(OPAQUE_REFRESH)).toMatchObject({
      refreshToken: 'rotated-refresh-token-01',
      refreshTokenRotated: true,
    });
  });

  it('finds the tokens one level down under any property, and registers them as secrets', async () => {
    const user = { username: USER.username, email: USER.email, external_id: USER.externalId };
    const { client } = institution(
      sequence(
        json(201, {
          user,
          tokens: { accessToken: OPAQUE_ACCESS, refreshToken: OPAQUE_REFRESH, accessTokenExpiresAt: '2026-11-01T09:10:00Z' },
        }),
        json(200, { data: { accessToken: OPAQUE_ACCESS, refreshToken: OPAQUE_REFRESH } }),
        json(200, { result: { accessToken: 'fresh-access-token-0001' } }),
      ),
    );
    expect(await client.institution.createUser(USER)).toMatchObject({
      accessToken: OPAQUE_ACCESS,
      refreshToken: OPAQUE_REFRESH,
      accessTokenExpiresAt: '2026-11-01T09:10:00Z',
      user: { username: USER.username },
    });
    expect(await client.institution.retrieveToken(USER)).toMatchObject({ accessToken: OPAQUE_ACCESS, refreshToken: OPAQUE_REFRESH });
    expect(await client.institution.refreshToken(OPAQUE_REFRESH)).toMatchObject({
      accessToken: 'fresh-access-token-0001',
      refreshToken: OPAQUE_REFRESH,
      refreshTokenRotated: false,
    });
    expect(redactString(`x fresh-access-token-0001 y`)).not.toContain('fresh-access-token-0001');
  });

  it('refuses two different token pairs, naming both paths and neither value; names a nested bad field where it is', async () => {
    const { client } = institution(
      sequence(
        json(200, {
          accessToken: OPAQUE_ACCESS,
          refreshToken: OPAQUE_REFRESH,
          tokens: { accessToken: 'other-access-token-0002', refreshToken: 'other-refresh-0002' },
        }),
        json(200, { tokens: { accessToken: 42, refreshToken: OPAQUE_REFRESH } }),
        json(200, { accessToken: OPAQUE_ACCESS, refreshToken: OPAQUE_REFRESH, tokens: { accessToken: OPAQUE_ACCESS } }),
      ),
    );
    const two = (await rejection(client.institution.retrieveToken(USER))) as ResponseValidationError;
    expect(two).toBeInstanceOf(ResponseValidationError);
    expect(two.message).toContain('accessToken');
    expect(two.message).toContain('tokens.accessToken');
    for (const value of [OPAQUE_ACCESS, OPAQUE_REFRESH, 'other-access-token-0002', 'other-refresh-0002'])
      expect(two.message).not.toContain(value);
    expect(((await rejection(client.institution.retrieveToken(USER))) as ResponseValidationError).field).toBe('tokens.accessToken');
    // The same pair stated twice is one candidate.
    expect(await client.institution.retrieveToken(USER)).toMatchObject({ accessToken: OPAQUE_ACCESS, refreshToken: OPAQUE_REFRESH });
  });

  it('retrieve must carry both tokens (spec §4.1: it "generates a new accessToken and refreshToken")', async () => {
    const { client } = institution(() => json(200, { accessToken: OPAQUE_ACCESS }));
    expect(((await rejection(client.institution.retrieveToken(USER))) as ResponseValidationError).field).toBe('refreshToken');
  });

  it.each([
    ['an empty body', text(200, '', 'application/json'), { valid: true, expiresAt: null }],
    ['{}', json(200, {}), { valid: true, expiresAt: null }],
    ['any JSON', json(200, { tokenType: 'access' }), { valid: true, expiresAt: null, tokenType: 'access' }],
    ['our verdict', json(200, { valid: false, reason: 'expired' }), { valid: false, reason: 'expired' }],
    ['RFC 7662 active: false', json(200, { active: false }), { valid: false, reason: 'invalid', active: false }],
    ['a 200 whose status says INVALID', json(200, { status: 'INVALID' }), { valid: false, reason: 'invalid', status: 'INVALID' }],
    ['a 200 whose is_valid is false', json(200, { is_valid: false }), { valid: false, reason: 'invalid', is_valid: false }],
    [
      'a 200 whose token_status says revoked',
      json(200, { token_status: 'revoked' }),
      { valid: false, reason: 'revoked', token_status: 'revoked' },
    ],
    [
      'a 200 saying valid and INVALID at once',
      json(200, { valid: true, status: 'INVALID' }),
      { valid: false, reason: 'invalid', status: 'INVALID' },
    ],
    ['a 200 whose status is OK', json(200, { status: 'OK' }), { valid: true, expiresAt: null, status: 'OK' }],
    [
      "simplejwt's 401 token_not_valid",
      json(401, { detail: 'Token is invalid or expired', code: 'token_not_valid' }),
      { valid: false, reason: 'invalid' },
    ],
    [
      'our 401 token_expired',
      json(401, { error: { type: 'authentication_error', code: 'token_expired' } }),
      { valid: false, reason: 'expired' },
    ],
    ['a 400 field error on the token', json(400, { token: ['This field may not be blank.'] }), { valid: false, reason: 'invalid' }],
  ])('verify reads %s', async (_name, response, verdict) => {
    const reauth = jest.fn(async () => false);
    const { client } = institution(() => response, reauth);
    expect(await client.institution.verifyToken(OPAQUE_ACCESS)).toEqual(verdict);
    expect(reauth).not.toHaveBeenCalled();
  });

  it.each([
    ['our institution_invalid', json(401, { error: { type: 'authentication_error', code: 'institution_invalid' } })],
    ["DRF's authentication_failed", json(401, { detail: 'Incorrect authentication credentials.', code: 'authentication_failed' })],
    ["a proxy's 401 page", text(401, '<html><title>401 Authorization Required</title></html>', 'text/html')],
  ])('verify answered by %s is the institution credential refused, and re-reads it once', async (_name, response) => {
    const reauth = jest.fn(async () => false);
    const { client } = institution(() => response, reauth);
    expect(await rejection(client.institution.verifyToken(OPAQUE_ACCESS))).toBeInstanceOf(AuthenticationError);
    expect(reauth).toHaveBeenCalledTimes(1);
  });

  it('a refresh refused with 401 token_not_valid is a dead grant, not the institution credential', async () => {
    const reauth = jest.fn(async () => true);
    const { client, fake } = institution(() => json(401, { detail: 'Token is invalid or expired', code: 'token_not_valid' }), reauth);
    const error = await rejection(client.institution.refreshToken(OPAQUE_REFRESH));
    expect(error).toBeInstanceOf(InvalidGrantError);
    expect(error).not.toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, apiCode: 'token_not_valid' });
    expect(reauth).not.toHaveBeenCalled();
    expect(fake.requests).toHaveLength(1);
  });

  it.each([
    ['an empty body', text(200, '')],
    ['{}', json(200, {})],
    ['204', { status: 204, headers: {}, body: '' }],
    ['any JSON', json(200, { detail: 'ok' })],
    ['a status we do not know', json(200, { status: 'REVOKED' })],
  ])('expire reads %s as done', async (_name, response) => {
    const { client } = institution(() => response);
    expect(await client.institution.expireToken(OPAQUE_REFRESH)).toMatchObject({ expired: true });
  });

  it.each([
    ['expired: false', json(200, { expired: false })],
    ['a failed status', json(200, { status: 'FAILED', message: 'could not expire' })],
    ['success: false', json(200, { success: false })],
  ])('expire reads a 2xx whose body says %s as not done', async (_name, response) => {
    const { client } = institution(() => response);
    expect(await client.institution.expireToken(OPAQUE_REFRESH)).toMatchObject({ expired: false });
  });

  it('an expire refused about the token is InvalidGrantError (revoke then retrieves a pair and expires that)', async () => {
    const { client } = institution(() => json(400, { refresh: ['Token is blacklisted'] }));
    expect(await rejection(client.institution.expireToken(OPAQUE_REFRESH))).toBeInstanceOf(InvalidGrantError);
  });

  it('create refused by Spring\'s 400 whose message says "already exists" is UserExistsError, quoting the message', async () => {
    const spring = {
      timestamp: '2026-11-27T03:40:00.000+00:00',
      status: 400,
      error: 'Bad Request',
      message: 'A user with that username already exists.',
      path: '/api/v1/institution/users/create/',
    };
    const { client } = institution(() => json(400, spring));
    const error = await rejection(client.institution.createUser(USER));
    expect(error).toBeInstanceOf(UserExistsError);
    expect(error.message).toContain('A user with that username already exists.');
  });

  it('create refused by a DRF uniqueness error is UserExistsError', async () => {
    const { client } = institution(() => json(400, { username: ['A user with that username already exists.'] }));
    const error = await rejection(client.institution.createUser(USER));
    expect(error).toBeInstanceOf(UserExistsError);
    expect(error).toMatchObject({ status: 400 });
  });
});

describe('error bodies of every common shape become the same typed errors', () => {
  const context = { request: 'GET /api/v1/companies/', now: 0 };

  it.each([
    [
      'our envelope',
      json(403, { error: { type: 'permission_error', code: 'permission_denied', permission: 'read_tax_reports', message: 'no' } }),
      PermissionDeniedError,
      { apiCode: 'permission_denied' },
    ],
    [
      "DRF's detail and code",
      json(403, { detail: 'You do not have permission to perform this action.', code: 'permission_denied' }),
      PermissionDeniedError,
      { apiCode: 'permission_denied' },
    ],
    ["DRF's detail alone", json(404, { detail: 'Not found.' }), NotFoundError, {}],
    [
      "DRF's throttled",
      json(429, { detail: 'Request was throttled. Expected available in 3 seconds.', code: 'throttled' }, { 'retry-after': '3' }),
      RateLimitError,
      { retryAfterMs: 3000 },
    ],
    ['DRF field errors', json(400, { date_from: ['Enter a valid date.'] }), ApiValidationError, { param: 'date_from' }],
    [
      'nested DRF field errors',
      json(400, { user: { email: ['Enter a valid email address.'] } }),
      ApiValidationError,
      { param: 'user.email' },
    ],
    [
      'a list serializer’s field errors',
      json(400, { items: [{}, { rate: ['Must be positive.'] }] }),
      ApiValidationError,
      { param: 'items[1].rate' },
    ],
    [
      'OAuth 2.0',
      json(400, { error: 'invalid_grant', error_description: 'Token has been revoked' }),
      InvalidGrantError,
      { apiCode: 'invalid_grant' },
    ],
    ['plain text', text(503, 'upstream connect error or disconnect/reset before headers'), ServerError, {}],
    [
      "a proxy's HTML page",
      text(502, '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>', 'text/html'),
      ServerError,
      {},
    ],
    ['an empty body', text(500, ''), ServerError, {}],
  ])('%s', (_name, response, Cls, fields) => {
    const error = errorFromResponse(response, context);
    expect(error).toBeInstanceOf(Cls);
    expect(error).toMatchObject({ status: response.status, ...fields });
  });

  it.each([
    [
      'Spring (error is the reason phrase)',
      { status: 400, error: 'Bad Request', message: 'page must be a positive integer' },
      'page must be a positive integer',
      undefined,
    ],
    ['Spring with an empty message', { status: 400, error: 'Bad Request', message: '' }, 'Bad Request', undefined],
    ['an error sentence alone', { error: 'Unknown refresh token' }, 'Unknown refresh token', undefined],
    [
      'an error phrase beside detail',
      { error: 'Not Acceptable', detail: 'Could not satisfy the Accept header.' },
      'Could not satisfy the Accept header.',
      undefined,
    ],
    [
      'OAuth with a description',
      { error: 'invalid_request', error_description: 'grant_type is missing' },
      'grant_type is missing',
      'invalid_request',
    ],
    [
      'OAuth with message instead of a description',
      { error: 'invalid_client', message: 'Client authentication failed' },
      'Client authentication failed',
      'invalid_client',
    ],
  ])('reads an error string as a code only when it looks like one: %s', (_name, body, message, code) => {
    expect(readErrorBody(JSON.stringify(body))).toMatchObject({ message, code });
    expect(errorFromResponse(json(400, body), context).message).toContain(message);
  });

  it("keeps the redaction on a message read from Spring's body", () => {
    const secret = 'sk_spring_0123456789abcdefghij';
    registerSecret(secret);
    const error = errorFromResponse(json(400, { status: 400, error: 'Bad Request', message: `secret ${secret} refused` }), context);
    expect(error.message).toContain('refused');
    expect(error.message).not.toContain(secret);
  });

  it('puts the service’s words in the message, naming the field, and an HTML page only by its title', () => {
    expect(errorFromResponse(json(400, { date_from: ['Enter a valid date.'] }), context).message).toContain(
      'date_from: Enter a valid date.',
    );
    const html = errorFromResponse(
      text(502, '<html><head><title>502 Bad Gateway</title></head><body>internal host 10.0.0.7</body></html>', 'text/html'),
      context,
    );
    expect(html.message).toContain('HTML page "502 Bad Gateway"');
    expect(html.message).not.toContain('10.0.0.7');
    expect(readErrorBody('<html><body>x</body></html>')).toEqual({ shape: 'html', message: 'HTML page' });
  });

  it('reads JSON:API errors[] and problem details into the message, code and field', () => {
    const jsonApi = errorFromResponse(
      json(400, {
        errors: [
          { code: 'invalid', title: 'Invalid attribute', detail: 'email is not valid', source: { pointer: '/data/attributes/email' } },
        ],
      }),
      context,
    );
    expect(jsonApi).toBeInstanceOf(ApiValidationError);
    expect(jsonApi).toMatchObject({ apiCode: 'invalid', param: 'email' });
    expect(jsonApi.message).toContain('email is not valid');
    const problem = errorFromResponse(
      text(400, JSON.stringify({ type: 'about:blank', title: 'Bad Request', detail: 'page_size too large' }), 'application/problem+json'),
      context,
    );
    expect(problem.message).toContain('Bad Request; page_size too large');
    expect(errorFromResponse(json(409, { title: 'Conflict' }), context).message).toContain('Conflict');
    // A secret in a JSON:API detail is scrubbed like any other text from the service.
    const apiKey = 'sbx_AbCdEf1234567890abcdefghijklmnop';
    expect(errorFromResponse(json(401, { errors: [{ detail: `key ${apiKey} revoked` }] }), context).message).not.toContain(apiKey);
  });

  it.each([
    ['JSON:API duplicate', json(409, { errors: [{ code: 'duplicate', detail: 'User is already registered.' }] })],
    ['problem+json "User exists"', text(409, JSON.stringify({ title: 'Conflict', detail: 'User exists' }), 'application/problem+json')],
  ])('create refused by %s is UserExistsError', async (_name, response) => {
    const { client } = institution(() => response);
    expect(await rejection(client.institution.createUser(USER))).toBeInstanceOf(UserExistsError);
  });

  it('never echoes a secret from a body, whatever its shape', () => {
    const opaque = 'opaque-secret-token-4242424242';
    registerSecret(opaque);
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl';
    const apiKey = 'sbx_AbCdEf1234567890abcdefghijklmnop';
    const bodies = [
      json(401, { detail: `Token ${opaque} is invalid`, code: 'token_not_valid' }),
      json(400, { refresh: [`${jwt} is not valid`] }),
      json(400, { error: 'invalid_grant', error_description: `refresh ${opaque}` }),
      text(401, `Bearer ${apiKey} refused`),
      text(500, `key ${apiKey} and token ${jwt}`),
    ];
    for (const body of bodies) {
      const message = errorFromResponse(body, context).message;
      expect(message).not.toContain(opaque);
      expect(message).not.toContain(jwt);
      expect(message).not.toContain(apiKey);
    }
  });

  it('registers a token it sends, so that a service echoing it cannot put it in an error', async () => {
    const neverSeen = 'stored-refresh-token-from-the-table-77';
    const { client } = institution(() => json(400, { detail: `refresh ${neverSeen} unknown` }));
    const error = await rejection(client.institution.refreshToken(neverSeen));
    expect(error).toBeInstanceOf(InvalidGrantError);
    expect(error.message).not.toContain(neverSeen);
  });
});

describe('bounds', () => {
  it('refuses a body above maxResponseBytes from any transport, without retrying', async () => {
    const { client, fake } = setup(
      () => json(200, { count: 1, next: null, previous: null, results: [{ publicId: COMPANY_A, name: 'x'.repeat(2000) }] }),
      { maxResponseBytes: 1024 },
    );
    const error = await rejection(client.companies.list().all());
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ limitBytes: 1024, ambiguous: true });
    expect(fake.requests).toHaveLength(1);
  });

  it('counts bytes, not characters', async () => {
    // 400 three-byte characters: 400 characters, 1200 bytes.
    const { client } = setup(() => json(200, { publicId: COMPANY_A, name: '€'.repeat(400) }), { maxResponseBytes: 1100 });
    expect(await rejection(client.companies.list().all())).toBeInstanceOf(ResponseTooLargeError);
  });

  it('stops an endless next chain at what count and the page size allow, plus a margin', async () => {
    // count 5 at 2 a page is 3 pages; the margin allows 2 more; the sixth is never requested.
    const { client, fake } = setup((_request, url) => {
      const page = Number(url.searchParams.get('page') ?? '1');
      const ids = [0, 1].map((i) => `00000000-0000-4000-8000-${String(page * 2 + i).padStart(12, '0')}`);
      return json(200, {
        count: 5,
        next: `${BASE_URL}/accounting/categories/?page=${page + 1}&pageSize=2`,
        previous: null,
        results: ids.map((publicId) => ({ publicId, name: 'c' })),
      });
    });
    const seen: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const item of client.categories.list({ pageSize: 2 })) seen.push(item.parsed.publicId);
      })(),
    );
    expect(error).toBeInstanceOf(PaginationError);
    expect((error as PaginationError).reason).toBe('too_many_pages');
    expect(fake.requests).toHaveLength(5);
    expect(seen).toHaveLength(10);
  });
});
