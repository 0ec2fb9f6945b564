#!/usr/bin/env node
// The `bin` of package.json. Runs the bundle that `npm ci` builds (bin/build-cli.cjs, the
// `prepare` script) when every source it was built from is unchanged; otherwise the TypeScript
// sources through tsx's CommonJS loader (tsx is a runtime dependency), so a stale bundle never runs
// old code. ACCTOPS_FROM_SOURCE=1 forces the sources.
'use strict';
const { readFileSync, statSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');

// Before anything else: a signal while the CLI loads is held, and bin/acctops.ts says what it stopped.
require('./hold-signals.cjs');

function bundleIsFresh() {
  if (process.env.ACCTOPS_FROM_SOURCE === '1') return false;
  try {
    const meta = JSON.parse(readFileSync(join(root, 'dist', 'acctops.meta.json'), 'utf8'));
    if (!Array.isArray(meta.inputs) || meta.inputs.length === 0) return false;
    // A few hundred stat calls: about a millisecond, against a second or more for tsx.
    for (const input of meta.inputs) {
      const s = statSync(join(root, input.file), { throwIfNoEntry: false });
      if (s === undefined || s.size !== input.size || s.mtimeMs !== input.mtimeMs) return false;
    }
    statSync(join(root, 'dist', 'acctops.cjs'));
    return true;
  } catch {
    return false;
  }
}

if (bundleIsFresh()) {
  require('../dist/acctops.cjs');
} else {
  require('tsx/cjs/api').register();
  // `await import('./x.ts')` in the sources goes through the ESM loader (bin/ts-import-hooks.mjs).
  require('node:module').register('./ts-import-hooks.mjs', require('node:url').pathToFileURL(__filename));
  require('./acctops.ts');
}
