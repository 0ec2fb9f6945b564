import { Command } from 'commander';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import type { CredentialProvider } from '../../src/core/accounting-api';
import { DEFAULT_TIME_ZONE, EXPORT_ROOT, FORMATS, previousMonth, type ExportFormat, type ObjectStore } from '../../src/core/exports';
import { exportCompanyPeriod, type ExportOutcome } from '../../src/core/exports/export-company-period';
import type { ExportProgress } from '../../src/core/exports/export-sources';
import type { AmountTotal } from '../../src/core/exports/totals';
import type { Clock } from '../../src/core/shared/clock';
import type { Logger } from '../../src/core/shared/logger';
import { exportTarget, formats as parseFormats, guid, httpUrl, month as parseMonth, type ExportTarget } from '../args';
import { CliConfigError, describeError, NotAvailableError } from '../errors';
import { ExitCode } from '../exit-codes';
import type { LocalWorld } from '../local/local-world';
import type { Session } from '../session';
import { TOOL_VERSION } from '../version';
import type { CommandHost } from './host';
import { s3ObjectStoreFor } from '../../src/adapters/aws/s3-target';
import { exportDirectMode } from './export-direct';

export interface CompanyExportRow {
  companyId: string;
  status: 'completed' | 'failed';
  /** Where the period's manifest is (`file://…` or `s3://…`). */
  manifestUrl?: string;
  runId?: string;
  records?: Partial<Record<string, number>>;
  /** Transactions per currency and cashflow type, exact decimals. */
  totals?: AmountTotal[];
  error?: { code: string; message: string; exitCode: number };
}

export interface ExportReport {
  month: string;
  /** `local` (the embedded world), `direct` (ACCTOPS_BASE_URL + ACCTOPS_API_KEY). */
  mode: 'local' | 'direct';
  out: string;
  formats: ExportFormat[];
  companies: CompanyExportRow[];
}

export interface ExportRun {
  store: ObjectStore;
  clock: Clock;
  logger: Logger;
  baseUrl: string;
  formats: readonly ExportFormat[];
  month: string;
  /** Draws the progress of one company; the export reports after every page. */
  onProgress?: (companyId: string, progress: ExportProgress) => void;
}

/** One company's month through the pipeline's use case (exportCompanyPeriod), as a summary row. */
export async function exportCompany(run: ExportRun, companyId: string, credentials: CredentialProvider): Promise<CompanyExportRow> {
  const outcome: ExportOutcome = await exportCompanyPeriod(
    { store: run.store, clock: run.clock, logger: run.logger, toolVersion: TOOL_VERSION, baseUrl: run.baseUrl },
    {
      companyId,
      period: run.month,
      credentials,
      source: { kind: 'apiKey' },
      trigger: { kind: 'on_demand', requestId: 'acctops-cli', via: 'cli' },
      formats: run.formats,
      onProgress: run.onProgress && ((p) => run.onProgress!(companyId, p)),
    },
  );
  if (outcome.status === 'failed') {
    const { code, message, exitCode } = describeError(outcome.error);
    return { companyId, status: 'failed', error: { code, message, exitCode } };
  }
  const { summary } = outcome;
  return {
    companyId,
    status: 'completed',
    manifestUrl: summary.manifestUrl,
    runId: summary.runId,
    records: Object.fromEntries(Object.entries(summary.manifest.datasets).map(([name, d]) => [name, d.records])),
    totals: summary.manifest.datasets.transactions?.totals ?? [],
  };
}

/** `export` in the local mode: every company (or one) with its stored key, into the state directory or --out. */
export async function exportLocal(world: LocalWorld, options: { month?: string; company?: string; store?: ObjectStore; formats?: readonly ExportFormat[]; onProgress?: ExportRun['onProgress'] }): Promise<ExportReport> {
  const store = options.store ?? world.exportStore;
  const month = options.month ?? previousMonth(world.clock.now(), DEFAULT_TIME_ZONE).text;
  const formats = [...(options.formats ?? FORMATS)];
  const companies: string[] = [];
  if (options.company) companies.push((await world.directory.find(options.company)).companyId);
  else for await (const entry of world.directory.list()) companies.push(entry.companyId);
  const run: ExportRun = { store, clock: world.clock, logger: world.logger, baseUrl: world.baseUrl, formats, month, onProgress: options.onProgress };
  const rows: CompanyExportRow[] = [];
  for (const companyId of companies.sort()) rows.push(await exportCompany(run, companyId, world.companyKeys.credentials(companyId)));
  return { month, mode: 'local', out: store.url(EXPORT_ROOT), formats, companies: rows };
}

export function exportCommand(host: CommandHost): Command {
  return new Command('export')
    .description("Export companies' transactions, tax reports and categories for a month (Hive layout, manifest written last).")
    .option('--month <YYYY-MM>', 'the month (default: the previous month in Europe/Berlin)', parseMonth)
    .option('--company <id>', 'only this company (default: every company acctops holds a key for)', guid)
    .option('--out <dir|s3://bucket/prefix>', 'where to write (default: the state directory; direct mode: the current directory)', exportTarget)
    .option('--format <list>', `comma-separated formats (default: ${FORMATS.join(',')})`, parseFormats)
    .option('--base-url <url>', 'direct mode: export from this service with the key in ACCTOPS_API_KEY (or set ACCTOPS_BASE_URL)', httpUrl)
    .action(
      host.run(async (session, opts: { month?: string; company?: string; out?: ExportTarget; format?: ExportFormat[]; baseUrl?: string }) => {
        const progress = new Map<string, ReturnType<Session['out']['progress']>>();
        const onProgress = (companyId: string, p: ExportProgress) => {
          if (p.dataset !== 'transactions') return;
          let bar = progress.get(companyId);
          if (!bar) progress.set(companyId, (bar = session.out.progress(`export ${companyId.slice(0, 8)}`)));
          bar.update(p.records, p.total, 'transactions');
          if (p.done) bar.finish();
        };
        const baseUrl = opts.baseUrl ?? (session.env.ACCTOPS_BASE_URL ? httpUrlFromEnv(session.env.ACCTOPS_BASE_URL) : undefined);
        let report: ExportReport;
        if (baseUrl !== undefined) {
          report = await exportDirect(session, host, { ...opts, baseUrl, onProgress });
        } else if (session.mode === 'aws') {
          throw new NotAvailableError(
            'export is not available in AWS mode yet',
            'the deployed pipeline exports on its schedule or on an ExportRequested event; for a one-off, use direct mode (--base-url with ACCTOPS_API_KEY)',
          );
        } else {
          report = await session.local(async (world) =>
            exportLocal(world, { month: opts.month, company: opts.company, store: opts.out && (await storeFor(host, session, opts.out)), formats: opts.format, onProgress }),
          );
        }
        for (const bar of progress.values()) bar.finish();
        const failed = report.companies.filter((c) => c.status === 'failed');
        if (failed.length > 0) {
          // One failure's cause decides when nothing was exported; otherwise the run is partial.
          session.exitCode = failed.length === report.companies.length && failed[0]?.error ? (failed[0].error.exitCode as typeof session.exitCode) : ExitCode.partial;
        }
        session.out.result(report, () => renderExport(session, report));
      }),
    );
}

function httpUrlFromEnv(raw: string): string {
  try {
    return httpUrl(raw);
  } catch {
    throw new CliConfigError('ACCTOPS_BASE_URL is not an http(s) URL', 'set it to the service base URL ending in /api/v1');
  }
}

async function storeFor(host: CommandHost, session: Session, target: ExportTarget): Promise<ObjectStore> {
  if (target.kind === 'dir') return new DirObjectStore(target.path.startsWith('/') ? target.path : `${session.runtime.cwd}/${target.path}`);
  return s3ObjectStoreFor({ bucket: target.bucket, prefix: target.prefix, region: session.flags.region ?? session.env.AWS_REGION });
}

/** Direct mode: no AWS and no state: the service at the base URL, the key in ACCTOPS_API_KEY. */
async function exportDirect(
  session: Session,
  host: CommandHost,
  opts: { month?: string; company?: string; out?: ExportTarget; format?: ExportFormat[]; baseUrl: string; onProgress: ExportRun['onProgress'] },
): Promise<ExportReport> {
  const apiKey = session.env.ACCTOPS_API_KEY;
  if (apiKey === undefined || apiKey.trim() === '') {
    throw new CliConfigError('direct mode needs the company API key in ACCTOPS_API_KEY', 'export ACCTOPS_API_KEY=<key> (never a flag), or drop --base-url to use the local mode');
  }
  const store = await storeFor(host, session, opts.out ?? { kind: 'dir', path: '.' });
  return exportDirectMode({ apiKey: apiKey.trim(), baseUrl: opts.baseUrl, month: opts.month, company: opts.company, store, formats: opts.format, onProgress: opts.onProgress, logger: session.out.logger() });
}

export function renderExport(session: Session, report: ExportReport): void {
  session.out.line(`Export of ${report.month} (${report.mode} mode, ${report.formats.join(', ')}) to ${report.out}`);
  session.out.table(report.companies, [
    { header: 'COMPANY', value: (c) => c.companyId },
    { header: 'STATUS', value: (c) => c.status },
    { header: 'TRANSACTIONS', value: (c) => c.records?.transactions, align: 'right' },
    { header: 'TAX REPORTS', value: (c) => c.records?.tax_reports, align: 'right' },
    { header: 'CATEGORIES', value: (c) => c.records?.categories, align: 'right' },
    { header: 'TOTALS', value: (c) => c.totals?.map((t) => `${t.currency} ${t.cashflowType ?? ''} ${t.amount}`.replace('  ', ' ')).join('; ') },
  ], 'no company to export');
  for (const c of report.companies) {
    if (c.manifestUrl) session.out.line(`  ${c.companyId}: ${c.manifestUrl}`);
    if (c.error) session.out.line(`! ${c.companyId}: ${c.error.message}`);
  }
}
