import { randomBytes } from 'node:crypto';
import { EXPORT_LAYOUT } from '../../../../contract/exports';
import type { Clock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import type { Period } from './period';
import type { DatasetName, ExportFormat } from './datasets';
import { FORMAT_FILES } from './writers';

/**
 * Object keys of an export (Hive style, docs/exports.md; the names are EXPORT_LAYOUT of
 * contract/exports.ts, which the bucket grants and the Glue tables read too):
 *
 *   exports/company=<publicId>/period=<YYYY-MM>/_manifest.json                         the commit point
 *   exports/company=<publicId>/period=<YYYY-MM>/<dataset>/run=<runId>/part-00000.<ext>  data, per run
 *                                                                    part-0000N.<ext>  part N of a split month
 *   exports/company=<publicId>/period=<YYYY-MM>/<dataset>/_symlink/symlink.txt          Athena's view
 */
export const EXPORT_ROOT = EXPORT_LAYOUT.root;
export const MANIFEST_NAME = EXPORT_LAYOUT.manifestName;
const { company: COMPANY_KEY, period: PERIOD_KEY } = EXPORT_LAYOUT.partitions;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const RUN_SEGMENT = /\/run=([^/]+)\//;

/** Company ids become key segments: only the spec's UUID shape is accepted. */
export function assertCompanyId(company: string, field = 'company'): void {
  if (!UUID.test(company))
    throw new ValidationError('export request', [{ path: field, message: 'expected the company publicId (a UUID)' }]);
}

export function assertRunId(runId: string, field = 'runId'): void {
  if (!RUN_ID.test(runId)) {
    throw new ValidationError('export request', [{ path: field, message: 'expected 1-64 letters, digits, "-" or "_"' }]);
  }
}

/** `20261101T090000Z-1a2b3c4d`: sorts by start time; the random part keeps two runs apart. */
export function newRunId(clock: Clock): string {
  const stamp = new Date(clock.now())
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  return `${stamp}-${randomBytes(4).toString('hex')}`;
}

export function periodPrefix(company: string, period: Period): string {
  return `${EXPORT_ROOT}/${COMPANY_KEY}=${company}/${PERIOD_KEY}=${period.text}/`;
}

export function manifestKey(company: string, period: Period): string {
  return `${periodPrefix(company, period)}${MANIFEST_NAME}`;
}

/** `part` numbers the files of a month split by date range (docs/fleet-exports.md); 0 otherwise. */
export function dataKey(company: string, period: Period, dataset: DatasetName, runId: string, format: ExportFormat, part = 0): string {
  return `${periodPrefix(company, period)}${dataset}/run=${runId}/part-${String(part).padStart(5, '0')}.${FORMAT_FILES[format].extension}`;
}

export function symlinkKey(company: string, period: Period, dataset: DatasetName): string {
  return `${periodPrefix(company, period)}${dataset}/${EXPORT_LAYOUT.symlinkFolder}/${EXPORT_LAYOUT.symlinkName}`;
}

/** The run a data key belongs to; undefined for keys outside any `run=` folder. */
export function runIdOf(key: string): string | undefined {
  return RUN_SEGMENT.exec(key)?.[1];
}
