import { fsCauseText } from './fs-failure';
import type { PrintedError } from './output';

/**
 * What a failed write to the process's own stdout or stderr does (README, "Exit codes"; decision
 * 112). A stream's `error` event with no listener, or a listener that throws, ends the process at
 * once with a stack trace: under `> result.json` on a full disk a command died at its first line of
 * output, mid-command, its state unsaved and its lock left for the next command to take over.
 *
 * - stdout, EPIPE: the reader stopped early (`| head -c 1`, `| jq -e 'first'`). What it did not
 *   read is dropped, and the exit code is the command's own: a pipeline under `set -o pipefail`
 *   passes or fails on what the command did.
 * - stdout, anything else (ENOSPC, EIO, EFBIG, …): the output is lost but the command runs to its
 *   end, saves its state and releases its lock; then one error line on stderr and exit 1 when the
 *   command itself succeeded (its own code when it failed): a script must not read an empty or
 *   truncated file as the result.
 * - stderr, anything: nowhere is left to say it, and stdout (the result) may still be whole.
 */
export interface OutputFaults {
  /** The first failure of a write to stdout other than EPIPE, if any. */
  stdout(): NodeJS.ErrnoException | undefined;
}

/** Listens for the failures of both streams, so that none of them ends the process (see above). */
export function watchOutputStreams(stdout: NodeJS.EventEmitter, stderr: NodeJS.EventEmitter): OutputFaults {
  let fault: NodeJS.ErrnoException | undefined;
  stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') fault ??= error;
  });
  stderr.on('error', () => undefined);
  return { stdout: () => fault };
}

/** The one error line of a stdout that could not be written. */
export function stdoutNotWritten(error: NodeJS.ErrnoException): PrintedError {
  return {
    exitCode: 1,
    code: 'stdout_not_written',
    message: `the command's output could not be written to stdout: ${fsCauseText(error)}; the command ran to its end without it`,
    hint: 'send the output where it can be written; what the command changed stays changed, so see it with a command that only reads, such as `acctops users list` or `acctops keys status`, before running it again',
  };
}

/** The exit code once stdout failed: 1 for a command that succeeded, else the command's own. */
export function exitCodeAfterStdoutFault(code: number): number {
  return code === 0 ? 1 : code;
}

/**
 * Once the process has nothing left to do (every write attempted, whatever the stream's kind),
 * says a stdout failure in one line and sets the exit code. `beforeExit` is not emitted on
 * `process.exit()`, which only a signal's clean-up calls: its exit code (130, 143) stands.
 */
export function reportStdoutFaultOnExit(faults: OutputFaults, writeLine: (report: PrintedError) => void): void {
  process.once('beforeExit', () => {
    const fault = faults.stdout();
    if (fault === undefined) return;
    writeLine(stdoutNotWritten(fault));
    process.exitCode = exitCodeAfterStdoutFault(typeof process.exitCode === 'number' ? process.exitCode : 0);
  });
}
