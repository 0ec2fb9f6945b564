import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { DIALECTS } from '../../helpers/dialects';
import { call, uuidPattern } from './support';

const NEW_USER = { username: 'dora', email: 'dora@example.com', external_id: '0b7c2a8e-9f1d-4c3b-8a6e-5d4f3e2c1b0a' };

describe('the minimal dialect: only what the spec promises, in DRF + simplejwt shapes', () => {
  let sandbox: RunningSandbox;
  let clock: ManualClock;
  let institution: string;
  let key: string;
  let companyId: string;

  beforeAll(async () => {
    clock = new ManualClock(Date.parse('2026-11-20T10:00:00Z'));
    sandbox = await startSandbox({ dialect: 'minimal', clock });
    institution = sandbox.demo!.institution.header;
    const company = sandbox.demo!.companies[0]!;
    companyId = company.publicId;
    key = company.apiKeys.find((k) => k.permissions.includes('full_access'))!.key;
  });
  afterAll(() => sandbox.stop());

  it('GET /companies/ answers with the company itself, under other field names', async () => {
    const r = await call(sandbox.baseUrl, '/companies/', { bearer: key });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      publicId: companyId,
      companyName: expect.any(String),
      countryCode: expect.any(String),
      defaultCurrency: expect.any(String),
    });
  });

  it('tax reports keep pk, the amounts and the pagination, under other names for the rest', async () => {
    const r = await call(sandbox.baseUrl, `/companies/${companyId}/taxes/reports/?page_size=2`, { bearer: key });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ count: expect.any(Number), previous: null, next: expect.stringContaining('page=2') });
    const report = r.body.results[0];
    expect(report.pk).toMatch(uuidPattern);
    expect(Object.keys(report).sort()).toEqual([
      'created',
      'currencyCode',
      'endDate',
      'pk',
      'reportType',
      'startDate',
      'state',
      'totalAmount',
    ]);
    expect(Number.isInteger(report.totalAmount)).toBe(true);
  });

  it('API keys show their prefix as keyPrefix, in the list and in the create reply', async () => {
    const listed = await call(sandbox.baseUrl, '/api-keys/', { bearer: key });
    expect(listed.status).toBe(200);
    expect(listed.body.results[0]).toEqual(
      expect.objectContaining({ publicId: expect.stringMatching(uuidPattern), keyPrefix: expect.any(String) }),
    );
    expect(listed.body.results[0]).not.toHaveProperty('prefix');
    const created = await call(sandbox.baseUrl, '/api-keys/', {
      method: 'POST',
      bearer: key,
      body: { name: 'dialect-test', permissions: ['read_transactions'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.key.startsWith(created.body.keyPrefix)).toBe(true);
    expect(created.body).not.toHaveProperty('prefix');
  });

  it('create answers with an access token only; retrieve gives an opaque pair without expiresIn', async () => {
    const created = await call(sandbox.baseUrl, '/institution/users/create/', { institution, body: NEW_USER });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ accessToken: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const pair = await call(sandbox.baseUrl, '/institution/users/token/retrieve/', { institution, body: NEW_USER });
    expect(pair.body).toEqual({
      accessToken: expect.stringMatching(/^[0-9a-f]{64}$/),
      refreshToken: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The opaque access token is a working bearer credential.
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: pair.body.accessToken, companyId })).status).not.toBe(401);
  });

  it('refresh does not rotate: only a new access token, and the same refresh token works again', async () => {
    const pair = (await call(sandbox.baseUrl, '/institution/users/token/retrieve/', { institution, body: NEW_USER })).body;
    const first = await call(sandbox.baseUrl, '/institution/users/token/refresh/', { institution, body: { refresh: pair.refreshToken } });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ accessToken: expect.any(String) });
    const second = await call(sandbox.baseUrl, '/institution/users/token/refresh/', { institution, body: { refresh: pair.refreshToken } });
    expect(second.status).toBe(200);
    expect(second.body.accessToken).not.toBe(first.body.accessToken);
  });

  it('verify is 200 {} or 401 token_not_valid; expire is an empty 200, after which refresh and verify are 401 token_not_valid', async () => {
    const pair = (await call(sandbox.baseUrl, '/institution/users/token/retrieve/', { institution, body: NEW_USER })).body;
    const good = await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution, body: { token: pair.accessToken } });
    expect([good.status, good.body]).toEqual([200, {}]);
    const notValid = { detail: 'Token is invalid or expired', code: 'token_not_valid' };
    const forged = await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution, body: { token: 'f'.repeat(64) } });
    expect([forged.status, forged.body]).toEqual([401, notValid]);

    const expired = await call(sandbox.baseUrl, '/institution/users/token/expire/', { institution, body: { refresh: pair.refreshToken } });
    expect([expired.status, expired.text]).toEqual([200, '']);
    for (const [path, body] of [
      ['/institution/users/token/refresh/', { refresh: pair.refreshToken }],
      ['/institution/users/token/verify/', { token: pair.accessToken }],
    ] as const) {
      const r = await call(sandbox.baseUrl, path, { institution, body });
      expect([path, r.status, r.body]).toEqual([path, 401, notValid]);
    }
    const unknown = await call(sandbox.baseUrl, '/institution/users/token/expire/', { institution, body: { refresh: 'not-a-token' } });
    expect([unknown.status, unknown.body]).toEqual([401, notValid]);
  });

  it("an expired access token is refused with simplejwt's 401 on data routes", async () => {
    const pair = (await call(sandbox.baseUrl, '/institution/users/token/retrieve/', { institution, body: NEW_USER })).body;
    clock.advance(31 * 60_000);
    const r = await call(sandbox.baseUrl, '/companies/', { bearer: pair.accessToken, companyId });
    expect([r.status, r.body]).toEqual([401, { detail: 'Given token not valid for any token type', code: 'token_not_valid' }]);
  });

  it('errors are DRF bodies: detail + code, and field errors naming the field', async () => {
    const anonymous = await call(sandbox.baseUrl, '/companies/');
    expect([anonymous.status, anonymous.body]).toEqual([
      401,
      { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' },
    ]);
    const badInstitution = await call(sandbox.baseUrl, '/institution/users/token/verify/', {
      institution: 'inst_demo:wrong',
      body: { token: 'x' },
    });
    expect(badInstitution.status).toBe(401);
    expect(badInstitution.body).toEqual({ detail: expect.any(String), code: 'authentication_failed' });
    const badField = await call(sandbox.baseUrl, '/institution/users/create/', {
      institution,
      body: { ...NEW_USER, email: 'not-an-email' },
    });
    expect([badField.status, badField.body]).toEqual([400, { email: [expect.any(String)] }]);
    const badPage = await call(sandbox.baseUrl, '/accounting/transactions/?page_size=0', { bearer: key });
    expect([badPage.status, badPage.body]).toEqual([400, { page_size: [expect.any(String)] }]);
    const foreign = await call(sandbox.baseUrl, `/companies/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/taxes/reports/`, {
      bearer: key,
    });
    expect([foreign.status, foreign.body.code]).toEqual([403, 'permission_denied']);
  });

  it('status faults keep their status and take the DRF shape', async () => {
    await sandbox.admin.faults.add({ route: 'GET /companies/', times: 1, fault: { type: 'status', status: 503 } });
    const r = await call(sandbox.baseUrl, '/companies/', { bearer: key });
    expect([r.status, r.body]).toEqual([503, { detail: 'A server error occurred.', code: 'error' }]);
  });
});

describe.each(DIALECTS)('the credential is checked before the request (%s dialect)', (dialect) => {
  let sandbox: RunningSandbox;
  let key: string;
  let institution: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect });
    key = sandbox.demo!.companies[0]!.apiKeys.find((k) => k.permissions.includes('full_access'))!.key;
    institution = sandbox.demo!.institution.header;
  });
  afterAll(() => sandbox.stop());

  const raw = (path: string, init: RequestInit) => fetch(`${sandbox.baseUrl}${path}`, init);
  const five = 'x'.repeat(5 * 1024 * 1024);

  it('anonymous requests with a bad page size, invalid JSON or a 5 MB body get 401, not 400', async () => {
    expect((await call(sandbox.baseUrl, '/accounting/transactions/?page_size=abc')).status).toBe(401);
    expect(
      (await raw('/institution/users/create/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":' }))
        .status,
    ).toBe(401);
    expect(
      (await raw('/institution/users/create/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: five })).status,
    ).toBe(401);
    expect((await raw('/api-keys/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: five })).status).toBe(401);
  });

  it('with a credential: 413 for a body over the limit, 400 for invalid JSON and a bad page size', async () => {
    const tooLarge = await raw('/institution/users/create/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', institution },
      body: five,
    });
    expect(tooLarge.status).toBe(413);
    const broken = await raw('/institution/users/create/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', institution },
      body: '{"username":',
    });
    expect(broken.status).toBe(400);
    expect((await call(sandbox.baseUrl, '/accounting/transactions/?page_size=abc', { bearer: key })).status).toBe(400);
  });

  it('405 with Allow for a method a path lacks, after the credential (401 when anonymous); 404 for a path that does not exist', async () => {
    expect((await call(sandbox.baseUrl, '/companies/', { method: 'PUT' })).status).toBe(401);
    const r = await call(sandbox.baseUrl, '/companies/', { method: 'PUT', bearer: key });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET');
    const apiKeys = await call(sandbox.baseUrl, '/api-keys/', { method: 'PATCH', bearer: key });
    expect([apiKeys.status, apiKeys.headers.get('allow')]).toEqual([405, 'GET, POST']);
    expect((await call(sandbox.baseUrl, '/institution/users/create/', { method: 'GET', institution })).status).toBe(405);
    expect((await call(sandbox.baseUrl, '/no-such-path/', { bearer: key })).status).toBe(404);
  });
});
