'use strict';
/**
 * Preloaded into the acctops binary by the CLI interrupt tests (`node --require <this> bin/acctops.cjs`):
 * creates the file ACCTOPS_TEST_SIGNAL_MARKER names when the process receives SIGINT or SIGTERM,
 * so that a test sends a second signal only once the first has been handled, with no timing. Its
 * listener comes first (preloaded) and runs synchronously before the CLI's, which is then already
 * handling the signal when the file appears. With a listener of its own, Node's default (dying on
 * the signal) is off for the whole run: only for commands that handle signals themselves.
 */
const { writeFileSync } = require('node:fs');

const marker = process.env.ACCTOPS_TEST_SIGNAL_MARKER;
if (marker) {
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => writeFileSync(marker, `${signal}\n`, { flag: 'a' }));
}
