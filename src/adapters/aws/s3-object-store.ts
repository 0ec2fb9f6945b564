import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import { ObjectStoreError, PreconditionFailedError } from '../../core/exports/formats/period-errors';
import { isSafeKey, type ObjectHead, type ObjectStore, type ObjectSummary, type PutConditions, type PutOptions } from '../../core/exports/formats/object-store';

export interface S3ObjectStoreOptions {
  client: S3Client;
  bucket: string;
  /** Prepended to every key (`tenants/a/`); keys seen by callers stay relative to it. */
  prefix?: string;
  /**
   * Multipart part size in bytes (S3's minimum, 5 MiB, up to 5 GiB). Memory per streamed object is
   * about partSize × (queueSize + 1); three formats stream at once.
   */
  partSize?: number;
  /** Parts uploaded concurrently per object. */
  queueSize?: number;
}

/**
 * S3's minimum part, one part uploading while the next fills: 10 MiB per object, 30 MiB for an
 * export's three formats (was 8 MiB × 3 each, 72 MiB). Measured no slower to s3rver, where the
 * export's CPU, not the upload, sets the pace (bench/exports/export-bench.ts, memory findings).
 */
export const DEFAULT_PART_SIZE = 5 * 1024 * 1024;
export const DEFAULT_QUEUE_SIZE = 1;
const DELETE_BATCH = 1000;

/**
 * The ObjectStore on S3. Streams go through lib-storage's multipart `Upload`, which buffers one
 * part at a time per uploader and, on any failure (a part, the body stream), aborts the multipart
 * upload: S3 only makes an object visible on CompleteMultipartUpload, so nothing partial appears.
 * Parts of an upload whose abort also failed are invisible and expire by the bucket's
 * AbortIncompleteMultipartUpload lifecycle rule.
 *
 * Conditional puts use S3's `If-Match` / `If-None-Match` (a 412 is a PreconditionFailedError).
 */
export class S3ObjectStore implements ObjectStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly partSize: number;
  private readonly queueSize: number;

  constructor(options: S3ObjectStoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = options.prefix ? `${options.prefix.replace(/^\/+|\/+$/g, '')}/` : '';
    this.partSize = options.partSize ?? DEFAULT_PART_SIZE;
    this.queueSize = options.queueSize ?? DEFAULT_QUEUE_SIZE;
  }

  async putStream(key: string, body: Readable, options: PutOptions = {}): Promise<void> {
    const fullKey = this.fullKey(key);
    // An early body failure must reach Upload's reader, not the process as an uncaught 'error'.
    body.on('error', () => undefined);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: fullKey, Body: body, ContentType: options.contentType },
      partSize: this.partSize,
      queueSize: this.queueSize,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      throw new ObjectStoreError('multipart upload', key, error, undefined, this.url(key));
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
      if (status(error) === 412 || (error as { name?: string }).name === 'PreconditionFailed') throw new PreconditionFailedError(key, error);
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
      if (failed) throw new ObjectStoreError('delete', failed.Key?.slice(this.prefix.length) ?? batch[0]!, new Error(failed.Code ?? 'delete failed'));
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

function status(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

/** A missing key: GetObject says NoSuchKey, HeadObject (no body) NotFound. NoSuchBucket stays an error. */
function isNotFound(error: unknown): boolean {
  const name = (error as { name?: string } | undefined)?.name;
  return name === 'NoSuchKey' || name === 'NotFound';
}
