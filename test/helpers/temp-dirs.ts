import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// On the test file's global rather than in this module: a test that resets the module registry
// would otherwise get a second, empty list, and its directories would outlive the file.
const MADE = Symbol.for('acctops.tempDirs');
type Holder = { [MADE]?: string[] };

/**
 * A new directory under the OS temp directory, removed after the test file by
 * test/helpers/temp-dirs-setup.ts (jest `setupFilesAfterEnv`), for code that needs a directory and
 * is called where no hook can be registered (inside a test, or a helper such as testApp).
 */
export function tempDirSync(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  ((globalThis as Holder)[MADE] ??= []).push(dir);
  return dir;
}

/** Removes every directory tempDirSync made in this test file. */
export function removeTempDirs(): void {
  const made = (globalThis as Holder)[MADE] ?? [];
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
