import { redact, redactString } from './redact';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger whose every line also carries `fields` (a correlation id, a company id). */
  child(fields: Record<string, unknown>): Logger;
}

export type LogSink = (line: string) => void;

/**
 * The keys of a line's level and time. `cli`: `level` in lower case and `time` (the CLI, local
 * mode, tests). `lambda`: Powertools' `level` in capitals and `timestamp`, so that one CloudWatch
 * query or filter (`{ $.level = "ERROR" }`) finds a lean function's lines with every other's.
 */
export type LineKeys = 'cli' | 'lambda';

/**
 * The four levels as one `write`: the JSON logger here and the Lambda logger in functions/_shared
 * differ only in where a line goes, not in how a level reaches it.
 */
export abstract class LevelLogger implements Logger {
  debug(message: string, fields?: Record<string, unknown>): void {
    this.write('debug', message, fields);
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.write('info', message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.write('warn', message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.write('error', message, fields);
  }

  abstract child(fields: Record<string, unknown>): Logger;
  protected abstract write(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
}

/**
 * One JSON object per line, the shape CloudWatch Logs Insights reads. Every line passes through
 * `redact`, so a caller cannot leak a secret by logging the wrong object.
 */
export class JsonLogger extends LevelLogger {
  constructor(
    private readonly sink: LogSink = (line) => process.stdout.write(`${line}\n`),
    protected readonly base: Record<string, unknown> = {},
    private readonly level: LogLevel = (process.env.LOG_LEVEL?.toLowerCase() as LogLevel) in ORDER
      ? (process.env.LOG_LEVEL!.toLowerCase() as LogLevel)
      : 'info',
    private readonly now: () => number = Date.now,
    private readonly keys: LineKeys = 'cli',
  ) {
    super();
  }

  child(fields: Record<string, unknown>): Logger {
    return new JsonLogger(this.sink, { ...this.base, ...fields }, this.level, this.now, this.keys);
  }

  protected write(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    if (ORDER[level] < ORDER[this.level]) return;
    const entry = redact({ ...this.base, ...fields }) as Record<string, unknown>;
    const time = new Date(this.now()).toISOString();
    const head = this.keys === 'lambda' ? { level: level.toUpperCase(), timestamp: time } : { level, time };
    this.sink(JSON.stringify({ ...head, message: redactString(message), ...entry }));
  }
}

/** Collects lines in memory: the canary-secret scans read `lines`. */
export class MemoryLogger extends JsonLogger {
  readonly lines: string[];

  constructor(lines: string[] = [], base: Record<string, unknown> = {}) {
    super((line) => lines.push(line), base, 'debug');
    this.lines = lines;
  }

  override child(fields: Record<string, unknown>): Logger {
    return new MemoryLogger(this.lines, { ...this.base, ...fields });
  }

  entries(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
