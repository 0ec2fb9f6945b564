import { DEFAULT_TIME_ZONE, EXPORT_ROOT, FORMATS, previousMonth, type ExportFormat, type ObjectStore } from '../../src/core/exports';
import { directExport } from '../../src/core/exports/direct-export';
import { systemClock } from '../../src/core/shared/clock';
import type { Logger } from '../../src/core/shared/logger';
import type { CompanyExportRow, ExportReport, ExportRun } from './export';
import { describeError } from '../errors';
import { TOOL_VERSION } from '../version';

/** `acctops export --base-url …` with ACCTOPS_API_KEY: the exports use case's direct mode, one company. */
export async function exportDirectMode(options: {
  apiKey: string;
  baseUrl: string;
  month?: string;
  company?: string;
  store: ObjectStore;
  formats?: readonly ExportFormat[];
  onProgress?: ExportRun['onProgress'];
  logger: Logger;
}): Promise<ExportReport> {
  const month = options.month ?? previousMonth(systemClock.now(), DEFAULT_TIME_ZONE).text;
  const formats = [...(options.formats ?? FORMATS)];
  let row: CompanyExportRow;
  try {
    const summary = await directExport({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      month,
      store: options.store,
      companyId: options.company,
      formats,
      toolVersion: TOOL_VERSION,
      logger: options.logger,
      onProgress: options.onProgress && ((p) => options.onProgress!(options.company ?? 'company', p)),
    });
    row = {
      companyId: summary.company,
      status: 'completed',
      manifestUrl: summary.manifestUrl,
      runId: summary.runId,
      records: Object.fromEntries(Object.entries(summary.manifest.datasets).map(([name, d]) => [name, d.records])),
      totals: summary.manifest.datasets.transactions?.totals ?? [],
    };
  } catch (error) {
    const { code, message, exitCode } = describeError(error);
    row = { companyId: options.company ?? '(the key’s company)', status: 'failed', error: { code, message, exitCode } };
  }
  return { month, mode: 'direct', out: options.store.url(EXPORT_ROOT), formats, companies: [row] };
}
