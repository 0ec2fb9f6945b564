import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { ObjectStore } from './object-store';

/** What the manifest records about one data object. */
export interface WrittenObject {
  key: string;
  contentType: string;
  bytes: number;
  /** Lower-case hex SHA-256 of the object's bytes. */
  sha256: string;
}

/**
 * One object being streamed into the store. Writers push bytes; the sink counts and hashes them
 * (so the manifest's checksums come from what was produced, the same for every adapter) and hands
 * them to `store.putStream` through a bounded buffer.
 *
 * Backpressure: `push` never blocks; the writer awaits `ready()` when it returns a promise, which
 * settles when the upload has drained the buffer, or rejects as soon as the upload has failed, so
 * a writer can never wait forever on a dead upload.
 */
export class ObjectSink {
  private readonly body: PassThrough;
  private readonly hash = createHash('sha256');
  private bytes = 0;
  private readonly upload: Promise<void>;
  private readonly failed: Promise<never>;
  private failure: { error: unknown } | undefined;
  private settled = false;

  constructor(
    store: ObjectStore,
    readonly key: string,
    readonly contentType: string,
    highWaterMark = 1 << 20,
  ) {
    this.body = new PassThrough({ highWaterMark });
    // The store owns error handling of its consumer side; this listener only keeps an abort (which
    // destroys the body with an error) from becoming an uncaught 'error' event after the store
    // stopped reading.
    this.body.on('error', () => undefined);
    this.upload = store.putStream(key, this.body, { contentType });
    this.failed = this.upload.then(
      () => new Promise<never>(() => undefined),
      (error: unknown) => {
        this.failure = { error };
        throw error;
      },
    );
    this.failed.catch(() => undefined);
  }

  /** Queues bytes. After a failed upload this drops them: the failure surfaces via `ready`/`end`. */
  push(chunk: Uint8Array): void {
    if (this.failure || chunk.byteLength === 0) return;
    this.hash.update(chunk);
    this.bytes += chunk.byteLength;
    this.body.write(chunk);
  }

  /** Undefined when more may be pushed at once; otherwise a promise for the buffer to drain. */
  ready(): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure.error);
    if (!this.body.writableNeedDrain) return undefined;
    return this.guard(once(this.body, 'drain').then(() => undefined));
  }

  /** `promise`, or this upload's failure if that comes first (a writer's own wait must not hang). */
  guard<T>(promise: Promise<T>): Promise<T> {
    return Promise.race([promise, this.failed]);
  }

  /** Ends the stream and waits until the object is complete and visible in the store. */
  async end(): Promise<WrittenObject> {
    this.settled = true;
    this.body.end();
    await this.upload;
    return { key: this.key, contentType: this.contentType, bytes: this.bytes, sha256: this.hash.digest('hex') };
  }

  /** Abandons the object: the store aborts the upload and leaves nothing at the key. */
  async abort(reason: unknown): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    this.body.destroy(reason instanceof Error ? reason : new Error('export aborted'));
    await this.upload.catch(() => undefined);
  }
}
