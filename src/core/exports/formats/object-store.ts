import type { Readable } from 'node:stream';

/**
 * Where exports go: a flat key space of immutable-once-written objects, the common ground of an S3
 * bucket and a local directory. Keys use `/` as separator and never start with one.
 *
 * Every write is all-or-nothing: until a put resolves, a reader sees the previous object at that
 * key (or none); if it rejects, nothing at the key has changed. The atomic period publish
 * (docs/exports.md, "Atomic periods") is built on exactly this guarantee.
 */
export interface ObjectStore {
  /**
   * Streams `body` to `key` with bounded memory (S3: a multipart upload). On any failure, including
   * `body` erroring or being destroyed, the upload is abandoned and no partial object is visible.
   */
  putStream(key: string, body: Readable, options?: PutOptions): Promise<void>;

  /** Writes a small object in one request. Honours the conditions (optimistic locking). */
  putObject(key: string, body: Uint8Array | string, options?: PutOptions & PutConditions): Promise<void>;

  /** Reads a whole (small) object; undefined when absent. */
  get(key: string): Promise<Uint8Array | undefined>;

  /** Metadata of an object; undefined when absent. */
  head(key: string): Promise<ObjectHead | undefined>;

  /** Every object whose key starts with `prefix` (a string prefix, not a directory), in key order. */
  list(prefix: string): AsyncIterable<ObjectSummary>;

  /** Deletes the keys; absent keys are not an error (so deletion is safe to retry). */
  delete(keys: readonly string[]): Promise<void>;

  /** The address a foreign reader uses for `key` (`s3://bucket/key`, `file:///dir/key`). */
  url(key: string): string;
}

export interface PutOptions {
  contentType?: string;
}

/**
 * Compare-and-swap on the whole object. `ifMatch` holds the ETag from `head`; `ifNoneMatch: '*'`
 * means "only if absent". A failed condition rejects with PreconditionFailedError.
 */
export interface PutConditions {
  ifMatch?: string;
  ifNoneMatch?: '*';
}

export interface ObjectHead {
  /** Opaque version tag for `ifMatch`; changes whenever the object is replaced. */
  etag: string;
  size: number;
  /** Milliseconds since the epoch. */
  lastModified: number;
}

export interface ObjectSummary {
  key: string;
  size: number;
  lastModified: number;
}

const SEGMENT_FORBIDDEN = /[\\\0]/;

/**
 * True when `key` is a plain relative key: non-empty `/`-separated segments, none `.` or `..`,
 * no backslash or NUL. Both adapters refuse anything else, so a key can never escape its root.
 */
export function isSafeKey(key: string): boolean {
  if (key.length === 0 || key.length > 1024 || SEGMENT_FORBIDDEN.test(key)) return false;
  return key.split('/').every((segment) => segment.length > 0 && segment !== '.' && segment !== '..');
}
