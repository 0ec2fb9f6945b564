/**
 * The exporter's input: one async iterable per dataset, of items shaped like the typed client's
 * list items (`PageItem<T>` of `src/core/accounting-api`): `raw`, the object exactly as the client
 * parsed it from the response, beside `parsed`, its validated fields, and `json`, its text as sent
 * (for the raw JSONL) when the client kept it.
 *
 * The field types are structural and minimal, so `client.transactions.list(...)` (and the other
 * lists) can be passed in as they are, and any other source can be adapted to them.
 */
import { DATASETS, type DatasetName } from '../../../../contract/exports';
import type { JsonText, MinorUnits } from '../../accounting-api';

export interface ExportItem<P> {
  /** As received; the client's lossless parse turns integers beyond 2^53 into digit strings. */
  readonly raw: unknown;
  readonly parsed: P;
  /**
   * The record's JSON text as the API sent it (UTF-8, one line), written to the raw JSONL as it
   * is; without it the JSONL line is `JSON.stringify(raw)`. The client's lists carry it when made
   * with `itemJson` (createExportClient does).
   */
  readonly json?: JsonText | undefined;
}

export interface TransactionFields {
  publicId: string;
  /** Exact minor units, whichever encoding the API used. */
  amount: MinorUnits;
  /** ISO 4217; null when the API sent none (the exporter then uses its default currency). */
  currency: string | null;
  /** `EXPENSE`, `INCOME`, or an unknown value kept verbatim (the client maps display labels). */
  cashflowType: string | null;
  /** ISO 8601 timestamp with an offset, exactly as the API sent it. */
  valueDate: string;
  description: string | null;
  /** The category's publicId, or null. */
  category: string | null;
  bankAccount: string | null;
}

export interface TaxReportFields {
  /** Tax reports are identified by `pk`, not `publicId` (spec §2). */
  pk: string;
  type: string | null;
  /** `YYYY-MM-DD`. */
  periodStart: string | null;
  periodEnd: string | null;
  status: string | null;
  amountDue: MinorUnits | null;
  currency: string | null;
  /** ISO 8601 timestamp with an offset. */
  createdAt: string | null;
}

/** `metadata` is taken from `raw`: the exports keep the text as sent, invalid JSON included. */
export interface CategoryFields {
  publicId: string;
  name: string | null;
  parent: string | null;
  cashflowType: string | null;
  vatApplied: string | null;
  description: string | null;
  examples: string | null;
}

export type ExportTransaction = ExportItem<TransactionFields>;
export type ExportTaxReport = ExportItem<TaxReportFields>;
export type ExportCategory = ExportItem<CategoryFields>;

/**
 * A source that can also hand over its items a page at a time (PaginatedList does); the exporter
 * then reads pages. `pages()` must yield exactly the items that iterating the source would.
 */
export interface PagedSource<T> {
  pages(): AsyncIterable<SourcePage<T>>;
}

export interface SourcePage<T> {
  readonly items: readonly T[];
  /** Repeats the source left out of `items` (Page.duplicatesDropped): counted in the manifest. */
  readonly duplicatesDropped?: number;
}

type Source<T> = AsyncIterable<T> | Iterable<T> | (AsyncIterable<T> & PagedSource<T>);

/** The sources of one period. Each one given is read exactly once. */
export interface ExportSources {
  transactions?: Source<ExportTransaction>;
  taxReports?: Source<ExportTaxReport>;
  categories?: Source<ExportCategory>;
  /**
   * How the transactions' `date_to` was read, asked once they have been read to the end (the API
   * sources: src/core/exports/pipeline/date-to.ts); recorded in the manifest. Undefined when unknown.
   */
  transactionsDateTo?: () => DateToReading | undefined;
}

/**
 * How a range's `date_to` was read (docs/exports.md, "The last day of a range"): the manifest's
 * `datasets.transactions.dateTo`.
 */
export interface DateToReading {
  /** The setting in force (`exports.dateTo`, `--date-to`): `detect` means a probe decided. */
  setting: 'detect' | 'inclusive' | 'exclusive';
  /** `undetermined`: neither the range nor its last day held a record, so nothing could be missing. */
  read: 'inclusive' | 'exclusive' | 'undetermined';
  /** Records the last day's own read returned (exclusive only), repeats included. */
  lastDayRecords: number;
  /**
   * Of `lastDayRecords`, those the range had already yielded, dropped (and counted in
   * `duplicatesDropped`): more than 0 means the service's `date_to` is inclusive after all.
   */
  lastDayRepeats: number;
  /**
   * Of `lastDayRecords`, the records of the day after the range that the read returned once its
   * repeats had shown `date_to` inclusive: the next range's (a whole month's: the next month's
   * first day), dropped. Not in `records`, `duplicatesDropped` or `outsidePeriod`. Absent when none.
   */
  nextDayDropped?: number;
}

/** Dataset names as they appear in object keys and Glue tables (contract/exports.ts). */
export { DATASETS, type DatasetName };

export const FORMATS = ['jsonl', 'csv', 'parquet'] as const;
export type ExportFormat = (typeof FORMATS)[number];

/**
 * How a CSV file is spelt (docs/exports.md, "CSV dialects"). `standard` is RFC 4180 with `.` decimals
 * and ISO instants, what every program and the deployed pipeline read; `excel-de` is for a
 * spreadsheet with a German locale (`;`, decimal comma, instants without `T` and `Z`), written only
 * to a local directory (decision 95).
 */
export const CSV_DIALECTS = ['standard', 'excel-de'] as const;
export type CsvDialect = (typeof CSV_DIALECTS)[number];
