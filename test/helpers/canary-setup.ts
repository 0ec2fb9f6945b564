import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { JsonLogger } from '../../src/core/shared/logger';
import { CanaryLeakError, recordScan, takeRecordedHits, textOf } from './canary';

/**
 * The global canary hook (jest `setupFilesAfterEnv`, so it runs in every test file's own module
 * registry): everything a test file writes to stdout or stderr, logs through `console`, writes
 * through a JsonLogger or MemoryLogger, or publishes to a MemoryEventPublisher is scanned by
 * `test/helpers/canary.ts`. A hit fails the test during which it happened (or the file, when it
 * happened in a beforeAll/afterAll). The failure names the kind and place, never the value.
 *
 * A test that replaces `process.stdout.write` with its own spy sees those writes instead of this
 * hook; such tests scan what they captured themselves.
 */

export const RECORDER = Symbol.for('acctops.canaryRecorder');
type Writable = { write: (...args: never[]) => unknown; [RECORDER]?: (text: string) => void };

/**
 * Scans every write of `stream`. The process's streams are shared by the test files a worker runs
 * one after another: they are wrapped once, and each file points the wrapper at its own record.
 */
export function hookStream(stream: Writable, where: string): void {
  const alreadyWrapped = stream[RECORDER] !== undefined;
  stream[RECORDER] = (text) => recordScan(text, where);
  if (alreadyWrapped) return;
  const original = (stream.write as (...args: unknown[]) => unknown).bind(stream);
  const patched = (chunk: unknown, ...rest: unknown[]) => {
    stream[RECORDER]?.(typeof chunk === 'string' ? chunk : textOf(chunk));
    return original(chunk, ...rest);
  };
  stream.write = patched as Writable['write'];
}

/** Scans every call of `target`'s logging methods (jest gives each test file its own console). */
export function hookConsole(target: Pick<Console, 'log' | 'info' | 'warn' | 'error' | 'debug'>): void {
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = target[method].bind(target);
    target[method] = (...args: unknown[]) => {
      recordScan(args.map((a) => textOf(a)).join(' '), `console.${method}`);
      original(...args);
    };
  }
}

hookStream(process.stdout, 'stdout');
hookStream(process.stderr, 'stderr');
hookConsole(console);

/**
 * Every JsonLogger (MemoryLogger included) writes each line through its private `sink`; the first
 * write of each logger wraps that sink with the scan. Private in TypeScript only, so reachable here.
 */
const SCANNED = Symbol('canaryScannedSink');
type LoggerInternals = { sink: (line: string) => void; [SCANNED]?: true; write(...args: unknown[]): void };
const loggerProto = JsonLogger.prototype as unknown as LoggerInternals;
const originalWrite = loggerProto.write;
loggerProto.write = function (this: LoggerInternals, ...args: unknown[]) {
  if (!this[SCANNED]) {
    const sink = this.sink;
    this.sink = (line: string) => {
      recordScan(line, 'log line');
      sink(line);
    };
    this[SCANNED] = true;
  }
  originalWrite.apply(this, args);
};

const publisherProto = MemoryEventPublisher.prototype;
const originalPublish = publisherProto.publish;
publisherProto.publish = function (this: MemoryEventPublisher, ...args: Parameters<MemoryEventPublisher['publish']>) {
  recordScan(textOf(args[0]), 'published event');
  return originalPublish.apply(this, args);
};

function failOnHits(): void {
  const hits = takeRecordedHits();
  if (hits.length > 0) throw new CanaryLeakError(hits);
}

afterEach(failOnHits);
afterAll(failOnHits);
