import { Command } from 'commander';
import type { ExportProgress } from '../../src/core/exports/pipeline/export-sources';
import type { AmountTotal } from '../../src/core/exports/formats/totals';
import { DEFAULT_TIME_ZONE, periodContaining } from '../../src/core/exports/formats/period';
import { FORMATS, type ExportFormat } from '../../src/core/exports/formats/datasets';
import { exportTarget, formats as parseFormats, guid, httpUrl, month as parseMonth, type ExportTarget } from '../args';
import { CliConfigError, UsageError } from '../errors';
import { ExitCode, type ExitCodeValue } from '../exit-codes';
import { lazy } from '../lazy';
import type * as ExportRun from './export-run';
import type { Output, Progress } from '../output';
import type { CommandHost } from './host';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (cli/lazy.ts)
const run = lazy(() => require('./export-run') as typeof ExportRun);

export interface CompanyExportRow {
  companyId: string;
  /** `requested`: handed to the deployed pipeline (AWS mode), its manifest not seen yet. */
  status: 'completed' | 'failed' | 'requested';
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
  /** `local` (the embedded world), `direct` (ACCTOPS_BASE_URL + ACCTOPS_API_KEY), `aws` (ExportRequested to the stack). */
  mode: 'local' | 'direct' | 'aws';
  out: string;
  formats: ExportFormat[];
  companies: CompanyExportRow[];
}

export type CompanyProgress = (companyId: string, progress: ExportProgress) => void;

export interface ExportOptions {
  month?: string;
  company?: string;
  out?: ExportTarget;
  format?: ExportFormat[];
  replaceFormats?: boolean;
  baseUrl?: string;
  wait?: boolean;
}

export function exportCommand(host: CommandHost): Command {
  return new Command('export')
    .description("Export companies' transactions, tax reports and categories for a month (Hive layout, manifest written last).")
    .option('--month <YYYY-MM>', 'the month (default: the previous month in Europe/Berlin)', parseMonth)
    .option('--company <id>', "only this company (default: every active company of the registry, `acctops companies list`)", guid)
    .option('--out <dir|s3://bucket/prefix>', 'where to write (default: the state directory; direct mode: the current directory)', exportTarget)
    .option('--format <list>', `comma-separated formats (default: ${FORMATS.join(',')})`, parseFormats)
    .option('--replace-formats', "allow a re-export with fewer formats than the period's current export (the others' files are deleted)")
    .option('--base-url <url>', 'direct mode: export from this service with the key in ACCTOPS_API_KEY (or set ACCTOPS_BASE_URL)', httpUrl)
    .option('--no-wait', 'AWS mode: return once the exports are requested instead of waiting for their manifests')
    .action(
      host.run(async (session, opts: ExportOptions) => {
        const bars = new Map<string, Progress>();
        const onProgress: CompanyProgress = (companyId, p) => {
          if (p.dataset !== 'transactions') return;
          let bar = bars.get(companyId);
          if (!bar) bars.set(companyId, (bar = session.out.progress(`export ${companyId.slice(0, 8)}`)));
          bar.update(p.records, p.total, 'transactions');
          if (p.done) bar.finish();
        };
        const baseUrl = opts.baseUrl ?? baseUrlFromEnv(session.env.ACCTOPS_BASE_URL);
        let report: ExportReport;
        try {
          if (session.mode !== 'local' || baseUrl !== undefined) refuseFutureMonth(opts.month, Date.now());
          if (baseUrl !== undefined) {
            report = await run().exportDirect(session, { ...opts, baseUrl }, onProgress);
          } else if (session.mode === 'aws') {
            if (opts.out) throw new UsageError('--out is for the local and direct modes: the deployed pipeline writes to the stack\'s export bucket', 'drop --out, or use direct mode (--base-url with ACCTOPS_API_KEY)');
            const month = opts.month ?? run().defaultMonth();
            report = await (await host.aws(session)).requestExport({ month, company: opts.company, formats: opts.format, replaceFormats: opts.replaceFormats, wait: opts.wait !== false });
          } else {
            report = await session.local(async (world) => {
              refuseFutureMonth(opts.month, world.clock.now());
              return run().exportLocal(world, { month: opts.month, company: opts.company, store: opts.out && run().storeFor(session, opts.out), formats: opts.format, replaceFormats: opts.replaceFormats, onProgress });
            });
          }
        } finally {
          for (const bar of bars.values()) bar.finish();
        }
        const failed = report.companies.filter((c) => c.status !== 'completed' && !(c.status === 'requested' && opts.wait === false));
        if (failed.length > 0) {
          // When nothing was exported, the first failure's cause decides; otherwise the run is partial.
          session.exitCode = failed.length === report.companies.length && failed[0]?.error ? (failed[0].error.exitCode as ExitCodeValue) : ExitCode.partial;
          // One line per failure on stderr too, so a script that keeps stdout for --json sees why.
          for (const c of failed) if (c.error) session.out.note(`acctops export: ${c.companyId}: ${c.error.message}`);
        }
        session.out.result(report, () => renderExport(session.out, report));
      }),
    );
}

/**
 * A month after the current one (Europe/Berlin, on the mode's clock) has no data yet: its export
 * would "complete" empty and then count as the company's latest. The current month is allowed (a
 * partial month, replaced by the monthly run).
 */
export function refuseFutureMonth(month: string | undefined, now: number): void {
  if (month === undefined) return;
  const current = periodContaining(now, DEFAULT_TIME_ZONE).text;
  if (month > current) throw new UsageError(`--month is after the current month (${current})`, 'export a month that has begun; the default is the previous month');
}

function baseUrlFromEnv(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  try {
    return httpUrl(raw.trim());
  } catch {
    throw new CliConfigError('ACCTOPS_BASE_URL is not an http(s) URL', 'set it to the service base URL ending in /api/v1, or unset it for the local mode');
  }
}

export function renderExport(out: Output, report: ExportReport): void {
  out.line(`Export of ${report.month} (${report.mode} mode, ${report.formats.join(', ')}) to ${report.out}`);
  out.table(report.companies, [
    { header: 'COMPANY', value: (c) => c.companyId },
    { header: 'STATUS', value: (c) => c.status },
    { header: 'TRANSACTIONS', value: (c) => c.records?.transactions, align: 'right' },
    { header: 'TAX REPORTS', value: (c) => c.records?.tax_reports, align: 'right' },
    { header: 'CATEGORIES', value: (c) => c.records?.categories, align: 'right' },
    { header: 'TOTALS', value: (c) => c.totals?.map((t) => [t.currency, t.cashflowType, t.amount].filter(Boolean).join(' ')).join('; ') },
  ], 'no company to export');
  for (const c of report.companies) {
    if (c.manifestUrl) out.line(`  ${c.companyId}: ${c.manifestUrl}`);
    if (c.error) out.line(`! ${c.companyId}: ${c.error.message}`);
  }
  if (report.companies.some((c) => c.status === 'requested')) {
    out.line('Requested exports run in the deployed pipeline; `acctops --stack <stack> doctor` shows the last export of each company.');
  }
}
