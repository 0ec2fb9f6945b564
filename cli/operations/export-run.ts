import { isAbsolute, join } from 'node:path';
import { s3ObjectStoreFor } from '../../src/adapters/aws/s3-target';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import type { CredentialProvider } from '../../src/core/accounting-api';
import { directExport } from '../../src/core/exports/pipeline/direct-export';
import { exportCompanyPeriod } from '../../src/core/exports/pipeline/export-company-period';
import { EXPORT_ROOT, MANIFEST_NAME } from '../../src/core/exports/formats/layout';
import { readManifest } from '../../src/core/exports/formats/manifest';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import { DEFAULT_TIME_ZONE, previousMonth } from '../../src/core/exports/formats/period';
import type { PeriodExportSummary } from '../../src/core/exports/formats/period-exporter';
import { FORMATS, type ExportFormat } from '../../src/core/exports/formats/datasets';
import type { Clock } from '../../src/core/shared/clock';
import type { Logger } from '../../src/core/shared/logger';
import type { ExportTarget } from '../args';
import type { TaxReportFieldNames } from '../../src/core/exports/formats/tax-report-fields';
import { FormatLossError, ObjectStoreError } from '../../src/core/exports/formats/period-errors';
import { apiKeyFromEnv, CliConfigError, describeError } from '../errors';
import { ExitCode } from '../exit-codes';
import type { LocalWorld } from '../local/local-world';
import { activeCompanyPages } from '../../src/core/companies/company-registry';
import { TOOL_VERSION } from '../version';
import type { CompanyExportRow, CompanyProgress, ExportHealth, ExportReport, OperationsContext } from './operations';
import { refuseFutureMonth } from './shared';

/**
 * What `export` (and the doctor's export check) run: the exports use cases and the stores, which
 * bring in the Parquet writer and the S3 client. Only `await import()`ed, by the operations that
 * need it: a static import would make every command (`users list`, `keys rotate`) load them
 * (BENCHMARKS.md, "CLI start-up").
 */

interface ExportRun {
  store: ObjectStore;
  clock: Clock;
  logger: Logger;
  baseUrl: string;
  formats: readonly ExportFormat[];
  replaceFormats?: boolean;
  month: string;
  onProgress?: CompanyProgress;
  taxReportFields?: TaxReportFieldNames;
}

function completed(summary: PeriodExportSummary): CompanyExportRow {
  return {
    companyId: summary.company,
    status: 'completed',
    manifestUrl: summary.manifestUrl,
    runId: summary.runId,
    records: Object.fromEntries(Object.entries(summary.manifest.datasets).map(([name, d]) => [name, d.records])),
    totals: summary.manifest.datasets.transactions?.totals ?? [],
    ...(summary.datasets.tax_reports?.undated ? { undatedTaxReports: summary.datasets.tax_reports.undated } : {}),
  };
}

function failed(companyId: string, error: unknown): CompanyExportRow {
  const { code, message, exitCode } = describeError(error);
  // A refused re-export is fixed by the command line (--format or --replace-formats).
  if (causeOf(error, FormatLossError)) return { companyId, status: 'failed', error: { code, message, exitCode: ExitCode.usage } };
  return {
    companyId,
    status: 'failed',
    error: { code, message, exitCode: exitCode === ExitCode.failure && isOutputConfigError(error) ? ExitCode.config : exitCode },
  };
}

function causeOf(error: unknown, type: new (...args: never[]) => Error): boolean {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if (e instanceof type) return true;
    e = (e as Error).cause;
  }
  return false;
}

/** Errors of a place that cannot take the export as configured: a fix of --out, not a retry. */
const OUTPUT_FS_CODES = new Set(['EACCES', 'EPERM', 'ENOTDIR', 'EISDIR', 'EROFS', 'ENOENT', 'EEXIST']);
const OUTPUT_S3_NAMES = new Set(['NoSuchBucket', 'InvalidBucketName', 'PermanentRedirect', 'AuthorizationHeaderMalformed']);

/** The --out store refused for a reason of its configuration (README, exit code 3). */
function isOutputConfigError(error: unknown): boolean {
  let storeError = false;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (e instanceof ObjectStoreError) storeError = true;
    else if (storeError && (OUTPUT_FS_CODES.has((e as NodeJS.ErrnoException).code ?? '') || OUTPUT_S3_NAMES.has(e.name))) return true;
  }
  return false;
}

/** One company's month through the pipeline's use case (exportCompanyPeriod), as a summary row. */
async function exportCompany(run: ExportRun, companyId: string, credentials: CredentialProvider): Promise<CompanyExportRow> {
  const outcome = await exportCompanyPeriod(
    {
      store: run.store,
      clock: run.clock,
      logger: run.logger,
      toolVersion: TOOL_VERSION,
      baseUrl: run.baseUrl,
      exporter: { taxReportFields: run.taxReportFields },
    },
    {
      companyId,
      period: run.month,
      credentials,
      source: { kind: 'apiKey' },
      trigger: { kind: 'on_demand', requestId: 'acctops-cli', via: 'cli' },
      formats: run.formats,
      replaceFormats: run.replaceFormats,
      onProgress: run.onProgress && ((p) => run.onProgress!(companyId, p)),
    },
  );
  return outcome.status === 'completed' ? completed(outcome.summary) : failed(companyId, outcome.error);
}

/** The local registry's active companies, a page at a time (seeded first if the state has none: LocalWorld.seedRegistry). */
async function registeredCompanies(world: LocalWorld): Promise<string[]> {
  await world.seedRegistry();
  const registry = world.registry();
  const companies: string[] = [];
  for await (const page of activeCompanyPages(registry)) {
    for (const finding of page.skipped) world.logger.warn('company registry item skipped', { key: finding.key, issues: finding.issues });
    companies.push(...page.items.map((c) => c.companyId));
  }
  return companies;
}

/** `export` in the local mode: every active company of the registry (or one), with its stored key, into the state directory or --out. */
export async function exportLocal(
  world: LocalWorld,
  options: {
    month?: string;
    company?: string;
    store?: ObjectStore;
    formats?: readonly ExportFormat[];
    replaceFormats?: boolean;
    taxReportFields?: TaxReportFieldNames;
    onProgress?: CompanyProgress;
  },
): Promise<ExportReport> {
  const store = options.store ?? world.exportStore;
  const month = options.month ?? previousMonth(world.clock.now(), DEFAULT_TIME_ZONE).text;
  const formats = [...(options.formats ?? FORMATS)];
  const companies: string[] = [];
  if (options.company) companies.push((await world.directory.find(options.company)).companyId);
  else companies.push(...(await registeredCompanies(world)));
  const run: ExportRun = {
    store,
    clock: world.clock,
    logger: world.logger,
    baseUrl: world.baseUrl,
    formats,
    replaceFormats: options.replaceFormats,
    month,
    onProgress: options.onProgress,
    taxReportFields: options.taxReportFields,
  };
  const rows: CompanyExportRow[] = [];
  for (const companyId of companies.sort()) rows.push(await exportCompany(run, companyId, world.companyKeys.credentials(companyId)));
  return { month, mode: 'local', out: store.url(EXPORT_ROOT), formats, companies: rows };
}

/** `--out`: a directory (relative to the working directory) or `s3://bucket/prefix` on the default AWS chain. */
export function storeFor(context: OperationsContext, target: ExportTarget): ObjectStore {
  if (target.kind === 'dir') return new DirObjectStore(isAbsolute(target.path) ? target.path : join(context.runtime.cwd, target.path));
  return s3ObjectStoreFor({
    bucket: target.bucket,
    prefix: target.prefix,
    region: context.flags.region ?? context.env.AWS_REGION,
    env: context.env,
  });
}

export interface DirectExportOptions {
  baseUrl: string;
  month?: string;
  company?: string;
  out?: ExportTarget;
  format?: ExportFormat[];
  replaceFormats?: boolean;
  taxReportFields?: TaxReportFieldNames;
}

/** Direct mode: no AWS and no state; the service at the base URL, the company key in ACCTOPS_API_KEY. */
export async function exportDirect(
  context: OperationsContext,
  opts: DirectExportOptions,
  onProgress: CompanyProgress,
): Promise<ExportReport> {
  refuseFutureMonth(opts.month, Date.now());
  const apiKey = apiKeyFromEnv(context.env);
  if (!apiKey) {
    throw new CliConfigError(
      'direct mode needs the company API key in ACCTOPS_API_KEY',
      'export ACCTOPS_API_KEY=<key> (never a flag), or drop --base-url to use the local mode',
    );
  }
  const store = storeFor(context, opts.out ?? { kind: 'dir', path: '.' });
  const month = opts.month ?? previousMonth(Date.now(), DEFAULT_TIME_ZONE).text;
  const formats = [...(opts.format ?? FORMATS)];
  let row: CompanyExportRow;
  try {
    row = completed(
      await directExport({
        baseUrl: opts.baseUrl,
        apiKey,
        month,
        store,
        companyId: opts.company,
        formats,
        replaceFormats: opts.replaceFormats,
        taxReportFields: opts.taxReportFields,
        toolVersion: TOOL_VERSION,
        logger: context.out.logger(),
        onProgress: (p) => onProgress(opts.company ?? 'company', p),
      }),
    );
  } catch (error) {
    row = failed(opts.company ?? "(the key's company)", error);
  }
  return { month, mode: 'direct', out: store.url(EXPORT_ROOT), formats, companies: [row] };
}

/**
 * The newest complete export of each company (a manifest exists), and whether the previous month
 * is missing. A day of slack after the month turns: the monthly schedule runs on the 1st.
 */
export async function exportHealth(store: ObjectStore, companies: readonly string[], now: number): Promise<ExportHealth> {
  const expected = previousMonth(now - 86_400_000, DEFAULT_TIME_ZONE).text;
  const rows: ExportHealth['companies'] = [];
  for (const companyId of companies) {
    let last: string | undefined;
    for await (const object of store.list(`${EXPORT_ROOT}/company=${companyId}/`)) {
      const match = /\/period=(\d{4}-\d{2})\/([^/]+)$/.exec(object.key);
      if (match && match[2] === MANIFEST_NAME && (last === undefined || match[1]! > last)) last = match[1]!;
    }
    if (last === undefined) {
      rows.push({ companyId, lastPeriod: undefined, generatedAt: undefined, manifestUrl: undefined, overdue: true });
      continue;
    }
    const key = `${EXPORT_ROOT}/company=${companyId}/period=${last}/${MANIFEST_NAME}`;
    const manifest = await readManifest(store, key);
    rows.push({ companyId, lastPeriod: last, generatedAt: manifest?.generatedAt, manifestUrl: store.url(key), overdue: last < expected });
  }
  return { expectedPeriod: expected, companies: rows };
}

/** The stack's export bucket (AWS mode): the pipeline writes at its root, `exports/…`. */
export function storeForBucket(bucket: string, context: OperationsContext): ObjectStore {
  return storeFor(context, { kind: 's3', bucket, prefix: '' });
}

/** The company's manifest of `month` when it was generated at or after `since` (a requested export has landed). */
export async function manifestSince(
  store: ObjectStore,
  companyId: string,
  month: string,
  since: number,
): Promise<CompanyExportRow | undefined> {
  const key = `${EXPORT_ROOT}/company=${companyId}/period=${month}/${MANIFEST_NAME}`;
  const manifest = await readManifest(store, key);
  if (!manifest || Date.parse(manifest.generatedAt) < since) return undefined;
  return {
    companyId,
    status: 'completed',
    manifestUrl: store.url(key),
    runId: manifest.runId,
    records: Object.fromEntries(Object.entries(manifest.datasets).map(([name, d]) => [name, d.records])),
    totals: manifest.datasets.transactions?.totals ?? [],
  };
}

/** Where the local mode keeps exports: `<stateDir>/exports`. */
export function exportsDirOf(stateDir: string): string {
  return join(stateDir, EXPORT_ROOT);
}
