import { tableFromIPC, type Table as ArrowTable } from 'apache-arrow';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readParquet } from 'parquet-wasm/node';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import type { Row, TableColumn } from '../../../src/core/exports/formats/dataset-tables';
import { ObjectSink } from '../../../src/core/exports/formats/object-sink';
import { compareUtf8 } from '../../../src/core/exports/formats/parquet-columns';
import { ParquetRecordWriter } from '../../../src/core/exports/formats/parquet-writer';
import { DuckDb } from '../../helpers/duckdb';

/**
 * Our Parquet column encoders (parquet-columns.ts) at their edges, judged by two engines that share
 * no code with them: DuckDB reads the values and the footer (encodings, statistics), arrow-rs
 * (parquet-wasm) the values. The export tests cover the datasets; this covers what their data
 * rarely reaches: a text column that gives up its dictionary part-way through a row group, nulls
 * in every kind, amounts beyond 2^53 and beyond DECIMAL's fast path, text outside the BMP (whose
 * UTF-16 order differs from Parquet's), and a column that is null throughout a group.
 */

const COLUMNS: TableColumn[] = [
  { name: 'id', kind: 'text', required: true, unique: true },
  { name: 'free', kind: 'text', required: false },
  { name: 'label', kind: 'text', required: false },
  { name: 'day', kind: 'date', required: false },
  { name: 'at', kind: 'timestamp', required: false },
  { name: 'amount', kind: 'decimal', required: false, currency: 'currency' },
  { name: 'minor', kind: 'integer', required: false },
  { name: 'currency', kind: 'text', required: false },
  { name: 'gone', kind: 'text', required: false },
];
const GROUP = 1_500;
const ROWS = 4_000;
/** 2^53 + 1: JavaScript numbers cannot hold it, Parquet INT64 can. */
const BEYOND_DOUBLE = 9_007_199_254_740_993n;
/** Text whose UTF-16 order (surrogates before U+E000) is not its UTF-8 order; under 16 bytes, which statistics keep whole. */
const ASTRAL = '\u{1F600} astral';
const PRIVATE_USE = '\uE000 private';
/** Half an emoji, as a service that cuts text at a UTF-16 boundary sends it: UTF-8 writes U+FFFD. */
const LONE_SURROGATE = '\uDE00 cut';

function row(i: number): Row {
  const currency = i % 3 === 0 ? 'JPY' : i % 3 === 1 ? 'EUR' : 'KWD';
  const minor = i === 7 ? BEYOND_DOUBLE : BigInt((i % 2 === 0 ? -1 : 1) * (i * 1_234_567));
  return {
    id: `id-${i}-ü`,
    // Distinct for the first rows of a group (no dictionary), then sometimes repeated.
    free: i % 11 === 0 ? null : i % GROUP < 1_200 ? `free text ${i} ✓` : 'repeated',
    label: i % 5 === 0 ? null : i === 3 ? ASTRAL : i === 4 ? PRIVATE_USE : i === 6 ? LONE_SURROGATE : `label-${i % 300}`,
    day: i % 7 === 0 ? null : `2026-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`,
    at: i % 13 === 0 ? null : Date.UTC(1969, 11, 31) + i * 3_600_001,
    // KWD's 3 digits scale by 10, JPY's 0 by 10,000: row 7 (EUR) is beyond 2^53 before scaling.
    amount: i % 17 === 0 ? null : minor,
    minor: i % 17 === 0 ? null : minor,
    currency,
    gone: null,
  };
}

const SCALE = { JPY: 10_000n, EUR: 100n, KWD: 10n } as const;

describe('Parquet column encoders, read by DuckDB and arrow-rs', () => {
  let dir: string;
  let file: string;
  let duck: DuckDb;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-parquet-encoding-'));
    const writer = new ParquetRecordWriter(
      new ObjectSink(new DirObjectStore(dir), 'edge.parquet', 'application/vnd.apache.parquet'),
      COLUMNS,
      GROUP,
    );
    for (let i = 0; i < ROWS; i++) await writer.write(null, row(i));
    await writer.finish();
    file = join(dir, 'edge.parquet');
    duck = await DuckDb.open();
  });

  afterAll(async () => {
    duck?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const rows = (sql: string) => duck.rows(sql);

  /** What each row should read as, in the text DuckDB prints. */
  function expected(i: number): Record<string, string | null> {
    const r = row(i);
    const amount = r.amount === null ? null : (r.amount as bigint) * SCALE[r.currency as keyof typeof SCALE];
    return {
      id: r.id as string,
      free: r.free as string | null,
      label: r.label === LONE_SURROGATE ? '\uFFFD cut' : (r.label as string | null),
      day: r.day as string | null,
      at: r.at === null ? null : String(r.at),
      amount: amount === null ? null : decimalText(amount),
      minor: r.minor === null ? null : String(r.minor),
      currency: r.currency as string,
      gone: null,
    };
  }

  it('DuckDB reads every value of every row exactly', async () => {
    const got = await rows(
      `SELECT id, free, label, strftime(day, '%Y-%m-%d') AS day, epoch_ms("at")::VARCHAR AS "at", amount::VARCHAR AS amount,
        minor::VARCHAR AS minor, currency, gone FROM read_parquet('${file}')`,
    );
    expect(got).toHaveLength(ROWS);
    for (let i = 0; i < ROWS; i++) expect(got[i]).toEqual(expected(i));
  });

  it('arrow-rs reads the same values, in the same types', async () => {
    const table: ArrowTable = tableFromIPC(readParquet(await readFile(file)).intoIPCStream());
    expect(table.numRows).toBe(ROWS);
    expect(table.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual([
      'id:Utf8',
      'free:Utf8',
      'label:Utf8',
      'day:Date32<DAY>',
      'at:Timestamp<MILLISECOND, UTC>',
      'amount:Decimal[18e+4]',
      'minor:Int64',
      'currency:Utf8',
      'gone:Utf8',
    ]);
    for (const i of [0, 3, 4, 7, 11, 17, 1_199, 1_200, 1_499, 1_500, 2_711, ROWS - 1]) {
      const want = expected(i);
      const got = table.get(i)!.toJSON() as Record<string, unknown>;
      expect([got.id, got.free, got.label, got.currency, got.gone]).toEqual([want.id, want.free, want.label, want.currency, null]);
      expect(got.minor === null ? null : String(got.minor)).toBe(want.minor);
      expect(got.at === null ? null : String(got.at)).toBe(want.at);
      expect(got.day === null ? null : new Date(got.day as number).toISOString().slice(0, 10)).toBe(want.day);
    }
  });

  it('writes a dictionary only where it pays, and statistics in Parquet order, per row group', async () => {
    const meta = await rows(
      `SELECT row_group_id::INT AS rg, path_in_schema AS col, encodings, stats_min_value AS min, stats_max_value AS max,
        stats_null_count::VARCHAR AS nulls FROM parquet_metadata('${file}') ORDER BY rg, column_id`,
    );
    const of = (rg: number, col: string) => meta.find((m) => Number(m.rg) === rg && m.col === col)!;
    expect(meta.filter((m) => m.col === 'id')).toHaveLength(Math.ceil(ROWS / GROUP));
    // Mostly distinct in its first 1,000 values: PLAIN, though later values repeat. `label` has 302
    // entries, 9-bit indexes that cross byte boundaries.
    expect(of(0, 'free').encodings).not.toContain('RLE_DICTIONARY');
    expect(of(0, 'label').encodings).toContain('RLE_DICTIONARY');
    expect(of(0, 'currency').encodings).toContain('RLE_DICTIONARY');
    // U+1F600 sorts after U+E000 in UTF-8, before it in UTF-16.
    expect(of(0, 'label').max).toBe(ASTRAL);
    // A reader that prunes by those statistics still finds the row: a lone surrogate ranked as a
    // pair's half once made the max U+FFFD and hid it.
    expect(await rows(`SELECT count(*)::VARCHAR AS n FROM read_parquet('${file}') WHERE label = '${ASTRAL}'`)).toEqual([{ n: '1' }]);
    expect(compareUtf8(ASTRAL, PRIVATE_USE)).toBeGreaterThan(0);
    expect(ASTRAL < PRIVATE_USE).toBe(true);
    // The unique id column has no statistics; a column null throughout its group counts its nulls.
    expect(of(0, 'id').min).toBeNull();
    expect(of(1, 'gone')).toMatchObject({ min: null, max: null, nulls: String(GROUP) });
    for (let rg = 0; rg * GROUP < ROWS; rg++) {
      const group = Array.from({ length: Math.min(GROUP, ROWS - rg * GROUP) }, (_, k) => row(rg * GROUP + k));
      const minors = group.map((r) => r.minor).filter((m): m is bigint => m !== null);
      expect(of(rg, 'minor').min).toBe(String(minors.reduce((a, b) => (b < a ? b : a))));
      expect(of(rg, 'minor').max).toBe(String(minors.reduce((a, b) => (b > a ? b : a))));
      expect(of(rg, 'minor').nulls).toBe(String(group.length - minors.length));
      const days = group
        .map((r) => r.day)
        .filter((d): d is string => d !== null)
        .sort();
      expect([of(rg, 'day').min, of(rg, 'day').max]).toEqual([days[0], days.at(-1)]);
    }
  });

  it('refuses a required column without a value, naming it', async () => {
    const writer = new ParquetRecordWriter(
      new ObjectSink(new DirObjectStore(dir), 'bad.parquet', 'application/vnd.apache.parquet'),
      COLUMNS,
    );
    expect(() => writer.write(null, { ...row(1), id: null })).toThrow(/required column id/);
    await writer.abort(new Error('test'));
  });
});

/** An unscaled DECIMAL(18,4) as DuckDB prints it. */
function decimalText(unscaled: bigint): string {
  const negative = unscaled < 0n;
  const digits = (negative ? -unscaled : unscaled).toString().padStart(5, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -4)}.${digits.slice(-4)}`;
}
