import { directExport, type DirectExportOptions } from '../../src/core/exports/pipeline/direct-export';
import type { PeriodExportSummary } from '../../src/core/exports/formats/period-exporter';
import { ValidationError } from '../../src/core/shared/errors';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';

export type RunDirectExportOptions = Omit<DirectExportOptions, 'store'> &
  ({ outDir: string; store?: undefined } | { store: DirectExportOptions['store']; outDir?: undefined });

/**
 * `acctops export` in direct mode (no AWS): `directExport` into a local directory (`outDir`,
 * written through DirObjectStore: temporary file, fsync, rename) or into any ObjectStore the
 * caller made (`store`, e.g. an S3ObjectStore for `--out s3://…`). The layout and the manifest
 * are the pipeline's.
 */
export function runDirectExport(options: RunDirectExportOptions): Promise<PeriodExportSummary> {
  const { outDir, store, ...rest } = options;
  if ((outDir === undefined) === (store === undefined)) {
    return Promise.reject(new ValidationError('direct export', [{ path: 'outDir', message: 'give exactly one of outDir and store' }]));
  }
  return directExport({ ...rest, store: store ?? new DirObjectStore(outDir!) });
}
