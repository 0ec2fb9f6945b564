import { gunzipSync } from 'node:zlib';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbRunLedger } from '../../../src/adapters/aws/dynamodb-run-ledger';
import { createRunLedgerTable } from '../../helpers/dynamodb-tables';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { MemoryExportQueue, type QueuedExportMessage } from '../../helpers/memory-export-queue';
import { apiKeyAuth } from '../../../src/core/accounting-api';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import { decodeJob, encodeJob, type ExportJob, type QueuedJob } from '../../../src/core/exports/pipeline/export-jobs';
import { processExportBatch, type ExportWorkerDeps, type JobResult } from '../../../src/core/exports/pipeline/export-worker';
import { manifestKey } from '../../../src/core/exports/formats/layout';
import { readManifest, type Manifest } from '../../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { startS3, type LocalS3 } from '../../helpers/s3rver';
import { FlakyEvents } from '../../helpers/flaky-events';

// A month too large for one invocation (here: above a small threshold) is exported in parts by
// date range through the same queue and worker, with the run ledger on dynalite and the files on
// s3rver; one manifest is published only when every part is complete, and it equals the manifest
// of the same month exported whole (records, exact totals, formats), in both sandbox dialects.

const BUCKET = 'acctops-exports';
const OCTOBER = parsePeriod('2026-10');
/** 3,000 generated transactions (about 97 a day): parts of at most 1,100 make 3. */
const MAX_PER_PART = 1100;

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  let sandbox: RunningSandbox;
  let s3: LocalS3;
  let dynamo: LocalDynamo;
  let dynamoClient: DynamoDBClient;
  let company: string;
  let key: string;
  let tables = 0;
  let prefixes = 0;

  beforeAll(async () => {
    [sandbox, s3, dynamo] = await Promise.all([startSandbox({ dialect, demo: false }), startS3([BUCKET]), startDynamo()]);
    dynamoClient = dynamo.client();
    company = (await sandbox.admin.createCompany()).publicId;
    await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count: 3000 });
    // Around the parts' boundaries, in offsets whose UTC date differs from the local date: each
    // belongs to the part of its local date (docs/assumptions.md), exactly once.
    await sandbox.admin.addTransactions({
      companyId: company,
      transactions: [
        { amount: -1234, valueDate: '2026-10-11T23:30:00+02:00', currency: 'EUR', description: 'late, +02:00' },
        { amount: 4321, valueDate: '2026-10-12T00:30:00+02:00', currency: 'EUR', description: 'early, +02:00 (11th in UTC)' },
        { amount: -777, valueDate: '2026-10-22T23:30:00-05:00', currency: 'EUR', description: 'late, -05:00 (23rd in UTC)' },
        { amount: 99, valueDate: '2026-10-23T00:10:00+05:30', currency: 'EUR', description: 'early, +05:30' },
        { amount: -5, valueDate: '2026-10-31T23:30:00-02:00', currency: 'EUR', description: 'month end (November in UTC)' },
      ],
    });
    await sandbox.admin.addTaxReport({ companyId: company, periodStart: '2026-10-01', periodEnd: '2026-10-31', amountDue: 4999 });
    key = (
      await sandbox.admin.createApiKey({ companyId: company, permissions: ['read_transactions', 'read_categories', 'read_tax_reports'] })
    ).key;
  });

  afterAll(async () => {
    dynamoClient.destroy();
    await Promise.all([sandbox.stop(), s3.stop(), dynamo.stop()]);
    forgetRegisteredSecrets();
  });

  async function world(split?: number) {
    const clock = ManualClock.autoAdvancing(Date.UTC(2026, 10, 2, 9, 0));
    const tableName = `export-runs-split-${++tables}`;
    await createRunLedgerTable(dynamoClient, tableName);
    const store = new FlakyS3Store({ client: s3.client(), bucket: BUCKET, prefix: `split${++prefixes}` });
    const queue = new MemoryExportQueue();
    const events = new FlakyEvents();
    const ledger = new FlakyDynamoLedger({ client: dynamoClient, tableName, clock });
    const deps: ExportWorkerDeps = {
      exporter: { store, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl },
      credentials: () => apiKeyAuth(key),
      queue,
      ledger,
      events,
      clock,
      logger: new MemoryLogger(),
      metrics: new MemoryMetrics(),
      maxReceiveCount: 3,
      ...(split ? { split: { maxTransactionsPerPart: split } } : {}),
    };
    const job: ExportJob = {
      type: 'export',
      companyId: company,
      period: OCTOBER.text,
      formats: ['jsonl', 'csv', 'parquet'],
      source: { kind: 'apiKey' },
      trigger: { kind: 'on_demand', requestId: `req-${tables}`, via: 'event' },
    };
    let delivered = 0;
    const deliver = async (message: QueuedExportMessage, receiveCount = 1): Promise<JobResult> => {
      const report = await processExportBatch(deps, [{ messageId: `m${++delivered}`, body: message.body, receiveCount }]);
      return report.results[0]!.result;
    };
    const manifest = () => readManifest(store, manifestKey(company, OCTOBER));
    return { deps, store, queue, events, ledger, job, deliver, manifest };
  }

  it('exports a large month in 3 parts and publishes one manifest equal to the whole-month export', async () => {
    const whole = await world();
    await whole.queue.enqueue([whole.job]);
    expect(await Promise.all(whole.queue.drain().map(whole.deliver))).toEqual(['completed']);
    const expected = (await whole.manifest())!;

    const split = await world(MAX_PER_PART);
    await split.queue.enqueue([split.job]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['split']);
    const parts = split.queue.drain();
    const jobs = parts.map((m) => decodeJob(m.body)) as Extract<QueuedJob, { type: 'export_part' }>[];
    expect(jobs.map((j) => j.part.index)).toEqual([0, 1, 2]);
    // Contiguous days from the 1st to the 31st: no gap, no overlap.
    expect(jobs[0]!.part.dateFrom).toBe('2026-10-01');
    expect(jobs[2]!.part.dateTo).toBe('2026-10-31');
    for (let i = 1; i < jobs.length; i++) expect(nextDay(jobs[i - 1]!.part.dateTo)).toBe(jobs[i]!.part.dateFrom);
    // Parts run in parallel: a FIFO group each.
    expect(new Set(parts.map((m) => m.groupId)).size).toBe(3);

    for (const message of parts) expect(await split.deliver(message)).toBe('completed');
    const manifest = (await split.manifest())!;
    expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed)).toHaveLength(1);

    expect(comparable(manifest)).toEqual(comparable(expected));
    // Each names the request it answers, as its sender's wait reads it (decision 109).
    expect(manifest.trigger).toEqual({ kind: 'on_demand', id: (split.job.trigger as { requestId: string }).requestId });
    expect(expected.trigger).toEqual({ kind: 'on_demand', id: (whole.job.trigger as { requestId: string }).requestId });
    expect(manifest.source.parts).toHaveLength(3);
    expect(manifest.source.parts!.reduce((n, p) => n + p.records, 0)).toBe(expected.datasets.transactions!.records);
    expect(expected.datasets.transactions!.records).toBe(3005);
    // Each part probed its own range; the month's manifest says how date_to read, as the whole month's does.
    const reading = dialect === 'minimal' ? 'exclusive' : 'inclusive';
    expect(expected.datasets.transactions!.dateTo).toMatchObject({ setting: 'detect', read: reading, lastDayRepeats: 0 });
    expect(manifest.datasets.transactions!.dateTo).toMatchObject({ setting: 'detect', read: reading, lastDayRepeats: 0 });
    if (dialect === 'minimal') expect(manifest.datasets.transactions!.dateTo!.lastDayRecords).toBeGreaterThan(0);
    // Per format, the parts' files together hold exactly the whole month's records. Not in the same
    // order: the service orders by instant, the parts by local date first, so a record at 00:10+05:30
    // on the 23rd (the 22nd in UTC) follows the 22nd's late records (docs/fleet-exports.md).
    const transactionsJsonl = (m: Manifest) =>
      m.objects.filter((o) => o.dataset === 'transactions' && o.format === 'jsonl').map((o) => o.key);
    expect(transactionsJsonl(manifest)).toHaveLength(3);
    const lines = async (store: S3ObjectStore, keys: string[]) =>
      (
        await Promise.all(
          keys.map(async (k) =>
            gunzipSync(Buffer.from((await store.get(k))!))
              .toString('utf8')
              .split('\n')
              .filter(Boolean),
          ),
        )
      ).flat();
    const splitLines = await lines(split.store, transactionsJsonl(manifest));
    const wholeLines = await lines(whole.store, transactionsJsonl(expected));
    expect(splitLines).toHaveLength(3005);
    expect(splitLines).not.toEqual(wholeLines);
    expect([...splitLines].sort()).toEqual([...wholeLines].sort());
    const csvRows = async (store: S3ObjectStore, m: Manifest) => {
      const files = m.objects.filter((o) => o.dataset === 'transactions' && o.format === 'csv');
      const bodies = await Promise.all(
        files.map(async (o) =>
          Buffer.from((await store.get(o.key))!)
            .toString('utf8')
            .split('\n')
            .slice(1)
            .filter(Boolean),
        ),
      );
      return bodies.flat().sort();
    };
    expect(await csvRows(split.store, manifest)).toEqual(await csvRows(whole.store, expected));

    // A redelivered last part after the publish changes nothing and reports nothing again.
    expect(await split.deliver(parts[2]!)).toBe('completed');
    expect((await split.manifest())!.generatedAt).toBe(manifest.generatedAt);
    expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
    const splitId = (decodeJob(parts[2]!.body) as Extract<QueuedJob, { type: 'export_part' }>).splitId;
    expect((await split.ledger.getSplit(splitId))!.reportedAt).toBeDefined();
  });

  it('keeps the period invisible while one part is missing, and publishes when it arrives', async () => {
    const split = await world(MAX_PER_PART);
    await split.queue.enqueue([split.job]);
    await Promise.all(split.queue.drain().map(split.deliver));
    const [first, second, third] = split.queue.drain();
    expect(await split.deliver(first!)).toBe('completed');
    expect(await split.deliver(third!)).toBe('completed');

    expect(await split.store.head(manifestKey(company, OCTOBER))).toBeUndefined();
    expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed)).toHaveLength(0);
    const splitId = (decodeJob(first!.body) as Extract<QueuedJob, { type: 'export_part' }>).splitId;
    expect((await split.ledger.getSplit(splitId))!.done).toEqual([0, 2]);

    expect(await split.deliver(second!)).toBe('completed');
    const manifest = (await split.manifest())!;
    expect(manifest.objects.filter((o) => o.dataset === 'transactions')).toHaveLength(9);
    expect((await split.ledger.getSplit(splitId))!.publishedAt).toBeDefined();

    // A narrower re-export of the split month is refused as for a whole month, unless it may replace formats.
    const narrower = {
      ...split.job,
      formats: ['csv' as const],
      trigger: { kind: 'on_demand' as const, requestId: 'narrower', via: 'cli' as const },
    };
    await split.queue.enqueue([narrower]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['failed']);
    expect(split.queue.drain()).toEqual([]);
    expect((await split.manifest())!.runId).toBe(manifest.runId);
    await split.queue.enqueue([{ ...narrower, replaceFormats: true }]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['split']);
    for (const message of split.queue.drain()) expect(await split.deliver(message)).toBe('completed');
    const replaced = (await split.manifest())!;
    expect(new Set(replaced.objects.map((o) => o.format))).toEqual(new Set(['csv']));
    expect(replaced.datasets.transactions!.totals).toEqual(manifest.datasets.transactions!.totals);
  });

  it('logs a part that will be retried at WARN and the part that fails for good at ERROR, each naming the company, month and part', async () => {
    const split = await world(MAX_PER_PART);
    await split.queue.enqueue([split.job]);
    await Promise.all(split.queue.drain().map(split.deliver));
    const [first] = split.queue.drain();
    const part = decodeJob(first!.body) as Extract<QueuedJob, { type: 'export_part' }>;
    const fault = await sandbox.admin.faults.add({
      route: 'GET /accounting/transactions/',
      query: { date_from: part.part.dateFrom },
      times: 'always',
      fault: { type: 'status', status: 503 },
    });
    const logger = split.deps.logger as MemoryLogger;
    try {
      const before = logger.entries().length;
      expect(await split.deliver(first!, 1)).toBe('retry');
      const retried = logger.entries().slice(before);
      expect(retried.filter((e) => e.level === 'error')).toEqual([]);
      expect(retried.find((e) => e.message === 'export part attempt failed; the queue will retry')).toMatchObject({
        level: 'warn',
        companyId: company,
        period: OCTOBER.text,
        splitId: part.splitId,
        part: part.part.index,
        error: expect.objectContaining({ name: 'ServerError', status: 503 }),
      });

      const last = logger.entries().length;
      // Still retryable: handed to the dead-letter queue for a redrive, after ExportFailed.
      expect(await split.deliver(first!, 3)).toBe('retry');
      expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.failed)).toHaveLength(1);
      expect(
        logger
          .entries()
          .slice(last)
          .filter((e) => e.level === 'error')
          .map((e) => [e.message, e.companyId, e.part]),
      ).toEqual([['export part failed; the month stays unpublished', company, part.part.index]]);
    } finally {
      await sandbox.admin.faults.remove({ id: fault.id });
    }
  });

  it('a job the bus fails after the export is retried at ERROR, its line naming the job: company, month, kind', async () => {
    const whole = await world();
    whole.events.failures = 1;
    await whole.queue.enqueue([whole.job]);
    const [message] = whole.queue.drain();
    expect(await whole.deliver(message!)).toBe('retry');
    expect(
      (whole.deps.logger as MemoryLogger).entries().find((e) => e.message === 'export job could not be completed; the queue will retry'),
    ).toMatchObject({
      level: 'error',
      messageId: expect.any(String),
      jobType: 'export',
      companyId: company,
      period: OCTOBER.text,
      error: expect.objectContaining({ name: expect.any(String) }),
    });
  });

  it('never publishes a split again whose publish went unrecorded, once a later export replaced every dataset and its cleanup failed', async () => {
    const split = await world(MAX_PER_PART);
    await split.queue.enqueue([split.job]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['split']);
    const [first, second, third] = split.queue.drain();
    expect(await split.deliver(first!)).toBe('completed');
    expect(await split.deliver(second!)).toBe('completed');
    // The mark fails, then the report (the bus): the message is handed back with publishedAt unset.
    split.ledger.markFailures = 1;
    split.events.failures = 1;
    expect(await split.deliver(third!)).toBe('retry');
    const published = (await split.manifest())!;
    expect(published.source.parts).toHaveLength(3);

    // A whole-month export of every dataset (another request: the company-month's FIFO group is
    // free while the parts run in theirs), whose garbage collection fails.
    split.store.deleteFailures = 1;
    const later = { ...split.job, trigger: { kind: 'on_demand' as const, requestId: 'later', via: 'cli' as const } };
    const whole = { ...split.deps, split: undefined };
    const report = await processExportBatch(whole, [{ messageId: 'later', body: encodeJob(later), receiveCount: 1 }]);
    expect(report.results[0]!.result).toBe('completed');
    const newer = (await split.manifest())!;
    expect(Object.values(newer.datasets).map((d) => d.runId)).toEqual([newer.runId, newer.runId, newer.runId]);
    for (const object of published.objects) expect(await split.store.head(object.key)).toBeDefined();

    // The last part's message again: it acknowledges, and the later export stays whole.
    expect(await split.deliver(third!)).toBe('completed');
    expect(await split.manifest()).toEqual(newer);
    for (const object of newer.objects) expect(await split.store.head(object.key)).toBeDefined();
    const completed = split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed);
    expect(completed.map((e) => (e.detail as { runId: string }).runId)).toEqual([newer.runId]);
    expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.failed)).toEqual([]);
  });

  it('reports a split whose publish mark fails on the final delivery as completed, once, never ExportFailed', async () => {
    const split = await world(MAX_PER_PART);
    await split.queue.enqueue([split.job]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['split']);
    const [first, second, third] = split.queue.drain();
    expect(await split.deliver(first!)).toBe('completed');
    expect(await split.deliver(second!)).toBe('completed');

    split.ledger.markFailures = 1;
    expect(await split.deliver(third!, split.deps.maxReceiveCount)).toBe('completed');
    const manifest = (await split.manifest())!;
    expect(manifest.source.parts).toHaveLength(3);
    const completed = split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed);
    expect(completed.map((e) => (e.detail as { runId: string }).runId)).toEqual([manifest.runId]);
    expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.failed)).toEqual([]);
    const splitId = (decodeJob(third!.body) as Extract<QueuedJob, { type: 'export_part' }>).splitId;
    expect(await split.ledger.getSplit(splitId)).toMatchObject({ publishedAt: expect.any(Number), reportedAt: expect.any(Number) });

    // A redrive of the message reports nothing again.
    expect(await split.deliver(third!)).toBe('completed');
    expect(split.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
  });

  it('keeps source.parts while the transactions are carried over from the split run, and drops them when they are read whole', async () => {
    const split = await world(MAX_PER_PART);
    await split.queue.enqueue([split.job]);
    await Promise.all(split.queue.drain().map(split.deliver));
    for (const message of split.queue.drain()) expect(await split.deliver(message)).toBe('completed');
    const parted = (await split.manifest())!;
    expect(parted.source.parts).toHaveLength(3);

    // Categories alone: the transactions (and their parts) stay those of the split run.
    await split.queue.enqueue([
      { ...split.job, datasets: ['categories'], trigger: { kind: 'on_demand', requestId: 'req-cat', via: 'cli' } },
    ]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['completed']);
    const carried = (await split.manifest())!;
    expect(carried.runId).not.toBe(parted.runId);
    expect(carried.datasets.transactions!.runId).toBe(parted.runId);
    expect(carried.source.parts).toEqual(parted.source.parts);

    // Transactions again, under the threshold of this world's worker: read whole, so no parts.
    const whole = { ...split.deps, split: undefined };
    const report = await processExportBatch(whole, [
      {
        messageId: 'whole',
        body: encodeJob({ ...split.job, datasets: ['transactions'], trigger: { kind: 'on_demand', requestId: 'req-whole', via: 'cli' } }),
        receiveCount: 1,
      },
    ]);
    expect(report.results[0]!.result).toBe('completed');
    const reread = (await split.manifest())!;
    expect(reread.datasets.transactions!.runId).toBe(reread.runId);
    expect(reread.source.parts).toBeUndefined();
  });

  it('a company the service does not know fails as the export, with no sizing warning before it', async () => {
    const w = await world(MAX_PER_PART);
    const unknown: ExportJob = { ...w.job, companyId: '00000000-0000-4000-8000-0000000000ff' };
    await w.queue.enqueue([unknown]);
    expect(await Promise.all(w.queue.drain().map((m) => w.deliver(m)))).toEqual(['failed']);
    const lines = (w.deps.logger as MemoryLogger).lines.map((l) => JSON.parse(l) as { level: string; message: string });
    const sizing = lines.findIndex((l) => l.message.startsWith('month not sized'));
    const failed = lines.findIndex((l) => l.message === 'export failed');
    expect(sizing).toBeGreaterThanOrEqual(0);
    expect(lines[sizing]!.level).toBe('info');
    expect(failed).toBeGreaterThan(sizing);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('exports a month at or below the threshold whole (one count request decides)', async () => {
    const split = await world(5000);
    await split.queue.enqueue([split.job]);
    expect(await Promise.all(split.queue.drain().map(split.deliver))).toEqual(['completed']);
    expect(split.queue.drain()).toEqual([]);
    expect((await split.manifest())!.source.parts).toBeUndefined();
  });
});

/** The real adapter, whose markSplitPublished fails the next `markFailures` times. */
class FlakyDynamoLedger extends DynamoDbRunLedger {
  markFailures = 0;
  override markSplitPublished(splitId: string, at: number): Promise<boolean> {
    if (this.markFailures > 0) {
      this.markFailures -= 1;
      return Promise.reject(new Error('injected: ledger unavailable'));
    }
    return super.markSplitPublished(splitId, at);
  }
}

/** The real adapter, whose deletes fail the next `deleteFailures` times (a cleanup that fails). */
class FlakyS3Store extends S3ObjectStore {
  deleteFailures = 0;
  override delete(keys: readonly string[]): Promise<void> {
    if (this.deleteFailures > 0) {
      this.deleteFailures -= 1;
      return Promise.reject(new Error('injected: delete refused'));
    }
    return super.delete(keys);
  }
}

function nextDay(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
}

/** What must be equal between a split and a whole export: records, exact totals, and the formats listed per dataset. */
function comparable(manifest: Manifest) {
  return {
    company: manifest.company,
    period: manifest.period,
    query: manifest.source.query,
    datasets: Object.fromEntries(Object.entries(manifest.datasets).map(([d, v]) => [d, { records: v.records, totals: v.totals }])),
    files: [...new Set(manifest.objects.map((o) => `${o.dataset}:${o.format}`))].sort(),
    recordsPerFormat: Object.fromEntries(
      [...new Set(manifest.objects.map((o) => `${o.dataset}:${o.format}`))].map((k) => [
        k,
        manifest.objects.filter((o) => `${o.dataset}:${o.format}` === k).reduce((n, o) => n + o.records, 0),
      ]),
    ),
    symlinks: manifest.symlinks.map((s) => ({ dataset: s.dataset, targets: s.targets.length > 0 })),
  };
}
