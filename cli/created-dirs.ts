import { lstatSync, rmdirSync } from 'node:fs';
import { lstat, rmdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * What a command that makes `path` (with its missing parents) would create, so that a run that
 * fails can take it away again: an export that failed on its credential or an unreachable service
 * left an empty `--out` directory behind, which looked like a result.
 */

/**
 * `path` and those of its parents that do not exist now, deepest first. A name too long cannot
 * exist, so it counts as missing, and its parents are looked at too; any other answer (it exists,
 * a file is in the way, no permission to look) ends the walk: nothing above it is ours to remove.
 */
export async function missingDirectories(path: string): Promise<string[]> {
  const missing: string[] = [];
  for (let current = resolve(path); ; current = dirname(current)) {
    const code = await lstat(current).then(
      () => 'exists',
      (error: NodeJS.ErrnoException) => error.code,
    );
    if (code !== 'ENOENT' && code !== 'ENAMETOOLONG') break;
    missing.push(current);
    if (dirname(current) === current) break;
  }
  return missing;
}

/**
 * missingDirectories, synchronous: for a command that must know what is missing before any of its
 * own asynchronous work can make it (a signal handler set up as the export starts).
 */
export function missingDirectoriesSync(path: string): string[] {
  const missing: string[] = [];
  for (let current = resolve(path); ; current = dirname(current)) {
    let code: string | undefined;
    try {
      lstatSync(current);
      code = 'exists';
    } catch (error) {
      code = (error as NodeJS.ErrnoException).code;
    }
    if (code !== 'ENOENT' && code !== 'ENAMETOOLONG') break;
    missing.push(current);
    if (dirname(current) === current) break;
  }
  return missing;
}

/**
 * Removes the directories of `dirs` (deepest first, as missingDirectories lists them) that are
 * empty. rmdir removes nothing with content, so a file written meanwhile, by this run or anyone,
 * keeps its directory and every one above it. One that was never made is passed over. Best effort:
 * the command's own error is what the user needs to see, not one of the clean-up.
 */
export async function removeEmptyDirectories(dirs: readonly string[]): Promise<void> {
  for (const dir of dirs) {
    const code = await rmdir(dir).then(
      () => undefined,
      (error: NodeJS.ErrnoException) => error.code ?? 'error',
    );
    if (code !== undefined && code !== 'ENOENT' && code !== 'ENAMETOOLONG') return;
  }
}

/**
 * removeEmptyDirectories, synchronous: for a process's 'exit' event, when nothing of the command can
 * make a directory again after it. The command goes on running while a signal's steps run, and an
 * export stopped before its first write still makes --out afterwards.
 */
export function removeEmptyDirectoriesSync(dirs: readonly string[]): void {
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENAMETOOLONG') return;
    }
  }
}
