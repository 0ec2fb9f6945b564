import { JsonLogger, silentLogger, type Logger } from '../src/core/shared/logger';
import { redactString } from '../src/core/shared/redact';
import { outputOpen } from './interrupt';

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

/**
 * The process's stream, silent once Ctrl-C or SIGTERM is being handled, but for the interrupt's own
 * line (cli/interrupt.ts): what the command would say meanwhile is an effect of the interrupt, not news.
 */
export function gatedStream(stream: NodeJS.WriteStream): CliStream {
  return {
    write: (text: string) => (outputOpen() ? stream.write(text) : true),
    get isTTY() {
      return stream.isTTY;
    },
    get columns() {
      return stream.columns;
    },
  };
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
  if (json) return jsonSafe(JSON.stringify({ error: { ...subject?.fields, ...report, hint: report.hint ?? null } }, jsonValue));
  const hint = report.hint ? ` (${report.hint})` : '';
  return visible(`acctops: error: ${subject ? `${subject.text}: ` : ''}${report.message}${hint}`);
}

/**
 * Characters a terminal acts on instead of showing: C0 and C1 controls and DEL (colours, cursor
 * moves, a window title, a carriage return that hides what came before), the line separators, and
 * the bidirectional formats that reorder what is shown. A username or a service's message can carry
 * any of them (the spec only says a username is a string), so people see them escaped.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/** UNSHOWABLE less C0, which JSON.stringify escapes in strings and uses as whitespace between them. */
const JSON_UNESCAPED = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Human-readable text with every unshowable character as a visible escape (`\x1b`, `\n`, `\u202e`). */
export function visible(text: string): string {
  return text.replace(UNSHOWABLE, (c) => {
    const code = c.charCodeAt(0);
    return NAMED_ESCAPES[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

/**
 * JSON text with the unshowable characters JSON.stringify leaves raw (DEL, C1, the separators and
 * bidirectional formats; it escapes C0 itself) as \u escapes: the same document, safe to cat. They
 * can only occur inside strings, so the replacement keeps the JSON valid and equal.
 */
export function jsonSafe(json: string): string {
  return json.replace(JSON_UNESCAPED, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Columns a terminal gives a text: 2 for East Asian wide and fullwidth characters and emoji shown
 * as emoji, 0 for combining marks and other formats, 1 for the rest. Close enough to align a
 * table's columns without a width library; a sequence joined into one emoji is overcounted.
 */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (/[\p{Mn}\p{Me}\p{Cf}]/u.test(char)) continue;
    width += isWide(code) || /\p{Emoji_Presentation}/u.test(char) ? 2 : 1;
  }
  return width;
}

function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0x303e) ||
    (code >= 0x3041 && code <= 0x33ff) ||
    (code >= 0x3400 && code <= 0x4dbf) ||
    (code >= 0x4e00 && code <= 0x9fff) ||
    (code >= 0xa000 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x20000 && code <= 0x3fffd)
  );
}

function pad(text: string, width: number, align: 'left' | 'right' | undefined): string {
  const fill = ' '.repeat(Math.max(0, width - displayWidth(text)));
  return align === 'right' ? `${fill}${text}` : `${text}${fill}`;
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
    if (!this.json) this.io.stdout.write(`${visible(redactString(text))}\n`);
  }

  /**
   * The command's result: one JSON document with --json, else what `human` prints. Results are
   * built from ids, prefixes and counts; the text pass still removes any registered secret. (The
   * logger's key-based redaction is not used here: it would blank fields such as `refreshed`.)
   */
  result(value: unknown, human: () => void): void {
    if (this.json) this.io.stdout.write(`${jsonSafe(redactString(JSON.stringify(value, jsonValue, 2)))}\n`);
    else human();
  }

  table<R>(rows: readonly R[], columns: readonly Column<R>[], empty = '(none)'): void {
    if (this.json) return;
    if (rows.length === 0) {
      this.line(`  ${empty}`);
      return;
    }
    // Escaped and redacted before measuring: line() would otherwise lengthen a cell after its column's width was set.
    const cells = rows.map((row) => columns.map((c) => visible(redactString(text(c.value(row))))));
    const widths = columns.map((c, i) => Math.max(displayWidth(c.header), ...cells.map((r) => displayWidth(r[i]!))));
    const render = (values: string[]) =>
      values
        .map((v, i) => pad(v, widths[i]!, columns[i]!.align))
        .join('  ')
        .trimEnd();
    this.line(`  ${render(columns.map((c) => c.header))}`);
    this.line(`  ${render(widths.map((w) => '-'.repeat(w)))}`);
    for (const row of cells) this.line(`  ${render(row)}`);
  }

  /** A diagnostic on stderr (shown with --json too, so that scripts keep a clean stdout). */
  note(text: string): void {
    this.io.stderr.write(`${visible(redactString(text))}\n`);
  }

  /** An error that did not stop the command (one company of several): one line on stderr, as runCli prints the one that does. */
  error(report: PrintedError, subject?: ErrorSubject): void {
    this.io.stderr.write(`${redactString(errorLine(report, this.json, subject))}\n`);
  }

  /** JSON log lines of the use cases on stderr with --verbose; nothing otherwise. */
  logger(): Logger {
    return this.verbose
      ? new JsonLogger((line) => this.io.stderr.write(`${jsonSafe(line)}\n`), { component: 'acctops-cli' }, 'debug')
      : silentLogger;
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
    this.stream.write(`\r\x1b[2K${visible(redactString(line))}`);
  }

  finish(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
