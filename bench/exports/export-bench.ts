import * as path from 'node:path';
import { build } from 'esbuild';
import { startS3, type LocalS3 } from '../../test/helpers/s3rver';
import { startSandboxProcess, type SandboxProcess } from '../lib/peers';
import { OUT_DIR, runNodeJson } from '../lib/processes';
import { table, type SectionReport, type TargetResult } from '../lib/report';
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
    await admin.addTaxReport({ companyId, periodStart: start, periodEnd: start.replace(/01$/, '28'), status: 'submitted', amountDue: '1234.56' });
  }
  await admin.generateTransactions({ companyId, month: PERIOD, count: transactions });
  const key = await admin.createApiKey({ companyId, permissions: ['read_transactions', 'read_categories', 'read_tax_reports'], name: 'bench export' });
  return { companyId, apiKey: key.key, transactions };
}

/**
 * Bundles export-child.ts the way a Lambda function is bundled (CJS, minified, @aws-sdk left to
 * node_modules), but for the Node running the benchmark, so that the measured process carries no
 * TypeScript loader.
 */
export async function bundleExportChild(): Promise<string> {
  await build({
    entryPoints: [path.join(__dirname, 'export-child.ts')],
    outfile: CHILD_BUNDLE,
    bundle: true,
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    format: 'cjs',
    minify: true,
    keepNames: true,
    external: ['@aws-sdk/*'],
    logLevel: 'warning',
  });
  return CHILD_BUNDLE;
}

export type ExportVariant = 'baseline' | 'jsonl-dir' | 'all-dir' | 'all-s3';

export interface ExportRunContext {
  sandbox: SandboxProcess;
  s3: LocalS3 | undefined;
  dataset: ExportDataset;
  /** Extra node flags for the child (V8 heap settings). */
  nodeFlags?: string[];
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
    case 'jsonl-dir':
      return { ...base, mode: 'export', formats: ['jsonl'], target: dir };
    case 'all-dir':
      return { ...base, mode: 'export', formats: ['jsonl', 'csv', 'parquet'], target: dir };
    case 'all-s3':
      if (!context.s3) throw new Error('all-s3 needs s3rver');
      return { ...base, mode: 'export', formats: ['jsonl', 'csv', 'parquet'], target: { kind: 's3', endpoint: context.s3.endpoint, bucket: BUCKET } };
  }
}

export async function runExportChild(variant: ExportVariant, context: ExportRunContext): Promise<ExportChildResult> {
  const job = jobFor(variant, context);
  const result = await runNodeJson<ExportChildResult>([...(context.nodeFlags ?? []), CHILD_BUNDLE, JSON.stringify(job)], { timeoutMs: 600_000 });
  if (result.transactions !== context.dataset.transactions) {
    throw new Error(`${variant}: read ${result.transactions} transactions, expected ${context.dataset.transactions}`);
  }
  return result;
}

/**
 * The V8 heap flags the Lambda Node.js runtime gives a function of `memoryMb` (its bootstrap:
 * new space = memory / 10, semi-space = half of it, old space = the rest), plus its --expose-gc.
 */
export function lambdaNodeFlags(memoryMb: number): string[] {
  const newSpace = Math.floor(memoryMb / 10);
  return ['--expose-gc', `--max-semi-space-size=${Math.floor(newSpace / 2)}`, `--max-old-space-size=${memoryMb - newSpace}`];
}

export interface ExportSectionOptions {
  sizes: { transactions: number; rounds: number }[];
  /** The memory of the export function whose runtime flags the export process gets. */
  lambdaMemoryMb: number;
}

const VARIANTS: readonly ExportVariant[] = ['baseline', 'jsonl-dir', 'all-dir', 'all-s3'];
const EXPORTS: readonly Exclude<ExportVariant, 'baseline'>[] = ['jsonl-dir', 'all-dir', 'all-s3'];
const LABEL: Record<ExportVariant | 'plain', string> = {
  baseline: 'baseline: bare fetch loop',
  'jsonl-dir': 'acctops, JSONL only, local dir',
  'all-dir': 'acctops, JSONL + CSV + Parquet, local dir',
  'all-s3': 'acctops, JSONL + CSV + Parquet, s3rver',
  plain: 'acctops, all formats, local dir, plain `node` (no Lambda heap flags)',
};
const RATIO_BOUND: Record<Exclude<ExportVariant, 'baseline'>, number> = { 'jsonl-dir': 1.3, 'all-dir': 2.0, 'all-s3': 2.0 };
const RSS_LIMIT_BYTES = 256 * 2 ** 20;
const GROWTH_LIMIT = 0.2;

interface SizeResult {
  transactions: number;
  runs: Record<ExportVariant, ExportChildResult[]>;
  /** Per round, export time / baseline time of the same round. */
  ratios: Record<Exclude<ExportVariant, 'baseline'>, number[]>;
  plain: ExportChildResult;
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
  const sandbox = await startSandboxProcess();
  let s3: LocalS3 | undefined;
  const results: SizeResult[] = [];
  const flags = lambdaNodeFlags(options.lambdaMemoryMb);
  try {
    s3 = await startS3([BUCKET]);
    await bundleExportChild();
    for (const size of options.sizes) {
      const dataset = await createDataset(sandbox, size.transactions);
      const context: ExportRunContext = { sandbox, s3, dataset, nodeFlags: flags };
      // Warms the sandbox's JIT, so that the first measured baseline is not its slowest.
      await runExportChild('baseline', context);
      const runs = { baseline: [], 'jsonl-dir': [], 'all-dir': [], 'all-s3': [] } as SizeResult['runs'];
      const ratios = { 'jsonl-dir': [], 'all-dir': [], 'all-s3': [] } as SizeResult['ratios'];
      for (let round = 0; round < size.rounds; round++) {
        for (const variant of VARIANTS) runs[variant].push(await runExportChild(variant, context));
        for (const variant of EXPORTS) ratios[variant].push(runs[variant][round]!.ms / runs.baseline[round]!.ms);
      }
      const plain = await runExportChild('all-dir', { ...context, nodeFlags: ['--expose-gc'] });
      results.push({ transactions: size.transactions, runs, ratios, plain });
    }
  } finally {
    await sandbox.stop();
    await s3?.stop();
  }
  return exportReport(results, options, sandbox.command, flags);
}

function exportReport(results: SizeResult[], options: ExportSectionOptions, sandboxCommand: string, flags: string[]): SectionReport {
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
        Math.round(r.transactions / seconds).toLocaleString('en-US'),
        variant === 'baseline' ? '1' : median(r.ratios[variant]).toFixed(2),
        `${mib(median(runs.map((x) => x.peakRssBytes)))} (${mib(max(runs.map((x) => x.peakRssBytes)))})`,
        mib(median(runs.map((x) => x.sampled.heapTotalBytes))),
        mib(median(runs.map((x) => x.retainedHeapBytes ?? 0))),
      ]);
    }
    const p = r.plain;
    rows.push([sizeLabel(r.transactions), LABEL.plain, 1, (p.ms / 1000).toFixed(2), Math.round(r.transactions / (p.ms / 1000)).toLocaleString('en-US'), '', mib(p.peakRssBytes), mib(p.sampled.heapTotalBytes), mib(p.retainedHeapBytes ?? 0)]);
  }

  const targets: TargetResult[] = [];
  for (const r of results) {
    for (const variant of EXPORTS) {
      const ratio = median(r.ratios[variant]);
      targets.push({
        id: `export.ratio.${variant}`,
        what: `Export-to-baseline ratio, ${LABEL[variant].replace('acctops, ', '')}, ${sizeLabel(r.transactions)}`,
        bound: `<= ${RATIO_BOUND[variant].toFixed(1)}`,
        measured: ratio.toFixed(2),
        pass: ratio <= RATIO_BOUND[variant],
      });
    }
  }
  const exportRuns = results.flatMap((r) => EXPORTS.flatMap((v) => r.runs[v].map((x) => ({ r, v, x }))));
  const worst = exportRuns.reduce((a, b) => (b.x.peakRssBytes > a.x.peakRssBytes ? b : a));
  targets.push({
    id: 'export.rss',
    what: 'Peak RSS of the export process, largest of every export run at both sizes',
    bound: '<= 256 MB',
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

  const plainRows = results.map((r) => {
    const lambda = median(r.runs['all-dir'].map((x) => x.peakRssBytes));
    return `${sizeLabel(r.transactions)}: ${mib(r.plain.peakRssBytes)} MiB with plain \`node\`, ${mib(lambda)} MiB with the Lambda flags; heap retained after a full GC ${mib(r.plain.retainedHeapBytes ?? 0)} MiB`;
  });

  const markdown = [
    `Setup: the sandbox in its own process (\`${sandboxCommand}\`), one company per size with 12 categories, 6 tax`,
    `reports and a generated month (${PERIOD}) of transactions, read with a key holding only the three read permissions.`,
    `Page size ${PAGE_SIZE}. s3rver runs in the benchmark's own process, never in the measured one.`,
    '',
    'Each run is a fresh child process (`node .bench-out/export-child.js <job>`, bench/exports/export-child.ts bundled',
    'with esbuild like a Lambda function, so no TypeScript loader is in it): it reads categories, tax reports and the',
    'month\'s transactions and writes them with `PeriodExporter` (manifest, symlinks, checksums: the whole publish) to a',
    'local directory (`DirObjectStore`) or to s3rver (`S3ObjectStore`, multipart, default 8 MiB parts). Time is measured',
    'inside the child, from the first request to the published manifest. **Peak RSS** is the child\'s own',
    '`process.resourceUsage().maxRSS`; the V8 heap column is the largest `heapTotal` sampled every 100 ms; "retained" is',
    'the heap after a full GC at the end (what the export really holds on to).',
    '',
    `The child runs with the heap flags the Lambda Node.js runtime passes to a ${options.lambdaMemoryMb} MB function: \`${flags.join(' ')}\``,
    '(its bootstrap derives them from `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`: new space = memory / 10, semi-space half of that,',
    'old space the rest). One extra run per size uses plain `node` for comparison.',
    '',
    '**Baseline**: the same pages (same lists, same page size, same key) fetched by a bare loop: `fetch`, read the body,',
    '`JSON.parse` it to find `next`, drop it. The ratio is the export\'s time over the baseline\'s in the same round, then the',
    `median over the rounds. Runs per size: ${options.sizes.map((s) => `${sizeLabel(s.transactions)} × ${s.rounds}`).join(', ')} (plus one warm-up baseline).`,
    '',
    table(['Size', 'Run', 'Runs', 'Median s', 'Transactions/s', 'Ratio to baseline', 'Peak RSS MiB, median (max)', 'V8 heap peak MiB', 'Retained heap MiB'], rows),
    '',
    '### Memory: what we found',
    '',
    'A by-hand run had seen 144 MB at 100k and 200 MB at 1M (+39%) and suspected GC slack. It is GC slack, and it is',
    'V8\'s heap sizing, not something our code holds:',
    '',
    ...plainRows.map((line) => `- ${line}.`),
    '',
    '- The heap retained after a full GC is the same at 100k and at 1M (about 15 MiB): nothing accumulates per record.',
    '  The exporter holds one 64 KiB chunk per text writer, one Parquet row group (10,000 rows) and the category names.',
    '- A plain `node` on this machine sizes its heap for a multi-GB limit: young generation up to 3 × 16 MiB semi-spaces',
    '  and an old generation allowed to grow well past the live data before a full collection. The longer the run,',
    '  the closer the heap gets to that steady state: that is the growth from 100k to 1M.',
    '- Lambda does not run plain `node`: its bootstrap passes `--max-semi-space-size` and `--max-old-space-size` from the',
    '  function\'s memory, and V8 then collects earlier. We measured `--max-semi-space-size=4` alone (−20 MiB at 1M),',
    '  `--max-old-space-size=128` alone, and the Lambda set; the old-space limit is what matters. The benchmark therefore',
    '  runs the export with the Lambda flags, which is how it runs in production.',
    '- Smaller Parquet row groups would trim the live set a little (the comment in parquet-writer.ts measured +40 MiB',
    '  for 20,000 rows), but 10,000 is already small for readers (Athena prefers large groups), so we keep it.',
    '- S3 adds lib-storage\'s part buffers: `partSize × (queueSize + 1)` per object, three objects at once (8 MiB × 3 × 3',
    '  = 72 MiB at most). That is the difference between the s3rver and the directory rows, and it does not grow with',
    '  the number of records. A function with less memory can pass `partSize: 5 MiB` (S3\'s minimum).',
    '- The CLI runs exports in plain `node`; there the extra slack is harmless (it is a workstation), and',
    '  `NODE_OPTIONS=--max-old-space-size=256` bounds it if ever needed.',
  ].join('\n');

  return {
    title: 'Export throughput and memory',
    command: 'npm run bench -- --only exports',
    markdown,
    targets,
    misses: EXPORT_MISSES,
  };
}

const RATIO_CAUSE =
  'Cause: the export is CPU-bound in the export process while the baseline is not. Against a loopback sandbox a 1,000-record page costs the bare loop only its `JSON.parse` (~2 µs per record); acctops also validates every record with zod (~5 µs: uuid and timestamp checks, exact money), flattens it (the timestamp is parsed three times: zod, the row, the offset), sums totals and encodes it (gzip level 6; CSV; Parquet with dictionary attempts and statistics on every column), and the collector runs more often with the Lambda heap limits (GC was ~20% of CPU in a profile). Pages are fetched strictly one after the other, so the sandbox\'s time and ours add up instead of overlapping. Against the real service, network time per page dominates the baseline and the ratio shrinks. ';

const EXPORT_MISSES: Record<string, string> = {
  'export.ratio.jsonl-dir':
    RATIO_CAUSE +
    'Plan: (1) fetch page n+1 while page n is processed (pagination prefetch of one page, `next` checked before sending): hides the peer\'s time; (2) parse each timestamp once and share it between validation and the row; (3) gzip level 1 for JSONL (3× faster, ~25% larger) if storage cost allows; (4) a hand-written validator for list items on the export path, with zod kept for the error report.',
  'export.ratio.all-dir':
    RATIO_CAUSE +
    'Plan: the JSONL plan, plus Parquet without dictionary attempts and statistics on unique columns (`public_id`, `value_date*`), and the encoders in a worker thread when the function has two vCPUs (>= 1,769 MB).',
  'export.ratio.all-s3':
    RATIO_CAUSE +
    'To S3 the uploads add hashing and HTTP framing in the same process; s3rver also competes for the same two cores. Plan: as for the local directory.',
  'export.rss':
    'Cause: see "Memory: what we found"; with S3, lib-storage keeps up to 72 MiB of part buffers. Plan: pass `partSize: 5 MiB, queueSize: 1` for functions of 256 MB.',
  'export.rss-growth':
    'Cause: heap sizing (see "Memory: what we found"); the retained heap does not grow. Plan: if it misses with the Lambda flags, lower the old-space limit for the export function through its NODE_OPTIONS.',
};

