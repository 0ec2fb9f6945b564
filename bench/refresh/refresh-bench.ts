import { randomBytes, randomUUID } from 'node:crypto';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTokenStore } from '../../src/adapters/aws/dynamodb-token-store';
import { AwsTokenLifecycleRuntime } from '../../src/adapters/aws/token-lifecycle-runtime';
import { MemoryRefreshQueue } from '../../src/adapters/local/memory-refresh-queue';
import { systemClock } from '../../src/core/shared/clock';
import { mapWithConcurrency } from '../../src/core/shared/concurrency';
import { MemoryLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { planTokenRefresh } from '../../src/core/tokens/plan-refresh';
import { encodeRefreshRequest } from '../../src/core/tokens/refresh-queue';
import { refreshQueuedBatch } from '../../src/core/tokens/refresh-worker';
import { TokenLifecycle, type RefreshResult } from '../../src/core/tokens/token-lifecycle';
import { startSecretsManager, type RunningSecretsManager } from '../../sandbox/secrets-manager';
import { startDynaliteProcess, startSandboxProcess, type DynaliteProcess, type SandboxProcess } from '../lib/peers';
import { table, type SectionReport, type TargetResult } from '../lib/report';
import { createTokenTable } from '../../test/helpers/dynamodb-tables';

/**
 * The deployed refresh path, as lib/constructs/token-lifecycle.ts configures it (defaults): the
 * planner walks the due index into the queue; the queue drives at most WORKERS worker invocations
 * at once (the SQS event source's maximum concurrency), each taking BATCH messages and refreshing
 * them REFRESH_CONCURRENCY at a time with the same AwsTokenLifecycleRuntime as functions/refresh-tokens.
 */
export const REFRESH_SETUP = {
  users: 10_000,
  rateLimit: 200,
  latencyMs: 20,
  workers: 5,
  batchSize: 10,
  refreshConcurrency: 10,
  marginMs: 15 * 60_000,
  leaseMs: 180_000,
  accessTokenLifetimeMs: 30 * 60_000,
  /** Stored expiry of every user at setup: inside the margin, so everyone is due. */
  dueInMs: 10 * 60_000,
} as const;

const REGION = 'eu-central-1';
const INSTITUTION_ID = 'inst-bench';
const TABLE = 'acctops-bench-tokens';
/** The same reserve as functions/refresh-tokens: no user is started in the last minute of an invocation. */
const WORKER_TIMEOUT_MS = 120_000;
const WORKER_RESERVE_MS = 60_000;

export interface CycleReport {
  wallMs: number;
  planned: number;
  plannerMs: number;
  outcomes: Partial<Record<RefreshResult, number>>;
  /** Users whose outcome was `failed`, `needs_attention` or `lost_race`: not refreshed this cycle. */
  failures: number;
  /** From the sandbox's stats, counted during this cycle. */
  refreshCalls: number;
  /** Users the service refreshed more than once in this cycle. */
  duplicateUsers: number;
  retrieveCalls: number;
  rateLimited: number;
  requests: number;
  /** Worker invocations (batches). */
  invocations: number;
}

export interface RefreshBenchResult {
  setupMs: number;
  first: CycleReport;
  second: CycleReport;
  /** Users the service refreshed exactly once over both cycles. */
  refreshedOnce: number;
  sandboxCommand: string;
}

interface World {
  sandbox: SandboxProcess;
  dynalite: DynaliteProcess;
  secrets: RunningSecretsManager;
  secretArn: string;
  stop(): Promise<void>;
}

async function startWorld(): Promise<World> {
  const started: { stop(): Promise<void> }[] = [];
  try {
    const sandbox = await startSandboxProcess([
      '--rate-limit',
      String(REFRESH_SETUP.rateLimit),
      '--latency',
      String(REFRESH_SETUP.latencyMs),
    ]);
    started.push(sandbox);
    const dynalite = await startDynaliteProcess();
    started.push(dynalite);
    const secrets = await startSecretsManager();
    started.push(secrets);
    const institutionSecret = `sk_bench_${randomBytes(16).toString('hex')}`;
    await sandbox.admin.createInstitution({ id: INSTITUTION_ID, secret: institutionSecret });
    const sm = new SecretsManagerClient(localConfig(secrets.endpoint));
    const created = await sm.send(
      new CreateSecretCommand({ Name: 'acctops/bench/institution-credential', SecretString: `${INSTITUTION_ID}:${institutionSecret}` }),
    );
    sm.destroy();
    return {
      sandbox,
      dynalite,
      secrets,
      secretArn: created.ARN!,
      stop: () => stopAll(started),
    };
  } catch (error) {
    await stopAll(started);
    throw error;
  }
}

async function stopAll(running: { stop(): Promise<void> }[]): Promise<void> {
  await Promise.allSettled(running.reverse().map((r) => r.stop()));
}

function localConfig(endpoint: string) {
  // The peers accept any signature; these are not credentials.
  return {
    endpoint,
    region: REGION,
    credentials: { accessKeyId: 'AKIABENCHLOCALPEER00', secretAccessKey: 'bench-local-peer' },
    maxAttempts: 1,
  };
}

/**
 * The service's users (created with tokens through the admin API, outside the rate limit) and
 * their records in the token table, all due: what 10,000 onboarded users look like ten minutes
 * before their access tokens expire.
 */
async function seedUsers(world: World, ddb: DynamoDBClient): Promise<void> {
  await createTokenTable(ddb, TABLE);
  const store = new DynamoDbTokenStore({ client: ddb, tableName: TABLE });
  const now = systemClock.now();
  const chunks: number[] = [];
  for (let start = 0; start < REFRESH_SETUP.users; start += 500) chunks.push(start);
  await mapWithConcurrency(chunks, 2, async (start) => {
    const count = Math.min(500, REFRESH_SETUP.users - start);
    const users = Array.from({ length: count }, (_, i) => ({
      username: `bench-user-${start + i}`,
      email: `bench-user-${start + i}@example.test`,
      externalId: randomUUID(),
      institutionId: INSTITUTION_ID,
      issueTokens: true,
    }));
    const created = await world.sandbox.admin.createUsers({ users });
    await mapWithConcurrency(created, 25, async (user, i) => {
      await store.create(
        {
          externalId: user.externalId!,
          username: user.username,
          email: user.email,
          accessToken: user.tokens!.accessToken,
          refreshToken: user.tokens!.refreshToken,
          // One millisecond apart, as users onboarded one by one are. With one expiry for all,
          // hundreds of entries of a due-index shard share its keys, and dynalite tells such
          // entries apart by only 24 bits of an MD5 of the item's key (db/index.js, `hashPrefix`:
          // "for now just first six chars"): colliding ones overwrite each other, and in about one
          // run in five a user vanished from the index, never planned. DynamoDB keeps them all.
          accessTokenExpiresAt: now + REFRESH_SETUP.dueInMs + start + i,
        },
        now,
      );
    });
  });
}

/**
 * One refresh cycle: the planner, then the queue drained by WORKERS concurrent "invocations" of
 * BATCH messages, each with its own runtime (a Lambda execution environment: own clients, own
 * cached credential). A failed message is counted, not redelivered: SQS would hand it back only
 * after the visibility timeout (12 minutes), i.e. in a later cycle.
 */
async function runCycle(world: World, environments: AwsTokenLifecycleRuntime[]): Promise<CycleReport> {
  const logger = new MemoryLogger();
  const metrics = new MemoryMetrics();
  const queue = new MemoryRefreshQueue();
  await world.sandbox.admin.resetStats();

  const started = performance.now();
  const plan = await planTokenRefresh(
    { store: environments[0]!.store(), queue, clock: systemClock, logger, metrics },
    { marginMs: REFRESH_SETUP.marginMs },
  );
  const plannerMs = performance.now() - started;
  const outcomes: Partial<Record<RefreshResult, number>> = {};
  let invocations = 0;
  let messageId = 0;
  await Promise.all(
    environments.map(async (runtime, worker) => {
      for (;;) {
        const batch = queue.take(REFRESH_SETUP.batchSize);
        if (batch.length === 0) return;
        invocations++;
        const requestId = `bench-${worker}-${invocations}`;
        const report = await refreshQueuedBatch(
          new TokenLifecycle(runtime.lifecycleDeps({ logger, metrics, ownerPrefix: `refresh-tokens:${requestId}` })),
          batch.map((request) => ({ messageId: String(++messageId), body: encodeRefreshRequest(request) })),
          { logger, deadline: systemClock.now() + WORKER_TIMEOUT_MS - WORKER_RESERVE_MS },
        );
        for (const outcome of report.outcomes) outcomes[outcome.result] = (outcomes[outcome.result] ?? 0) + 1;
      }
    }),
  );
  const wallMs = performance.now() - started;

  const stats = await world.sandbox.admin.stats();
  const refreshes = Object.values(stats.refreshesPerUser);
  return {
    wallMs,
    planned: plan.enqueued,
    plannerMs,
    outcomes,
    failures: (outcomes.failed ?? 0) + (outcomes.needs_attention ?? 0) + (outcomes.lost_race ?? 0),
    refreshCalls: refreshes.reduce((a, b) => a + b, 0),
    duplicateUsers: refreshes.filter((n) => n > 1).length,
    retrieveCalls: Object.values(stats.retrievesPerUser).reduce((a, b) => a + b, 0),
    rateLimited: stats.rateLimited,
    requests: stats.requests,
    invocations,
  };
}

/** Points the SDK's default endpoint resolution at the local peers, as the handler tests do. */
function withEndpoints(world: World): () => void {
  const set: Record<string, string> = {
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'AKIABENCHLOCALPEER00',
    AWS_SECRET_ACCESS_KEY: 'bench-local-peer',
    AWS_ENDPOINT_URL_DYNAMODB: world.dynalite.endpoint,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: world.secrets.endpoint,
  };
  const previous = Object.fromEntries(Object.keys(set).map((k) => [k, process.env[k]]));
  Object.assign(process.env, set);
  return () => {
    for (const [k, v] of Object.entries(previous)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

export async function runRefreshBench(): Promise<RefreshBenchResult> {
  const world = await startWorld();
  const restore = withEndpoints(world);
  const ddb = new DynamoDBClient(localConfig(world.dynalite.endpoint));
  try {
    const setupStarted = performance.now();
    await seedUsers(world, ddb);
    const setupMs = performance.now() - setupStarted;
    const environments = Array.from(
      { length: REFRESH_SETUP.workers },
      () =>
        new AwsTokenLifecycleRuntime({
          tableName: TABLE,
          institutionSecretArn: world.secretArn,
          baseUrl: world.sandbox.baseUrl,
          marginMs: REFRESH_SETUP.marginMs,
          accessTokenLifetimeMs: REFRESH_SETUP.accessTokenLifetimeMs,
          leaseMs: REFRESH_SETUP.leaseMs,
          concurrency: REFRESH_SETUP.refreshConcurrency,
          secretCacheTtlMs: 300_000,
          clock: systemClock,
        }),
    );
    const first = await runCycle(world, environments);
    const firstCounts = (await world.sandbox.admin.stats()).refreshesPerUser;
    const second = await runCycle(world, environments);
    const secondCounts = (await world.sandbox.admin.stats()).refreshesPerUser;
    const users = new Set([...Object.keys(firstCounts), ...Object.keys(secondCounts)]);
    const refreshedOnce = [...users].filter((u) => (firstCounts[u] ?? 0) + (secondCounts[u] ?? 0) === 1).length;
    return { setupMs, first, second, refreshedOnce, sandboxCommand: world.sandbox.command };
  } finally {
    ddb.destroy();
    restore();
    await world.stop();
  }
}

const BOUND_MS = (REFRESH_SETUP.users / REFRESH_SETUP.rateLimit) * 1000;
const WALL_FACTOR = 1.15;

export async function runRefreshSection(): Promise<SectionReport> {
  const r = await runRefreshBench();
  const { first, second } = r;
  const factor = first.wallMs / BOUND_MS;
  const targets: TargetResult[] = [
    {
      id: 'refresh.wall',
      what: `Refresh cycle wall time, ${REFRESH_SETUP.users.toLocaleString('en-US')} users due, against N/R = ${BOUND_MS / 1000} s`,
      bound: `<= ${WALL_FACTOR}× (${((BOUND_MS * WALL_FACTOR) / 1000).toFixed(1)} s)`,
      measured: `${(first.wallMs / 1000).toFixed(1)} s = ${factor.toFixed(3)}×`,
      pass: factor <= WALL_FACTOR,
    },
    {
      id: 'refresh.duplicates',
      what: 'Duplicate refreshes (users the service refreshed twice in the cycle)',
      bound: '0',
      measured: String(first.duplicateUsers),
      pass: first.duplicateUsers === 0,
    },
    {
      id: 'refresh.failures',
      what: 'Failed refreshes in the cycle (deferred, needs attention, lost race)',
      bound: '0',
      measured: `${first.failures} (refreshed: ${first.outcomes.refreshed ?? 0} of ${REFRESH_SETUP.users})`,
      pass: first.failures === 0 && (first.outcomes.refreshed ?? 0) + (first.outcomes.recovered ?? 0) === REFRESH_SETUP.users,
    },
    {
      id: 'refresh.second-cycle',
      what: 'A second cycle right afterwards refreshes nobody',
      bound: '0 refreshed',
      measured: `${second.refreshCalls} refreshed (${second.planned} planned)`,
      pass: second.refreshCalls === 0 && second.planned === 0,
    },
  ];
  const row = (name: string, c: CycleReport): (string | number)[] => [
    name,
    (c.wallMs / 1000).toFixed(2),
    (c.plannerMs / 1000).toFixed(2),
    c.planned,
    c.invocations,
    Object.entries(c.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none',
    c.refreshCalls,
    c.retrieveCalls,
    c.rateLimited,
    c.duplicateUsers,
  ];
  const markdown = [
    `Setup (${(r.setupMs / 1000).toFixed(1)} s, not timed): the sandbox in its own process (\`${r.sandboxCommand}\`: a token bucket`,
    `of ${REFRESH_SETUP.rateLimit} requests/s per credential, burst one second's worth, and ${REFRESH_SETUP.latencyMs} ms added to every request),`,
    'dynalite in its own process (bench/lib/serve-dynalite.ts) holding the token table, and the Secrets Manager emulator',
    `holding the institution credential. ${REFRESH_SETUP.users.toLocaleString('en-US')} institution users exist at the service with tokens; their records are`,
    `in the table with an access token expiring in ${REFRESH_SETUP.dueInMs / 60_000} minutes, so all are due under the ${REFRESH_SETUP.marginMs / 60_000}-minute margin.`,
    '',
    "One cycle is the deployed path with the construct's defaults (lib/constructs/token-lifecycle.ts): `planTokenRefresh`",
    'walks the due index into the queue; then the queue is drained by',
    `${REFRESH_SETUP.workers} concurrent worker invocations (the SQS event source's maximum concurrency), each taking a batch of ${REFRESH_SETUP.batchSize} messages`,
    `and running \`refreshQueuedBatch\` with ${REFRESH_SETUP.refreshConcurrency} users at once, exactly as functions/refresh-tokens does, each with its own`,
    '`AwsTokenLifecycleRuntime` (a Lambda execution environment: own DynamoDB and Secrets Manager clients, own cached credential).',
    'SQS itself is replaced by an in-memory queue: its delivery latency is not measured. A message that fails is counted',
    'and not redelivered (SQS would return it only after the 12-minute visibility timeout, in a later cycle).',
    `Wall time runs from the planner's first query to the last worker's end. The bound is N/R = ${REFRESH_SETUP.users} / ${REFRESH_SETUP.rateLimit} = ${BOUND_MS / 1000} s.`,
    'Duplicates and refresh counts come from the sandbox (`admin.stats().refreshesPerUser`). One run (a cycle takes a',
    'minute; the rate limit, not the CPU, sets its length, so it varies little between runs).',
    '',
    table(
      [
        'Cycle',
        'Wall s',
        'Planner s',
        'Planned',
        'Worker invocations',
        'Outcomes',
        'Refresh calls',
        'Retrieve calls',
        '429 answers',
        'Users refreshed twice',
      ],
      [row('first', first), row('second, right after', second)],
    ),
    '',
    `Users the service refreshed exactly once over both cycles: ${r.refreshedOnce.toLocaleString('en-US')} of ${REFRESH_SETUP.users.toLocaleString('en-US')}.`,
    '',
    `The 429 answers are the ${REFRESH_SETUP.workers} × ${REFRESH_SETUP.refreshConcurrency} = ${REFRESH_SETUP.workers * REFRESH_SETUP.refreshConcurrency} requests in flight meeting the bucket: the client waits the`,
    '`Retry-After` second and sends again (a 429 is safe to repeat even for the refresh, which the service did not perform),',
    'so they cost time at the edges of the bucket, not refreshes.',
  ].join('\n');
  return {
    title: 'Token refresh at scale',
    command: 'npm run bench -- --only refresh',
    markdown,
    targets,
    misses: {
      'refresh.wall':
        "Cause: requests in flight (workers × concurrency = 50) far exceed what the bucket refills; every 429 parks a user for the whole `Retry-After` second, and in-flight slots idle while parked. Plan: a client-side pacer shared by a worker (a token bucket at the service's rate divided by the worker count) so that requests are not sent into an empty bucket.",
      'refresh.duplicates':
        'Cause: a user refreshed twice means two holders of the lease or a retried unsafe refresh. Plan: inspect the sandbox request log for that user; the lease and the no-retry rule for unsafe requests must hold.',
      'refresh.failures':
        "Cause: a user whose refresh met 429 on all of its attempts within the client's 20 s budget is deferred. Plan: pace requests (see the wall-time plan) or allow more attempts for 429, which is always safe to repeat.",
      'refresh.second-cycle':
        'Cause: a record stored with an expiry inside the margin is due again at once. Plan: check the stored `accessTokenExpiresAt` against the token lifetime.',
    },
  };
}

/** The section when the refresh path cannot run at all: every refresh target reported as not measured. */
export function refreshNotMeasured(reason: string): SectionReport {
  const ids: [string, string, string][] = [
    ['refresh.wall', 'Refresh cycle wall time against N/R = 50 s', '<= 1.15×'],
    ['refresh.duplicates', 'Duplicate refreshes', '0'],
    ['refresh.failures', 'Failed refreshes in the cycle', '0'],
    ['refresh.second-cycle', 'A second cycle right afterwards refreshes nobody', '0 refreshed'],
  ];
  return {
    title: 'Token refresh at scale',
    command: 'npm run bench -- --only refresh',
    markdown: `Not measured: ${reason}`,
    targets: ids.map(([id, what, bound]) => ({ id, what, bound, measured: `not measured: ${reason}`, pass: false })),
  };
}
