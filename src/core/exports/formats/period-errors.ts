import { AcctopsError, ValidationError } from '../../shared/errors';

/**
 * A storage operation failed. `key` is the object key (never a secret); `location` where it is
 * (`file:///…`, `s3://bucket/…`). The message names the location and the cause's own words
 * (`ENOTDIR: not a directory, mkdir '/dev/null/x'`, `NoSuchBucket: …`), so one line says what to fix.
 */
export class ObjectStoreError extends AcctopsError {
  override readonly name: string = 'ObjectStoreError';
  readonly operation: string;
  readonly key: string;
  readonly location: string;

  constructor(operation: string, key: string, cause?: unknown, code = 'object_store_failed', location = key) {
    super(`object store ${operation} failed for ${location}${causeText(cause)}`, { code, cause });
    this.operation = operation;
    this.key = key;
    this.location = location;
  }
}

/** `: <name or code>: <message>` of an error, on one line; empty when there is no cause. */
function causeText(cause: unknown): string {
  if (cause === undefined || cause === null) return '';
  if (!(cause instanceof Error)) return `: ${String(cause)}`;
  const code = (cause as NodeJS.ErrnoException).code;
  const label =
    typeof code === 'string' && cause.message.startsWith(code) ? '' : cause.name !== 'Error' ? `${cause.name}: ` : code ? `${code}: ` : '';
  const message =
    cause.message || (cause as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode?.toString() || 'no message';
  return `: ${label}${message}`.replace(/\s*\n\s*/g, ' ');
}

/** A conditional write found the object changed (or present) since it was read. */
export class PreconditionFailedError extends ObjectStoreError {
  override readonly name: string = 'PreconditionFailedError';
  constructor(key: string, cause?: unknown) {
    super('conditional put', key, cause, 'precondition_failed');
  }
}

/** Another run switched the period's manifest while this run was writing: this run lost. */
export class ConcurrentExportError extends AcctopsError {
  override readonly name: string = 'ConcurrentExportError';
  constructor(manifestKey: string, cause?: unknown) {
    super(`another export run replaced ${manifestKey} first; this run was discarded`, { code: 'export_conflict', cause });
  }
}

/** The period's current manifest cannot be read as ours; nothing is replaced until a human looks. */
export class ManifestError extends AcctopsError {
  override readonly name: string = 'ManifestError';
  readonly key: string;

  constructor(key: string, message: string, cause?: unknown) {
    super(`manifest ${key}: ${message}`, { code: 'manifest_invalid', cause });
    this.key = key;
  }
}

/**
 * A period export failed. The period's previous complete export (if any) is untouched; `cause`
 * is the underlying error (a ValidationError for a bad record, an API error, a storage error).
 */
export class PeriodExportError extends AcctopsError {
  override readonly name: string = 'PeriodExportError';
  readonly company: string;
  readonly period: string;
  readonly runId: string;

  constructor(details: { company: string; period: string; runId: string }, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`export of company ${details.company} period ${details.period} (run ${details.runId}) failed: ${reason}`, {
      code: 'export_failed',
      cause,
    });
    this.company = details.company;
    this.period = details.period;
    this.runId = details.runId;
  }
}

/**
 * A re-export with fewer formats than the period's current export would delete the others (their
 * objects, and Athena's view when Parquet goes). Refused unless the request allows it explicitly
 * (`replaceFormats`; the CLI's `--replace-formats`).
 */
export class FormatLossError extends ValidationError {
  override readonly name: string = 'FormatLossError';
  readonly dropped: { dataset: string; format: string; runId: string }[];

  constructor(dropped: { dataset: string; format: string; runId: string }[]) {
    const lost = dropped.map((d) => `${d.dataset} ${d.format} (run ${d.runId})`).join(', ');
    super('export request', [
      {
        path: 'formats',
        message: `the period's current export also has ${lost}, which this re-export would delete; add those formats, or allow dropping them with --replace-formats (replaceFormats: true)`,
      },
    ]);
    Object.defineProperty(this, 'code', { value: 'export_formats_dropped' });
    this.dropped = dropped;
  }
}
