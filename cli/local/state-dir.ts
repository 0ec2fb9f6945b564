import { readFileSync, rmSync, unlinkSync } from 'node:fs';
import { link, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { EXPORT_LAYOUT } from '../../contract/exports';
import { makeDirectory } from '../../src/adapters/local/dir-object-store';
import { readTextIfExists, temporaryPath, writesUnderWay } from '../../src/adapters/local/private-json-file';
import {
  commandLineOf,
  ownIdentity,
  pidAlive,
  processState,
  startedAtMs,
  type ProcessIdentity,
} from '../../src/adapters/local/process-identity';
import { systemClock, type Clock } from '../../src/core/shared/clock';
import { CliError } from '../errors';
import { missingDirectories, removeEmptyDirectories } from '../created-dirs';
import { ExitCode } from '../exit-codes';
import { fsCauseText, isFsError, longestNameBytes, shortPath } from '../fs-failure';
import { onForcedExit, releaseOnInterrupt } from '../interrupt';
import { issuesText, ValidationError } from '../../src/core/shared/errors';

/**
 * The local mode's state directory (default `.acctops/`, gitignored): every file the embedded
 * world keeps between two commands. Files holding credentials are mode 0600 in a 0700 directory.
 */
export const STATE_FILES = {
  /** This mode's own settings and its clock offset. */
  state: 'state.json',
  /** The embedded service (sandbox snapshot): data, users, keys, token states. Holds credentials. */
  sandbox: 'sandbox.json',
  /** The Secrets Manager emulator's secrets: institution credential, company keys. Holds credentials. */
  secrets: 'secrets.json',
  /** FileTokenStore: the users' token pairs. Holds credentials. */
  tokens: 'tokens.json',
  /** FileRegistryTable: the company registry (`acctops companies`). Ids and settings only. */
  companies: 'companies.json',
  /** FileRevocationQueue: old keys waiting for their grace period to end. Ids and prefixes only. */
  revocations: 'revocations.json',
  /** Held while a command runs: one process at a time. */
  lock: 'lock',
  /**
   * The snapshot files of one save, written before any of them (LocalWorld.save) and removed after
   * the last: a save cut short (`kill -9`) is completed by the next command.
   */
  saving: 'saving.json',
} as const;

export const DEFAULT_STATE_DIR = '.acctops';

export function statePath(stateDir: string, file: keyof typeof STATE_FILES): string {
  return join(stateDir, STATE_FILES[file]);
}

/**
 * What each state file's loss costs, and so what `acctops local repair` can rebuild. tokens.json and
 * revocations.json are rebuilt empty (the service still knows the users and keys: `users onboard`
 * retrieves a user's tokens again, `doctor --repair` finds old keys whose revocation was lost);
 * state.json is rebuilt with its defaults; companies.json is seeded again from the company key
 * secrets, as for a new state (what `companies add|remove` changed since is lost with it).
 * sandbox.json and secrets.json hold the service and the keys themselves: only `local reset`
 * (which keeps nothing) recovers from their loss.
 */
export const REPAIRABLE_STATE_FILES = ['state', 'tokens', 'revocations', 'companies'] as const;
export type StateFileName = 'state' | 'sandbox' | 'secrets' | 'tokens' | 'revocations' | 'companies';

/** A state file that exists but does not parse: the state directory is wrong, not the command. */
export class DamagedStateFileError extends CliError {
  override readonly name: string = 'DamagedStateFileError';
  readonly file: StateFileName;
  readonly path: string;

  constructor(file: StateFileName, path: string, cause: unknown) {
    const repairable = (REPAIRABLE_STATE_FILES as readonly string[]).includes(file);
    const problem =
      cause instanceof ValidationError
        ? issuesText(cause.issues)
        : cause instanceof Error
          ? cause.message.replace(/^invalid [^:]*: /, '')
          : String(cause);
    super(`the local state file ${path} is damaged (${problem})`, {
      code: 'state_file_damaged',
      exitCode: ExitCode.config,
      hint: repairable
        ? '`acctops local repair` sets it aside and rebuilds it (README, "Local mode"); `acctops local reset --yes` starts from scratch'
        : '`acctops local reset --yes` starts from scratch (it cannot be rebuilt: it holds the service or the keys); or restore the file from a backup',
      cause,
    });
    this.file = file;
    this.path = path;
  }
}

/** The state directory's path is a file, or runs through one: the setting is wrong, not the command. */
export class StateDirNotDirectoryError extends CliError {
  override readonly name: string = 'StateDirNotDirectoryError';
  readonly path: string;

  constructor(stateDir: string, cause: unknown) {
    super(`the state directory ${shortPath(stateDir)} (--state-dir or ACCTOPS_STATE_DIR) is a file or inside one`, {
      code: 'state_dir_not_directory',
      exitCode: ExitCode.config,
      hint: 'name a directory with --state-dir or ACCTOPS_STATE_DIR; a missing one is created',
      cause,
    });
    this.path = stateDir;
  }
}

/** What was being done to the state directory when the file system refused. */
export type StateDirStep = 'created' | 'written' | 'read';

/**
 * The state directory cannot be created where it is named (permission, read-only, /proc, a name too
 * long, a symbolic link loop…), or it exists but cannot be written (every command writes its lock
 * there, a read-only one too) or listed. Any file-system failure is this error, said in words with
 * its errno code: the setting is what to fix, and a raw Node error said neither.
 */
export class StateDirUnwritableError extends CliError {
  override readonly name: string = 'StateDirUnwritableError';
  readonly path: string;

  constructor(stateDir: string, cause: NodeJS.ErrnoException, failed: StateDirStep = 'created') {
    super(`the state directory ${shortPath(stateDir)} (--state-dir or ACCTOPS_STATE_DIR) cannot be ${failed}: ${fsCauseText(cause)}`, {
      code: 'state_dir_unwritable',
      exitCode: ExitCode.config,
      hint: stateDirHint(stateDir, cause, failed),
      cause,
    });
    this.path = stateDir;
  }
}

function stateDirHint(stateDir: string, cause: NodeJS.ErrnoException, failed: StateDirStep): string {
  const setting = '--state-dir or ACCTOPS_STATE_DIR';
  if (cause.code === 'ENAMETOOLONG') {
    return `name a shorter path with ${setting}: most file systems allow 255 bytes a name, and its longest has ${longestNameBytes(stateDir)}`;
  }
  if (cause.code === 'ELOOP') return `name a real directory with ${setting}: a symbolic link on the path leads back to itself`;
  if (failed === 'written' && isAccessDenied(cause)) {
    return `every command writes its lock file there, read-only ones too: give this user write access to it, or name another directory with ${setting}`;
  }
  return `name a directory you can write with ${setting}`;
}

/**
 * A state file that exists but cannot be read (its mode or owner: the files are 0600, so another
 * user's state): the state directory is wrong, not the command, and the file is not damaged.
 */
export class StateFileUnreadableError extends CliError {
  override readonly name: string = 'StateFileUnreadableError';
  readonly path: string;

  constructor(path: string, cause: NodeJS.ErrnoException) {
    super(`the local state file ${shortPath(path)} cannot be read: ${fsCauseText(cause)}`, {
      code: 'state_file_unreadable',
      exitCode: ExitCode.config,
      hint: isAccessDenied(cause)
        ? 'its files are 0600, readable by the user who created the state: run acctops as that user, or name your own --state-dir'
        : 'it should be a file acctops wrote: move what is there aside, or name another --state-dir',
      cause,
    });
    this.path = path;
  }
}

/**
 * The command's final save failed (a full disk, a quota, a file system gone read-only): the
 * command has acted by then, so this is a failure of the operation (1), not of the configuration
 * (3), and the line says what the state directory now holds. `journaled`: saving.json holds the
 * whole save, and the next command writes it out; otherwise the files are those of before.
 */
export class StateNotSavedError extends CliError {
  override readonly name: string = 'StateNotSavedError';
  readonly path: string;

  constructor(path: string, cause: NodeJS.ErrnoException, journaled: boolean) {
    super(`the command ran, but its local state could not be saved: ${shortPath(path)}: ${fsCauseText(cause)}`, {
      code: 'state_not_saved',
      exitCode: ExitCode.failure,
      hint: journaled
        ? `the whole save is in ${STATE_FILES.saving}, which the next command completes: fix the cause, then run any command (acctops doctor)`
        : 'the state directory still holds the state from before this command, which is not kept: fix the cause, then run the command again',
      cause,
    });
    this.path = path;
  }
}

/** A file-system refusal of access (permission, read-only file system), as opposed to a fault of the file. */
export function isAccessDenied(error: unknown): error is NodeJS.ErrnoException {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EACCES' || code === 'EPERM' || code === 'EROFS';
}

/**
 * What a file-system call on the state directory failed with: a file in the way is
 * StateDirNotDirectoryError, any other file-system failure StateDirUnwritableError; anything else
 * (not the file system's) is returned as it is.
 */
function stateDirError(stateDir: string, error: unknown, failed: StateDirStep): unknown {
  if (!isFsError(error)) return error;
  if (error.code === 'EEXIST' || error.code === 'ENOTDIR') return new StateDirNotDirectoryError(stateDir, error);
  return new StateDirUnwritableError(stateDir, error, failed);
}

/** Whether the state directory exists; a path the file system cannot even look at (ELOOP, ENAMETOOLONG…) is StateDirUnwritableError. */
export async function stateDirExists(stateDir: string): Promise<boolean> {
  try {
    await stat(stateDir);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw stateDirError(stateDir, error, 'read');
  }
}

/**
 * Creates the state directory (0700) if it is missing, one level at a time (makeDirectory: Node
 * 20's `mkdir -p` retries forever under /proc, which hung the command at full CPU). When its own
 * name fails (too long, say), the parents it made are removed again, if still empty.
 */
export async function createStateDir(stateDir: string): Promise<void> {
  const missing = await missingDirectories(stateDir);
  try {
    await makeDirectory(stateDir, 0o700);
  } catch (error) {
    await removeEmptyDirectories(missing);
    throw stateDirError(stateDir, error, 'created');
  }
}

/** Another acctops command is using the state directory. */
export class StateLockedError extends CliError {
  override readonly name: string = 'StateLockedError';
  constructor(stateDir: string, pid: number) {
    const lock = statePath(stateDir, 'lock');
    super(`another acctops command (pid ${pid}) is using the state directory ${stateDir}`, {
      code: 'state_locked',
      exitCode: ExitCode.failure,
      // Not "use another --state-dir": a new directory is a fresh demo state, where the command would
      // "succeed" on keys and users that are not the ones meant.
      hint: `run the command again once that one has ended (there is no waiting option); if you are sure no acctops command is using the directory, delete ${lock}`,
    });
  }
}

/**
 * What the lock file says: the holder's pid, its start time and the boot (ProcessIdentity), and the
 * host for whoever reads the file. A lock of an older acctops holds the bare pid (`legacy`).
 */
interface LockRecord extends ProcessIdentity {
  legacy: boolean;
}

/** The lock as this process writes it: one JSON line. */
function lockText(): string {
  const { pid, start, boot } = ownIdentity();
  return `${JSON.stringify({ pid, start: start ?? null, boot: boot ?? null, host: hostname() })}\n`;
}

/** The lock's record; undefined when the lock is gone; pid 0 when it names no process (unreadable, empty). */
function parseLock(text: string): LockRecord {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed), legacy: true };
  try {
    const json = JSON.parse(trimmed) as { pid?: unknown; start?: unknown; boot?: unknown };
    const pid = typeof json.pid === 'number' && Number.isInteger(json.pid) && json.pid > 0 ? json.pid : 0;
    const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
    return { pid, start: text(json.start), boot: text(json.boot), legacy: false };
  } catch {
    return { pid: 0, legacy: false };
  }
}

/** A stale lock this process took over (lockStateDir's `onTakeOver`): the process named in it, 0 when it named none. */
export interface TakenOverLock {
  pid: number;
}

/**
 * The note for a state lock taken over from a process that no longer runs (a `kill -9`, a crash, a
 * second Ctrl-C during a write). What it did not save is lost: the embedded service, the keys and
 * the clock are saved only at a command's end, so they are as its last save left them, or as the
 * save it had begun and this command completed (saving.json); tokens.json and revocations.json,
 * written as they change, keep what it wrote. `local reset` deletes all of it anyway, and says that
 * instead: naming the doctor there would send the operator to check a state that is gone.
 */
export function takenOverLockNote(lock: { pid: number; completedSave: readonly string[] }, options: { deleting?: boolean } = {}): string {
  const holder =
    lock.pid > 0
      ? `acctops process ${lock.pid}, which no longer runs (killed, or crashed)`
      : 'a process it does not name (an empty or unreadable lock)';
  if (options.deleting === true)
    return `acctops: note: took over the state lock left by ${holder}: what it left, saved or not, is deleted with the rest of the state`;
  const save =
    lock.completedSave.length > 0
      ? `the save it had begun was completed now (${lock.completedSave.join(', ')})`
      : 'what it had not saved when it stopped is lost (the service, the keys and the clock are as its last save left them)';
  return `acctops: note: took over the state lock left by ${holder}: ${save}; \`acctops doctor\` checks what it may have left half done`;
}

/**
 * One process at a time: the embedded service and secrets are loaded at the start of a command and
 * saved at its end, so two commands at once would lose one's changes. A lock left by a process that
 * no longer exists is taken over, and so is one whose pid now belongs to another process: pids are
 * reused (after a container restart the holder's pid is often a new, unrelated process), so the
 * lock records the holder's start time and boot too, and a live pid with another start time is not
 * the holder (holds).
 *
 * The lock appears with its record already in it: written to a temporary file, then linked into
 * place (link fails if the lock exists). Created empty and written after, a second process reading
 * in between saw no pid, took the lock for stale and both held it.
 *
 * Ctrl-C or SIGTERM releases it (cli/interrupt.ts, releaseOnInterrupt), after the command's own
 * steps (the world saves first). The release is registered before the lock is taken: Node's default
 * for a signal that lands between the link and the caller's own handler ended the process with the
 * lock left behind.
 *
 * `onTakeOver` is called, once the lock is ours, when it was taken over from a process that no
 * longer runs: the caller says so (a `kill -9` lost that command's unsaved changes), which it did
 * silently before.
 */
export async function lockStateDir(
  stateDir: string,
  options: { onTakeOver?: (lock: TakenOverLock) => void } = {},
): Promise<() => Promise<void>> {
  const path = statePath(stateDir, 'lock');
  const temp = temporaryPath(path);
  const text = lockText();
  const stopInterruptRelease = releaseOnInterrupt(() => releaseOwnLock(path, temp, text));
  const stopForcedRelease = onForcedExit(() => releaseOwnLockAtForcedExit(path, temp, text));
  const stopReleasing = () => {
    stopInterruptRelease();
    stopForcedRelease();
  };
  try {
    await writeFile(temp, text, { flag: 'wx', mode: 0o600 }).catch((error: unknown) => {
      // A directory that exists but takes no file (mode, owner, read-only mount, /proc/self): said as such, not "unexpected".
      throw stateDirError(stateDir, error, 'written');
    });
    try {
      let takenOver: TakenOverLock | undefined;
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          await link(temp, path);
          if (takenOver !== undefined) options.onTakeOver?.(takenOver);
          return async () => {
            await rm(path, { force: true });
            stopReleasing();
          };
        } catch (error) {
          // A file system without hard links refuses the lock itself.
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw stateDirError(stateDir, error, 'written');
          const seen = await readLock(path);
          if (seen !== undefined && (await holds(path, seen.record))) throw new StateLockedError(stateDir, seen.record.pid);
          if (await takeOverStale(stateDir, path, seen?.text)) takenOver = { pid: seen!.record.pid };
        }
      }
      throw new StateLockedError(stateDir, 0);
    } finally {
      await rm(temp, { force: true });
    }
  } catch (error) {
    stopReleasing();
    throw error;
  }
}

/**
 * The interrupt's release: removes the lock only while it is this process's (its record is ours),
 * never one another process took after it; and the temporary file of the lock, if still there.
 */
async function releaseOwnLock(path: string, temp: string, text: string): Promise<void> {
  await rm(temp, { force: true });
  if ((await readTextIfExists(path)) === text) await rm(path, { force: true });
}

/**
 * A second signal's part (cli/interrupt.ts, onForcedExit): the lock is removed, synchronously, when
 * it is this process's and no state file is being written. Nothing of this process runs after it
 * but process.exit and the exit listeners (which remove this process's own temporary files), so
 * the one way this process could still change the state after the release is a write already
 * handed to the file system: writePrivateJsonFile, which writes every state file, counts those
 * from the temporary file's creation to its rename (`writesUnderWay`). While one is under way the
 * lock stays, and the next command takes it over (the process is gone by then) with a note:
 * released, a command started that instant could read a file this process then replaced.
 */
function releaseOwnLockAtForcedExit(path: string, temp: string, text: string): string | undefined {
  rmSync(temp, { force: true });
  let current: string;
  try {
    current = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  if (current !== text) return undefined;
  if (writesUnderWay() > 0) return 'the state lock is left, as a state file was being written: the next command takes it over';
  try {
    unlinkSync(path);
  } catch {
    return 'the state lock could not be removed: the next command takes it over';
  }
  return 'the state lock was released';
}

/** The lock's text and record; undefined when it is gone. */
async function readLock(path: string): Promise<{ text: string; record: LockRecord } | undefined> {
  const text = await readTextIfExists(path);
  return text === undefined ? undefined : { text, record: parseLock(text) };
}

/**
 * Whether the process the lock names still holds it. A recorded start time decides (processState);
 * without one (macOS, no /proc), a live pid holds it, as before. A bare pid from an older acctops is
 * judged by what /proc tells of the process: one started after the lock was written, or that is not
 * a node process (acctops runs on node), did not write it.
 */
async function holds(path: string, lock: LockRecord): Promise<boolean> {
  if (lock.pid <= 0 || lock.pid === process.pid) return false;
  if (!lock.legacy) return processState(lock) !== 'gone';
  if (!pidAlive(lock.pid)) return false;
  const written = await stat(path).then(
    (info) => info.mtimeMs,
    () => undefined,
  );
  const started = startedAtMs(lock.pid);
  // A second of slack: the boot time and the start ticks are coarser than the file's mtime.
  if (written !== undefined && started !== undefined && started > written + 1000) return false;
  const command = commandLineOf(lock.pid);
  return command === undefined || command.some((arg) => /(^|\/)(node|nodejs|acctops)[^/]*$/.test(arg));
}

/**
 * Removes the stale lock whose text was `seen`. Moved aside first, then checked: another process
 * may have taken the stale lock over between our read and now, and its live lock must not be deleted
 * (it is linked back, and this process is refused). True when it removed the stale lock.
 */
async function takeOverStale(stateDir: string, path: string, seen: string | undefined): Promise<boolean> {
  if (seen === undefined) return false;
  const aside = temporaryPath(path);
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  const moved = await readLock(aside);
  if (moved !== undefined && moved.text !== seen && (await holds(aside, moved.record))) {
    await link(aside, path).catch(() => undefined);
    await rm(aside, { force: true });
    throw new StateLockedError(stateDir, moved.record.pid);
  }
  await rm(aside, { force: true });
  return true;
}

/**
 * The local mode's clock: the system clock plus an offset kept in state.json, which
 * `acctops local advance-clock` and the demo move forward. The embedded service, the secrets
 * emulator and the use cases all read this one clock, so a grace period or a token's expiry can be
 * rehearsed without waiting.
 */
export class LocalClock implements Clock {
  constructor(public offsetMs: number) {}

  now(): number {
    return Date.now() + this.offsetMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export function resolveStateDir(dir: string, cwd: string): string {
  return resolve(cwd, dir);
}

export interface ResetResult {
  /** True when acctops's own files were there and are deleted. */
  removed: boolean;
  /** Entries acctops did not create, left in place (so the directory is kept too). */
  kept: string[];
}

const STATE_FILE_NAMES: ReadonlySet<string> = new Set(Object.values(STATE_FILES));
/** DirObjectStore's staging directory at its root, which is the state directory. */
const EXPORT_STAGING_DIR = '.acctops-tmp';

/**
 * What acctops itself writes at the top of a state directory: the state files, their temporary
 * files (`<file>.<12 hex>.tmp`, writePrivateJsonFile and the lock), the damaged files and registry
 * entries `local repair` set aside, and the export store's `exports/` and staging directory.
 */
function isOwnEntry(name: string): boolean {
  if (STATE_FILE_NAMES.has(name) || name === EXPORT_LAYOUT.root || name === EXPORT_STAGING_DIR) return true;
  const temp = /^(.+)\.[0-9a-f]{12}\.tmp$/.exec(name) ?? /^(.+)\.damaged-(?:entries-)?[0-9TZ-]+$/.exec(name);
  return temp !== null && STATE_FILE_NAMES.has(temp[1]!);
}

/**
 * Deletes what acctops keeps in a state directory, and the directory once nothing else is left.
 * `--state-dir` may name the wrong directory (the project itself, `.`): a directory without
 * state.json holding anything foreign is refused, and with state.json only acctops's own entries
 * go, `exports/` only its `company=…` partitions, so nothing acctops did not write is lost.
 */
export async function resetStateDir(stateDir: string, options: { onTakeOver?: (lock: TakenOverLock) => void } = {}): Promise<ResetResult> {
  let entries: string[];
  try {
    entries = await readdir(stateDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { removed: false, kept: [] };
    throw stateDirError(stateDir, error, 'read');
  }
  const own = entries.filter(isOwnEntry);
  const kept = entries.filter((e) => !isOwnEntry(e));
  if (!entries.includes(STATE_FILES.state) && kept.length > 0) {
    throw new CliError(`${stateDir} does not look like an acctops state directory; nothing deleted`, {
      code: 'not_a_state_dir',
      exitCode: ExitCode.config,
      hint: 'check --state-dir',
    });
  }
  // A command running meanwhile saves its state at its end and would bring back what was deleted,
  // or part of it: the reset holds the lock like any command (and is refused while one runs).
  const unlock = await lockStateDir(stateDir, options);
  try {
    for (const entry of own) {
      if (entry === STATE_FILES.lock) continue;
      if (entry === EXPORT_LAYOUT.root) kept.push(...(await removeExports(join(stateDir, entry))).map((e) => join(entry, e)));
      else await rm(join(stateDir, entry), { recursive: entry === EXPORT_STAGING_DIR, force: true });
    }
  } finally {
    await unlock();
  }
  if (kept.length === 0) {
    await rmdir(stateDir).catch((error: NodeJS.ErrnoException) => {
      // A command that started right after the lock was released has made its files again.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  }
  return { removed: own.length > 0, kept };
}

/** Removes the export partitions acctops wrote; returns what else `exports/` holds (kept). */
async function removeExports(dir: string): Promise<string[]> {
  const prefix = `${EXPORT_LAYOUT.partitions.company}=`;
  const entries = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOTDIR') return null;
    throw error;
  });
  if (entries === null) return [''];
  for (const entry of entries.filter((e) => e.startsWith(prefix))) await rm(join(dir, entry), { recursive: true, force: true });
  const others = entries.filter((e) => !e.startsWith(prefix));
  if (others.length === 0) await rmdir(dir);
  return others;
}
