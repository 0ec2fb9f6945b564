/**
 * The Parquet writer comparison of BENCHMARKS.md ("Parquet writer: the choice"): our column
 * encoders (ParquetRecordWriter), hyparquet-writer's own ParquetWriter (fixed), parquet-wasm
 * (arrow-rs) with apache-arrow, DuckDB's own writer. Each candidate writes
 * the transactions columns of `rows` synthetic rows in a fresh process, `rounds` times, interleaved;
 * reported: median wall time over the row-generation floor, largest peak RSS, file size, bundle
 * size (esbuild, minified, plus the WebAssembly or native binary it must ship) and module init.
 *
 * Usage: npx tsx bench/exports/writer-comparison.ts [rows=1000000] [rounds=3]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { build } from 'esbuild';
import { OUT_DIR, ROOT } from '../lib/processes';
import { median } from '../lib/stats';

const CANDIDATES = ['none', 'acctops', 'hyparquet-writer', 'parquet-wasm', 'duckdb'] as const;
type Candidate = (typeof CANDIDATES)[number];

/** What a candidate must ship beside its JavaScript. */
const ASSETS: Record<Candidate, string[]> = {
  none: [],
  acctops: [],
  'hyparquet-writer': [],
  'parquet-wasm': ['node_modules/parquet-wasm/node/parquet_wasm_bg.wasm'],
  duckdb: ['node_modules/@duckdb/node-bindings-linux-x64/duckdb.node', 'node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so'],
};

/** The smallest program that loads a candidate, for bundle size and module init. */
const INIT_ENTRY: Record<Exclude<Candidate, 'none'>, string> = {
  acctops: `import { ParquetRecordWriter } from '../src/core/exports/formats/parquet-writer'; globalThis.w = ParquetRecordWriter;`,
  'hyparquet-writer': `import { ParquetWriter } from 'hyparquet-writer'; globalThis.w = ParquetWriter;`,
  'parquet-wasm': `import { writeParquet } from 'parquet-wasm/node'; import { tableToIPC } from 'apache-arrow'; globalThis.w = [writeParquet, tableToIPC];`,
  duckdb: `import { DuckDBInstance } from '@duckdb/node-api'; globalThis.w = DuckDBInstance;`,
};
const EXTERNAL: Record<Exclude<Candidate, 'none'>, string[]> = {
  acctops: [],
  'hyparquet-writer': [],
  // The .wasm and the native addon are loaded from their packages at run time.
  'parquet-wasm': ['parquet-wasm'],
  duckdb: ['@duckdb/node-api', '@duckdb/node-bindings'],
};

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const rounds = Number(process.argv[3] ?? 3);
  mkdirSync(OUT_DIR, { recursive: true });
  const child = path.join(OUT_DIR, 'writer-candidate.js');
  await build({
    entryPoints: [path.join(__dirname, 'writer-candidate.ts')],
    outfile: child,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    minify: true,
    external: ['parquet-wasm', '@duckdb/*', 'apache-arrow'],
    logLevel: 'warning',
  });

  const runs: Record<Candidate, { ms: number; maxRssKiB: number; bytes: number }[]> = {
    none: [],
    acctops: [],
    'hyparquet-writer': [],
    'parquet-wasm': [],
    duckdb: [],
  };
  for (let round = 0; round < rounds; round++) {
    for (const candidate of CANDIDATES) {
      const out = path.join(OUT_DIR, `writer-${candidate}.parquet`);
      const line = execFileSync(process.execPath, [child, candidate, String(rows), out], {
        cwd: ROOT,
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      });
      runs[candidate].push(JSON.parse(line.trim()) as { ms: number; maxRssKiB: number; bytes: number });
      process.stderr.write(`round ${round + 1} ${candidate}: ${line}`);
    }
  }

  const floor = median(runs.none.map((r) => r.ms));
  const lines = [
    '| writer | write time, median (ms, generation floor subtracted) | peak RSS, max (MiB) | file (MB) | bundle + binary (KB) | module init, median of 5 (ms) |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const candidate of CANDIDATES.filter((c): c is Exclude<Candidate, 'none'> => c !== 'none')) {
    const { bundle, init } = await loadCost(candidate);
    const r = runs[candidate];
    lines.push(
      `| ${candidate} | ${(median(r.map((x) => x.ms)) - floor).toFixed(0)} | ${(Math.max(...r.map((x) => x.maxRssKiB)) / 1024).toFixed(1)} | ${(r[0]!.bytes / 1e6).toFixed(1)} | ${(bundle / 1024).toFixed(0)} | ${init.toFixed(1)} |`,
    );
  }
  lines.push(
    '',
    `Rows: ${rows}; rounds: ${rounds}; generation floor ${floor.toFixed(0)} ms, ${(Math.max(...runs.none.map((x) => x.maxRssKiB)) / 1024).toFixed(1)} MiB peak RSS.`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function loadCost(candidate: Exclude<Candidate, 'none'>): Promise<{ bundle: number; init: number }> {
  const entry = path.join(OUT_DIR, `init-${candidate}.ts`);
  const outfile = path.join(OUT_DIR, `init-${candidate}.js`);
  writeFileSync(entry, INIT_ENTRY[candidate]);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    minify: true,
    external: EXTERNAL[candidate],
    logLevel: 'warning',
    absWorkingDir: ROOT,
  });
  let bundle = statSync(outfile).size;
  if (candidate === 'parquet-wasm') bundle += statSync(path.join(ROOT, 'node_modules/parquet-wasm/node/parquet_wasm.js')).size;
  for (const asset of ASSETS[candidate]) bundle += statSync(path.join(ROOT, asset)).size;
  const probe = `const t=process.hrtime.bigint();require(${JSON.stringify(outfile)});process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6))`;
  const times: number[] = [];
  for (let i = 0; i < 5; i++) times.push(Number(execFileSync(process.execPath, ['-e', probe], { cwd: ROOT, encoding: 'utf8' })));
  return { bundle, init: median(times) };
}

void main();
