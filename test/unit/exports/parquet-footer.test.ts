import { tableFromIPC, type Table as ArrowTable } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import { readParquet } from 'parquet-wasm/node';
import { typeEmptyRowGroups } from '../../../src/core/exports/formats/parquet-writer';

/**
 * The footer correction for files without rows, judged by arrow-rs (parquet-wasm), which refuses
 * hyparquet-writer's own footer for them. The exporter's empty datasets are read by DuckDB and
 * arrow-rs in test/integration/exports/independent-readers.test.ts.
 */

/** A name whose UTF-8 bytes are the uncorrected header `19 00`, ahead of row_groups in the footer. */
const DECOY = 'a\u0019\u0000b';

function parquetFile(rows: number[], schema: SchemaElement[] = [{ name: 'root', num_children: 1 }, idColumn('id')]): Uint8Array {
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({ writer, schema, createdBy: 'test' });
  if (rows.length > 0) void parquet.write({ columnData: [{ name: schema[1]!.name, data: rows }] });
  void parquet.finish();
  return new Uint8Array(writer.getBytes());
}

/** The file as arrow-rs reads it. */
function arrowRs(file: Uint8Array): ArrowTable {
  return tableFromIPC(readParquet(file).intoIPCStream());
}

function idColumn(name: string): SchemaElement {
  return { name, type: 'INT32', repetition_type: 'REQUIRED' };
}

function changedBytes(before: Uint8Array, after: Uint8Array): [number, number, number][] {
  expect(after.length).toBe(before.length);
  return [...before].flatMap((b, i) => (after[i] === b ? [] : [[i, b, after[i]!] as [number, number, number]]));
}

describe('typeEmptyRowGroups', () => {
  it("hyparquet-writer 0.17.0's footer without rows is still refused by arrow-rs (when this fails, the correction can go)", () => {
    expect(() => readParquet(parquetFile([]))).toThrow(/Expected list element type of Struct but got Byte/);
  });

  it('changes exactly the header of the empty row_groups list to a list of structs, which arrow-rs opens', () => {
    const before = parquetFile([]);
    const after = before.slice();
    typeEmptyRowGroups(after);
    const changed = changedBytes(before, after);
    expect(changed.map(([, from, to]) => [from, to])).toEqual([[0x00, 0x0c]]);
    // The byte before it is the field header of FileMetaData field 4 (delta 1 from num_rows, LIST).
    expect(after[changed[0]![0] - 1]).toBe(0x19);
    expect(arrowRs(after).numRows).toBe(0);
    expect(parquetMetadata(after.buffer).row_groups).toEqual([]);
  });

  it('finds the field by decoding: the same bytes inside a column name earlier in the footer are left alone', () => {
    const before = parquetFile([], [{ name: 'root', num_children: 1 }, idColumn(DECOY)]);
    const decoy = Buffer.from(before).indexOf(Buffer.from(DECOY, 'utf8'));
    expect(decoy).toBeGreaterThan(0);
    const after = before.slice();
    typeEmptyRowGroups(after);
    const [[at]] = changedBytes(before, after) as [[number, number, number]];
    expect(at).toBeGreaterThan(decoy + DECOY.length);
    expect(arrowRs(after).schema.fields[0]?.name).toBe(DECOY);
  });

  it('leaves a file with rows as it is', () => {
    const before = parquetFile([1, 2, 3]);
    const after = before.slice();
    typeEmptyRowGroups(after);
    expect(changedBytes(before, after)).toEqual([]);
    expect(arrowRs(after).numRows).toBe(3);
  });

  it('refuses what it cannot decode instead of changing a byte', () => {
    const file = parquetFile([]);
    const notParquet = file.slice(0, file.length - 1);
    expect(() => typeEmptyRowGroups(notParquet)).toThrow(/PAR1/);
    // A footer length pointing before the start of the buffer.
    const tooLong = file.slice();
    new DataView(tooLong.buffer).setUint32(tooLong.length - 8, tooLong.length, true);
    expect(() => typeEmptyRowGroups(tooLong)).toThrow(/beyond the file/);
    // The footer's first bytes alone: decoding runs out inside the schema, before row_groups.
    const length = new DataView(file.buffer).getUint32(file.length - 8, true);
    const metadata = file.subarray(file.length - 8 - length, file.length - 8 - length + 10);
    const cut = new Uint8Array([...file.subarray(0, 4), ...metadata, 10, 0, 0, 0, ...file.subarray(file.length - 4)]);
    const untouched = cut.slice();
    expect(() => typeEmptyRowGroups(cut)).toThrow(/ends inside a value/);
    expect(changedBytes(untouched, cut)).toEqual([]);
  });
});
