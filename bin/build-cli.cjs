#!/usr/bin/env node
// `npm run build:cli`, and the package's `prepare` script, so `npm ci` builds it: bundles the CLI
// into dist/acctops.cjs. Loading ~150 TypeScript files through tsx at every start cost 1–2 s; one
// bundle starts in a fraction of that (BENCHMARKS.md, "CLI start-up"). The AWS SDK and the Parquet
// writer stay outside the bundle, loaded from node_modules only by the commands that need them.
//
// dist/acctops.meta.json records the size and mtime of every bundled source file, and
// bin/acctops.cjs runs the bundle only while all of them still match: after a `git pull` or an edit
// without a rebuild, the CLI runs from the sources (tsx) instead of running old code.
'use strict';
const { statSync, writeFileSync, mkdirSync } = require('node:fs');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');
const dist = join(root, 'dist');

function build() {
  // esbuild is a devDependency: `npm ci --omit=dev` has none, and the bin then runs from the sources.
  let esbuild;
  try {
    esbuild = require('esbuild');
  } catch {
    console.error('acctops: esbuild not installed; the CLI will run from its TypeScript sources (slower start)');
    return;
  }
  mkdirSync(dist, { recursive: true });
  const result = esbuild.buildSync({
    absWorkingDir: root,
    entryPoints: ['bin/acctops.ts'],
    outfile: 'dist/acctops.cjs',
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    metafile: true,
    logLevel: 'warning',
    // Loaded on first use by AWS mode and by export (`await import()`, docs/cli-operations.md); bundling them would make every start
    // parse them.
    external: ['@aws-sdk/*', '@smithy/*', 'hyparquet-writer', 'tsx'],
  });
  const inputs = Object.keys(result.metafile.inputs)
    .filter((file) => !file.startsWith('node_modules/'))
    .concat(['package.json', 'package-lock.json', 'bin/build-cli.cjs'])
    .map((file) => {
      const s = statSync(join(root, file));
      return { file, size: s.size, mtimeMs: s.mtimeMs };
    });
  writeFileSync(join(dist, 'acctops.meta.json'), `${JSON.stringify({ builtAt: new Date().toISOString(), inputs })}\n`);
}

build();
