import { createServer } from 'node:net';
import {
  AccountingApiError,
  ApiValidationError,
  AuthenticationError,
  CompanyAccessRemovedError,
  CompanyMismatchError,
  ConflictError,
  ConnectionError,
  CreatorDisabledError,
  InvalidGrantError,
  KeyExpiredError,
  KeyRevokedError,
  MalformedApiKeyError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ResponseValidationError,
  ServerError,
  TimeoutError,
  TokenExpiredError,
  TokenRevokedError,
  UserExistsError,
  accessTokenAuth,
  apiKeyAuth,
  createAccountingClient,
  institutionAuth,
  retryRecordOf,
} from '../../../src/core/accounting-api';
import { type Permission } from '../../../sandbox';
import { startRecordingServer } from '../../helpers/recording-server';
import { MINUTE, SteppingClock, type World, newIdentity, rejectionOf, startWorld } from './support';

const TX = 'GET /accounting/transactions/';
const HOUR = 60 * MINUTE;

/**
 * Every error class of the client, produced by the real sandbox over HTTP (and, for the few it
 * cannot produce, by a real socket). PaginationError lives in pagination.test.ts.
 */
describe('client against the sandbox: every error class', () => {
  let world: World;
  let otherCompanyId: string;

  beforeAll(async () => {
    world = await startWorld();
    await world.sandbox.admin.generateTransactions({ companyId: world.companyId, month: '2026-10', count: 20 });
    otherCompanyId = (await world.sandbox.admin.createCompany({ name: 'Someone Else' })).publicId;
  });
  afterAll(() => world.sandbox.stop());
  beforeEach(() => world.sandbox.admin.resetStats());
  afterEach(async () => {
    await world.sandbox.admin.faults.clear();
    await world.sandbox.admin.configure({ rateLimit: null });
  });

  /** The error is exactly `cls` (not a subclass), and carries the sandbox's request id of the refused request. */
  async function expectFromSandbox(
    error: Error,
    cls: abstract new (...args: never[]) => AccountingApiError,
    fields: Record<string, unknown>,
  ) {
    expect(error.constructor).toBe(cls);
    expect(error).toMatchObject(fields);
    const [last] = await world.sandbox.admin.requestLog({ limit: 1 });
    expect((error as AccountingApiError).requestId).toBe(last!.requestId);
    expect(error.message).toContain(`request id ${last!.requestId}`);
  }

  const keyFor = async (permissions: Permission[], extra: { creatorUserId?: string; expiresAt?: string } = {}) =>
    (await world.sandbox.admin.createApiKey({ companyId: world.companyId, permissions, ...extra })).key;

  describe('authentication', () => {
    it('an unknown key or institution secret: AuthenticationError', async () => {
      const unknown = await rejectionOf(
        world
          .client({ credentials: apiKeyAuth(`sbx_${'A'.repeat(32)}`) })
          .companies.list()
          .all(),
      );
      await expectFromSandbox(unknown, AuthenticationError, {
        status: 401,
        apiCode: 'invalid_credentials',
        ambiguous: false,
        request: 'GET /api/v1/companies/?page_size=1000',
      });
      const institution = world.institutionClient({
        credentials: institutionAuth({ institutionId: world.institutionId, secretKey: 'not-the-secret' }),
      });
      await expectFromSandbox(await rejectionOf(institution.institution.verifyToken('whatever')), AuthenticationError, {
        status: 401,
        apiCode: 'institution_invalid',
      });
    });

    it('a key not shaped <prefix>_<rest>: MalformedApiKeyError, and nothing is sent', async () => {
      const error = await rejectionOf(
        world
          .client({ credentials: apiKeyAuth('not-an-api-key') })
          .transactions.list()
          .all(),
      );
      expect(error).toBeInstanceOf(MalformedApiKeyError);
      expect(error).toMatchObject({ status: undefined, code: 'malformed_api_key' });
      expect(await world.requests()).toBe(0);
    });

    it('a key expired, revoked, whose creator is disabled, or whose creator lost the company', async () => {
      const expiring = world.client({
        credentials: apiKeyAuth(await keyFor(['read_transactions'], { expiresAt: new Date(world.clock.now() + HOUR).toISOString() })),
      });
      await expiring.transactions.list().all();
      world.clock.advance(HOUR);
      await expectFromSandbox(await rejectionOf(expiring.transactions.list().all()), KeyExpiredError, {
        status: 401,
        apiCode: 'key_expired',
      });

      const created = await world.client().apiKeys.create({ name: 'short-lived', permissions: ['read_transactions'] });
      await world.client().apiKeys.revoke(created.publicId);
      const revoked = world.client({ credentials: apiKeyAuth(created.key) });
      await expectFromSandbox(await rejectionOf(revoked.transactions.list().all()), KeyRevokedError, {
        status: 401,
        apiCode: 'key_revoked',
      });

      const creator = await world.sandbox.admin.createUser({ companies: [world.companyId] });
      const byCreator = world.client({ credentials: apiKeyAuth(await keyFor(['read_transactions'], { creatorUserId: creator.userId })) });
      await world.sandbox.admin.disableUser({ userId: creator.userId });
      await expectFromSandbox(await rejectionOf(byCreator.transactions.list().all()), CreatorDisabledError, {
        status: 401,
        apiCode: 'creator_disabled',
      });
      await world.sandbox.admin.enableUser({ userId: creator.userId });
      await world.sandbox.admin.removeCompanyAccess({ userId: creator.userId, companyId: world.companyId });
      await expectFromSandbox(await rejectionOf(byCreator.transactions.list().all()), CompanyAccessRemovedError, {
        status: 401,
        apiCode: 'company_access_removed',
      });
      await world.sandbox.admin.grantCompanyAccess({ userId: creator.userId, companyId: world.companyId });
      expect(await byCreator.transactions.list().all()).toHaveLength(20);
    });

    it('a user token expired, revoked, or of a disabled user', async () => {
      const institution = world.institutionClient();
      const identity = newIdentity();
      const created = await institution.institution.createUser(identity);
      const { userId } = await world.sandbox.admin.findUser({ institutionId: world.institutionId, externalId: identity.externalId });
      await world.sandbox.admin.grantCompanyAccess({ userId, companyId: world.companyId });
      const asUser = (token: string) => world.client({ credentials: accessTokenAuth(token) });
      await asUser(created.accessToken).transactions.list().all();

      world.clock.advance(30 * MINUTE + 1000);
      await expectFromSandbox(await rejectionOf(asUser(created.accessToken).transactions.list().all()), TokenExpiredError, {
        status: 401,
        apiCode: 'token_expired',
      });

      const retrieved = await institution.institution.retrieveToken(identity);
      await institution.institution.expireToken(retrieved.refreshToken);
      await expectFromSandbox(await rejectionOf(asUser(retrieved.accessToken).transactions.list().all()), TokenRevokedError, {
        status: 401,
        apiCode: 'token_revoked',
      });

      const fresh = await institution.institution.retrieveToken(identity);
      await world.sandbox.admin.disableUser({ userId });
      await expectFromSandbox(await rejectionOf(asUser(fresh.accessToken).transactions.list().all()), AuthenticationError, {
        status: 401,
        apiCode: 'user_disabled',
      });
    });
  });

  it('a refresh token used, revoked by reuse detection, expired or never issued: InvalidGrantError', async () => {
    const { institution } = world.institutionClient();
    const created = await institution.createUser(newIdentity());
    const rotated = await institution.refreshToken(created.refreshToken!);
    await expectFromSandbox(await rejectionOf(institution.refreshToken(created.refreshToken!)), InvalidGrantError, {
      status: 400,
      apiCode: 'refresh_token_used',
    });
    // The reuse killed the family: the legitimate holder's token is revoked too.
    await expectFromSandbox(await rejectionOf(institution.refreshToken(rotated.refreshToken)), InvalidGrantError, {
      apiCode: 'refresh_token_revoked',
    });
    await expectFromSandbox(await rejectionOf(institution.expireToken(rotated.accessToken)), InvalidGrantError, {
      apiCode: 'refresh_token_invalid',
    });

    const later = await institution.createUser(newIdentity());
    world.clock.advance(7 * 24 * HOUR + 1000);
    await expectFromSandbox(await rejectionOf(institution.refreshToken(later.refreshToken!)), InvalidGrantError, {
      apiCode: 'refresh_token_expired',
    });
    // Not retried: an unsafe operation the service refused outright.
    expect(await world.requests('POST /institution/users/token/refresh/')).toBe(4);
  });

  it('a missing permission: PermissionDeniedError naming it', async () => {
    const reader = world.client({ credentials: apiKeyAuth(await keyFor(['read_transactions'])) });
    const categories = await rejectionOf(reader.categories.list().all());
    await expectFromSandbox(categories, PermissionDeniedError, {
      status: 403,
      apiCode: 'permission_denied',
      permission: 'read_categories',
    });
    expect(categories.message).toContain('read_categories');
    await expectFromSandbox(await rejectionOf(reader.apiKeys.list().all()), PermissionDeniedError, { permission: 'manage_api_keys' });
    const manager = world.client({ credentials: apiKeyAuth(await keyFor(['manage_api_keys', 'read_transactions'])) });
    await expectFromSandbox(
      await rejectionOf(manager.apiKeys.create({ name: 'stronger', permissions: ['full_access'] })),
      PermissionDeniedError,
      { permission: 'full_access' },
    );
  });

  describe('company mismatch', () => {
    it('refused before sending, in the path and in X-Company-Id, once the company is known', async () => {
      const scoped = world.client({ credentials: apiKeyAuth(world.key, { companyId: world.companyId }) });
      const inPath = await rejectionOf(scoped.taxReports.list(otherCompanyId).all());
      expect(inPath).toBeInstanceOf(CompanyMismatchError);
      expect(inPath).toMatchObject({
        status: undefined,
        param: 'company_pk',
        request: `GET /api/v1/companies/${otherCompanyId}/taxes/reports/?page_size=1000`,
      });

      const inHeader = await rejectionOf(scoped.withOptions({ companyId: otherCompanyId }).transactions.list().all());
      expect(inHeader).toBeInstanceOf(CompanyMismatchError);
      expect(inHeader).toMatchObject({ status: undefined, param: 'X-Company-Id' });
      expect(await world.requests()).toBe(0);

      // A key's company learned from GET /companies/ scopes it just the same.
      const learning = world.client();
      await learning.companies.list().all();
      const learned = await rejectionOf(learning.taxReports.list(otherCompanyId).all());
      expect(learned).toBeInstanceOf(CompanyMismatchError);
      expect(learned).toMatchObject({ status: undefined, param: 'company_pk' });
      expect(await world.requests()).toBe(1);
    });

    it('refused by the service (403) when the client could not know', async () => {
      const unaware = world.client();
      await expectFromSandbox(await rejectionOf(unaware.taxReports.list(otherCompanyId).all()), CompanyMismatchError, {
        status: 403,
        apiCode: 'company_mismatch',
        param: 'company_pk',
      });
      await expectFromSandbox(
        await rejectionOf(unaware.withOptions({ companyId: otherCompanyId }).transactions.list().all()),
        CompanyMismatchError,
        {
          status: 403,
          param: 'X-Company-Id',
        },
      );
    });
  });

  it('a page past the last: NotFoundError', async () => {
    await expectFromSandbox(await rejectionOf(world.client().transactions.list({ page: 99, pageSize: 10 }).all()), NotFoundError, {
      status: 404,
      apiCode: 'not_found',
      request: 'GET /api/v1/accounting/transactions/?page=99&page_size=10',
    });
  });

  it('a user that exists: UserExistsError; a state that prevents the change: ConflictError', async () => {
    const { institution } = world.institutionClient();
    const identity = newIdentity();
    await institution.createUser(identity);
    await expectFromSandbox(await rejectionOf(institution.createUser(identity)), UserExistsError, { status: 409, apiCode: 'user_exists' });
    await expectFromSandbox(await rejectionOf(institution.createUser({ ...newIdentity(), username: identity.username })), UserExistsError, {
      apiCode: 'user_exists',
    });

    // The sandbox has no state that blocks a revoke; a fault gives the documented 409.
    const created = await world.client().apiKeys.create({ name: 'blocked', permissions: ['read_transactions'] });
    await world.sandbox.admin.faults.add({ route: 'DELETE /api-keys/{publicId}/', fault: { type: 'status', status: 409 } });
    await expectFromSandbox(await rejectionOf(world.client().apiKeys.revoke(created.publicId)), ConflictError, {
      status: 409,
      apiCode: 'state_prevents_change',
    });
    expect(await world.requests('DELETE /api-keys/{publicId}/')).toBe(1);
  });

  it('a request the service refuses as invalid: ApiValidationError naming the field', async () => {
    const client = world.client();
    await expectFromSandbox(
      await rejectionOf(client.apiKeys.create({ name: 'odd', permissions: ['read_transactions', 'fly_to_the_moon'] })),
      ApiValidationError,
      {
        status: 400,
        apiCode: 'invalid_request',
        param: 'permissions[1]',
      },
    );
    const past = new Date(world.clock.now() - HOUR).toISOString();
    await expectFromSandbox(
      await rejectionOf(client.apiKeys.create({ name: 'old', permissions: ['read_transactions'], expiresAt: past })),
      ApiValidationError,
      { param: 'expiresAt' },
    );
    const user = await world.sandbox.admin.createUser({
      institutionId: world.institutionId,
      companies: [world.companyId, otherCompanyId],
      issueTokens: true,
    });
    const { accessToken } = user.tokens!;
    const twoCompanies = world.client({ credentials: accessTokenAuth(accessToken) });
    await expectFromSandbox(await rejectionOf(twoCompanies.transactions.list().all()), ApiValidationError, { param: 'X-Company-Id' });
    expect(await twoCompanies.withOptions({ companyId: world.companyId }).transactions.list().all()).toHaveLength(20);
  });

  describe('rate limit', () => {
    beforeEach(() => world.sandbox.admin.configure({ rateLimit: { requestsPerSecond: 0.25, burst: 1 } }));

    it('honours Retry-After on the shared clock: one wait of exactly 4 s, then the retry passes the token bucket', async () => {
      const clock = new SteppingClock(world.clock);
      const client = world.client({ credentials: apiKeyAuth(await keyFor(['read_transactions'])), clock });
      await client.transactions.list().all();
      expect(await client.transactions.list().all()).toHaveLength(20);
      expect(clock.sleeps).toEqual([4000]);
      const stats = await world.sandbox.admin.stats();
      expect(stats.rateLimited).toBe(1);
      expect(stats.byRouteAndStatus[TX]).toEqual({ 200: 2, 429: 1 });
    });

    it('raises RateLimitError with retryAfterMs when retries are spent or the wait does not fit the budget', async () => {
      const key = await keyFor(['read_transactions']);
      const clock = new SteppingClock(world.clock);
      await world
        .client({ credentials: apiKeyAuth(key) })
        .transactions.list()
        .all();
      const noRetry = world.client({ credentials: apiKeyAuth(key), clock, retry: { maxAttempts: 1 } });
      await expectFromSandbox(await rejectionOf(noRetry.transactions.list().all()), RateLimitError, {
        status: 429,
        apiCode: 'rate_limited',
        retryAfterMs: 4000,
        ambiguous: false,
      });
      const hurried = world.client({ credentials: apiKeyAuth(key), clock, retry: { maxElapsedMs: 3000 } });
      await expectFromSandbox(await rejectionOf(hurried.transactions.list().all()), RateLimitError, { retryAfterMs: 4000 });
      expect(clock.sleeps).toEqual([]);
    });
  });

  describe('transient failures', () => {
    it('5xx: ServerError (ambiguous) after the bounded backoff, with or without the envelope', async () => {
      await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'status', status: 500 } });
      const clock = new SteppingClock(world.clock);
      await expectFromSandbox(await rejectionOf(world.client({ clock }).transactions.list().all()), ServerError, {
        status: 500,
        apiCode: 'internal_error',
        ambiguous: true,
      });
      expect(clock.sleeps).toEqual([250, 500, 1000]); // equal jitter with random() = 0: half of 500·2^(n-1)
      expect(await world.requests(TX)).toBe(4);

      await world.sandbox.admin.faults.clear();
      await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'status', status: 502, body: 'html' } });
      await expectFromSandbox(
        await rejectionOf(
          world
            .client({ retry: { maxAttempts: 1 } })
            .transactions.list()
            .all(),
        ),
        ServerError,
        { status: 502, apiCode: undefined },
      );
    });

    it('a broken connection: ConnectionError, ambiguous', async () => {
      await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'reset' } });
      const error = await rejectionOf(world.client().transactions.list().all());
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ status: undefined, ambiguous: true, request: 'GET /api/v1/accounting/transactions/?page_size=1000' });
      // The endpoint, never the key or the query, and that the service may have acted.
      expect(error.message).toContain(`${new URL(world.sandbox.baseUrl).host}: `);
      expect(error.message).toMatch(/the request may have been processed$/);
      expect(await world.requests(TX)).toBe(4);
    });

    it('a connection never made: ConnectionError, not ambiguous, retried', async () => {
      const port = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port: free } = probe.address() as { port: number };
          probe.close(() => resolve(free));
        });
      });
      const clock = new SteppingClock(world.clock);
      const client = createAccountingClient({
        baseUrl: `http://127.0.0.1:${port}/api/v1`,
        credentials: apiKeyAuth(world.key),
        clock,
        random: () => 0,
      });
      const error = await rejectionOf(client.transactions.list().all());
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ ambiguous: false });
      // Which endpoint and why: a wrong port is fixed by knowing it was this one, refused.
      expect(error.message).toMatch(
        new RegExp(
          `^connection failed \\(on GET /api/v1/accounting/transactions/\\?page_size=1000\\): 127\\.0\\.0\\.1:${port}: connection refused \\(ECONNREFUSED\\).*; not sent$`,
        ),
      );
      expect(clock.sleeps).toHaveLength(3);
    });

    it('https:// on an http server: a failed TLS handshake, named, not sent (nothing reached the service), not retried', async () => {
      const url = new URL(world.sandbox.baseUrl);
      url.protocol = 'https:';
      const clock = new SteppingClock(world.clock);
      const client = createAccountingClient({ baseUrl: url.href, credentials: apiKeyAuth(world.key), clock, random: () => 0 });
      const error = await rejectionOf(client.transactions.list().all());
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ ambiguous: false, final: true });
      // The default policy would retry a connection never made three times; this one is final.
      expect(clock.sleeps).toEqual([]);
      expect(retryRecordOf(error)).toMatchObject({ retries: 0, gaveUp: 'not_retryable' });
      expect(error.message).toContain(`${url.host}: TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER)`);
      expect(error.message).toMatch(/an http:\/\/ server\?\); not sent$/);
      expect(await world.requests(TX)).toBe(0);
    });

    it('no answer in time: TimeoutError, ambiguous', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'slow', delayMs: MINUTE } });
      const error = await rejectionOf(
        world
          .client({ timeoutMs: 100, retry: { maxAttempts: 1 } })
          .transactions.list()
          .all(),
      );
      expect(error).toBeInstanceOf(TimeoutError);
      expect(error).toMatchObject({ status: undefined, ambiguous: true, code: 'timeout' });
      expect(error.message).toContain(`${new URL(world.sandbox.baseUrl).host}: no complete answer in time`);
      world.clock.advance(MINUTE); // release the held response
    });
  });

  describe('responses the client cannot use', () => {
    it('malformed JSON: ResponseValidationError (ambiguous, not retried)', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'malformed_json' } });
      const error = await rejectionOf(world.client().transactions.list().all());
      await expectFromSandbox(error, ResponseValidationError, {
        status: 200,
        ambiguous: true,
        field: '',
        issues: [{ path: '', message: 'body is not valid JSON' }],
      });
      expect(await world.requests(TX)).toBe(1);
    });

    it('schema drift: ResponseValidationError naming the path, never the value', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'drop_field', field: 'valueDate' } });
      const dropped = await rejectionOf(world.client().transactions.list().all());
      await expectFromSandbox(dropped, ResponseValidationError, { field: 'results[0].valueDate' });
      expect(dropped.message).toContain('results[0].valueDate: expected string');

      // A token reply must carry its access token (spec §4.1); the refresh token it may omit.
      await world.sandbox.admin.faults.add({
        route: 'POST /institution/users/create/',
        fault: { type: 'drop_field', field: 'accessToken' },
      });
      const created = await rejectionOf(world.institutionClient().institution.createUser(newIdentity()));
      await expectFromSandbox(created, ResponseValidationError, { status: 201, field: 'accessToken', ambiguous: true });
    });
  });

  it('a status the client has no class for (a redirect, never followed): AccountingApiError', async () => {
    const upstream = await startRecordingServer((request) => ({ status: 302, headers: { location: `/moved${request.url}` } }));
    try {
      const client = createAccountingClient({
        baseUrl: `${upstream.origin}/api/v1`,
        credentials: institutionAuth({ institutionId: world.institutionId, secretKey: world.institutionSecret }),
      });
      const error = await rejectionOf(client.institution.verifyToken('some-token'));
      expect(error.constructor).toBe(AccountingApiError);
      expect(error).toMatchObject({ status: 302, code: 'unexpected_response', ambiguous: false });
      // The Institution header went to the base URL only: the redirect was not followed.
      expect(upstream.requests.map((r) => r.url)).toEqual(['/api/v1/institution/users/token/verify/']);
    } finally {
      await upstream.stop();
    }
  });
});
