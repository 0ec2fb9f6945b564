import type { ByteWriter, SchemaElement } from 'hyparquet-writer';
import type { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';
import type { Cell, Row, TableColumn } from './dataset-tables';
import { epochDay } from './offset-timestamp';

/**
 * The column chunks of a row group, encoded for our flat tables without hyparquet-writer's
 * generic path (dremel levels, a dictionary sample, `unconvert`, statistics over JS values): each
 * value goes into a typed array or a byte buffer as the row arrives, and a row group is one
 * dictionary page (when it pays) and one DATA_PAGE_V2 per column. Page headers and the footer are
 * written by hyparquet-writer's thrift code.
 *
 * Why: in the export's profile (100k transactions, all formats, 2026-11-26) the generic path
 * took 21% of the main thread and a tenth of what the collector did; BENCHMARKS.md has the A/B.
 * DuckDB and arrow-rs read every file the suite writes (test/integration/…independent-readers).
 */

/** A row group and a column chunk as hyparquet-writer's footer takes them. */
export type RowGroup = Parameters<typeof writeMetadata>[1]['row_groups'][number];
export type ColumnChunk = RowGroup['columns'][number];
type ChunkStatistics = NonNullable<NonNullable<ColumnChunk['meta_data']>['statistics']>;
type Encoding = NonNullable<ColumnChunk['meta_data']>['encodings'][number];

/** Compresses one page; the codec's name goes into the footer. */
export interface PageCodec {
  readonly name: NonNullable<ColumnChunk['meta_data']>['codec'];
  compress(page: Uint8Array): Uint8Array;
}

/** One column's values of the row group being filled. */
export interface ColumnEncoder {
  push(value: Cell, row: Row): void;
  /** Writes the group's pages to `out` and starts the next group empty. */
  encode(out: ByteWriter, codec: PageCodec): ColumnChunk;
}

export function columnEncoder(
  column: TableColumn,
  element: SchemaElement,
  capacity: number,
  decimalFactor: (row: Row) => number,
): ColumnEncoder {
  switch (column.kind) {
    case 'text':
      return column.unique ? new PlainTextEncoder(column, element, capacity) : new DictionaryTextEncoder(column, element, capacity);
    case 'date':
      return new DateEncoder(column, element, capacity);
    case 'decimal':
      return new Int64Encoder(column, element, capacity, decimalFactor);
    case 'integer':
    case 'timestamp':
      return new Int64Encoder(column, element, capacity, undefined);
  }
}

/**
 * What every column shares: the definition levels of an OPTIONAL column (1 a value, 0 null), the
 * counts, and the writing of a DATA_PAGE_V2 and of the chunk's metadata.
 */
abstract class BaseEncoder implements ColumnEncoder {
  /** Rows pushed in this group. */
  protected rows = 0;
  protected nulls = 0;
  private readonly levels: Uint8Array | undefined;
  /** Min/max statistics are wanted: a column neither unique nor marked `statistics: false`. */
  protected readonly statistics: boolean;

  constructor(
    protected readonly column: TableColumn,
    private readonly element: SchemaElement,
    capacity: number,
  ) {
    this.levels = column.required ? undefined : new Uint8Array(capacity);
    this.statistics = !column.unique && column.statistics !== false;
  }

  push(value: Cell, row: Row): void {
    if (value === null || value === undefined) {
      if (this.levels === undefined) throw new Error(`parquet: the required column ${this.column.name} has no value`);
      this.levels[this.rows++] = 0;
      this.nulls += 1;
      return;
    }
    if (this.levels !== undefined) this.levels[this.rows] = 1;
    this.rows += 1;
    this.pushValue(value, row);
  }

  protected abstract pushValue(value: Exclude<Cell, null>, row: Row): void;

  abstract encode(out: ByteWriter, codec: PageCodec): ColumnChunk;

  /**
   * A data page of this group's values (`values`, already in `encoding`) after its levels, and
   * the chunk's metadata. `dictionary`, when given, is the PLAIN dictionary page written first.
   */
  protected writeChunk(
    out: ByteWriter,
    codec: PageCodec,
    encoding: Encoding,
    values: Uint8Array,
    statistics: Pick<ChunkStatistics, 'min_value' | 'max_value'> | undefined,
    dictionary?: { bytes: Uint8Array; entries: number },
  ): ColumnChunk {
    const start = out.offset;
    let uncompressed = 0;
    let dictionaryPageOffset: bigint | undefined;
    if (dictionary !== undefined) {
      dictionaryPageOffset = BigInt(out.offset);
      const compressed = codec.compress(dictionary.bytes);
      writePageHeader(out, {
        type: 'DICTIONARY_PAGE',
        uncompressed_page_size: dictionary.bytes.length,
        compressed_page_size: compressed.length,
        dictionary_page_header: { num_values: dictionary.entries, encoding: 'PLAIN' },
      });
      uncompressed += out.offset - Number(dictionaryPageOffset) + dictionary.bytes.length;
      out.appendBytes(compressed);
    }

    const dataPageOffset = out.offset;
    const levels = this.levelBytes();
    const compressed = codec.compress(values);
    writePageHeader(out, {
      type: 'DATA_PAGE_V2',
      uncompressed_page_size: levels.length + values.length,
      compressed_page_size: levels.length + compressed.length,
      data_page_header_v2: {
        num_values: this.rows,
        num_nulls: this.nulls,
        num_rows: this.rows,
        encoding,
        definition_levels_byte_length: levels.length,
        repetition_levels_byte_length: 0,
        is_compressed: true,
      },
    });
    uncompressed += out.offset - dataPageOffset + levels.length + values.length;
    out.appendBytes(levels);
    out.appendBytes(compressed);

    const chunk: ColumnChunk = {
      file_offset: BigInt(start),
      meta_data: {
        type: this.element.type!,
        // RLE for the definition levels, as parquet-mr lists it; readers that look for pages
        // not dictionary-encoded (parquet-mr's dictionary filter) ignore the level encodings.
        encodings:
          dictionary === undefined
            ? this.levels
              ? ['PLAIN', 'RLE']
              : ['PLAIN']
            : this.levels
              ? ['PLAIN', 'RLE', 'RLE_DICTIONARY']
              : ['PLAIN', 'RLE_DICTIONARY'],
        path_in_schema: [this.column.name],
        codec: codec.name,
        num_values: BigInt(this.rows),
        total_uncompressed_size: BigInt(uncompressed),
        total_compressed_size: BigInt(out.offset - start),
        data_page_offset: BigInt(dataPageOffset),
        dictionary_page_offset: dictionaryPageOffset,
        statistics: this.statistics ? { ...statistics, null_count: BigInt(this.nulls) } : undefined,
        encoding_stats: [
          ...(dictionary === undefined ? [] : [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }]),
          { page_type: 'DATA_PAGE_V2', encoding, count: 1 },
        ],
      },
    };
    this.rows = 0;
    this.nulls = 0;
    return chunk;
  }

  /** The RLE/bit-packed definition levels of an OPTIONAL column (width 1, no length prefix in V2). */
  private levelBytes(): Uint8Array {
    if (this.levels === undefined) return EMPTY;
    const writer = new GrowingBytes(this.rows / 4 + 16);
    rleBitPacked(writer, this.levels.subarray(0, this.rows), 1);
    return writer.bytes();
  }
}

const EMPTY = new Uint8Array(0);

/**
 * `values` in the RLE/bit-packed hybrid encoding, as two shapes only: one RLE run when every value
 * is the same (a column without nulls, a dictionary of one entry), else one bit-packed run of all
 * of them. hyparquet-writer's encoder looks for runs at every value and appends byte by byte, which
 * measured 2-3% of the export; a general run search buys little here, since pages are compressed.
 */
function rleBitPacked(writer: GrowingBytes, values: Uint8Array | Int32Array, bitWidth: number): void {
  const count = values.length;
  if (count === 0) return;
  const first = values[0]!;
  let same = true;
  for (let i = 1; i < count && same; i++) same = values[i] === first;
  if (same) {
    writer.appendVarInt(count << 1);
    for (let shift = 0; shift < bitWidth; shift += 8) writer.appendUint8((first >>> shift) & 0xff);
    return;
  }
  const groups = Math.ceil(count / 8);
  writer.appendVarInt((groups << 1) | 1);
  const out = writer.reserve(groups * bitWidth);
  const bytes = writer.bytesOf();
  let at = out;
  let buffer = 0;
  let used = 0;
  // Values past `count` in the last group of 8 are zeros, as the format asks.
  for (let i = 0; i < groups * 8; i++) {
    buffer |= (i < count ? values[i]! : 0) << used;
    used += bitWidth;
    while (used >= 8) {
      bytes[at++] = buffer & 0xff;
      buffer >>>= 8;
      used -= 8;
    }
  }
}

/**
 * A text column written PLAIN (`unique`: ids, the original timestamp text): each value's UTF-8
 * bytes go straight into one buffer behind their 4-byte length, no object per value.
 */
class PlainTextEncoder extends BaseEncoder {
  private readonly values = new GrowingBytes(1 << 16);

  protected pushValue(value: Exclude<Cell, null>): void {
    this.values.appendText(value as string);
  }

  encode(out: ByteWriter, codec: PageCodec): ColumnChunk {
    const chunk = this.writeChunk(out, codec, 'PLAIN', this.values.bytes(), undefined);
    this.values.reset();
    return chunk;
  }
}

/**
 * A text column of repeated values (currencies, categories, account ids): a dictionary is built
 * as the rows arrive, and the group is written RLE_DICTIONARY when the dictionary is at most half
 * of the PLAIN bytes (hyparquet-writer's rule), else PLAIN from the same dictionary. A column whose
 * first values are mostly distinct (free text) stops building it and is written PLAIN as it comes:
 * a dictionary there would cost a hash lookup and an entry per value and then not be used.
 */
class DictionaryTextEncoder extends BaseEncoder {
  private readonly ids = new Map<string, number>();
  private readonly entries: string[] = [];
  private readonly entryBytes: number[] = [];
  /** The dictionary index of each non-null value, in row order. */
  private readonly indexes: Int32Array;
  private values = 0;
  /** PLAIN size of the group's values (length prefixes included). */
  private plainBytes = 0;
  /** Set once the group is written PLAIN: its values so far, then each as it arrives. */
  private plain: GrowingBytes | undefined;
  private min: string | undefined;
  private max: string | undefined;
  /**
   * The last value and its index: currency, cashflow type, a category or an account often repeat
   * from one row to the next, and a comparison costs less than hashing the text (the Map lookup was
   * a third of the text encoders' time in a profile, 2026-11-26).
   */
  private lastText: string | undefined;
  private lastId = 0;

  constructor(column: TableColumn, element: SchemaElement, capacity: number) {
    super(column, element, capacity);
    this.indexes = new Int32Array(capacity);
  }

  protected pushValue(value: Exclude<Cell, null>): void {
    const text = value as string;
    if (this.plain !== undefined) {
      this.plain.appendText(text);
      if (this.statistics) this.widen(text);
      return;
    }
    let id: number | undefined;
    if (text === this.lastText) {
      id = this.lastId;
    } else {
      id = this.ids.get(text);
      if (id === undefined) {
        id = this.entries.length;
        this.ids.set(text, id);
        this.entries.push(text);
        this.entryBytes.push(4 + Buffer.byteLength(text, 'utf8'));
      }
      this.lastText = text;
      this.lastId = id;
    }
    this.indexes[this.values++] = id;
    this.plainBytes += this.entryBytes[id]!;
    if (this.values === DISTINCT_SAMPLE && this.entries.length * 2 > DISTINCT_SAMPLE) this.goPlain();
  }

  encode(out: ByteWriter, codec: PageCodec): ColumnChunk {
    let chunk: ColumnChunk;
    if (this.plain !== undefined) {
      const statistics = this.min === undefined ? undefined : { min_value: this.min, max_value: this.max };
      chunk = this.writeChunk(out, codec, 'PLAIN', this.plain.bytes(), statistics);
    } else {
      let dictionaryBytes = 0;
      for (const bytes of this.entryBytes) dictionaryBytes += bytes;
      const statistics = this.statistics ? textRange(this.entries) : undefined;
      if (this.values > 0 && dictionaryBytes * 2 <= this.plainBytes) {
        const dictionary = new GrowingBytes(dictionaryBytes);
        for (const entry of this.entries) dictionary.appendText(entry);
        // The index width of the dictionary's largest index: 0 bits when it has one entry.
        const bitWidth = Math.ceil(Math.log2(this.entries.length));
        const data = new GrowingBytes(this.values * (bitWidth / 8) + 64);
        data.appendUint8(bitWidth);
        rleBitPacked(data, this.indexes.subarray(0, this.values), bitWidth);
        chunk = this.writeChunk(out, codec, 'RLE_DICTIONARY', data.bytes(), statistics, {
          bytes: dictionary.bytes(),
          entries: this.entries.length,
        });
      } else {
        chunk = this.writeChunk(out, codec, 'PLAIN', this.plainFromDictionary().bytes(), statistics);
      }
    }
    this.ids.clear();
    this.lastText = undefined;
    this.entries.length = 0;
    this.entryBytes.length = 0;
    this.values = 0;
    this.plainBytes = 0;
    this.plain = undefined;
    this.min = undefined;
    this.max = undefined;
    return chunk;
  }

  private goPlain(): void {
    if (this.statistics) {
      const range = textRange(this.entries);
      this.min = range?.min_value as string | undefined;
      this.max = range?.max_value as string | undefined;
    }
    this.plain = this.plainFromDictionary();
  }

  private plainFromDictionary(): GrowingBytes {
    const data = new GrowingBytes(this.plainBytes + 1024);
    for (let i = 0; i < this.values; i++) data.appendText(this.entries[this.indexes[i]!]!);
    return data;
  }

  private widen(text: string): void {
    if (this.min === undefined || compareUtf8(text, this.min) < 0) this.min = text;
    if (this.max === undefined || compareUtf8(text, this.max) > 0) this.max = text;
  }
}

/**
 * After this many values a group with more distinct values than half of them is written PLAIN.
 * hyparquet-writer samples 1,000 values for its decision too.
 */
const DISTINCT_SAMPLE = 1000;

/**
 * INT64 columns: `integer` (bigint), `timestamp` (epoch milliseconds, a number) and `decimal` (bigint
 * minor units, scaled by the row's currency). Values are written little-endian as they arrive.
 * A safe integer is split into two 32-bit words, so the common amount allocates no bigint; only a
 * value beyond 2^53 (a DECIMAL(18,4) of more than ~9 * 10^11 units) takes the bigint path.
 */
class Int64Encoder extends BaseEncoder {
  private readonly buffer: Uint8Array;
  private readonly view: DataView;
  private values = 0;
  private min = Infinity;
  private max = -Infinity;
  /** Min and max of the values beyond 2^53, when there were any. */
  private bigMin: bigint | undefined;
  private bigMax: bigint | undefined;

  constructor(
    column: TableColumn,
    element: SchemaElement,
    capacity: number,
    /** `decimal` columns: the factor from the row's minor units to the column's scale. */
    private readonly factor: ((row: Row) => number) | undefined,
  ) {
    super(column, element, capacity);
    this.buffer = new Uint8Array(capacity * 8);
    this.view = new DataView(this.buffer.buffer);
  }

  protected pushValue(value: Exclude<Cell, null>, row: Row): void {
    const at = 8 * this.values++;
    let exact: number;
    if (typeof value === 'number') {
      exact = value;
    } else if (typeof value === 'bigint') {
      const factor = this.factor === undefined ? 1 : this.factor(row);
      exact = Number(value) * factor;
      if (!Number.isSafeInteger(exact)) return this.pushBig(at, factor === 1 ? value : value * BigInt(factor));
    } else {
      throw new Error(`parquet: column ${this.column.name} expects a number, got text`);
    }
    if (!Number.isSafeInteger(exact)) throw new Error(`parquet: column ${this.column.name} has a value that is not an integer`);
    // The low word is the value modulo 2^32 (ToUint32), the high word the quotient, exact below 2^53.
    this.view.setUint32(at, exact >>> 0, true);
    this.view.setInt32(at + 4, Math.floor(exact / 4294967296), true);
    if (exact < this.min) this.min = exact;
    if (exact > this.max) this.max = exact;
  }

  private pushBig(at: number, value: bigint): void {
    if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`parquet: column ${this.column.name} has a value beyond INT64`);
    this.view.setBigInt64(at, value, true);
    if (this.bigMin === undefined || value < this.bigMin) this.bigMin = value;
    if (this.bigMax === undefined || value > this.bigMax) this.bigMax = value;
  }

  encode(out: ByteWriter, codec: PageCodec): ColumnChunk {
    let statistics: Pick<ChunkStatistics, 'min_value' | 'max_value'> | undefined;
    if (this.statistics && this.values > 0) {
      let min = this.min === Infinity ? undefined : BigInt(this.min);
      let max = this.max === -Infinity ? undefined : BigInt(this.max);
      if (this.bigMin !== undefined && (min === undefined || this.bigMin < min)) min = this.bigMin;
      if (this.bigMax !== undefined && (max === undefined || this.bigMax > max)) max = this.bigMax;
      statistics = { min_value: min, max_value: max };
    }
    const chunk = this.writeChunk(out, codec, 'PLAIN', this.buffer.subarray(0, 8 * this.values), statistics);
    this.values = 0;
    this.min = Infinity;
    this.max = -Infinity;
    this.bigMin = undefined;
    this.bigMax = undefined;
    return chunk;
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** DATE: days since 1970-01-01 as INT32. */
class DateEncoder extends BaseEncoder {
  private readonly days: Int32Array;
  private values = 0;
  private min = Infinity;
  private max = -Infinity;

  constructor(column: TableColumn, element: SchemaElement, capacity: number) {
    super(column, element, capacity);
    this.days = new Int32Array(capacity);
  }

  protected pushValue(value: Exclude<Cell, null>): void {
    const day = typeof value === 'string' ? epochDay(value) : undefined;
    if (day === undefined) throw new Error(`parquet: column ${this.column.name} has a value that is not a YYYY-MM-DD date`);
    this.days[this.values++] = day;
    if (day < this.min) this.min = day;
    if (day > this.max) this.max = day;
  }

  encode(out: ByteWriter, codec: PageCodec): ColumnChunk {
    const statistics = this.statistics && this.values > 0 ? { min_value: this.min, max_value: this.max } : undefined;
    // Int32Array is in the platform's byte order; Parquet's is little-endian, as are Lambda's CPUs.
    const bytes = LITTLE_ENDIAN ? new Uint8Array(this.days.buffer, 0, 4 * this.values) : littleEndianInt32(this.days, this.values);
    const chunk = this.writeChunk(out, codec, 'PLAIN', bytes, statistics);
    this.values = 0;
    this.min = Infinity;
    this.max = -Infinity;
    return chunk;
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function littleEndianInt32(values: Int32Array, count: number): Uint8Array {
  const bytes = new Uint8Array(4 * count);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < count; i++) view.setInt32(4 * i, values[i]!, true);
  return bytes;
}

/** The least and greatest of `texts` in UTF-8 byte order (Parquet's order for BYTE_ARRAY statistics). */
function textRange(texts: readonly string[]): Pick<ChunkStatistics, 'min_value' | 'max_value'> | undefined {
  if (texts.length === 0) return undefined;
  let min = texts[0]!;
  let max = min;
  for (let i = 1; i < texts.length; i++) {
    const text = texts[i]!;
    if (compareUtf8(text, min) < 0) min = text;
    if (compareUtf8(text, max) > 0) max = text;
  }
  return { min_value: min, max_value: max };
}

/**
 * Compares strings in the order of the UTF-8 bytes written for them (Parquet's order for BYTE_ARRAY
 * statistics): code point order, where a lone surrogate, which UTF-8 cannot hold, is the U+FFFD
 * that `Buffer#write` and TextEncoder put in its place. JavaScript's `<` compares UTF-16 code units,
 * which puts U+10000 and above (surrogate pairs) before U+E000..U+FFFF.
 */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(j);
    if (x === y && (x < 0xd800 || x > 0xdfff)) {
      i++;
      j++;
      continue;
    }
    const p = writtenCodePoint(a, i);
    const q = writtenCodePoint(b, j);
    if (p !== q) return p - q;
    i += p > 0xffff ? 2 : 1;
    j += q > 0xffff ? 2 : 1;
  }
  return a.length - i - (b.length - j);
}

/** The code point UTF-8 encoding writes for the code unit at `i`: a pair's, U+FFFD for a lone surrogate. */
function writtenCodePoint(text: string, i: number): number {
  const unit = text.charCodeAt(i);
  if (unit < 0xd800 || unit > 0xdfff) return unit;
  if (unit <= 0xdbff && i + 1 < text.length) {
    const low = text.charCodeAt(i + 1);
    if (low >= 0xdc00 && low <= 0xdfff) return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
  }
  return 0xfffd;
}

/** One growing Node buffer, with UTF-8 text written in place (no TextEncoder array per value). */
class GrowingBytes {
  private buffer: Buffer;
  offset = 0;

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(Math.max(64, Math.ceil(size)));
  }

  reset(): void {
    this.offset = 0;
  }

  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.offset);
  }

  appendText(text: string): void {
    this.ensure(4 + 3 * text.length);
    // Buffer#write rather than a loop over the characters, which measured slower even for ASCII.
    const length = this.buffer.write(text, this.offset + 4, 'utf8');
    this.buffer.writeUInt32LE(length, this.offset);
    this.offset += 4 + length;
  }

  appendUint8(value: number): void {
    this.ensure(1);
    this.buffer[this.offset++] = value;
  }

  appendVarInt(value: number): void {
    while ((value & ~0x7f) !== 0) {
      this.appendUint8((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    this.appendUint8(value);
  }

  /** Makes room for `size` bytes the caller writes into `bytesOf()`, and returns where they start. */
  reserve(size: number): number {
    this.ensure(size);
    const at = this.offset;
    this.offset += size;
    return at;
  }

  /** The underlying buffer (valid until the next append). */
  bytesOf(): Buffer {
    return this.buffer;
  }

  appendBytes(value: Uint8Array): void {
    this.ensure(value.length);
    this.buffer.set(value, this.offset);
    this.offset += value.length;
  }

  private ensure(size: number): void {
    if (this.offset + size <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.offset + size));
    this.buffer.copy(grown, 0, 0, this.offset);
    this.buffer = grown;
  }
}
