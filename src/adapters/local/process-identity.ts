import { readFileSync } from 'node:fs';

/**
 * Which process wrote a file that marks a claim (the state lock, a staged export file), so that a
 * later process can tell whether the claim is still held. A pid alone is not enough: pids are
 * reused, and after a container restart a small pid (often 1) belongs to a new, unrelated process.
 * Linux gives each process a start time (ticks since boot, /proc/<pid>/stat) and each boot an id;
 * together with the pid they name one process for good. Elsewhere (macOS) neither is read and a
 * claim is judged by its pid alone, as before.
 */
export interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat, field 22); undefined where unreadable. */
  start?: string;
  /** /proc/sys/kernel/random/boot_id; undefined where unreadable. */
  boot?: string;
}

/** What a recorded identity's process is now. */
export type ProcessState =
  /** The same process is running (pid alive, and its start time and boot match where recorded). */
  | 'alive'
  /** The pid is alive, but whether it is the same process cannot be told (no start time on one side). */
  | 'unverified'
  /** The process is gone: no such pid, another boot, or another process with the pid. */
  | 'gone';

let own: ProcessIdentity | undefined;

/** This process's identity (read once: it does not change). */
export function ownIdentity(): ProcessIdentity {
  own ??= { pid: process.pid, start: startOf(process.pid), boot: bootId() };
  return own;
}

/** The fields of /proc/<pid>/stat from the third (the state) on, or undefined where /proc cannot tell. */
function statFields(pid: number): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The start time of `pid` in ticks since boot, or undefined where /proc cannot tell. */
export function startOf(pid: number): string | undefined {
  const start = statFields(pid)?.[19];
  return start !== undefined && /^\d+$/.test(start) ? start : undefined;
}

/**
 * Whether `pid` has exited and only waits for its parent to collect its exit status (a zombie, `Z`,
 * or `X` on its way out). It holds nothing any more, but its pid still answers a signal 0 and its
 * start time is still the one recorded: a supervisor that killed a hung command and retried before
 * reaping it found the state directory locked by a dead process.
 */
function exited(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state === 'Z' || state === 'X';
}

function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with `pid` runs (EPERM: it does, as another user's); a zombie does not (`exited`). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !exited(pid);
}

/** What the process `recorded` names is now: still running, gone, or a live pid that cannot be verified. */
export function processState(recorded: ProcessIdentity): ProcessState {
  const current = ownIdentity();
  if (recorded.boot !== undefined && current.boot !== undefined && recorded.boot !== current.boot) return 'gone';
  if (!pidAlive(recorded.pid)) return 'gone';
  if (recorded.start === undefined) return 'unverified';
  const start = recorded.pid === process.pid ? current.start : startOf(recorded.pid);
  // Unreadable here but alive: no /proc (macOS), or hidden; unreadable and gone: it just exited.
  if (start === undefined) return pidAlive(recorded.pid) ? 'unverified' : 'gone';
  return start === recorded.start ? 'alive' : 'gone';
}

/**
 * When `pid` started, in ms since the epoch: the boot time (/proc/stat `btime`) plus its start
 * ticks at USER_HZ, which Linux fixes at 100 for every process-facing interface. Undefined where
 * /proc cannot tell.
 */
export function startedAtMs(pid: number): number | undefined {
  const ticks = startOf(pid);
  if (ticks === undefined) return undefined;
  let btime: number;
  try {
    btime = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
  return Number.isFinite(btime) ? btime * 1000 + Number(ticks) * 10 : undefined;
}

/** The arguments `pid` was started with (/proc/<pid>/cmdline); undefined where unreadable. */
export function commandLineOf(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw === '' ? undefined : raw.replace(/\0$/, '').split('\0');
  } catch {
    return undefined;
  }
}
