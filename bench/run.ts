// `npm run bench`: every benchmark of issue 7, written to BENCHMARKS.md; exits 1 when a target is
// missed. Not part of `npm test` (jest's root is test/). Options:
//   --only cold-start,exports,refresh,cli-startup,fleet-exports   run some sections (written to .bench-out/BENCHMARKS.partial.md)
//   --quick                             fewer runs and 100k/200k transactions: for working on bench/
//   --out <file>                        where to write the report
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { runCliStartupSection } from './cli/cli-startup-bench';
import { runColdStartSection } from './cold-start/cold-start-bench';
import { runExportSection } from './exports/export-bench';
import { runFleetExportSection } from './fleet/fleet-exports-bench';
import { OUT_DIR, ROOT } from './lib/processes';
import { describeMachine, loadAverage, renderReport, type SectionReport } from './lib/report';
import { refreshNotMeasured, runRefreshSection } from './refresh/refresh-bench';
import { runRotationDoctorSection } from './rotation-doctor/rotation-doctor-bench';

const SECTIONS = ['cold-start', 'exports', 'refresh', 'cli-startup', 'fleet-exports', 'rotation-doctor'] as const;
type SectionName = (typeof SECTIONS)[number];

const PREFACE = [
  '**How to read these numbers.** Absolute times on a shared machine are noise; what this file asserts is measured',
  'against a baseline in the same run (the export ratios), against a bound set by the peer (the refresh cycle against',
  'N/R), or is not a time at all (bundle bytes, RSS, counts). Every peer runs in its own process (the sandbox, dynalite)',
  'or outside the measured process (s3rver), every export and every module init runs in a fresh child process, and',
  'each figure says how many runs its median is taken over. Nothing here needs more than loopback.',
].join('\n');

const COST_SECTION: SectionReport = {
  title: 'Cost on paper',
  command: '',
  markdown:
    'The monthly AWS cost model for 1,000, 10,000 and 100,000 users and companies, with the arithmetic and the prices used, is in [docs/cost.md](docs/cost.md).',
  targets: [],
};

async function main(): Promise<void> {
  const program = new Command('bench')
    .option('--only <sections>', `comma-separated: ${SECTIONS.join(', ')}`)
    .option('--quick', 'fewer runs and smaller datasets (for working on bench/; not for BENCHMARKS.md)')
    .option('--out <file>', 'report file')
    .option('--fleet-companies <n>', 'fleet-exports: registered companies for the planner (0 skips it)', Number)
    .option('--fleet-transactions <n>', 'fleet-exports: transactions of the split month (0 skips it)', Number)
    .parse(process.argv.slice(2), { from: 'user' });
  const flags = program.opts<{ only?: string; quick?: boolean; out?: string; fleetCompanies?: number; fleetTransactions?: number }>();
  const only = flags.only?.split(',').map((s) => s.trim()) ?? [...SECTIONS];
  const unknown = only.filter((s) => !(SECTIONS as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`unknown section(s): ${unknown.join(', ')}; expected ${SECTIONS.join(', ')}`);
  const partial = flags.only !== undefined || flags.quick === true;
  const out = path.resolve(ROOT, flags.out ?? (partial ? path.join(OUT_DIR, 'BENCHMARKS.partial.md') : 'BENCHMARKS.md'));

  mkdirSync(OUT_DIR, { recursive: true });
  const machine = describeMachine();
  const started = performance.now();
  const sections: SectionReport[] = [];
  const log = (line: string) => console.log(`[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);

  const runners: Record<SectionName, () => Promise<SectionReport>> = {
    'cold-start': () => runColdStartSection({ initRuns: flags.quick ? 5 : 20 }),
    exports: () =>
      runExportSection({
        sizes: flags.quick
          ? [
              { transactions: 100_000, rounds: 1 },
              { transactions: 200_000, rounds: 1 },
            ]
          : [
              { transactions: 100_000, rounds: 5 },
              { transactions: 1_000_000, rounds: 3 },
            ],
      }),
    'rotation-doctor': () => runRotationDoctorSection(flags.quick ? { companies: 1000, due: 10 } : { companies: 10_000, due: 100 }),
    'cli-startup': () => Promise.resolve(runCliStartupSection({ runs: flags.quick ? 3 : 10 })),
    'fleet-exports': () =>
      runFleetExportSection({
        ...(flags.quick
          ? { companies: 2_000, transactions: 300_000, maxTransactionsPerPart: 100_000, partConcurrency: 2 }
          : { companies: 10_000, transactions: 3_000_000, maxTransactionsPerPart: 500_000, partConcurrency: 2 }),
        ...(flags.fleetCompanies !== undefined ? { companies: flags.fleetCompanies } : {}),
        ...(flags.fleetTransactions !== undefined ? { transactions: flags.fleetTransactions } : {}),
      }),
    refresh: async () => {
      try {
        return await runRefreshSection();
      } catch (error) {
        return refreshNotMeasured(error instanceof Error ? error.message.split('\n')[0]! : String(error));
      }
    },
  };
  for (const name of SECTIONS) {
    if (!only.includes(name)) continue;
    log(`${name}: started`);
    const section = await runners[name]();
    sections.push(section);
    for (const t of section.targets) log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.what}: ${t.measured} (bound ${t.bound})`);
  }
  if (!partial) sections.push(COST_SECTION);

  const report = renderReport({
    machine,
    date: new Date().toISOString(),
    durationS: (performance.now() - started) / 1000,
    loadAtEnd: loadAverage(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    sections,
    preface: PREFACE,
  });
  writeFileSync(out, report);
  const missed = sections.flatMap((s) => s.targets).filter((t) => !t.pass);
  log(`wrote ${path.relative(ROOT, out)}: ${missed.length === 0 ? 'every target met' : `${missed.length} target(s) missed`}`);
  if (missed.length > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 2;
});
