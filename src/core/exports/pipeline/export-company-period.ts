import { ALARMED_METRICS } from '../../../../contract/metrics';
import {
  AccountingApiError,
  AuthenticationError,
  CompanyAccessRemovedError,
  ConnectionError,
  CreatorDisabledError,
  RateLimitError,
  ResponseValidationError,
  ServerError,
  TimeoutError,
  TokenRevokedError,
  type CredentialProvider,
} from '../../accounting-api';
import { CompanyKeyNotFoundError } from '../../api-keys';
import type { EventPublisher } from '../../ports/events';
import type { Clock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { type Metrics, noMetrics } from '../../shared/metrics';
import { ManifestError, PeriodExportError } from '../formats/period-errors';
import type { CompanyRemovedAt } from '../../companies/company-removal';
import type { CompanyCurrency } from './company-currency';
import { countPublished, exportCompleted, exportFailed, writtenCounts } from './export-events';
import type { DateToFinding } from './date-to';
import { manifestTriggerOf, type ExportSource, type ExportTrigger } from './export-jobs';
import { createExportClient, exportSources, type ExportClientSettings, type ProgressCallback } from './export-sources';
import { serviceCompanyId } from './service-company-id';
import { assertCompanyId, manifestKey } from '../formats/layout';
import type { ObjectStore } from '../formats/object-store';
import { parsePeriod } from '../formats/period';
import { PeriodExporter, type PeriodExporterDeps, type PeriodExportSummary } from '../formats/period-exporter';
import {
  CompanyEntryDamagedExportError,
  CompanyRemovedExportError,
  ExportCountMismatchError,
  UserTokenUnavailableError,
} from './pipeline-errors';
import { DATASETS, type CsvDialect, type DatasetName, type ExportFormat } from '../formats/datasets';

export interface ExportCompanyPeriodDeps {
  store: ObjectStore;
  /** Where ExportCompleted / ExportFailed go; omitted in the CLI's direct mode. */
  events?: EventPublisher;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  /** acctops's version, recorded in the manifest. */
  toolVersion: string;
  /** The service's base URL (with `/api/v1`); recorded in the manifest without user info or query. */
  baseUrl: string;
  client?: ExportClientSettings;
  /** `defaultCurrency` here is fixed for every company (the CLI's --default-currency) and wins over `companyCurrency`. */
  exporter?: Pick<PeriodExporterDeps, 'runIds' | 'defaultCurrency' | 'gcGraceMs' | 'parquetRowGroupRows' | 'taxReportFields'>;
  /**
   * The company's own currency of transactions sent without one (its registry entry), asked when
   * the export starts unless `exporter.defaultCurrency` is set; absent, or no answer: EUR.
   */
  companyCurrency?: CompanyCurrency;
  /**
   * The company registry's `removedAt` of the company (registryRemovedAt; the deployed worker's
   * registryExportStanding also refuses an entry that fails its schema, CompanyEntryDamagedExportError),
   * asked before the service is: a removed company fails the export for good
   * (CompanyRemovedExportError). Absent: not asked.
   */
  companyRemovedAt?: CompanyRemovedAt;
}

export interface ExportCompanyPeriodRequest {
  /** The company's publicId, in lower case: the object keys, the events and the logs use it (decision 68). */
  companyId: string;
  /**
   * The same id as the service spells it (`GET /companies/`), sent in paths and `X-Company-Id`.
   * Absent: read from `GET /companies/` before the export (serviceCompanyId).
   */
  serviceCompanyId?: string;
  /** `YYYY-MM`. */
  period: string;
  /** The company's API key (CompanyApiKeys.credentials) or a user's token (userTokenCredentials). */
  credentials: CredentialProvider;
  /** Which of the two `credentials` is, for the result event. */
  source: ExportSource;
  trigger: ExportTrigger;
  /** Default: all three. */
  datasets?: readonly DatasetName[];
  formats: readonly ExportFormat[];
  /** Allow fewer formats than the period's current export has (PeriodExportRequest.replaceFormats). */
  replaceFormats?: boolean;
  /** PeriodExportRequest.csvDialect: the CLI's local exports only; the deployed functions never set it (decision 95). */
  csvDialect?: CsvDialect;
  onProgress?: ProgressCallback;
  /**
   * A retryable failure publishes ExportFailed only on the last attempt; earlier ones are left to
   * the queue's redelivery. A failure that cannot heal publishes at once.
   * @default { number: 1, last: true }
   */
  attempt?: { number: number; last: boolean };
}

export type ExportOutcome =
  | { status: 'completed'; summary: PeriodExportSummary }
  | {
      status: 'failed';
      /** The underlying error (the cause of PeriodExportError when there is one). */
      error: unknown;
      retryable: boolean;
      /** True when no further attempt will follow: ExportFailed was published. */
      final: boolean;
    };

/**
 * Exports one company's month from the service: the three sources of `exportSources` through the
 * PeriodExporter (atomic, exact), then the result event. The outcome is returned, not thrown: a
 * failure leaves the period's previous export intact, and the caller decides about retries with
 * `retryable`. Only a failure to publish the result event is thrown (EventPublishError), so that
 * the queue repeats the job (a re-run writes the same bytes).
 */
export async function exportCompanyPeriod(deps: ExportCompanyPeriodDeps, request: ExportCompanyPeriodRequest): Promise<ExportOutcome> {
  const period = parsePeriod(request.period);
  assertCompanyId(request.companyId, 'companyId');
  const { clock, store } = deps;
  const metrics = deps.metrics ?? noMetrics;
  const attempt = request.attempt ?? { number: 1, last: true };
  const logger = deps.logger.child({
    companyId: request.companyId,
    period: period.text,
    source: request.source.kind,
    ...(request.source.kind === 'user' ? { externalId: request.source.externalId } : {}),
    trigger: request.trigger.kind,
    attempt: attempt.number,
  });
  const formats = [...request.formats];

  let summary: PeriodExportSummary;
  let dateTo: DateToFinding | undefined;
  try {
    // In the try, as the currency below: an unreadable registry fails this attempt, and is retried;
    // an entry that fails its schema fails the export for good, before the service is asked.
    const removedAt = await deps.companyRemovedAt?.(request.companyId);
    if (removedAt !== undefined) throw new CompanyRemovedExportError(request.companyId, removedAt);
    // In the try: a registry that cannot be read fails this export like the service would (retried
    // when it may heal; a malformed currency is a ValidationError, final at once). Before
    // the service's first request, so that an attempt the registry fails asks the service nothing.
    const defaultCurrency = deps.exporter?.defaultCurrency ?? (await deps.companyCurrency?.(request.companyId));
    const wireId =
      request.serviceCompanyId ??
      (await serviceCompanyId(
        { baseUrl: deps.baseUrl, client: deps.client, credentials: request.credentials, clock, logger },
        request.companyId,
      ));
    const client = createExportClient({
      ...deps.client,
      baseUrl: deps.baseUrl,
      credentials: request.credentials,
      companyId: wireId,
      clock,
      logger,
    });
    summary = await new PeriodExporter({
      store,
      clock,
      logger,
      toolVersion: deps.toolVersion,
      ...deps.exporter,
      ...(defaultCurrency !== undefined ? { defaultCurrency } : {}),
    }).run({
      company: request.companyId,
      period,
      sources: exportSources(client, wireId, period, {
        onProgress: request.onProgress,
        dateTo: deps.client?.dateTo,
        logger,
        onDateTo: (finding) => (dateTo = finding),
      }),
      datasets: request.datasets,
      formats,
      replaceFormats: request.replaceFormats,
      ...(request.csvDialect !== undefined ? { csvDialect: request.csvDialect } : {}),
      sourceBaseUrl: deps.baseUrl,
      trigger: manifestTriggerOf(request.trigger),
    });
  } catch (thrown) {
    const error = thrown instanceof PeriodExportError ? thrown.cause : thrown;
    const retryable = isRetryableExportFailure(error);
    const final = !retryable || attempt.last;
    metrics.add(final ? ALARMED_METRICS.exportFailed.name : 'ExportAttemptFailed', 1);
    // A retry is an expected outcome (a 429, a 5xx, a throttled table): ERROR is for the failure that stays.
    if (final) logger.error('export failed', { error, retryable });
    else logger.warn('export attempt failed; the queue will retry', { error, retryable });
    if (final && deps.events) {
      const key = manifestKey(request.companyId, period);
      await deps.events.publish([
        exportFailed(
          {
            companyId: request.companyId,
            period: period.text,
            manifestKey: key,
            manifestUrl: store.url(key),
            previousExport: await manifestExists(store, key, logger),
            retryable,
            attempts: attempt.number,
            ...(thrown instanceof PeriodExportError ? { runId: thrown.runId } : {}),
            source: request.source,
            trigger: request.trigger,
          },
          error,
          clock.now(),
        ),
      ]);
    }
    return { status: 'failed', error, retryable, final };
  }

  if (dateTo?.dateTo === 'exclusive') summary = { ...summary, dateToExclusive: true };
  const written = DATASETS.filter((d) => summary.datasets[d]);
  const counts = { ...writtenCounts(summary.manifest, written), staleSymlinks: summary.staleSymlinks };
  countPublished(metrics, counts);
  if (deps.events) {
    await deps.events.publish([
      exportCompleted(
        {
          companyId: request.companyId,
          period: summary.period,
          manifestKey: summary.manifestKey,
          manifestUrl: summary.manifestUrl,
          runId: summary.runId,
          generatedAt: summary.generatedAt,
          ...counts,
          carriedOver: summary.carriedOver,
          formats,
          source: request.source,
          trigger: request.trigger,
        },
        clock.now(),
      ),
    ]);
  }
  return { status: 'completed', summary };
}

/**
 * Whether a later attempt can succeed. Trying again helps when the service or the network was
 * unwell (429, 5xx, timeouts, an unreadable answer), when the list moved under the export, when a
 * credential may be replaced meanwhile (an expired token, a rotated key), and for storage or
 * unknown failures. It cannot help when the service refused for good (a permission, a company
 * mismatch, a 404 or 400, a creator or user cut off), when a record or the manifest is bad, or
 * when there is no credential to use.
 */
export function isRetryableExportFailure(error: unknown): boolean {
  if (error instanceof ExportCountMismatchError) return true;
  if (
    error instanceof UserTokenUnavailableError ||
    error instanceof CompanyKeyNotFoundError ||
    error instanceof CompanyRemovedExportError ||
    error instanceof CompanyEntryDamagedExportError
  )
    return false;
  if (error instanceof ManifestError || error instanceof ValidationError) return false;
  if (error instanceof AccountingApiError) {
    if (error instanceof CreatorDisabledError || error instanceof CompanyAccessRemovedError || error instanceof TokenRevokedError)
      return false;
    if (error instanceof AuthenticationError) return true;
    return (
      error instanceof RateLimitError ||
      error instanceof ServerError ||
      error instanceof ConnectionError ||
      error instanceof TimeoutError ||
      error instanceof ResponseValidationError
    );
  }
  return true;
}

async function manifestExists(store: ObjectStore, key: string, logger: Logger): Promise<boolean> {
  try {
    return (await store.head(key)) !== undefined;
  } catch (error) {
    logger.warn('could not check for a previous export of the period', { error });
    return false;
  }
}
