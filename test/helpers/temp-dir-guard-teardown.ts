import { readdir, rm } from 'node:fs/promises';

// Caches that tools keep in the temp directory on purpose and reuse, not something a test made:
// tsx's (the CLI the tests spawn) and jest's (the child jest run of test/security/canary.test.ts).
const TOOL_CACHES = /^(?:tsx-\d+|jest_[0-9a-z]+)$/;

/**
 * jest `globalTeardown`: the run's temp directory (temp-dir-guard-setup.ts) must be empty but for
 * tool caches. It is removed either way, so a failed or leaky run leaves nothing behind; what was
 * left fails the run, by name, so that the test that made it is found and fixed.
 */
export default async function tempDirGuardTeardown(): Promise<void> {
  const dir = process.env.ACCTOPS_JEST_TMPDIR;
  if (!dir) return;
  const left = (await readdir(dir)).filter((name) => !TOOL_CACHES.test(name)).sort();
  await rm(dir, { recursive: true, force: true });
  if (left.length > 0) {
    const shown = left.slice(0, 20).join(', ') + (left.length > 20 ? `, and ${left.length - 20} more` : '');
    throw new Error(
      `the tests left ${left.length} entries in their temp directory (remove what a test makes; ` +
        `tempDirSync in test/helpers/temp-dirs.ts does it for you): ${shown}`,
    );
  }
}
