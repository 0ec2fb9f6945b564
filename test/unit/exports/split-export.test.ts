import { MemoryRunLedger } from '../../helpers/memory-run-ledger';
import { decodeJob, deduplicationIdOf, encodeJob, messageGroupOf, type ExportJob } from '../../../src/core/exports/pipeline/export-jobs';
import type { PartResult } from '../../../src/core/exports/pipeline/part-ledger';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import {
  mergeTotals,
  partDatasets,
  partJobs,
  planParts,
  splitIdOf,
  splitManifest,
  type DayCount,
} from '../../../src/core/exports/pipeline/split-export';
import { ValidationError } from '../../../src/core/shared/errors';

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
  });
});
