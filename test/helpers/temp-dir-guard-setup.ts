import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * jest `globalSetup`: the run gets a temp directory of its own, so that
 * temp-dir-guard-teardown.ts can tell what this run left behind from what other runs and other
 * programs keep in the shared one. It runs in jest's parent process before any worker starts, so
 * the workers, and the processes the tests spawn with the environment, inherit it.
 */
export default async function tempDirGuardSetup(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'acctops-jest-'));
  // As /tmp is: tests that run the CLI as another user (exit-codes.test.ts, as root) need that user
  // to reach their directories in here, which mkdtemp's 0700 would refuse.
  await chmod(dir, 0o1777);
  process.env.ACCTOPS_JEST_TMPDIR = dir;
  process.env.TMPDIR = dir;
  // Node 22 and later: tsc, eslint and prettier turn on Node's on-disk compile cache, which lands in
  // the temp directory (`node-compile-cache`) and is no test's leftover. Off for the run and every
  // process it starts (the suite under Node 24 was failed by it, every test passing).
  process.env.NODE_DISABLE_COMPILE_CACHE = '1';
}
