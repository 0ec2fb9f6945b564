import { randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTokenStore } from '../../src/adapters/aws/dynamodb-token-store';
import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { createAccountingClient, type AccountingClientOptions } from '../../src/core/accounting-api';
import { cachedInstitutionCredential } from '../../src/core/credentials/institution-credential';
import { institutionCredentialProvider } from '../../src/core/credentials/institution-provider';
import { ManualClock } from '../../src/core/shared/clock';
import { MemoryLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../src/core/shared/redact';
import { TokenLifecycle, type InstitutionApi } from '../../src/core/tokens/token-lifecycle';
import type { TokenRecord } from '../../src/core/tokens/token-store';
import type { Fault } from '../../sandbox';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { CANARY } from '../helpers/canary';
import { startDynamo, type LocalDynamo } from '../helpers/dynalite';
import { client as secretsClient, secretStore, startSecretsManager, type RunningSecretsManager } from '../helpers/secrets-manager';
import { matrixColumn } from './harness';
import { firstRequestTimesOut, sleepingClock } from './support';
import { TEST_DIALECTS } from '../helpers/dialects';
import { createTokenTable } from '../helpers/dynamodb-tables';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  /**
   * The token refresh column of the fault matrix (docs/reliability.md): TokenLifecycle.refresh of one
   * due user, the service being the sandbox (faults injected per route), the token table dynalite,
   * the institution secret (a canary) in the Secrets Manager emulator. One ManualClock for all.
   */

  const MINUTE = 60_000;
  const REFRESH = 'POST /institution/users/token/refresh/';
  const RETRIEVE = 'POST /institution/users/token/retrieve/';

  const clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0, 0));
  const logger = new MemoryLogger();
  let sandbox: RunningSandbox;
  let sm: RunningSecretsManager;
  let dynamo: LocalDynamo;
  let ddb: DynamoDBClient;
  let secretArn: string;
  let tables = 0;
  let users = 0;

  beforeAll(async () => {
    [sandbox, sm, dynamo] = await Promise.all([
      startSandbox({ dialect, clock, demo: false }),
      startSecretsManager({ clock }),
      startDynamo(),
    ]);
    await sandbox.admin.createInstitution({ id: CANARY.institutionId, secret: CANARY.institutionSecret });
    const sdk = secretsClient(sm);
    secretArn = (
      await sdk.send(
        new CreateSecretCommand({
          Name: 'acctops/matrix/institution',
          SecretString: `${CANARY.institutionId}:${CANARY.institutionSecret}`,
        }),
      )
    ).ARN!;
    sdk.destroy();
    ddb = dynamo.client();
  });

  afterEach(async () => {
    await sandbox.admin.faults.clear();
    sm.admin.clearFaults();
  });

  afterAll(async () => {
    ddb.destroy();
    await Promise.all([sandbox.stop(), sm.stop(), dynamo.stop()]);
    forgetRegisteredSecrets();
  });

  /** A fresh table holding one onboarded user whose token is due; workers share the table and metrics. */
  async function world() {
    const tableName = `matrix-tokens-${++tables}`;
    await createTokenTable(ddb, tableName);
    const store = new DynamoDbTokenStore({ client: ddb, tableName });
    const metrics = new MemoryMetrics();
    const events = new MemoryEventPublisher();
    const clientClock = sleepingClock(clock);
    const worker = (
      options: { client?: Partial<AccountingClientOptions>; institution?: (api: InstitutionApi) => InstitutionApi; owner?: string } = {},
    ) => {
      // Each worker has its own cached credential, as each Lambda execution environment does.
      const credential = cachedInstitutionCredential(secretStore(sm), secretArn, { clock, logger });
      const client = createAccountingClient({
        baseUrl: sandbox.baseUrl,
        credentials: institutionCredentialProvider(credential),
        clock: clientClock,
        logger,
        ...options.client,
      });
      return new TokenLifecycle({
        store,
        institution: options.institution ? options.institution(client.institution) : client.institution,
        events,
        clock,
        logger,
        metrics,
        ownerPrefix: options.owner ?? 'matrix',
      });
    };
    const n = ++users;
    const externalId = randomUUID();
    await worker().onboard({ externalId, username: `matrix-${n}`, email: `matrix-${n}@example.test` });
    clock.advance(16 * MINUTE);
    const record = async (): Promise<TokenRecord> => (await store.get(externalId))!;
    const before = await record();
    const stats = async () => {
      const s = await sandbox.admin.stats();
      return { refreshes: s.refreshesPerUser[externalId] ?? 0, retrieves: s.retrievesPerUser[externalId] ?? 0 };
    };
    return { store, metrics, events, clientClock, worker, externalId, record, before, stats: await stats(), statsNow: stats };
  }

  type World = Awaited<ReturnType<typeof world>>;

  const fault = (route: string, f: Fault, times: number | 'always' = 1) => sandbox.admin.faults.add({ route, times, fault: f });

  /** The stored pair changed, is live at the service, and the user is active and scheduled. */
  async function expectRenewed(w: World): Promise<TokenRecord> {
    const now = await w.record();
    expect(now).toMatchObject({ status: 'active', version: w.before.version + 1, leaseOwner: null, consecutiveFailures: 0 });
    // The minimal dialect does not rotate: a refresh keeps the refresh token, only the access token is new.
    if (dialect === 'default') expect(now.refreshToken).not.toBe(w.before.refreshToken);
    expect(now.accessToken).not.toBe(w.before.accessToken);
    await expect(w.worker().verify(w.externalId)).resolves.toMatchObject({ service: { valid: true } });
    return now;
  }

  /**
   * The service may have rotated the token (`handled`: it did) or not: either way the worker
   * recovers the user through retrieve, once, and never repeats the refresh (unsafe).
   */
  async function recoveredThroughRetrieve(f: Fault, handled: boolean, client: Partial<AccountingClientOptions> = {}) {
    const w = await world();
    await fault(REFRESH, f);
    await expect(w.worker({ client }).refresh(w.externalId)).resolves.toEqual({ externalId: w.externalId, result: 'recovered' });
    await expectRenewed(w);
    expect(await w.statsNow()).toEqual({ refreshes: w.stats.refreshes + (handled ? 1 : 0), retrieves: w.stats.retrieves + 1 });
    expect(w.metrics.sum('TokenRecovered')).toBe(1);
    return 'recovered' as const;
  }

  matrixColumn('tokenRefresh', {
    'rate-limit': async () => {
      const w = await world();
      await fault(REFRESH, { type: 'status', status: 429, retryAfter: 2 });
      await expect(w.worker().refresh(w.externalId)).resolves.toMatchObject({ result: 'refreshed' });
      expect(w.clientClock.sleeps).toEqual([2000]);
      expect((await w.statsNow()).refreshes).toBe(w.stats.refreshes + 1);
      await expectRenewed(w);
      return 'recovered';
    },

    'status-500': () => recoveredThroughRetrieve({ type: 'status', status: 500 }, false),
    'status-502': () => recoveredThroughRetrieve({ type: 'status', status: 502 }, false),

    'status-503': async () => {
      const w = await world();
      await fault(REFRESH, { type: 'status', status: 503 }, 'always');
      await fault(RETRIEVE, { type: 'status', status: 503 }, 'always');
      const outcomes = await w.worker().refreshBatch([w.externalId]);
      expect(outcomes).toEqual([{ externalId: w.externalId, result: 'failed', errorClass: 'ServerError' }]);
      expect(w.metrics.sum('TokenRefreshDeferred')).toBe(1);
      expect(await w.record()).toEqual(w.before);
      expect(w.events.events).toEqual([]);
      return 'typed_failure';
    },

    // Held on the sandbox's manual clock: the answer never comes within the client's timeout.
    timeout: () =>
      recoveredThroughRetrieve({ type: 'slow', delayMs: 24 * 60 * MINUTE }, false, {
        transport: firstRequestTimesOut((r) => r.url.endsWith('/institution/users/token/refresh/')),
      }),
    reset: () => recoveredThroughRetrieve({ type: 'reset', phase: 'after' }, true),
    'malformed-json': () => recoveredThroughRetrieve({ type: 'malformed_json' }, true),
    // The one field a refresh answer must carry is `accessToken` (spec §4.1); without `refreshToken`
    // the client keeps the one in use (docs/assumptions.md, "What a response must carry").
    'drift-missing-field': () => recoveredThroughRetrieve({ type: 'drop_field', field: 'accessToken' }, true),

    'drift-extra-fields': async () => {
      const w = await world();
      await fault(REFRESH, { type: 'extra_fields', fields: { scope: 'all', tokenType: 'Bearer', nested: { a: 1 } } });
      await expect(w.worker().refresh(w.externalId)).resolves.toMatchObject({ result: 'refreshed' });
      await expectRenewed(w);
      return 'recovered';
    },

    'secrets-throttling': async () => {
      const w = await world();
      sm.admin.injectFault({ operation: 'GetSecretValue', count: 1000 });
      const outcomes = await w.worker().refreshBatch([w.externalId]);
      expect(outcomes).toEqual([{ externalId: w.externalId, result: 'failed', errorClass: expect.any(String) }]);
      expect(w.metrics.sum('TokenRefreshDeferred')).toBe(1);
      expect(sm.admin.stats().errors.ThrottlingException).toBeGreaterThan(0);
      expect(await w.record()).toEqual(w.before);
      expect((await w.statsNow()).refreshes).toBe(w.stats.refreshes);

      sm.admin.clearFaults();
      await expect(w.worker().refresh(w.externalId)).resolves.toMatchObject({ result: 'refreshed' });
      return 'typed_failure';
    },

    'dynamodb-conditional': async () => {
      const w = await world();
      const leaseMs = 3 * MINUTE;
      let takeover: Promise<unknown> | undefined;
      // Worker A's refresh reaches the service, then A stalls past its lease; B takes the user over.
      const a = w.worker({
        owner: 'worker-a',
        institution: (api) => ({
          createUser: (input) => api.createUser(input),
          verifyToken: (token) => api.verifyToken(token),
          expireToken: (token) => api.expireToken(token),
          retrieveToken: (input) => api.retrieveToken(input),
          refreshToken: async (token) => {
            const pair = await api.refreshToken(token);
            clock.advance(leaseMs + 1000);
            takeover = w.worker({ owner: 'worker-b' }).refresh(w.externalId);
            await takeover;
            return pair;
          },
        }),
      });
      await expect(a.refresh(w.externalId)).resolves.toEqual({ externalId: w.externalId, result: 'lost_race' });
      // Default: B met the token A had rotated (invalid_grant) and recovered the user through retrieve.
      // Minimal: nothing rotates, so B's refresh with the same refresh token simply works.
      await expect(takeover).resolves.toEqual({ externalId: w.externalId, result: dialect === 'default' ? 'recovered' : 'refreshed' });
      expect(w.metrics.sum('TokenLostRace')).toBe(1);
      const stored = await expectRenewed(w);
      expect(stored.leaseOwner).toBeNull();
      return 'consistent';
    },
  });
});
