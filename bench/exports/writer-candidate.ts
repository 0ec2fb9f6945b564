/**
 * One Parquet writer candidate, in a fresh process (bundled by writer-comparison.ts): writes the
 * transactions table's columns for `rows` synthetic rows, shaped as the exporter's rows, to a file
 * and prints one JSON line: time, peak RSS, bytes. `none` only generates the rows (the floor).
 *
 * Usage: node writer-candidate.js <none|acctops|hyparquet-writer|parquet-wasm|duckdb> <rows> <outFile>
 */
import { createWriteStream, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { constants as zlib, gzipSync } from 'node:zlib';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import { DECIMAL_SCALE } from '../../src/core/exports/formats/dataset-tables';
import { PARQUET_CREATED_BY, ParquetRecordWriter, parquetSchema } from '../../src/core/exports/formats/parquet-writer';
import { transactionsTable, type Row } from '../../src/core/exports/formats/dataset-tables';

const [candidate = 'none', rowsText = '1000000', outFile = '/dev/null'] = process.argv.slice(2);
const ROWS = Number(rowsText);
const GROUP = 10_000;
const CURRENCIES = ['EUR', 'EUR', 'EUR', 'USD'];

/** Rows as transactionsTable.row makes them (values only; no API parsing: that is equal for all). */
function row(i: number): Row {
  const day = (i % 28) + 1;
  const utc = Date.UTC(2026, 9, day, i % 24, 15) - 2 * 3_600_000;
  const minor = BigInt((i % 2 === 0 ? -1 : 1) * (1000 + ((i * 7919) % 900_000)));
  const d = String(day).padStart(2, '0');
  return {
    public_id: `7e57da7a-0000-4000-8000-${String(i).padStart(12, '0')}`,
    value_date_local: `2026-10-${d}`,
    value_date: `2026-10-${d}T${String(i % 24).padStart(2, '0')}:15:00+02:00`,
    value_date_utc: utc,
    value_date_offset_minutes: 120n,
    amount: minor,
    amount_minor: minor,
    currency: CURRENCIES[i % 4]!,
    cashflow_type: minor < 0n ? 'EXPENSE' : 'INCOME',
    category_id: `0a0a0a0a-0000-4000-8000-${String(i % 12).padStart(12, '0')}`,
    category_name: `Category ${i % 12}`,
    description: `Payment ${i} for invoice ${i % 977}`,
    bank_account_id: 'b0b0b0b0-0000-4000-8000-000000000001',
  };
}

async function main(): Promise<void> {
  // Module loading is measured apart (writer-comparison.ts, module init): load first, then time.
  if (candidate === 'parquet-wasm') await Promise.all([import('apache-arrow'), import('parquet-wasm/node')]);
  if (candidate === 'duckdb') await import('@duckdb/node-api');
  const started = performance.now();
  let bytes = 0;
  switch (candidate) {
    case 'none': {
      for (let i = 0; i < ROWS; i++) bytes += row(i).description!.toString().length > 0 ? 0 : 1;
      break;
    }
    case 'acctops':
      bytes = await withOurEncoders();
      break;
    case 'hyparquet-writer':
      bytes = await withHyparquetWriter();
      break;
    case 'parquet-wasm':
      bytes = await withParquetWasm();
      break;
    case 'duckdb':
      bytes = await withDuckDb();
      break;
    default:
      throw new Error(`unknown candidate ${candidate}`);
  }
  const ms = performance.now() - started;
  process.stdout.write(`${JSON.stringify({ candidate, rows: ROWS, ms, maxRssKiB: peakRssKiB(), bytes })}\n`);
}

/**
 * This process's own peak (VmHWM): maxRSS of a child carries its parent's high-water mark across
 * exec (BENCHMARKS.md, "Memory: what we found", finding 1).
 */
function peakRssKiB(): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (match) return Number(match[1]);
  } catch {
    // No /proc: fall back to maxRSS.
  }
  return process.resourceUsage().maxRSS;
}

/** Our writer (ParquetRecordWriter: our column encoders, hyparquet-writer's footer) into a file sink. */
async function withOurEncoders(): Promise<number> {
  const file = createWriteStream(outFile);
  let bytes = 0;
  const sink = {
    push(chunk: Uint8Array) {
      bytes += chunk.byteLength;
      file.write(chunk);
    },
    ready: () => Promise.resolve(),
    end: async () => {
      await new Promise<void>((resolve) => file.end(resolve));
      return { key: outFile, contentType: '', bytes, sha256: '' };
    },
    abort: () => Promise.resolve(),
  };
  const writer = new ParquetRecordWriter(sink as never, transactionsTable.columns);
  for (let i = 0; i < ROWS; i++) {
    const wait = writer.write(undefined, row(i));
    if (wait) await wait;
  }
  await writer.finish();
  return bytes;
}

/**
 * hyparquet-writer's own incremental `ParquetWriter` on the same schema, as the exporter drove it
 * until 2026-11-26: values buffered per column, row groups of 10,000, GZIP 1 pages, PLAIN without
 * statistics for the unique columns, no statistics where the table says so.
 */
async function withHyparquetWriter(): Promise<number> {
  const file = createWriteStream(outFile);
  let bytes = 0;
  class FileWriter extends ByteWriter {
    flush(): void {
      bytes += this.index;
      file.write(new Uint8Array(this.buffer.slice(0, this.index)));
      this.index = 0;
    }
  }
  const columns = transactionsTable.columns;
  const out = new FileWriter(1 << 20);
  const parquet = new ParquetWriter({
    writer: out,
    schema: parquetSchema(columns),
    codec: 'GZIP',
    compressors: { GZIP: (page: Uint8Array) => gzipSync(page, { level: zlib.Z_BEST_SPEED }) },
    statistics: true,
    createdBy: PARQUET_CREATED_BY,
  });
  const factor = 10n ** BigInt(DECIMAL_SCALE - 2);
  let buffers: unknown[][] = columns.map(() => []);
  const flushGroup = () => {
    const columnData = columns.map((column, i) => ({
      name: column.name,
      data: buffers[i]!,
      ...(column.unique ? { encoding: 'PLAIN' as const, statistics: false } : column.statistics === false ? { statistics: false } : {}),
    }));
    const rowGroupSize = buffers[0]!.length;
    buffers = columns.map(() => []);
    void parquet.write({ columnData, rowGroupSize }); // synchronous: FileWriter.flush returns nothing
  };
  for (let i = 0; i < ROWS; i++) {
    const r = row(i);
    columns.forEach((column, c) => {
      const value = r[column.name] ?? null;
      buffers[c]!.push(
        value === null
          ? null
          : column.kind === 'decimal'
            ? (value as bigint) * factor
            : column.kind === 'date'
              ? Date.parse(value as string) / 86_400_000
              : column.unique
                ? Buffer.from(value as string, 'utf8')
                : value,
      );
    });
    if (buffers[0]!.length === GROUP) flushGroup();
  }
  if (buffers[0]!.length > 0) flushGroup();
  void parquet.finish();
  out.flush();
  await new Promise<void>((resolve) => file.end(resolve));
  return bytes;
}

/**
 * arrow-rs (parquet-wasm) with apache-arrow building the columns. parquet-wasm 0.8.0's
 * `writeParquet` takes a whole table; streaming needs `transformParquetStream` over record
 * batches in WebAssembly memory. Here every 100,000 rows become one table and one Parquet part,
 * which bounds memory the way a streaming writer would (a layout with several parts per run).
 */
async function withParquetWasm(): Promise<number> {
  const arrow = await import('apache-arrow');
  const wasm = await import('parquet-wasm/node');
  const file = createWriteStream(outFile);
  const properties = new wasm.WriterPropertiesBuilder().setCompression(wasm.Compression.SNAPPY).setCreatedBy('acctops bench').build();
  const PART = 100_000;
  let bytes = 0;
  for (let start = 0; start < ROWS; start += PART) {
    const n = Math.min(PART, ROWS - start);
    const cols: Record<string, unknown[]> = {};
    const dates = new Int32Array(n);
    const utc = new BigInt64Array(n);
    const offsets = new BigInt64Array(n);
    const minors = new BigInt64Array(n);
    const decimals = new BigInt64Array(n * 2);
    for (const name of [
      'public_id',
      'value_date',
      'currency',
      'cashflow_type',
      'category_id',
      'category_name',
      'description',
      'bank_account_id',
    ])
      cols[name] = new Array(n);
    for (let j = 0; j < n; j++) {
      const r = row(start + j);
      for (const name in cols) cols[name]![j] = r[name];
      dates[j] = Math.floor(Date.parse(r.value_date_local as string) / 86_400_000);
      utc[j] = BigInt(r.value_date_utc as number);
      offsets[j] = r.value_date_offset_minutes as bigint;
      minors[j] = r.amount_minor as bigint;
      const scaled = (r.amount as bigint) * 100n;
      decimals[2 * j] = scaled;
      decimals[2 * j + 1] = scaled < 0n ? -1n : 0n;
    }
    const utf8 = (name: string) => arrow.vectorFromArray(cols[name]!, new arrow.Utf8());
    const table = new arrow.Table({
      public_id: utf8('public_id'),
      value_date_local: arrow.makeVector(arrow.makeData({ type: new arrow.DateDay(), length: n, data: dates })),
      value_date: utf8('value_date'),
      value_date_utc: arrow.makeVector(arrow.makeData({ type: new arrow.TimestampMillisecond('UTC'), length: n, data: utc })),
      value_date_offset_minutes: arrow.makeVector(offsets),
      amount: arrow.makeVector(arrow.makeData({ type: new arrow.Decimal(4, 18, 128), length: n, data: new Uint32Array(decimals.buffer) })),
      amount_minor: arrow.makeVector(minors),
      currency: utf8('currency'),
      cashflow_type: utf8('cashflow_type'),
      category_id: utf8('category_id'),
      category_name: utf8('category_name'),
      description: utf8('description'),
      bank_account_id: utf8('bank_account_id'),
    });
    const parquet = wasm.writeParquet(wasm.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), properties);
    bytes += parquet.byteLength;
    file.write(parquet);
  }
  await new Promise<void>((resolve) => file.end(resolve));
  return bytes;
}

/** DuckDB's own writer: rows through its appender into an in-memory table, then COPY … TO parquet. */
async function withDuckDb(): Promise<number> {
  const duck = await import('@duckdb/node-api');
  const connection = await (await duck.DuckDBInstance.create(':memory:')).connect();
  await connection.run(`CREATE TABLE t (public_id VARCHAR, value_date_local DATE, value_date VARCHAR, value_date_utc TIMESTAMPTZ,
    value_date_offset_minutes BIGINT, amount DECIMAL(18,4), amount_minor BIGINT, currency VARCHAR, cashflow_type VARCHAR,
    category_id VARCHAR, category_name VARCHAR, description VARCHAR, bank_account_id VARCHAR)`);
  const appender = await connection.createAppender('t');
  for (let i = 0; i < ROWS; i++) {
    const r = row(i);
    appender.appendVarchar(r.public_id as string);
    appender.appendDate(new duck.DuckDBDateValue(Math.floor(Date.parse(r.value_date_local as string) / 86_400_000)));
    appender.appendVarchar(r.value_date as string);
    appender.appendTimestampTZ(new duck.DuckDBTimestampTZValue(BigInt(r.value_date_utc as number) * 1000n));
    appender.appendBigInt(r.value_date_offset_minutes as bigint);
    appender.appendDecimal(new duck.DuckDBDecimalValue((r.amount as bigint) * 100n, 18, 4));
    appender.appendBigInt(r.amount_minor as bigint);
    for (const name of ['currency', 'cashflow_type', 'category_id', 'category_name', 'description', 'bank_account_id'])
      appender.appendVarchar(r[name] as string);
    appender.endRow();
    if (i % GROUP === GROUP - 1) appender.flushSync();
  }
  appender.closeSync();
  await connection.run(`COPY t TO '${outFile.replace(/'/g, "''")}' (FORMAT parquet, COMPRESSION snappy)`);
  const size = await connection.runAndReadAll(
    `SELECT sum(total_compressed_size)::BIGINT AS b FROM parquet_metadata('${outFile.replace(/'/g, "''")}')`,
  );
  return Number(size.getRowObjectsJson()[0]!.b);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${String(error instanceof Error ? error.stack : error)}\n`);
  process.exitCode = 1;
});
