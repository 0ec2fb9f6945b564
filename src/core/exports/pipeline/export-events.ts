import { ALARMED_METRICS } from '../../../../contract/metrics';
import type { DomainEvent } from '../../ports/events';
import type { Metrics } from '../../shared/metrics';
import { describeFailure } from '../../tokens/token-failures';
import type { ExportSource, ExportTrigger } from './export-jobs';
import type { DatasetName, ExportFormat } from '../formats/datasets';
import type { Manifest } from '../formats/manifest';

/** The EventBridge `source` of every export event acctops publishes. */
export const EXPORT_EVENT_SOURCE = 'acctops.exports';

/**
 * `detail-type`s. `ExportRequested` is the one acctops consumes (an EventBridge rule); the others
 * it publishes. Details hold identifiers, counts, locations and error classes: never a credential.
 */
export const EXPORT_EVENT_TYPES = {
  requested: 'ExportRequested',
  completed: 'ExportCompleted',
  failed: 'ExportFailed',
  monthlyStarted: 'MonthlyExportStarted',
  monthlyFinished: 'MonthlyExportFinished',
} as const;

export interface ExportCompletedDetail {
  companyId: string;
  period: string;
  /** Key of `_manifest.json` in the store, and the URL a foreign reader uses (`s3://…`). */
  manifestKey: string;
  manifestUrl: string;
  runId: string;
  generatedAt: string;
  /** Records per dataset this run wrote. */
  records: Partial<Record<DatasetName, number>>;
  /**
   * Per dataset of `records`: records the service sent again on the same or the next page, written
   * once and not in `records` (the manifest's `datasets.<name>.duplicatesDropped`); 0 when none.
   */
  duplicatesDropped: Partial<Record<DatasetName, number>>;
  /**
   * Of `records.transactions`, those dated outside the month and kept (the manifest's
   * `datasets.transactions.outsidePeriod`); 0 when none, null when this run did not write transactions.
   */
  transactionsOutsidePeriod: number | null;
  /**
   * Records of the day after the month that a service whose `date_to` proved inclusive returned,
   * dropped: not in `records`, `duplicatesDropped` or `transactionsOutsidePeriod`, and exported by
   * the next month (the manifest's `datasets.transactions.dateTo.nextDayDropped`, decision 85); 0
   * when none, null when this run did not write transactions.
   */
  transactionsNextDayDropped: number | null;
  /**
   * Datasets whose Athena symlink is not the one the manifest records: the period is published, but
   * Athena shows their previous export until the period is exported again. Empty when none.
   */
  staleSymlinks: DatasetName[];
  /** Datasets kept from the previous export of the period. */
  carriedOver: DatasetName[];
  formats: ExportFormat[];
  source: ExportSource;
  trigger: ExportTrigger;
}

export interface ExportFailedDetail {
  companyId: string;
  period: string;
  /** Where the period's manifest is: the previous complete export, if `previousExport` is true. */
  manifestKey: string;
  manifestUrl: string;
  /** True when a complete export of the period exists (untouched by this failure). */
  previousExport: boolean;
  /** False when trying again cannot help (a refused permission, a bad record, no source). */
  retryable: boolean;
  attempts: number;
  errorClass: string;
  errorCode?: string;
  apiCode?: string;
  status?: number;
  requestId?: string;
  runId?: string;
  source: ExportSource;
  trigger: ExportTrigger;
}

export interface MonthlyExportStartedDetail {
  runId: string;
  period: string;
  timeZone: string;
  scheduledAt: string;
  /** Companies exported with their own API key: the first 100 (an event holds 256 KB; a fleet does not fit). */
  companies: string[];
  /** How many companies are exported with their own API key (all of them, unlike `companies`). */
  companyCount?: number;
  /** Institution users whose companies the run discovers (each company exported once). */
  users: number;
}

export interface MonthlyExportFinishedDetail {
  runId: string;
  period: string;
  startedAt: string;
  finishedAt: string;
  /** Companies of the run (API-key companies plus the discovered ones). */
  expected: number;
  completed: number;
  failed: number;
  /** Users whose companies could not be listed. */
  failedDiscoveries: number;
  /** The first 100 failed companies; the ledger has them all. */
  failedCompanies: string[];
}

export function exportCompleted(detail: ExportCompletedDetail, time: number): DomainEvent {
  return { type: EXPORT_EVENT_TYPES.completed, time, detail: { ...detail } };
}

/**
 * What ExportCompleted says of the datasets a run wrote, read from the committed manifest, so that a
 * whole month and a month in parts (whose report may come from a later delivery) say it alike.
 */
export function writtenCounts(
  manifest: Manifest,
  written: readonly DatasetName[],
): Pick<ExportCompletedDetail, 'records' | 'duplicatesDropped' | 'transactionsOutsidePeriod' | 'transactionsNextDayDropped'> {
  const each = (count: (dataset: DatasetName) => number) => Object.fromEntries(written.map((d) => [d, count(d)]));
  const transactions = written.includes('transactions') ? manifest.datasets.transactions : null;
  return {
    records: each((d) => manifest.datasets[d]?.records ?? 0),
    duplicatesDropped: each((d) => manifest.datasets[d]?.duplicatesDropped ?? 0),
    transactionsOutsidePeriod: transactions === null ? null : (transactions?.outsidePeriod ?? 0),
    transactionsNextDayDropped: transactions === null ? null : (transactions?.dateTo?.nextDayDropped ?? 0),
  };
}

/**
 * The metrics of one publish (docs/monitoring.md), counted by the invocation that published: a
 * redelivered report repeats the event, not these (but see reportSplit for stale symlinks). Stage
 * and Function only, like every export metric: a Company dimension would make metrics per company,
 * and a Dataset one would leave an alarm to sum three; the event, the manifest and the log say which.
 */
export function countPublished(
  metrics: Metrics,
  detail: Pick<ExportCompletedDetail, 'records' | 'duplicatesDropped' | 'transactionsOutsidePeriod' | 'staleSymlinks'>,
): void {
  metrics.add('ExportCompleted', 1);
  metrics.add('ExportedRecords', detail.records.transactions ?? 0);
  metrics.add(
    'ExportDuplicatesDropped',
    Object.values(detail.duplicatesDropped).reduce((sum, n) => sum + n, 0),
  );
  metrics.add('ExportOutsidePeriod', detail.transactionsOutsidePeriod ?? 0);
  metrics.add(ALARMED_METRICS.exportStaleSymlinks.name, detail.staleSymlinks.length);
}

export function exportFailed(
  base: Omit<ExportFailedDetail, 'errorClass' | 'errorCode' | 'apiCode' | 'status' | 'requestId'>,
  error: unknown,
  time: number,
): DomainEvent {
  const detail: ExportFailedDetail = { ...base, ...describeFailure(error) };
  return { type: EXPORT_EVENT_TYPES.failed, time, detail: { ...detail } };
}

export function monthlyExportStarted(detail: MonthlyExportStartedDetail, time: number): DomainEvent {
  return { type: EXPORT_EVENT_TYPES.monthlyStarted, time, detail: { ...detail } };
}

export function monthlyExportFinished(detail: MonthlyExportFinishedDetail, time: number): DomainEvent {
  return { type: EXPORT_EVENT_TYPES.monthlyFinished, time, detail: { ...detail } };
}
