'use strict';
/**
 * Preloaded into the demo by test/cli/demo-interrupt.test.ts (`NODE_OPTIONS=--require <this>`):
 * once the process has written ACCTOPS_TEST_BUSY_AFTER.text to stdout, its event loop stays busy
 * for ACCTOPS_TEST_BUSY_AFTER.ms (a synchronous spin), as a step that parses or writes a large
 * snapshot would. A signal then waits for the loop; a parent that relays signals with a deadline
 * (the tsx CLI: 30 ms, then SIGKILL) does not wait, which is what the test guards against.
 *
 * ACCTOPS_TEST_BUSY_AFTER: JSON { text, ms }
 */
const plan = JSON.parse(process.env.ACCTOPS_TEST_BUSY_AFTER ?? 'null');
if (plan) {
  const write = process.stdout.write;
  let done = false;
  process.stdout.write = function (chunk, ...rest) {
    const result = write.call(this, chunk, ...rest);
    if (!done && String(chunk).includes(plan.text)) {
      done = true;
      for (const until = Date.now() + plan.ms; Date.now() < until;) {
        // Spinning: the event loop must not turn.
      }
    }
    return result;
  };
}
