import { JsonLogger, silentLogger, type Logger } from '../src/core/shared/logger';
import { redactString } from '../src/core/shared/redact';

/** Where the CLI writes: the process's streams, or buffers in tests. */
export interface CliStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface CliIo {
  stdout: CliStream;
  stderr: CliStream;
}

export interface Column<R> {
  header: string;
  value: (row: R) => string | number | bigint | null | undefined;
  align?: 'left' | 'right';
}

/**
 * The --json form of one value (README, "Global options"): one time format, ISO 8601, for every
 * point in time (the reports carry some as epoch milliseconds, in fields named `…At`); an absent
 * value is `null`, never a dropped key; bigints as decimal strings.
 */
export function jsonValue(key: string, value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && /At$/.test(key) && Number.isFinite(value)) return new Date(value).toISOString();
  return value;
}

/** An error as README's "Exit codes" describes it. */
export interface PrintedError {
  exitCode: number;
  code: string;
  message: string;
  hint?: string | null;
}

/** What an error of one part of a command concerns: named in the line, and its fields in the JSON object. */
export interface ErrorSubject {
  /** e.g. `company <id>`. */
  text: string;
  fields: Record<string, unknown>;
}

/**
 * The one line of an error on stderr: `acctops: error: <what happened> (<what to do>)`, or with
 * --json one JSON object on that line. runCli and the per-company failures of a partial run share
 * it, so a script parses one form whatever failed.
 */
export function errorLine(report: PrintedError, json: boolean, subject?: ErrorSubject): string {
  if (json) return JSON.stringify({ error: { ...subject?.fields, ...report, hint: report.hint ?? null } }, jsonValue);
  const hint = report.hint ? ` (${report.hint})` : '';
  return `acctops: error: ${subject ? `${subject.text}: ` : ''}${report.message}${hint}`;
}

/**
 * Everything the CLI prints goes through here, and through the redactor on the way out: results
 * on stdout (a table for people, one JSON document with `--json`), diagnostics on stderr, and a
 * progress bar only when stderr is a terminal. Nothing here knows a secret, and `redactString`
 * removes any registered one (keys, tokens the client saw) that a message might still carry.
 */
export class Output {
  readonly json: boolean;
  readonly verbose: boolean;

  constructor(
    private readonly io: CliIo,
    options: { json: boolean; verbose: boolean },
  ) {
    this.json = options.json;
    this.verbose = options.verbose;
  }

  /** A line for people (not printed with --json). */
  line(text = ''): void {
    if (!this.json) this.io.stdout.write(`${redactString(text)}\n`);
  }

  /**
   * The command's result: one JSON document with --json, else what `human` prints. Results are
   * built from ids, prefixes and counts; the text pass still removes any registered secret. (The
   * logger's key-based redaction is not used here: it would blank fields such as `refreshed`.)
   */
  result(value: unknown, human: () => void): void {
    if (this.json) this.io.stdout.write(`${redactString(JSON.stringify(value, jsonValue, 2))}\n`);
    else human();
  }

  table<R>(rows: readonly R[], columns: readonly Column<R>[], empty = '(none)'): void {
    if (this.json) return;
    if (rows.length === 0) {
      this.line(`  ${empty}`);
      return;
    }
    const cells = rows.map((row) => columns.map((c) => text(c.value(row))));
    const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
    const render = (values: string[]) =>
      values
        .map((v, i) => (columns[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd();
    this.line(`  ${render(columns.map((c) => c.header))}`);
    this.line(`  ${render(widths.map((w) => '-'.repeat(w)))}`);
    for (const row of cells) this.line(`  ${render(row)}`);
  }

  /** A diagnostic on stderr (shown with --json too, so that scripts keep a clean stdout). */
  note(text: string): void {
    this.io.stderr.write(`${redactString(text)}\n`);
  }

  /** An error that did not stop the command (one company of several): one line on stderr, as runCli prints the one that does. */
  error(report: PrintedError, subject?: ErrorSubject): void {
    this.io.stderr.write(`${redactString(errorLine(report, this.json, subject))}\n`);
  }

  /** JSON log lines of the use cases on stderr with --verbose; nothing otherwise. */
  logger(): Logger {
    return this.verbose ? new JsonLogger((line) => this.io.stderr.write(`${line}\n`), { component: 'acctops-cli' }, 'debug') : silentLogger;
  }

  /** A progress bar on stderr when it is a terminal, a no-op when output is piped or captured. */
  progress(label: string): Progress {
    return this.io.stderr.isTTY ? new TtyProgress(this.io.stderr, label) : noProgress;
  }
}

function text(value: string | number | bigint | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value);
}

export interface Progress {
  /** `done` of `total` units (total unknown: a counter). */
  update(done: number, total?: number, detail?: string): void;
  /** Clears the bar. */
  finish(): void;
}

const noProgress: Progress = { update: () => undefined, finish: () => undefined };

class TtyProgress implements Progress {
  private lastDraw = 0;
  private drawn = false;

  constructor(
    private readonly stream: CliStream,
    private readonly label: string,
  ) {}

  update(done: number, total?: number, detail = ''): void {
    const now = Date.now();
    // Redrawing a terminal line per record would cost more than the export; ten frames a second is plenty.
    if (this.drawn && now - this.lastDraw < 100 && (total === undefined || done < total)) return;
    this.lastDraw = now;
    this.drawn = true;
    const width = 24;
    let bar: string;
    if (total !== undefined && total > 0) {
      const ratio = Math.min(1, done / total);
      const filled = Math.round(ratio * width);
      bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${done}/${total}`;
    } else {
      bar = `${done}`;
    }
    const line = `${this.label} ${bar} ${detail}`.slice(0, Math.max(20, (this.stream.columns ?? 80) - 1));
    this.stream.write(`\r\x1b[2K${redactString(line)}`);
  }

  finish(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
