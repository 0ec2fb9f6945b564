import { lstat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { EXPORT_LAYOUT } from '../../contract/exports';
import { abandonS3Uploads, type AbandonedUploads } from '../../src/adapters/aws/s3-uploads-in-flight';
import {
  abandonLocalWrites,
  onLocalCommit,
  removeLocalDirectoriesMade,
  type DirObjectStore,
} from '../../src/adapters/local/dir-object-store';
import { CSV_DIALECTS, FORMATS, type CsvDialect, type ExportFormat } from '../../src/core/exports/formats/datasets';
import {
  baseUrlFromEnv,
  csvDialect as parseCsvDialect,
  currencyCode,
  dateToMode,
  duration,
  pageSize as parsePageSize,
  exportTarget,
  formats as parseFormats,
  guid,
  baseUrlArgument,
  INSECURE_HTTP_REFUSED,
  isInsecureHttp,
  month as parseMonth,
  taxReportFields,
  type BaseUrlSource,
  type ExportTarget,
} from '../args';
import type { TaxReportFieldNames } from '../../src/core/exports/formats/tax-report-fields';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import { CliConfigError, damagedEntryRepair, UsageError } from '../errors';
import { shownLocation } from '../format';
import { ExitCode, type ExitCodeValue } from '../exit-codes';
import { interruptExitCode, onForcedExit, onInterrupt, speak } from '../interrupt';
import { missingDirectoriesSync, removeEmptyDirectories, removeEmptyDirectoriesSync } from '../created-dirs';
import type { RegistryFinding } from '../../src/core/companies/company-registry';
import type { CompanyExportRow, CompanyProgress, ExportReport } from '../operations/operations';
import type { Output, Progress } from '../output';
import type { Session } from '../session';
import type { CommandHost } from './host';
import { issuesText } from '../../src/core/shared/errors';

export interface ExportOptions {
  month?: string;
  company?: string;
  out?: ExportTarget;
  format?: ExportFormat[];
  replaceFormats?: boolean;
  csvDialect?: CsvDialect;
  baseUrl?: string;
  wait?: boolean;
  taxReportFields?: TaxReportFieldNames;
  defaultCurrency?: string;
  maxRetryWait?: number;
  pageSize?: number;
  dateTo?: 'detect' | 'inclusive' | 'exclusive';
  allowInsecureHttp?: boolean;
}

/** The direct mode's options that tune how the service is read: the deployed pipeline reads its stage's settings instead. */
const DIRECT_ONLY: readonly [keyof ExportOptions, string, string][] = [
  ['maxRetryWait', '--max-retry-wait', "the deployed worker's waits are bounded by its own deadline"],
  ['pageSize', '--page-size', "the deployed pipeline reads the stage's exports.pageSize"],
  ['dateTo', '--date-to', "the deployed pipeline reads the stage's exports.dateTo"],
  ['allowInsecureHttp', '--allow-insecure-http', "the local mode's sandbox is on loopback, and a stage's baseUrl is https"],
];

export function exportCommand(host: CommandHost): Command {
  return new Command('export')
    .description("Export companies' transactions, tax reports and categories for a month (Hive layout, manifest written last).")
    .option('--month <YYYY-MM>', 'the month (default: the previous month in Europe/Berlin)', parseMonth)
    .option('--company <id>', 'only this company (default: every active company of the registry, `acctops companies list`)', guid)
    .option(
      '--out <dir|s3://bucket/prefix>',
      'where to write (default: the state directory; direct mode: the current directory); the files go under <dir>/exports/company=<id>/period=<YYYY-MM>/ (s3: <prefix>/exports/…), the layout Athena and the manifest read',
      exportTarget,
    )
    .option('--format <list>', `comma-separated formats (default: ${FORMATS.join(',')})`, parseFormats)
    .option('--replace-formats', "allow a re-export with fewer formats than the period's current export (the others' files are deleted)")
    .option(
      `--csv-dialect <${CSV_DIALECTS.join('|')}>`,
      "the CSV's spelling (default: standard, RFC 4180); excel-de: ';', decimal comma and date-times a German spreadsheet reads; to a local directory only, not in AWS mode",
      parseCsvDialect,
    )
    .option(
      '--base-url <url>',
      'direct mode: export from this service with the key in ACCTOPS_API_KEY (or set ACCTOPS_BASE_URL); https, or http to a loopback host; refused with a stack named',
      baseUrlArgument,
    )
    .option(
      '--allow-insecure-http',
      'direct mode: let the base URL be plain http to a host that is not loopback (a service container on a trusted private network); the key then crosses the network in clear, and a warning says so',
    )
    .option('--no-wait', 'AWS mode: return once the exports are requested instead of waiting for their manifests')
    .option(
      '--tax-report-fields <ours=theirs,…>',
      "local and direct modes: the service's names of tax-report fields it spells otherwise, e.g. periodEnd=endDate,periodStart=startDate",
      taxReportFields,
    )
    .option(
      '--default-currency <ISO code>',
      "local and direct modes: the currency of transactions the service sends without one (default: the company's registered one, `companies add --default-currency`, else EUR)",
      currencyCode,
    )
    .option(
      '--max-retry-wait <duration>',
      'direct mode: the longest wait a rate-limited service may ask for (its Retry-After) that acctops honours, e.g. 90s or 10m; a longer one fails at once (default: 5m)',
      duration,
    )
    .option(
      '--page-size <n>',
      "direct mode: records per page asked of the service, 1-1000 (default: 1000; the service's configured maximum may be lower)",
      parsePageSize,
    )
    .option(
      '--date-to <detect|inclusive|exclusive>',
      'direct mode: whether the service\'s date_to includes its day (default: detect, one extra request per export; docs/exports.md, "The last day of a range")',
      dateToMode,
    )
    .action(
      host.run(
        async (session, opts: ExportOptions) => {
          const bars = new Map<string, Progress>();
          const onProgress: CompanyProgress = (companyId, p) => {
            if (p.dataset !== 'transactions') return;
            let bar = bars.get(companyId);
            if (!bar) bars.set(companyId, (bar = session.out.progress(`export ${companyId.slice(0, 8)}`)));
            bar.update(p.records, p.total, 'transactions');
            if (p.done) bar.finish();
          };
          const stack = session.stackNamed;
          const direct = directBaseUrl(session, opts, stack);
          if (direct === undefined) {
            const given = DIRECT_ONLY.find(([key]) => opts[key] !== undefined);
            if (given)
              throw new UsageError(
                stack === undefined
                  ? `${given[1]} is an option of the direct mode (--base-url or ACCTOPS_BASE_URL): ${given[2]}`
                  : `${given[1]} is an option of the direct mode (--base-url, no stack named): ${given[2]}; this is the AWS mode, which ${stack.by} picks`,
                `nothing was run: drop ${given[1]}`,
              );
          }
          if (direct === undefined && stack !== undefined && session.env.ACCTOPS_BASE_URL?.trim() && !session.flags.json) {
            session.out.note(
              `acctops: note: ACCTOPS_BASE_URL (environment) is not used by export in AWS mode, which ${stack.by} picks: the export is requested from the pipeline of ${stack.name}, which reads the stage's baseUrl; for a direct export from that URL, ${leaveAwsMode(stack)}`,
            );
          }
          refuseCsvDialectWhereUnfit(opts, direct === undefined && stack !== undefined);
          // AWS mode only requests exports and waits for their manifests: nothing here to stop.
          const stopOnInterrupt =
            direct === undefined && stack !== undefined ? () => undefined : stopExportOnInterrupt(session, opts.out, bars);
          let report: ExportReport;
          try {
            // The direct mode needs neither the state nor AWS; it is never picked with a stack named (directBaseUrl).
            if (direct !== undefined) {
              report = await (
                await import('../operations/export-run.ts')
              ).exportDirect(session, { ...opts, baseUrl: direct.url, baseUrlBy: direct.by }, onProgress);
            } else {
              report = await (
                await session.operations()
              ).exportMonth({
                month: opts.month,
                company: opts.company,
                out: opts.out,
                formats: opts.format,
                replaceFormats: opts.replaceFormats,
                ...(opts.csvDialect !== undefined ? { csvDialect: opts.csvDialect } : {}),
                taxReportFields: opts.taxReportFields,
                defaultCurrency: opts.defaultCurrency,
                wait: opts.wait !== false,
                onProgress,
              });
            }
          } finally {
            stopOnInterrupt();
            for (const bar of bars.values()) bar.finish();
          }
          const failed = report.companies.filter((c) => c.status !== 'completed' && !(c.status === 'requested' && opts.wait === false));
          if (failed.length > 0) {
            // When nothing was exported, the first failure's cause decides; otherwise the run is partial.
            session.exitCode =
              failed.length === report.companies.length && failed[0]?.error
                ? (failed[0].error.exitCode as ExitCodeValue)
                : ExitCode.partial;
            // One line per failure on stderr too, in the form of every error, so a script that keeps stdout for --json sees why.
            for (const c of failed) {
              if (c.error) session.out.error(c.error, { text: `company ${shownCompany(c)}`, fields: { companyId: c.companyId } });
            }
          }
          // Published, so not failed; but Athena does not show it yet, which a script must be able to tell.
          const behind = report.companies.filter((c) => (c.staleSymlinks?.length ?? 0) > 0);
          if (behind.length > 0) session.partial();
          for (const c of behind) {
            session.out.error(
              {
                exitCode: ExitCode.partial,
                code: 'athena_symlinks_stale',
                message: `${report.month} is published (${c.manifestUrl === null ? 'its manifest' : shownLocation(c.manifestUrl)}), but ${athenaBehindText(c.staleSymlinks!)}`,
                hint: `export ${report.month} again for the company: every export of a period rewrites all its symlinks`,
              },
              { text: `company ${shownCompany(c)}`, fields: { companyId: c.companyId } },
            );
          }
          if (report.skipped.length > 0) session.partial();
          for (const f of report.skipped) {
            session.out.error(
              {
                exitCode: ExitCode.partial,
                code: 'registry_item_invalid',
                message: `not exported: ${issuesText(f.issues)}`,
                // `companies remove` cannot act on an entry that does not parse: the repair sets it aside instead.
                hint: damagedEntryRepair(report.mode),
              },
              { text: `company registry entry ${entryName(f)}`, fields: { registryKey: f.key, registryPosition: f.position } },
            );
          }
          session.out.result(report, () => renderExport(session.out, report));
        },
        { beforeWorkUntilSteps: true },
      ),
    );
}

/**
 * `--csv-dialect` other than standard where it would do nothing (no csv among `--format`) or land
 * where programs read the exports (`--out s3://…`; AWS mode refuses it in its own operations, with
 * the stack's pipeline named): exit 2 before anything runs (decision 95).
 */
function refuseCsvDialectWhereUnfit(opts: ExportOptions, awsMode: boolean): void {
  const dialect = opts.csvDialect;
  if (dialect === undefined || dialect === 'standard') return;
  if (opts.format && !opts.format.includes('csv')) {
    throw new UsageError(
      `--csv-dialect ${dialect} spells the CSV, but --format ${opts.format.join(',')} writes none`,
      `nothing was run: add csv to --format, or drop --csv-dialect`,
    );
  }
  if (!awsMode && opts.out?.kind === 's3') {
    throw new UsageError(
      `--csv-dialect ${dialect} is written only to a local directory: a bucket is where programs read the exports (DuckDB, Spark or a script over every period's files), which expect the standard CSV`,
      `nothing was run: export to a directory (--out ./dir) for the spreadsheet, or drop --csv-dialect for the bucket`,
    );
  }
}

function athenaBehindText(datasets: readonly string[]): string {
  const which = datasets.length === 1 ? 'its symlink' : 'their symlinks';
  return `Athena still shows the previous export of ${datasets.join(', ')} (${which} could not be rewritten after the manifest)`;
}

/**
 * Ctrl-C or SIGTERM while the export runs (cli/interrupt.ts): the writes under way are stopped and
 * what they staged in `.acctops-tmp/` is removed (abandonLocalWrites), the S3 multipart uploads
 * under way are aborted (abandonS3Uploads: an incomplete upload is invisible but billed until a
 * lifecycle rule, if the bucket has one, removes it), then one line says what was published and,
 * for S3, whether the aborts went through. A period is published by its manifest alone, and
 * Athena's symlinks are written only after it (docs/exports.md, "Atomic periods"), so the manifests
 * this process put into place are that list, and before the first nothing is visible anywhere; the
 * data files of the run that was stopped are invisible without one, and the period's next export
 * collects them. A stop between a manifest and its symlinks leaves Athena on the period's previous
 * export: the symlinks are compared with the manifest, and the line names what is behind. An S3
 * target's manifests are not seen here, and the line says how to tell. The directories the run
 * made that hold nothing then are removed, the `--out` directory and the parents it created among
 * them, as a run that ends with no company exported does (README, `export`): an empty folder tree
 * looked like a result. Returns the function that unregisters it.
 */
function stopExportOnInterrupt(session: Session, out: ExportTarget | undefined, bars: Map<string, Progress>): () => void {
  // Looked at now, synchronously, before the export can make anything; a directory made meanwhile
  // (by another process) counts as there before, which keeps it.
  const made = out?.kind === 'dir' ? missingDirectoriesSync(resolve(session.runtime.cwd, out.path)) : [];
  const published: { store: ObjectStore; key: string }[] = [];
  /**
   * The files this process completed for a period whose manifest it has not written: a run cut
   * short. No manifest or symlink lists them, but a reader globbing the directory would, so the
   * interrupt removes them as the export's own clean-up would have.
   */
  const unpublished = new Map<DirObjectStore, Map<string, string[]>>();
  const stopWatching = onLocalCommit((store, key) => {
    const period = PERIOD_PREFIX.exec(key)?.[1];
    if (period === undefined) return;
    const periods = unpublished.get(store) ?? new Map<string, string[]>();
    unpublished.set(store, periods);
    if (key.endsWith(`/${EXPORT_LAYOUT.manifestName}`)) {
      published.push({ store, key });
      periods.delete(period);
    } else if (key.includes('/run=')) {
      periods.set(period, [...(periods.get(period) ?? []), key]);
    }
  });
  let cleanedUp = false;
  // A second signal abandons the clean-up below: its line says what that may leave (nothing visible).
  const stopForced = onForcedExit(() => (cleanedUp ? undefined : exportCutShortPart(published.length, out?.kind === 's3')));
  const stopStep = onInterrupt(async (signal) => {
    // Whether the run had made --out by now, asked before anything is abandoned: an abandoned write
    // fails the export, whose own clean-up may then remove --out before the steps below look
    // (seen in export-interrupt.test.ts under load).
    const outMade = made[0] !== undefined && (await exists(made[0]));
    // Both are bounded: the S3 aborts by their own deadline, well inside the steps' 10 s.
    const [, uploads] = await Promise.all([abandonLocalWrites(), abandonS3Uploads()]);
    // Only now: abandonLocalWrites waits for a rename under way, whose commit, unwatched, left a
    // completed file of the stopped run in place (seen in export-interrupt.test.ts under load).
    stopWatching();
    // Local deletes, once no write of this process can land any more; a failure leaves garbage
    // that the next export of the period collects, never a visible change.
    await Promise.all(
      [...unpublished].flatMap(([store, periods]) => [...periods.values()].map((keys) => store.delete(keys).catch(() => undefined))),
    );
    // Then the folders those files were in, and --out itself when the run made it: only empty ones.
    await removeLocalDirectoriesMade().catch(() => 0);
    // The staging folder of a --out the run made is the run's own (DirObjectStore's `.acctops-tmp`),
    // and a write that was staging when the signal came can make it again after abandonLocalWrites.
    const ours = made[0] === undefined ? [] : [join(made[0], '.acctops-tmp'), ...made];
    await removeEmptyDirectories(ours);
    // Again at the very exit, when nothing of the command runs any more: that write, or one making
    // --out when the signal came, finishes after this step.
    if (ours.length > 0) process.once('exit', () => removeEmptyDirectoriesSync(ours));
    const outRemoved = outMade && !(await exists(made[0]!));
    cleanedUp = true;
    // Local files, read once no write of this process can land any more.
    const behind = await athenaBehind(published);
    const interrupted = { exitCode: interruptExitCode(signal), code: 'interrupted' };
    speak(() => {
      for (const bar of bars.values()) bar.finish();
      if (out?.kind === 's3') {
        session.out.error({ ...interrupted, ...s3InterruptedLine(signal, uploads) });
      } else if (published.length === 0) {
        session.out.error({
          ...interrupted,
          message: `interrupted (${signal}): the export was stopped and the files of its unfinished run removed; nothing was published${outRemoved ? ', and the --out directory it had created was removed' : ''}`,
          hint: 'run the export again',
        });
      } else {
        const urls = published.map((p) => shownLocation(p.store.url(p.key))).join(', ');
        session.out.error({
          ...interrupted,
          message:
            behind.length === 0
              ? `interrupted (${signal}): the export was stopped and the files of its unfinished run removed; published before it stopped: ${urls}`
              : `interrupted (${signal}): the export was stopped and the files of its unfinished run removed; published before it stopped: ${urls}; Athena still shows the previous export of ${behind.join('; ')} (stopped before their symlinks were rewritten)`,
          hint:
            behind.length === 0
              ? 'those periods are complete; run the export again for the rest'
              : 'those periods are complete; run the export again: it exports the rest and rewrites the symlinks of those periods',
        });
      }
    });
  });
  return () => {
    stopStep();
    stopForced();
    stopWatching();
  };
}

/**
 * A second signal's part while the export's clean-up runs (cli/interrupt.ts, onForcedExit): what it
 * cuts short is never visible (a period is published by its manifest alone), but the files of the
 * unfinished run and the staged ones may stay until a later export collects them.
 */
function exportCutShortPart(published: number, s3: boolean): string {
  const done = published === 0 ? 'nothing was published' : `the ${published} period(s) it published stay published`;
  const uploads = s3 ? ", and its unfinished S3 uploads until the bucket's lifecycle rule, if it has one, removes them" : '';
  return `the export's clean-up was cut short: ${done}; the files of its unfinished run, which no manifest lists, may be left until a later export of the period collects them${uploads}`;
}

/** Whether anything is at `path` now (lstat: a symbolic link counts as itself). */
async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** The period folder of an export key (`…/company=<id>/period=<YYYY-MM>`). */
const PERIOD_PREFIX = /^(.*\/period=[^/]+)\//;

/** `<datasets> of <manifest url>` for each published manifest whose symlinks are not the ones it records. */
export async function athenaBehind(published: readonly { store: ObjectStore; key: string }[]): Promise<string[]> {
  const [{ readManifest }, { staleSymlinks }] = await Promise.all([
    import('../../src/core/exports/formats/manifest.ts'),
    import('../../src/core/exports/formats/symlinks.ts'),
  ]);
  const behind: string[] = [];
  for (const { store, key } of published) {
    try {
      const manifest = await readManifest(store, key);
      const stale = manifest ? await staleSymlinks(store, manifest) : [];
      if (stale.length > 0) behind.push(`${stale.join(', ')} of ${shownLocation(store.url(key))}`);
    } catch {
      // Unreadable now is unknown, not behind: the line stays what it can vouch for.
    }
  }
  return behind;
}

/** Counts only: an upload's key names a company and a month, and the hint never names the bucket. */
function s3InterruptedLine(signal: NodeJS.Signals, uploads: AbandonedUploads): { message: string; hint: string } {
  const total = uploads.aborted + uploads.failed;
  // The symlinks follow the manifest: a stop between them leaves Athena on the previous export, never on this run.
  const published =
    "a period is published only when its _manifest.json was written, and Athena shows it only once its symlinks were rewritten right after (until then, the period's previous export)";
  if (uploads.failed > 0) {
    return {
      message: `interrupted (${signal}): the export was stopped; ${uploads.failed} of ${total} unfinished multipart upload(s) could not be aborted`,
      hint: `they stay invisible but are billed until the bucket's lifecycle rule for incomplete multipart uploads removes them; \`aws s3api list-multipart-uploads --bucket <bucket>\` lists them; ${published}; run the export again`,
    };
  }
  return {
    message:
      total === 0
        ? `interrupted (${signal}): the export was stopped; no multipart upload was under way`
        : `interrupted (${signal}): the export was stopped and its ${total} unfinished multipart upload(s) aborted`,
    hint: `${published}; an upload cut short is never visible; run the export again`,
  };
}

/** How to leave the AWS mode, by what picked it. */
function leaveAwsMode(stack: NonNullable<Session['stackNamed']>): string {
  return stack.by === '--stack' ? 'drop --stack' : 'unset ACCTOPS_STACK: `env -u ACCTOPS_STACK acctops …`';
}

/**
 * The direct mode's base URL and what gave it, or undefined for the mode the Session names (decision
 * 75 in docs/architecture.md). With a stack named, the mode is AWS: ACCTOPS_BASE_URL is then the key
 * commands' override of the stack's ServiceBaseUrl (README, "Credentials") and is not read here, so a
 * variable left over from the runbook never turns the export into files in the working directory;
 * `--base-url` there names a second mode and is refused (exit 2), both sources named. Plain http to a
 * host that is not loopback is refused (exit 2 for the flag, 3 for the variable) before anything is
 * sent, unless `--allow-insecure-http` is given, and then a warning says the key goes out in clear
 * (decision 92).
 */
function directBaseUrl(
  session: Session,
  opts: ExportOptions,
  stack: Session['stackNamed'],
): { url: string; by: BaseUrlSource } | undefined {
  const allowInsecureHttp = opts.allowInsecureHttp === true;
  let direct: { url: string; by: BaseUrlSource } | undefined;
  if (opts.baseUrl !== undefined) {
    if (stack !== undefined) {
      throw new UsageError(
        `--base-url picks the direct mode, but ${stack.by} names the stack ${stack.name}, the AWS mode: an export is either requested from the stack's pipeline or read straight from the service`,
        `nothing was run: to request it from the stack, drop --base-url; to export from the service, ${leaveAwsMode(stack)}`,
      );
    }
    // baseUrlArgument left plain http to this point, where --allow-insecure-http is known.
    if (isInsecureHttp(opts.baseUrl) && !allowInsecureHttp)
      throw new UsageError(`--base-url: ${INSECURE_HTTP_REFUSED}`, INSECURE_HTTP_HINT);
    direct = { url: opts.baseUrl, by: '--base-url' };
  } else {
    if (stack !== undefined) return undefined;
    const hint = 'set it to the service base URL ending in /api/v1, or unset it for the local mode';
    // Plain http is judged here, not by baseUrlFromEnv, so that its refusal carries its own hint.
    const url = baseUrlFromEnv(session.env, hint, { allowInsecureHttp: true });
    if (url !== undefined && isInsecureHttp(url) && !allowInsecureHttp)
      throw new CliConfigError(`ACCTOPS_BASE_URL is not usable: ${INSECURE_HTTP_REFUSED}`, INSECURE_HTTP_HINT);
    if (url === undefined) return undefined;
    direct = { url, by: 'ACCTOPS_BASE_URL (environment)' };
  }
  // Said whenever the key goes out in clear, --json or not: the flag alone is easy to leave in a script.
  if (isInsecureHttp(direct.url))
    session.out.note(
      `acctops: warning: --allow-insecure-http: ${direct.by} is plain http to a host that is not loopback; ACCTOPS_API_KEY is sent in clear with every request, readable by anyone on the network path`,
    );
  return direct;
}

const INSECURE_HTTP_HINT =
  "nothing was sent: use the service's https URL, or an http URL on this machine (a published container port or an SSH tunnel gives one); for a service container on a trusted private network only, add --allow-insecure-http";

/**
 * The report for people: the table and the manifests on stdout; its notes on stderr, as every
 * diagnostic (docs/cli.md, "One command, one session"), so stdout is the report alone. `--json`
 * prints no note: the report holds their facts (`undatedTaxReports`, `monthOpen`, …).
 */
export function renderExport(out: Output, report: ExportReport): void {
  // The dialect is named only when it is not the standard one, so the usual line stays as it was.
  const formats = report.formats.map((f) =>
    f === 'csv' && report.csvDialect && report.csvDialect !== 'standard' ? `csv (${report.csvDialect})` : f,
  );
  out.line(`Export of ${report.month} (${report.mode} mode, ${formats.join(', ')}) to ${shownLocation(report.out)}`);
  out.table(
    report.companies,
    [
      { header: 'COMPANY', value: shownCompany },
      { header: 'STATUS', value: (c) => c.status },
      { header: 'TRANSACTIONS', value: (c) => c.records?.transactions, align: 'right' },
      { header: 'TAX REPORTS', value: (c) => c.records?.tax_reports, align: 'right' },
      { header: 'CATEGORIES', value: (c) => c.records?.categories, align: 'right' },
      { header: 'TOTALS', value: (c) => c.totals?.map((t) => [t.currency, t.cashflowType, t.amount].filter(Boolean).join(' ')).join('; ') },
    ],
    'no company to export',
  );
  for (const c of report.companies) {
    if (c.manifestUrl) out.line(`  ${shownCompany(c)}: ${shownLocation(c.manifestUrl)}`);
    if (c.error) out.line(`! ${shownCompany(c)}: ${c.error.message}`);
    if (c.staleSymlinks?.length) {
      out.line(
        `! ${shownCompany(c)}: ${athenaBehindText(c.staleSymlinks)}; export ${report.month} again to rewrite ${c.staleSymlinks.length === 1 ? 'it' : 'them'}`,
      );
    }
    if (c.undatedTaxReports) {
      out.note(
        `acctops: note: ${shownCompany(c)}: ${c.undatedTaxReports} tax report(s) with no period or creation date acctops could read, kept in every month; if the service names them otherwise, see --tax-report-fields (docs/exports.md, "Tax reports of a period")`,
      );
    }
    if (c.taxReportsWithoutCurrency) {
      out.note(
        `acctops: note: ${shownCompany(c)}: ${c.taxReportsWithoutCurrency} tax report(s) with an amount but no currency acctops could read: written without currency and decimal amount (amount_due_minor only), left out of the totals; if the service names the currency otherwise, see --tax-report-fields currency=<its field> (docs/exports.md, "Tax reports of a period")`,
      );
    }
    if (c.transactionsWithDefaultCurrency) {
      // Direct mode has no registry: the flag is its only way. The local mode reads the registry, as the deployed worker does.
      const fix =
        report.mode === 'direct'
          ? 'export again with --default-currency <ISO code>'
          : `register it with \`acctops companies add --company ${shownCompany(c)} --default-currency <ISO code>\` (or export again with --default-currency <ISO code>)`;
      out.note(
        `acctops: note: ${shownCompany(c)}: ${c.transactionsWithDefaultCurrency} transaction(s) without a currency from the service, labelled ${c.defaultCurrency ?? report.defaultCurrency ?? 'with the default currency'} in every file and in the totals; if the company's currency is another, ${fix} (docs/exports.md, "A transaction's currency")`,
      );
    }
    // Repeats of the last day's own read have a note of their own, with their cause and fix.
    const lastDayRepeats = c.transactionsDateTo?.lastDayRepeats ?? 0;
    const repeated = Object.entries(c.duplicatesDropped ?? {})
      .map(([dataset, n]): [string, number] => [dataset, (n ?? 0) - (dataset === 'transactions' ? lastDayRepeats : 0)])
      .filter(([, n]) => n > 0);
    if (repeated.length > 0) {
      out.note(
        `acctops: note: ${shownCompany(c)}: the service sent records again on a later page (the list changed while it was read): ${repeated.map(([dataset, n]) => `${n} of ${dataset}`).join(', ')}, each written once and counted once in the totals (docs/exports.md, "Records repeated across pages")`,
      );
    }
    const dateToNote = lastDayNote(c, report);
    if (dateToNote) out.note(`acctops: note: ${shownCompany(c)}: ${dateToNote} (docs/exports.md, "The last day of a range")`);
    if (c.transactionsOutsidePeriod) {
      out.note(
        `acctops: note: ${shownCompany(c)}: ${c.transactionsOutsidePeriod} transaction(s) the service returned for ${report.month} are dated outside it (the date of valueDate as written), kept in its files and totals as returned (docs/exports.md, "Transactions dated outside the month")`,
      );
    }
  }
  for (const c of report.companies) {
    if (!c.athenaEmpty?.length) continue;
    const formats = [...new Set([...report.formats, 'parquet'])].join(',');
    out.note(
      `acctops: note: ${shownCompany(c)}: Athena shows no rows for ${c.athenaEmpty.join(', ')} of ${report.month} until it is exported with --format parquet again (e.g. --format ${formats}): this export wrote no Parquet, and ${c.athenaEmpty.length === 1 ? 'its symlink lists' : 'their symlinks list'} none`,
    );
  }
  if (report.monthOpen) {
    out.note(
      `acctops: note: ${report.month} is not over yet: these files hold the month so far, and neither \`acctops doctor\` nor the overdue alarm counts them as its export; export it again once the month has ended (the monthly schedule does)`,
    );
  }
  for (const f of report.skipped) out.line(`! skipped the unreadable registry entry ${entryName(f)}: ${issuesText(f.issues)}`);
  if (report.companies.some((c) => c.status === 'requested')) {
    out.line('Requested exports run in the deployed pipeline; `acctops --stack <stack> doctor` shows the last export of each company.');
  }
}

/**
 * What reading the month's last day on its own did, when it was read so (`date_to` exclusive, found
 * or set); undefined otherwise. The fix names the setting of the mode: the flag in the direct mode,
 * the stage's setting in AWS mode; the local mode's sandbox has none.
 */
function lastDayNote(c: CompanyExportRow, report: ExportReport): string | undefined {
  const dateTo = c.transactionsDateTo;
  if (dateTo?.read !== 'exclusive') return undefined;
  const how = dateTo.setting === 'detect' ? 'as its probe found' : 'as set';
  const setting = (value: string) =>
    report.mode === 'direct' ? `--date-to ${value}` : report.mode === 'aws' ? `the stage's exports.dateTo ${value}` : undefined;
  if (dateTo.lastDayRepeats > 0) {
    const fix = setting('inclusive');
    const nextDay =
      dateTo.nextDayDropped > 0
        ? `; and ${dateTo.nextDayDropped} of the day after it, which belong to the next month: dropped, its own export holds them`
        : '';
    return `the last day of ${report.month}, read on its own because date_to was taken as exclusive (${how}), repeated ${dateTo.lastDayRepeats} of its ${dateTo.lastDayRecords} transaction(s) the month already held: dropped, each written once and counted once in the totals${nextDay}; the service's date_to includes its day${fix ? `: use ${fix}` : ''}`;
  }
  const skip = dateTo.setting === 'detect' ? setting('exclusive') : undefined;
  return `the service's date_to excludes its day (${how}): the last day of ${report.month} was read on its own, ${dateTo.lastDayRecords} transaction(s), and written with the month${skip ? `; ${skip} skips the probe` : ''}`;
}

/** A registry entry by its id, or by its place in the registry when the id itself is what is wrong. */
function entryName(f: RegistryFinding): string {
  // The registry gives a key only when it is a well-formed id, else a placeholder in parentheses.
  return f.key.startsWith('(') ? `at position ${f.position}` : f.key;
}

/** A row's company for people: direct mode names none when it failed before the key's company was learned. */
function shownCompany(c: CompanyExportRow): string {
  return c.companyId ?? "(the key's company)";
}
