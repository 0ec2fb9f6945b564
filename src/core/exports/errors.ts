import { AcctopsError } from '../shared/errors';

/** A storage operation failed. `key` is the object key (never a secret). */
export class ObjectStoreError extends AcctopsError {
  readonly operation: string;
  readonly key: string;

  constructor(operation: string, key: string, cause?: unknown, code = 'object_store_failed') {
    super(`object store ${operation} failed for ${key}`, { code, cause });
    this.operation = operation;
    this.key = key;
  }
}

/** A conditional write found the object changed (or present) since it was read. */
export class PreconditionFailedError extends ObjectStoreError {
  constructor(key: string, cause?: unknown) {
    super('conditional put', key, cause, 'precondition_failed');
  }
}

/** Another run switched the period's manifest while this run was writing: this run lost. */
export class ConcurrentExportError extends AcctopsError {
  constructor(manifestKey: string, cause?: unknown) {
    super(`another export run replaced ${manifestKey} first; this run was discarded`, { code: 'export_conflict', cause });
  }
}

/** The period's current manifest cannot be read as ours; nothing is replaced until a human looks. */
export class ManifestError extends AcctopsError {
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
