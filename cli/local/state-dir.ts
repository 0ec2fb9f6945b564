import { open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from '../../src/core/shared/clock';
import { CliError } from '../errors';
import { ExitCode } from '../exit-codes';

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
} as const;

export const DEFAULT_STATE_DIR = '.acctops';

export function statePath(stateDir: string, file: keyof typeof STATE_FILES): string {
  return join(stateDir, STATE_FILES[file]);
}

/**
 * What each state file's loss costs, and so what `acctops local repair` can rebuild. tokens.json and
 * revocations.json are rebuilt empty (the service still knows the users and keys: `users onboard`
 * retrieves a user's tokens again, `doctor --repair` finds old keys whose revocation was lost);
 * state.json is rebuilt with its defaults. sandbox.json and secrets.json hold the service and the
 * keys themselves: only `local reset` (which keeps nothing) recovers from their loss.
 */
export const REPAIRABLE_STATE_FILES = ['state', 'tokens', 'revocations'] as const;
export type StateFileName = 'state' | 'sandbox' | 'secrets' | 'tokens' | 'revocations';

/** A state file that exists but does not parse: the state directory is wrong, not the command. */
export class DamagedStateFileError extends CliError {
  readonly file: StateFileName;
  readonly path: string;

  constructor(file: StateFileName, path: string, cause: unknown) {
    const repairable = (REPAIRABLE_STATE_FILES as readonly string[]).includes(file);
    const problem = cause instanceof Error ? cause.message.replace(/^invalid [^:]*: /, '') : String(cause);
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

/** Another acctops command is using the state directory. */
export class StateLockedError extends CliError {
  constructor(stateDir: string, pid: number) {
    super(`another acctops command (pid ${pid}) is using the state directory ${stateDir}`, {
      code: 'state_locked',
      exitCode: ExitCode.failure,
      hint: 'wait for it to finish, or use another --state-dir',
    });
  }
}

/**
 * One process at a time: the embedded service and secrets are loaded at the start of a command and
 * saved at its end, so two commands at once would lose one's changes. A lock left by a process that
 * no longer exists is taken over.
 */
export async function lockStateDir(stateDir: string): Promise<() => Promise<void>> {
  const path = statePath(stateDir, 'lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) throw new StateLockedError(stateDir, pid);
      await rm(path, { force: true });
    }
  }
  throw new StateLockedError(stateDir, 0);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
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

/**
 * Deletes a state directory, but only one that is recognisably acctops's (it has state.json, or
 * nothing but acctops's files): `--state-dir` might name the wrong directory.
 */
export async function resetStateDir(stateDir: string): Promise<boolean> {
  let entries: string[];
  try {
    entries = await readdir(stateDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  // The exports directory's name lives with the export layout, which loads the writers: only here.
  const { EXPORT_ROOT } = await import('../../src/core/exports/formats/layout.ts');
  const ours = new Set<string>([...Object.values(STATE_FILES), EXPORT_ROOT, '.acctops-tmp']);
  const known = entries.every((e) => ours.has(e) || /\.tmp$/.test(e) || /\.damaged-[0-9TZ-]+$/.test(e));
  if (!entries.includes(STATE_FILES.state) && !known) {
    throw new CliError(`${stateDir} does not look like an acctops state directory; nothing deleted`, {
      code: 'not_a_state_dir',
      exitCode: ExitCode.config,
      hint: 'check --state-dir',
    });
  }
  if ((await stat(stateDir)).isDirectory()) await rm(stateDir, { recursive: true, force: true });
  return entries.length > 0;
}
