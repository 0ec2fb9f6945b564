#!/usr/bin/env node
// `npm start`: a small entry that holds Ctrl-C and SIGTERM before it loads the demo. The demo's
// modules take a second or more to load through tsx, and Node's default would end the process in
// that time without a word, where README promises the line `interrupted (SIGINT): the demo was
// stopped…`. bin/demo.ts takes over (cli/interrupt.ts, adoptHeldSignals) and says it; a second
// signal ends the process at once (bin/hold-signals.cjs, as bin/acctops.cjs).
'use strict';
const { pathToFileURL } = require('node:url');

require('./hold-signals.cjs');

require('tsx/cjs/api').register();
// `await import('./x.ts')` in the sources goes through the ESM loader (bin/ts-import-hooks.mjs).
require('node:module').register('./ts-import-hooks.mjs', pathToFileURL(__filename));
require('./demo.ts');
