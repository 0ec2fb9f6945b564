import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { startS3, type LocalS3 } from '../../test/helpers/s3rver';
import { startSandboxProcess, type SandboxProcess } from '../lib/peers';
import { OUT_DIR, runNodeJson } from '../lib/processes';
import { table, type SectionReport, type TargetResult } from '../lib/report';
import { describeStart, lambdaNodeStart, type LambdaNodeStart } from '../lib/lambda-node';
import { functionsOf, synthBenchStack } from '../lib/stack';
import { max, median, mib } from '../lib/stats';
import type { ExportChildResult, ExportJob } from './export-child';

export const PERIOD = '2026-10';
export const PAGE_SIZE = 1000;
const BUCKET = 'acctops-bench-exports';
const CHILD_BUNDLE = path.join(OUT_DIR, 'export-child.js');

/** One company of the sandbox with a generated month, and a read-only export key for it. */
export interface ExportDataset {
  companyId: string;
  apiKey: string;
  transactions: number;
}

export async function createDataset(sandbox: SandboxProcess, transactions: number): Promise<ExportDataset> {
  const { admin } = sandbox;
  const company = await admin.createCompany({ currency: 'EUR' });
  const companyId = company.publicId;
  // Categories first: generated transactions draw their category from the company's list.
  for (let i = 0; i < 12; i++) {
    await admin.addCategory({ companyId, name: `Category ${i}`, cashflowType: i % 3 === 0 ? 'INCOME' : 'EXPENSE', vatApplied: 'YES' });
  }
  for (let month = 1; month <= 6; month++) {
    const start = `2026-${String(month).padStart(2, '0')}-01`;
    await admin.addTaxReport({
      companyId,
      periodStart: start,
      periodEnd: start.replace(/01$/, '28'),
      status: 'submitted',
      amountDue: '1234.56',
    });
  }
  await admin.generateTransactions({ companyId, month: PERIOD, count: transactions });
  const key = await admin.createApiKey({
    companyId,
    permissions: ['read_transactions', 'read_categories', 'read_tax_reports'],
    name: 'bench export',
  });
  return { companyId, apiKey: key.key, transactions };
}

/**
 * Bundles export-child.ts the way a Lambda function is bundled (CJS, minified, @aws-sdk left to
 * node_modules), but for the Node running the benchmark, so that the measured process carries no
 * TypeScript loader.
 */
export async function bundleExportChild(outfile = CHILD_BUNDLE): Promise<string> {
  await build({
    entryPoints: [path.join(__dirname, 'export-child.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    format: 'cjs',
    minify: true,
    external: ['@aws-sdk/*'],
    logLevel: 'warning',
  });
  return outfile;
}

export type ExportVariant = 'baseline' | 'baseline-http' | 'jsonl-dir' | 'all-dir' | 'all-s3';

export interface ExportRunContext {
  sandbox: SandboxProcess;
  s3: LocalS3 | undefined;
  dataset: ExportDataset;
  /** How the child starts: Lambda's node flags and the function's NODE_OPTIONS; plain `node` when absent. */
  start?: LambdaNodeStart;
}

export function jobFor(variant: ExportVariant, context: ExportRunContext): ExportJob {
  const base = {
    baseUrl: context.sandbox.baseUrl,
    apiKey: context.dataset.apiKey,
    companyId: context.dataset.companyId,
    period: PERIOD,
    pageSize: PAGE_SIZE,
  };
  const dir = { kind: 'dir' as const, dir: path.join(OUT_DIR, 'exports') };
  switch (variant) {
    case 'baseline':
      return { ...base, mode: 'baseline', formats: ['jsonl'], target: dir };
    case 'baseline-http':
      return { ...base, mode: 'baseline-http', formats: ['jsonl'], target: dir };
    case 'jsonl-dir':
      return { ...base, mode: 'export', formats: ['jsonl'], target: dir };
    case 'all-dir':
      return { ...base, mode: 'export', formats: ['jsonl', 'csv', 'parquet'], target: dir };
    case 'all-s3':
      if (!context.s3) throw new Error('all-s3 needs s3rver');
      return {
        ...base,
        mode: 'export',
        formats: ['jsonl', 'csv', 'parquet'],
        target: { kind: 's3', endpoint: context.s3.endpoint, bucket: BUCKET },
      };
  }
}

/** A child's result and the CPU its peers spent while it ran. */
export interface MeasuredExportRun extends ExportChildResult {
  /**
   * CPU time of the peers over the child's lifetime: the sandbox's process (from /proc) and this
   * one (s3rver runs here). They share the machine's cores with the child, so the child's CPU and
   * theirs together bound its wall time from below. NaN where /proc is missing.
   */
  peerCpuMs: number;
}

export async function runExportChild(variant: ExportVariant, context: ExportRunContext): Promise<MeasuredExportRun> {
  const job = jobFor(variant, context);
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  if (context.start?.nodeOptions !== undefined) env.NODE_OPTIONS = context.start.nodeOptions;
  const ownBefore = process.cpuUsage();
  const sandboxBefore = processCpuMs(context.sandbox.process.child.pid);
  const result = await runNodeJson<ExportChildResult>([...(context.start?.args ?? []), CHILD_BUNDLE, JSON.stringify(job)], {
    timeoutMs: 600_000,
    env,
  });
  const own = process.cpuUsage(ownBefore);
  const peerCpuMs = processCpuMs(context.sandbox.process.child.pid) - sandboxBefore + (own.user + own.system) / 1000;
  if (result.transactions !== context.dataset.transactions) {
    throw new Error(`${variant}: read ${result.transactions} transactions, expected ${context.dataset.transactions}`);
  }
  return { ...result, peerCpuMs };
}

/** CPU time (user + system) of a process so far, from /proc/<pid>/stat; NaN without /proc. */
export function processCpuMs(pid: number | undefined): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in ticks of 10 ms.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * The least ratio to the baseline that a run's CPU allows on this machine's cores: the child's CPU
 * and its peers' (every thread), spread perfectly over all cores, over the baseline's wall time. A
 * bound below it cannot be met here by scheduling (worker threads, overlap): only by spending less CPU.
 */
function cpuFloorRatio(run: MeasuredExportRun, baseline: MeasuredExportRun): number {
  return (run.cpuMs + run.peerCpuMs) / CORES / baseline.ms;
}
const CORES = availableParallelism();

export interface ExportSectionOptions {
  sizes: { transactions: number; rounds: number }[];
}

/** The function that runs exports in a deployment. */
export const EXPORT_FUNCTION = 'export-period';
/** Used when the stack does not deploy the export function (yet). */
const FALLBACK_MEMORY_MB = 256;

/** The export function's memory and NODE_OPTIONS as the synthesized stack configures them (lib/constructs/exports/pipeline.ts). */
function exportFunctionSettings(): { memoryMb: number; nodeOptions: string | undefined } | undefined {
  const fn = functionsOf(synthBenchStack(path.join(OUT_DIR, 'stack-template'), false)).get(EXPORT_FUNCTION);
  const memory = fn?.Properties?.MemorySize;
  if (typeof memory !== 'number') return undefined;
  const nodeOptions = fn?.Properties?.Environment?.Variables?.NODE_OPTIONS;
  return { memoryMb: memory, nodeOptions: typeof nodeOptions === 'string' ? nodeOptions : undefined };
}

const VARIANTS: readonly ExportVariant[] = ['baseline', 'baseline-http', 'jsonl-dir', 'all-dir', 'all-s3'];
type ExportRun = Exclude<ExportVariant, 'baseline' | 'baseline-http'>;
const EXPORTS: readonly ExportRun[] = ['jsonl-dir', 'all-dir', 'all-s3'];
const LABEL: Record<ExportVariant | 'plain', string> = {
  baseline: 'baseline: bare fetch loop',
  'baseline-http': 'bare node:http loop (for comparison)',
  'jsonl-dir': 'acctops, JSONL only, local dir',
  'all-dir': 'acctops, JSONL + CSV + Parquet, local dir',
  'all-s3': 'acctops, JSONL + CSV + Parquet, s3rver',
  plain: 'acctops, all formats, local dir, plain `node` (no Lambda heap flags)',
};
/**
 * Issue 14, deliverable 2: the Parquet writer chosen by measurement. Measured by hand (not part of
 * `npm run bench`: a minute of DuckDB and parquet-wasm per run) with bench/exports/writer-comparison.ts.
 */
/** The second measurement: our column encoders against hyparquet-writer's own path (filled in below). */
const WRITER_COMPARISON_NOW = [
  'Second choice, 2026-11-26 (load average 1.5; generation floor 583 ms): our column encoders (ParquetRecordWriter,',
  "src/core/exports/formats/parquet-columns.ts) against hyparquet-writer's own `ParquetWriter` on the same schema and",
  'options (GZIP 1, row groups of 10,000, PLAIN without statistics for the unique columns), the two others as before:',
  '',
  '| writer | write time (ms) | peak RSS (MiB) | file (MB) | bundle + binary (KB) | module init (ms) |',
  '|---|---:|---:|---:|---:|---:|',
  "| **acctops column encoders** + hyparquet-writer's thrift (chosen) | 3,794 | 124.7 | 15.5 (GZIP 1) | 114 | 49.5 |",
  '| hyparquet-writer 0.17.0 `ParquetWriter` | 8,231 | 164.1 | 15.4 (GZIP 1) | 52 | 11.3 |',
  '| parquet-wasm 0.8.0 (arrow-rs) + apache-arrow 21.2 | 21,587 | 916.2 | 92.2 (SNAPPY) | 5,153 | 78.2 |',
  '| DuckDB 1.5 (`@duckdb/node-api` appender, `COPY … TO`) | 19,689 | 1,343.4 | 25.6 (SNAPPY) | 69,367 | 108.2 |',
  '',
  "Our encoders take 0.46 of hyparquet-writer's time at 0.76 of its peak RSS, for a file 0.7% larger (numbers and",
  'dates are PLAIN, where hyparquet-writer sampled every column for a dictionary). Their bundle and init include the',
  'date parsing and currency table they import from the client and the exporter, which the export function loads',
  "anyway: the export-period bundle went from 278 to 248 KB, since hyparquet-writer's generic path left it.",
  'Decision: the encoders (docs/architecture.md, record 56); the files are judged by DuckDB and arrow-rs in the suite.',
].join('\n');

const WRITER_COMPARISON = [
  '### Parquet writer: the choice (issue 14)',
  '',
  'Command: `npx tsx bench/exports/writer-comparison.ts 1000000 1`. Each candidate writes the transactions columns of',
  "1M rows shaped like the exporter's (13 columns: DECIMAL(18,4), TIMESTAMP UTC, DATE, INT64, text) to a file, in a",
  'fresh process (bundled with esbuild, plain `node`); time excludes module loading and the row-generation floor;',
  "peak RSS is the child's own `VmHWM`; bundle is esbuild's minified bundle of the smallest program that loads the",
  'writer plus the WebAssembly or native binaries it must ship; module init is `require` of that bundle, median of',
  '5. The candidates run back to back, one round each, on the 2 shared cores: their order holds, absolute times',
  'move with the machine.',
  '',
  'First choice, 2026-11-25 (load average 8-11; generation floor 876 ms):',
  '',
  '| writer | write time (ms) | peak RSS (MiB) | file (MB) | bundle + binary (KB) | module init (ms) |',
  '|---|---:|---:|---:|---:|---:|',
  '| **hyparquet-writer 0.17.0**, INT_64 fix (chosen) | 12,914 | 166.0 | 15.4 (GZIP 1) | 52 | 40.4 |',
  '| parquet-wasm 0.8.0 (arrow-rs) + apache-arrow 21.2 | 56,062 | 887.2 | 92.2 (SNAPPY) | 5,153 | 445.0 |',
  '| DuckDB 1.5 (`@duckdb/node-api` appender, `COPY … TO`) | 54,935 | 1,274.9 | 25.6 (SNAPPY) | 69,367 | 514.0 |',
  '',
  'How each was driven: hyparquet-writer through its incremental `ParquetWriter`, as the exporter did then (row',
  "groups of 10,000, streamed out). parquet-wasm 0.8.0's `writeParquet` takes a whole table, so every 100,000 rows",
  'became one apache-arrow table, one IPC stream copied into WebAssembly memory and one Parquet part (a streaming',
  '`transformParquetStream` exists but still needs the rows as arrow batches, where most of its time goes:',
  '`vectorFromArray` of the text columns). DuckDB got the rows through its appender, one call per value, into an',
  "in-memory table, then `COPY t TO '…' (FORMAT parquet)`; its writer is fast, the per-value calls across the",
  'N-API boundary and the table held in memory are not. Decision: **hyparquet-writer**, with 64-bit integers',
  'written with `converted_type INT_64` only, because its `INTEGER` logical type is malformed (docs/exports.md,',
  '"Parquet"); it was the fastest here, the only one within the export\'s memory budget, 100× smaller to ship and',
  '10× faster to load (module init counts against the Lambda cold start target). Both other candidates stay dev',
  'dependencies, as the independent readers of the test suite.',
  '',
  WRITER_COMPARISON_NOW,
];

const RATIO_BOUND: Record<ExportRun, number> = { 'jsonl-dir': 1.3, 'all-dir': 2.0, 'all-s3': 2.0 };
// Issue 14: 192 MiB (was 256 MB; 202 MiB measured before it).
const RSS_LIMIT_BYTES = 192 * 2 ** 20;
const GROWTH_LIMIT = 0.2;

interface SizeResult {
  transactions: number;
  runs: Record<ExportVariant, MeasuredExportRun[]>;
  /** Per round, export time / baseline time of the same round (for the node:http loop too). */
  ratios: Record<Exclude<ExportVariant, 'baseline'>, number[]>;
  /** Per round, export time / the node:http loop's time of the same round. */
  httpRatios: Record<Exclude<ExportVariant, 'baseline' | 'baseline-http'>, number[]>;
  /** Per round, the CPU floor of the ratio (`cpuFloorRatio`). */
  floors: Record<Exclude<ExportVariant, 'baseline' | 'baseline-http'>, number[]>;
  plain: MeasuredExportRun;
}

function sizeLabel(n: number): string {
  return n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`;
}

/**
 * Export throughput and memory: per size, `rounds` rounds of [baseline, JSONL, all formats to a
 * directory, all formats to s3rver], each a fresh process; ratios are taken within a round, so a
 * machine that slows down between rounds slows both sides of a ratio.
 */
export async function runExportSection(options: ExportSectionOptions): Promise<SectionReport> {
  const deployed = exportFunctionSettings();
  const memoryMb = deployed?.memoryMb ?? FALLBACK_MEMORY_MB;
  const sandbox = await startSandboxProcess();
  let s3: LocalS3 | undefined;
  const results: SizeResult[] = [];
  const start = lambdaNodeStart(memoryMb, deployed?.nodeOptions);
  try {
    s3 = await startS3([BUCKET]);
    await bundleExportChild();
    for (const size of options.sizes) {
      const dataset = await createDataset(sandbox, size.transactions);
      const context: ExportRunContext = { sandbox, s3, dataset, start };
      // Warms the sandbox's JIT, so that the first measured baseline is not its slowest.
      await runExportChild('baseline', context);
      const runs = { baseline: [], 'baseline-http': [], 'jsonl-dir': [], 'all-dir': [], 'all-s3': [] } as SizeResult['runs'];
      const ratios = { 'baseline-http': [], 'jsonl-dir': [], 'all-dir': [], 'all-s3': [] } as SizeResult['ratios'];
      const httpRatios = { 'jsonl-dir': [], 'all-dir': [], 'all-s3': [] } as SizeResult['httpRatios'];
      const floors = { 'jsonl-dir': [], 'all-dir': [], 'all-s3': [] } as SizeResult['floors'];
      for (let round = 0; round < size.rounds; round++) {
        for (const variant of VARIANTS) runs[variant].push(await runExportChild(variant, context));
        ratios['baseline-http'].push(runs['baseline-http'][round]!.ms / runs.baseline[round]!.ms);
        for (const variant of EXPORTS) {
          ratios[variant].push(runs[variant][round]!.ms / runs.baseline[round]!.ms);
          httpRatios[variant].push(runs[variant][round]!.ms / runs['baseline-http'][round]!.ms);
          floors[variant].push(cpuFloorRatio(runs[variant][round]!, runs.baseline[round]!));
        }
      }
      const plain = await runExportChild('all-dir', { ...context, start: { args: ['--expose-gc'], nodeOptions: undefined } });
      results.push({ transactions: size.transactions, runs, ratios, httpRatios, floors, plain });
    }
  } finally {
    await sandbox.stop();
    await s3?.stop();
  }
  return exportReport(results, options, sandbox.command, start, { memoryMb, deployed: deployed !== undefined });
}

function exportReport(
  results: SizeResult[],
  options: ExportSectionOptions,
  sandboxCommand: string,
  start: LambdaNodeStart,
  memory: { memoryMb: number; deployed: boolean },
): SectionReport {
  const rows: (string | number)[][] = [];
  for (const r of results) {
    for (const variant of VARIANTS) {
      const runs = r.runs[variant];
      const seconds = median(runs.map((x) => x.ms)) / 1000;
      rows.push([
        sizeLabel(r.transactions),
        LABEL[variant],
        runs.length,
        seconds.toFixed(2),
        (median(runs.map((x) => x.cpuMs)) / 1000).toFixed(2),
        Math.round(r.transactions / seconds).toLocaleString('en-US'),
        variant === 'baseline' ? '1' : median(r.ratios[variant]).toFixed(2),
        variant === 'baseline' ? '' : variant === 'baseline-http' ? '1' : median(r.httpRatios[variant]).toFixed(2),
        variant === 'baseline' || variant === 'baseline-http' ? '' : median(r.floors[variant]).toFixed(2),
        `${mib(median(runs.map((x) => x.peakRssBytes)))} (${mib(max(runs.map((x) => x.peakRssBytes)))})`,
        mib(median(runs.map((x) => x.sampled.heapTotalBytes))),
        mib(median(runs.map((x) => x.retainedHeapBytes ?? 0))),
      ]);
    }
    const p = r.plain;
    rows.push([
      sizeLabel(r.transactions),
      LABEL.plain,
      1,
      (p.ms / 1000).toFixed(2),
      (p.cpuMs / 1000).toFixed(2),
      Math.round(r.transactions / (p.ms / 1000)).toLocaleString('en-US'),
      '',
      '',
      '',
      mib(p.peakRssBytes),
      mib(p.sampled.heapTotalBytes),
      mib(p.retainedHeapBytes ?? 0),
    ]);
  }

  const targets: TargetResult[] = [];
  for (const r of results) {
    for (const variant of EXPORTS) {
      const ratio = median(r.ratios[variant]);
      const floor = median(r.floors[variant]);
      targets.push({
        id: `export.ratio.${variant}`,
        what: `Export-to-baseline ratio, ${LABEL[variant].replace('acctops, ', '')}, ${sizeLabel(r.transactions)}`,
        bound: `<= ${RATIO_BOUND[variant].toFixed(1)}`,
        measured:
          ratio <= RATIO_BOUND[variant] || Number.isNaN(floor) ? ratio.toFixed(2) : `${ratio.toFixed(2)} (CPU floor ${floor.toFixed(2)})`,
        pass: ratio <= RATIO_BOUND[variant],
      });
    }
  }
  const exportRuns = results.flatMap((r) => EXPORTS.flatMap((v) => r.runs[v].map((x) => ({ r, v, x }))));
  const worst = exportRuns.reduce((a, b) => (b.x.peakRssBytes > a.x.peakRssBytes ? b : a));
  targets.push({
    id: 'export.rss',
    what: 'Peak RSS of the export process, largest of every export run at both sizes',
    bound: '<= 192 MiB',
    measured: `${mib(worst.x.peakRssBytes)} MiB (${LABEL[worst.v].replace('acctops, ', '')}, ${sizeLabel(worst.r.transactions)})`,
    pass: worst.x.peakRssBytes <= RSS_LIMIT_BYTES,
  });
  if (results.length >= 2) {
    const [small, large] = [results[0]!, results[results.length - 1]!];
    const growth = EXPORTS.map((v) => {
      const a = median(small.runs[v].map((x) => x.peakRssBytes));
      const b = median(large.runs[v].map((x) => x.peakRssBytes));
      return { v, growth: b / a - 1 };
    }).reduce((a, b) => (b.growth > a.growth ? b : a));
    targets.push({
      id: 'export.rss-growth',
      what: `Peak RSS growth from ${sizeLabel(small.transactions)} to ${sizeLabel(large.transactions)} (medians), largest of the three exports`,
      bound: '<= 20%',
      measured: `${(growth.growth * 100).toFixed(1)}% (${LABEL[growth.v].replace('acctops, ', '')})`,
      pass: growth.growth <= GROWTH_LIMIT,
    });
  }

  const baselineGrowth =
    results.length >= 2
      ? (() => {
          const [a, b] = [results[0]!, results[results.length - 1]!].map((r) => median(r.runs.baseline.map((x) => x.peakRssBytes)));
          return [
            `   In this run the bare fetch loop, under the same flags, went from ${mib(a!)} to ${mib(b!)} MiB (${((b! / a! - 1) * 100).toFixed(0)}%) between`,
            `   ${sizeLabel(results[0]!.transactions)} and ${sizeLabel(results[results.length - 1]!.transactions)}: the young generation needs a few seconds of allocation to reach its size, whoever allocates.`,
          ];
        })()
      : [];
  const markdown = [
    `Setup: the sandbox in its own process (\`${sandboxCommand}\`), one company per size with 12 categories, 6 tax`,
    `reports and a generated month (${PERIOD}) of transactions, read with a key holding only the three read permissions.`,
    `Page size ${PAGE_SIZE}. s3rver runs in the benchmark's own process, never in the measured one.`,
    '',
    'Each run is a fresh child process (`node .bench-out/export-child.js <job>`, bench/exports/export-child.ts bundled',
    'with esbuild like a Lambda function, so no TypeScript loader is in it): it reads categories, tax reports and the',
    "month's transactions and writes them with `PeriodExporter` (manifest, symlinks, checksums: the whole publish) to a",
    'local directory (`DirObjectStore`) or to s3rver (`S3ObjectStore`, multipart, default 5 MiB parts, one in flight). Time is measured',
    "inside the child, from the first request to the published manifest; **CPU s** is the child's CPU time over the same",
    "span (user + system, every thread: gzip and file writes run on the thread pool). **Peak RSS** is the child's own",
    'peak (`VmHWM` of /proc/self/status, see finding 1 below); the V8 heap column is the largest `heapTotal` sampled every 100 ms; "retained" is',
    'the heap after a full GC at the end (what the export really holds on to).',
    '',
    `The child starts the way the Lambda Node.js runtime starts a ${memory.memoryMb} MB function${memory.deployed ? ` (the memory and \`NODE_OPTIONS\` the stack gives \`${EXPORT_FUNCTION}\`)` : ` (the stack does not deploy \`${EXPORT_FUNCTION}\` yet; ${FALLBACK_MEMORY_MB} MB assumed)`}: \`${describeStart(start)}\``,
    '(its bootstrap adds `--expose-gc` and derives the heap flags from `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`: new space =',
    'memory / 10, semi-space half of that, old space the rest, unless `NODE_OPTIONS` names either heap flag, in which case',
    'it adds neither; bench/lib/lambda-node.ts). One extra run per size uses plain `node` for comparison.',
    '',
    '**Baseline**: the same pages (same lists, same page size, same key) fetched by a bare loop: `fetch`, read the body,',
    "`JSON.parse` it to find `next`, drop it. The ratio is the export's time over the baseline's in the same round, then the",
    "median over the rounds. Since 2026-11-26 acctops talks to the service through Node's own `http` client (keep-alive),",
    'which costs ~2 ms less CPU per page of 1,000 transactions than `fetch`: the targets keep the `fetch` loop they were set',
    'against, and a second bare loop on `http` (same pages, a keep-alive agent, read, `JSON.parse`) is measured in every',
    'round beside it, so that the last ratio column shows what the export adds to the cheapest way to read the pages.',
    `Runs per size: ${options.sizes.map((s) => `${sizeLabel(s.transactions)} × ${s.rounds}`).join(', ')} (plus one warm-up baseline).`,
    '',
    `**CPU floor of the ratio**: the child's CPU plus what its peers spent while it ran (the sandbox's process, and this`,
    `one, which hosts s3rver), divided by the machine's ${CORES} cores and by the baseline's time of the same round; the`,
    'median over the rounds. No scheduling of the same work (overlap, worker threads) can bring the ratio below it on',
    'this machine; where it is above a bound, only spending less CPU can meet that bound here. The baseline pays the',
    "sandbox's time in series with its own (one request at a time), so its wall time is about the sum of the two.",
    '',
    table(
      [
        'Size',
        'Run',
        'Runs',
        'Median s',
        'CPU s',
        'Transactions/s',
        'Ratio to baseline',
        'Ratio to the node:http loop',
        `CPU floor of the ratio (${CORES} cores)`,
        'Peak RSS MiB, median (max)',
        'V8 heap peak MiB',
        'Retained heap MiB',
      ],
      rows,
    ),
    '',
    '### Memory: what we found',
    '',
    'A by-hand run had seen 144 MB at 100k and 200 MB at 1M (+39%) and suspected GC slack. What we found:',
    '',
    "1. **A measurement trap first.** `process.resourceUsage().maxRSS` in a child process on Linux is not the child's own",
    '   peak: the kernel carries the high-water mark of the image the child was forked from across `exec`. A child of',
    '   this benchmark (~180 MiB after loading aws-cdk-lib) reported 179.2 MiB for every run, a bare fetch loop',
    '   included; a 40 MiB child of a 340 MiB parent reports 304 MiB. The child now reads `VmHWM` from',
    '   `/proc/self/status`, the peak of its own image (maxRSS only where /proc is missing). Peak RSS figures taken with',
    '   maxRSS from a large parent are too high, and their growth is diluted.',
    '2. **Nothing accumulates per record.** The heap retained after a full GC (last column) is the same at 100k and 1M,',
    '   14–16 MiB: one 64 KiB chunk per text writer, one Parquet row group (10,000 rows), the category names.',
    "3. **The rest is the young generation, sized by the function's memory.** Lambda's bootstrap passes",
    '   `--max-semi-space-size` = memory / 20 and `--max-old-space-size` = 90% of memory; V8 lets the young generation',
    '   grow to three semi-spaces when the allocation rate is high, which it is (per-record objects). Peak RSS by',
    '   heap flags, all formats, measured by hand on this machine on 2026-11-21 (`node <flags> .bench-out/export-child.js',
    '   <job>`, VmHWM, MiB):',
    '',
    '   | Heap flags | 100k, directory | 100k, S3 | 1M, directory | 1M, S3 |',
    '   |---|---|---|---|---|',
    '   | plain `node` (24 GiB machine: 16 MiB semi-space) | 148 | 197 | 196 | 273 |',
    '   | Lambda 256 MB (semi 12, old 231) | 129 | 167 | 135 | 220 |',
    '   | Lambda 512 MB (semi 25, old 461) | 165 | 203 | 174 | 268 |',
    '   | Lambda 1024 MB (semi 51, old 922) | 232 | 264 | 234 | 320 |',
    '   | Lambda 1024 MB, then `--max-semi-space-size=16` | 141 | 167 | 145 | 236 |',
    '   | the same, and S3 parts of 5 MiB with `queueSize: 1` | | 171 | | 185 |',
    '',
    '   (The S3 columns above, last row aside, used the former part settings, 8 MiB × 3 per object.)',
    '',
    ...baselineGrowth,
    '',
    '   Smaller Parquet row groups (2,000 rows) or pages (200 items) did not change it (within 10 MiB): V8 sizes the',
    '   young generation by allocation rate, not by what we keep, and a flag set at run time (`v8.setFlagsFromString`)',
    '   comes too late (289 vs 293 MiB). **Fixed** on 2026-11-21: the export function now has',
    "   `AcctopsFunction`'s `maxSemiSpaceMb: 16`, which put `--max-semi-space-size=16 --max-old-space-size=922` in its",
    "   `NODE_OPTIONS`. The runtime's bootstrap adds neither heap flag when `NODE_OPTIONS` names one of them, so this is",
    '   the supported way to set them (an earlier reading here, that the command-line flags would win over',
    '   `NODE_OPTIONS`, came from starting node with both; the bootstrap never does that). The function keeps 1024 MB,',
    '   and with it the CPU. Its old space is 2,047 MiB since 2026-11-26 (finding 6).',
    "   V8 offers only powers of two for this cap: it rounds `--max-semi-space-size` up to one (Node 20's V8 11.3 and",
    "   Node 24's 13.6 alike; a loop of garbage scavenges 54 times at 8, 31 at 12 and 31 at 16, and its new space",
    '   reaches the same size at 10, 12, 14 and 16). So 12 is 16: an interleaved A/B of 12 against 16 (the pool bundle,',
    '   1M to s3rver, 2 rounds, load average 7) gave peak RSS 188.2 / 190.6 against 185.9 / 175.4 MiB, the run-to-run',
    '   spread of one setting. The choice is 16 or 8, and 8 saves 12-15 MiB for 4-7% more in the ratios (more',
    '   scavenges; A/B of 2026-11-25 morning), so 16 stays while the peak is under its bound.',
    '4. **S3 adds part buffers, bounded.** lib-storage holds `partSize × (queueSize + 1)` per object, three objects at',
    '   once, and for a moment the `Buffer.concat` copy of the chunks it cuts a part from. At 100k the JSONL and Parquet objects are smaller than one part; at 1M every object is multipart and the',
    '   buffers are full. That, not the record count, is the growth to S3 from 100k to 1M, and it stops at the cap:',
    '   72 MiB with the former defaults (8 MiB × 3), 30 MiB since `S3ObjectStore` defaults to 5 MiB parts, one in',
    '   flight (5 MiB × 2 × 3), 20 MiB since the three objects share one pool (finding 5). Measured by hand on 2026-11-21, 1M to s3rver with the 1024 MB flags, 3 runs each:',
    '   peak RSS 321–335 MiB before, 284–290 MiB after, ratio to the baseline 5.12–5.64 before, 5.58–5.76 after (noise).',
    "5. **lib-storage's part buffers outlived their parts.** `Upload` cuts each part with `Buffer.concat` into fresh",
    '   memory and keeps the rest of the last chunk as a view on it; a part lives while it uploads, which is longer than a',
    '   young-generation cycle, so its buffer was freed only by a major GC, and every part paid page faults for new',
    '   memory. Since 2026-11-25 `S3ObjectStore` uploads parts itself from at most `queueSize + 1` buffers per object,',
    '   allocated once and reused (same CreateMultipartUpload / UploadPart / Complete calls, the same abort on any',
    '   failure, CRC32 when the client computes checksums). One interleaved round at 1M to s3rver (loaded machine, load',
    '   average 17): peak RSS 189.3 -> 180.1 MiB, CPU 30.7 -> 27.0 s.',
    '   Since the fifth session (2026-11-25) the buffers are one pool per store, shared by the objects streaming',
    '   through it (`maxPartBuffers`, default the objects streaming + `queueSize`): each object fills one buffer, full',
    "   ones wait for UploadPart within the shared budget, so a dataset's three formats hold at most 4 (20 MiB) instead",
    '   of 6; an object waits only while some part is uploading, so it never deadlocks. Interleaved A/B of that change',
    "   at 1M to s3rver (bench/exports/ab.ts, 7 rounds in three runs, load average 5-9: the lead's test suites alongside),",
    '   peak RSS per round, main -> pool: 196.7 -> 189.2, 188.2 -> 177.9, 189.6 -> 174.4, 200.4 -> 174.8,',
    '   188.1 -> 177.5, 195.5 -> 184.8, 190.7 -> 189.5 MiB (median 190.7 -> 177.9, lower in every round; the last two',
    '   with the row change below, and a test suite of ours alongside); ratio median 2.37 -> 2.43 over the 3 rounds of',
    '   the second run, CPU 21.3 / 24.3 / 21.1 -> 21.1 / 25.3 / 20.7 s: unchanged within noise.',
    '6. **The old-space limit paces the full collections.** `--trace-gc` of a 100k JSONL export (2026-11-26) showed',
    '   eleven scavenges and ten mark-compacts, one every ~150 ms after the first second: each found ~14 MiB alive and',
    '   the heap grown by ~15 MiB since the last. V8 lets the heap grow to at most a factor of what survived the last',
    "   full collection, and that factor follows `--max-old-space-size` (V8's MemoryController on 64-bit Node: 1.3 at",
    "   256 MiB, 1.56 at the runtime's 922, 2.0 just below 2,048, 4.0 from 2,048 on). Mark-compacts per 100k JSONL export",
    '   at 922 / 1,536 / 2,047 / 2,048 MiB: 10 / 6 / 6 / 2; at 1M all formats to s3rver, one run each: 41 / 25 / - / 6, child',
    '   CPU 20.7 / 18.6 / - / 17.3 s, peak RSS 169 / 171 / - / 210 MiB. 2,048 and above would cost the RSS bound, so the',
    '   export function sets `maxOldSpaceMb: 2047` (interleaved A/B at 1M, 2 rounds: child CPU 13.62 -> 11.01 s JSONL,',
    '   21.07 -> 20.83 s all formats to a directory, 20.57 -> 19.90 s to s3rver; peak RSS +4 to +9 MiB). The limit above',
    "   the function's 1024 MB is pacing, not a guard: the export keeps ~15 MiB (finding 2), and a heap that reached",
    "   the function's memory would end the invocation either way.",
    '',
    "So the export's memory is bounded (retained heap flat, buffers capped); its peak is set by the young generation,",
    "which the function's `NODE_OPTIONS` now caps, and by the S3 part settings.",
    '',
    RATIO_PROFILE,
    '',
    ...WRITER_COMPARISON,
  ].join('\n');

  return {
    title: 'Export throughput and memory',
    command: 'npm run bench -- --only exports',
    markdown,
    targets,
    misses: EXPORT_MISSES,
  };
}

/**
 * Where the export's CPU goes, measured by hand (the dated measurements are in
 * docs/benchmark-history.md): always printed, since the ratios pass or miss by less than one
 * bundle's spread from run to run.
 */
const RATIO_PROFILE = [
  '### The ratios: where the CPU goes',
  '',
  'The export is CPU-bound in one thread, and so is the baseline, on less work: the ratio bounds give the export the',
  "baseline's time once more (all formats) or 30% more (JSONL) to check each record and write it three ways or one.",
  'A `--cpu-prof` of the export child, 200k transactions, all formats to a directory (2026-11-27, bench/exports/ab.ts',
  '`--prof`, an unminified bundle; the machine busy with other work, so the shares are what it shows, not the times);',
  "shares of the main thread's busy time over the measured span:",
  '',
  '| Part | Share |',
  '|---|---|',
  "| reading the pages: HTTP, the body's text, `JSON.parse` (what the baseline does too) | 24% |",
  '| each item: the fast-path checks (GUIDs, amount, timestamp) and the cut of its JSON text for JSONL | 15% |',
  '| Parquet: column encoders 11%, GZIP level 1 of the pages 4% | 15% |',
  "| CSV: cells and quoting 10%, the text's copy to bytes 3% | 13% |",
  '| garbage collection | 11% |',
  '| JSONL (its gzip runs on the thread pool, not here) | 3% |',
  '| the per-record loop, the row, totals and checksums, file writes, the rest | 19% |',
  '',
  'No part is large enough that removing it alone would meet the all-formats bound, and each of the last six',
  "sessions' changes moved the child's CPU by 1-5%, inside the spread of one unchanged bundle's ratio between rounds",
  '(1.10 to 1.66 for JSONL at 100k within one hour). The CPU floor beside each ratio (the CPU of the child and its',
  "peers over the machine's two cores) tells a bound that scheduling could meet from one that only less CPU can: to a",
  'directory the floor is 1.3-1.5, so a second thread would meet the bound on this machine; the deployed export',
  "function has 0.58 vCPU (1024 MB), where a worker thread only adds work. Against the real service each page's",
  'network time falls into the baseline and the ratios shrink: these are loopback worst cases.',
  '',
  "Done (some twenty measured changes, each kept only after an interleaved A/B): Node's own `http` client instead of",
  "`fetch`; the next page requested from the current page's first bytes; a hand-written validation fast path equal to",
  "the zod schema; the JSONL line cut from the page's bytes; gzip at level 1 fed 512 KiB at a time; Parquet pages",
  "compressed by Node's zlib; statistics only where a row group can be pruned; S3 parts from one pool; Parquet row",
  'groups by our own column encoders; the old-space limit that paces full collections (finding 6); a decimal-string',
  'amount (the spec\'s `"49.99"`) read through a number, not substrings and a BigInt of text (this benchmark\'s sandbox',
  'sends integers, so its figures do not show it). Measured and dropped: Parquet pages gzipped on the thread pool',
  'while the next row group is encoded (no less CPU on the main thread, more in all; docs/benchmark-history.md).',
  'Left: CSV and Parquet encoding in a worker thread, for an export function given two vCPUs (3,538 MB); fewer',
  'objects per record.',
].join('\n');

/** Why the ratios miss: the profile above, in short. */
const RATIO_NOTE =
  'Cause: the export is CPU-bound in one thread, and no single part of its CPU is large enough to meet the bound alone ("The ratios: where the CPU goes", under "Export throughput and memory", has the profile, what was done and what is left). At the deployed function\'s 0.58 vCPU only less CPU shortens an export. At 100k some 0.2 s a run does not scale with the records (the first requests, ICU\'s start-up for the first currency lookup, the publish with fsync, V8 compiling the per-record code), which weighs more the faster the hour\'s baseline. Dated measurements: docs/benchmark-history.md.';

/** What only the ratios to s3rver add to RATIO_NOTE. */
const S3RVER_NOTE =
  "To s3rver, on top of the directory's cause: s3rver runs on the same two cores and spends 0.6-1.4 s of CPU per 100k writing and MD5-ing every byte, twice for a multipart object (UploadPart, then Complete re-reads and concatenates the parts: for the CSV at 1M, 1.8-3.2 s after the last record), which S3 does on neither the caller's CPU nor its clock; so the CPU floor of these ratios (in the table) is well above the directory's, near the bound or above it: no scheduling of ours could meet it on this machine. Our side spends what a directory costs plus the SDK's ~0.5 s per 100k (profiled in the sixth session). Left for S3: the CSV written as several bounded objects, each completed while the export runs (a change of the layout and the manifest). ";

const EXPORT_MISSES: Record<string, string> = {
  'export.ratio.jsonl-dir': RATIO_NOTE,
  'export.ratio.all-dir': RATIO_NOTE,
  'export.ratio.all-s3': S3RVER_NOTE + RATIO_NOTE,
  'export.rss':
    "Cause (see \"Memory: what we found\"): the young generation (capped at 3 × 16 MiB by the function's `NODE_OPTIONS`) and the S3 part buffers (at most 4 × 5 MiB for a dataset's three objects since they share one pool, finding 5) come on top of a retained heap of ~15 MiB and Node's own ~70 MiB. Built in the fifth session: the shared pool, interleaved median at 1M to s3rver 190.7 -> 177.9 MiB, lower in all 7 rounds (finding 5); one bundle still spreads by about ±7 MiB from run to run with the machine's load (174-191 MiB for the pool bundle that morning). Built in the eighth session: the JSONL line cut from the page instead of a string per record (decision 44), interleaved at 1M to s3rver 194.9 / 192.8 / 191.8 -> 191.0 / 181.9 / 177.2 MiB. Twelfth session: 194.5 MiB in the full run at 2026-11-26 08:13Z; interleaved A/Bs at 1M to s3rver right afterwards spread 178-195 MiB for the eleventh session's last commit and this one alike (5 rounds, medians 182.4 and 191.3 MiB; 3 more, with this commit's CSV change reverted in one bundle, 190.6 against 182.3), so the bound lies inside one bundle's run-to-run spread. Plan, if a quiet run still misses: `maxSemiSpaceMb: 8` in lib/constructs/exports/pipeline.ts (V8 has no cap between 8 and 16, finding 3): -12 to -15 MiB for 4-7% more in the ratios.",
  'export.rss-growth':
    "Cause: to S3, the part buffers fill only at 1M: at 100k the JSONL and Parquet objects are smaller than one 5 MiB part, at 1M all three objects are multipart, filling part buffers from the store's shared pool (finding 5); the retained heap does not grow (last column), and to a directory the growth stays under the bound (table above). Built on 2026-11-25: part buffers allocated once per object and reused, instead of lib-storage's fresh `Buffer.concat` per part; then one pool of part buffers per store, shared by the three objects of a dataset (at most 4 buffers instead of 6).",
};
