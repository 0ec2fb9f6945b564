import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type * as z from 'zod';
import { parseJsonWith } from '../../core/shared/errors';
import { makeDirectory } from './dir-object-store';

/**
 * The local mode's files hold credentials (token pairs, keys, the institution secret). They are
 * created 0600 in a 0700 directory and replaced atomically, so no reader ever sees half a file and
 * no other user can read them, not even for the moment between create and chmod.
 */

/** The text of `path`; undefined when the file does not exist. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** `<path>.<12 hex>.tmp`: where a replacement is written before it is renamed into place. */
export function temporaryPath(path: string): string {
  return `${path}.${randomBytes(6).toString('hex')}.tmp`;
}

const TEMPORARY_SUFFIX = /^\.[0-9a-f]{12}\.tmp$/;

/**
 * The temporary files of this process's writes between their creation and their rename. A write
 * the process abandons by exiting (Ctrl-C ends a command with process.exit once its interrupt steps
 * ran, and a step may still be writing) would leave its file behind, a whole token file or set of
 * keys in it: they are removed on the way out, synchronously, since `exit` listeners cannot wait.
 */
const writing = new Set<string>();
let removedOnExit = false;

function holdTemporary(temp: string): void {
  writing.add(temp);
  if (removedOnExit) return;
  removedOnExit = true;
  process.on('exit', () => {
    for (const path of writing) rmSync(path, { force: true });
  });
}

/**
 * How many writes of this process are between their temporary file's creation and its rename: a
 * process that exits now could still see one of them land (the state lock's release on a second
 * signal waits for none: cli/local/state-dir.ts).
 */
export function writesUnderWay(): number {
  return writing.size;
}

/**
 * Removes the temporary files of `path` (`<path>.<12 hex>.tmp`) that no write of this process
 * holds: a process killed between creating one and renaming it (kill -9, a crash, a power cut) ran
 * no exit listener. Only for a file its caller alone writes (the local mode holds the state
 * directory's lock when it calls this): another process's write under way would lose its file.
 * Returns the paths removed.
 */
export async function removeStaleTemporaries(path: string): Promise<string[]> {
  const dir = dirname(path);
  const prefix = basename(path);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const stale = names
    .filter((name) => name.startsWith(prefix) && TEMPORARY_SUFFIX.test(name.slice(prefix.length)))
    .map((name) => join(dir, name))
    .filter((temp) => !writing.has(temp));
  for (const temp of stale) await rm(temp, { force: true });
  return stale;
}

/** Reads `path` and validates it with `schema`; undefined when the file does not exist. */
export async function readJsonFile<S extends z.ZodType>(path: string, schema: S, source: string = path): Promise<z.output<S> | undefined> {
  const text = await readTextIfExists(path);
  if (text === undefined) return undefined;
  return parseJsonWith(schema, text, source);
}

/** Replaces `path` atomically (temporary file, fsync, rename) with mode 0600. */
export async function writePrivateJsonFile(path: string, value: unknown, options: { pretty?: boolean } = {}): Promise<void> {
  await makeDirectory(dirname(path), 0o700);
  const temp = temporaryPath(path);
  holdTemporary(temp);
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(value, null, options.pretty ? 2 : undefined)}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  } finally {
    writing.delete(temp);
  }
}
