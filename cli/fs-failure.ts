import { getSystemErrorMap } from 'node:util';

/**
 * The words of a file-system failure the CLI reports as the user's to fix (the state directory,
 * `--out`): a person reads "the path is too long", not "Error: ENAMETOOLONG: name too long, mkdir
 * '…'" with the path a second time. The errno code stays in the line, for a search or a script.
 */

/**
 * An error a file-system call raised (Node's: a string errno code and the call that failed). Not
 * `instanceof Error`: an error made in another realm (a vm context, as under jest) is not one.
 */
export function isFsError(error: unknown): error is NodeJS.ErrnoException {
  if (typeof error !== 'object' || error === null || isSocketError(error)) return false;
  const { code, syscall } = error as NodeJS.ErrnoException;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) && typeof syscall === 'string';
}

/** The system calls of a connection, never of a file. */
const SOCKET_SYSCALLS = new Set(['connect', 'getaddrinfo', 'getnameinfo', 'listen', 'bind', 'accept']);

/**
 * A connection's failure (Node's `connect ECONNREFUSED 127.0.0.1:9`, an AWS endpoint out of reach):
 * the same errno shape as a file's, but with the peer's address or host name instead of a path.
 * Taken for a file's, it read "a file operation (connect) failed".
 */
export function isSocketError(error: unknown): error is NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string } {
  if (typeof error !== 'object' || error === null) return false;
  const { code, syscall } = error as NodeJS.ErrnoException;
  if (typeof code !== 'string' || typeof syscall !== 'string') return false;
  return SOCKET_SYSCALLS.has(syscall) || 'address' in error || 'hostname' in error;
}

/** `connection refused (ECONNREFUSED) to 127.0.0.1:9`: the cause in words, then where it went. */
export function socketCauseText(error: NodeJS.ErrnoException & { address?: unknown; port?: unknown; hostname?: unknown }): string {
  const code = error.code ?? 'EUNKNOWN';
  const words = SOCKET_CAUSES[code] ?? systemMessage(code) ?? 'a failure of the connection';
  const host = typeof error.hostname === 'string' ? error.hostname : typeof error.address === 'string' ? error.address : undefined;
  const where = host === undefined ? '' : ` to ${host}${typeof error.port === 'number' ? `:${error.port}` : ''}`;
  return `${words} (${code})${where}`;
}

const SOCKET_CAUSES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused: nothing listens there',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed for now (DNS)',
  ECONNRESET: 'connection reset by the peer',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/**
 * Our words for the codes a user meets with a mistyped or odd path; any other code gets libuv's own
 * (getSystemErrorMap), so that a code nobody listed here still reads as words, not as a raw error.
 */
const FS_CAUSES: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOENT: 'no such file or directory, as for a symbolic link that points nowhere or a path under /proc',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'a file is in the way',
  EISDIR: 'a directory is where a file should be',
  ENAMETOOLONG: 'the path or a name in it is too long',
  ELOOP: 'too many levels of symbolic links, as for a link that points to itself',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is used up',
  EFBIG: 'the file is too large for the file system',
  EIO: 'an input/output error of the device',
  EMFILE: 'too many open files in this process',
  ENFILE: 'too many open files in the system',
  EINVAL: 'the file system refuses the name or the operation',
  ENOTSUP: 'the file system does not support the operation',
  EOPNOTSUPP: 'the file system does not support the operation',
  EBUSY: 'the file or directory is busy',
};

let systemMessages: Map<string, string> | undefined;

function systemMessage(code: string): string | undefined {
  systemMessages ??= new Map([...getSystemErrorMap().values()].map(([name, message]) => [name, message]));
  return systemMessages.get(code);
}

/** `too many levels of symbolic links, … (ELOOP)`: the cause in words, then its code. */
export function fsCauseText(error: NodeJS.ErrnoException): string {
  const code = error.code ?? 'EUNKNOWN';
  const words = FS_CAUSES[code] ?? systemMessage(code) ?? 'an error of the file system';
  return `${words} (${code})`;
}

/** Paths longer than this are shown shortened. */
const PATH_SHOWN = 120;

/**
 * The path as an error line shows it: whole when it is short, else its start and end around an
 * ellipsis, so the line stays readable (a name of 300 characters, the usual cause of ENAMETOOLONG,
 * would otherwise fill the terminal, twice when Node's message repeats it).
 */
export function shortPath(path: string): string {
  const chars = [...path];
  if (chars.length <= PATH_SHOWN) return path;
  return `${chars.slice(0, 60).join('')}…${chars.slice(-40).join('')}`;
}

/** The longest name (path component) of `path` in bytes, which ENAMETOOLONG is usually about. */
export function longestNameBytes(path: string): number {
  return Math.max(0, ...path.split(/[\\/]/).map((name) => Buffer.byteLength(name)));
}
