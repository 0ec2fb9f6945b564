import { randomBytes } from 'node:crypto';
import { isAbsolute, join } from 'node:path';
import { S3TargetStore, s3ObjectStoreFor } from '../../src/adapters/aws/s3-target';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import {
  RateLimitError,
  ServerError,
  TimeoutError,
  type AccountingApiError,
  type AccountingApiWarning,
  type CredentialProvider,
  type RetryWait,
  type WarningHandler,
} from '../../src/core/accounting-api';
import { directExport } from '../../src/core/exports/pipeline/direct-export';
import { NEXT_REBASED_HINT, type ExportClientSettings } from '../../src/core/exports/pipeline/export-sources';
import { dueExportPeriod, type ExportDeadline } from '../../src/core/exports/pipeline/export-deadline';
import { exportCompanyPeriod } from '../../src/core/exports/pipeline/export-company-period';
import { EXPORT_ROOT, MANIFEST_NAME } from '../../src/core/exports/formats/layout';
import { periodExported, readManifest, type Manifest } from '../../src/core/exports/formats/manifest';
import { staleSymlinks, SYMLINK_PUBLISH_WINDOW_MS } from '../../src/core/exports/formats/symlinks';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import { DEFAULT_TIME_ZONE, previousMonth } from '../../src/core/exports/formats/period';
import { DEFAULT_CURRENCY } from '../../src/core/exports/formats/currency';
import type { PeriodExportSummary } from '../../src/core/exports/formats/period-exporter';
import { FORMATS, type CsvDialect, type ExportFormat } from '../../src/core/exports/formats/datasets';
import { systemClock, type Clock } from '../../src/core/shared/clock';
import type { Logger } from '../../src/core/shared/logger';
import { awsRegion, rejectAwsModeOptions, type BaseUrlSource, type ExportTarget } from '../args';
import type { TaxReportFieldNames } from '../../src/core/exports/formats/tax-report-fields';
import { ConcurrentExportError, FormatLossError, ManifestError, ObjectStoreError } from '../../src/core/exports/formats/period-errors';
import { apiKeyFromEnv, CliConfigError, CliError, describeError, readSecretCommand, type DescribeContext } from '../errors';
import { missingDirectories, removeEmptyDirectories } from '../created-dirs';
import { ExitCode } from '../exit-codes';
import { fsCauseText, isFsError, isSocketError, shortPath, socketCauseText } from '../fs-failure';
import { shownLocation } from '../format';
import type { LocalWorld } from '../local/local-world';
import { activeCompanyPages, type RegistryFinding } from '../../src/core/companies/company-registry';
import { registryCurrency, type CompanyCurrency } from '../../src/core/exports/pipeline/company-currency';
import { TOOL_VERSION } from '../version';
import type {
  CompanyExportRow,
  CompanyProgress,
  ExportHealth,
  ExportReport,
  OperationsContext,
  SymlinksBehind,
  SymlinksPublishing,
} from './operations';
import { companyKeyOf, monthOpen, NO_EXPORT_RESULT, refuseFutureMonth } from './shared';

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
  csvDialect?: CsvDialect;
  month: string;
  onProgress?: CompanyProgress;
  taxReportFields?: TaxReportFieldNames;
  /** `--default-currency`: every company's, over its registered one. */
  defaultCurrency?: string;
  /** The company's registered currency (local mode's registry), asked when `defaultCurrency` is not given. */
  companyCurrency?: CompanyCurrency;
  /** Client settings of every company's export (the local mode: its warnings, said on stderr). */
  client?: ExportClientSettings;
}

function completed(summary: PeriodExportSummary): CompanyExportRow {
  return {
    companyId: summary.company,
    status: 'completed',
    manifestUrl: summary.manifestUrl,
    runId: summary.runId,
    records: Object.fromEntries(Object.entries(summary.manifest.datasets).map(([name, d]) => [name, d.records])),
    totals: summary.manifest.datasets.transactions?.totals ?? [],
    undatedTaxReports: summary.datasets.tax_reports?.undated ?? 0,
    taxReportsWithoutCurrency: summary.datasets.tax_reports?.withoutCurrency ?? 0,
    transactionsWithDefaultCurrency: summary.datasets.transactions?.withDefaultCurrency ?? 0,
    ...manifestCounts(summary.manifest),
    defaultCurrency: summary.defaultCurrency,
    staleSymlinks: summary.staleSymlinks,
    athenaEmpty: emptyAthenaDatasets(summary.manifest),
    error: null,
  };
}

/** What the manifest counts, so that the local, direct and AWS modes report the same. */
function manifestCounts(
  manifest: Manifest,
): Pick<CompanyExportRow, 'duplicatesDropped' | 'transactionsOutsidePeriod' | 'transactionsDateTo'> {
  const transactions = manifest.datasets.transactions;
  return {
    duplicatesDropped: Object.fromEntries(Object.entries(manifest.datasets).map(([name, d]) => [name, d.duplicatesDropped ?? 0])),
    transactionsOutsidePeriod: transactions ? (transactions.outsidePeriod ?? 0) : null,
    // Every key always there (`--json`): a manifest without the count has none to count.
    transactionsDateTo: transactions?.dateTo ? { ...transactions.dateTo, nextDayDropped: transactions.dateTo.nextDayDropped ?? 0 } : null,
  };
}

const FORMAT_LOSS_HINT = "ask for the period's formats with --format, or add --replace-formats to delete the others' files";

/** A company's failed row: the error described, with the hints only the export gives. Exported for its test. */
export function failed(companyId: string | null, error: unknown, context: DescribeContext = {}): CompanyExportRow {
  const described = describeError(error, context);
  const { code } = described;
  let { message, exitCode, hint = null } = described;
  const loss = causeOf(error, FormatLossError);
  // A refused re-export is fixed by the command line (--format or --replace-formats).
  if (loss) [message, exitCode, hint] = [formatLossText(loss), ExitCode.usage, FORMAT_LOSS_HINT];
  else if (causeOf(error, ConcurrentExportError)) hint = CONCURRENT_EXPORT_HINT;
  else if (exitCode === ExitCode.failure && isOutputConfigError(error)) exitCode = ExitCode.config;
  return {
    companyId,
    status: 'failed',
    ...NO_EXPORT_RESULT,
    error: { code, message, exitCode, hint },
  };
}

/**
 * The run that lost the race for the manifest wrote nothing that stays; the winner's export of the
 * period is published and complete. Still a failure of this run (its options may have differed).
 */
const CONCURRENT_EXPORT_HINT =
  "another export of this period published first and stands complete (its _manifest.json); nothing to repair. Export again only if this run's options (formats, CSV dialect) should be the period's";

function causeOf<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if (e instanceof type) return e;
    e = (e as Error).cause;
  }
  return undefined;
}

/**
 * What a refused re-export would delete, each run once: `jsonl and parquet of categories, tax_reports
 * and transactions (run …)`. The use case's own message lists every dataset, format and run pair and
 * ends with the API's advice, which the CLI's hint says in flags.
 */
export function formatLossText(loss: FormatLossError): string {
  const formatsOf = new Map<string, string[]>();
  for (const d of loss.dropped) {
    const key = `${d.runId}\u0000${d.dataset}`;
    formatsOf.set(key, [...(formatsOf.get(key) ?? []), d.format]);
  }
  const groups = new Map<string, { runId: string; formats: string[]; datasets: string[] }>();
  for (const [key, formats] of formatsOf) {
    const [runId = '', dataset = ''] = key.split('\u0000');
    const group = `${runId}\u0000${formats.join(',')}`;
    const found = groups.get(group) ?? { runId, formats, datasets: [] };
    found.datasets.push(dataset);
    groups.set(group, found);
  }
  const and = (words: string[]) => (words.length > 1 ? `${words.slice(0, -1).join(', ')} and ${words.at(-1)!}` : (words[0] ?? ''));
  const parts = [...groups.values()].map((g) => `${and(g.formats)} of ${and(g.datasets)} (run ${g.runId})`);
  return `the period's current export also has ${parts.join('; ')}, which this re-export would delete`;
}

/**
 * Errors of a place that cannot take the export as configured: a fix of --out (or of its disk), not
 * a retry, and the next company would meet them too. A full disk or quota is among them: each
 * company would fill it again and fail after reading its month from the service.
 */
const OUTPUT_FS_CODES = new Set([
  'EACCES',
  'EPERM',
  'ENOTDIR',
  'EISDIR',
  'EROFS',
  'ENOENT',
  'EEXIST',
  'ENAMETOOLONG',
  'ELOOP',
  'ENOSPC',
  'EDQUOT',
  'EFBIG',
]);
/** Of those, the ones whose fix is room where --out points rather than another path. */
const OUTPUT_FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);
const OUTPUT_S3_NAMES = new Set(['NoSuchBucket', 'InvalidBucketName', 'PermanentRedirect', 'AuthorizationHeaderMalformed']);

/** The cause under the --out store's error that is one of its configuration (README, exit code 3): an errno code or an S3 error name. */
function outputConfigCause(error: unknown): string | undefined {
  let storeError = false;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if (e instanceof ObjectStoreError) storeError = true;
    else if (storeError) {
      const code = (e as NodeJS.ErrnoException).code ?? '';
      if (OUTPUT_FS_CODES.has(code)) return code;
      if (OUTPUT_S3_NAMES.has(e.name)) return e.name;
    }
  }
  return undefined;
}

function isOutputConfigError(error: unknown): boolean {
  return outputConfigCause(error) !== undefined;
}

/**
 * The innermost error under the store's: the cause a person can act on. A file system's is said in
 * words with its code (`a part of the path is a file, not a directory (ENOTDIR)`): Node's message
 * repeats the path, which the line already names, and a too long one twice. Others as they come
 * (`NoSuchBucket: …`).
 */
function storeCause(error: unknown): string {
  let last: Error | undefined;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) last = e;
  if (!last) return String(error);
  if (isFsError(last)) return fsCauseText(last);
  if (isSocketError(last)) return socketCauseText(last);
  return last.name && last.name !== 'Error' && !last.message.startsWith(last.name) ? `${last.name}: ${last.message}` : last.message;
}

/**
 * Where the export is written cannot take it: a wrong path, a permission, a full disk, a missing
 * bucket, no AWS region or credentials. Every company would meet the same refusal, so the command
 * stops with this one error (exit 3, or 4 for credentials) instead of a failed row per company.
 * Exported for its test: a full disk is not something the end-to-end tests can make.
 */
export function targetError(store: ObjectStore, target: string, error: unknown, exported: number): CliError | undefined {
  const described = describeError(error);
  // Raised by the S3 target's preflight, before any object: no store error wraps it.
  const regionMissing = described.code === 'aws_region_missing' || described.code === 'aws_region_malformed';
  if (!regionMissing && !causeOf(error, ObjectStoreError)) return undefined;
  const configCause = outputConfigCause(error);
  const code =
    regionMissing || configCause !== undefined ? ExitCode.config : described.exitCode === ExitCode.auth ? ExitCode.auth : undefined;
  if (code === undefined) return undefined;
  const done = exported > 0 ? `; ${exported} compan${exported === 1 ? 'y was' : 'ies were'} exported before it` : '';
  let hint = 'name a directory you can write to, or s3://bucket/prefix of a bucket that exists';
  if (regionMissing) hint = described.hint ?? hint;
  else if (code === ExitCode.auth)
    hint = 'check the AWS credentials (AWS_PROFILE, `aws sts get-caller-identity`) and their s3:PutObject permission';
  else if (OUTPUT_FULL_CODES.has(configCause ?? '')) hint = 'free space (or quota) on that file system, or name a directory on another one';
  else if (configCause === 'ENAMETOOLONG') hint = 'name a shorter path: most file systems allow 255 bytes a component';
  else if (configCause === 'ELOOP') hint = 'name a real directory: a symbolic link on the path leads back to itself';
  return new CliError(
    `${target} cannot be written at ${shortPath(shownLocation(store.url(EXPORT_ROOT)))}: ${regionMissing ? described.message : storeCause(error)}${done}`,
    {
      code: 'export_target_unwritable',
      exitCode: code,
      hint,
      cause: error,
    },
  );
}

/**
 * A directory target is tried once before any company is read: an object written and deleted
 * where the exports go. A path that is a file, under /dev/null or /proc, too long or not writable
 * is then one error before any work, not a failure found again by every company. An S3 target is
 * asked for its region only (the AWS mode's preflight does the same); the first object written
 * finds the other faults, and targetError stops the run there.
 */
async function preflight(store: ObjectStore, target: string): Promise<void> {
  if (store instanceof S3TargetStore) {
    try {
      await store.region();
    } catch (error) {
      throw targetError(store, target, error, 0) ?? error;
    }
    return;
  }
  if (!(store instanceof DirObjectStore)) return;
  const probe = `${EXPORT_ROOT}/.acctops-probe-${randomBytes(6).toString('hex')}`;
  try {
    await store.putObject(probe, '');
    await store.delete([probe]);
  } catch (error) {
    throw targetError(store, target, error, 0) ?? error;
  }
}

/**
 * Runs an export into `store` and, when it ends without a completed company (it threw, or every row
 * failed), removes the directories of a directory target that did not exist before it: the write
 * probe makes --out before the credential or the service is tried, and a failed run left it empty.
 * Only empty ones go (removeEmptyDirectories): a directory that existed, or that holds anything, is
 * kept.
 */
async function removingCreatedOnFailure<T extends CompanyExportRow | { rows: CompanyExportRow[] }>(
  store: ObjectStore,
  work: () => Promise<T>,
): Promise<T> {
  const created = store instanceof DirObjectStore ? await missingDirectories(store.root) : [];
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await removeEmptyDirectories(created);
    throw error;
  }
  const rows: CompanyExportRow[] = 'rows' in result ? result.rows : [result];
  if (!rows.some((r) => r.status === 'completed')) await removeEmptyDirectories(created);
  return result;
}

/** A re-export refused for the formats it would drop: the command line's fault (exit 2). */
function formatLoss(companyId: string | null, error: unknown, companies: number): CliError {
  const loss = causeOf(error, FormatLossError);
  const message = loss ? formatLossText(loss) : describeError(error).message;
  return new CliError(
    `${companies > 1 ? `every company's period would lose formats, the first (${companyId})` : companyId === null ? "the key's company" : `company ${companyId}`}: ${message}`,
    { code: 'export_formats_dropped', exitCode: ExitCode.usage, hint: FORMAT_LOSS_HINT, cause: error },
  );
}

/** The report's `csvDialect`: the CSV's, null when no CSV was asked for. */
export function reportedDialect(formats: readonly ExportFormat[], dialect: CsvDialect | undefined): CsvDialect | null {
  return formats.includes('csv') ? (dialect ?? 'standard') : null;
}

/** One company's month through the pipeline's use case (exportCompanyPeriod), as a summary row. */
async function exportCompany(
  run: ExportRun,
  companyId: string,
  credentials: CredentialProvider,
): Promise<{ row: CompanyExportRow; error?: unknown }> {
  const outcome = await exportCompanyPeriod(
    {
      store: run.store,
      clock: run.clock,
      logger: run.logger,
      toolVersion: TOOL_VERSION,
      baseUrl: run.baseUrl,
      exporter: { taxReportFields: run.taxReportFields, defaultCurrency: run.defaultCurrency },
      companyCurrency: run.companyCurrency,
      ...(run.client !== undefined ? { client: run.client } : {}),
    },
    {
      companyId,
      period: run.month,
      credentials,
      source: { kind: 'apiKey' },
      trigger: { kind: 'on_demand', requestId: 'acctops-cli', via: 'cli' },
      formats: run.formats,
      replaceFormats: run.replaceFormats,
      ...(run.csvDialect !== undefined ? { csvDialect: run.csvDialect } : {}),
      onProgress: run.onProgress && ((p) => run.onProgress!(companyId, p)),
    },
  );
  return outcome.status === 'completed'
    ? { row: completed(outcome.summary) }
    : { row: failed(companyId, outcome.error), error: outcome.error };
}

/** The local registry's active companies, a page at a time (seeded first if the state has none: LocalWorld.seedRegistry), and the entries it cannot read. */
async function registeredCompanies(world: LocalWorld): Promise<{ companies: string[]; skipped: RegistryFinding[] }> {
  await world.seedRegistry();
  const registry = world.registry();
  const companies: string[] = [];
  const skipped: RegistryFinding[] = [];
  for await (const page of activeCompanyPages(registry)) {
    skipped.push(...page.skipped);
    companies.push(...page.items.map((c) => c.companyId));
  }
  return { companies, skipped };
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
    /** Checked by the command (a directory only, with csv among the formats) and again by the exporter. */
    csvDialect?: CsvDialect;
    taxReportFields?: TaxReportFieldNames;
    defaultCurrency?: string;
    onProgress?: CompanyProgress;
    /** Told of the client's warnings that the export goes on after (the command: `nextRebasedNotes`, on stderr). */
    onWarning?: WarningHandler;
  },
): Promise<ExportReport> {
  const store = options.store ?? world.exportStore;
  const target = options.store ? '--out' : "the state directory's exports";
  const month = options.month ?? previousMonth(world.clock.now(), DEFAULT_TIME_ZONE).text;
  const formats = [...(options.formats ?? FORMATS)];
  const companies: string[] = [];
  const skipped: RegistryFinding[] = [];
  // Named by --company: no key secret is said as an unknown or removed company where that is why.
  if (options.company)
    companies.push(
      (
        await companyKeyOf(
          (id) => world.directory.find(id),
          () => Promise.resolve(world.registry()),
          options.company,
          world.clock.now(),
        )
      ).companyId,
    );
  else {
    const registered = await registeredCompanies(world);
    companies.push(...registered.companies);
    skipped.push(...registered.skipped);
  }
  const { rows, refused } = await removingCreatedOnFailure(store, async () => {
    await preflight(store, target);
    return exportCompanies(world, options, { store, target, month, formats }, companies);
  });
  // Refused for the formats alone, every company: nothing was done, and the command line is the fix.
  if (refused.length > 0 && refused.length === rows.length) throw formatLoss(refused[0]!.companyId, refused[0]!.error, rows.length);
  return {
    month,
    mode: 'local',
    out: store.url(EXPORT_ROOT),
    formats,
    csvDialect: reportedDialect(formats, options.csvDialect),
    defaultCurrency: options.defaultCurrency ?? null,
    companies: rows,
    skipped,
    monthOpen: monthOpen(month, world.clock.now()),
  };
}

/** The local export's companies, one row each; a failure of the target throws. */
async function exportCompanies(
  world: LocalWorld,
  options: Parameters<typeof exportLocal>[1],
  target: { store: ObjectStore; target: string; month: string; formats: ExportFormat[] },
  companies: string[],
): Promise<{ rows: CompanyExportRow[]; refused: { companyId: string; error: unknown }[] }> {
  const { store, month, formats } = target;
  const run: ExportRun = {
    store,
    clock: world.clock,
    logger: world.logger,
    baseUrl: world.baseUrl,
    formats,
    replaceFormats: options.replaceFormats,
    csvDialect: options.csvDialect,
    month,
    onProgress: options.onProgress,
    // The embedded service's names (its dialect's) unless --tax-report-fields gives some: that wins, whole.
    taxReportFields: options.taxReportFields ?? world.taxReportFields(),
    defaultCurrency: options.defaultCurrency,
    // Each company's own from the registry, as the deployed worker reads it, unless --default-currency names one for all.
    companyCurrency: registryCurrency((companyId) => world.companies.getItem(companyId)),
    ...(options.onWarning !== undefined ? { client: { onWarning: options.onWarning } } : {}),
  };
  const rows: CompanyExportRow[] = [];
  const refused: { companyId: string; error: unknown }[] = [];
  for (const companyId of companies.sort()) {
    const { row, error } = await exportCompany(run, companyId, world.companyKeys.credentials(companyId));
    if (error !== undefined) {
      const fatal = targetError(store, target.target, error, rows.filter((r) => r.status === 'completed').length);
      if (fatal) throw fatal;
      if (causeOf(error, FormatLossError)) refused.push({ companyId, error });
    }
    rows.push(row);
  }
  return { rows, refused };
}

/** `--out`: a directory (relative to the working directory) or `s3://bucket/prefix` on the default AWS chain. */
export function storeFor(context: OperationsContext, target: ExportTarget): ObjectStore {
  if (target.kind === 'dir') return new DirObjectStore(isAbsolute(target.path) ? target.path : join(context.runtime.cwd, target.path));
  return s3ObjectStoreFor({
    bucket: target.bucket,
    prefix: target.prefix,
    region: awsRegion(context.flags, context.env),
    env: context.env,
  });
}

export interface DirectExportOptions {
  baseUrl: string;
  /** What gave the base URL, named by the refusals that say how to leave the direct mode. */
  baseUrlBy?: BaseUrlSource;
  month?: string;
  company?: string;
  out?: ExportTarget;
  format?: ExportFormat[];
  replaceFormats?: boolean;
  csvDialect?: CsvDialect;
  taxReportFields?: TaxReportFieldNames;
  defaultCurrency?: string;
  /** False with --no-wait, an option of the AWS mode: refused here. */
  wait?: boolean;
  /** `--max-retry-wait`, ms; default DEFAULT_MAX_RETRY_WAIT_MS. */
  maxRetryWait?: number;
  pageSize?: number;
  dateTo?: 'detect' | 'inclusive' | 'exclusive';
  /** `--allow-insecure-http`: the client may send the key over plain http to a host that is not loopback (decision 92). */
  allowInsecureHttp?: boolean;
}

/**
 * The longest Retry-After a direct export waits for (`--max-retry-wait`). A person runs it and can
 * stop it (Ctrl-C): a per-minute rate limit's 60 s is worth waiting for, and a day is not. Each wait
 * is said on stderr.
 */
export const DEFAULT_MAX_RETRY_WAIT_MS = 5 * 60_000;

/** The client settings of a direct export: the service's waits honoured up to the cap, each one said; warnings as `nextRebasedNotes`. */
function directClientSettings(context: OperationsContext, opts: DirectExportOptions): ExportClientSettings {
  return {
    ...(opts.pageSize !== undefined ? { pageSize: opts.pageSize } : {}),
    ...(opts.dateTo !== undefined ? { dateTo: opts.dateTo } : {}),
    ...(opts.allowInsecureHttp === true ? { allowInsecureHttp: true } : {}),
    // No total budget of its own: the attempts and the cap on each wait bound a request.
    retry: { maxRetryAfterMs: opts.maxRetryWait ?? DEFAULT_MAX_RETRY_WAIT_MS, maxElapsedMs: Number.POSITIVE_INFINITY },
    ...(context.runtime.requestTimeoutMs !== undefined ? { timeoutMs: context.runtime.requestTimeoutMs } : {}),
    onRetryWait: (wait) => context.out.note(retryWaitLine(wait)),
    onWarning: nextRebasedNotes((line) => context.out.note(line)),
  };
}

/**
 * A `next` rebased onto the base origin (decision 108), said once a run for each origin it named:
 * each list of each company warns once, and an export reads several. The direct and the local mode
 * alike: the local one logged it only at warn, which a command shows with --verbose alone, so an
 * operator rehearsing against the embedded service never saw what the direct mode says.
 */
export function nextRebasedNotes(note: (line: string) => void): WarningHandler {
  const said = new Set<string>();
  return (warning) => {
    if (warning.type !== 'next_rebased' || said.has(warning.nextOrigin)) return;
    said.add(warning.nextOrigin);
    note(nextRebasedLine(warning));
  };
}

/** Origins only: the request's query and the `next` link's are left out (they could carry anything). */
export function nextRebasedLine(warning: Extract<AccountingApiWarning, { type: 'next_rebased' }>): string {
  return `acctops: warning: the service's next links name ${warning.nextOrigin}, not ${warning.baseOrigin}: the pages were requested on ${warning.baseOrigin}, and the key went nowhere else (${NEXT_REBASED_HINT})`;
}

/**
 * The line for a wait before a retry, one per retry: a service asking to wait (429 with
 * Retry-After), and also one that does not answer or fails (a timeout, a 5xx, a lost connection),
 * which used to leave stderr silent for the minutes of four attempts when no progress bar is drawn.
 * The request is said by method and path only (`describeRequest`): no query value, no key.
 */
export function retryWaitLine(wait: RetryWait): string {
  if (wait.askedByService) {
    // The policy honours Retry-After as sent (retryDecision): 0, or an HTTP date already past, is no
    // wait at all, which "waiting 1 s" misstated.
    if (wait.delayMs <= 0) {
      return `acctops: the service limits the rate, but its Retry-After asks for no wait (0 s, or a date already past): sending the request again now (attempt ${wait.attempt + 1} of ${wait.maxAttempts}; Ctrl-C to stop)`;
    }
    const asked = wait.delayMs < 1000 ? `${Math.round(wait.delayMs)} ms` : `${Math.ceil(wait.delayMs / 1000)} s`;
    return `acctops: the service limits the rate; waiting ${asked} as it asked (Ctrl-C to stop)`;
  }
  const request = wait.request.split('?', 1)[0]!;
  const { error } = wait;
  const what =
    error instanceof TimeoutError
      ? `no complete answer in ${duration(wait.timeoutMs)} to ${request}`
      : error instanceof ServerError
        ? `the service answered ${error.status ?? 'with a server error'} to ${request}`
        : error instanceof RateLimitError
          ? `the service limits the rate on ${request} (no Retry-After)`
          : `${request} failed: ${withoutRequest(error)}`;
  return `acctops: ${what}; retrying in ${duration(wait.delayMs)} (attempt ${wait.attempt + 1} of ${wait.maxAttempts}; Ctrl-C to stop)`;
}

/** The error's message without the request it names (with its query), which the line names already. */
function withoutRequest(error: AccountingApiError): string {
  if (error.request === undefined) return error.message;
  return error.message.replace(` (on ${error.request})`, '').replace(`, on ${error.request}`, '').replace(`on ${error.request}, `, '');
}

function duration(ms: number): string {
  return ms < 1000 ? `${Math.max(1, Math.round(ms))} ms` : `${Math.round(ms / 1000)} s`;
}

/** Direct mode: no AWS and no state; the service at the base URL, the company key in ACCTOPS_API_KEY. */
export async function exportDirect(
  context: OperationsContext,
  opts: DirectExportOptions,
  onProgress: CompanyProgress,
): Promise<ExportReport> {
  const by = opts.baseUrlBy ?? '--base-url';
  rejectAwsModeOptions(context.flags, 'direct', { regionUsed: opts.out?.kind === 's3', noWait: opts.wait === false, directBy: by });
  refuseFutureMonth(opts.month, Date.now());
  const apiKey = apiKeyFromEnv(context.env);
  if (!apiKey) {
    throw new CliConfigError(
      `the direct mode, picked by ${by}, needs the company API key in ACCTOPS_API_KEY`,
      `put the key there without echo or shell history: ${readSecretCommand('ACCTOPS_API_KEY')} (never a flag), or ${by === '--base-url' ? 'drop --base-url' : 'unset ACCTOPS_BASE_URL'} to use the local mode`,
    );
  }
  const store = storeFor(context, opts.out ?? { kind: 'dir', path: '.' });
  const target = opts.out ? '--out' : 'the working directory';
  const month = opts.month ?? previousMonth(Date.now(), DEFAULT_TIME_ZONE).text;
  const formats = [...(opts.format ?? FORMATS)];
  const defaultCurrency = opts.defaultCurrency ?? DEFAULT_CURRENCY;
  const row = await removingCreatedOnFailure(store, async () => {
    await preflight(store, target);
    return directRow(context, opts, { apiKey, store, target, month, formats, defaultCurrency }, onProgress);
  });
  return {
    month,
    mode: 'direct',
    out: store.url(EXPORT_ROOT),
    formats,
    csvDialect: reportedDialect(formats, opts.csvDialect),
    defaultCurrency,
    companies: [row],
    skipped: [],
    monthOpen: monthOpen(month, Date.now()),
  };
}

/** The direct export's one company, as its row; a failure of the target or of the formats throws. */
async function directRow(
  context: OperationsContext,
  opts: DirectExportOptions,
  run: { apiKey: string; store: ObjectStore; target: string; month: string; formats: ExportFormat[]; defaultCurrency: string },
  onProgress: CompanyProgress,
): Promise<CompanyExportRow> {
  const { apiKey, store, target, month, formats, defaultCurrency } = run;
  let row: CompanyExportRow;
  let known = opts.company;
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
        ...(opts.csvDialect !== undefined ? { csvDialect: opts.csvDialect } : {}),
        taxReportFields: opts.taxReportFields,
        defaultCurrency,
        toolVersion: TOOL_VERSION,
        logger: context.out.logger(),
        clock: context.runtime.clock,
        client: directClientSettings(context, opts),
        onCompany: (id) => (known = id),
        onProgress: (p) => onProgress(known ?? 'company', p),
      }),
    );
  } catch (error) {
    // null (README: an absent value is null) when the failure came before the key's company was learned.
    const companyId = known ?? null;
    const fatal = targetError(store, target, error, 0) ?? (causeOf(error, FormatLossError) ? formatLoss(companyId, error, 1) : undefined);
    if (fatal) throw fatal;
    row = failed(companyId, error, { direct: true });
  }
  return row;
}

/**
 * Where a publish may be running while the doctor reads (AWS mode: the export functions). Symlinks
 * behind a manifest committed less than `windowMs` ago by `clock` (SYMLINK_PUBLISH_WINDOW_MS) are
 * then reported as `publishing`, not as a finding.
 */
export interface PublishInFlight {
  windowMs: number;
  clock: Pick<Clock, 'now'>;
}

/** The deployed pipeline's: its export functions publish whenever they run. */
export function deployedPublishes(clock: Pick<Clock, 'now'> = systemClock): PublishInFlight {
  return { windowMs: SYMLINK_PUBLISH_WINDOW_MS, clock };
}

/**
 * Each company's newest complete export (a manifest exists), and whether it has the latest month
 * due by `deadline`: the deployed overdue check's deadline, so the two never disagree about which
 * month must exist. Without `inFlight` (the local mode, whose exports run under the state lock the
 * doctor holds), symlinks behind their manifest are always a finding. `keyMissing`: active registered
 * companies without a key secret, listed after `companies` with their exports (if any) and marked.
 */
export async function exportHealth(
  store: ObjectStore,
  companies: readonly string[],
  now: number,
  deadline: ExportDeadline,
  inFlight?: PublishInFlight,
  keyMissing: readonly string[] = [],
): Promise<ExportHealth> {
  const expected = dueExportPeriod(now, deadline.timeZone, deadline.dueAfterHours);
  const rows: ExportHealth['companies'] = [];
  const keyless = new Set(keyMissing.filter((id) => !companies.includes(id)));
  for (const companyId of [...companies, ...keyless]) {
    // The expected month's own manifest, as the deployed overdue check judges it: the newest one
    // says nothing about that month, and an on-demand export of a later one would hide it.
    const overdue = !(await periodExported(store, companyId, expected, deadline.timeZone));
    let last: string | undefined;
    for await (const object of store.list(`${EXPORT_ROOT}/company=${companyId}/`)) {
      const match = /\/period=(\d{4}-\d{2})\/([^/]+)$/.exec(object.key);
      if (match && match[2] === MANIFEST_NAME && (last === undefined || match[1]! > last)) last = match[1]!;
    }
    if (last === undefined) {
      rows.push({
        companyId,
        lastPeriod: null,
        generatedAt: null,
        manifestUrl: null,
        overdue,
        manifestError: null,
        staleSymlinks: [],
        publishing: [],
        athenaEmpty: [],
        keyMissing: keyless.has(companyId),
      });
      continue;
    }
    const key = `${EXPORT_ROOT}/company=${companyId}/period=${last}/${MANIFEST_NAME}`;
    const row = {
      companyId,
      lastPeriod: last,
      generatedAt: null,
      manifestUrl: store.url(key),
      overdue,
      manifestError: null,
      keyMissing: keyless.has(companyId),
    };
    let manifest: Manifest | undefined;
    try {
      manifest = await readManifest(store, key);
    } catch (error) {
      // One damaged manifest is a finding about that company, not the end of the whole report.
      if (!(error instanceof ManifestError)) throw error;
      rows.push({ ...row, manifestError: error.message, staleSymlinks: [], publishing: [], athenaEmpty: [] });
      continue;
    }
    const athena = await athenaBehind(store, last, key, manifest, inFlight);
    const athenaEmpty = emptySymlinks(last, manifest);
    if (expected.text !== last && !overdue) {
      // Not overdue: its manifest exists and was read. A missing or damaged one is the overdue finding.
      const expectedKey = `${EXPORT_ROOT}/company=${companyId}/period=${expected.text}/${MANIFEST_NAME}`;
      const expectedManifest = await readManifest(store, expectedKey);
      const other = await athenaBehind(store, expected.text, expectedKey, expectedManifest, inFlight);
      athena.stale.push(...other.stale);
      athena.publishing.push(...other.publishing);
      athenaEmpty.push(...emptySymlinks(expected.text, expectedManifest));
    }
    rows.push({
      ...row,
      generatedAt: manifest?.generatedAt ?? null,
      staleSymlinks: athena.stale,
      publishing: athena.publishing,
      athenaEmpty,
    });
  }
  return { expectedPeriod: expected.text, companies: rows };
}

/**
 * The period, with the datasets whose symlink the manifest records with no targets: a symlink that
 * is in line with its manifest, yet shows Athena no rows (a re-export without Parquet emptied it).
 */
function emptySymlinks(period: string, manifest: Manifest | undefined): SymlinksBehind[] {
  const datasets = emptyAthenaDatasets(manifest);
  return datasets.length === 0 ? [] : [{ period, datasets }];
}

/** The datasets whose symlink in `manifest` lists no Parquet: Athena shows no rows of them. */
export function emptyAthenaDatasets(manifest: Manifest | undefined): string[] {
  return (manifest?.symlinks ?? []).filter((s) => s.targets.length === 0).map((s) => s.dataset);
}

/**
 * The period, with the datasets whose Athena symlink differs from what its manifest records, if
 * any: stale, or publishing when that manifest was committed within `inFlight`'s window.
 */
async function athenaBehind(
  store: ObjectStore,
  period: string,
  key: string,
  manifest: Manifest | undefined,
  inFlight: PublishInFlight | undefined,
): Promise<{ stale: SymlinksBehind[]; publishing: SymlinksPublishing[] }> {
  const datasets = manifest ? await staleSymlinks(store, manifest) : [];
  if (datasets.length === 0) return { stale: [], publishing: [] };
  // Read after the manifest and its symlinks: a publish committed meanwhile makes it younger, never older.
  const committedAt = inFlight ? (await store.head(key))?.lastModified : undefined;
  // Either side of now: the operator's clock and S3's may disagree by a few seconds.
  if (inFlight && committedAt !== undefined && Math.abs(inFlight.clock.now() - committedAt) < inFlight.windowMs)
    return { stale: [], publishing: [{ period, datasets, committedAt: new Date(committedAt).toISOString() }] };
  return { stale: [{ period, datasets }], publishing: [] };
}

/** The stack's export bucket (AWS mode): the pipeline writes at its root, `exports/…`. */
export function storeForBucket(bucket: string, context: OperationsContext): ObjectStore {
  return storeFor(context, { kind: 's3', bucket, prefix: '' });
}

/**
 * The company's manifest of `month` when it is the export of request `requestId` (the
 * `ExportRequested` detail's), generated at or after `since`: the requested export has landed.
 */
export async function manifestSince(
  store: ObjectStore,
  companyId: string,
  month: string,
  since: number,
  requestId: string,
): Promise<CompanyExportRow | undefined> {
  const key = `${EXPORT_ROOT}/company=${companyId}/period=${month}/${MANIFEST_NAME}`;
  const manifest = await readManifest(store, key);
  if (!manifest || Date.parse(manifest.generatedAt) < since) return undefined;
  // A monthly run or another request may publish the month while ours waits in its queue group: it
  // is not our export (decision 109). A manifest that names no trigger comes from a pipeline
  // deployed before it did; it is taken by its time, as then.
  if (manifest.trigger && !(manifest.trigger.kind === 'on_demand' && manifest.trigger.id === requestId)) return undefined;
  return {
    companyId,
    status: 'completed',
    manifestUrl: store.url(key),
    runId: manifest.runId,
    records: Object.fromEntries(Object.entries(manifest.datasets).map(([name, d]) => [name, d.records])),
    totals: manifest.datasets.transactions?.totals ?? [],
    // The manifest does not count them; the worker's log warns of them.
    undatedTaxReports: null,
    taxReportsWithoutCurrency: null,
    transactionsWithDefaultCurrency: null,
    ...manifestCounts(manifest),
    defaultCurrency: null,
    // Written right after the manifest by the worker, which logs a failure; `doctor` compares them.
    staleSymlinks: null,
    athenaEmpty: emptyAthenaDatasets(manifest),
    error: null,
  };
}

/** Where the local mode keeps exports: `<stateDir>/exports`. */
export function exportsDirOf(stateDir: string): string {
  return join(stateDir, EXPORT_ROOT);
}
