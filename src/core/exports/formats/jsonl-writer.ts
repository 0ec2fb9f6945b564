import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type { TransformOptions } from 'node:stream';
import { createGzip, constants as zlib, type Gzip, type ZlibOptions } from 'node:zlib';
import { ValidationError } from '../../shared/errors';
import type { ObjectSink, WrittenObject } from './object-sink';
import type { JsonText } from '../../accounting-api';
import type { RecordWriter } from './writers';

/**
 * Bytes handed to gzip at once, and gzip's output buffer: each is one job on the thread pool, and
 * every job needs a turn of the event loop to start, which an export busy encoding a page gives
 * rarely. At 64 KiB (and zlib's 16 KiB output chunks) the export spent ~40% of its time waiting
 * for gzip's queue to drain; at 512 KiB a JSONL export takes 10-15% less time (ratio to the bare
 * fetch loop, 1M transactions: 2.15 -> 1.83; 300k, 1 MiB and 4 MiB queues measured no better).
 * Memory: at most ~2 MiB per stream.
 */
const CHUNK_BYTES = 512 * 1024;
const GZIP_CHUNK_BYTES = 512 * 1024;
/** One chunk compressing, one waiting: the next is ready when gzip finishes one. */
const GZIP_QUEUE_BYTES = 1024 * 1024;

/**
 * Raw JSONL, gzipped: one record per line, each the record's JSON text as the API sent it (the
 * client's `PageItem.json`), or, for a source that has no text, its object serialised with
 * `JSON.stringify` (see docs/exports.md for what "as returned" means). Lines are copied into a
 * byte chunk: no string is built per record, and nothing is encoded again.
 *
 * Node's gzip header has no file name and a zero mtime, so equal input gives equal bytes (for a
 * given zlib). The compressed output feeds the sink from 'data' events; when the sink is full the
 * gzip stream is paused, its input side stops draining, and `write` waits: backpressure end to end.
 */
export class JsonlGzipWriter implements RecordWriter {
  private readonly gzip: Gzip;
  private chunk: Buffer<ArrayBuffer> = Buffer.allocUnsafe(CHUNK_BYTES);
  private used = 0;
  /**
   * Chunks gzip has finished with, for reuse: a new 512 KiB buffer per flush lived long enough to
   * be promoted, and its memory then waited for a full collection (more of them, measured).
   */
  private readonly spare: Buffer<ArrayBuffer>[] = [];

  constructor(private readonly sink: ObjectSink) {
    // zlib streams take stream options too (the typings omit them): the input queue lets the next
    // chunk be serialised while the previous one is compressed on the thread pool.
    // Level 1: the export is CPU-bound, and level 6 cost ~10% of a JSONL export's time for files
    // 10-25% smaller (bench/exports/export-bench.ts). A fixed level keeps equal input equal bytes.
    const options: ZlibOptions & TransformOptions = {
      level: zlib.Z_BEST_SPEED,
      chunkSize: GZIP_CHUNK_BYTES,
      writableHighWaterMark: GZIP_QUEUE_BYTES,
    };
    this.gzip = createGzip(options);
    this.gzip.on('data', (chunk: Buffer) => {
      sink.push(chunk);
      const ready = sink.ready();
      if (ready) {
        this.gzip.pause();
        ready.then(
          () => this.gzip.resume(),
          () => undefined,
        );
      }
    });
  }

  write(raw: unknown, _row?: unknown, json?: JsonText): Promise<void> | undefined {
    if (json !== undefined) return this.append(json.bytes, json.start, json.end);
    let line: string | undefined;
    try {
      line = JSON.stringify(raw);
    } catch (error) {
      throw new ValidationError('raw record', [{ path: 'raw', message: 'not serialisable as JSON' }], error);
    }
    if (line === undefined) throw new ValidationError('raw record', [{ path: 'raw', message: 'missing' }]);
    const bytes = Buffer.from(line);
    return this.append(bytes, 0, bytes.length);
  }

  async finish(): Promise<WrittenObject> {
    await this.flush();
    this.gzip.end();
    await this.sink.guard(finished(this.gzip));
    return this.sink.end();
  }

  async abort(reason: unknown): Promise<void> {
    this.gzip.destroy();
    await this.sink.abort(reason);
  }

  /** Adds one line (`bytes` from `start` to `end`); hands the chunk to gzip when it might not fit. */
  private append(bytes: Uint8Array, start: number, end: number): Promise<void> | undefined {
    const length = end - start;
    if (this.used + length + 1 > CHUNK_BYTES) {
      const wait = this.flush();
      if (length + 1 > CHUNK_BYTES) {
        // A line longer than a chunk goes to gzip on its own.
        const line = Buffer.concat([bytes.subarray(start, end), NEWLINE]);
        return Promise.all([wait, this.writeToGzip(line)]).then(() => undefined);
      }
      if (wait) return wait.then(() => this.append(bytes, start, end));
    }
    this.chunk.set(bytes.subarray(start, end), this.used);
    this.chunk[this.used + length] = 0x0a;
    this.used += length + 1;
    return undefined;
  }

  private flush(): Promise<void> | undefined {
    if (this.used === 0) return undefined;
    // gzip reads what it is given until its write callback: only then may the chunk be filled again.
    const chunk = this.chunk;
    const full = chunk.subarray(0, this.used);
    this.chunk = this.spare.pop() ?? Buffer.allocUnsafe(CHUNK_BYTES);
    this.used = 0;
    return this.writeToGzip(full, () => this.spare.push(chunk));
  }

  private writeToGzip(bytes: Buffer, done?: () => void): Promise<void> | undefined {
    const accepted = this.gzip.write(bytes, (error) => {
      if (!error) done?.();
    });
    return accepted ? undefined : this.sink.guard(once(this.gzip, 'drain').then(() => undefined));
  }
}

const NEWLINE = Buffer.from('\n');
