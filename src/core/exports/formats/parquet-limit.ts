import type { FieldIssue } from '../../shared/errors';

/**
 * The end of the message of a record refused only for Parquet's amount columns (DECIMAL(18,4) on
 * INT64): a module of its own, so that the CLI's error hints can tell it from a malformed record
 * without loading the tables.
 */
export const WITHOUT_PARQUET = "the limit of Parquet's amount columns; CSV and JSONL have none (export with --format csv,jsonl)";

/** Whether an issue says a value is beyond what Parquet holds (and only Parquet). */
export function isBeyondParquet(issue: FieldIssue): boolean {
  return issue.message.endsWith(WITHOUT_PARQUET);
}
