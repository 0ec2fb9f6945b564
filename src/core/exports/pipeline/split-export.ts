import { createHash } from 'node:crypto';
import { type DataClient } from '../../accounting-api';
import { mapWithConcurrency } from '../../shared/concurrency';
import { AcctopsError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { deduplicationIdOf, type ExportJob, type ExportPartJob } from './export-jobs';
import { nextDay, transactionsOfRange, type DateToMode } from './date-to';
import {
  MANIFEST_SCHEMA_VERSION,
  type Manifest,
  type ManifestDataset,
  type ManifestObject,
  type ManifestTrigger,
} from '../formats/manifest';
import type { PartResult, SplitPart, SplitRecord, StagedDataset } from './part-ledger';
import { daysInMonth, periodRange, type Period } from '../formats/period';
import { AmountSums, type AmountTotal } from '../formats/totals';
import { DATASETS, type DatasetName, type DateToReading, type ExportSources } from '../formats/datasets';

/**
 * Months too large for one export invocation, exported in parts by date range
 * (docs/fleet-exports.md). This module holds the pure parts of it (sizing, planning, merging);
 * the worker (export-worker.ts) runs them against the queue, the ledger and the store.
 */

/**
 * The default split size: a month with more transactions than this is exported in parts of at
 * most this many. The service serves 1000 a page in 0.3-1 s, so 500k are 500 pages, 2.5-8.3
 * minutes of service time; our own work (all formats to S3: ~25 s of CPU per million on the bench
 * machine, ~45 s at the worker's 0.58 vCPU) overlaps it. That leaves Lambda's 15 minutes room for
 * the client's retries. Memory does not grow with the part (the exporter streams).
 * docs/fleet-exports.md, "The threshold".
 */
export const DEFAULT_MAX_TRANSACTIONS_PER_PART = 500_000;

export interface SplitSettings {
  /** A month above this many transactions is split; each part holds at most this many (unless one day holds more). */
  maxTransactionsPerPart: number;
  /** Day counts read at once while planning. @default 4 */
  probeConcurrency?: number;
}

export interface DayCount {
  /** `YYYY-MM-DD`. */
  date: string;
  count: number;
}

/**
 * A month's transactions as reported by the spec's `count` (the total of the list): one request
 * with page size 1, which reads a single record.
 */
export async function countTransactions(client: DataClient, range: { dateFrom: string; dateTo: string }): Promise<number> {
  for await (const page of client.transactions.list({ ...range, pageSize: 1 }).pages()) return page.count;
  return 0;
}

/**
 * The count of each day of the month (one page-size-1 request a day). A service whose `date_to` is
 * exclusive counts nothing for `date_from = date_to`: with `dateTo` exclusive each day is asked as
 * [day, next day]; with `detect`, so is every day again when all of them counted 0 (date-to.ts).
 */
export async function dayCounts(client: DataClient, period: Period, concurrency = 4, dateTo: DateToMode = 'detect'): Promise<DayCount[]> {
  const days = Array.from({ length: daysInMonth(period) }, (_, i) => `${period.text}-${String(i + 1).padStart(2, '0')}`);
  const count = (exclusive: boolean) =>
    mapWithConcurrency(days, concurrency, (date) =>
      countTransactions(client, { dateFrom: date, dateTo: exclusive ? nextDay(date) : date }),
    );
  let counts = await count(dateTo === 'exclusive');
  if (dateTo === 'detect' && counts.every((n) => n === 0)) counts = await count(true);
  return days.map((date, i) => ({ date, count: counts[i]! }));
}

/**
 * Packs consecutive days into parts of at most `max` transactions. A day is the finest split the
 * API offers (`date_from`/`date_to` are dates), so a single day above `max` is a part of its own.
 * The parts cover the month without gap or overlap: part i+1 starts the day after part i ends.
 */
export function planParts(days: readonly DayCount[], max: number): SplitPart[] {
  if (!Number.isInteger(max) || max < 1) throw new RangeError('max must be a positive integer');
  const parts: SplitPart[] = [];
  let start: string | undefined;
  let end = '';
  let size = 0;
  for (const day of days) {
    if (start !== undefined && size + day.count > max) {
      parts.push({ index: parts.length, dateFrom: start, dateTo: end });
      start = undefined;
      size = 0;
    }
    start ??= day.date;
    end = day.date;
    size += day.count;
  }
  if (start !== undefined) parts.push({ index: parts.length, dateFrom: start, dateTo: end });
  return parts;
}

/**
 * The split of a job: derived from the job's own deduplication id, so a redelivered job finds
 * the split it planned before (and never plans a second one).
 */
export function splitIdOf(job: ExportJob): string {
  return `s${createHash('sha256')
    .update(`split|${deduplicationIdOf(job)}`)
    .digest('hex')
    .slice(0, 32)}`;
}

/** The part jobs of a split, in order. Part 0 also writes the month's datasets other than transactions. */
export function partJobs(job: ExportJob, split: Pick<SplitRecord, 'splitId' | 'runId' | 'parts'>): ExportPartJob[] {
  return split.parts.map((part) => ({
    type: 'export_part',
    companyId: job.companyId,
    period: job.period,
    splitId: split.splitId,
    runId: split.runId,
    part: { index: part.index, count: split.parts.length, dateFrom: part.dateFrom, dateTo: part.dateTo },
    ...(job.datasets ? { datasets: [...job.datasets] } : {}),
    formats: [...job.formats],
    source: job.source,
    trigger: job.trigger,
    ...(job.replaceFormats ? { replaceFormats: true } : {}),
  }));
}

/** The datasets a part writes: the selection for part 0, transactions only for the others. */
export function partDatasets(job: Pick<ExportPartJob, 'datasets' | 'part'>): DatasetName[] {
  const selected = DATASETS.filter((d) => (job.datasets ?? DATASETS).includes(d));
  return job.part.index === 0 ? selected : selected.filter((d) => d === 'transactions');
}

/** The sources of one part: transactions of its days (its last day again where `date_to` is exclusive); tax reports and categories whole. */
export function partSources(
  client: DataClient,
  companyId: string,
  part: { dateFrom: string; dateTo: string },
  options: { dateTo?: DateToMode; logger: Logger },
): ExportSources {
  const transactions = transactionsOfRange(
    client,
    { dateFrom: part.dateFrom, dateTo: part.dateTo },
    { dateTo: options.dateTo ?? 'detect', logger: options.logger },
  );
  return {
    transactions,
    taxReports: client.taxReports.list(companyId),
    categories: client.categories.list(),
    transactionsDateTo: transactions.reading,
  };
}

/** Sums totals of the same currency and cashflow type exactly (bigint minor units), sorted as TotalsAccumulator sorts. */
export function mergeTotals(lists: readonly (readonly AmountTotal[])[]): AmountTotal[] {
  const sums = new AmountSums();
  for (const list of lists) for (const t of list) sums.add(t.currency, t.cashflowType, t.records, BigInt(t.amountMinor));
  return sums.result();
}

/**
 * The parts' results merged per dataset: records, repeats dropped and totals summed, objects listed
 * in key order, the transactions' `date_to` readings merged (mergeDateTo).
 */
export function mergeParts(results: readonly PartResult[]): Partial<Record<DatasetName, StagedDataset>> {
  const merged: Partial<Record<DatasetName, StagedDataset>> = {};
  for (const dataset of DATASETS) {
    const pieces = [...results]
      .sort((a, b) => a.index - b.index)
      .map((r) => r.datasets[dataset])
      .filter((d): d is StagedDataset => d !== undefined);
    if (pieces.length === 0) continue;
    const duplicatesDropped = pieces.reduce((n, p) => n + (p.duplicatesDropped ?? 0), 0);
    const dateTo = mergeDateTo(pieces.map((p) => p.dateTo));
    merged[dataset] = {
      records: pieces.reduce((n, p) => n + p.records, 0),
      totals: mergeTotals(pieces.map((p) => p.totals)),
      objects: pieces.flatMap((p) => p.objects).sort((a, b) => compare(a.key, b.key)),
      ...(duplicatesDropped > 0 ? { duplicatesDropped } : {}),
      ...(dateTo ? { dateTo } : {}),
    };
  }
  return merged;
}

/**
 * One reading for a month of parts, each of which read its own range: `exclusive` when any part read
 * its last day on its own, else `inclusive` when any probe found so, else `undetermined`; the last
 * days' records and repeats summed. The next day's records dropped are the last part's alone
 * (`readings` in part order): an earlier part's next day is the following part's first, which that
 * part reads and exports, so counting it would report records of the month as the next month's.
 * Undefined when a part's result does not say (stored before readings were recorded): the month's
 * reading is then unknown.
 */
export function mergeDateTo(readings: readonly (DateToReading | undefined)[]): DateToReading | undefined {
  if (readings.length === 0 || readings.some((r) => r === undefined)) return undefined;
  const all = readings as readonly DateToReading[];
  const read = (['exclusive', 'inclusive'] as const).find((r) => all.some((p) => p.read === r)) ?? 'undetermined';
  const nextDayDropped = all[all.length - 1]!.nextDayDropped ?? 0;
  return {
    setting: all[0]!.setting,
    read,
    lastDayRecords: all.reduce((n, p) => n + p.lastDayRecords, 0),
    lastDayRepeats: all.reduce((n, p) => n + p.lastDayRepeats, 0),
    ...(nextDayDropped > 0 ? { nextDayDropped } : {}),
  };
}

/**
 * The manifest of a split month: the merged parts' datasets under the split's run id, the other
 * datasets carried over from `previous` (as a whole-month export does), and the parts' ranges.
 */
export function splitManifest(input: {
  split: Pick<SplitRecord, 'companyId' | 'runId' | 'parts'>;
  period: Period;
  results: readonly PartResult[];
  previous: Manifest | undefined;
  generatedAt: string;
  toolVersion: string;
  baseUrl: string;
  trigger?: ManifestTrigger;
}): Manifest {
  const merged = mergeParts(input.results);
  const datasets: Partial<Record<DatasetName, ManifestDataset>> = {};
  const objects: ManifestObject[] = [];
  for (const dataset of DATASETS) {
    const result = merged[dataset];
    if (result) {
      datasets[dataset] = {
        runId: input.split.runId,
        generatedAt: input.generatedAt,
        records: result.records,
        totals: result.totals,
        ...(result.duplicatesDropped ? { duplicatesDropped: result.duplicatesDropped } : {}),
        ...(result.dateTo ? { dateTo: result.dateTo } : {}),
      };
      objects.push(...result.objects);
    } else if (input.previous?.datasets[dataset]) {
      datasets[dataset] = input.previous.datasets[dataset];
      objects.push(...input.previous.objects.filter((o) => o.dataset === dataset));
    }
  }
  const byIndex = new Map(input.results.map((r) => [r.index, r]));
  return {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    company: input.split.companyId,
    period: input.period.text,
    runId: input.split.runId,
    generatedAt: input.generatedAt,
    tool: { name: 'acctops', version: input.toolVersion },
    ...(input.trigger ? { trigger: input.trigger } : {}),
    source: {
      baseUrl: input.baseUrl,
      query: periodRange(input.period),
      parts: input.split.parts.map((p) => ({
        dateFrom: p.dateFrom,
        dateTo: p.dateTo,
        records: byIndex.get(p.index)?.datasets.transactions?.records ?? 0,
      })),
    },
    datasets,
    objects: objects.sort((a, b) => compare(a.key, b.key)),
    // publishPeriod derives every dataset's from `objects`.
    symlinks: [],
  };
}

/**
 * A split cannot be published: a part's result is missing from the ledger, or an object a part
 * wrote is gone from the store (a part finished after the garbage grace period). Not retryable:
 * the month needs a fresh export; the period's previous export is untouched.
 */
export class SplitIncompleteError extends AcctopsError {
  override readonly name: string = 'SplitIncompleteError';
  readonly splitId: string;
  readonly missing: string[];

  constructor(splitId: string, missing: string[]) {
    super(`split ${splitId} cannot be published: ${missing.length} part result(s) or object(s) missing (first: ${missing[0] ?? '?'})`, {
      code: 'export_split_incomplete',
    });
    this.splitId = splitId;
    this.missing = missing;
  }
}

/** Log fields of a split, for one line per decision. */
export function describeSplit(split: Pick<SplitRecord, 'splitId' | 'runId' | 'parts'>, logger: Logger): Logger {
  return logger.child({ splitId: split.splitId, runId: split.runId, parts: split.parts.length });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
