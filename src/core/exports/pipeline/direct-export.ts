import { apiKeyAuth, createAccountingClient } from '../../accounting-api';
import { type Clock, systemClock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import { type Logger, silentLogger } from '../../shared/logger';
import { registerSecret } from '../../shared/redact';
import { exportCompanyPeriod } from './export-company-period';
import { defaultDatasets, defaultFormats } from './export-jobs';
import { EXPORT_PAGE_SIZE, type ExportClientSettings, type ProgressCallback } from './export-sources';
import type { ObjectStore } from '../formats/object-store';
import { parsePeriod } from '../formats/period';
import type { PeriodExportSummary } from '../formats/period-exporter';
import type { TaxReportFieldNames } from '../formats/tax-report-fields';
import type { CsvDialect, DatasetName, ExportFormat } from '../formats/datasets';

export interface DirectExportOptions {
  /** The service's base URL, `/api/v1` included. */
  baseUrl: string;
  /**
   * A company API key. The CLI reads it from ACCTOPS_API_KEY, never from a flag (shell history);
   * it is registered with the redactor before anything is logged.
   */
  apiKey: string;
  /** `YYYY-MM`. */
  month: string;
  store: ObjectStore;
  /** Default: the key's own company, learned from `GET /companies/`. */
  companyId?: string;
  /** Default: all three. */
  formats?: readonly ExportFormat[];
  /** Allow fewer formats than the period's current export has (PeriodExportRequest.replaceFormats). */
  replaceFormats?: boolean;
  /** PeriodExportRequest.csvDialect. */
  csvDialect?: CsvDialect;
  /** The service's names of our tax-report fields, where it spells them otherwise (tax-report-fields.ts). */
  taxReportFields?: TaxReportFieldNames;
  /** Currency of transactions the service sends without one; default DEFAULT_CURRENCY (period-exporter.ts). */
  defaultCurrency?: string;
  /** Default: all three. */
  datasets?: readonly DatasetName[];
  /** Called after every page: records read so far, per dataset. */
  onProgress?: ProgressCallback;
  /** Called once the company is known (named, or learned from the key), so a failure after it can name it. */
  onCompany?: (companyId: string) => void;
  /** acctops's version, recorded in the manifest. */
  toolVersion: string;
  clock?: Clock;
  logger?: Logger;
  client?: ExportClientSettings;
}

/**
 * The CLI's direct mode, without AWS: one company's month from the service, with a company API
 * key, into `store` (a local directory in the CLI), in the same layout and with the same manifest
 * as the pipeline writes to S3. Resolves with the summary (manifest, records and totals per
 * dataset, objects) or rejects with the underlying error (an API error, a storage error, a
 * ValidationError naming the field); the period's previous export is then untouched.
 */
export async function directExport(options: DirectExportOptions): Promise<PeriodExportSummary> {
  registerSecret(options.apiKey);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const period = parsePeriod(options.month, 'month');
  const credentials = apiKeyAuth(options.apiKey, options.companyId ? { companyId: options.companyId } : undefined);
  // Our records hold the id in lower case; the service is sent its own spelling (decision 68).
  const serviceId = options.companyId === undefined ? await keyCompany(options, credentials, clock, logger) : undefined;
  const companyId = (options.companyId ?? serviceId!).toLowerCase();
  options.onCompany?.(companyId);

  const outcome = await exportCompanyPeriod(
    {
      store: options.store,
      clock,
      logger,
      toolVersion: options.toolVersion,
      baseUrl: options.baseUrl,
      client: options.client,
      exporter: { taxReportFields: options.taxReportFields, defaultCurrency: options.defaultCurrency },
    },
    {
      companyId,
      ...(serviceId !== undefined ? { serviceCompanyId: serviceId } : {}),
      period: period.text,
      credentials,
      source: { kind: 'apiKey' },
      trigger: { kind: 'on_demand', requestId: 'cli', via: 'cli' },
      datasets: defaultDatasets(options.datasets),
      formats: defaultFormats(options.formats),
      replaceFormats: options.replaceFormats,
      ...(options.csvDialect !== undefined ? { csvDialect: options.csvDialect } : {}),
      onProgress: options.onProgress,
    },
  );
  if (outcome.status === 'failed') throw outcome.error;
  return outcome.summary;
}

/** An API key belongs to exactly one company (spec §5.1.4): the one `GET /companies/` lists, spelled as listed. */
async function keyCompany(
  options: DirectExportOptions,
  credentials: ReturnType<typeof apiKeyAuth>,
  clock: Clock,
  logger: Logger,
): Promise<string> {
  const { dateTo: _dateTo, ...settings } = options.client ?? {};
  const client = createAccountingClient({
    ...settings,
    baseUrl: options.baseUrl,
    credentials,
    clock,
    logger,
    pageSize: settings.pageSize ?? EXPORT_PAGE_SIZE,
  });
  const companies = await client.companies.list().all();
  if (companies.length !== 1) {
    throw new ValidationError('direct export', [
      { path: 'companyId', message: `the API key sees ${companies.length} companies; name one` },
    ]);
  }
  return companies[0]!.parsed.publicId;
}
