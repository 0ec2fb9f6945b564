'use strict';
/**
 * Preloaded into the acctops binary by the CLI interrupt tests (`node --require <this> bin/acctops.cjs`):
 * holds back the requests one embedded peer (the sandbox or the Secrets Manager emulator) receives
 * that match ACCTOPS_TEST_HOLD, so that a signal lands while the command waits on that request, and
 * creates the `marker` file when the first one arrives, so that the test knows when to signal.
 * The peers run in the binary's process and are bundled, so Node's http server is the one seam a
 * test can reach from outside.
 *
 * ACCTOPS_TEST_HOLD: JSON { method, path (a substring of the URL), target (X-Amz-Target, optional), delayMs, marker }
 */
const http = require('node:http');
const { writeFileSync } = require('node:fs');

const hold = JSON.parse(process.env.ACCTOPS_TEST_HOLD ?? 'null');
if (hold) {
  const emit = http.Server.prototype.emit;
  const matches = (req) =>
    req.method === hold.method &&
    (hold.path === undefined || (req.url ?? '').includes(hold.path)) &&
    (hold.target === undefined || req.headers['x-amz-target'] === hold.target);
  // Once: the test removes the marker when it has seen it, and a later matching request (a retry)
  // would make it again, outside any directory the test removes.
  let marked = false;
  http.Server.prototype.emit = function (event, ...args) {
    if (event !== 'request' || !matches(args[0])) return emit.call(this, event, ...args);
    if (!marked) writeFileSync(hold.marker, '');
    marked = true;
    setTimeout(() => emit.call(this, event, ...args), hold.delayMs);
    return true;
  };
}
