import { CsvWriter } from './csv-writer';
import { JsonlGzipWriter } from './jsonl-writer';
import type { ObjectSink, WrittenObject } from './object-sink';
import { ParquetRecordWriter } from './parquet-writer';
import type { JsonText } from '../../accounting-api';
import type { CellReader, Row, TableColumn } from './dataset-tables';
import type { CsvDialect, ExportFormat } from './datasets';

/**
 * One output file of one dataset. `write` returns a promise only when the caller must wait
 * (backpressure); otherwise it returns undefined, so a million records cost no extra awaits.
 */
export interface RecordWriter {
  /** `json` is the record's JSON text as the API sent it, when the source has it (PageItem.json). */
  write(raw: unknown, row: Row, json?: JsonText): Promise<void> | undefined;
  /** Flushes, completes the object and reports its size and checksum. */
  finish(): Promise<WrittenObject>;
  /** Abandons the object; nothing becomes visible. Safe after a failure. */
  abort(reason: unknown): Promise<void>;
}

export const FORMAT_FILES: Record<ExportFormat, { extension: string; contentType: string }> = {
  jsonl: { extension: 'jsonl.gz', contentType: 'application/gzip' },
  csv: { extension: 'csv', contentType: 'text/csv; charset=utf-8; header=present' },
  parquet: { extension: 'parquet', contentType: 'application/vnd.apache.parquet' },
};

export function createWriter(
  format: ExportFormat,
  sink: ObjectSink,
  columns: readonly TableColumn[],
  options: { parquetRowGroupRows?: number; cells?: CellReader; csvDialect?: CsvDialect } = {},
): RecordWriter {
  switch (format) {
    case 'jsonl':
      return new JsonlGzipWriter(sink);
    case 'csv':
      return new CsvWriter(sink, columns, options.cells, options.csvDialect);
    case 'parquet':
      return new ParquetRecordWriter(sink, columns, options.parquetRowGroupRows, options.cells);
  }
}
