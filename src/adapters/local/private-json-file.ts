import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type * as z from 'zod';
import { ValidationError, parseWith } from '../../core/shared/errors';
import { makeDirectory } from './dir-object-store';

/**
 * The local mode's files hold credentials (token pairs, keys, the institution secret). They are
 * created 0600 in a 0700 directory and replaced atomically, so no reader ever sees half a file and
 * no other user can read them, not even for the moment between create and chmod.
 */

/** Reads `path` and validates it with `schema`; undefined when the file does not exist. */
export async function readJsonFile<S extends z.ZodType>(path: string, schema: S, source: string = path): Promise<z.output<S> | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the fault, which may be a token: no cause kept.
    throw new ValidationError(source, [{ path: '', message: 'not valid JSON' }]);
  }
  return parseWith(schema, json, source);
}

/** Replaces `path` atomically (temporary file, fsync, rename) with mode 0600. */
export async function writePrivateJsonFile(path: string, value: unknown, options: { pretty?: boolean } = {}): Promise<void> {
  await makeDirectory(dirname(path), 0o700);
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
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
  }
}
