import { DECIMAL_PRECISION, DECIMAL_SCALE, EXPORT_COLUMNS, type ColumnKind, type TableColumn } from '../../../../contract/exports';
import { ValidationError } from '../../shared/errors';
import { localDateOf, timestampInstant, timestampProblem, type MinorUnits, type TimestampInstant } from '../../accounting-api';
import { scaleFactor } from './currency';
import { epochDay } from './offset-timestamp';
import { WITHOUT_PARQUET } from './parquet-limit';
import type { DatasetName, ExportCategory, ExportTaxReport, ExportTransaction } from './datasets';
import { taxReportColumnSources, taxReportWithNames, type TaxReportField, type TaxReportFieldNames } from './tax-report-fields';

/**
 * The tables of the CSV and Parquet files, one per dataset (documented in docs/exports.md). Their
 * columns are EXPORT_COLUMNS of contract/exports.ts, from which the Glue tables are derived too.
 * Both formats write the same columns in the same order; `kind` decides the encoding:
 *
 * | kind        | row value                | CSV                         | Parquet                          |
 * |-------------|--------------------------|-----------------------------|----------------------------------|
 * | `text`      | string                   | RFC 4180, formula-protected | UTF8 BYTE_ARRAY                  |
 * | `decimal`   | bigint minor units       | exact decimal, `-49.99`     | DECIMAL(18,4) on INT64           |
 * | `integer`   | bigint                   | digits                      | INT64                            |
 * | `date`      | `YYYY-MM-DD`             | as is                       | DATE (INT32 days)                |
 * | `timestamp` | epoch milliseconds (UTC) | `2026-10-31T21:30:00.000Z`  | TIMESTAMP(MILLIS, adjusted UTC)  |
 *
 * A `decimal` cell is in the minor units of the row's currency (its `currency` column): CSV
 * prints it with that currency's fraction digits (JPY 0, EUR 2, KWD 3), Parquet scales it to the
 * column's fixed scale, so one column holds every currency exactly.
 */
export type { ColumnKind, TableColumn };
export type Cell = string | bigint | number | null;
export type Row = Record<string, Cell>;

/**
 * Copies a row's values into `out` in column order, absent ones as null: what the CSV and Parquet
 * writers read a row through. Reading `row[column.name]` for every column from one place in the
 * code is a lookup V8 cannot specialise (thirteen names at one site), ~25 ns a cell; a reader that
 * names each field itself costs a few. Those lookups were ~2% of an all-formats export's main
 * thread (profile, 300k transactions, 2026-11-26).
 */
export type CellReader = (row: Row, out: Cell[]) => void;

/** The reader of any columns, by name: for tables whose size does not make it worth a hand-written one. */
export function cellReader(columns: readonly TableColumn[]): CellReader {
  const names = columns.map((column) => column.name);
  return (row, out) => {
    for (let i = 0; i < names.length; i++) out[i] = row[names[i]!] ?? null;
  };
}

export interface RowContext {
  /** Zero-based position of the record in its dataset stream (for error messages). */
  readonly index: number;
  readonly defaultCurrency: string;
  /**
   * Whether this run writes the row to Parquet. Only Parquet bounds an amount (its DECIMAL(18,4)
   * and INT64 columns); CSV, JSONL and the manifest's totals hold any, so a run without Parquet
   * must not refuse a record for a limit none of its files has.
   */
  readonly parquet: boolean;
  /** The name of a category publicId; null when the category is unknown. */
  categoryName(publicId: string): string | null;
  /** The service's names of our tax-report fields, where they differ (tax-report-fields.ts). */
  readonly taxReportFields?: TaxReportFieldNames;
}

export interface Table<I> {
  readonly dataset: DatasetName;
  readonly columns: readonly TableColumn[];
  /** Validates one record and flattens it to column values; a bad field is a ValidationError. */
  row(item: I, context: RowContext): Row;
  /** `cellReader(columns)` written out for a table of many rows; the same values (dataset-tables.test.ts). */
  readonly cells?: CellReader;
  /** Columns whose values the manifest totals: amount (minor units), currency, cashflow type. */
  readonly totals?: { amount: string; currency: string; cashflowType?: string };
  /**
   * Whether a row belongs to the exported month (`YYYY-MM-DD` bounds, inclusive); rows that do
   * not are left out of every file and of the totals. Absent: every row the source yields belongs.
   */
  belongs?(row: Row, range: { dateFrom: string; dateTo: string }): boolean;
  /** Whether a row has no date for `belongs` to place it by: it is kept in every month (and counted). */
  undated?(row: Row): boolean;
  /** Whether a row has an amount but no currency to read it in: left out of the totals (and counted). */
  withoutCurrency?(row: Row): boolean;
  /** Whether a record came without a currency and its row took `RowContext.defaultCurrency` (counted). */
  tookDefaultCurrency?(item: I): boolean;
}

// DECIMAL(18,4) on INT64 (contract/exports.ts says why 18 and 4).
export { DECIMAL_PRECISION, DECIMAL_SCALE };
const DECIMAL_LIMIT = 10n ** BigInt(DECIMAL_PRECISION);

export const transactionsTable: Table<ExportTransaction> = {
  dataset: 'transactions',
  columns: EXPORT_COLUMNS.transactions,
  totals: { amount: 'amount_minor', currency: 'currency', cashflowType: 'cashflow_type' },
  row({ parsed: t }, context) {
    const check = checker('transaction', t.publicId, context.index);
    const publicId = check.id('publicId', t.publicId);
    const valueDate = check.timestamp('valueDate', t.valueDate);
    const currency = check.currency('currency', t.currency, context.defaultCurrency);
    const amount = check.amount('amount', t.amount, currency, context.parquet);
    const category = check.optionalText('category', t.category);
    return {
      public_id: publicId,
      // The calendar date as written, in the timestamp's own offset (what periods filter on).
      value_date_local: localDateOf(t.valueDate),
      value_date: t.valueDate,
      value_date_utc: valueDate.utcMillis,
      value_date_offset_minutes: offsetBigInt(valueDate.offsetMinutes),
      amount,
      amount_minor: amount,
      currency,
      cashflow_type: check.optionalText('cashflowType', t.cashflowType),
      category_id: category,
      category_name: category === null ? null : context.categoryName(category),
      description: check.optionalText('description', t.description),
      bank_account_id: check.optionalText('bankAccount', t.bankAccount),
    };
  },
  cells(row, out) {
    out[0] = row.public_id ?? null;
    out[1] = row.value_date_local ?? null;
    out[2] = row.value_date ?? null;
    out[3] = row.value_date_utc ?? null;
    out[4] = row.value_date_offset_minutes ?? null;
    out[5] = row.amount ?? null;
    out[6] = row.amount_minor ?? null;
    out[7] = row.currency ?? null;
    out[8] = row.cashflow_type ?? null;
    out[9] = row.category_id ?? null;
    out[10] = row.category_name ?? null;
    out[11] = row.description ?? null;
    out[12] = row.bank_account_id ?? null;
  },
  // The spec names no currency field of a transaction, so a service that follows it alone sends
  // none: the default is then a label of ours on every amount, which the run has to say.
  tookDefaultCurrency: ({ parsed: t }) => t.currency === null || t.currency === undefined,
};

export const taxReportsTable: Table<ExportTaxReport> = {
  dataset: 'tax_reports',
  columns: EXPORT_COLUMNS.tax_reports,
  totals: { amount: 'amount_due_minor', currency: 'currency' },
  row({ raw, parsed }, context) {
    // Only `pk` is required: every other field the service may leave out becomes null. With the
    // service's names configured, the client's parse (under our names) is replaced by one under theirs.
    const names = context.taxReportFields;
    const r = names === undefined ? parsed : taxReportWithNames(raw, names, context.index);
    const path = (field: TaxReportField) => names?.[field] ?? field;
    const check = checker('tax report', r.pk, context.index);
    // No fallback to the default currency: the spec names no currency of a tax report, of a company
    // or of the service, so a report without one is written without one (amount_due_minor alone:
    // its fraction digits are unknown) and counted, never labelled with a guess (docs/exports.md).
    const currency = r.currency == null ? null : check.currency(path('currency'), r.currency, null);
    const amountDue = r.amountDue == null ? null : check.amount(path('amountDue'), r.amountDue, currency, context.parquet);
    const createdAt = r.createdAt == null ? null : check.timestamp(path('createdAt'), r.createdAt);
    return {
      pk: check.id('pk', r.pk),
      type: check.optionalText(path('type'), r.type),
      period_start: check.date(path('periodStart'), r.periodStart),
      period_end: check.date(path('periodEnd'), r.periodEnd),
      status: check.optionalText(path('status'), r.status),
      amount_due: currency === null ? null : amountDue,
      amount_due_minor: amountDue,
      currency,
      created_at: createdAt === null ? null : r.createdAt,
      created_at_utc: createdAt?.utcMillis ?? null,
      created_at_offset_minutes: createdAt ? offsetBigInt(createdAt.offsetMinutes) : null,
      extra: extraFields(raw, taxReportColumnSources(names)),
    };
  },
  belongs: taxReportBelongs,
  undated: (row) => taxReportDay(row) === null,
  withoutCurrency: (row) => row.amount_due_minor !== null && row.currency === null,
};

/**
 * A tax report lands in the folder of the month its period ends in (docs/exports.md, "Tax reports
 * of a period"): October's folder holds the October return and the Q3 return lands in September,
 * so a folder's total is the tax of the periods closing that month, never a sum across months.
 * Without a period end the period start decides, then the creation date (local to its offset);
 * a report with none of them cannot be placed and is kept in every month's export.
 */
export function taxReportBelongs(row: Row, range: { dateFrom: string; dateTo: string }): boolean {
  const day = taxReportDay(row);
  return day === null || (day >= range.dateFrom && day <= range.dateTo);
}

/** The date that places a tax report in a month, or null when it has none of the three. */
function taxReportDay(row: Row): string | null {
  return (row.period_end ?? row.period_start ?? (typeof row.created_at === 'string' ? localDateOf(row.created_at) : null)) as string | null;
}

/**
 * The fields of `raw` that no column holds, as one JSON object text (null when there are none), so
 * that CSV and Parquet lose nothing the service sent. Keys keep the service's order.
 */
export function extraFields(raw: unknown, known: ReadonlySet<string>): string | null {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  let extra: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(raw)) {
    if (known.has(key)) continue;
    (extra ??= {})[key] = value;
  }
  return extra === undefined
    ? null
    : JSON.stringify(extra, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

export const categoriesTable: Table<ExportCategory> = {
  dataset: 'categories',
  columns: EXPORT_COLUMNS.categories,
  row({ raw, parsed: c }, context) {
    const check = checker('category', c.publicId, context.index);
    const metadata = (raw as { metadata?: unknown } | null)?.metadata;
    return {
      public_id: check.id('publicId', c.publicId),
      name: check.optionalText('name', c.name),
      parent_id: check.optionalText('parent', c.parent),
      cashflow_type: check.optionalText('cashflowType', c.cashflowType),
      vat_applied: check.optionalText('vatApplied', c.vatApplied),
      description: check.optionalText('description', c.description),
      examples: check.optionalText('examples', c.examples),
      // The text as sent (the client's parsed form is an object, or null when the text is invalid).
      metadata: metadata === undefined || metadata === null ? null : typeof metadata === 'string' ? metadata : JSON.stringify(metadata),
    };
  },
};

const CURRENCY = /^[A-Z]{3}$/;

/**
 * Field checks for one record. The pipeline adapts validated client items, so these only catch
 * what would otherwise corrupt a file silently; each failure names the record and the field.
 * One instance, pointed at each record in turn (`checker`): the record's identity is needed only
 * for the message of a failure, and an object per record is garbage for every record.
 */
class RecordChecker {
  kind = '';
  recordId: unknown = undefined;
  index = 0;

  id(path: string, value: unknown): string {
    if (typeof value !== 'string' || value.length === 0) return this.fail(path, 'expected a non-empty identifier');
    return value;
  }

  optionalText(path: string, value: unknown): string | null {
    if (value === null || value === undefined) return null;
    if (typeof value !== 'string') return this.fail(path, 'expected a string or null');
    return value;
  }

  currency<F extends string | null>(path: string, value: unknown, fallback: F): string | F {
    if (value === null || value === undefined) return fallback;
    const code = typeof value === 'string' ? value.toUpperCase() : undefined;
    if (code === undefined || !CURRENCY.test(code)) return this.fail(path, 'expected an ISO 4217 code');
    return code;
  }

  /**
   * Minor units of `currency`. Written to Parquet, they must fit its DECIMAL once scaled to its
   * scale; without a currency no DECIMAL is written, and the bound is the unscaled one (within
   * INT64). The messages say whose limit it is, and how to export the record without it.
   */
  amount(path: string, value: unknown, currency: string | null, parquet: boolean): MinorUnits {
    if (typeof value !== 'bigint') return this.fail(path, 'expected exact minor units (bigint)');
    if (!parquet) return value;
    const limit = currency === null ? DECIMAL_LIMIT : minorUnitsLimit(currency);
    if (limit === undefined) return this.fail(path, `${currency} has more than ${DECIMAL_SCALE} fraction digits, ${WITHOUT_PARQUET}`);
    if (value <= -limit || value >= limit)
      return this.fail(path, `beyond DECIMAL(${DECIMAL_PRECISION},${DECIMAL_SCALE}), ${WITHOUT_PARQUET}`);
    return value;
  }

  date(path: string, value: unknown): string | null {
    if (value === null || value === undefined) return null;
    if (typeof value !== 'string' || epochDay(value) === undefined) return this.fail(path, 'expected a date YYYY-MM-DD');
    return value;
  }

  /** The client's parse, which its validation of the same string has just made (no new object). */
  timestamp(path: string, value: unknown): TimestampInstant {
    const parsed = typeof value === 'string' ? timestampInstant(value) : undefined;
    return parsed ?? this.fail(path, typeof value === 'string' ? timestampProblem(value) : 'expected an ISO 8601 timestamp with an offset');
  }

  private fail(path: string, message: string): never {
    const { kind, recordId: id, index } = this;
    const source = typeof id === 'string' && id.length > 0 && id.length <= 64 ? `${kind} ${id}` : `${kind} at position ${index}`;
    throw new ValidationError(source, [{ path, message }]);
  }
}

const LIMITS = new Map<string, bigint | null>();

/**
 * The bound on a currency's minor units: |minor × 10^(scale - digits)| < 10^precision, i.e.
 * |minor| < 10^precision / 10^(scale - digits), exactly (both are powers of ten). Cached by
 * currency alone: it runs for every amount, and comparing allocates no bigint where multiplying did.
 */
function minorUnitsLimit(currency: string): bigint | undefined {
  let limit = LIMITS.get(currency);
  if (limit === undefined) {
    const factor = scaleFactor(currency, DECIMAL_SCALE);
    limit = factor === undefined ? null : DECIMAL_LIMIT / factor;
    LIMITS.set(currency, limit);
  }
  return limit ?? undefined;
}

/** Offsets as INT64 cells: a few dozen distinct values, so one bigint each instead of one per row. */
const OFFSETS = new Map<number, bigint>();

function offsetBigInt(minutes: number): bigint {
  let cell = OFFSETS.get(minutes);
  if (cell === undefined) {
    cell = BigInt(minutes);
    OFFSETS.set(minutes, cell);
  }
  return cell;
}

const CHECKER = new RecordChecker();

function checker(kind: string, id: unknown, index: number): RecordChecker {
  CHECKER.kind = kind;
  CHECKER.recordId = id;
  CHECKER.index = index;
  return CHECKER;
}
