import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { ObjectStoreError, PreconditionFailedError } from '../../core/exports/formats/period-errors';
import { ConfigError } from '../../core/shared/errors';
import {
  isSafeKey,
  type ObjectHead,
  type ObjectStore,
  type ObjectSummary,
  type PutConditions,
  type PutOptions,
} from '../../core/exports/formats/object-store';
import { ABANDON_DEADLINE_MS, trackUploads, uploadsClosed, type AbandonedUploads } from './s3-uploads-in-flight';

export interface S3ObjectStoreOptions {
  client: S3Client;
  bucket: string;
  /** Prepended to every key (`tenants/a/`); keys seen by callers stay relative to it. */
  prefix?: string;
  /**
   * Multipart part size in bytes (S3's minimum, 5 MiB, up to 5 GiB). Part buffers come from one
   * pool per store (PartBufferPool): at most `maxPartBuffers` of them, reused.
   */
  partSize?: number;
  /** Parts uploaded concurrently per object (an object holds at most queueSize + 1 buffers). */
  queueSize?: number;
  /**
   * The store's budget of part buffers, shared by every object streaming through it. Default: the
   * objects streaming at the moment plus `queueSize` (an export's three formats: 4 buffers, 20 MiB,
   * where a pool per object held up to 6). Exceeded only when every buffer is filling and no part is
   * uploading, so that an object is never left waiting for an upload that does not exist.
   */
  maxPartBuffers?: number;
}

/** What a store's part-buffer pool holds, for tests and benchmarks. */
export interface PartBufferStats {
  /** Buffers alive in the pool now: filling, uploading or free. */
  allocated: number;
  /** The most that were ever alive at once. */
  peak: number;
  /** Parts (and single-request bodies) being uploaded now. */
  uploading: number;
}

/**
 * S3's minimum part, one part uploading while the next fills. With the store's shared pool an
 * export's three formats hold at most 4 buffers, 20 MiB (lib-storage's defaults held 8 MiB × 3 each,
 * 72 MiB). Measured no slower to s3rver, where the export's CPU, not the upload, sets the pace
 * (bench/exports/export-bench.ts, memory findings).
 */
export const DEFAULT_PART_SIZE = 5 * 1024 * 1024;
export const DEFAULT_QUEUE_SIZE = 1;
const MIN_PART_SIZE = 5 * 1024 * 1024;
const DELETE_BATCH = 1000;

/**
 * The ObjectStore on S3. Streams go up as multipart uploads (PartUploader below) that, on any
 * failure (a part, the body stream), are aborted: S3 only makes an object visible on
 * CompleteMultipartUpload, so nothing partial appears. Parts of an upload whose abort also failed
 * are invisible and expire by the bucket's AbortIncompleteMultipartUpload lifecycle rule. A process
 * about to exit aborts its uploads in flight the same way (abandonUploads, abandonS3Uploads in
 * s3-uploads-in-flight.ts): its writers will not get to.
 *
 * Conditional puts use S3's `If-Match` / `If-None-Match` (a 412 is a PreconditionFailedError).
 */
export class S3ObjectStore implements ObjectStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly partSize: number;
  private readonly queueSize: number;
  private readonly pool: PartBufferPool;
  /** The streams being uploaded now: what abandonUploads stops. */
  private readonly uploads = new Set<PartUploader>();
  /** Set by abandonUploads: the process is exiting, and no upload may begin. */
  private abandoned = false;

  constructor(options: S3ObjectStoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = options.prefix ? `${options.prefix.replace(/^\/+|\/+$/g, '')}/` : '';
    this.partSize = options.partSize ?? DEFAULT_PART_SIZE;
    this.queueSize = options.queueSize ?? DEFAULT_QUEUE_SIZE;
    if (!Number.isInteger(this.partSize) || this.partSize < MIN_PART_SIZE) {
      throw new ConfigError([{ path: 'partSize', message: `must be an integer of at least ${MIN_PART_SIZE} bytes (S3's minimum part)` }]);
    }
    if (!Number.isInteger(this.queueSize) || this.queueSize < 1)
      throw new ConfigError([{ path: 'queueSize', message: 'must be a positive integer' }]);
    const maxBuffers = options.maxPartBuffers;
    if (maxBuffers !== undefined && (!Number.isInteger(maxBuffers) || maxBuffers < 1))
      throw new ConfigError([{ path: 'maxPartBuffers', message: 'must be a positive integer' }]);
    this.pool = new PartBufferPool(this.partSize, (open) => maxBuffers ?? open + this.queueSize);
  }

  /** The part-buffer pool's counters (read-only). */
  get partBuffers(): PartBufferStats {
    return this.pool.stats();
  }

  async putStream(key: string, body: Readable, options: PutOptions = {}): Promise<void> {
    const fullKey = this.fullKey(key);
    // An early body failure must reach Upload's reader, not the process as an uncaught 'error'.
    body.on('error', () => undefined);
    if (this.abandoned || uploadsClosed())
      throw new ObjectStoreError('multipart upload', key, new Error('the process is exiting: upload abandoned'), undefined, this.url(key));
    const upload = new PartUploader(
      this.client,
      { Bucket: this.bucket, Key: fullKey, ContentType: options.contentType },
      this.pool,
      this.queueSize,
    );
    this.uploads.add(upload);
    if (this.uploads.size === 1) trackUploads(this, true);
    try {
      await upload.run(body);
    } catch (error) {
      throw new ObjectStoreError('multipart upload', key, error, undefined, this.url(key));
    } finally {
      this.uploads.delete(upload);
      if (this.uploads.size === 0) trackUploads(this, false);
    }
  }

  /**
   * Stops this store's uploads for good and aborts the multipart uploads they began, for a process
   * about to exit (Ctrl-C, SIGTERM): the parts in flight are cancelled, each begun upload gets its
   * AbortMultipartUpload, and every putStream under way or to come fails. Resolves by `deadlineMs`
   * whatever the network does; an abort without an answer by then counts as failed, and the
   * lifecycle rule is what removes that upload.
   */
  async abandonUploads(deadlineMs = ABANDON_DEADLINE_MS): Promise<AbandonedUploads> {
    this.abandoned = true;
    const uploads = [...this.uploads];
    const deadline = AbortSignal.timeout(deadlineMs);
    let timer: NodeJS.Timeout | undefined;
    // The abort request honours the signal, but a create or a part still waiting on the network may not.
    const expired = new Promise<'failed'>((resolve) => (timer = setTimeout(() => resolve('failed'), deadlineMs).unref()));
    try {
      const outcomes = await Promise.all(uploads.map((upload) => Promise.race([upload.abandon(deadline), expired])));
      return {
        aborted: outcomes.filter((o) => o === 'aborted').length,
        failed: outcomes.filter((o) => o === 'failed').length,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  async putObject(key: string, body: Uint8Array | string, options: PutOptions & PutConditions = {}): Promise<void> {
    const fullKey = this.fullKey(key);
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: fullKey,
          Body: bytes,
          ContentLength: bytes.byteLength,
          ContentType: options.contentType,
          IfMatch: options.ifMatch,
          IfNoneMatch: options.ifNoneMatch,
        }),
      );
    } catch (error) {
      if (status(error) === 412 || (error as { name?: string }).name === 'PreconditionFailed')
        throw new PreconditionFailedError(key, error);
      throw new ObjectStoreError('put', key, error, undefined, this.url(key));
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const fullKey = this.fullKey(key);
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: fullKey }));
      return result.Body ? await result.Body.transformToByteArray() : new Uint8Array();
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw new ObjectStoreError('get', key, error, undefined, this.url(key));
    }
  }

  async head(key: string): Promise<ObjectHead | undefined> {
    const fullKey = this.fullKey(key);
    try {
      const result = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: fullKey }));
      return { etag: result.ETag ?? '', size: result.ContentLength ?? 0, lastModified: result.LastModified?.getTime() ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw new ObjectStoreError('head', key, error, undefined, this.url(key));
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectSummary> {
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.prefix}${prefix}`, ContinuationToken: token }),
        );
      } catch (error) {
        throw new ObjectStoreError('list', prefix, error, undefined, `s3://${this.bucket}/${this.prefix}${prefix}`);
      }
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        yield { key: object.Key.slice(this.prefix.length), size: object.Size ?? 0, lastModified: object.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const objects = batch.map((k) => ({ Key: this.fullKey(k) }));
      let result;
      try {
        result = await this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: objects, Quiet: true },
          }),
        );
      } catch (error) {
        throw new ObjectStoreError('delete', batch[0]!, error);
      }
      const failed = result.Errors?.[0];
      if (failed)
        throw new ObjectStoreError('delete', failed.Key?.slice(this.prefix.length) ?? batch[0]!, new Error(failed.Code ?? 'delete failed'));
    }
  }

  url(key: string): string {
    return `s3://${this.bucket}/${this.fullKey(key)}`;
  }

  private fullKey(key: string): string {
    if (!isSafeKey(key)) throw new ObjectStoreError('resolve', key, new Error('unsafe object key'), 'object_key_invalid');
    return `${this.prefix}${key}`;
  }
}

/**
 * The part buffers of one store, shared by every object streaming through it. Each object fills
 * one buffer at a time; a full buffer goes to UploadPart and comes back here when the part is in,
 * for whichever object needs one next. Per object that was queueSize + 1 buffers (an export's three
 * formats: up to 6 × 5 MiB), most of them idle: the formats fill at very different rates (CSV
 * several times the bytes of gzipped JSONL or Parquet), so one spare shared by all does the work of
 * one per object.
 *
 * Never a deadlock: an object waits for a buffer only while some part is uploading (its return
 * wakes the waiters); when none is, it allocates one beyond the budget, and the surplus is dropped
 * as buffers come back. A buffer whose part failed is dropped, not reused: the SDK may not be done
 * with it.
 */
class PartBufferPool {
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private peak = 0;
  private uploading = 0;
  private open = 0;
  private waiters: (() => void)[] = [];

  constructor(
    readonly partSize: number,
    private readonly budget: (openObjects: number) => number,
  ) {}

  stats(): PartBufferStats {
    return { allocated: this.allocated, peak: this.peak, uploading: this.uploading };
  }

  opened(): void {
    this.open += 1;
  }

  closed(): void {
    this.open -= 1;
    this.trim();
  }

  /** A free buffer, a new one within the budget, or `undefined` when the caller must wait(). */
  tryTake(): Buffer | undefined {
    const reused = this.free.pop();
    if (reused) return reused;
    if (this.allocated >= this.budget(this.open) && this.uploading > 0) return undefined;
    this.allocated += 1;
    this.peak = Math.max(this.peak, this.allocated);
    // Outside Node's shared slab, and never zero-filled: pages an object does not write (the tail
    // of a small object's only buffer) are never resident.
    return Buffer.allocUnsafeSlow(this.partSize);
  }

  /** Resolves at the next change that may let tryTake succeed: an upload ending, a buffer returned. */
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  uploadStarted(): void {
    this.uploading += 1;
  }

  /** The upload that held `buffer` has ended; a failed one's buffer leaves the pool. */
  uploadEnded(buffer: Buffer, reusable: boolean): void {
    this.uploading -= 1;
    if (reusable) this.release(buffer);
    else this.allocated -= 1;
    this.wake();
  }

  /** A buffer the caller filled (partly) and no request holds. */
  release(buffer: Buffer): void {
    this.free.push(buffer);
    this.trim();
    this.wake();
  }

  private trim(): void {
    while (this.allocated > this.budget(this.open) && this.free.length > 0) {
      this.free.pop();
      this.allocated -= 1;
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

/**
 * One streamed object: the body is copied into part buffers of exactly `partSize` bytes from the
 * store's pool, each sent by UploadPart as soon as it is full, at most queueSize + 1 held by this
 * object at once. A body that ends before the first part is full goes up by one PutObject.
 *
 * Why not lib-storage's `Upload`: it gathers the body's chunks and `Buffer.concat`s a fresh buffer
 * for every part, and keeps the rest of the chunk as a view on that buffer. Each part is then new
 * memory that lives until a major GC (it outlives the young generation while it uploads): at 1M
 * transactions to S3 that was 10-15 MiB of peak RSS per object and page faults on every part.
 * Here buffers are allocated once per store and reused: one copy of each byte, the one concat
 * also made.
 *
 * Checksums as lib-storage does them: when the client computes request checksums
 * (`requestChecksumCalculation: 'WHEN_SUPPORTED'`, the SDK's default) the upload is created with
 * CRC32, the SDK adds each part's CRC32 and the completion lists them.
 */
class PartUploader {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly parts: CompletedPart[] = [];
  private partNumber = 0;
  private created: Promise<string> | undefined;
  private failure: { error: unknown } | undefined;
  /** Cancels the part (or whole-object) requests in flight when the upload is abandoned. */
  private readonly cancel = new AbortController();
  private body: Readable | undefined;
  private aborting: Promise<AbortOutcome> | undefined;

  constructor(
    private readonly client: S3Client,
    private readonly params: { Bucket: string; Key: string; ContentType: string | undefined },
    private readonly pool: PartBufferPool,
    private readonly queueSize: number,
  ) {}

  async run(body: Readable): Promise<void> {
    this.body = body;
    const partSize = this.pool.partSize;
    let current: Buffer | undefined;
    let filled = 0;
    this.pool.opened();
    try {
      for await (const chunk of body as AsyncIterable<Uint8Array | string>) {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
        for (let offset = 0; offset < bytes.byteLength;) {
          current ??= await this.takeBuffer();
          const n = Math.min(bytes.byteLength - offset, partSize - filled);
          current.set(bytes.subarray(offset, offset + n), filled);
          filled += n;
          offset += n;
          if (filled === partSize) {
            this.sendPart(current, filled);
            current = undefined;
            filled = 0;
          }
        }
        if (this.failure) throw this.failure.error;
      }
      if (this.partNumber === 0) {
        const buffer = current;
        current = undefined;
        await this.putWhole(buffer, filled);
        return;
      }
      if (filled > 0) {
        this.sendPart(current!, filled);
        current = undefined;
      }
      await this.settled();
      if (this.failure) throw this.failure.error;
      const parts = [...this.parts].sort((a, b) => a.PartNumber! - b.PartNumber!);
      const uploadId = await this.created!;
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.params.Bucket,
          Key: this.params.Key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
    } catch (error) {
      // An abandoned upload's abort is abandon()'s to await, within its deadline; the writer need not wait on the network.
      if (!this.cancel.signal.aborted) await this.abort();
      throw error;
    } finally {
      if (current) this.pool.release(current);
      this.pool.closed();
    }
  }

  /**
   * A buffer to fill: waits while this object holds queueSize + 1 (all uploading) or the pool has
   * none to give; either wait ends when an upload does.
   */
  private async takeBuffer(): Promise<Buffer> {
    for (;;) {
      if (this.inFlight.size <= this.queueSize) {
        const buffer = this.pool.tryTake();
        if (buffer) return buffer;
      }
      await this.pool.wait();
      if (this.failure) throw this.failure.error;
    }
  }

  private async putWhole(buffer: Buffer | undefined, length: number): Promise<void> {
    const bytes = buffer?.subarray(0, length) ?? Buffer.alloc(0);
    if (buffer) this.pool.uploadStarted();
    let sent = false;
    try {
      await this.client.send(new PutObjectCommand({ ...this.params, Body: bytes, ContentLength: bytes.byteLength }), {
        abortSignal: this.cancel.signal,
      });
      sent = true;
    } finally {
      if (buffer) this.pool.uploadEnded(buffer, sent);
    }
  }

  private sendPart(buffer: Buffer, length: number): void {
    const partNumber = ++this.partNumber;
    this.pool.uploadStarted();
    const upload = (async () => {
      // Once abandoned, no multipart upload may begin: abandon()'s abort would never learn its id.
      if (this.cancel.signal.aborted) throw this.failure?.error ?? new Error('upload abandoned');
      const uploadId = await (this.created ??= this.create());
      const result = await this.client.send(
        new UploadPartCommand({
          Bucket: this.params.Bucket,
          Key: this.params.Key,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: buffer.subarray(0, length),
          ContentLength: length,
        }),
        { abortSignal: this.cancel.signal },
      );
      if (!result.ETag) throw new Error(`part ${partNumber} has no ETag in its UploadPart response`);
      this.parts.push({
        PartNumber: partNumber,
        ETag: result.ETag,
        ChecksumCRC32: result.ChecksumCRC32,
        ChecksumCRC32C: result.ChecksumCRC32C,
        ChecksumSHA1: result.ChecksumSHA1,
        ChecksumSHA256: result.ChecksumSHA256,
      });
    })();
    // The SDK has written the whole body once the part's response is in, so the buffer is free.
    const tracked = upload.then(
      () => {
        this.inFlight.delete(tracked);
        this.pool.uploadEnded(buffer, true);
      },
      (error: unknown) => {
        this.failure ??= { error };
        this.inFlight.delete(tracked);
        this.pool.uploadEnded(buffer, false);
      },
    );
    this.inFlight.add(tracked);
  }

  private async create(): Promise<string> {
    const calculation = await this.client.config.requestChecksumCalculation();
    const result = await this.client.send(
      new CreateMultipartUploadCommand({
        ...this.params,
        ...(calculation === 'WHEN_SUPPORTED' ? { ChecksumAlgorithm: 'CRC32' as const } : {}),
      }),
    );
    if (!result.UploadId) throw new Error('CreateMultipartUpload returned no UploadId');
    return result.UploadId;
  }

  private async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /**
   * The process is exiting: fails the upload, cancels its requests in flight and stops its body
   * (which may be waiting on the service for much longer than the process has), then aborts.
   */
  abandon(deadline: AbortSignal): Promise<AbortOutcome> {
    const error = new Error('the process is exiting: upload abandoned');
    this.failure ??= { error };
    this.cancel.abort(error);
    this.body?.destroy(error);
    return this.abort(deadline);
  }

  /**
   * Waits for the parts in flight, then aborts the upload, once however often it is asked (a
   * failure and an abandon may both get here); a failed abort is left to the lifecycle rule.
   */
  private abort(deadline?: AbortSignal): Promise<AbortOutcome> {
    return (this.aborting ??= (async (): Promise<AbortOutcome> => {
      // The parts first: a part still arriving after the abort could be stored all the same.
      await this.settled();
      if (!this.created) return 'none';
      const uploadId = await this.created.catch(() => undefined);
      if (uploadId === undefined) return 'none';
      try {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.params.Bucket, Key: this.params.Key, UploadId: uploadId }), {
          abortSignal: deadline,
        });
        return 'aborted';
      } catch (error) {
        // Already gone (completed or aborted meanwhile): nothing of it is left to bill.
        return (error as { name?: string }).name === 'NoSuchUpload' ? 'aborted' : 'failed';
      }
    })());
  }
}

/** `none`: no multipart upload had begun (nothing sent, or a single PutObject). */
type AbortOutcome = 'aborted' | 'failed' | 'none';

function status(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

/** A missing key: GetObject says NoSuchKey, HeadObject (no body) NotFound. NoSuchBucket stays an error. */
function isNotFound(error: unknown): boolean {
  const name = (error as { name?: string } | undefined)?.name;
  return name === 'NoSuchKey' || name === 'NotFound';
}
