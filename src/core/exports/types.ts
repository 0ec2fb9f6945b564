/**
 * The exporter's input: records as the pipeline hands them over, one async iterable per dataset.
 *
 * These are structural on purpose. The typed client (`src/core/accounting-api`) owns the wire
 * schemas; the pipeline adapts its items to these shapes, so the writers depend on nothing but the
 * fields they write. Each record carries `raw`, the object exactly as the client parsed it from the
 * response, for the lossless JSONL; the other fields are the parsed values the CSV, Parquet and the
 * manifest totals are computed from.
 */
import type { MinorUnits } from '../accounting-api/money';

export interface ExportTransaction {
  /** The API's object as parsed by the client's lossless JSON parse (big integers as strings). */
  raw: unknown;
  publicId: string;
  /** Exact minor units, whichever encoding the API used. */
  amount: MinorUnits;
  /** ISO 4217; null when the API sent none (the exporter then uses its default currency). */
  currency: string | null;
  /** `EXPENSE`, `INCOME`, or a display label such as `Expense` (normalised to upper case). */
  cashflowType: string | null;
  /** ISO 8601 timestamp with an offset, exactly as the API sent it. */
  valueDate: string;
  description: string | null;
  /** The category's publicId, or null. */
  category: string | null;
  bankAccount: string | null;
}

export interface ExportTaxReport {
  raw: unknown;
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

export interface ExportCategory {
  raw: unknown;
  publicId: string;
  name: string | null;
  parent: string | null;
  cashflowType: string | null;
  vatApplied: string | null;
  /** A JSON object serialised as text, kept as text (it may be invalid JSON). */
  metadata: string | null;
  description: string | null;
  examples: string | null;
}

/** Dataset names as they appear in object keys (Hive/Glue friendly: lower case, underscores). */
export const DATASETS = ['transactions', 'tax_reports', 'categories'] as const;
export type DatasetName = (typeof DATASETS)[number];

export const FORMATS = ['jsonl', 'csv', 'parquet'] as const;
export type ExportFormat = (typeof FORMATS)[number];

/** The sources of one period. Each one given is read exactly once. */
export interface ExportSources {
  transactions?: AsyncIterable<ExportTransaction> | Iterable<ExportTransaction>;
  taxReports?: AsyncIterable<ExportTaxReport> | Iterable<ExportTaxReport>;
  categories?: AsyncIterable<ExportCategory> | Iterable<ExportCategory>;
}
