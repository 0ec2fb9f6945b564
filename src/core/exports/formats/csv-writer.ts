import { formatMinorUnits } from '../../accounting-api';
import { minorUnitDigits } from './currency';
import type { ObjectSink, WrittenObject } from './object-sink';
import { cellReader, type Cell, type CellReader, type ColumnKind, type Row, type TableColumn } from './dataset-tables';
import type { RecordWriter } from './writers';
import type { CsvDialect } from './datasets';

/**
 * CSV for people: RFC 4180 (comma, CRLF, quotes doubled), UTF-8 with a byte order mark so that
 * Excel does not read it as the local code page, exact decimal amounts, and text cells that a
 * spreadsheet would run as a formula defused with a leading apostrophe (OWASP "CSV injection").
 *
 * Excel splits a CSV it opens on the locale's list separator, which is `;` where the decimal
 * separator is a comma (Germany, and our default time zone is Europe/Berlin). So `,` and `;` both
 * count as separators. A cell holding either is quoted, which keeps it whole for a reader that
 * splits on `,`. A reader that splits on `;` does not see those quotes (they are not at the start
 * of its fields), so each part after a `;` or `,` starts a cell of its own there, and each part
 * after a CR or LF starts a row of its own. A formula character at the start of the cell or of any
 * such part, whitespace and quotes before it skipped as spreadsheets skip them, gets an apostrophe
 * in front of it, which makes Excel take the part as text. `Rent;=HYPERLINK(…)` becomes
 * `"Rent;'=HYPERLINK(…)"`, `Invoice\n=1+1` becomes `"Invoice\n'=1+1"`, ` =1+1` becomes `" '=1+1"`,
 * `\r=1+1` becomes `"'\r'=1+1"` (the CR opens the cell and ends a `;` reader's row).
 *
 * The `excel-de` dialect (decision 95) changes only what a German spreadsheet would misread: `;`
 * between fields, a decimal comma in amounts (a `.` there is its thousands separator, so `-1.003`
 * KWD would be read as -1003), and instants as `YYYY-MM-DD HH:MM:SS`, which it takes as a date-time
 * where the ISO `T…Z` form stays text. Text cells are the same in both: quoted when they hold `,`
 * or `;`, and defused for both list separators, since either program may open either file.
 */
export const CSV_BOM = '\uFEFF';
const CHUNK_CHARS = 64 * 1024;
/**
 * Where an apostrophe goes: before `=`, `+`, `-`, `@`, tab or CR (OWASP's list) at the start of the
 * cell or after a `,` or `;`, and before `=`, `+`, `-` or `@` after a CR or LF; whitespace and
 * quotes in between are skipped (lazily: a tab or CR is defused itself, as OWASP has it, rather
 * than skipped for what follows). Not before a tab or CR after a line break: the `;` reader takes a
 * CR there as the end of a row, never as a cell's start, and a description with a blank line
 * (`\r\n\r\n`) would gain an apostrophe for nothing. After a line break only the last one of a run
 * starts a match (the skipped whitespace stops at CR and LF): with `\s`, every LF of a run would
 * scan the rest of it, quadratic in a hostile description.
 */
const FORMULA = /(?:^|[,;])[\s"]*?(?=[=+\-@\t\r])|[\r\n](?:[^\S\r\n]|")*(?=[=+\-@])/g;
/**
 * The one start FORMULA cannot see: a CR that opens the cell. FORMULA defuses that CR with an empty
 * match at 0, and String.replace then resumes at 1, so the CR never starts FORMULA's line-break
 * alternative: `\r=1+1;x` became `'\r=1+1;x`, whose `=1+1` a `;` reader takes as the first cell
 * of a row. Applied to FORMULA's output, only when the cell opens with a CR: a third alternative
 * in FORMULA (a lookbehind for it) made every cell that has a separator about twice as slow.
 */
const AFTER_LEADING_CR = /^'\r(?:[^\S\r\n]|")*(?=[=+\-@])/;
const NEEDS_QUOTES = /[",;\r\n]/;
/**
 * Whether FORMULA or NEEDS_QUOTES can match: most cells match neither, and then this one test
 * decides. Without a quote, separator or line break in the cell, FORMULA can match only at its
 * start, after whitespace alone.
 */
const SPECIAL = /^\s*[=+\-@\t]|[",;\r\n]/;

export class CsvWriter implements RecordWriter {
  private pending: string;
  /** The last row's currency and its fraction digits: a month is nearly always one currency. */
  private lastCurrency: string | undefined;
  private lastDigits = 2;
  private readonly timestamps: TimestampFormatter;
  private readonly separator: string;
  private readonly decimalMark: string;
  /**
   * Per column, the last value written and its cell, for the text and integer columns whose values
   * repeat (currency, cashflow type, category, bank account, offset): a comparison instead of the
   * formula and separator test. Unique columns (ids, the timestamp text) would never hit.
   */
  private readonly repeats: boolean[];
  private readonly lastValues: Cell[];
  private readonly lastCells: string[];
  /** The row being written, in column order (reused). */
  private readonly cells: Cell[];

  constructor(
    private readonly sink: ObjectSink,
    private readonly columns: readonly TableColumn[],
    private readonly readCells: CellReader = cellReader(columns),
    dialect: CsvDialect = 'standard',
  ) {
    const excel = dialect === 'excel-de';
    this.separator = excel ? ';' : ',';
    this.decimalMark = excel ? ',' : '.';
    this.timestamps = new TimestampFormatter(excel ? 'spreadsheet' : 'iso');
    this.cells = columns.map(() => null);
    this.pending = `${CSV_BOM}${columns.map((c) => quote(c.name)).join(this.separator)}\r\n`;
    this.repeats = columns.map((c) => !c.unique && (c.kind === 'text' || c.kind === 'integer'));
    this.lastValues = columns.map(() => null);
    this.lastCells = columns.map(() => '');
  }

  write(_raw: unknown, row: Row): Promise<void> | undefined {
    let line = '';
    const cells = this.cells;
    const separator = this.separator;
    this.readCells(row, cells);
    for (let i = 0; i < this.columns.length; i++) {
      const column = this.columns[i]!;
      if (i > 0) line += separator;
      const value = cells[i]!;
      if (value === null) continue;
      if (column.kind === 'decimal') line += formatMinorUnits(value as bigint, this.digitsOf(row, column), this.decimalMark);
      else if (column.kind === 'timestamp') line += this.timestamps.format(value as number);
      else if (!this.repeats[i]) line += csvCell(column.kind, value);
      else if (value === this.lastValues[i]) line += this.lastCells[i]!;
      else {
        const cell = csvCell(column.kind, value);
        this.lastValues[i] = value;
        this.lastCells[i] = cell;
        line += cell;
      }
    }
    this.pending += `${line}\r\n`;
    return this.pending.length >= CHUNK_CHARS ? this.flush() : undefined;
  }

  async finish(): Promise<WrittenObject> {
    await this.flush();
    return this.sink.end();
  }

  abort(reason: unknown): Promise<void> {
    return this.sink.abort(reason);
  }

  private flush(): Promise<void> | undefined {
    if (this.pending.length > 0) {
      this.sink.push(Buffer.from(this.pending, 'utf8'));
      this.pending = '';
    }
    return this.sink.ready();
  }

  private digitsOf(row: Row, column: TableColumn): number {
    const currency = column.currency === undefined ? undefined : row[column.currency];
    if (typeof currency !== 'string') return 2;
    if (currency !== this.lastCurrency) {
      this.lastDigits = minorUnitDigits(currency);
      this.lastCurrency = currency;
    }
    return this.lastDigits;
  }
}

const DAY_MS = 86_400_000;

/**
 * `new Date(ms).toISOString()` for the timestamps of one export, which arrive roughly in order: the
 * date part is kept while the day stays the same and the time of day is written by hand, without
 * a Date object per cell. Anything outside years 0000-9999 goes to toISOString.
 *
 * The `spreadsheet` style is the same instant in UTC as `2026-09-30 22:30:00`, with `,123` after
 * the seconds only when there are milliseconds: the form a spreadsheet with a German locale takes as
 * a date-time (its decimal mark, no `T`, no `Z`; LibreOffice checked, decision 95); an ISO `T…Z` or
 * a `.123` fraction stays text there.
 */
export class TimestampFormatter {
  private dayStart = Number.NaN;
  private datePart = '';
  private readonly dateEnd: string;

  constructor(private readonly style: 'iso' | 'spreadsheet' = 'iso') {
    this.dateEnd = style === 'iso' ? 'T' : ' ';
  }

  format(ms: number): string {
    let offset = ms - this.dayStart;
    if (!(offset >= 0 && offset < DAY_MS) || !Number.isInteger(ms)) {
      const iso = new Date(ms).toISOString();
      // Years past 9999 or before 0 (`+012345-…`): no spreadsheet reads them as dates either way.
      if (iso.length !== 24) return iso;
      this.dayStart = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
      this.datePart = `${iso.slice(0, 10)}${this.dateEnd}`;
      offset = ms - this.dayStart;
    }
    const millis = offset % 1000;
    const seconds = (offset - millis) / 1000;
    // One template per style: the ISO one is the standard CSV's hot path (npm run bench).
    if (this.style === 'iso')
      return `${this.datePart}${TWO[(seconds / 3600) | 0]}:${TWO[((seconds / 60) | 0) % 60]}:${TWO[seconds % 60]}.${THREE[millis]}Z`;
    const time = `${this.datePart}${TWO[(seconds / 3600) | 0]}:${TWO[((seconds / 60) | 0) % 60]}:${TWO[seconds % 60]}`;
    return millis === 0 ? time : `${time},${THREE[millis]}`;
  }
}

const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const THREE = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** One CSV field. Only `text` cells can carry a formula: generated numbers and dates never do. */
export function csvCell(kind: ColumnKind, value: Cell): string {
  if (value === null) return '';
  switch (kind) {
    case 'decimal':
      return formatMinorUnits(value as bigint);
    case 'integer':
      return (value as bigint).toString();
    case 'timestamp':
      return new Date(value as number).toISOString();
    case 'date':
      return value as string;
    case 'text': {
      const text = value as string;
      if (!SPECIAL.test(text)) return text;
      let defused = text.replace(FORMULA, "$&'");
      if (text.charCodeAt(0) === 13) defused = defused.replace(AFTER_LEADING_CR, "$&'");
      return defused === text ? quote(text) : `"${defused.replace(/"/g, '""')}"`;
    }
  }
}

function quote(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
