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
import { ownIdentity, processState } from './process-identity';

/** Staging area inside the root, so a rename into place never crosses a file system. */
const TEMP_DIR = '.acctops-tmp';
/** Times a staged file is tried when another process removes the staging directory meanwhile. */
const STAGING_ATTEMPTS = 10;
/**
 * A staged file is named after the process writing it, `<pid>-<start>-<16 hex>.part` (start: the
 * process's start time in ticks since boot, 0 where unknown), so that another process can tell a
 * dead writer's leftovers from a live writer's file (sweepStaleStaging).
 */
const STAGED_NAME = /^(\d+)-(\d+)-[0-9a-f]{16}\.part$/;
/**
 * How long since its last change a staged file whose writer cannot be verified (a file named by an
 * older acctops, or a live pid without /proc to tell who it is) is kept. A live write changes its
 * file at least once per page of the service, well within a minute; an hour leaves a wide margin.
 */
export const STALE_STAGING_MS = 60 * 60 * 1000;

/** Stores of this process with a write between staging and rename: what abandonLocalWrites stops. */
const writing = new Set<DirObjectStore>();
/** Stores of this process that made directories for their objects: what removeLocalDirectoriesMade looks at. */
const makers = new Set<DirObjectStore>();
/** Set by removeLocalDirectoriesMade: the process is exiting, and no store of it may start a write, one made since included. */
let exiting = false;
/** Called with every object a store of this process put into place (onLocalCommit). */
const commitListeners = new Set<(store: DirObjectStore, key: string) => void>();

/**
 * Calls `listener` with each object any DirObjectStore of this process puts into place from now
 * on, until the returned function is called. A signal handler uses it to say what a run published
 * before it was stopped: the store is made where the export is, out of the handler's reach.
 */
export function onLocalCommit(listener: (store: DirObjectStore, key: string) => void): () => void {
  commitListeners.add(listener);
  return () => commitListeners.delete(listener);
}

/**
 * Stops every write of this process's DirObjectStores and removes what they staged: the process is
 * about to exit (Ctrl-C, SIGTERM) and its writers will not get to clean up after themselves. A
 * write that had not yet been renamed into place never will be (it fails), and no new one starts;
 * a rename already under way is awaited, so that what onLocalCommit reported is all that was put.
 * Returns the number of staged files removed.
 */
export async function abandonLocalWrites(): Promise<number> {
  let removed = 0;
  for (const store of [...writing]) removed += await store.abandon();
  return removed;
}

/**
 * Stops every write of this process's DirObjectStores, as abandonLocalWrites does, and removes the
 * directories they made for their objects that hold nothing now, deepest first: an export stopped
 * by a signal made its run's folders (`…/period=<month>/<dataset>/run=<id>/`) before any file was
 * put in them, and the files it did put there were deleted again as unpublished. A directory that
 * existed before is never one of them, and rmdir removes nothing with content, so a published file
 * keeps its folders. Call it after those deletes. Returns the number of directories removed.
 */
export async function removeLocalDirectoriesMade(): Promise<number> {
  // A store that had not written yet (the export still before its first file) would make --out again after this.
  exiting = true;
  let removed = 0;
  for (const store of [...makers]) removed += await store.removeDirectoriesMade();
  return removed;
}

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
 * makes the directory again if one vanished between creating it and the temporary file. A process
 * that dies mid-write cannot clean up: a signal handler can (abandonLocalWrites), and what a killed
 * or crashed process left is removed by the next store that writes there (sweepStaleStaging), told
 * from a live writer's files by the writer's pid and start time in their names.
 */
export class DirObjectStore implements ObjectStore {
  readonly root: string;
  private readonly locks = new Map<string, Promise<unknown>>();
  /** Writes of this store between staging their temporary file and its rename (or removal). */
  private staging = 0;
  /** The temporary files this store holds now. */
  private readonly staged = new Set<string>();
  /**
   * File-system calls under way that make the staging directory, create a staged file or put one
   * into place (abandon awaits them).
   */
  private readonly creating = new Set<Promise<unknown>>();
  /** Set by abandon(): the process is exiting, and no write may be put into place any more. */
  private abandoned = false;
  /** Directories this store made for its objects, in the order made (a parent before its children). */
  private readonly made: string[] = [];
  /** The sweep of staged files left by dead processes, once per store (on its first write). */
  private swept: Promise<void> | undefined;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async putStream(key: string, body: Readable, _options?: PutOptions): Promise<void> {
    const path = this.pathOf(key);
    // The body may fail before the pipeline is attached; pipeline still sees it as errored, and this
    // keeps that early 'error' event from being an uncaught one.
    body.on('error', () => undefined);
    // The temporary file exists already (stageFile): it is opened, never created here, so that a
    // file abandon() removed meanwhile is not made again by a write that is still under way.
    await this.writeAtomically(key, path, async (temp) => {
      await pipeline(body, createWriteStream(temp, { flags: 'r+' }));
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
        const file = await open(temp, 'r+');
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
    writing.add(this);
    let temp: string | undefined;
    try {
      this.refuseIfAbandoned();
      this.swept ??= this.sweepStaleStaging();
      await this.swept;
      temp = await this.stageFile();
      await write(temp);
      // Durable before visible: without the fsync a crash could leave an empty file at the key.
      const file = await open(temp, 'r');
      try {
        await file.sync();
      } finally {
        await file.close();
      }
      // Checked before the directories are made, and their making tracked, so that once abandoned
      // no write makes one after removeDirectoriesMade has looked.
      this.refuseIfAbandoned();
      makers.add(this);
      await this.creation(makeDirectory(dirname(path), undefined, this.made));
      this.refuseIfAbandoned();
      const staged = temp;
      await this.creation(
        rename(staged, path).then(() => {
          this.staged.delete(staged);
          for (const listener of commitListeners) listener(this, key);
        }),
      );
    } catch (error) {
      if (temp !== undefined) {
        await unlink(temp).catch(() => undefined);
        this.staged.delete(temp);
      }
      throw error instanceof ObjectStoreError ? error : new ObjectStoreError('put', key, error, undefined, this.url(key));
    } finally {
      this.staging -= 1;
      if (this.staging === 0) {
        writing.delete(this);
        await this.removeStagingDirectory();
      }
    }
  }

  private refuseIfAbandoned(): void {
    if (this.abandoned || exiting) throw new Error('the process is exiting: write abandoned');
  }

  /** Tracks a call that makes the staging directory, creates a staged file or puts one into place until it settles (abandon awaits it). */
  private async creation<T>(call: Promise<T>): Promise<T> {
    this.creating.add(call);
    try {
      return await call;
    } finally {
      this.creating.delete(call);
    }
  }

  /**
   * Stops this store's writes for good and removes its staged files and its staging directory
   * (abandonLocalWrites). Calls that make the directory, create a staged file or rename one are
   * awaited first, so that none lands after the sweep (a directory made after it stayed, empty).
   * The writes themselves are left to fail at their next step: a write may wait on its body, a
   * network read, for longer than a process that is exiting has.
   */
  async abandon(): Promise<number> {
    this.abandoned = true;
    await Promise.allSettled([...this.creating]);
    let removed = 0;
    for (const temp of [...this.staged]) {
      this.staged.delete(temp);
      if (
        await unlink(temp).then(
          () => true,
          () => false,
        )
      )
        removed++;
    }
    await this.removeStagingDirectory();
    return removed;
  }

  /**
   * Refuses any further write, waits for the calls under way, then removes the directories this
   * store made that are empty, children before their parents (removeLocalDirectoriesMade).
   */
  async removeDirectoriesMade(): Promise<number> {
    this.abandoned = true;
    await Promise.allSettled([...this.creating]);
    let removed = 0;
    for (const directory of this.made.splice(0).reverse()) {
      // Not empty (a file, or a folder that stays) or gone already: kept, and the walk goes on.
      if (
        await rmdir(directory).then(
          () => true,
          () => false,
        )
      )
        removed++;
    }
    makers.delete(this);
    return removed;
  }

  /**
   * Removes staged files of processes that are gone (killed, or crashed, before their own cleanup):
   * a file whose writer is dead or is another process with the pid now, or, when the writer cannot
   * be verified (an older acctops's name, no /proc), one unchanged for STALE_STAGING_MS. A live
   * writer's file, another acctops exporting into the same directory, is never touched. Best effort:
   * it never fails a write.
   */
  private async sweepStaleStaging(): Promise<void> {
    const tempDir = join(this.root, TEMP_DIR);
    let names: string[];
    try {
      names = await readdir(tempDir);
    } catch {
      return;
    }
    const now = Date.now();
    for (const name of names) {
      const match = STAGED_NAME.exec(name);
      const state = match ? processState({ pid: Number(match[1]), start: match[2] === '0' ? undefined : match[2] }) : 'unverified';
      if (state === 'alive') continue;
      const path = join(tempDir, name);
      if (state === 'unverified') {
        const info = await stat(path).catch(() => undefined);
        if (!info?.isFile() || now - info.mtimeMs <= STALE_STAGING_MS) continue;
      }
      await unlink(path).catch(() => undefined);
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
    const { pid, start = '0' } = ownIdentity();
    for (let attempt = 1; ; attempt++) {
      const temp = join(tempDir, `${pid}-${start}-${randomBytes(8).toString('hex')}.part`);
      try {
        // Refused, or tracked, in the same step: abandon() then waits for a directory being made
        // before it removes it, so a signal between a write's start and its staging directory
        // leaves no empty one behind (decision 83).
        this.refuseIfAbandoned();
        await this.creation(makeDirectory(tempDir));
        this.refuseIfAbandoned();
        this.staged.add(temp);
        await this.creation(open(temp, 'wx').then((file) => file.close()));
        return temp;
      } catch (error) {
        this.staged.delete(temp);
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
 * but a missing parent or an existing directory is final. `mode` applies to every level it makes;
 * `made`, when given, gets each directory it made, a parent before its children.
 */
export async function makeDirectory(directory: string, mode?: number, made?: string[]): Promise<void> {
  try {
    await mkdir(directory, { mode });
    made?.push(directory);
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
  await makeDirectory(dirname(directory), mode, made);
  try {
    await mkdir(directory, { mode });
    made?.push(directory);
  } catch (error) {
    // A concurrent writer may have made it between the two calls.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !(await stat(directory)).isDirectory()) throw error;
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
