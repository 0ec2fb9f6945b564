// Interleaved A/B of module init between two sets of Lambda bundles on this machine: how a change
// (or a range of commits) moved init when the machine's own speed moved more than the bound allows
// (BENCHMARKS.md, "Cold start"). Not part of `npm run bench`. Usage:
//   npx tsx bench/cold-start/ab-init.ts --a <cdk.out of A> [--b <cdk.out of B>] [--runs 10] [--functions a,b]
// A cdk.out is the directory an earlier `npm run bench -- --only cold-start` synthesized into
// (.bench-out/cold-start of that checkout: the template and one asset directory per function).
// Without --b the working tree is bundled as B. Each run is one fresh process per side, in
// alternating order, with the function's environment and flags from its own template.
import { Command } from 'commander';
import * as path from 'node:path';
import { median } from '../lib/stats';
import { bundleFunctions, deployedFunctions, measureInit, referenceInit, type BundledFunction } from './cold-start-bench';

async function main(): Promise<void> {
  const flags = new Command('ab-init')
    .requiredOption('--a <dir>', "A's cdk.out")
    .option('--b <dir>', "B's cdk.out (default: bundle the working tree)")
    .option('--runs <n>', 'runs per side and function', '10')
    .option('--functions <list>', 'only these functions (comma-separated handler directories)')
    .parse(process.argv.slice(2), { from: 'user' })
    .opts<{ a: string; b?: string; runs: string; functions?: string }>();
  const runs = Number(flags.runs);
  const a = new Map(deployedFunctions(path.resolve(flags.a)).map((f) => [f.handlerDir, f]));
  const bList = flags.b ? deployedFunctions(path.resolve(flags.b)) : bundleFunctions().filter((f) => f.inStack);
  const b = new Map(bList.map((f) => [f.handlerDir, f]));
  console.log(`reference: require() of an empty module ${(await referenceInit(runs)).toFixed(2)} ms (median of ${runs})`);
  const rows: { name: string; a: number; b: number; aCpu: number; bCpu: number }[] = [];
  const only = flags.functions?.split(',');
  for (const [name, fa] of a) {
    if (only && !only.includes(name)) continue;
    const fb = b.get(name);
    if (!fb) {
      console.log(`${name}: only in A`);
      continue;
    }
    const times = { A: [] as number[], B: [] as number[], Acpu: [] as number[], Bcpu: [] as number[] };
    for (let i = 0; i < runs; i++) {
      const order: [string, BundledFunction][] =
        i % 2 === 0
          ? [
              ['A', fa],
              ['B', fb],
            ]
          : [
              ['B', fb],
              ['A', fa],
            ];
      for (const [side, fn] of order) {
        const r = await measureInit(fn, 1);
        if (r.medianMs === null) throw new Error(`${side} ${name}: ${r.error}`);
        times[side as 'A' | 'B'].push(r.medianMs);
        times[`${side}cpu` as 'Acpu' | 'Bcpu'].push(r.medianCpuMs ?? r.medianMs);
      }
    }
    const row = { name, a: median(times.A), b: median(times.B), aCpu: median(times.Acpu), bCpu: median(times.Bcpu) };
    rows.push(row);
    console.log(
      `${name}: A ${row.a.toFixed(1)} ms (cpu ${row.aCpu.toFixed(1)}, ${kb(fa)} KB), B ${row.b.toFixed(1)} ms (cpu ${row.bCpu.toFixed(1)}, ${kb(fb)} KB), B/A ${(row.b / row.a).toFixed(2)}`,
    );
  }
  const slowest = (side: 'a' | 'b') => rows.reduce((x, y) => (y[side] > x[side] ? y : x));
  console.log(
    `slowest A: ${slowest('a').name} ${slowest('a').a.toFixed(1)} ms; slowest B: ${slowest('b').name} ${slowest('b').b.toFixed(1)} ms`,
  );
  console.log(
    `B/A of the slowest: ${(slowest('b').b / slowest('a').a).toFixed(2)}; functions where B is slower: ${rows.filter((r) => r.b > r.a).length} of ${rows.length}`,
  );
}

function kb(fn: BundledFunction): string {
  return (fn.bundleBytes / 1000).toFixed(1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
