import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { MemoryRunLedger } from '../../helpers/memory-run-ledger';
import { asAsync, CATEGORIES, transactions } from '../../helpers/export-fixtures';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import {
  decodeJob,
  deduplicationIdOf,
  encodeJob,
  messageGroupOf,
  type ExportJob,
  type ExportPartJob,
} from '../../../src/core/exports/pipeline/export-jobs';
import { processExportBatch, type ExportWorkerDeps } from '../../../src/core/exports/pipeline/export-worker';
import type { PartResult } from '../../../src/core/exports/pipeline/part-ledger';
import { manifestKey } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { PeriodExporter } from '../../../src/core/exports/formats/period-exporter';
import type { ExportFormat } from '../../../src/core/exports/formats/datasets';
import type { PutConditions, PutOptions } from '../../../src/core/exports/formats/object-store';
import {
  mergeDateTo,
  mergeParts,
  mergeTotals,
  partDatasets,
  partJobs,
  planParts,
  splitIdOf,
  splitManifest,
  type DayCount,
} from '../../../src/core/exports/pipeline/split-export';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { FlakyEvents } from '../../helpers/flaky-events';

const COMPANY = 'aaaaaaaa-0000-4000-8000-000000000001';
const days = (counts: number[]): DayCount[] => counts.map((count, i) => ({ date: `2026-10-${String(i + 1).padStart(2, '0')}`, count }));

describe('planParts', () => {
  it('packs consecutive days into parts of at most the threshold, covering the month without gap or overlap', () => {
    const parts = planParts(days(Array.from({ length: 31 }, () => 100)), 1000);
    expect(parts.map((p) => [p.dateFrom, p.dateTo])).toEqual([
      ['2026-10-01', '2026-10-10'],
      ['2026-10-11', '2026-10-20'],
      ['2026-10-21', '2026-10-30'],
      ['2026-10-31', '2026-10-31'],
    ]);
    expect(parts.map((p) => p.index)).toEqual([0, 1, 2, 3]);
  });

  it('gives a day above the threshold a part of its own (a day is the finest filter the API has)', () => {
    const parts = planParts(days([10, 5000, 10, 10]), 100);
    expect(parts.map((p) => [p.dateFrom, p.dateTo])).toEqual([
      ['2026-10-01', '2026-10-01'],
      ['2026-10-02', '2026-10-02'],
      ['2026-10-03', '2026-10-04'],
    ]);
  });

  it('makes one part when everything fits, and refuses a threshold below 1', () => {
    expect(planParts(days([1, 2, 3]), 6)).toHaveLength(1);
    expect(() => planParts(days([1]), 0)).toThrow(RangeError);
  });
});

describe('mergeTotals', () => {
  it('sums minor units exactly beyond 2^53 and formats with the currency digits', () => {
    const big = '9007199254740993'; // 2^53 + 1: a float would round it
    const merged = mergeTotals([
      [{ currency: 'EUR', cashflowType: 'INCOME', records: 1, amount: '90071992547409.93', amountMinor: big }],
      [
        { currency: 'EUR', cashflowType: 'INCOME', records: 2, amount: '0.01', amountMinor: '1' },
        { currency: 'EUR', cashflowType: 'EXPENSE', records: 1, amount: '-49.99', amountMinor: '-4999' },
        { currency: 'JPY', cashflowType: 'EXPENSE', records: 1, amount: '-500', amountMinor: '-500' },
      ],
    ]);
    expect(merged).toEqual([
      { currency: 'EUR', cashflowType: 'EXPENSE', records: 1, amount: '-49.99', amountMinor: '-4999' },
      { currency: 'EUR', cashflowType: 'INCOME', records: 3, amount: '90071992547409.94', amountMinor: '9007199254740994' },
      { currency: 'JPY', cashflowType: 'EXPENSE', records: 1, amount: '-500', amountMinor: '-500' },
    ]);
  });
});

describe('part jobs', () => {
  const job: ExportJob = {
    type: 'export',
    companyId: COMPANY,
    period: '2026-10',
    formats: ['csv'],
    source: { kind: 'apiKey' },
    trigger: { kind: 'monthly', runId: 'm202610-abc' },
  };
  const parts = planParts(days([5, 5, 5]), 5);

  it('derives the split from the job, so a redelivered job finds the same split', () => {
    expect(splitIdOf(job)).toBe(splitIdOf({ ...job }));
    expect(splitIdOf(job)).not.toBe(splitIdOf({ ...job, trigger: { kind: 'monthly', runId: 'm202610-def' } }));
  });

  it('round-trips through the queue, one FIFO group per part, deduplicated per split and part', () => {
    const jobs = partJobs(job, { splitId: splitIdOf(job), runId: '20261101T020000Z-00000001', parts });
    for (const j of jobs) expect(decodeJob(encodeJob(j))).toEqual(j);
    expect(new Set(jobs.map(messageGroupOf)).size).toBe(3);
    expect(new Set(jobs.map(deduplicationIdOf)).size).toBe(3);
    expect(partDatasets(jobs[0]!)).toEqual(['transactions', 'tax_reports', 'categories']);
    expect(partDatasets(jobs[1]!)).toEqual(['transactions']);
    // The publish checks lost formats again, so the parts carry the job's permission.
    const replacing = partJobs({ ...job, replaceFormats: true }, { splitId: splitIdOf(job), runId: 'r1', parts });
    for (const j of replacing) expect(decodeJob(encodeJob(j))).toMatchObject({ replaceFormats: true });
    expect(jobs.every((j) => j.replaceFormats === undefined)).toBe(true);
  });

  it('refuses a part job with a malformed range, naming the field', () => {
    const [first] = partJobs(job, { splitId: splitIdOf(job), runId: 'r1', parts });
    const body = JSON.stringify({ ...first, part: { ...first!.part, dateTo: '2026-10-32' } });
    expect(() => decodeJob(body)).toThrow(ValidationError);
    try {
      decodeJob(body);
    } catch (error) {
      expect((error as ValidationError).field).toBe('part.dateTo');
    }
  });
});

describe('the part ledger (memory)', () => {
  const result = (index: number, records: number): PartResult => ({
    index,
    datasets: {
      transactions: {
        records,
        totals: [{ currency: 'EUR', cashflowType: null, records, amount: '1.00', amountMinor: '100' }],
        objects: [
          {
            key: `k/part-0000${index}.csv`,
            dataset: 'transactions',
            format: 'csv',
            contentType: 'text/csv',
            records,
            bytes: 10,
            sha256: 'a'.repeat(64),
          },
        ],
      },
    },
  });

  it('counts a part once however often it completes; all done only when every index is in', async () => {
    const ledger = new MemoryRunLedger();
    const split = { splitId: 's1', companyId: COMPANY, period: '2026-10', runId: 'r1', parts: planParts(days([5, 5, 5]), 5), createdAt: 1 };
    expect((await ledger.startSplit(split)).created).toBe(true);
    expect((await ledger.startSplit({ ...split, runId: 'other' })).split.runId).toBe('r1');
    expect(await ledger.completePart('s1', result(0, 5))).toEqual({ done: 1, parts: 3 });
    expect(await ledger.completePart('s1', result(0, 5))).toEqual({ done: 1, parts: 3 });
    expect(await ledger.completePart('s1', result(2, 5))).toEqual({ done: 2, parts: 3 });
    expect(await ledger.completePart('s1', result(1, 5))).toEqual({ done: 3, parts: 3 });
    expect((await ledger.partResults('s1')).map((r) => r.index)).toEqual([0, 1, 2]);
    expect(await ledger.markSplitPublished('s1', 2)).toBe(true);
    expect(await ledger.markSplitPublished('s1', 3)).toBe(false);
    expect(await ledger.markSplitReported('s1', 4)).toBe(true);
    expect(await ledger.markSplitReported('s1', 5)).toBe(false);
    expect(await ledger.getSplit('s1')).toMatchObject({ publishedAt: 2, reportedAt: 4 });

    const manifest = splitManifest({
      split,
      period: parsePeriod('2026-10'),
      results: await ledger.partResults('s1'),
      previous: undefined,
      generatedAt: '2026-11-01T00:00:00.000Z',
      toolVersion: '0.1.0',
      baseUrl: 'http://127.0.0.1/api/v1',
    });
    expect(manifest.datasets.transactions).toMatchObject({ records: 15, totals: [{ records: 15, amountMinor: '300', amount: '3.00' }] });
    expect(manifest.objects.map((o) => o.key)).toEqual(['k/part-00000.csv', 'k/part-00001.csv', 'k/part-00002.csv']);
    expect(manifest.source.parts!.map((p) => p.records)).toEqual([5, 5, 5]);
    expect(manifest.datasets.transactions).not.toHaveProperty('duplicatesDropped');
  });

  it("keeps each part's repeats dropped through the ledger, and the month's manifest sums them", async () => {
    const ledger = new MemoryRunLedger();
    const split = { splitId: 's2', companyId: COMPANY, period: '2026-10', runId: 'r2', parts: planParts(days([5, 5, 5]), 5), createdAt: 1 };
    await ledger.startSplit(split);
    const withRepeats = (index: number, duplicatesDropped?: number): PartResult => {
      const plain = result(index, 5);
      return { index, datasets: { transactions: { ...plain.datasets.transactions!, duplicatesDropped } } };
    };
    // A result stored before the field existed has none: it counts as 0.
    for (const part of [withRepeats(0, 1), withRepeats(1), withRepeats(2, 2)]) await ledger.completePart('s2', part);
    const stored = await ledger.partResults('s2');
    expect(stored.map((r) => r.datasets.transactions!.duplicatesDropped)).toEqual([1, undefined, 2]);
    const manifest = splitManifest({
      split,
      period: parsePeriod('2026-10'),
      results: stored,
      previous: undefined,
      generatedAt: '2026-11-01T00:00:00.000Z',
      toolVersion: '0.1.0',
      baseUrl: 'http://127.0.0.1/api/v1',
    });
    expect(manifest.datasets.transactions).toMatchObject({ records: 15, duplicatesDropped: 3 });
  });

  it("merges the parts' date_to readings through the ledger into the month's manifest; a part stored without one leaves it unknown", async () => {
    const ledger = new MemoryRunLedger();
    const split = { splitId: 's3', companyId: COMPANY, period: '2026-10', runId: 'r3', parts: planParts(days([5, 5, 5]), 5), createdAt: 1 };
    await ledger.startSplit(split);
    const reading = (read: 'inclusive' | 'exclusive' | 'undetermined', lastDayRecords = 0, lastDayRepeats = 0) =>
      ({ setting: 'detect', read, lastDayRecords, lastDayRepeats }) as const;
    const withReading = (index: number, dateTo?: ReturnType<typeof reading>): PartResult => {
      const plain = result(index, 5);
      return { index, datasets: { transactions: { ...plain.datasets.transactions!, ...(dateTo ? { dateTo } : {}) } } };
    };
    for (const part of [
      withReading(0, reading('exclusive', 4, 1)),
      withReading(1, reading('undetermined')),
      withReading(2, reading('exclusive', 3)),
    ])
      await ledger.completePart('s3', part);
    const stored = await ledger.partResults('s3');
    expect(stored.map((r) => r.datasets.transactions!.dateTo?.read)).toEqual(['exclusive', 'undetermined', 'exclusive']);
    const manifest = splitManifest({
      split,
      period: parsePeriod('2026-10'),
      results: stored,
      previous: undefined,
      generatedAt: '2026-11-01T00:00:00.000Z',
      toolVersion: '0.1.0',
      baseUrl: 'http://127.0.0.1/api/v1',
    });
    expect(manifest.datasets.transactions!.dateTo).toEqual(reading('exclusive', 7, 1));

    expect(mergeDateTo([reading('inclusive'), reading('undetermined')])).toEqual(reading('inclusive'));
    expect(mergeDateTo([reading('undetermined'), reading('undetermined')])).toEqual(reading('undetermined'));
    expect(mergeDateTo([reading('exclusive', 2), undefined])).toBeUndefined();
    expect(mergeParts([withReading(0, reading('inclusive')), withReading(1)]).transactions).not.toHaveProperty('dateTo');
    // The next day dropped after a misread (decision 85) is the last part's: an earlier part's next
    // day is the following part's first, exported by it. Left out when the last part had none.
    const dropped = (n: number) => ({ ...reading('exclusive', 5, 5), nextDayDropped: n });
    expect(mergeDateTo([dropped(3), reading('exclusive', 2), dropped(4)])).toEqual({ ...reading('exclusive', 12, 10), nextDayDropped: 4 });
    expect(mergeDateTo([dropped(3), reading('exclusive', 2)])).not.toHaveProperty('nextDayDropped');
    expect(mergeDateTo([reading('exclusive', 2), reading('exclusive', 3)])).not.toHaveProperty('nextDayDropped');
  });
});

describe('publishing a split (worker)', () => {
  const OCTOBER = parsePeriod('2026-10');
  const KEY = manifestKey(COMPANY, OCTOBER);
  const RUN = 'm202610-abc';
  const SPLIT_RUN = '20261102T090000Z-splitrun';
  const parts = [
    { index: 0, dateFrom: '2026-10-01', dateTo: '2026-10-15' },
    { index: 1, dateFrom: '2026-10-16', dateTo: '2026-10-31' },
  ];
  let root: string;

  /** The memory ledger whose markSplitPublished fails the next `failures` times. */
  class FlakyLedger extends MemoryRunLedger {
    markFailures = 0;
    override markSplitPublished(splitId: string, at: number): Promise<boolean> {
      if (this.markFailures > 0) {
        this.markFailures -= 1;
        return Promise.reject(new Error('injected: ledger unavailable'));
      }
      return super.markSplitPublished(splitId, at);
    }
  }

  /**
   * The dir store whose deletes fail the next `deleteFailures` times (a cleanup that fails), and
   * which can run `beforeManifestPut` once, just before the next write of the period's manifest.
   */
  class FlakyStore extends DirObjectStore {
    deleteFailures = 0;
    failManifestPuts = 0;
    /** Manifest writes that are made, but whose answer is lost (a connection reset after S3 stored it). */
    loseManifestAnswers = 0;
    /** Athena symlink writes that fail (after the manifest's, which is the commit). */
    failSymlinkPuts = 0;
    beforeManifestPut: (() => Promise<unknown>) | undefined;

    override delete(keys: readonly string[]): Promise<void> {
      if (this.deleteFailures > 0) {
        this.deleteFailures -= 1;
        return Promise.reject(new Error('injected: delete refused'));
      }
      return super.delete(keys);
    }

    override async putObject(key: string, body: Uint8Array | string, options?: PutOptions & PutConditions): Promise<void> {
      if (key === KEY) {
        const hook = this.beforeManifestPut;
        this.beforeManifestPut = undefined;
        if (hook) await hook();
        if (this.failManifestPuts > 0) {
          this.failManifestPuts -= 1;
          throw new Error('injected: connection reset writing the manifest');
        }
        if (this.loseManifestAnswers > 0) {
          this.loseManifestAnswers -= 1;
          await super.putObject(key, body, options);
          throw new Error('injected: connection reset after the manifest was stored');
        }
      }
      if (this.failSymlinkPuts > 0 && key.endsWith('/_symlink/symlink.txt')) {
        this.failSymlinkPuts -= 1;
        throw new Error('injected: symlink write refused');
      }
      return super.putObject(key, body, options);
    }
  }

  /** The 40 transactions of the month that the API returns for a part's days. */
  const inRange = (part: { dateFrom: string; dateTo: string }) =>
    [...transactions(40)].filter((t) => {
      const day = (t.raw as { valueDate: string }).valueDate.slice(0, 10);
      return day >= part.dateFrom && day <= part.dateTo;
    });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-split-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  /**
   * A monthly split of `formats` whose two parts are written and recorded; what is left is the
   * last part's message, which publishes the month.
   */
  async function world(formats: ExportFormat[], options: { duplicatesPerPart?: number; nextDayDroppedPerPart?: number } = {}) {
    const store = new FlakyStore(root);
    const clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0));
    const ledger = new FlakyLedger();
    const events = new FlakyEvents();
    const logger = new MemoryLogger();
    const exporter = new PeriodExporter({ store, clock, logger, toolVersion: '0.1.0' });
    await ledger.startRun({
      runId: RUN,
      period: OCTOBER.text,
      timeZone: 'UTC',
      scheduledAt: '2026-11-01T03:00:00Z',
      startedAt: clock.now(),
    });
    await ledger.expectCompany(RUN, COMPANY, { kind: 'apiKey' });
    // The planner's last word: the run is entered whole, so its summary may follow the split's settle.
    await ledger.markPlanned(RUN, clock.now());
    const { split } = await ledger.startSplit({
      splitId: 's1',
      companyId: COMPANY,
      period: OCTOBER.text,
      runId: SPLIT_RUN,
      parts,
      createdAt: clock.now(),
    });
    for (const part of parts) {
      const staged = await exporter.stage({
        company: COMPANY,
        period: OCTOBER,
        runId: split.runId,
        part: part.index,
        range: part,
        sources: { transactions: asAsync(inRange(part)), categories: asAsync(CATEGORIES) },
        datasets: ['transactions'],
        formats,
      });
      const transactionsStaged = {
        ...staged.transactions!,
        ...(options.duplicatesPerPart ? { duplicatesDropped: options.duplicatesPerPart } : {}),
        // A part whose last day's read repeated one record (date_to inclusive after all) and then held the next day's.
        ...(options.nextDayDroppedPerPart
          ? {
              dateTo: {
                setting: 'detect' as const,
                read: 'exclusive' as const,
                lastDayRecords: 1 + options.nextDayDroppedPerPart,
                lastDayRepeats: 1,
                nextDayDropped: options.nextDayDroppedPerPart,
              },
            }
          : {}),
      };
      await ledger.completePart('s1', { index: part.index, datasets: { ...staged, transactions: transactionsStaged } });
    }
    const deps: ExportWorkerDeps = {
      exporter: { store, toolVersion: '0.1.0', baseUrl: 'https://api.example.test/api/v1' },
      credentials: () => {
        throw new Error('the parts are written already');
      },
      queue: { enqueue: () => Promise.resolve() },
      ledger,
      events,
      clock,
      logger,
      metrics: new MemoryMetrics(),
      maxReceiveCount: 3,
    };
    const job: ExportPartJob = {
      type: 'export_part',
      companyId: COMPANY,
      period: OCTOBER.text,
      splitId: 's1',
      runId: SPLIT_RUN,
      part: { index: 1, count: 2, dateFrom: '2026-10-16', dateTo: '2026-10-31' },
      datasets: ['transactions'],
      formats,
      source: { kind: 'apiKey' },
      trigger: { kind: 'monthly', runId: RUN },
    };
    let delivered = 0;
    /** `receiveCount` defaults to the deliveries so far; `deps.maxReceiveCount` makes it the final one. */
    const deliverLast = async (overrides: Partial<ExportPartJob> = {}, receiveCount?: number) => {
      delivered += 1;
      const body = encodeJob({ ...job, ...overrides });
      const report = await processExportBatch(deps, [{ messageId: `m${delivered}`, body, receiveCount: receiveCount ?? delivered }]);
      return report.results[0]!.result;
    };
    const deliverFinal = () => deliverLast({}, deps.maxReceiveCount);
    /** A whole-month export published meanwhile (an on-demand job: another FIFO group than the parts'). */
    const exportWhole = (runId: string, wholeFormats: ExportFormat[]) =>
      new PeriodExporter({ store, clock, logger, toolVersion: '0.1.0', runIds: () => runId }).run({
        company: COMPANY,
        period: OCTOBER,
        sources: { transactions: asAsync(transactions(40)), categories: asAsync(CATEGORIES) },
        datasets: ['transactions'],
        formats: wholeFormats,
        sourceBaseUrl: 'https://api.example.test/api/v1',
      });
    const manifest = () => readManifest(store, KEY);
    return { store, ledger, events, logger, metrics: deps.metrics as MemoryMetrics, deliverLast, deliverFinal, exportWhole, manifest };
  }

  it('a part keeps only its own days, so a server that ignores the date filter cannot make two parts count one record', async () => {
    const exporter = new PeriodExporter({
      store: new DirObjectStore(root),
      clock: new ManualClock(Date.UTC(2026, 10, 2, 9, 0)),
      logger: new MemoryLogger(),
      toolVersion: '0.1.0',
    });
    const month = [...transactions(40)];
    const records: number[] = [];
    for (const part of parts) {
      const staged = await exporter.stage({
        company: COMPANY,
        period: OCTOBER,
        runId: SPLIT_RUN,
        part: part.index,
        range: part,
        // The whole month for every part, as a server ignoring date_from/date_to would answer.
        sources: { transactions: asAsync(month), categories: asAsync(CATEGORIES) },
        datasets: ['transactions'],
        formats: ['csv'],
      });
      records.push(staged.transactions!.records);
    }
    expect(records).toEqual(parts.map((p) => inRange(p).length));
    expect(records.reduce((a, b) => a + b, 0)).toBe(month.length);
    expect(records.every((n) => n > 0 && n < month.length)).toBe(true);
  });

  it('refuses a publish that would drop formats of an export published while the parts ran, leaving the period unchanged', async () => {
    const w = await world(['csv']);
    await w.exportWhole('newer-run', ['csv', 'parquet']);
    const before = (await w.manifest())!;

    expect(await w.deliverLast()).toBe('failed');

    const after = (await w.manifest())!;
    expect(after).toEqual(before);
    expect(after.objects.some((o) => o.format === 'parquet')).toBe(true);
    for (const object of after.objects) expect(await w.store.head(object.key)).toBeDefined();
    const failed = w.events.ofType(EXPORT_EVENT_TYPES.failed);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.detail).toMatchObject({
      errorClass: 'FormatLossError',
      errorCode: 'export_formats_dropped',
      retryable: false,
      runId: SPLIT_RUN,
      previousExport: true,
    });
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toEqual([]);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 0, failed: 1, failedCompanies: [COMPANY], openCompanies: [] });
    expect((await w.ledger.getSplit('s1'))!.publishedAt).toBeUndefined();

    // The same split allowed to replace formats (replaceFormats carried from the export job) publishes.
    expect(await w.deliverLast({ replaceFormats: true })).toBe('completed');
    const replaced = (await w.manifest())!;
    expect(replaced.runId).toBe(SPLIT_RUN);
    expect(new Set(replaced.objects.map((o) => o.format))).toEqual(new Set(['csv']));
  });

  it('a bus failure after the publish: the redelivered last part publishes ExportCompleted and settles the company', async () => {
    const w = await world(['csv', 'parquet']);
    w.events.failures = 1;

    expect(await w.deliverLast()).toBe('retry');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 0, openCompanies: [COMPANY] });

    expect(await w.deliverLast()).toBe('completed');
    const completed = w.events.ofType(EXPORT_EVENT_TYPES.completed);
    expect(completed.length).toBeGreaterThanOrEqual(1);
    expect(completed[0]!.detail).toMatchObject({ companyId: COMPANY, runId: SPLIT_RUN, records: { transactions: 40 }, carriedOver: [] });
    expect(await w.ledger.tally(RUN)).toMatchObject({ expected: 1, completed: 1, failed: 0, openCompanies: [] });
    expect(w.events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)).toHaveLength(1);

    // Once reported, a further delivery changes nothing and reports nothing again.
    const events = w.events.events.length;
    expect(await w.deliverLast()).toBe('completed');
    expect(w.events.events).toHaveLength(events);
  });

  it('a symlink that cannot be written after the publish: ExportCompleted and the metrics name it, with the repeats the parts dropped', async () => {
    const w = await world(['csv', 'parquet'], { duplicatesPerPart: 2 });
    w.store.failSymlinkPuts = 1;

    expect(await w.deliverLast()).toBe('completed');
    const published = (await w.manifest())!;
    expect(published.runId).toBe(SPLIT_RUN);
    expect(published.datasets.transactions).toMatchObject({ records: 40, duplicatesDropped: 4 });
    const completed = w.events.ofType(EXPORT_EVENT_TYPES.completed);
    expect(completed).toHaveLength(1);
    expect(completed[0]!.detail).toMatchObject({
      runId: SPLIT_RUN,
      records: { transactions: 40 },
      duplicatesDropped: { transactions: 4 },
      // A part keeps only its own days, so a month in parts keeps none outside it.
      transactionsOutsidePeriod: 0,
      staleSymlinks: ['transactions'],
    });
    expect(w.metrics.sum('ExportStaleSymlinks')).toBe(1);
    expect(w.metrics.sum('ExportDuplicatesDropped')).toBe(4);
    expect(w.metrics.sum('ExportOutsidePeriod')).toBe(0);
    expect(w.metrics.sum('ExportCompleted')).toBe(1);
  });

  it('a bus failure after a publish whose symlink write failed: the redelivered report still names the symlink', async () => {
    const w = await world(['csv', 'parquet']);
    w.store.failSymlinkPuts = 1;
    w.events.failures = 1;

    expect(await w.deliverLast()).toBe('retry');
    expect(await w.deliverLast()).toBe('completed');
    const completed = w.events.ofType(EXPORT_EVENT_TYPES.completed);
    expect(completed.length).toBeGreaterThanOrEqual(1);
    expect(completed[completed.length - 1]!.detail).toMatchObject({ runId: SPLIT_RUN, staleSymlinks: ['transactions'] });
    expect(w.metrics.sum('ExportStaleSymlinks')).toBeGreaterThanOrEqual(1);
  });

  it('a manifest write made whose answer was lost: the redelivery reports, and counts, the symlinks nobody wrote', async () => {
    const w = await world(['csv', 'parquet']);
    w.store.loseManifestAnswers = 1;

    expect(await w.deliverLast()).toBe('retry');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect(w.metrics.sum('ExportStaleSymlinks')).toBe(0);

    expect(await w.deliverLast()).toBe('completed');
    const completed = w.events.ofType(EXPORT_EVENT_TYPES.completed);
    expect(completed).toHaveLength(1);
    expect(completed[0]!.detail).toMatchObject({ runId: SPLIT_RUN, staleSymlinks: ['transactions'], transactionsOutsidePeriod: 0 });
    expect(w.metrics.sum('ExportStaleSymlinks')).toBe(1);
    // The line the runbook searches for ("Athena still shows"), naming the period and the datasets.
    expect(w.logger.entries().filter((e) => String(e.message).includes('Athena still shows'))).toEqual([
      expect.objectContaining({ level: 'error', manifestKey: KEY, datasets: ['transactions'] }),
    ]);
  });

  it("parts that dropped the day after their range: ExportCompleted carries the manifest's count, the last part's (decision 85)", async () => {
    const w = await world(['csv'], { nextDayDroppedPerPart: 3 });
    expect(await w.deliverLast()).toBe('completed');
    const manifest = (await w.manifest())!;
    // The first part's next day is the second part's first day, exported: only the last part's was the next month's.
    expect(manifest.datasets.transactions!.dateTo).toMatchObject({ lastDayRepeats: 2, nextDayDropped: 3 });
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)[0]!.detail).toMatchObject({
      records: { transactions: 40 },
      transactionsOutsidePeriod: 0,
      transactionsNextDayDropped: 3,
    });
  });

  it('a split published and reported without a fault: every count present and 0, no stale symlink', async () => {
    const w = await world(['csv', 'parquet']);
    expect(await w.deliverLast()).toBe('completed');
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)[0]!.detail).toMatchObject({
      duplicatesDropped: { transactions: 0 },
      transactionsOutsidePeriod: 0,
      transactionsNextDayDropped: 0,
      staleSymlinks: [],
    });
    expect(w.metrics.recorded.filter((m) => m.name === 'ExportStaleSymlinks').map((m) => m.value)).toEqual([0]);
  });

  it('a ledger failure marking the publish: the same delivery reports the month, and the report records the publish', async () => {
    const w = await world(['csv']);
    w.ledger.markFailures = 1;

    expect(await w.deliverLast()).toBe('completed');
    const published = (await w.manifest())!;
    expect(published.runId).toBe(SPLIT_RUN);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, openCompanies: [] });
    expect((await w.ledger.getSplit('s1'))!.publishedAt).toBeDefined();

    expect(await w.deliverLast()).toBe('completed');
    expect(await w.manifest()).toEqual(published);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
  });

  it('a ledger failure marking the publish on the final delivery: completed, reported once, never ExportFailed', async () => {
    const w = await world(['csv']);
    w.ledger.markFailures = 1;

    expect(await w.deliverFinal()).toBe('completed');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([]);
    const completed = w.events.ofType(EXPORT_EVENT_TYPES.completed);
    expect(completed).toHaveLength(1);
    expect(completed[0]!.detail).toMatchObject({ companyId: COMPANY, runId: SPLIT_RUN, records: { transactions: 40 } });
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, failedCompanies: [], openCompanies: [] });
    expect(w.metrics.sum('ExportFailed')).toBe(0);
    expect(w.metrics.sum('ExportSplitMarkFailed')).toBe(1);
    expect(w.logger.entries().some((e) => e.level === 'warn' && /could not mark/.test(String(e.message)))).toBe(true);
    // The report's mark also records the publish the failed mark left out.
    expect(await w.ledger.getSplit('s1')).toMatchObject({ publishedAt: expect.any(Number), reportedAt: expect.any(Number) });

    // A redelivery (the queue's, or a redrive of a message handed back meanwhile) reports nothing again.
    expect(await w.deliverLast()).toBe('completed');
    expect(await w.deliverFinal()).toBe('completed');
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([]);
  });

  it('a redelivery that finds the split published but unmarked, and cannot mark it on the final delivery: completed, no ExportFailed', async () => {
    const w = await world(['csv']);
    // The first delivery publishes, cannot mark, and cannot report: handed back unmarked.
    w.ledger.markFailures = 1;
    w.events.failures = 1;
    expect(await w.deliverLast()).toBe('retry');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect((await w.ledger.getSplit('s1'))!.publishedAt).toBeUndefined();

    w.ledger.markFailures = 1;
    expect(await w.deliverFinal()).toBe('completed');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([]);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, openCompanies: [] });
    expect(await w.ledger.getSplit('s1')).toMatchObject({ publishedAt: expect.any(Number), reportedAt: expect.any(Number) });
  });

  it('a split replaced after an unmarked publish, and the mark failing again on the final delivery: settled completed, no event either way', async () => {
    const w = await world(['csv']);
    w.ledger.markFailures = 1;
    w.events.failures = 1;
    expect(await w.deliverLast()).toBe('retry');
    await w.exportWhole('newer-run', ['csv']);
    const newer = (await w.manifest())!;

    w.ledger.markFailures = 1;
    expect(await w.deliverFinal()).toBe('completed');
    expect(await w.manifest()).toEqual(newer);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([]);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toEqual([]);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, openCompanies: [] });
  });

  it('a redelivery after a later export replaced the split never publishes the split again; the company is settled completed', async () => {
    const w = await world(['csv']);
    w.events.failures = 1;
    expect(await w.deliverLast()).toBe('retry');
    await w.exportWhole('newer-run', ['csv']);
    const newer = (await w.manifest())!;

    expect(await w.deliverLast()).toBe('completed');
    expect(await w.manifest()).toEqual(newer);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toEqual([]);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, openCompanies: [] });
  });
  it('the publish went unrecorded, a later export replaced every dataset and its cleanup failed: a redelivery never republishes the split', async () => {
    const w = await world(['csv']);
    // The mark fails, then the report (the bus): the message is handed back with publishedAt unset.
    w.ledger.markFailures = 1;
    w.events.failures = 1;
    expect(await w.deliverLast()).toBe('retry');
    const split = (await w.manifest())!;
    expect(split.runId).toBe(SPLIT_RUN);
    expect((await w.ledger.getSplit('s1'))!.publishedAt).toBeUndefined();

    // An on-demand export of the month replaces the split's only dataset; its garbage collection
    // fails, so the split's part files outlive the manifest that named them.
    w.store.deleteFailures = 1;
    await w.exportWhole('newer-run', ['csv']);
    const newer = (await w.manifest())!;
    expect(newer.runId).toBe('newer-run');
    expect(Object.values(newer.datasets).map((d) => d.runId)).toEqual(['newer-run']);
    for (const object of split.objects) expect(await w.store.head(object.key)).toBeDefined();

    // The last part's message, handed back by the failed mark, comes again.
    expect(await w.deliverLast()).toBe('completed');
    expect(await w.manifest()).toEqual(newer);
    for (const object of newer.objects) expect(await w.store.head(object.key)).toBeDefined();
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toEqual([]);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([]);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, openCompanies: [] });
    expect(await w.ledger.getSplit('s1')).toMatchObject({ publishedAt: expect.any(Number), reportedAt: expect.any(Number) });

    expect(await w.deliverLast()).toBe('completed');
    expect(await w.manifest()).toEqual(newer);
  });

  it('the publish went unrecorded and a later export replaced it, its cleanup done: a redelivery settles the company completed, no ExportFailed', async () => {
    const w = await world(['csv']);
    w.ledger.markFailures = 1;
    w.events.failures = 1;
    expect(await w.deliverLast()).toBe('retry');
    await w.exportWhole('newer-run', ['csv']);
    const newer = (await w.manifest())!;

    expect(await w.deliverLast()).toBe('completed');
    expect(await w.manifest()).toEqual(newer);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([]);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toEqual([]);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, openCompanies: [] });
  });

  it('a split whose manifest write lost to a concurrent export publishes on its redelivery, as before', async () => {
    const w = await world(['csv']);
    w.store.beforeManifestPut = () => w.exportWhole('concurrent-run', ['csv']);
    expect(await w.deliverLast()).toBe('retry');
    expect((await w.manifest())!.runId).toBe('concurrent-run');
    // The attempt was recorded before the write, and marked refused when the condition failed.
    expect(await w.ledger.getSplit('s1')).toMatchObject({ publishAttempts: [{ refused: true }] });
    expect((await w.ledger.getSplit('s1'))!.publishedAt).toBeUndefined();

    expect(await w.deliverLast()).toBe('completed');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, openCompanies: [] });
  });

  it('a manifest write that failed with no answer, then an export published meanwhile: the redelivery leaves that export in place', async () => {
    const w = await world(['csv']);
    w.store.failManifestPuts = 1;
    expect(await w.deliverLast()).toBe('retry');
    expect(await w.ledger.getSplit('s1')).toMatchObject({ publishAttempts: [{ refused: false }] });
    await w.exportWhole('newer-run', ['csv']);
    const newer = (await w.manifest())!;

    // Whether the write was made cannot be told any more; either way a newer complete export holds the period.
    expect(await w.deliverLast()).toBe('completed');
    expect(await w.manifest()).toEqual(newer);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toEqual([]);
    expect(await w.ledger.tally(RUN)).toMatchObject({ completed: 1, failed: 0, openCompanies: [] });
  });

  it('a manifest write that failed with no answer is published by the redelivery while the period is unchanged', async () => {
    const w = await world(['csv']);
    w.store.failManifestPuts = 1;
    expect(await w.deliverLast()).toBe('retry');
    expect(await w.manifest()).toBeUndefined();

    expect(await w.deliverLast()).toBe('completed');
    expect((await w.manifest())!.runId).toBe(SPLIT_RUN);
    expect(w.events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
  });
});
