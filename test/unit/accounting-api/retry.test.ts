import {
  AccountingClient,
  AuthenticationError,
  type AccountingClientOptions,
  ConnectionError,
  RateLimitError,
  ResponseValidationError,
  ServerError,
  TimeoutError,
  TransportFailure,
  apiKeyAuth,
  backoffForTest,
  defaultRetryPolicy,
  errorFromResponse,
  institutionAuth,
  isRetryable,
  refusesUser,
  retryDecision,
  retryDelayMs,
  retryRecordOf,
} from './retry-imports';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { BASE_URL, type Handler, apiError, fakeTransport, json, sequence } from './fake-transport';

const USER = { username: 'ada', email: 'ada@example.com', externalId: '6a1f0c2e-8b3d-4e5f-9a7b-1c2d3e4f5a6b' };
const TOKENS = {
  accessToken: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln',
  refreshToken: 'eyJhbGciOiJIUzI1NiJ9.eyJ0eXAiOiJyIn0.c2ln',
  expiresIn: 1800,
};
const KEY = 'sbx_AbCdEf12GhIjKl34MnOpQr56StUvWx78';
const INSTITUTION = { institutionId: 'inst_1', secretKey: 'inst-secret-0123456789' };

function setup(handler: Handler, overrides: Partial<AccountingClientOptions> = {}) {
  const fake = fakeTransport(handler);
  const clock = overrides.clock ?? ManualClock.autoAdvancing();
  const logger = new MemoryLogger();
  const sentAt: number[] = [];
  const transport: AccountingClientOptions['transport'] = (request) => {
    sentAt.push(clock.now());
    return fake.transport(request);
  };
  const client = new AccountingClient({
    baseUrl: BASE_URL,
    credentials: apiKeyAuth(KEY),
    transport,
    clock,
    logger,
    random: () => 0.5,
    ...overrides,
  });
  return { client, fake, clock, logger, sentAt };
}

const context = { request: 'GET /x/', now: 0 };
const unavailable = apiError(503, 'api_error', 'unavailable');
const limited = (retryAfter?: string) =>
  apiError(429, 'rate_limit_error', 'rate_limited', {}, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
const emptyList = json(200, { count: 0, next: null, previous: null, results: [] });

describe('retry policy (pure)', () => {
  const server = errorFromResponse(unavailable, context);
  const rate = errorFromResponse(limited(), context);
  const refused = new ConnectionError(undefined, { ambiguous: false });
  const reset = new ConnectionError(undefined, {});
  const timeout = new TimeoutError(undefined, {});

  it('retries everything transient for idempotent operations', () => {
    for (const error of [server, rate, refused, reset, timeout]) expect(isRetryable(error, 'idempotent')).toBe(true);
  });

  it('retries unsafe operations only when the request surely was not processed', () => {
    expect(isRetryable(rate, 'unsafe')).toBe(true);
    expect(isRetryable(refused, 'unsafe')).toBe(true);
    for (const error of [server, reset, timeout]) {
      expect(error.ambiguous).toBe(true);
      expect(isRetryable(error, 'unsafe')).toBe(false);
    }
  });

  it('retries no final connection failure (a refused TLS handshake), whatever the safety', () => {
    const final = new ConnectionError(undefined, { ambiguous: false, final: true });
    for (const safety of ['idempotent', 'unsafe'] as const) {
      expect(isRetryable(final, safety)).toBe(false);
      expect(retryDecision(final, { safety, attempt: 1, elapsedMs: 0, policy: defaultRetryPolicy, random: () => 0 })).toEqual({
        giveUp: 'not_retryable',
      });
    }
    expect(refused.final).toBe(false);
  });

  it('backs off exponentially with jitter, capped', () => {
    const policy = { ...defaultRetryPolicy, initialDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffForTest(1, policy, () => 0)).toBe(50);
    expect(backoffForTest(1, policy, () => 0.999999)).toBe(100);
    expect(backoffForTest(3, policy, () => 0)).toBe(200);
    expect(backoffForTest(10, policy, () => 0.999999)).toBe(1000);
  });

  it('is bounded in attempts and in total time', () => {
    const base = { safety: 'idempotent' as const, policy: defaultRetryPolicy, random: () => 0 };
    expect(retryDelayMs(server, { ...base, attempt: 1, elapsedMs: 0 })).toBe(250);
    expect(retryDelayMs(server, { ...base, attempt: defaultRetryPolicy.maxAttempts, elapsedMs: 0 })).toBeUndefined();
    expect(retryDelayMs(server, { ...base, attempt: 1, elapsedMs: defaultRetryPolicy.maxElapsedMs - 100 })).toBeUndefined();
  });

  it('waits a Retry-After equal to its cap, and a wait that ends exactly at the deadline', () => {
    // A per-minute limit sends `Retry-After: 60`; `--max-retry-wait 60s` must wait for it.
    const asked = errorFromResponse(limited('60'), context);
    expect(asked.retryAfterMs).toBe(60_000);
    const base = { safety: 'idempotent' as const, attempt: 1, elapsedMs: 0, random: () => 0 };
    const capped = { ...defaultRetryPolicy, maxElapsedMs: Number.POSITIVE_INFINITY };
    expect(retryDecision(asked, { ...base, policy: { ...capped, maxRetryAfterMs: 60_000 } })).toEqual({ delayMs: 60_000 });
    expect(retryDecision(asked, { ...base, policy: { ...capped, maxRetryAfterMs: 59_999 } })).toEqual({ giveUp: 'retry_after_cap' });
    // "No wait may end after" the deadline: one that ends at it may start.
    expect(retryDecision(asked, { ...base, policy: { ...capped, deadlineAt: 1_060_000 }, now: 1_000_000 })).toEqual({ delayMs: 60_000 });
    expect(retryDecision(asked, { ...base, policy: { ...capped, deadlineAt: 1_059_999 }, now: 1_000_000 })).toEqual({ giveUp: 'deadline' });
  });
});

describe('retries through the client', () => {
  it('retries a GET on 5xx with backoff and logs each retry at warn with the redacted request', async () => {
    const { client, fake, logger, sentAt } = setup(sequence(unavailable, unavailable, emptyList));
    await expect(client.transactions.list({ dateFrom: '2026-10-01' }).all()).resolves.toEqual([]);
    expect(fake.requests).toHaveLength(3);
    // random 0.5: 500 * (0.5 + 0.25), then 1000 * 0.75
    expect(sentAt.map((t) => t - sentAt[0]!)).toEqual([0, 375, 375 + 750]);
    const warns = logger.entries().filter((e) => e.level === 'warn');
    expect(warns).toHaveLength(2);
    expect(warns[0]).toMatchObject({
      request: 'GET /api/v1/accounting/transactions/?date_from=2026-10-01&page_size=1000',
      attempt: 1,
      error: 'server_error',
      status: 503,
    });
  });

  it('honours Retry-After in seconds exactly', async () => {
    const { client, fake, sentAt } = setup(sequence(limited('7'), emptyList));
    await client.categories.list().all();
    expect(fake.requests).toHaveLength(2);
    expect(sentAt[1]! - sentAt[0]!).toBe(7000);
  });

  it('honours Retry-After as an HTTP date', async () => {
    const clock = ManualClock.autoAdvancing();
    const at = new Date(clock.now() + 12_000).toUTCString();
    const { client, sentAt } = setup(sequence(limited(at), emptyList), { clock });
    await client.companies.list().all();
    expect(sentAt[1]! - sentAt[0]!).toBe(12_000);
  });

  it('gives up at once when Retry-After does not fit in the time budget', async () => {
    const { client, fake, sentAt } = setup(sequence(limited('120'), emptyList), { retry: { maxElapsedMs: 60_000 } });
    const error = await client.companies
      .list()
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(120_000);
    expect(fake.requests).toHaveLength(1);
    expect(sentAt).toEqual([sentAt[0]]);
  });

  it('stops after maxAttempts and raises the last error', async () => {
    const { client, fake } = setup(sequence(unavailable), { retry: { maxAttempts: 3 } });
    await expect(client.companies.list().all()).rejects.toBeInstanceOf(ServerError);
    expect(fake.requests).toHaveLength(3);
  });

  it('stops when the total time is spent', async () => {
    const { client, fake, clock } = setup(sequence(unavailable), {
      retry: { maxAttempts: 100, initialDelayMs: 1000, maxDelayMs: 1000, maxElapsedMs: 5000 },
      random: () => 1,
    });
    const start = clock.now();
    await expect(client.companies.list().all()).rejects.toBeInstanceOf(ServerError);
    expect(fake.requests).toHaveLength(6); // at 0, 1, 2, 3, 4, 5 s; a 6th retry would end at 6 s
    expect(clock.now() - start).toBeLessThanOrEqual(5000);
  });

  it('retries a GET after a timeout and after a broken connection', async () => {
    const { client, fake } = setup(
      sequence(new TransportFailure('timeout'), new TransportFailure('reset'), new Error('socket hang up'), emptyList),
    );
    await client.companies.list().all();
    expect(fake.requests).toHaveLength(4);
  });

  describe('failures no retry can fix', () => {
    const tls = (code: string) => new TransportFailure('refused', { code, cause: Object.assign(new Error(code), { code }) });

    it.each([
      ['a refused certificate', 'CERT_HAS_EXPIRED', "the server's certificate was refused"],
      ['another host name', 'ERR_TLS_CERT_ALTNAME_INVALID', "the server's certificate was refused"],
      ['an http server behind https://', 'ERR_SSL_WRONG_VERSION_NUMBER', 'the server does not answer in TLS there (an http:// server?)'],
      ['no common protocol', 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'no TLS version or cipher both sides accept'],
    ])('%s (%s): one attempt, no wait, the code and the reason in the message', async (_label, code, reason) => {
      const { client, fake, logger, sentAt } = setup(sequence(tls(code), emptyList));
      const error = await client.companies
        .list()
        .all()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ ambiguous: false, final: true, code: 'connection_failed' });
      expect((error as ConnectionError).message).toContain(`api.test:4010: TLS handshake failed (${code}): `);
      expect((error as ConnectionError).message).toContain(`${reason}; not sent`);
      expect(fake.requests).toHaveLength(1);
      expect(sentAt).toHaveLength(1);
      expect(logger.entries().filter((e) => e.level === 'warn')).toEqual([]);
      expect(retryRecordOf(error)).toEqual({ retries: 0, gaveUp: 'not_retryable', retryAfterMs: undefined, maxRetryAfterMs: undefined });
    });

    it('an unsafe POST with a refused certificate is not repeated either', async () => {
      const { client, fake } = setup(sequence(tls('DEPTH_ZERO_SELF_SIGNED_CERT'), json(201, {})));
      await expect(client.apiKeys.create({ name: 'n', permissions: ['read_invoices'] })).rejects.toMatchObject({ final: true });
      expect(fake.requests).toHaveLength(1);
    });

    it.each(['ECONNREFUSED', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH'])(
      'a connection never made for %s is still retried to the last attempt',
      async (code) => {
        const { client, fake } = setup(sequence(new TransportFailure('refused', { code })));
        const error = await client.companies
          .list()
          .all()
          .catch((e: unknown) => e);
        expect(error).toMatchObject({ ambiguous: false, final: false });
        expect(fake.requests).toHaveLength(defaultRetryPolicy.maxAttempts);
        expect(retryRecordOf(error)).toMatchObject({ retries: defaultRetryPolicy.maxAttempts - 1, gaveUp: 'attempts' });
      },
    );

    it('a TLS code on a failure that is not `refused` marks nothing final: only a handshake that sent nothing is judged by it', () => {
      expect(new TransportFailure('reset', { code: 'CERT_HAS_EXPIRED' }).final).toBe(false);
      expect(new TransportFailure('refused', { code: 'CERT_HAS_EXPIRED' }).final).toBe(true);
    });
  });

  describe('POST safety', () => {
    const institution = (handler: Handler) => setup(handler, { credentials: institutionAuth(INSTITUTION) });
    const created = json(201, { user: { username: 'ada', email: 'ada@example.com', external_id: USER.externalId }, ...TOKENS });

    it.each([
      ['5xx', unavailable, ServerError],
      ['timeout', new TransportFailure('timeout'), TimeoutError],
      ['reset', new TransportFailure('reset'), ConnectionError],
    ] as const)('never repeats createUser, refreshToken or API-key create after an ambiguous %s', async (_name, failure, Cls) => {
      for (const run of [
        (c: AccountingClient) => c.institution.createUser(USER),
        (c: AccountingClient) => c.institution.refreshToken(TOKENS.refreshToken),
      ]) {
        const { client, fake } = institution(sequence(failure, created));
        const error = await run(client).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(Cls);
        expect((error as ServerError).ambiguous).toBe(true);
        expect(fake.requests).toHaveLength(1);
      }
      const { client, fake } = setup(sequence(failure, json(201, {})));
      await expect(client.apiKeys.create({ name: 'n', permissions: ['read_invoices'] })).rejects.toBeInstanceOf(Cls);
      expect(fake.requests).toHaveLength(1);
    });

    it('marks an unreadable success as ambiguous and does not repeat it', async () => {
      // The access token is what a token reply must carry (spec §4.1); the refresh token it may omit.
      const { client, fake } = institution(sequence(json(200, { refreshToken: TOKENS.refreshToken }), json(200, TOKENS)));
      const error = await client.institution.refreshToken(TOKENS.refreshToken).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResponseValidationError);
      expect((error as ResponseValidationError).field).toBe('accessToken');
      expect((error as ResponseValidationError).ambiguous).toBe(true);
      expect(fake.requests).toHaveLength(1);
    });

    it('repeats an unsafe POST after 429 and after a connection that was never made', async () => {
      const { client, fake } = institution(sequence(limited('1'), new TransportFailure('refused'), created));
      const user = await client.institution.createUser(USER);
      expect(user.accessToken).toBe(TOKENS.accessToken);
      expect(fake.requests).toHaveLength(3);
    });

    it('repeats verify, expire and retrieve on 5xx and timeouts', async () => {
      const verify = institution(sequence(unavailable, new TransportFailure('timeout'), json(200, { valid: false, reason: 'expired' })));
      await expect(verify.client.institution.verifyToken(TOKENS.accessToken)).resolves.toMatchObject({ valid: false, reason: 'expired' });
      expect(verify.fake.requests).toHaveLength(3);

      const expire = institution(sequence(new TransportFailure('timeout'), json(200, { expired: true })));
      await expect(expire.client.institution.expireToken(TOKENS.refreshToken)).resolves.toEqual({ expired: true });
      expect(expire.fake.requests).toHaveLength(2);

      const retrieve = institution(sequence(unavailable, json(200, TOKENS)));
      await expect(retrieve.client.institution.retrieveToken(USER)).resolves.toMatchObject({ refreshToken: TOKENS.refreshToken });
      expect(retrieve.fake.requests).toHaveLength(2);
    });

    it('repeats an API-key revoke (DELETE) on 5xx', async () => {
      const { client, fake } = setup(sequence(unavailable, { status: 204, headers: {}, body: '' }));
      await expect(client.apiKeys.revoke('4b3a2c1d-0e9f-4a8b-9c7d-6e5f4a3b2c1d')).resolves.toBeUndefined();
      expect(fake.requests.map((r) => r.method)).toEqual(['DELETE', 'DELETE']);
    });
  });

  describe('credential refresh on 401', () => {
    it('asks the provider once and resends with the fresh credential', async () => {
      let current = KEY;
      const provider = {
        get: () => Promise.resolve({ kind: 'apiKey' as const, apiKey: current }),
        onAuthenticationError: jest.fn(() => {
          current = 'sbx_NewKey000000000000000000000000000';
          return Promise.resolve(true);
        }),
      };
      const { client, fake } = setup(sequence(apiError(401, 'authentication_error', 'key_revoked'), emptyList), { credentials: provider });
      await client.companies.list().all();
      expect(provider.onAuthenticationError).toHaveBeenCalledTimes(1);
      expect(fake.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`, 'Bearer sbx_NewKey000000000000000000000000000']);
    });

    it('raises the second 401 instead of looping', async () => {
      const provider = {
        get: () => Promise.resolve({ kind: 'apiKey' as const, apiKey: KEY }),
        onAuthenticationError: jest.fn(() => Promise.resolve(true)),
      };
      const { client, fake } = setup(sequence(apiError(401, 'authentication_error', 'key_expired')), { credentials: provider });
      await expect(client.companies.list().all()).rejects.toMatchObject({ code: 'key_expired' });
      expect(provider.onAuthenticationError).toHaveBeenCalledTimes(1);
      expect(fake.requests).toHaveLength(2);
    });

    it.each([
      ['ours', apiError(401, 'authentication_error', 'user_disabled')],
      ['DRF', json(401, { detail: 'User is inactive', code: 'user_inactive' })],
    ])('leaves the credential alone when the 401 refuses the user (%s): no new credential can help', async (_dialect, refusal) => {
      const provider = {
        get: () => Promise.resolve({ kind: 'institution' as const, ...INSTITUTION }),
        onAuthenticationError: jest.fn(() => Promise.resolve(true)),
      };
      const { client, fake } = setup(sequence(refusal), { credentials: provider });
      const error = await client.institution.retrieveToken(USER).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(refusesUser(error as AuthenticationError)).toBe(true);
      expect(provider.onAuthenticationError).not.toHaveBeenCalled();
      expect(fake.requests).toHaveLength(1);
    });

    it('raises at once when the provider has nothing fresher', async () => {
      const provider = {
        get: () => Promise.resolve({ kind: 'apiKey' as const, apiKey: KEY }),
        onAuthenticationError: () => Promise.resolve(false),
      };
      const { client, fake } = setup(sequence(apiError(401, 'authentication_error', 'token_expired'), emptyList), {
        credentials: provider,
      });
      await expect(client.companies.list().all()).rejects.toMatchObject({ code: 'token_expired' });
      expect(fake.requests).toHaveLength(1);
    });
  });
});
