import {
  ConnectionError,
  InvalidGrantError,
  KeyRevokedError,
  ResponseValidationError,
  ServerError,
  TokenRevokedError,
  type Transport,
  accessTokenAuth,
  apiKeyAuth,
  fetchTransport,
} from '../../../src/core/accounting-api';
import { MINUTE, SteppingClock, type World, newIdentity, rejectionOf, startWorld } from './support';

const TX = 'GET /accounting/transactions/';
const REFRESH = 'POST /institution/users/token/refresh/';

/**
 * Every fault type of the sandbox through the client, with the outcome the client promises:
 * recovered by a retry where a repeat is safe, else the typed error (ambiguous where the service
 * may have acted). The pagination faults (foreign_next, next_loop, count_mismatch,
 * result_set_change) are in pagination.test.ts; the errors each fault ends in, with all their
 * fields, in errors.test.ts.
 */
describe('client against the sandbox: every fault type', () => {
  let world: World;

  beforeAll(async () => {
    world = await startWorld();
    await world.sandbox.admin.generateTransactions({ companyId: world.companyId, month: '2026-10', count: 30 });
  });
  afterAll(() => world.sandbox.stop());
  beforeEach(() => world.sandbox.admin.resetStats());
  afterEach(() => world.sandbox.admin.faults.clear());

  const statuses = async (route: string) => (await world.sandbox.admin.stats()).byRouteAndStatus[route];
  const newUser = async () => {
    const identity = newIdentity();
    const created = await world.institutionClient().institution.createUser(identity);
    return { identity, pair: { ...created, refreshToken: created.refreshToken! } };
  };

  describe('status', () => {
    it('5xx on a GET (envelope or a proxy page): recovered by retrying after the backoff', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'status', status: 503 } });
      await world.sandbox.admin.faults.add({ route: TX, after: 1, fault: { type: 'status', status: 502, body: 'html' } });
      const clock = new SteppingClock(world.clock);
      expect(await world.client({ clock }).transactions.list().all()).toHaveLength(30);
      expect(clock.sleeps).toEqual([250, 500]);
      expect(await statuses(TX)).toEqual({ 200: 1, 502: 1, 503: 1 });
    });

    it('429 on an unsafe POST: retried after Retry-After, because the service did not act', async () => {
      const { identity, pair } = await newUser();
      await world.sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'status', status: 429, retryAfter: 2 } });
      const clock = new SteppingClock(world.clock);
      const refreshed = await world.institutionClient({ clock }).institution.refreshToken(pair.refreshToken);
      expect(refreshed.refreshToken).not.toBe(pair.refreshToken);
      expect(clock.sleeps).toEqual([2000]);
      expect((await world.sandbox.admin.stats()).refreshesPerUser[identity.externalId]).toBe(1);
    });

    it('429 with Retry-After as an HTTP date: the wait is measured on the shared clock', async () => {
      // HTTP dates have whole seconds: the client waits until that second, not a rounded 3 s.
      const at = Math.ceil((world.clock.now() + 3000) / 1000) * 1000;
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'status', status: 429, retryAfter: new Date(at).toUTCString() } });
      const clock = new SteppingClock(world.clock);
      const expectedWait = at - world.clock.now();
      expect(await world.client({ clock }).transactions.list().all()).toHaveLength(30);
      expect(clock.sleeps).toEqual([expectedWait]);
      expect(world.clock.now()).toBe(at);
    });

    it('5xx on an unsafe POST: ServerError, ambiguous, never repeated', async () => {
      await world.sandbox.admin.faults.add({ route: 'POST /institution/users/create/', fault: { type: 'status', status: 503 } });
      const error = await rejectionOf(world.institutionClient().institution.createUser(newIdentity()));
      expect(error).toBeInstanceOf(ServerError);
      expect(error).toMatchObject({ ambiguous: true, status: 503 });
      expect(await world.requests('POST /institution/users/create/')).toBe(1);
    });
  });

  describe('slow', () => {
    it('held on the sandbox clock: the client waits (no timeout) and gets the answer when time moves', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'slow', delayMs: 5 * MINUTE } });
      let settled = false;
      const pending = world
        .client()
        .transactions.list()
        .all()
        .finally(() => (settled = true));
      await world.sandbox.admin.waitForParked({ count: 1 });
      expect(settled).toBe(false);
      world.clock.advance(5 * MINUTE);
      expect(await pending).toHaveLength(30);
    });

    it('slower than timeoutMs: the attempt times out and the retry succeeds', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'slow', delayMs: 5 * MINUTE } });
      const clock = new SteppingClock(world.clock);
      // The default transport enforces the timeout; only the first attempt gets a short one, so
      // that the retry cannot time out on a busy machine.
      let attempts = 0;
      const inner = fetchTransport();
      const transport: Transport = (request) => inner({ ...request, timeoutMs: attempts++ === 0 ? 100 : request.timeoutMs });
      expect(await world.client({ clock, transport }).transactions.list().all()).toHaveLength(30);
      expect(attempts).toBe(2);
      expect(clock.sleeps).toEqual([250]);
      world.clock.advance(5 * MINUTE); // release the abandoned response
    });
  });

  describe('reset', () => {
    it('before handling, during the body (partial): a GET and an idempotent POST are recovered', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'reset' } });
      await world.sandbox.admin.faults.add({ route: TX, after: 1, fault: { type: 'reset', phase: 'partial' } });
      const clock = new SteppingClock(world.clock);
      expect(await world.client({ clock }).transactions.list().all()).toHaveLength(30);
      expect(clock.sleeps).toHaveLength(2);
      const log = await world.sandbox.admin.requestLog();
      expect(log.map((e) => e.status)).toEqual(['reset', 'reset', 200]);

      const { pair } = await newUser();
      await world.sandbox.admin.faults.add({ route: 'POST /institution/users/token/verify/', fault: { type: 'reset', phase: 'partial' } });
      expect(await world.institutionClient().institution.verifyToken(pair.accessToken)).toMatchObject({ valid: true });
    });

    it('before handling a refresh: ConnectionError (the client cannot tell), not repeated; the token is still good', async () => {
      const { identity, pair } = await newUser();
      await world.sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'reset' } });
      const { institution } = world.institutionClient();
      const error = await rejectionOf(institution.refreshToken(pair.refreshToken));
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ ambiguous: true });
      expect(await world.requests(REFRESH)).toBe(1);
      expect((await world.sandbox.admin.stats()).refreshesPerUser[identity.externalId]).toBeUndefined();
      await institution.refreshToken(pair.refreshToken);
    });

    it('after handling a refresh: ConnectionError, ambiguous; the token rotated, and retrieve recovers a pair', async () => {
      const { identity, pair } = await newUser();
      await world.sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'reset', phase: 'after' } });
      const { institution } = world.institutionClient();
      const error = await rejectionOf(institution.refreshToken(pair.refreshToken));
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ ambiguous: true });
      expect((await world.sandbox.admin.stats()).refreshesPerUser[identity.externalId]).toBe(1);
      expect(await institution.verifyToken(pair.refreshToken)).toEqual({ valid: false, reason: 'revoked' });
      const recovered = await institution.retrieveToken(identity);
      expect(await institution.verifyToken(recovered.refreshToken)).toMatchObject({ valid: true });
    });
  });

  it('malformed_json on a refresh: ResponseValidationError, ambiguous (the service rotated the token); not repeated', async () => {
    const { identity, pair } = await newUser();
    await world.sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'malformed_json' } });
    const { institution } = world.institutionClient();
    const error = await rejectionOf(institution.refreshToken(pair.refreshToken));
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect(error).toMatchObject({ ambiguous: true, status: 200 });
    expect(await world.requests(REFRESH)).toBe(1);
    expect((await world.sandbox.admin.stats()).refreshesPerUser[identity.externalId]).toBe(1);
    expect(await rejectionOf(institution.refreshToken(pair.refreshToken))).toBeInstanceOf(InvalidGrantError);
  });

  describe('schema drift', () => {
    it('drop_field of a field the client does not rely on: tolerated, recorded as null', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'drop_field', field: 'description' } });
      const items = await world.client().transactions.list().all();
      expect(items.every((i) => !('description' in i.raw) && i.parsed.description === null)).toBe(true);
    });

    it('extra_fields: tolerated and kept, in lists and in single bodies', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'extra_fields', fields: { riskScore: 0.5, tags: ['x'] } } });
      const items = await world.client().transactions.list().all();
      expect(items).toHaveLength(30);
      expect(items[0]!.raw).toMatchObject({ riskScore: 0.5, tags: ['x'] });
      expect(items[0]!.parsed).toMatchObject({ riskScore: 0.5, tags: ['x'] });

      const { pair } = await newUser();
      await world.sandbox.admin.faults.add({ route: 'POST /institution/users/token/verify/', fault: { type: 'extra_fields' } });
      expect(await world.institutionClient().institution.verifyToken(pair.accessToken)).toMatchObject({
        valid: true,
        sandboxExtra: 'unexpected',
      });
    });

    it('unknown_enum: the unknown value is kept verbatim, not refused', async () => {
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'unknown_enum', field: 'cashflowType' } });
      await world.sandbox.admin.faults.add({
        route: 'GET /companies/{company_pk}/taxes/reports/',
        fault: { type: 'unknown_enum', field: 'status', value: 'Under Review' },
      });
      await world.sandbox.admin.addTaxReport({ companyId: world.companyId, periodStart: '2026-09-01', periodEnd: '2026-09-30' });
      const items = await world.client().transactions.list().all();
      expect(new Set(items.map((i) => i.parsed.cashflowType))).toEqual(new Set(['TRANSFER']));
      const reports = await world.client().taxReports.list(world.companyId).all();
      expect(reports.map((r) => r.parsed.status)).toEqual(['Under Review']);
    });
  });

  describe('revoke_credential', () => {
    it('an API key revoked between pages: the first page is read, the next one fails with KeyRevokedError', async () => {
      const { key } = await world.sandbox.admin.createApiKey({ companyId: world.companyId, permissions: ['read_transactions'] });
      await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'revoke_credential' } });
      const seen: number[] = [];
      const error = await rejectionOf(
        (async () => {
          for await (const page of world
            .client({ credentials: apiKeyAuth(key) })
            .transactions.list({ pageSize: 10 })
            .pages())
            seen.push(page.items.length);
        })(),
      );
      expect(seen).toEqual([10]);
      expect(error).toBeInstanceOf(KeyRevokedError);
    });

    it("a user's tokens expired after the answer: the next call fails with TokenRevokedError", async () => {
      const { identity, pair } = await newUser();
      const { userId } = await world.sandbox.admin.findUser({ institutionId: world.institutionId, externalId: identity.externalId });
      await world.sandbox.admin.grantCompanyAccess({ userId, companyId: world.companyId });
      await world.sandbox.admin.faults.add({ route: 'GET /companies/', fault: { type: 'revoke_credential' } });
      const asUser = world.client({ credentials: accessTokenAuth(pair.accessToken) });
      expect(await asUser.companies.list().all()).toHaveLength(1);
      expect(await rejectionOf(asUser.companies.list().all())).toBeInstanceOf(TokenRevokedError);
    });
  });
});
