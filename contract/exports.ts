/**
 * What the export pipeline writes and Athena reads: the object layout and the columns of the CSV
 * and Parquet files. The writers (src/core/exports) and the Glue catalog (lib/constructs/exports)
 * are both derived from here, so a column added for the writers is a column Athena sees.
 */

/**
 * Object keys of an export (Hive style, docs/exports.md):
 *
 *   exports/company=<publicId>/period=<YYYY-MM>/_manifest.json                         the commit point
 *   exports/company=<publicId>/period=<YYYY-MM>/<dataset>/run=<runId>/part-00000.<ext>  data, per run
 *   exports/company=<publicId>/period=<YYYY-MM>/<dataset>/_symlink/symlink.txt          Athena's view
 */
export const EXPORT_LAYOUT = {
  /** Every object the pipeline writes lives under `<root>/`; IAM grants are scoped to it. */
  root: 'exports',
  manifestName: '_manifest.json',
  /** Hive partition keys, in key order: Glue's partition projection reads them from the path. */
  partitions: { company: 'company', period: 'period' },
  /** The folder of a dataset holding the symlink file that names the current run's parts. */
  symlinkFolder: '_symlink',
  symlinkName: 'symlink.txt',
} as const;

/**
 * Hours after midnight on the 1st (local time) by which every company's previous month must be
 * exported, unless the stage's `ExportsTuning.dueAfterHours` says otherwise. The stack, the deployed
 * overdue check and `acctops doctor` all judge by it, so it lives here rather than in any of them.
 */
export const DEFAULT_DUE_AFTER_HOURS = 12;

/**
 * The earliest month acctops exports (`YYYY-MM`). A month before it is taken for a mistyped year
 * (`0226-10`, `0001-01`, `1026-10`): the service has no transactions then, so its export "completed"
 * with none and counted as the company's latest. 2000-01 is far below any month an operator of this
 * service exports (its API and the companies it serves are this century's), and above every
 * plausible typo of a four-digit year (decision 87 in docs/architecture.md). Here because the
 * writers refuse what is earlier and the Glue tables project `period` from it: a month one accepts
 * and the other does not show would be exported, published and invisible to Athena (decision 94).
 */
export const EARLIEST_PERIOD = '2000-01';

/**
 * The largest offset of any time zone from UTC, in hours (UTC+14, Pacific/Kiritimati). A month may
 * be exported once it has begun in the stage's `schedules.timeZone`, which is up to this much before
 * it begins in UTC, the clock Athena's partition projection reads `NOW` on (decision 94).
 */
export const MAX_UTC_OFFSET_HOURS = 14;

/** Dataset names as they appear in object keys and Glue table names (lower case, underscores). */
export const DATASETS = ['transactions', 'tax_reports', 'categories'] as const;
export type DatasetName = (typeof DATASETS)[number];

/**
 * The encoding of a column (src/core/exports/formats/dataset-tables.ts has the full table):
 * `text` UTF-8, `decimal` exact DECIMAL(18,4) from minor units, `integer` INT64,
 * `date` `YYYY-MM-DD`, `timestamp` epoch milliseconds (UTC).
 */
export type ColumnKind = 'text' | 'decimal' | 'integer' | 'date' | 'timestamp';

export interface TableColumn {
  readonly name: string;
  readonly kind: ColumnKind;
  readonly required: boolean;
  /**
   * Values are (nearly) all distinct and no query filters on their ranges: Parquet writes them
   * PLAIN without min/max statistics instead of sampling for a dictionary and comparing every value.
   */
  readonly unique?: boolean;
  /**
   * Parquet min/max statistics (default true). Off where a row group's range can never prune a
   * query: random GUIDs, free text and names span the whole range in every group of 10,000 rows,
   * and nobody filters on an offset. Each costs a comparison per value in the writer.
   */
  readonly statistics?: boolean;
  /** `decimal` columns: the column holding the row's currency, which sets the minor-unit exponent. */
  readonly currency?: string;
}

/**
 * DECIMAL(18,4) on INT64: Athena, Spark, DuckDB and arrow read it exactly. Scale 4 holds every
 * ISO 4217 minor unit (CLF has 4 digits); 10^14 units of any currency is the ceiling.
 */
export const DECIMAL_PRECISION = 18;
export const DECIMAL_SCALE = 4;

const col = (name: string, kind: ColumnKind, required = false): TableColumn => ({ name, kind, required });
const decimalCol = (name: string, currency: string, required = false): TableColumn => ({ name, kind: 'decimal', required, currency });
const uniqueCol = (name: string, kind: ColumnKind): TableColumn => ({ name, kind, required: true, unique: true });
const unrangedCol = (name: string, kind: ColumnKind, required = false): TableColumn => ({ name, kind, required, statistics: false });

/** The columns of each dataset, in file order (docs/exports.md, "Columns"). */
export const EXPORT_COLUMNS: Readonly<Record<DatasetName, readonly TableColumn[]>> = {
  transactions: [
    uniqueCol('public_id', 'text'),
    col('value_date_local', 'date', true),
    // The text keeps the API's offset; range queries use value_date_utc, which keeps its statistics.
    uniqueCol('value_date', 'text'),
    col('value_date_utc', 'timestamp', true),
    unrangedCol('value_date_offset_minutes', 'integer', true),
    decimalCol('amount', 'currency', true),
    col('amount_minor', 'integer', true),
    col('currency', 'text', true),
    col('cashflow_type', 'text'),
    unrangedCol('category_id', 'text'),
    unrangedCol('category_name', 'text'),
    unrangedCol('description', 'text'),
    unrangedCol('bank_account_id', 'text'),
  ],
  tax_reports: [
    uniqueCol('pk', 'text'),
    col('type', 'text'),
    col('period_start', 'date'),
    col('period_end', 'date'),
    col('status', 'text'),
    decimalCol('amount_due', 'currency'),
    col('amount_due_minor', 'integer'),
    col('currency', 'text'),
    col('created_at', 'text'),
    col('created_at_utc', 'timestamp'),
    col('created_at_offset_minutes', 'integer'),
    col('extra', 'text'),
  ],
  categories: [
    uniqueCol('public_id', 'text'),
    col('name', 'text'),
    col('parent_id', 'text'),
    col('cashflow_type', 'text'),
    col('vat_applied', 'text'),
    col('description', 'text'),
    col('examples', 'text'),
    col('metadata', 'text'),
  ],
};

/** The Glue (Hive) type Athena reads each kind's Parquet encoding as; never a float. */
export const GLUE_TYPES: Readonly<Record<ColumnKind, string>> = {
  text: 'string',
  decimal: `decimal(${DECIMAL_PRECISION},${DECIMAL_SCALE})`,
  integer: 'bigint',
  date: 'date',
  timestamp: 'timestamp',
};

/** The Glue columns of each dataset's table: `[name, type]`, in file order. */
export const GLUE_COLUMNS: Readonly<Record<DatasetName, readonly (readonly [string, string])[]>> = {
  transactions: EXPORT_COLUMNS.transactions.map((c) => [c.name, GLUE_TYPES[c.kind]] as const),
  tax_reports: EXPORT_COLUMNS.tax_reports.map((c) => [c.name, GLUE_TYPES[c.kind]] as const),
  categories: EXPORT_COLUMNS.categories.map((c) => [c.name, GLUE_TYPES[c.kind]] as const),
};

/**
 * Our names of a tax report's fields, the sources of the tax_reports columns but `pk`. The spec
 * names only `pk` (§2); where a service spells the others differently, the stage's
 * `exports.taxReportFields` (cdk.json), EXPORT_TAX_REPORT_FIELDS or `acctops export
 * --tax-report-fields` names its field for each of ours (docs/exports.md, "Tax reports of a period").
 */
export const TAX_REPORT_FIELDS = ['type', 'periodStart', 'periodEnd', 'status', 'amountDue', 'currency', 'createdAt'] as const;
export type TaxReportField = (typeof TAX_REPORT_FIELDS)[number];
/** The service's name for each of our tax-report fields that it spells otherwise. */
export type TaxReportFieldNames = Readonly<Partial<Record<TaxReportField, string>>>;

/**
 * What is wrong with a mapping of tax-report field names, as `{ field, message }` (messages never
 * repeat a name): the stage schema (lib) and the worker's environment (src) both check with it, so
 * a cdk.json that synthesizes never fails the worker's cold start. An object of our fields (keys
 * among TAX_REPORT_FIELDS) to names of 1-128 characters; a service name may feed one field of ours
 * only, counting each field left unmapped under its own name; `pk` is the report's id; the names of
 * Object.prototype are no field names. A name with dots is also a path into nested objects
 * (`period.from`), each segment a field name.
 */
export function taxReportFieldNameIssues(value: unknown): { field: string; message: string }[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return [{ field: '', message: 'expected an object of ours: theirs' }];
  const names = value as Record<string, unknown>;
  const issues: { field: string; message: string }[] = [];
  for (const [field, name] of Object.entries(names)) {
    if (!(TAX_REPORT_FIELDS as readonly string[]).includes(field)) issues.push({ field, message: 'not a tax-report field of ours' });
    else if (typeof name !== 'string' || name.length === 0 || name.length > 128)
      issues.push({ field, message: 'expected a name of 1-128 characters' });
  }
  if (issues.length > 0) return issues;
  const readBy = new Map<string, string>();
  for (const field of TAX_REPORT_FIELDS) {
    const mapped = names[field] as string | undefined;
    const name = mapped ?? field;
    if (mapped === 'pk') issues.push({ field, message: 'pk is the report id (spec §2), not one of its fields' });
    else if (mapped !== undefined && name.split('.').some((segment) => segment === '' || segment in Object.prototype))
      issues.push({ field, message: 'not a field name, nor a dotted path of field names (period.from)' });
    const other = readBy.get(name);
    if (other !== undefined)
      issues.push({
        field: mapped !== undefined ? field : other,
        message: `the same service field as ${mapped !== undefined ? other : field}`,
      });
    else readBy.set(name, field);
  }
  return issues;
}
