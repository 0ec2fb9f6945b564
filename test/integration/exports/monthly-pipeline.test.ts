import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { MemoryEventPublisher } from '../../../src/adapters/local/memory-event-publisher';
import { MemoryExportQueue, type QueuedExportMessage } from '../../helpers/memory-export-queue';
import { MemoryRunLedger } from '../../helpers/memory-run-ledger';
import { DynamoDbRunLedger } from '../../../src/adapters/aws/dynamodb-run-ledger';
import type { RunLedger } from '../../../src/core/exports/pipeline/run-ledger';
import type { PartLedger } from '../../../src/core/exports/pipeline/part-ledger';
import type { ExportFormat } from '../../../src/core/exports/formats/datasets';
import type { TokenStore } from '../../../src/core/tokens/token-store';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { createRunLedgerTable } from '../../helpers/dynamodb-tables';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { apiKeyAuth } from '../../../src/core/accounting-api';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import { decodeJob, type ExportJob } from '../../../src/core/exports/pipeline/export-jobs';
import {
  processExportBatch,
  type ExportMessage,
  type ExportWorkerDeps,
  type JobResult,
} from '../../../src/core/exports/pipeline/export-worker';
import { manifestKey } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import { checkMonthlyExport, planMonthlyExport } from '../../../src/core/exports/pipeline/monthly-export';
import { DEFAULT_EXPORT_DEADLINE } from '../../../src/core/exports/pipeline/export-deadline';
import { exportHealth, manifestSince } from '../../../cli/operations/export-run';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { userTokenCredentials } from '../../../src/core/exports/pipeline/user-token-credentials';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { startS3, type LocalS3 } from '../../helpers/s3rver';
import { TEST_DIALECTS, expiryOf } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // The monthly pipeline in process: planner -> queue -> worker (export and discovery jobs) -> run
  // ledger -> summary event, and the overdue check, against the sandbox and s3rver. The queue, ledger
  // and bus are the in-memory twins of SQS FIFO, DynamoDB and EventBridge (the AWS adapters have
  // their own tests; the handlers' test runs them end to end).

  const BUCKET = 'acctops-exports';
  const OCTOBER = parsePeriod('2026-10');
  /** 03:00 in Berlin on 1 November: the default monthly schedule. */
  const SCHEDULED = '2026-11-01T02:00:00.000Z';
  const MINUTE = 60_000;

  let sandbox: RunningSandbox;
  let s3: LocalS3;
  let dynamo: LocalDynamo;
  let ledgerTables = 0;
  let root: string;
  let tokens: FileTokenStore;
  const sandboxClock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0));
  /** Companies with their own API key (K1, K2) and one reached only through users (U1). */
  const keys = new Map<string, string>();
  let k1: string;
  let k2: string;
  let u1: string;
  let userX: string;
  let userY: string;

  beforeAll(async () => {
    [sandbox, s3, dynamo] = await Promise.all([
      startSandbox({ dialect, demo: false, clock: sandboxClock }),
      startS3([BUCKET]),
      startDynamo(),
    ]);
    root = await mkdtemp(join(tmpdir(), 'acctops-monthly-'));
    tokens = new FileTokenStore({ path: join(root, 'tokens.json') });
    const institution = await sandbox.admin.createInstitution({ id: 'inst-monthly' });
    [k1, k2, u1] = (await Promise.all([0, 1, 2].map(async () => (await sandbox.admin.createCompany()).publicId))) as [
      string,
      string,
      string,
    ];
    for (const company of [k1, k2, u1]) {
      await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count: 120 });
      await sandbox.admin.addTaxReport({ companyId: company, periodStart: '2026-10-01', periodEnd: '2026-10-31', amountDue: 4999 });
    }
    for (const company of [k1, k2]) {
      keys.set(
        company,
        (
          await sandbox.admin.createApiKey({
            companyId: company,
            permissions: ['read_transactions', 'read_categories', 'read_tax_reports'],
          })
        ).key,
      );
    }
    // X reaches K1 (which its own key covers) and U1; Y reaches U1 too: U1 must be exported once.
    userX = await onboard(institution.id, [k1, u1]);
    userY = await onboard(institution.id, [u1]);
  });

  afterAll(async () => {
    await Promise.all([sandbox.stop(), s3.stop(), dynamo.stop()]);
    await rm(root, { recursive: true, force: true });
    forgetRegisteredSecrets();
  });

  afterEach(() => sandbox.admin.faults.clear());

  async function onboard(institutionId: string, companies: string[]): Promise<string> {
    const user = await sandbox.admin.createUser({ institutionId, externalId: randomUUID(), companies, issueTokens: true });
    const pair = user.tokens!;
    await tokens.create(
      {
        externalId: user.externalId!,
        username: user.username,
        email: user.email,
        ...pair,
        accessTokenExpiresAt: expiryOf(pair.accessToken, sandboxClock.now()),
      },
      sandboxClock.now(),
    );
    return user.externalId!;
  }

  let prefixes = 0;
  function pipeline(options: { maxReceiveCount?: number; ledger?: RunLedger & PartLedger } = {}) {
    const clock = ManualClock.autoAdvancing(Date.parse(SCHEDULED));
    const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET, prefix: `m${++prefixes}` });
    const queue = new MemoryExportQueue();
    const ledger = options.ledger ?? new MemoryRunLedger();
    const events = new MemoryEventPublisher();
    const logger = new MemoryLogger();
    const metrics = new MemoryMetrics();
    const worker: ExportWorkerDeps = {
      exporter: { store, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl },
      credentials: (source, companyId) =>
        source.kind === 'apiKey'
          ? apiKeyAuth(keys.get(companyId!) ?? 'sbx_nokeyforthiscompany0000000000000')
          : userTokenCredentials(tokens, source.externalId, { clock: sandboxClock, companyId }),
      queue,
      ledger,
      events,
      clock,
      logger,
      metrics,
      maxReceiveCount: options.maxReceiveCount ?? 3,
    };
    const deliveries = new Map<string, number>();
    const deadLetters: QueuedExportMessage[] = [];
    const results: { job: ReturnType<typeof decodeJob> | undefined; result: JobResult }[] = [];

    /** SQS as the worker sees it, one message per batch: handed-back messages come again until the DLQ takes them. */
    async function drain(maxRounds = 20): Promise<void> {
      let pending: QueuedExportMessage[] = [];
      for (let round = 0; round < maxRounds; round++) {
        pending = [...pending, ...queue.drain()];
        if (pending.length === 0) return;
        const next: QueuedExportMessage[] = [];
        for (const message of pending) {
          const receiveCount = (deliveries.get(message.deduplicationId) ?? 0) + 1;
          deliveries.set(message.deduplicationId, receiveCount);
          const sqs: ExportMessage = {
            messageId: `${message.deduplicationId.slice(0, 8)}-${receiveCount}`,
            body: message.body,
            receiveCount,
          };
          const report = await processExportBatch(worker, [sqs]);
          results.push({ job: safeDecode(message.body), result: report.results[0]!.result });
          if (report.failedMessageIds.length === 0) continue;
          if (receiveCount >= worker.maxReceiveCount) deadLetters.push(message);
          else next.push(message);
        }
        pending = next;
      }
      throw new Error('the queue did not drain');
    }

    const plan = (overrides: { scheduledAt?: string; executionId?: string; companies?: string[]; users?: boolean } = {}) =>
      planMonthlyExport(
        { ledger, queue, events, clock, logger, metrics },
        {
          scheduledAt: overrides.scheduledAt ?? SCHEDULED,
          executionId: overrides.executionId ?? 'exec-1',
          timeZone: 'Europe/Berlin',
          companies: overrides.companies ?? [k1, k2],
          users: overrides.users === false ? undefined : tokens,
          formats: ['jsonl', 'parquet'],
        },
      );
    return { store, queue, ledger, events, logger, metrics, worker, results, deadLetters, drain, plan, clock };
  }

  function safeDecode(body: string) {
    try {
      return decodeJob(body);
    } catch {
      return undefined;
    }
  }

  const exportsOf = (results: { job: ReturnType<typeof decodeJob> | undefined; result: JobResult }[]) =>
    results.filter((r): r is { job: ExportJob; result: JobResult } => r.job?.type === 'export');

  describe('monthly export pipeline', () => {
    it('plans the previous month on the wall clock of the time zone, even when UTC is still in that month', async () => {
      const p = pipeline();
      // 00:30 on 1 November in Berlin is 23:30 on 31 October in UTC: the month to export is October.
      const report = await p.plan({ scheduledAt: '2026-10-31T23:30:00.000Z', executionId: 'exec-tz' });
      expect(report.period).toBe('2026-10');
      // The planner refuses a schedule's time ahead of its clock: January's run runs in January.
      p.clock.set(Date.parse('2027-01-01T01:00:00Z'));
      const january = await p.plan({ scheduledAt: '2027-01-01T02:00:00+01:00', executionId: 'exec-jan' });
      expect(january.period).toBe('2026-12');
    });

    it('exports every company once (API key first, each user-reached company once), then publishes the run summary', async () => {
      const p = pipeline();
      const plan = await p.plan();
      expect(plan).toMatchObject({ period: '2026-10', companies: 2, users: 2, repeated: false });
      const started = p.events.ofType(EXPORT_EVENT_TYPES.monthlyStarted);
      expect(started.map((e) => e.detail)).toEqual([
        {
          runId: plan.runId,
          period: '2026-10',
          timeZone: 'Europe/Berlin',
          scheduledAt: SCHEDULED,
          companies: [k1, k2],
          companyCount: 2,
          users: 2,
        },
      ]);
      // The API-key companies are grouped by company and month; discoveries by user.
      expect(p.queue.messages.map((m) => m.groupId).sort()).toEqual(
        [`${k1}#2026-10`, `${k2}#2026-10`, `user#${userX}`, `user#${userY}`].sort(),
      );

      await p.drain();

      const exported = exportsOf(p.results).filter((r) => r.result === 'completed');
      expect(exported.map((r) => [r.job.companyId, r.job.source.kind]).sort()).toEqual(
        [
          [k1, 'apiKey'],
          [k2, 'apiKey'],
          [u1, 'user'],
        ].sort(),
      );
      const completed = p.events
        .ofType(EXPORT_EVENT_TYPES.completed)
        .map((e) => e.detail as { companyId: string; manifestKey: string; trigger: unknown });
      expect(completed.map((d) => d.companyId).sort()).toEqual([k1, k2, u1].sort());
      for (const detail of completed) {
        expect(detail.trigger).toEqual({ kind: 'monthly', runId: plan.runId });
        expect(await p.store.head(detail.manifestKey)).toBeDefined();
      }
      const finished = p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished);
      expect(finished).toHaveLength(1);
      expect(finished[0]!.detail).toMatchObject({
        runId: plan.runId,
        period: '2026-10',
        expected: 3,
        completed: 3,
        failed: 0,
        failedDiscoveries: 0,
        failedCompanies: [],
      });
    });

    it('a repeated planner invocation (scheduler retry) enqueues only what is still open', async () => {
      const p = pipeline();
      const first = await p.plan();
      await p.drain();
      const again = await p.plan();
      expect(again).toMatchObject({ runId: first.runId, companies: 0, users: 0, repeated: true });
      expect(p.queue.messages).toEqual([]);
    });

    /** The run ledger as the worker's twin and as the DynamoDB adapter on dynalite. */
    const runLedgers: [string, () => Promise<RunLedger & PartLedger>][] = [
      ['memory', () => Promise.resolve(new MemoryRunLedger())],
      [
        'DynamoDB (dynalite)',
        async () => {
          const client = dynamo.client();
          const tableName = `monthly-runs-${++ledgerTables}`;
          await createRunLedgerTable(client, tableName);
          return new DynamoDbRunLedger({ client, tableName, clock: sandboxClock });
        },
      ],
    ];

    it.each(runLedgers)(
      'a planner that failed part-way and is run again (scheduler retry) summarizes the run once, after everything it plans (%s ledger)',
      async (_name, makeLedger) => {
        const p = pipeline({ ledger: await makeLedger() });
        const deps = { ledger: p.ledger, queue: p.queue, events: p.events, clock: p.clock, logger: p.logger, metrics: p.metrics };
        const input = {
          scheduledAt: SCHEDULED,
          executionId: 'exec-retried',
          timeZone: 'Europe/Berlin',
          companies: [k1, k2],
          formats: ['jsonl'] as ExportFormat[],
        };
        // The first invocation enters and enqueues the API-key companies, then the token table refuses the user listing.
        const throttled: Pick<TokenStore, 'queryDue'> = {
          queryDue: () => Promise.reject(new Error('the token table throttled the query')),
        };
        await expect(planMonthlyExport(deps, { ...input, users: throttled })).rejects.toThrow('throttled');
        // K1 and K2 are exported while the scheduler waits to retry: the run is not over, its users are still to come.
        await p.drain();
        expect(exportsOf(p.results).map((r) => [r.job.companyId, r.result])).toEqual([
          [k1, 'completed'],
          [k2, 'completed'],
        ]);
        expect(p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)).toEqual([]);

        const retry = await planMonthlyExport(deps, { ...input, users: { queryDue: (q) => tokens.queryDue(q) } });
        expect(retry).toMatchObject({ companies: 0, users: 2, repeated: true });
        await p.drain();
        const finished = p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished);
        expect(finished.map((e) => e.detail)).toEqual([
          expect.objectContaining({ runId: retry.runId, expected: 3, completed: 3, failed: 0, failedDiscoveries: 0 }),
        ]);
      },
    );

    it('workers that settle every company entered so far while the planner still lists users do not summarize the run', async () => {
      const p = pipeline();
      // The queue's consumers run while the planner pages through the users: K1 and K2 are exported and settled first.
      const users: Pick<TokenStore, 'queryDue'> = {
        queryDue: async (query) => {
          await p.drain();
          return tokens.queryDue(query);
        },
      };
      const plan = await planMonthlyExport(
        { ledger: p.ledger, queue: p.queue, events: p.events, clock: p.clock, logger: p.logger, metrics: p.metrics },
        { scheduledAt: SCHEDULED, executionId: 'exec-busy', timeZone: 'Europe/Berlin', companies: [k1, k2], users, formats: ['jsonl'] },
      );
      expect(p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)).toEqual([]);
      await p.drain();
      const finished = p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished);
      expect(finished.map((e) => e.detail)).toEqual([expect.objectContaining({ runId: plan.runId, expected: 3, completed: 3, failed: 0 })]);
    });

    it("the CLI's wait takes the manifest of its own request, not one a monthly run published after the request", async () => {
      const p = pipeline();
      const requestedAt = Date.parse(SCHEDULED);
      const requestId = 'cli-0b7c6f43-5f0e-4f5c-9a43-1f2d3c4b5a69';
      // The scheduled run exports K1 while the operator's request waits in K1's message group.
      await p.plan({ companies: [k1], users: false, executionId: 'exec-beside-cli' });
      await p.drain();
      const monthly = await readManifest(p.store, manifestKey(k1, OCTOBER));
      expect(monthly?.trigger).toEqual({ kind: 'monthly', id: expect.any(String) });
      expect(await manifestSince(p.store, k1, '2026-10', requestedAt, requestId)).toBeUndefined();

      const report = await processExportBatch(p.worker, [
        {
          messageId: 'cli-request',
          receiveCount: 1,
          body: JSON.stringify({
            type: 'export',
            companyId: k1,
            period: '2026-10',
            formats: ['jsonl', 'parquet'],
            source: { kind: 'apiKey' },
            trigger: { kind: 'on_demand', requestId, via: 'event' },
          }),
        },
      ]);
      expect(report.results.map((r) => r.result)).toEqual(['completed']);
      const ours = await readManifest(p.store, manifestKey(k1, OCTOBER));
      expect(ours?.trigger).toEqual({ kind: 'on_demand', id: requestId });
      expect(ours?.runId).not.toBe(monthly?.runId);
      expect(await manifestSince(p.store, k1, '2026-10', requestedAt, requestId)).toMatchObject({
        status: 'completed',
        runId: ours?.runId,
      });
      // Another request's wait does not take it either.
      expect(await manifestSince(p.store, k1, '2026-10', requestedAt, 'cli-another')).toBeUndefined();
    });

    it('isolates a failing company: a transient failure is retried on the next delivery, a permanent one is reported once; the rest complete', async () => {
      const p = pipeline();
      const narrow = (await sandbox.admin.createApiKey({ companyId: k2, permissions: ['read_transactions', 'read_categories'] })).key;
      const original = keys.get(k2)!;
      keys.set(k2, narrow);
      try {
        // The first transactions requests fail through all the client's own retries: K1's first attempt.
        await sandbox.admin.faults.add({ route: 'GET /accounting/transactions/', times: 4, fault: { type: 'status', status: 503 } });
        const plan = await p.plan();
        await p.drain();

        const byCompany = (company: string) =>
          exportsOf(p.results)
            .filter((r) => r.job.companyId === company)
            .map((r) => r.result);
        expect(byCompany(k1)).toEqual(['retry', 'completed']);
        expect(byCompany(k2)).toEqual(['failed']);
        expect(byCompany(u1)).toEqual(['completed']);
        const failed = p.events.ofType(EXPORT_EVENT_TYPES.failed);
        expect(failed.map((e) => e.detail)).toEqual([
          expect.objectContaining({ companyId: k2, retryable: false, attempts: 1, errorClass: 'PermissionDeniedError' }),
        ]);
        expect(p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)[0]!.detail).toMatchObject({
          runId: plan.runId,
          expected: 3,
          completed: 2,
          failed: 1,
          failedCompanies: [k2],
        });
        expect(p.metrics.sum('ExportAttemptFailed')).toBe(1);
        expect(p.metrics.sum('ExportFailed')).toBe(1);
        expect(p.deadLetters).toEqual([]);
      } finally {
        keys.set(k2, original);
      }
    });

    it('a company failing on every delivery ends in the dead-letter queue, reported by ExportFailed and in the summary', async () => {
      const p = pipeline({ maxReceiveCount: 2 });
      await sandbox.admin.faults.add({
        route: 'GET /companies/{company_pk}/taxes/reports/',
        times: 'always',
        fault: { type: 'status', status: 500 },
      });
      await p.plan({ companies: [k1], users: false });
      await p.drain();

      expect(
        exportsOf(p.results)
          .filter((r) => r.job.companyId === k1)
          .map((r) => r.result),
      ).toEqual(['retry', 'retry']);
      expect(p.deadLetters.map((m) => m.groupId)).toEqual([`${k1}#2026-10`]);
      const failed = p.events.ofType(EXPORT_EVENT_TYPES.failed);
      expect(failed.filter((e) => e.detail.companyId === k1).map((e) => e.detail)).toEqual([
        expect.objectContaining({ retryable: true, attempts: 2, errorClass: 'ServerError', previousExport: false }),
      ]);
      expect(p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)[0]!.detail).toMatchObject({ failedCompanies: [k1] });
    });

    it('after a failure, later messages of the same group in the batch are handed back unprocessed; malformed ones are handed back', async () => {
      const p = pipeline();
      await sandbox.admin.faults.add({ route: 'GET /accounting/categories/', times: 4, fault: { type: 'status', status: 503 } });
      const job = (requestId: string): ExportJob => ({
        type: 'export',
        companyId: k1,
        period: '2026-10',
        formats: ['csv'],
        source: { kind: 'apiKey' },
        trigger: { kind: 'on_demand', requestId, via: 'event' },
      });
      const other: ExportJob = { ...job('c'), companyId: k2 };
      const messages: ExportMessage[] = [
        { messageId: 'a', body: JSON.stringify(job('a')), receiveCount: 1 },
        { messageId: 'b', body: JSON.stringify(job('b')), receiveCount: 1 },
        { messageId: 'c', body: JSON.stringify(other), receiveCount: 1 },
        { messageId: 'd', body: '{"type":"export","companyId":"not-a-uuid"}', receiveCount: 1 },
      ];
      const report = await processExportBatch(p.worker, messages);
      expect(report.results).toEqual([
        { messageId: 'a', result: 'retry' },
        { messageId: 'b', result: 'skipped' },
        { messageId: 'c', result: 'completed' },
        { messageId: 'd', result: 'malformed' },
      ]);
      expect(report.failedMessageIds).toEqual(['a', 'b', 'd']);
      expect(p.logger.lines.some((l) => l.includes('malformed export job') && l.includes('companyId'))).toBe(true);
    });

    it('a user whose companies cannot be listed is a failed discovery: the run still finishes and says so', async () => {
      const p = pipeline();
      const userZ = await onboard('inst-monthly', [u1]);
      const record = (await tokens.acquireLease(userZ, 'test', sandboxClock.now() + MINUTE, sandboxClock.now()))!;
      // Revoked at the service but still active in the store: the discovery's 401 cannot heal.
      await sandbox.admin.disableUser({ userId: (await sandbox.admin.findUser({ externalId: userZ })).userId });
      await tokens.releaseLease(userZ, 'test');
      expect(record.status).toBe('active');
      try {
        await p.plan();
        await p.drain();
        const summary = p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)[0]!.detail;
        expect(summary).toMatchObject({ expected: 3, completed: 3, failedDiscoveries: 1 });
      } finally {
        const lease = (await tokens.acquireLease(userZ, 'test', sandboxClock.now() + MINUTE, sandboxClock.now()))!;
        await tokens.markStatus(userZ, { status: 'revoked' }, { expectedVersion: lease.version, owner: 'test', now: sandboxClock.now() });
      }
    });

    it('a user the older code stored in upper case is discovered through its lower-case id (decision 77)', async () => {
      const p = pipeline();
      const upper = randomUUID().toUpperCase();
      const user = await sandbox.admin.createUser({ institutionId: 'inst-monthly', externalId: upper, companies: [u1], issueTokens: true });
      const lower = upper.toLowerCase();
      await tokens.create(
        {
          externalId: lower,
          username: user.username,
          email: user.email,
          ...user.tokens!,
          accessTokenExpiresAt: expiryOf(user.tokens!.accessToken, sandboxClock.now()),
        },
        sandboxClock.now(),
      );
      // As the older code stored it: under the id as typed.
      const file = JSON.parse(await readFile(tokens.path, 'utf8')) as { records: Record<string, Record<string, unknown>> };
      file.records[upper] = { ...file.records[lower], externalId: upper };
      delete file.records[lower];
      await writeFile(tokens.path, JSON.stringify(file));
      try {
        const plan = await p.plan();
        expect(plan).toMatchObject({ users: 3 });
        expect(p.queue.messages.map((m) => m.groupId)).toContain(`user#${lower}`);
        await p.drain();
        const summary = p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)[0]!.detail;
        expect(summary).toMatchObject({ expected: 3, completed: 3, failedDiscoveries: 0 });
        expect(p.logger.entries().filter((e) => /not in the token store/.test(JSON.stringify(e)))).toEqual([]);
      } finally {
        const lease = (await tokens.acquireLease(lower, 'test', sandboxClock.now() + MINUTE, sandboxClock.now()))!;
        await tokens.markStatus(lower, { status: 'revoked' }, { expectedVersion: lease.version, owner: 'test', now: sandboxClock.now() });
      }
    });

    describe('overdue check', () => {
      const at = (iso: string) => ManualClock.autoAdvancing(Date.parse(iso));
      /** October's run, planned and drained, in which K2 fails: its key may read transactions only. */
      const runWithK2Failing = async () => {
        const p = pipeline();
        const narrow = (await sandbox.admin.createApiKey({ companyId: k2, permissions: ['read_transactions'] })).key;
        const original = keys.get(k2)!;
        keys.set(k2, narrow);
        await p.plan();
        await p.drain();
        keys.set(k2, original);
        return p;
      };

      it('judges nothing before the deadline; after it, counts the companies of the run without a complete export, until one is exported', async () => {
        const p = await runWithK2Failing();

        const check = (clock: ManualClock, metrics = new MemoryMetrics()) =>
          checkMonthlyExport(
            { ledger: p.ledger, store: p.store, events: p.events, clock, logger: p.logger, metrics },
            { timeZone: 'Europe/Berlin', dueAfterHours: 12 },
          );
        // 11:59 in Berlin on the 1st: not yet due.
        expect(await check(at('2026-11-01T10:59:00Z'))).toMatchObject({ due: false, overdue: 0 });
        const metrics = new MemoryMetrics();
        const report = await check(at('2026-11-01T11:00:00Z'), metrics);
        expect(report).toMatchObject({ period: '2026-10', due: true, overdue: 1, overdueCompanies: [k2], missingRun: false });
        expect(metrics.sum('MonthlyExportsOverdue')).toBe(1);

        // An on-demand export of K2 makes the period complete: no longer overdue.
        await processExportBatch(p.worker, [
          {
            messageId: 'fix',
            receiveCount: 1,
            body: JSON.stringify({
              type: 'export',
              companyId: k2,
              period: '2026-10',
              formats: ['csv'],
              source: { kind: 'apiKey' },
              trigger: { kind: 'on_demand', requestId: 'fix', via: 'event' },
            }),
          },
        ]);
        expect(await p.store.head(manifestKey(k2, OCTOBER))).toBeDefined();
        expect(await check(at('2026-11-02T08:00:00Z'))).toMatchObject({ overdue: 0, overdueCompanies: [] });
      });

      it('counts a user whose discovery failed, names the user, and clears once a re-sent discovery succeeds', async () => {
        const p = pipeline();
        const { runId } = await p.plan({ companies: [k1], users: false });
        expect(await p.ledger.expectDiscovery(runId, userX)).toBe('created');
        await p.drain();
        const discover = {
          messageId: 'discover-x',
          receiveCount: 1,
          body: JSON.stringify({
            type: 'discover',
            externalId: userX,
            period: '2026-10',
            formats: ['csv'],
            trigger: { kind: 'monthly', runId },
          }),
        };
        // The service refuses the listing: a 403 no retry heals, so the discovery is settled failed at once.
        await sandbox.admin.faults.add({ route: 'GET /companies/', times: 1, fault: { type: 'status', status: 403 } });
        expect((await processExportBatch(p.worker, [discover])).results).toEqual([{ messageId: 'discover-x', result: 'failed' }]);
        expect(p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)[0]!.detail).toMatchObject({ failed: 0, failedDiscoveries: 1 });

        const check = async (metrics = new MemoryMetrics()) => ({
          report: await checkMonthlyExport(
            { ledger: p.ledger, store: p.store, events: p.events, clock: at('2026-11-01T11:00:00Z'), logger: p.logger, metrics },
            { timeZone: 'Europe/Berlin', dueAfterHours: 12 },
          ),
          metrics,
        });
        const failed = await check();
        // K1 has its manifest; U1, reachable only through the user, was never entered in the run.
        expect(failed.report).toMatchObject({ due: true, overdue: 1, overdueCompanies: [], overdueUsers: [userX], missingRun: false });
        expect(failed.metrics.sum('MonthlyExportsOverdue')).toBe(1);
        const line = p.logger.lines.find((l) => l.includes('monthly exports overdue'));
        expect(line).toContain(userX);

        // The runbook's remedy: the same discovery job sent again, once the cause is fixed.
        expect((await processExportBatch(p.worker, [discover])).results).toEqual([{ messageId: 'discover-x', result: 'discovered' }]);
        await p.drain();
        expect(await p.store.head(manifestKey(u1, OCTOBER))).toBeDefined();
        expect((await check()).report).toMatchObject({ overdue: 0, overdueCompanies: [], overdueUsers: [] });
      });

      it('acctops doctor expects the month the overdue check judges, on either side of the deadline', async () => {
        const p = await runWithK2Failing();
        // The deployed defaults on both sides: the check's from the function's environment, the doctor's from the stack.
        const deadline = DEFAULT_EXPORT_DEADLINE;
        const judge = async (iso: string) => {
          const check = await checkMonthlyExport(
            { ledger: p.ledger, store: p.store, events: p.events, clock: at(iso), logger: p.logger, metrics: new MemoryMetrics() },
            deadline,
          );
          const doctor = await exportHealth(p.store, [k1, k2, u1], Date.parse(iso), deadline);
          return { check, doctor, doctorOverdue: doctor.companies.filter((c) => c.overdue).map((c) => c.companyId) };
        };

        // 11:59:59.999 in Berlin on 1 November: October is not judged by either; the doctor looks at September.
        const before = await judge('2026-11-01T10:59:59.999Z');
        expect(before.check).toMatchObject({ period: '2026-10', due: false, overdue: 0 });
        expect(before.doctor.expectedPeriod).toBe('2026-09');
        // 12:00: both judge October and name the same company.
        const after = await judge('2026-11-01T11:00:00.000Z');
        expect(after.check).toMatchObject({ period: '2026-10', due: true, overdueCompanies: [k2] });
        expect(after.doctor.expectedPeriod).toBe(after.check.period);
        expect(after.doctorOverdue).toEqual(after.check.overdueCompanies);
      });

      it("a manifest made while the month was running, or one that cannot be read, is not the month's export, for the check and the doctor", async () => {
        const p = await runWithK2Failing();
        const judge = async (iso: string) => {
          const check = await checkMonthlyExport(
            { ledger: p.ledger, store: p.store, events: p.events, clock: at(iso), logger: p.logger, metrics: new MemoryMetrics() },
            DEFAULT_EXPORT_DEADLINE,
          );
          const doctor = await exportHealth(p.store, [k1, k2], Date.parse(iso), DEFAULT_EXPORT_DEADLINE);
          return { check: check.overdueCompanies, doctor: doctor.companies.filter((c) => c.overdue).map((c) => c.companyId) };
        };
        // K1's October manifest, as if an on-demand export had written it for K2 on 31 October at
        // 23:30 in Berlin: complete files, but of a month that had half an hour to go.
        const k1Manifest = JSON.parse(Buffer.from((await p.store.get(manifestKey(k1, OCTOBER)))!).toString('utf8')) as Record<
          string,
          unknown
        >;
        const early = { ...k1Manifest, generatedAt: '2026-10-31T22:30:00.000Z' };
        await p.store.putObject(manifestKey(k2, OCTOBER), Buffer.from(JSON.stringify(early)), { contentType: 'application/json' });
        expect(await judge('2026-11-02T08:00:00Z')).toEqual({ check: [k2], doctor: [k2] });
        // The same manifest generated right after midnight in Berlin counts.
        const onTime = { ...k1Manifest, generatedAt: '2026-10-31T23:00:00.000Z' };
        await p.store.putObject(manifestKey(k2, OCTOBER), Buffer.from(JSON.stringify(onTime)), { contentType: 'application/json' });
        expect(await judge('2026-11-02T08:00:00Z')).toEqual({ check: [], doctor: [] });
        // A damaged manifest publishes nothing anyone can trust.
        await p.store.putObject(manifestKey(k2, OCTOBER), Buffer.from('{"schemaVersion":1,'), { contentType: 'application/json' });
        expect(await judge('2026-11-02T08:00:00Z')).toEqual({ check: [k2], doctor: [k2] });
        const doctor = await exportHealth(p.store, [k2], Date.parse('2026-11-02T08:00:00Z'), DEFAULT_EXPORT_DEADLINE);
        expect(doctor.companies[0]).toMatchObject({
          lastPeriod: '2026-10',
          generatedAt: null,
          manifestError: expect.stringMatching(/not JSON/),
        });
      });

      it('a run whose planner never completed its plan counts 1 after the deadline, though every company it reached was exported', async () => {
        const p = pipeline();
        const throttled: Pick<TokenStore, 'queryDue'> = {
          queryDue: () => Promise.reject(new Error('the token table throttled the query')),
        };
        await expect(
          planMonthlyExport(
            { ledger: p.ledger, queue: p.queue, events: p.events, clock: p.clock, logger: p.logger, metrics: p.metrics },
            {
              scheduledAt: SCHEDULED,
              executionId: 'exec-gave-up',
              timeZone: 'Europe/Berlin',
              companies: [k1],
              users: throttled,
              formats: ['jsonl'],
            },
          ),
        ).rejects.toThrow('throttled');
        await p.drain();
        expect(await p.store.head(manifestKey(k1, OCTOBER))).toBeDefined();
        const metrics = new MemoryMetrics();
        const report = await checkMonthlyExport(
          { ledger: p.ledger, store: p.store, events: p.events, clock: at('2026-11-01T11:00:00Z'), logger: p.logger, metrics },
          { timeZone: 'Europe/Berlin', dueAfterHours: 12 },
        );
        expect(report).toMatchObject({
          due: true,
          overdue: 1,
          overdueCompanies: [],
          overdueUsers: [],
          missingRun: false,
          unplannedRun: true,
        });
        expect(metrics.sum('MonthlyExportsOverdue')).toBe(1);
        // Nor is the part it planned summarized as the run.
        expect(p.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)).toEqual([]);
      });

      it('a month whose run never started is overdue after the deadline', async () => {
        const p = pipeline();
        const metrics = new MemoryMetrics();
        const report = await checkMonthlyExport(
          { ledger: p.ledger, store: p.store, events: p.events, clock: at('2026-12-01T12:00:00Z'), logger: p.logger, metrics },
          { timeZone: 'Europe/Berlin', dueAfterHours: 12 },
        );
        expect(report).toMatchObject({ period: '2026-11', runId: null, due: true, overdue: 1, missingRun: true });
        expect(metrics.sum('MonthlyExportsOverdue')).toBe(1);
      });
    });
  });
});
