'use strict';
/**
 * Preloaded into the acctops binary by test/cli/export-interrupt.test.ts (`node --require <this>
 * bin/acctops.cjs export …`): the signal ACCTOPS_TEST_SIGNAL_AT_STAGING names lands between an
 * export's first write starting and its staging directory `.acctops-tmp` being made, and the
 * making is held back past the handler's cleanup, as a slow file system holds it.
 *
 * The process sends itself the signal when the export calls mkdir for `.acctops-tmp` the first
 * time, and that mkdir is carried out only once the process is exiting (its `exit` event), or
 * earlier if the handler waits for it: after RELEASE_MS, a bound for liveness only. A handler that
 * does not wait for the directory's making then leaves it behind, empty; one that waits removes it.
 *
 * ACCTOPS_TEST_SIGNAL_AT_STAGING: the signal's name (SIGINT, SIGTERM)
 */
const fs = require('node:fs');
const fsPromises = require('node:fs/promises');
const { basename, dirname } = require('node:path');

const RELEASE_MS = 3000;
const signal = process.env.ACCTOPS_TEST_SIGNAL_AT_STAGING;
if (signal) {
  const mkdir = fsPromises.mkdir;
  let held = false;
  fsPromises.mkdir = async function (path, ...rest) {
    // A call whose parent is missing fails (ENOENT) and is made again once the parent is there: that one is held.
    if (held || basename(String(path)) !== '.acctops-tmp' || !fs.existsSync(dirname(String(path)))) return mkdir.call(this, path, ...rest);
    held = true;
    let release;
    const released = new Promise((resolve) => (release = resolve));
    // What a mkdir the handler did not wait for does: it lands after the cleanup.
    const atExit = () => fs.mkdirSync(path, ...rest);
    process.once('exit', atExit);
    const timer = setTimeout(release, RELEASE_MS);
    process.kill(process.pid, signal);
    await released;
    clearTimeout(timer);
    process.removeListener('exit', atExit);
    return mkdir.call(this, path, ...rest);
  };
}
