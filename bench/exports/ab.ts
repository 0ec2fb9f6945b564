// Interleaved A/B of two export-child bundles against the same sandbox, s3rver and dataset: the way
// each optimisation in BENCHMARKS.md ("Missed targets") was kept or dropped. Not part of
// `npm run bench`. Usage:
//   npx tsx bench/exports/ab.ts --a .bench-out/a.js [--b .bench-out/b.js] [--size 100000] [--rounds 3]
//     [--variants jsonl-dir,all-dir,all-s3] [--node-options '…'] [--node-options-b '…']
// Without --b the working tree is bundled as B. Each round runs the bare fetch loop, then every
// variant with A and B in alternating order; ratios are taken against the round's own baseline.
// Each run also reports the CPU its peers spent meanwhile: this process's (s3rver runs here, as in
// `npm run bench`) and the sandbox process's, which share the two cores with the measured child.
import { Command } from 'commander';
import { loadavg } from 'node:os';
import * as path from 'node:path';
import { startS3 } from '../../test/helpers/s3rver';
import { startSandboxProcess } from '../lib/peers';
import { OUT_DIR, runNodeJson } from '../lib/processes';
import { median, mib } from '../lib/stats';
import { bundleExportChild, createDataset, jobFor, processCpuMs, type ExportRunContext, type ExportVariant } from './export-bench';
import type { ExportChildResult } from './export-child';

/** The export function's NODE_OPTIONS (lib/constructs/exports/pipeline.ts) as the stack sets them on 2026-11-26. */
const DEFAULT_NODE_OPTIONS = '--enable-source-maps --max-semi-space-size=16 --max-old-space-size=2047';

async function main(): Promise<void> {
  const flags = new Command('ab')
    .requiredOption('--a <bundle>')
    .option('--b <bundle>')
    .option('--size <n>', 'transactions', '100000')
    .option('--rounds <n>', 'rounds', '3')
    .option('--variants <list>', 'variants', 'jsonl-dir,all-dir,all-s3')
    .option('--node-options <text>', 'NODE_OPTIONS of both', DEFAULT_NODE_OPTIONS)
    .option('--node-options-b <text>', "B's NODE_OPTIONS, for an A/B of a flag (the same bundle as --a and --b)")
    .option('--prof <dir>', 'write a --cpu-prof of every B run to this directory')
    .parse(process.argv.slice(2), { from: 'user' })
    .opts<{
      a: string;
      b?: string;
      size: string;
      rounds: string;
      variants: string;
      nodeOptions: string;
      nodeOptionsB?: string;
      prof?: string;
    }>();
  const bundles = {
    A: path.resolve(flags.a),
    B: flags.b ? path.resolve(flags.b) : await bundleExportChild(path.join(OUT_DIR, 'export-child-b.js')),
  };
  const variants = flags.variants.split(',') as Exclude<ExportVariant, 'baseline'>[];
  const sandbox = await startSandboxProcess();
  const s3 = await startS3(['acctops-bench-exports']);
  try {
    const dataset = await createDataset(sandbox, Number(flags.size));
    const context: ExportRunContext = { sandbox, s3, dataset };
    const run = (side: 'A' | 'B', variant: ExportVariant) => {
      const bundle = bundles[side];
      const nodeOptions = side === 'B' && flags.nodeOptionsB !== undefined ? flags.nodeOptionsB : flags.nodeOptions;
      const env = { ...process.env, NODE_OPTIONS: nodeOptions };
      const prof = flags.prof && side === 'B' ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(flags.prof)}`] : [];
      return runNodeJson<ExportChildResult>(['--expose-gc', ...prof, bundle, JSON.stringify(jobFor(variant, context))], {
        env,
        timeoutMs: 600_000,
      });
    };
    const sandboxPid = sandbox.process.child.pid;
    /** CPU seconds of the sandbox process so far, or NaN without /proc. */
    const sandboxCpu = (): number => processCpuMs(sandboxPid) / 1000;
    /** A run with the CPU the peers spent during it: this process (s3rver lives here) and the sandbox's. */
    const measured = async (side: 'A' | 'B', variant: ExportVariant) => {
      const ownBefore = process.cpuUsage();
      const sandboxBefore = sandboxCpu();
      const result = await run(side, variant);
      const own = process.cpuUsage(ownBefore);
      return { result, s3rverCpu: (own.user + own.system) / 1e6, sandboxCpu: sandboxCpu() - sandboxBefore };
    };
    await run('A', 'baseline');
    const ratios: Record<string, number[]> = {};
    const rss: Record<string, number[]> = {};
    const cpu: Record<string, { child: number[]; s3rver: number[]; sandbox: number[] }> = {};
    for (let round = 0; round < Number(flags.rounds); round++) {
      const base = await run('A', 'baseline');
      for (const variant of variants) {
        const order: ('A' | 'B')[] = round % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
        for (const side of order) {
          const { result, s3rverCpu, sandboxCpu: peerCpu } = await measured(side, variant);
          const key = `${variant} ${side}`;
          (ratios[key] ??= []).push(result.ms / base.ms);
          (rss[key] ??= []).push(result.peakRssBytes);
          const spent = (cpu[key] ??= { child: [], s3rver: [], sandbox: [] });
          spent.child.push(result.cpuMs / 1000);
          spent.s3rver.push(s3rverCpu);
          spent.sandbox.push(peerCpu);
          console.log(
            `round ${round} ${key}: ${(result.ms / 1000).toFixed(2)} s (baseline ${(base.ms / 1000).toFixed(2)}), ratio ${(result.ms / base.ms).toFixed(3)}, cpu ${(result.cpuMs / 1000).toFixed(2)} s, rss ${mib(result.peakRssBytes)} MiB, s3rver ${s3rverCpu.toFixed(2)} s, sandbox ${peerCpu.toFixed(2)} s, load ${loadavg()[0]!.toFixed(1)}`,
          );
        }
      }
    }
    for (const key of Object.keys(ratios)) {
      console.log(
        `${key}: median ratio ${median(ratios[key]!).toFixed(3)} [${ratios[key]!.map((r) => r.toFixed(2)).join(' ')}], median peak RSS ${mib(median(rss[key]!))} MiB [${rss[key]!.map(mib).join(' ')}], median CPU s: child ${median(cpu[key]!.child).toFixed(2)}, s3rver ${median(cpu[key]!.s3rver).toFixed(2)}, sandbox ${median(cpu[key]!.sandbox).toFixed(2)}`,
      );
    }
  } finally {
    await sandbox.stop();
    await s3.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
