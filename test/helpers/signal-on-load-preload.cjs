'use strict';
/**
 * Preloaded into the acctops binary by test/cli/interrupt-early.test.ts (`node --require <this>
 * bin/acctops.cjs`): sends the process ACCTOPS_TEST_SIGNAL_ON_LOAD (SIGINT or SIGTERM) as the bin
 * shim starts loading the CLI (the bundle, or bin/acctops.ts from the sources), so that the signal
 * lands before the command has started anything, with no timing in the test. The same for
 * `npm start` (test/cli/demo-interrupt.test.ts): as bin/demo.cjs starts loading bin/demo.ts.
 */
const Module = require('node:module');

const signal = process.env.ACCTOPS_TEST_SIGNAL_ON_LOAD;
if (signal) {
  const load = Module._load;
  let sent = false;
  Module._load = function (request, ...rest) {
    if (!sent && /(?:dist[\\/]acctops\.cjs|\.[\\/](?:acctops|demo)\.ts)$/.test(request)) {
      sent = true;
      process.kill(process.pid, signal);
    }
    return load.call(this, request, ...rest);
  };
}
