import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { ObjectStoreError, PreconditionFailedError } from '../../core/exports/formats/period-errors';
import {
  isSafeKey,
  type ObjectHead,
  type ObjectStore,
  type ObjectSummary,
  type PutConditions,
  type PutOptions,
} from '../../core/exports/formats/object-store';

/** Staging area inside the root, so a rename into place never crosses a file system. */
const TEMP_DIR = '.acctops-tmp';
/** Times a staged file is tried when another process removes the staging directory meanwhile. */
const STAGING_ATTEMPTS = 10;

/**
 * An ObjectStore on a local directory (the CLI's `--out ./dir`, tests). Every object is written to
 * a temporary file, fsynced and renamed into place: rename is atomic, so a reader sees the old
 * object or the whole new one, never a partial file, and a failed write leaves nothing behind.
 *
 * Conditional puts are atomic within this process only (one writer per directory is assumed).
 * ETags come from the file's inode, size and nanosecond mtime: each put makes a new file.
 *
 * The temporary files live in a staging directory at the root, `.acctops-tmp/`, which is removed
 * again once no write of this store is under way and it is empty, so a finished export (or a
 * failed one, whose staged files are gone) leaves only its objects. Two processes may still write
 * to one directory at once (`acctops export --out` of two runs: nothing locks an --out directory),
 * so the removal is an `rmdir` that fails on a directory another writer is staging in, and staging
 * makes the directory again if one vanished between creating it and the temporary file.
 */
export class DirObjectStore implements ObjectStore {
  readonly root: string;
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Writes of this store between staging their temporary file and its rename (or removal). */
  private staging = 0;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async putStream(key: string, body: Readable, _options?: PutOptions): Promise<void> {
    const path = this.pathOf(key);
    // The body may fail before the pipeline is attached; pipeline still sees it as errored, and this
    // keeps that early 'error' event from being an uncaught one.
    body.on('error', () => undefined);
    // The temporary file exists already (stageFile): it is written over, never created here.
    await this.writeAtomically(key, path, async (temp) => {
      await pipeline(body, createWriteStream(temp, { flags: 'w' }));
    });
  }

  async putObject(key: string, body: Uint8Array | string, options: PutOptions & PutConditions = {}): Promise<void> {
    const path = this.pathOf(key);
    return this.exclusive(key, async () => {
      if (options.ifMatch !== undefined || options.ifNoneMatch !== undefined) {
        const current = await this.head(key);
        if (options.ifNoneMatch === '*' && current) throw new PreconditionFailedError(key);
        if (options.ifMatch !== undefined && current?.etag !== options.ifMatch) throw new PreconditionFailedError(key);
      }
      await this.writeAtomically(key, path, async (temp) => {
        const file = await open(temp, 'w');
        try {
          await file.writeFile(body);
        } finally {
          await file.close();
        }
      });
    });
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.pathOf(key));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw new ObjectStoreError('get', key, error, undefined, this.url(key));
    }
  }

  async head(key: string): Promise<ObjectHead | undefined> {
    try {
      const info = await stat(this.pathOf(key), { bigint: true });
      if (!info.isFile()) return undefined;
      return {
        etag: `"${info.ino.toString(16)}-${info.size.toString(16)}-${info.mtimeNs.toString(16)}"`,
        size: Number(info.size),
        lastModified: Number(info.mtimeMs),
      };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw new ObjectStoreError('head', key, error, undefined, this.url(key));
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectSummary> {
    // Walk only the deepest directory the prefix names; the rest of the prefix filters names.
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? '' : prefix.slice(0, slash);
    const start = base ? join(this.root, ...base.split('/')) : this.root;
    const keys: string[] = [];
    await this.walk(start, keys);
    keys.sort();
    for (const key of keys) {
      if (!key.startsWith(prefix)) continue;
      const head = await this.head(key);
      if (head) yield { key, size: head.size, lastModified: head.lastModified };
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const path = this.pathOf(key);
      try {
        await unlink(path);
      } catch (error) {
        if (!isMissing(error)) throw new ObjectStoreError('delete', key, error, undefined, this.url(key));
      }
      await this.pruneEmptyDirectories(dirname(path));
    }
  }

  url(key: string): string {
    return pathToFileURL(this.pathOf(key)).href;
  }

  private pathOf(key: string): string {
    if (!isSafeKey(key) || key === TEMP_DIR || key.startsWith(`${TEMP_DIR}/`)) {
      throw new ObjectStoreError('resolve', key, new Error('unsafe object key'), 'object_key_invalid');
    }
    return join(this.root, ...key.split('/'));
  }

  private async writeAtomically(key: string, path: string, write: (temp: string) => Promise<void>): Promise<void> {
    this.staging += 1;
    let temp: string | undefined;
    try {
      temp = await this.stageFile();
      await write(temp);
      // Durable before visible: without the fsync a crash could leave an empty file at the key.
      const file = await open(temp, 'r');
      try {
        await file.sync();
      } finally {
        await file.close();
      }
      await makeDirectory(dirname(path));
      await rename(temp, path);
    } catch (error) {
      if (temp !== undefined) await unlink(temp).catch(() => undefined);
      throw error instanceof ObjectStoreError ? error : new ObjectStoreError('put', key, error, undefined, this.url(key));
    } finally {
      this.staging -= 1;
      if (this.staging === 0) await this.removeStagingDirectory();
    }
  }

  /**
   * Creates an empty temporary file in the staging directory and returns its path. The file holds
   * its place (`wx`: a new name, never another writer's) and keeps the directory non-empty, so no
   * other writer's removal can take the directory away while it is written. Another process may
   * remove the directory while this one makes it or before the file is in it (it found it empty):
   * both show as ENOENT, and the directory is made again, a few times at most.
   */
  private async stageFile(): Promise<string> {
    const tempDir = join(this.root, TEMP_DIR);
    for (let attempt = 1; ; attempt++) {
      const temp = join(tempDir, `${randomBytes(8).toString('hex')}.part`);
      try {
        await makeDirectory(tempDir);
        await (await open(temp, 'wx')).close();
        return temp;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= STAGING_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Removes the staging directory if it is empty. Best effort: a writer of another process staging
   * there (ENOTEMPTY, EEXIST on some systems) or one that removed it first (ENOENT) is the normal
   * case, and a directory that cannot be removed is left as it is, never failing the write.
   */
  private async removeStagingDirectory(): Promise<void> {
    await rmdir(join(this.root, TEMP_DIR)).catch(() => undefined);
  }

  private async exclusive<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.locks.get(key) ?? Promise.resolve();
    const run = before.then(task, task);
    const settled = run.catch(() => undefined);
    this.locks.set(key, settled);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === settled) this.locks.delete(key);
    }
  }

  private async walk(directory: string, keys: string[]): Promise<void> {
    let entries;
    try {
      entries = await readdir(directory, { withFileTypes: true });
    } catch (error) {
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw new ObjectStoreError('list', relative(this.root, directory), error, undefined, pathToFileURL(directory).href);
    }
    for (const entry of entries) {
      const full = join(directory, entry.name);
      if (entry.isDirectory()) {
        if (directory === this.root && entry.name === TEMP_DIR) continue;
        await this.walk(full, keys);
      } else if (entry.isFile()) {
        keys.push(relative(this.root, full).split(sep).join('/'));
      }
    }
  }

  private async pruneEmptyDirectories(directory: string): Promise<void> {
    let current = directory;
    while (current.startsWith(this.root + sep)) {
      try {
        await rmdir(current);
      } catch {
        return;
      }
      current = dirname(current);
    }
  }
}

/**
 * `mkdir -p` with one attempt per path component. Node 20's `mkdir(…, { recursive: true })` never
 * returns for a path under /proc (it retries ENOENT forever at full CPU), so an unwritable --out
 * would hang the export while it holds the state lock. Here each level is tried once: any error
 * but a missing parent or an existing directory is final. `mode` applies to every level it makes.
 */
export async function makeDirectory(directory: string, mode?: number): Promise<void> {
  try {
    await mkdir(directory, { mode });
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if ((await stat(directory)).isDirectory()) return;
      throw error;
    }
    const parent = dirname(directory);
    if (code !== 'ENOENT' || parent === directory) throw error;
  }
  await makeDirectory(dirname(directory), mode);
  try {
    await mkdir(directory, { mode });
  } catch (error) {
    // A concurrent writer may have made it between the two calls.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !(await stat(directory)).isDirectory()) throw error;
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
