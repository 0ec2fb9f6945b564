// The public surface of the export writing layer; docs/exports.md describes the files it writes.
export { PeriodExporter, DEFAULT_GC_GRACE_MS, type PeriodExporterDeps, type PeriodExportRequest, type PeriodExportSummary, type DatasetSummary } from './formats/period-exporter';
export { collectGarbage, type GarbageOptions } from './formats/publish';
export { type ObjectStore, type ObjectHead, type ObjectSummary, type PutOptions, type PutConditions, isSafeKey } from './formats/object-store';
export { ObjectStoreError, PreconditionFailedError, ConcurrentExportError, ManifestError, PeriodExportError } from './formats/period-errors';
export {
  type Period,
  DEFAULT_TIME_ZONE,
  parsePeriod,
  periodOf,
  daysInMonth,
  firstDay,
  lastDay,
  periodRange,
  previousPeriod,
  periodContaining,
  previousMonth,
  assertTimeZone,
} from './formats/period';
export { EXPORT_ROOT, MANIFEST_NAME, periodPrefix, manifestKey, dataKey, symlinkKey, runIdOf, newRunId, assertCompanyId, assertRunId } from './formats/layout';
export { MANIFEST_SCHEMA_VERSION, manifestSchema, readManifest, type Manifest, type ManifestDataset, type ManifestObject, type ManifestSymlink } from './formats/manifest';
export type { AmountTotal } from './formats/totals';
export { FORMAT_FILES } from './formats/writers';
export {
  DATASETS,
  FORMATS,
  type DatasetName,
  type ExportFormat,
  type ExportSources,
  type ExportItem,
  type ExportTransaction,
  type ExportTaxReport,
  type ExportCategory,
  type TransactionFields,
  type TaxReportFields,
  type CategoryFields,
} from './formats/datasets';
