import { randomUUID } from 'node:crypto';
import { CreateSecretCommand, PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTokenStore } from '../../../src/adapters/aws/dynamodb-token-store';
import { MemoryEventPublisher } from '../../../src/adapters/local/memory-event-publisher';
import { MemoryRefreshQueue } from '../../../src/adapters/local/memory-refresh-queue';
import {
  InvalidGrantError,
  RateLimitError,
  createAccountingClient,
  institutionAuth,
  type AccountingClient,
} from '../../../src/core/accounting-api';
import { cachedInstitutionCredential } from '../../../src/core/credentials/institution-credential';
import { institutionCredentialProvider } from '../../../src/core/credentials/institution-provider';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { OnboardConflictError, RevocationIncompleteError, TokenBusyError, UserRevokedError } from '../../../src/core/tokens/errors';
import { planTokenRefresh } from '../../../src/core/tokens/plan-refresh';
import { refreshQueuedBatch } from '../../../src/core/tokens/refresh-worker';
import { encodeRefreshRequest } from '../../../src/core/tokens/refresh-queue';
import { TOKEN_EVENT_TYPES } from '../../../src/core/tokens/token-events';
import { jwtExpiry } from '../../../src/core/tokens/token-expiry';
import {
  TokenLifecycle,
  type InstitutionApi,
  type RefreshOutcome,
  type TokenLifecycleDeps,
} from '../../../src/core/tokens/token-lifecycle';
import type { TokenRecord, TokenStore } from '../../../src/core/tokens/token-store';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { client as secretsClient, secretStore, startSecretsManager, type RunningSecretsManager } from '../../helpers/secrets-manager';
import { CANARY } from '../../helpers/canary';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { createTokenTable } from '../../helpers/dynamodb-tables';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  /**
   * The token use cases end to end against the sandbox (the service), dynalite (the token table)
   * and the Secrets Manager emulator (the institution credential), on one ManualClock: token expiry,
   * leases and the secret's TTL all move only when the test says so. No sleeps.
   */

  const MINUTE = 60_000;
  const INSTITUTION_ID = 'inst-tokens';
  const FIRST_SECRET = CANARY.institutionSecret;
  const SECOND_SECRET = CANARY.institutionSecretNext;

  const clock = new ManualClock();
  const logger = new MemoryLogger();
  /** Every token value that went through the store, for the canary scan at the end. */
  const seenTokens = new Set<string>();

  let sandbox: RunningSandbox;
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let dynamo: LocalDynamo;
  let ddb: DynamoDBClient;
  let secretArn: string;
  let tables = 0;
  let users = 0;

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, clock, demo: false });
    await sandbox.admin.createInstitution({ id: INSTITUTION_ID, secret: FIRST_SECRET });
    sm = await startSecretsManager({ clock });
    sdk = secretsClient(sm);
    const created = await sdk.send(
      new CreateSecretCommand({ Name: 'acctops/test/institution-credential', SecretString: `${INSTITUTION_ID}:${FIRST_SECRET}` }),
    );
    secretArn = created.ARN!;
    dynamo = await startDynamo();
    ddb = dynamo.client();
  });

  afterEach(async () => {
    await sandbox.admin.faults.clear();
  });

  afterAll(async () => {
    sdk.destroy();
    ddb.destroy();
    await Promise.all([sandbox.stop(), sm.stop(), dynamo.stop()]);
    forgetRegisteredSecrets();
  });

  interface World {
    store: DynamoDbTokenStore;
    events: MemoryEventPublisher;
    metrics: MemoryMetrics;
    worker(options?: {
      ownerPrefix?: string;
      institution?: (api: InstitutionApi) => InstitutionApi;
      settings?: TokenLifecycleDeps['settings'];
      /** The world's store wrapped, e.g. to fail one write. */
      store?: (store: DynamoDbTokenStore) => TokenStore;
    }): TokenLifecycle;
    onboard(count: number): Promise<string[]>;
    record(externalId: string): Promise<TokenRecord>;
    plan(): Promise<string[]>;
  }

  /** A fresh table, event sink and metrics per test; the service, the secret and the clock are shared. */
  async function world(): Promise<World> {
    const tableName = `tokens-lifecycle-${++tables}`;
    await createTokenTable(ddb, tableName);
    const store = new DynamoDbTokenStore({ client: ddb, tableName });
    const events = new MemoryEventPublisher();
    const metrics = new MemoryMetrics();
    const worker: World['worker'] = (options = {}) => {
      // Each worker has its own cached credential, as each Lambda execution environment does.
      const credential = cachedInstitutionCredential(secretStore(sm), secretArn, { clock, logger });
      const client: AccountingClient = createAccountingClient({
        baseUrl: sandbox.baseUrl,
        credentials: institutionCredentialProvider(credential),
        clock,
        logger,
        // Retries back off on the clock; these tests assert outcomes, not backoff.
        retry: { maxAttempts: 1 },
      });
      const institution = options.institution ? options.institution(client.institution) : client.institution;
      return new TokenLifecycle({
        store: options.store ? options.store(store) : store,
        institution,
        events,
        clock,
        logger,
        metrics,
        ownerPrefix: options.ownerPrefix ?? 'test-worker',
        settings: options.settings,
      });
    };
    const onboarder = worker({ ownerPrefix: 'onboarding' });
    return {
      store,
      events,
      metrics,
      worker,
      onboard: async (count) => {
        const ids: string[] = [];
        for (let i = 0; i < count; i++) {
          const n = ++users;
          const externalId = randomUUID();
          await onboarder.onboard({ externalId, username: `user-${n}`, email: `user-${n}@example.test` });
          ids.push(externalId);
        }
        return ids;
      },
      record: async (externalId) => {
        const record = await store.get(externalId);
        if (!record) throw new Error(`no record for ${externalId}`);
        seenTokens.add(record.accessToken).add(record.refreshToken);
        return record;
      },
      plan: async () => {
        const queue = new MemoryRefreshQueue();
        await planTokenRefresh({ store, queue, clock, logger, metrics }, { marginMs: 15 * MINUTE, pageSize: 7 });
        return queue.take(queue.size).map((r) => r.externalId);
      },
    };
  }

  async function stats() {
    return sandbox.admin.stats();
  }

  async function sandboxUserId(externalId: string): Promise<string> {
    return (await sandbox.admin.findUser({ institutionId: INSTITUTION_ID, externalId })).userId;
  }

  /** The institution operations of a client as a plain object, for tests that wrap one of them. */
  function passThrough(api: InstitutionApi): InstitutionApi {
    return {
      createUser: (input) => api.createUser(input),
      refreshToken: (token) => api.refreshToken(token),
      verifyToken: (token) => api.verifyToken(token),
      expireToken: (token) => api.expireToken(token),
      retrieveToken: (input) => api.retrieveToken(input),
    };
  }

  const resultsOf = (outcomes: RefreshOutcome[]) => Object.fromEntries(outcomes.map((o) => [o.externalId, o.result]));

  describe('onboarding', () => {
    it('creates the user at the service and stores its pair, with the expiry taken from the JWT', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      const record = await w.record(id!);
      expect(record).toMatchObject({ status: 'active', version: 1, username: expect.stringMatching(/^user-/), leaseOwner: null });
      if (dialect === 'default') {
        expect(record.accessTokenExpiresAt).toBe(jwtExpiry(record.accessToken));
        expect(record.accessTokenExpiresAt).toBe(Math.floor(clock.now() / 1000) * 1000 + 30 * MINUTE);
      } else {
        // An opaque token without expiresIn: the expiry is the moment the request was sent plus the configured lifetime.
        expect(jwtExpiry(record.accessToken)).toBeUndefined();
        expect(record.accessTokenExpiresAt).toBe(clock.now() + 30 * MINUTE);
      }
      const verdict = await w.worker().verify(id!);
      if (dialect === 'default')
        expect(verdict.service).toEqual({ valid: true, expiresAt: new Date(record.accessTokenExpiresAt).toISOString() });
      else expect(verdict.service).toMatchObject({ valid: true });
    });

    it('retrieves instead when the service already knows the user, and is idempotent', async () => {
      const w = await world();
      const externalId = randomUUID();
      const user = { externalId, username: `known-${externalId.slice(0, 8)}`, email: `known-${externalId.slice(0, 8)}@example.test` };
      await sandbox.admin.createUser({ ...user, institutionId: INSTITUTION_ID });
      const before = await stats();

      const lifecycle = w.worker();
      await expect(lifecycle.onboard(user)).resolves.toMatchObject({ result: 'retrieved', status: 'active' });
      await expect(lifecycle.onboard(user)).resolves.toMatchObject({ result: 'already_onboarded' });
      const after = await stats();
      expect(after.retrievesPerUser[externalId]).toBe((before.retrievesPerUser[externalId] ?? 0) + 1);
      expect(after.byRoute['POST /institution/users/create/']).toBe((before.byRoute['POST /institution/users/create/'] ?? 0) + 1);
      await w.record(externalId);

      await expect(lifecycle.onboard({ ...user, email: 'someone-else@example.test' })).rejects.toBeInstanceOf(OnboardConflictError);
    });

    it('registers a held needs_attention user again (the runbook for a user the service lost), under its lease', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      const user = await w.record(id!);
      const input = { externalId: id!, username: user.username, email: user.email };
      await sandbox.admin.disableUser({ userId: await sandboxUserId(id!) });
      clock.advance(16 * MINUTE);
      expect(resultsOf(await w.worker().refreshBatch([id!]))).toEqual({ [id!]: 'needs_attention' });

      // Still refused: the error stands, the record is untouched and its lease free.
      await expect(w.worker().onboard(input)).rejects.toMatchObject({ name: 'AuthenticationError' });
      expect(await w.record(id!)).toMatchObject({ status: 'needs_attention', version: 2, leaseOwner: null, consecutiveFailures: 1 });

      await sandbox.admin.enableUser({ userId: await sandboxUserId(id!) });
      await expect(w.worker().onboard(input)).resolves.toMatchObject({ externalId: id, result: 'retrieved', status: 'active' });
      expect(await w.record(id!)).toMatchObject({ status: 'active', consecutiveFailures: 0, lastErrorClass: null, lastErrorCode: null });
      await expect(w.worker().onboard(input)).resolves.toMatchObject({ result: 'already_onboarded', status: 'active' });
    });

    // The reviewer's spec-only server: a 409 of create in shapes another service would send (spec §7: "not shown").
    it.each([
      ['JSON:API errors[]', { json: { errors: [{ code: 'duplicate', detail: 'User is already registered.' }] } }],
      [
        'problem+json "User exists"',
        { json: { title: 'Conflict', status: 409, detail: 'User exists' }, contentType: 'application/problem+json' },
      ],
      ['problem+json with a title only', { json: { title: 'Conflict' }, contentType: 'application/problem+json' }],
      ['an empty body', { body: 'empty' as const }],
    ])('retrieves the tokens of a user the service knows when create answers 409 with %s', async (_name, body) => {
      const w = await world();
      const externalId = randomUUID();
      const user = { externalId, username: `dup-${externalId.slice(0, 8)}`, email: `dup-${externalId.slice(0, 8)}@example.test` };
      await sandbox.admin.createUser({ ...user, institutionId: INSTITUTION_ID });
      await sandbox.admin.faults.add({
        route: 'POST /institution/users/create/',
        times: 1,
        fault: { type: 'status', status: 409, ...body },
      });
      await expect(w.worker().onboard(user)).resolves.toMatchObject({ result: 'retrieved', status: 'active' });
      expect((await w.record(externalId)).status).toBe('active');
    });

    it('names both answers when create answers an unexplained 409 and retrieve is refused, storing nothing', async () => {
      const w = await world();
      const externalId = randomUUID();
      await sandbox.admin.faults.add({
        route: 'POST /institution/users/create/',
        times: 1,
        fault: { type: 'status', status: 409, json: { errors: [{ code: 'conflict', title: 'Conflict', detail: 'Email is in use' }] } },
      });
      const error = await w
        .worker()
        .onboard({ externalId, username: `gone-${externalId.slice(0, 8)}`, email: `gone-${externalId.slice(0, 8)}@example.test` })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OnboardConflictError);
      expect((error as Error).message).toMatch(/create answered: .*409.*Email is in use; retrieve answered: .*404/);
      expect(await w.store.get(externalId)).toBeNull();
    });

    it('refuses a user whose username belongs to another external_id at the service, storing nothing', async () => {
      const w = await world();
      const taken = `taken-${randomUUID().slice(0, 8)}`;
      await sandbox.admin.createUser({
        username: taken,
        email: `${taken}@example.test`,
        externalId: randomUUID(),
        institutionId: INSTITUTION_ID,
      });
      const externalId = randomUUID();
      await expect(w.worker().onboard({ externalId, username: taken, email: `${taken}@example.test` })).rejects.toBeInstanceOf(
        OnboardConflictError,
      );
      expect(await w.store.get(externalId)).toBeNull();
    });
  });

  describe('refreshing due tokens', () => {
    it('refreshes a token nearing expiry and persists the rotated refresh token', async () => {
      const w = await world();
      const ids = await w.onboard(3);
      const before = new Map(await Promise.all(ids.map(async (id) => [id, await w.record(id)] as const)));

      clock.advance(14 * MINUTE);
      expect(await w.plan()).toEqual([]);

      clock.advance(2 * MINUTE);
      const late = await w.onboard(1);
      expect((await w.plan()).sort()).toEqual([...ids].sort());

      const lifecycle = w.worker();
      const outcomes = await lifecycle.refreshBatch(ids);
      expect(outcomes.map((o) => o.result)).toEqual(['refreshed', 'refreshed', 'refreshed']);
      for (const id of ids) {
        const old = before.get(id)!;
        const now = await w.record(id);
        expect(now).toMatchObject({ status: 'active', version: old.version + 1, leaseOwner: null, refreshedAt: clock.now() });
        if (dialect === 'default') {
          expect(now.refreshToken).not.toBe(old.refreshToken);
          expect(now.accessTokenExpiresAt).toBe(jwtExpiry(now.accessToken));
        } else {
          // No rotation: the reply had only an access token, so the refresh token in use is kept.
          expect(now.refreshToken).toBe(old.refreshToken);
          expect(now.accessToken).not.toBe(old.accessToken);
          expect(now.accessTokenExpiresAt).toBe(clock.now() + 30 * MINUTE);
        }
        // The rotated-out refresh token is dead at the service; the stored one is the live one.
        await expect(lifecycle.verify(id)).resolves.toMatchObject({ service: { valid: true } });
      }
      expect(await w.plan()).toEqual([]);

      // The next cycle refreshes with the persisted token: the service refuses none.
      clock.advance(16 * MINUTE);
      expect((await w.plan()).sort()).toEqual([...ids, ...late].sort());
      const second = await lifecycle.refreshBatch([...ids, ...late]);
      expect(second.every((o) => o.result === 'refreshed')).toBe(true);
      const s = await stats();
      for (const id of ids) {
        expect(s.refreshesPerUser[id]).toBe(2);
        expect(s.refusedRefreshesPerUser[id]).toBeUndefined();
      }
      expect(w.metrics.sum('TokenRefreshed')).toBe(7);
    });

    it('two concurrent workers refresh each user exactly once', async () => {
      const w = await world();
      const ids = await w.onboard(12);
      clock.advance(16 * MINUTE);
      const queued = await w.plan();
      expect(queued).toHaveLength(12);
      const before = await stats();

      const a = w.worker({ ownerPrefix: 'worker-a' });
      const b = w.worker({ ownerPrefix: 'worker-b' });
      // Both get every user (the planner ran twice, or SQS delivered twice), in opposite orders.
      const [ra, rb] = await Promise.all([a.refreshBatch(queued), b.refreshBatch([...queued].reverse())]);

      const after = await stats();
      for (const id of ids) {
        expect((after.refreshesPerUser[id] ?? 0) - (before.refreshesPerUser[id] ?? 0)).toBe(1);
        expect(after.refusedRefreshesPerUser[id]).toBeUndefined();
        const results = [resultsOf(ra)[id], resultsOf(rb)[id]].sort();
        expect(results.filter((r) => r === 'refreshed')).toHaveLength(1);
        expect(['busy', 'not_due']).toContain(results.find((r) => r !== 'refreshed'));
        expect(await w.record(id)).toMatchObject({ version: 2, leaseOwner: null });
      }
    });

    it('recovers a lost response (the service refreshed, the connection died) through retrieve', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      clock.advance(16 * MINUTE);
      const before = await stats();
      await sandbox.admin.faults.add({ route: 'POST /institution/users/token/refresh/', fault: { type: 'reset', phase: 'after' } });

      const lifecycle = w.worker();
      await expect(lifecycle.refresh(id!)).resolves.toEqual({ externalId: id, result: 'recovered' });
      const after = await stats();
      expect(after.refreshesPerUser[id!]).toBe((before.refreshesPerUser[id!] ?? 0) + 1);
      expect(after.retrievesPerUser[id!]).toBe((before.retrievesPerUser[id!] ?? 0) + 1);
      expect(await w.record(id!)).toMatchObject({ status: 'active', version: 2, consecutiveFailures: 0 });

      // The recovered pair is the live one: the next refresh succeeds.
      clock.advance(16 * MINUTE);
      await expect(lifecycle.refresh(id!)).resolves.toMatchObject({ result: 'refreshed' });
      expect((await stats()).refusedRefreshesPerUser[id!]).toBeUndefined();
      expect(w.metrics.sum('TokenRecovered')).toBe(1);
    });

    it('recovers through retrieve when the service refuses the refresh token (invalid_grant)', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      const stolen = (await w.record(id!)).refreshToken;
      const outsider = createAccountingClient({
        baseUrl: sandbox.baseUrl,
        credentials: institutionAuth({ institutionId: INSTITUTION_ID, secretKey: FIRST_SECRET }),
        clock,
      });
      // Default: someone else used the refresh token, so the stored one is a used, rotated-out token.
      // Minimal (no rotation): someone expired it, so the refresh is simplejwt's 401 token_not_valid.
      if (dialect === 'default') await outsider.institution.refreshToken(stolen);
      else await outsider.institution.expireToken(stolen);
      clock.advance(16 * MINUTE);
      const before = await stats();

      await expect(w.worker().refresh(id!)).resolves.toEqual({ externalId: id, result: 'recovered' });
      const after = await stats();
      expect(after.refusedRefreshesPerUser[id!]).toBe((before.refusedRefreshesPerUser[id!] ?? 0) + 1);
      expect(after.retrievesPerUser[id!]).toBe((before.retrievesPerUser[id!] ?? 0) + 1);
      expect(await w.record(id!)).toMatchObject({ status: 'active' });
      await expect(w.worker().verify(id!)).resolves.toMatchObject({ service: { valid: true } });
    });

    it('marks a user needs_attention with an event and a metric when retrieve fails too, and the others still succeed', async () => {
      const w = await world();
      const [first, broken, last] = await w.onboard(3);
      // The service disabled the user: refresh is refused (invalid_grant), retrieve is refused (401 user_disabled).
      await sandbox.admin.disableUser({ userId: await sandboxUserId(broken!) });
      clock.advance(16 * MINUTE);

      const outcomes = await w.worker().refreshBatch([first!, broken!, last!]);
      expect(resultsOf(outcomes)).toEqual({ [first!]: 'refreshed', [broken!]: 'needs_attention', [last!]: 'refreshed' });
      const userCode = dialect === 'default' ? 'user_disabled' : 'user_inactive';
      expect(outcomes.find((o) => o.externalId === broken)).toEqual({
        externalId: broken,
        result: 'needs_attention',
        errorClass: 'AuthenticationError',
        errorCode: userCode,
      });
      expect(await w.record(broken!)).toMatchObject({
        status: 'needs_attention',
        consecutiveFailures: 1,
        lastErrorClass: 'AuthenticationError',
        lastErrorCode: userCode,
        leaseOwner: null,
      });
      expect(w.events.ofType(TOKEN_EVENT_TYPES.refreshFailed)).toEqual([
        {
          type: 'TokenRefreshFailed',
          time: clock.now(),
          detail: expect.objectContaining({
            externalId: broken,
            errorClass: 'AuthenticationError',
            apiCode: dialect === 'default' ? 'user_disabled' : 'user_inactive',
            status: 401,
            refreshErrorClass: 'InvalidGrantError',
            consecutiveFailures: 1,
          }),
        },
      ]);
      expect(w.metrics.sum('TokenNeedsAttention')).toBe(1);
      expect(w.metrics.sum('TokenRefreshed')).toBe(2);
      // Out of the schedule: the planner never enqueues it again.
      clock.advance(16 * MINUTE);
      expect((await w.plan()).sort()).toEqual([first!, last!].sort());

      // The runbook: the service re-enables the user, recover brings it back into the schedule.
      await sandbox.admin.enableUser({ userId: await sandboxUserId(broken!) });
      await expect(w.worker().recover(broken!)).resolves.toMatchObject({ result: 'recovered', previousStatus: 'needs_attention' });
      expect(await w.record(broken!)).toMatchObject({
        status: 'active',
        consecutiveFailures: 0,
        lastErrorClass: null,
        lastErrorCode: null,
      });
      expect((await w.plan()).sort()).toEqual([first!, last!].sort());
      clock.advance(16 * MINUTE);
      expect(await w.plan()).toContain(broken);
    });

    it('recover of an active user whose tokens the service refuses: left as it is, unless forced; force is not reactivate', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      const before = await w.record(id!);
      // An incident at the service: it no longer honours the pair our record holds, which still says active and not due.
      const outsider = createAccountingClient({
        baseUrl: sandbox.baseUrl,
        credentials: institutionAuth({ institutionId: INSTITUTION_ID, secretKey: FIRST_SECRET }),
        clock,
      });
      await outsider.institution.expireToken(before.refreshToken);
      await expect(w.worker().verify(id!)).resolves.toMatchObject({ status: 'active', service: { valid: false } });
      const retrieves = async () => (await stats()).retrievesPerUser[id!] ?? 0;
      const retrievedBefore = await retrieves();

      await expect(w.worker().recover(id!)).resolves.toEqual({
        externalId: id,
        result: 'already_active',
        previousStatus: 'active',
        accessTokenExpiresAt: before.accessTokenExpiresAt,
        changed: false,
      });
      expect(await retrieves()).toBe(retrievedBefore);
      expect(await w.record(id!)).toMatchObject({ version: before.version, accessToken: before.accessToken, leaseOwner: null });

      clock.advance(MINUTE);
      const forced = await w.worker().recover(id!, { force: true });
      expect(forced).toMatchObject({ externalId: id, result: 'recovered', previousStatus: 'active', changed: true });
      expect(forced.accessTokenExpiresAt).toBeGreaterThan(before.accessTokenExpiresAt);
      expect(await retrieves()).toBe(retrievedBefore + 1);
      const after = await w.record(id!);
      expect(after).toMatchObject({
        status: 'active',
        version: before.version + 1,
        accessTokenExpiresAt: forced.accessTokenExpiresAt,
        leaseOwner: null,
      });
      expect(after.accessToken).not.toBe(before.accessToken);
      await expect(w.worker().verify(id!)).resolves.toMatchObject({ service: { valid: true } });
      expect(w.metrics.sum('TokenRecovered')).toBe(1);

      // Force does not undo a revocation: that stays reactivate's, on purpose.
      await expect(w.worker().revoke(id!)).resolves.toMatchObject({ result: 'revoked' });
      await expect(w.worker().recover(id!, { force: true })).rejects.toBeInstanceOf(UserRevokedError);
      expect(await w.record(id!)).toMatchObject({ status: 'revoked', leaseOwner: null });
      await expect(w.worker().recover(id!, { force: true, reactivate: true })).resolves.toMatchObject({
        result: 'recovered',
        previousStatus: 'revoked',
        changed: true,
      });
    });

    it('defers, never abandons, a user whose recovery meets a transient failure', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      clock.advance(16 * MINUTE);
      await sandbox.admin.faults.add({ route: 'POST /institution/users/token/refresh/', fault: { type: 'status', status: 503 } });
      await sandbox.admin.faults.add({ route: 'POST /institution/users/token/retrieve/', fault: { type: 'status', status: 503 } });

      const [outcome] = await w.worker().refreshBatch([id!]);
      expect(outcome).toEqual({ externalId: id, result: 'failed', errorClass: 'ServerError' });
      // Still active, still scheduled, lease released: the retry (SQS, or the next plan) goes ahead at once.
      expect(await w.record(id!)).toMatchObject({ status: 'active', version: 1, leaseOwner: null });
      expect(await w.plan()).toEqual([id]);
      expect(w.events.events).toEqual([]);
      await expect(w.worker().refresh(id!)).resolves.toMatchObject({ result: 'refreshed' });
      expect(w.metrics.sum('TokenRefreshDeferred')).toBe(1);
    });

    it('defers a rate-limited refresh without calling retrieve', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      clock.advance(16 * MINUTE);
      const before = await stats();
      await sandbox.admin.faults.add({ route: 'POST /institution/users/token/refresh/', fault: { type: 'status', status: 429 } });

      await expect(w.worker().refreshBatch([id!])).resolves.toEqual([{ externalId: id, result: 'failed', errorClass: 'RateLimitError' }]);
      expect((await stats()).retrievesPerUser[id!]).toBe(before.retrievesPerUser[id!]);
      expect(await w.record(id!)).toMatchObject({ status: 'active', version: 1, leaseOwner: null });
    });

    it('never refreshes a revoked user, whose tokens are dead at the service', async () => {
      const w = await world();
      const [kept, revoked] = await w.onboard(2);
      const lifecycle = w.worker();
      await expect(lifecycle.revoke(revoked!)).resolves.toEqual({ externalId: revoked, result: 'revoked' });
      await expect(lifecycle.revoke(revoked!)).resolves.toEqual({ externalId: revoked, result: 'already_revoked' });
      await expect(lifecycle.verify(revoked!)).resolves.toMatchObject({
        status: 'revoked',
        service: { valid: false, reason: dialect === 'default' ? 'revoked' : 'invalid' },
      });

      for (let i = 0; i < 6; i++) {
        clock.advance(5 * 60 * MINUTE);
        const planned = await w.plan();
        expect(planned).not.toContain(revoked);
        // Even a stray message (an old one, a hand-made one) does nothing.
        const outcomes = await lifecycle.refreshBatch([...planned, revoked!]);
        expect(resultsOf(outcomes)[revoked!]).toBe('not_due');
      }
      const s = await stats();
      expect(s.refreshesPerUser[revoked!]).toBeUndefined();
      expect(s.refreshesPerUser[kept!]).toBe(6);
      expect(await w.record(revoked!)).toMatchObject({ status: 'revoked', leaseOwner: null });
      await expect(lifecycle.recover(revoked!)).rejects.toBeInstanceOf(UserRevokedError);
      expect(await w.record(revoked!)).toMatchObject({ status: 'revoked', leaseOwner: null });
    });

    it('a revoke the service did not confirm is final here and finished by revoking again; it is never undone by a refresh', async () => {
      const w = await world();
      const [externalId] = await w.onboard(1);
      const before = await w.record(externalId!);
      const failing = w.worker({
        institution: (api) => ({ ...passThrough(api), expireToken: () => Promise.reject(new Error('socket hang up')) }),
      });
      const error = await failing.revoke(externalId!).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RevocationIncompleteError);
      expect((error as Error).message).not.toContain(before.refreshToken);
      // Revoked here at once; the service still honours the tokens until the revoke is repeated.
      expect(await w.record(externalId!)).toMatchObject({ status: 'revoked', leaseOwner: null });
      await expect(w.worker().verify(externalId!)).resolves.toMatchObject({ service: { valid: true } });
      // Due now, yet out of the schedule, and a stray message changes nothing.
      clock.advance(20 * MINUTE);
      expect(await w.plan()).not.toContain(externalId);
      expect(resultsOf(await w.worker().refreshBatch([externalId!]))[externalId!]).toBe('not_due');
      await expect(w.worker().revoke(externalId!)).resolves.toEqual({ externalId, result: 'already_revoked' });
      await expect(w.worker().verify(externalId!)).resolves.toMatchObject({ status: 'revoked', service: { valid: false } });
      const outsider = createAccountingClient({
        baseUrl: sandbox.baseUrl,
        credentials: institutionAuth({ institutionId: INSTITUTION_ID, secretKey: FIRST_SECRET }),
        clock,
      });
      await expect(outsider.institution.refreshToken(before.refreshToken)).rejects.toBeInstanceOf(InvalidGrantError);
    });

    it('a revoke whose write fails changes nothing at the service', async () => {
      const w = await world();
      const [externalId] = await w.onboard(1);
      const failing = w.worker({
        store: (store) => {
          const wrapped = Object.create(store) as DynamoDbTokenStore;
          wrapped.markStatus = () =>
            Promise.reject(Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' }));
          return wrapped;
        },
      });
      await expect(failing.revoke(externalId!)).rejects.toThrow('throttled');
      expect(await w.record(externalId!)).toMatchObject({ status: 'active', leaseOwner: null });
      await expect(w.worker().verify(externalId!)).resolves.toMatchObject({ service: { valid: true } });
      await expect(w.worker().revoke(externalId!)).resolves.toEqual({ externalId, result: 'revoked' });
    });

    it('stores a rotated pair despite a transient write failure, so the spent refresh token is never sent again', async () => {
      const w = await world();
      const [externalId] = await w.onboard(1);
      clock.advance(16 * MINUTE);
      let failures = 0;
      const flaky = w.worker({
        store: (store) => {
          const wrapped = Object.create(store) as DynamoDbTokenStore;
          wrapped.saveTokens = (...args) => {
            if (failures++ > 0) return store.saveTokens(...args);
            // The lifecycle waits on the test's clock before it tries again: move it on.
            setImmediate(() => clock.advance(1_000));
            return Promise.reject(Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' }));
          };
          return wrapped;
        },
      });
      const before = await stats();
      await expect(flaky.refresh(externalId!)).resolves.toMatchObject({ result: 'refreshed' });
      expect(failures).toBe(2);
      // The next refresh uses the stored (new) refresh token: the service sees no reuse.
      clock.advance(5 * 60 * MINUTE);
      await expect(w.worker().refresh(externalId!)).resolves.toMatchObject({ result: 'refreshed' });
      const after = await stats();
      expect(after.refusedRefreshesPerUser[externalId!]).toBeUndefined();
      expect((after.refreshesPerUser[externalId!] ?? 0) - (before.refreshesPerUser[externalId!] ?? 0)).toBe(2);
    });

    it('revokes at the service through a fresh pair when the stored refresh token is unknown to it', async () => {
      const w = await world();
      const externalId = randomUUID();
      const user = { username: `lost-${externalId.slice(0, 8)}`, email: `lost-${externalId.slice(0, 8)}@example.test` };
      // The service holds a live pair we never stored; our record holds tokens the service never issued.
      const live = (await sandbox.admin.createUser({ ...user, externalId, institutionId: INSTITUTION_ID, issueTokens: true })).tokens!;
      await w.store.create(
        {
          externalId,
          ...user,
          accessToken: 'never-issued-access',
          refreshToken: 'never-issued-refresh',
          accessTokenExpiresAt: clock.now() + 30 * MINUTE,
        },
        clock.now(),
      );
      const outsider = createAccountingClient({
        baseUrl: sandbox.baseUrl,
        credentials: institutionAuth({ institutionId: INSTITUTION_ID, secretKey: FIRST_SECRET }),
        clock,
      });
      await expect(outsider.institution.verifyToken(live.accessToken)).resolves.toMatchObject({ valid: true });

      await expect(w.worker().revoke(externalId)).resolves.toMatchObject({ result: 'revoked' });
      // expire killed every token of the user, the pair we never held included.
      await expect(outsider.institution.verifyToken(live.accessToken)).resolves.toMatchObject({
        valid: false,
        reason: dialect === 'default' ? 'revoked' : 'invalid',
      });
      expect(await w.record(externalId)).toMatchObject({ status: 'revoked' });
      seenTokens.add(live.accessToken).add(live.refreshToken);
    });

    it('refuses a runbook operation on a user whose lease is held, changing nothing', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      await w.store.acquireLease(id!, 'someone-else', clock.now() + MINUTE, clock.now());
      await expect(w.worker().revoke(id!)).rejects.toBeInstanceOf(TokenBusyError);
      expect(await w.record(id!)).toMatchObject({ status: 'active', leaseOwner: 'someone-else', version: 1 });
      clock.advance(MINUTE);
      await expect(w.worker().revoke(id!)).resolves.toMatchObject({ result: 'revoked' });
    });

    it('survives a change of the institution secret in the middle of a run', async () => {
      const w = await world();
      const ids = await w.onboard(6);
      clock.advance(16 * MINUTE);
      const reads = () => sm.admin.stats().calls.GetSecretValue ?? 0;
      let refreshes = 0;
      // One user at a time, so that the first two are refreshed with the old secret before it changes.
      const lifecycle = w.worker({
        settings: { concurrency: 1 },
        institution: (api) => ({
          ...passThrough(api),
          refreshToken: async (token) => {
            if (++refreshes === 3) {
              // Ops change the secret at the service and in Secrets Manager while the run goes on.
              await sandbox.admin.setInstitutionSecret({ id: INSTITUTION_ID, secret: SECOND_SECRET });
              await sdk.send(
                new PutSecretValueCommand({
                  SecretId: secretArn,
                  SecretString: JSON.stringify({ institutionId: INSTITUTION_ID, secretKey: SECOND_SECRET }),
                }),
              );
            }
            return api.refreshToken(token);
          },
        }),
      });
      const readsBefore = reads();
      const statsBefore = await stats();
      try {
        const outcomes = await lifecycle.refreshBatch(ids);
        expect(outcomes.map((o) => o.result)).toEqual(Array(6).fill('refreshed'));
        // One read at the start of the run, one after the service refused the old secret.
        expect(reads() - readsBefore).toBe(2);
        const s = await stats();
        expect(s.byRouteAndStatus['POST /institution/users/token/refresh/']?.['401']).toBe(
          (statsBefore.byRouteAndStatus['POST /institution/users/token/refresh/']?.['401'] ?? 0) + 1,
        );
        for (const id of ids) expect(await w.record(id)).toMatchObject({ status: 'active', version: 2 });
      } finally {
        await sandbox.admin.setInstitutionSecret({ id: INSTITUTION_ID, secret: FIRST_SECRET });
        await sdk.send(new PutSecretValueCommand({ SecretId: secretArn, SecretString: `${INSTITUTION_ID}:${FIRST_SECRET}` }));
      }
    });
  });

  describe('the worker batch', () => {
    it('reports malformed messages and retryable users as failures and changes no record for them', async () => {
      const w = await world();
      const [ok, limited] = await w.onboard(2);
      clock.advance(16 * MINUTE);
      const before = await w.record(limited!);
      const messages = [
        { messageId: 'm-ok', body: encodeRefreshRequest({ externalId: ok!, dueAt: clock.now() }) },
        { messageId: 'm-dup', body: encodeRefreshRequest({ externalId: ok!, dueAt: clock.now() }) },
        { messageId: 'm-bad-json', body: '{"externalId": ' },
        { messageId: 'm-bad-field', body: JSON.stringify({ externalId: 'not-a-uuid', dueAt: 1 }) },
        { messageId: 'm-limited', body: encodeRefreshRequest({ externalId: limited!, dueAt: clock.now() }) },
      ];
      // The service rate-limits this one user's refresh (after the client's own retries).
      const lifecycle = w.worker({
        institution: (api) => ({
          ...passThrough(api),
          refreshToken: (token) =>
            token === before.refreshToken ? Promise.reject(new RateLimitError(undefined, { status: 429 })) : api.refreshToken(token),
        }),
      });

      const report = await refreshQueuedBatch(lifecycle, messages, { logger });
      expect(report.failedMessageIds).toEqual(['m-bad-json', 'm-bad-field', 'm-limited']);
      expect(report.malformed).toBe(2);
      expect(await w.record(ok!)).toMatchObject({ version: 2 });
      expect(await w.record(limited!)).toEqual(before);
      const lines = logger.entries().filter((e) => e.message === 'malformed refresh request; left for the dead-letter queue');
      expect(lines.map((e) => (e.error as { message: string }).message)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/message m-bad-json: \(root\): not valid JSON/),
          expect.stringMatching(/m-bad-field: externalId: invalid/),
        ]),
      );
    });

    it('starts no user after the deadline', async () => {
      const w = await world();
      const [id] = await w.onboard(1);
      clock.advance(16 * MINUTE);
      const outcomes = await w.worker().refreshBatch([id!], { deadline: clock.now() });
      expect(outcomes).toEqual([{ externalId: id, result: 'failed', errorClass: 'DeadlineReached' }]);
      expect(await w.record(id!)).toMatchObject({ version: 1, leaseOwner: null });
    });
  });

  describe('secrets in logs', () => {
    it('no token or institution secret appears in any captured log line (canary scan)', () => {
      const text = logger.lines.join('\n');
      expect(logger.lines.length).toBeGreaterThan(20);
      expect(seenTokens.size).toBeGreaterThan(20);
      for (const value of [FIRST_SECRET, SECOND_SECRET, ...seenTokens]) {
        expect(text.includes(value)).toBe(false);
      }
      // Nothing JWT-shaped at all, not even a token we never stored (a lost response's pair).
      expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{5,}\.eyJ/);
    });
  });
});
