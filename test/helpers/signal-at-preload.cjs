'use strict';
/**
 * Preloaded into the acctops binary by test/cli/interrupt-lock.test.ts (`node --require <this>
 * bin/acctops.cjs`): the process sends itself ACCTOPS_TEST_SIGNAL_AT.signal at a point of its own
 * run, so that the signal lands there with no timing in the test:
 *
 * - `lock`: the moment the state lock is taken (the link of its temporary file to `<dir>/lock`);
 * - `lock-refused`: the moment that link fails because another command holds the lock; the
 *   process then stays there (the link never answers) until the signal's handler ends it;
 * - `read:<file>`: the moment `<file>` (`secrets.json`, …) has been read, the first time (while the world opens);
 * - `saved:<file>`: the moment `<file>` (`sandbox.json`, …) is renamed into place, the first time;
 * - `open:<file>`: the moment the temporary file of a write of `<file>` is about to be created, the
 *   first time. That write is held: once the process has handled the signal, `second` (a signal) is
 *   sent while the write is still under way, and the write never goes on.
 *
 * Node dispatches a signal the process sends itself on the next turn of its event loop, while the
 * command goes on with what follows that point.
 *
 * ACCTOPS_TEST_SIGNAL_AT: JSON { at, signal, second (with `open:` only) }
 */
const fsPromises = require('node:fs/promises');
const { basename } = require('node:path');

const plan = JSON.parse(process.env.ACCTOPS_TEST_SIGNAL_AT ?? 'null');
if (plan) {
  let sent = false;
  const send = () => {
    if (sent) return;
    sent = true;
    process.kill(process.pid, plan.signal);
  };
  if (plan.at === 'lock') {
    const link = fsPromises.link;
    fsPromises.link = async function (existing, target) {
      const result = await link.call(this, existing, target);
      if (basename(String(target)) === 'lock') send();
      return result;
    };
  } else if (plan.at === 'lock-refused') {
    const link = fsPromises.link;
    fsPromises.link = async function (existing, target) {
      try {
        return await link.call(this, existing, target);
      } catch (error) {
        if (sent || basename(String(target)) !== 'lock' || error.code !== 'EEXIST') throw error;
        sent = true;
        // Neither a signal listener nor a promise that never settles keeps a process alive: without
        // this timer the process ended (code 0) before the signal was dispatched. The handler's
        // process.exit ends it.
        setInterval(() => undefined, 1000);
        process.kill(process.pid, plan.signal);
        return new Promise(() => undefined);
      }
    };
  } else if (typeof plan.at === 'string' && plan.at.startsWith('read:')) {
    const file = plan.at.slice('read:'.length);
    const readFile = fsPromises.readFile;
    fsPromises.readFile = async function (path, ...rest) {
      const result = await readFile.call(this, path, ...rest);
      if (basename(String(path)) === file) send();
      return result;
    };
  } else if (typeof plan.at === 'string' && plan.at.startsWith('saved:')) {
    const file = plan.at.slice('saved:'.length);
    const rename = fsPromises.rename;
    fsPromises.rename = async function (from, to) {
      const result = await rename.call(this, from, to);
      if (basename(String(to)) === file) send();
      return result;
    };
  } else if (typeof plan.at === 'string' && plan.at.startsWith('open:')) {
    const file = plan.at.slice('open:'.length);
    const open = fsPromises.open;
    fsPromises.open = async function (path, ...rest) {
      const name = basename(String(path));
      if (!sent && name.startsWith(`${file}.`) && name.endsWith('.tmp')) {
        sent = true;
        // The process's own handler runs first (it was added before this one): the signal is being handled when this resolves.
        await new Promise((resolve) => {
          process.once(plan.signal, resolve);
          process.kill(process.pid, plan.signal);
        });
        process.kill(process.pid, plan.second);
        return new Promise(() => undefined);
      }
      return open.call(this, path, ...rest);
    };
  } else {
    throw new Error(`ACCTOPS_TEST_SIGNAL_AT: unknown point ${String(plan.at)}`);
  }
}
