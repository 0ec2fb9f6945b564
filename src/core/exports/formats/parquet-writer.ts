import { constants as zlib, gzipSync } from 'node:zlib';
import { ByteWriter, type SchemaElement } from 'hyparquet-writer';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import type { ObjectSink, WrittenObject } from './object-sink';
import { scaleFactor } from './currency';
import { cellReader, DECIMAL_PRECISION, DECIMAL_SCALE, type Cell, type CellReader, type Row, type TableColumn } from './dataset-tables';
import { columnEncoder, type ColumnEncoder, type PageCodec, type RowGroup } from './parquet-columns';
import type { RecordWriter } from './writers';

/**
 * Rows per row group: the unit held in memory (column arrays plus its encoded bytes). At 10,000
 * a transactions group is about 1 MB of Parquet; 20,000 measured ~40 MB more peak RSS for 1M rows.
 */
export const DEFAULT_ROW_GROUP_ROWS = 10_000;
/** Written into the file footer; fixed (not the tool version) so that re-runs keep their bytes. */
export const PARQUET_CREATED_BY = 'acctops exports schema 1';

/**
 * Pages are compressed with GZIP at level 1 by Node's zlib rather than with hyparquet-writer's
 * SNAPPY, which is JavaScript: on 100,000 transactions the writer took 197 instead of 253 ms and
 * the file was 2.2 instead of 3.3 MB. Athena, Spark, pyarrow and DuckDB read GZIP pages. A fixed
 * level keeps equal rows equal bytes (for a given zlib).
 */
export const PARQUET_CODEC = 'GZIP' as const;
const GZIP: PageCodec = { name: PARQUET_CODEC, compress: (page) => gzipSync(page, { level: zlib.Z_BEST_SPEED }) };

/**
 * Parquet through our column encoders (parquet-columns.ts), with hyparquet-writer's thrift code
 * for the footer: each value is encoded as its row arrives, a row group's pages leave for the sink
 * before the next group is read, and only the footer metadata (row group offsets and statistics)
 * grows with the file. hyparquet-writer's `ParquetWriter` is not used: its generic column path
 * stays out of the bundle.
 */
export class ParquetRecordWriter implements RecordWriter {
  private readonly bytes: SinkByteWriter;
  private readonly schema: SchemaElement[];
  private readonly encoders: ColumnEncoder[];
  private readonly rowGroups: RowGroup[] = [];
  private fileRows = 0n;
  private rows = 0;
  /** The row being written, in column order (reused). */
  private readonly cells: Cell[];

  constructor(
    private readonly sink: ObjectSink,
    private readonly columns: readonly TableColumn[],
    private readonly rowGroupRows = DEFAULT_ROW_GROUP_ROWS,
    private readonly readCells: CellReader = cellReader(columns),
  ) {
    this.cells = columns.map(() => null);
    this.bytes = new SinkByteWriter(sink);
    this.bytes.appendBytes(PAR1);
    this.schema = parquetSchema(columns);
    this.encoders = columns.map((column, i) =>
      columnEncoder(column, this.schema[i + 1]!, rowGroupRows, (row) => decimalFactor(row, column)),
    );
  }

  write(_raw: unknown, row: Row): Promise<void> | undefined {
    const cells = this.cells;
    this.readCells(row, cells);
    for (let i = 0; i < cells.length; i++) this.encoders[i]!.push(cells[i]!, row);
    this.rows += 1;
    return this.rows >= this.rowGroupRows ? this.writeRowGroup() : undefined;
  }

  async finish(): Promise<WrittenObject> {
    if (this.rows > 0) await this.writeRowGroup();
    const metadata = {
      version: 2,
      created_by: PARQUET_CREATED_BY,
      schema: this.schema,
      num_rows: this.fileRows,
      row_groups: this.rowGroups,
    };
    // The footer: FileMetaData, its length, PAR1. hyparquet-writer's types want a reader's
    // FileMetaData, whose metadata_length the writer computes itself and must not be given.
    writeMetadata(this.bytes, metadata as Parameters<typeof writeMetadata>[1]);
    this.bytes.appendBytes(PAR1);
    if (this.rowGroups.length === 0) typeEmptyRowGroups(this.bytes.getBytes());
    // Flushed and awaited here: after a failed upload the flush rejects, and the export fails.
    await this.bytes.flush();
    return this.sink.end();
  }

  abort(reason: unknown): Promise<void> {
    return this.sink.abort(reason);
  }

  private writeRowGroup(): Promise<void> | undefined {
    const start = this.bytes.offset;
    const columns = this.encoders.map((encoder) => encoder.encode(this.bytes, GZIP));
    let uncompressed = 0n;
    for (const chunk of columns) uncompressed += chunk.meta_data?.total_uncompressed_size ?? 0n;
    const rows = BigInt(this.rows);
    this.rowGroups.push({
      columns,
      total_byte_size: uncompressed,
      num_rows: rows,
      total_compressed_size: BigInt(this.bytes.offset - start),
    });
    this.fileRows += rows;
    this.rows = 0;
    return this.bytes.flush();
  }
}

/**
 * A ByteWriter that hands its bytes to the sink whenever ParquetWriter flushes (after every row
 * group) and starts over at the beginning of its buffer, so the buffer never exceeds one group.
 */
class SinkByteWriter extends ByteWriter {
  constructor(private readonly sink: ObjectSink) {
    super(1 << 20);
  }

  flush(): Promise<void> | undefined {
    if (this.index > 0) {
      // A copy: the buffer is reused for the next row group while the upload still holds this one.
      this.sink.push(new Uint8Array(this.buffer.slice(0, this.index)));
      this.index = 0;
    }
    return this.sink.ready();
  }
}

/** Thrift compact protocol type ids, in which a Parquet footer is written. */
const THRIFT = { TRUE: 1, FALSE: 2, BYTE: 3, I16: 4, I32: 5, I64: 6, DOUBLE: 7, BINARY: 8, LIST: 9, SET: 10, MAP: 11, STRUCT: 12 } as const;
/** parquet.thrift: `struct FileMetaData { … 4: required list<RowGroup> row_groups … }`. */
const ROW_GROUPS_FIELD = 4;
const PAR1 = new Uint8Array([0x50, 0x41, 0x52, 0x31]);

/**
 * Declares the empty `row_groups` list of a file without rows as a list of structs, in place.
 *
 * hyparquet-writer 0.17.0 takes a thrift list's element type from its first element
 * (`getCompactTypeForList` in src/thrift.js: `elemType ?? BYTE` keeps the 0 of an empty list), so
 * such a footer said `19 00` (a list of type 0) where parquet.thrift has RowGroup structs,
 * `19 0C`. arrow-rs refuses the file ("Expected list element type of Struct but got Byte"); DuckDB
 * and hyparquet read it. The writer has no way to type an empty list, and a row group of zero
 * rows instead is what parquet-mr (Hive's and Spark's reader) refused until PARQUET-2219 ("Illegal
 * row group of 0 rows"), so the header byte is corrected. The field is found by decoding the
 * footer up to it, never by searching for the bytes; the file's size does not change. Any other
 * footer (the list already typed, or not empty) is left as it is.
 */
export function typeEmptyRowGroups(file: Uint8Array): void {
  const end = file.length - 8;
  if (end < 0 || !PAR1.every((b, i) => file[end + 4 + i] === b)) throw new Error('not a Parquet file: no PAR1 at its end');
  const length = new DataView(file.buffer, file.byteOffset + end, 4).getUint32(0, true);
  const footer = new CompactReader(file, end - length, end);
  let fieldId = 0;
  for (;;) {
    const header = footer.byte();
    if (header === 0) throw new Error('Parquet footer without row_groups');
    const type = header & 0x0f;
    fieldId = header >> 4 === 0 ? footer.zigzag() : fieldId + (header >> 4);
    if (fieldId !== ROW_GROUPS_FIELD) {
      footer.skip(type);
      continue;
    }
    if (type !== THRIFT.LIST) throw new Error(`Parquet footer: row_groups has thrift type ${type}, not a list`);
    // A list header of up to 14 elements is one byte, size << 4 | element type: 0x0C is "0 structs".
    const at = footer.pos;
    if (footer.byte() >> 4 === 0) file[at] = THRIFT.STRUCT;
    return;
  }
}

/** Skips through thrift compact protocol values, refusing to read past the end it was given. */
class CompactReader {
  constructor(
    private readonly bytes: Uint8Array,
    public pos: number,
    private readonly end: number,
  ) {
    if (pos < 0) throw new Error('Parquet footer length beyond the file');
  }

  byte(): number {
    if (this.pos >= this.end) throw new Error('Parquet footer ends inside a value');
    return this.bytes[this.pos++]!;
  }

  varint(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const b = this.byte();
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
      if (shift > 63) throw new Error('Parquet footer has a varint longer than 10 bytes');
    }
  }

  zigzag(): number {
    const n = this.varint();
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  skip(type: number): void {
    switch (type) {
      case THRIFT.TRUE:
      case THRIFT.FALSE:
        return; // a struct field's boolean is its type
      case THRIFT.BYTE:
        return this.advance(1);
      case THRIFT.I16:
      case THRIFT.I32:
      case THRIFT.I64:
        return void this.varint();
      case THRIFT.DOUBLE:
        return this.advance(8);
      case THRIFT.BINARY:
        return this.advance(this.varint());
      case THRIFT.LIST:
      case THRIFT.SET: {
        const header = this.byte();
        const size = header >> 4 === 15 ? this.varint() : header >> 4;
        for (let i = 0; i < size; i++) this.skipElement(header & 0x0f);
        return;
      }
      case THRIFT.MAP: {
        const size = this.varint();
        const types = size > 0 ? this.byte() : 0;
        for (let i = 0; i < size; i++) {
          this.skipElement(types >> 4);
          this.skipElement(types & 0x0f);
        }
        return;
      }
      case THRIFT.STRUCT:
        for (;;) {
          const header = this.byte();
          if (header === 0) return;
          if (header >> 4 === 0) this.zigzag();
          this.skip(header & 0x0f);
        }
      default:
        throw new Error(`Parquet footer has an unknown thrift type ${type}`);
    }
  }

  /** In a list, set or map a boolean is a byte of its own. */
  private skipElement(type: number): void {
    if (type === THRIFT.TRUE || type === THRIFT.FALSE) this.advance(1);
    else this.skip(type);
  }

  private advance(n: number): void {
    if (this.pos + n > this.end) throw new Error('Parquet footer ends inside a value');
    this.pos += n;
  }
}

export function parquetSchema(columns: readonly TableColumn[]): SchemaElement[] {
  return [{ name: 'root', num_children: columns.length }, ...columns.map(schemaElement)];
}

function schemaElement(column: TableColumn): SchemaElement {
  const repetition_type = column.required ? 'REQUIRED' : 'OPTIONAL';
  const name = column.name;
  switch (column.kind) {
    case 'text':
      return { name, repetition_type, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
    case 'decimal':
      return {
        name,
        repetition_type,
        type: 'INT64',
        converted_type: 'DECIMAL',
        precision: DECIMAL_PRECISION,
        scale: DECIMAL_SCALE,
        logical_type: { type: 'DECIMAL', precision: DECIMAL_PRECISION, scale: DECIMAL_SCALE },
      };
    case 'integer':
      // converted_type only: hyparquet-writer 0.17.0 writes the INTEGER logical type without its
      // required is_signed field, which DuckDB ("Invalid data") and arrow-rs refuse. INT_64 alone
      // means the same signed 64-bit integer to every reader.
      return { name, repetition_type, type: 'INT64', converted_type: 'INT_64' };
    case 'date':
      return { name, repetition_type, type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } };
    case 'timestamp':
      return {
        name,
        repetition_type,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MILLIS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
      };
  }
}

/** Minor units of the row's currency to the unscaled DECIMAL(…, DECIMAL_SCALE) value (100 for EUR). */
function decimalFactor(row: Row, column: TableColumn): number {
  const currency = column.currency === undefined ? undefined : row[column.currency];
  if (typeof currency !== 'string') return DEFAULT_FACTOR;
  if (currency === last.currency) return last.factor;
  // Keyed by the currency alone (no key string built per row: this runs for every amount).
  let factor = FACTORS.get(currency);
  if (factor === undefined) {
    // The tables reject currencies with more digits than the scale before a row gets here.
    factor = Number(scaleFactor(currency, DECIMAL_SCALE) ?? DEFAULT_FACTOR);
    FACTORS.set(currency, factor);
  }
  last.currency = currency;
  last.factor = factor;
  return factor;
}

const FACTORS = new Map<string, number>();
const DEFAULT_FACTOR = 10 ** (DECIMAL_SCALE - 2);
/** The last currency looked up: most rows of an export are in the company's one currency. */
const last: { currency: string | undefined; factor: number } = { currency: undefined, factor: DEFAULT_FACTOR };
