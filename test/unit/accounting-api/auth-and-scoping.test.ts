import {
  AccountingClient,
  type AccountingClientOptions,
  CompanyMismatchError,
  type CredentialProvider,
  MalformedApiKeyError,
  accessTokenAuth,
  apiKeyAuth,
  institutionAuth,
} from '../../../src/core/accounting-api';
import { RequestEngine } from '../../../src/core/accounting-api/request';
import { defaultRetryPolicy } from '../../../src/core/accounting-api/retry';
import { ManualClock } from '../../../src/core/shared/clock';
import { ConfigError, ValidationError } from '../../../src/core/shared/errors';
import { silentLogger } from '../../../src/core/shared/logger';
import { BASE_URL, COMPANY_A, COMPANY_B, type Handler, fakeTransport, json, listHandler } from './fake-transport';

const KEY = 'sbx_ScopeKey0123456789abcdefghijklmnop';
const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzY29wZSJ9.c2lnbmF0dXJl';
const USER = { username: 'ada', email: 'ada@example.com', externalId: '6a1f0c2e-8b3d-4e5f-9a7b-1c2d3e4f5a6b' };
const company = (publicId: string) => ({ publicId, name: 'Acme GmbH', country: 'DE', currency: 'EUR' });
const tokenPair = { accessToken: TOKEN, refreshToken: `${TOKEN}r` };

function setup(handler: Handler, overrides: Partial<AccountingClientOptions> = {}) {
  const fake = fakeTransport(handler);
  const client = new AccountingClient({
    baseUrl: BASE_URL,
    credentials: apiKeyAuth(KEY),
    transport: fake.transport,
    clock: ManualClock.autoAdvancing(),
    ...overrides,
  });
  return { client, fake };
}

const anything: Handler = (_r, url) => {
  if (url.pathname.startsWith('/api/v1/institution/'))
    return json(200, {
      ...tokenPair,
      valid: true,
      expired: true,
      user: { username: 'ada', email: 'ada@example.com', external_id: USER.externalId },
    });
  return listHandler(url.pathname.slice('/api/v1'.length), [])(_r, url);
};

describe('authentication headers', () => {
  it('sends Institution: <id>:<secret> on institution operations, and no bearer', async () => {
    const { client, fake } = setup(anything, {
      credentials: institutionAuth({ institutionId: 'inst_42', secretKey: 'institution-secret-value' }),
    });
    await client.institution.createUser(USER);
    await client.institution.refreshToken('refresh-token-value');
    await client.institution.verifyToken(TOKEN);
    await client.institution.expireToken('refresh-token-value');
    await client.institution.retrieveToken(USER);
    expect(fake.requests.map((r) => [r.method, new URL(r.url).pathname])).toEqual([
      ['POST', '/api/v1/institution/users/create/'],
      ['POST', '/api/v1/institution/users/token/refresh/'],
      ['POST', '/api/v1/institution/users/token/verify/'],
      ['POST', '/api/v1/institution/users/token/expire/'],
      ['POST', '/api/v1/institution/users/token/retrieve/'],
    ]);
    for (const r of fake.requests) {
      expect(r.headers.institution).toBe('inst_42:institution-secret-value');
      expect(r.headers.authorization).toBeUndefined();
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers.accept).toBe('application/json');
    }
    expect(fake.requests.map((r) => JSON.parse(r.body!) as unknown)).toEqual([
      { username: 'ada', email: 'ada@example.com', external_id: USER.externalId },
      { refresh: 'refresh-token-value' },
      { token: TOKEN },
      { refresh: 'refresh-token-value' },
      { username: 'ada', external_id: USER.externalId, email: 'ada@example.com' },
    ]);
  });

  it('sends Authorization: Bearer with an API key or an access token', async () => {
    const withKey = setup(anything);
    await withKey.client.companies.list().all();
    expect(withKey.fake.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    const withToken = setup(anything, { credentials: accessTokenAuth(TOKEN) });
    await withToken.client.transactions.list().all();
    expect(withToken.fake.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(withToken.fake.requests[0]!.headers.institution).toBeUndefined();
  });

  it.each(['', 'nounderscore', '_rest', 'sbx_', 'sbx_has space', 'sbx_line\nbreak', 'sb-x_rest'])(
    'refuses the API key %j before sending, without quoting it',
    async (bad) => {
      const { client, fake } = setup(anything, { credentials: apiKeyAuth(bad) });
      const error = await client.companies
        .list()
        .all()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MalformedApiKeyError);
      if (bad.length > 3) expect((error as Error).message).not.toContain(bad);
      expect(fake.requests).toHaveLength(0);
    },
  );

  it('refuses a credential of the wrong kind before sending', async () => {
    const { client, fake } = setup(anything);
    await expect(client.institution.verifyToken(TOKEN)).rejects.toBeInstanceOf(ConfigError);
    const institution = setup(anything, { credentials: institutionAuth({ institutionId: 'i', secretKey: 's' }) });
    await expect(institution.client.companies.list().all()).rejects.toBeInstanceOf(ConfigError);
    const colon = setup(anything, { credentials: institutionAuth({ institutionId: 'a:b', secretKey: 'secret' }) });
    await expect(colon.client.institution.verifyToken(TOKEN)).rejects.toMatchObject({ issues: [{ path: 'institutionId' }] });
    expect(fake.requests.length + institution.fake.requests.length + colon.fake.requests.length).toBe(0);
  });

  it('validates request inputs before sending, naming the field', async () => {
    const { client, fake } = setup(anything, { credentials: institutionAuth({ institutionId: 'i', secretKey: 's' }) });
    await expect(client.institution.createUser({ ...USER, email: 'not-an-email' })).rejects.toMatchObject({ issues: [{ path: 'email' }] });
    await expect(client.institution.retrieveToken({ ...USER, externalId: 'x' })).rejects.toBeInstanceOf(ValidationError);
    expect(() => client.transactions.list({ dateFrom: '2026-02-30' })).toThrow(ValidationError);
    expect(fake.requests).toHaveLength(0);
  });

  it('asks the provider before every request, so a rotated key is used at once', async () => {
    let key = KEY;
    const provider: CredentialProvider = { get: () => Promise.resolve({ kind: 'apiKey', apiKey: key }) };
    const { client, fake } = setup(anything, { credentials: provider });
    await client.companies.list().all();
    key = 'sbx_RotatedKey000000000000000000000000';
    await client.companies.list().all();
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${key}`]);
  });
});

describe('company scoping', () => {
  it('refuses another company in the path before sending', async () => {
    const { client, fake } = setup(anything, { credentials: apiKeyAuth(KEY, { companyId: COMPANY_A }) });
    const error = await client.taxReports
      .list(COMPANY_B)
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompanyMismatchError);
    expect((error as CompanyMismatchError).param).toBe('company_pk');
    expect((error as CompanyMismatchError).status).toBeUndefined();
    expect(fake.requests).toHaveLength(0);
    await client.taxReports.list(COMPANY_A.toUpperCase()).all();
    expect(fake.requests).toHaveLength(1);
  });

  it('sends the configured company as X-Company-Id, except to institution operations', async () => {
    const { client, fake } = setup(anything, { credentials: accessTokenAuth(TOKEN), companyId: COMPANY_A });
    await client.transactions.list().all();
    expect(fake.requests[0]!.headers['x-company-id']).toBe(COMPANY_A);
    const institution = client.withOptions({ credentials: institutionAuth({ institutionId: 'i', secretKey: 'institution-secret' }) });
    await institution.institution.verifyToken(TOKEN);
    expect(fake.requests[1]!.headers['x-company-id']).toBeUndefined();
  });

  it("refuses an X-Company-Id that differs from the credential's company", async () => {
    const { client, fake } = setup(anything, { credentials: apiKeyAuth(KEY, { companyId: COMPANY_A }), companyId: COMPANY_B });
    await expect(client.transactions.list().all()).rejects.toMatchObject({ param: 'X-Company-Id', code: 'company_mismatch' });
    expect(fake.requests).toHaveLength(0);
  });

  it('learns the company of an API key from GET /companies/ and holds the key to it', async () => {
    const { client, fake } = setup((_r, url) =>
      url.pathname === '/api/v1/companies/'
        ? json(200, { count: 1, next: null, previous: null, results: [company(COMPANY_A)] })
        : anything(_r, url),
    );
    await client.taxReports.list(COMPANY_B).all(); // not known yet: the service decides
    expect(fake.requests).toHaveLength(1);
    const [only] = await client.companies.list().all();
    expect(only!.parsed.publicId).toBe(COMPANY_A);
    await expect(client.taxReports.list(COMPANY_B).all()).rejects.toBeInstanceOf(CompanyMismatchError);
    expect(fake.requests).toHaveLength(2);
  });

  it('does not carry a learned company over to a different key', async () => {
    let key = KEY;
    const provider: CredentialProvider = { get: () => Promise.resolve({ kind: 'apiKey', apiKey: key }) };
    const { client, fake } = setup(
      (_r, url) =>
        url.pathname === '/api/v1/companies/'
          ? json(200, { count: 1, next: null, previous: null, results: [company(COMPANY_A)] })
          : anything(_r, url),
      { credentials: provider },
    );
    await client.companies.list().all();
    key = 'sbx_OtherCompanyKey00000000000000000000';
    await client.taxReports.list(COMPANY_B).all();
    expect(fake.requests).toHaveLength(2);
  });

  it('does not learn from a user token, which may see several companies', async () => {
    const { client, fake } = setup(
      (_r, url) =>
        url.pathname === '/api/v1/companies/'
          ? json(200, { count: 1, next: null, previous: null, results: [company(COMPANY_A)] })
          : anything(_r, url),
      { credentials: accessTokenAuth(TOKEN) },
    );
    await client.companies.list().all();
    await client.taxReports.list(COMPANY_B).all();
    expect(fake.requests).toHaveLength(2);
  });

  it('checks the body fields companyId and company', async () => {
    const fake = fakeTransport(() => json(200, {}));
    const engine = new RequestEngine({
      baseUrl: new URL(BASE_URL),
      credentials: apiKeyAuth(KEY, { companyId: COMPANY_A }),
      companyId: undefined,
      transport: fake.transport,
      timeoutMs: 1000,
      retry: defaultRetryPolicy,
      clock: ManualClock.autoAdvancing(),
      random: () => 0,
      logger: silentLogger,
      onWarning: undefined,
      pageSize: 1000,
      maxPageSize: 1000,
      maxResponseBytes: 1 << 20,
    });
    const post = (body: Record<string, unknown>) =>
      engine.send({ method: 'POST', url: engine.url('/accounting/clients/'), auth: 'bearer', safety: 'unsafe', body });
    await expect(post({ companyId: COMPANY_B })).rejects.toMatchObject({ param: 'companyId' });
    await expect(post({ company: COMPANY_B })).rejects.toMatchObject({ param: 'company' });
    expect(fake.requests).toHaveLength(0);
    await post({ companyId: COMPANY_A, company: COMPANY_A, name: 'x' });
    expect(fake.requests).toHaveLength(1);
  });
});

describe('paths', () => {
  it('keeps trailing slashes and uses configurable API-key paths', async () => {
    const { client, fake } = setup(() => ({ status: 204, headers: {}, body: '' }), {
      apiKeyPaths: { revoke: '/companies/keys/{publicId}/revoke/' },
    });
    await client.apiKeys.revoke('4b3a2c1d-0e9f-4a8b-9c7d-6e5f4a3b2c1d');
    expect(fake.requests[0]!.url).toBe(`${BASE_URL}/companies/keys/4b3a2c1d-0e9f-4a8b-9c7d-6e5f4a3b2c1d/revoke/`);
    await expect(client.apiKeys.revoke('../../admin')).rejects.toBeInstanceOf(ValidationError);
    expect(() => new AccountingClient({ baseUrl: BASE_URL, credentials: apiKeyAuth(KEY), apiKeyPaths: { revoke: '/keys/' } })).toThrow(
      ConfigError,
    );
  });

  it('accepts a base URL with or without a trailing slash', async () => {
    const { client, fake } = setup(anything, { baseUrl: `${BASE_URL}/` });
    await client.companies.list().all();
    expect(new URL(fake.requests[0]!.url).pathname).toBe('/api/v1/companies/');
    expect(() => new AccountingClient({ baseUrl: 'ftp://x/api/v1', credentials: apiKeyAuth(KEY) })).toThrow(ConfigError);
  });
});
