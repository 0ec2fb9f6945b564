import type { Command } from 'commander';
import { STACK_NAME, stackName } from './args';
import { CliConfigError, UsageError } from './errors';
import { ExitCode, type ExitCodeValue } from './exit-codes';
import { workStarted } from './interrupt';
import { DEFAULT_STATE_DIR, resolveStateDir } from './local/state-dir';
import type { Mode, Operations, OperationsContext } from './operations/operations';
import { Output, type CliIo } from './output';
import type { Clock } from '../src/core/shared/clock';

/** What the process gives the CLI: its streams, environment and working directory (tests pass their own). */
export interface CliRuntime {
  io: CliIo;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** What direct-mode exports wait on between retries; the system clock unless a test gives one. */
  clock?: Clock;
  /**
   * Each direct-mode request's timeout; the client's (30 s) unless a test gives one, so that a
   * service that never answers is met in milliseconds instead of two minutes.
   */
  requestTimeoutMs?: number;
  /**
   * How the operator runs `acctops sandbox` when it is by another name (`npm run sandbox --`), for
   * the commands its output and errors name (`… --show-credentials`, `… --help`).
   */
  sandboxCommand?: string;
}

/** What named the stack, as messages name it. */
export type StackSource = '--stack' | 'ACCTOPS_STACK (environment)';

export interface GlobalFlags {
  json?: boolean;
  verbose?: boolean;
  stateDir?: string;
  stack?: string;
  region?: string;
  /** `Key=Value` pairs naming stack outputs instead of discovering them. */
  output?: string[];
}

/**
 * One invocation: the global flags, the output, and the Operations a command acts through. Local
 * mode unless a stack is named (`--stack` or ACCTOPS_STACK). Also the OperationsContext the
 * implementations get.
 */
export class Session implements OperationsContext {
  readonly out: Output;
  readonly flags: GlobalFlags;
  exitCode: ExitCodeValue = ExitCode.ok;
  private ops?: Promise<Operations>;

  constructor(
    readonly runtime: CliRuntime,
    command: Command,
  ) {
    this.flags = command.optsWithGlobals<GlobalFlags>();
    this.out = new Output(runtime.io, { json: this.flags.json === true, verbose: this.flags.verbose === true });
  }

  get env(): NodeJS.ProcessEnv {
    return this.runtime.env;
  }

  get stack(): string | undefined {
    return this.stackNamed?.name;
  }

  /**
   * The stack and what named it, for messages that must say where the mode came from. `--stack`
   * wins; its parser refuses an empty one (exit 2). An empty or blank ACCTOPS_STACK is refused too
   * (exit 3), as ACCTOPS_STATE_DIR is, rather than read as unset: unset is the local mode, where a
   * wrapper's `ACCTOPS_STACK="$STACK" acctops keys rotate …` with STACK unset would rotate the
   * sandbox's key and report a production rotation done. A malformed one is refused as well.
   */
  get stackNamed(): { name: string; by: StackSource } | undefined {
    // Parsed already; again here for a Session whose flags did not come through the parser.
    if (this.flags.stack !== undefined) return { name: stackName(this.flags.stack), by: '--stack' };
    const fromEnv = this.env.ACCTOPS_STACK;
    if (fromEnv === undefined) return undefined;
    if (fromEnv.trim() === '') {
      throw new CliConfigError(
        'ACCTOPS_STACK is empty',
        'nothing was run: set it to the stack, e.g. acctops-production, or unset it for the local mode; an empty one is not read as unset',
      );
    }
    // Refused as configuration (exit 3), as --stack is as usage: sent to CloudFormation, a malformed
    // name failed only as unreachable or as refused credentials (exit 4).
    if (!STACK_NAME.pattern.test(fromEnv.trim())) {
      throw new CliConfigError(
        `ACCTOPS_STACK is malformed: ${STACK_NAME.expected}`,
        'nothing was run: set it to the stack, e.g. acctops-production, or unset it for the local mode',
      );
    }
    return { name: fromEnv.trim(), by: 'ACCTOPS_STACK (environment)' };
  }

  /** Private: commands act through `operations()`, never on the mode. */
  private get mode(): Mode {
    return this.stack === undefined ? 'local' : 'aws';
  }

  /**
   * An empty `--state-dir` or ACCTOPS_STATE_DIR is refused rather than read as unset or as the
   * working directory: resolved, it would be the cwd, and the state files (credentials) would land
   * among the user's own files.
   */
  get stateDir(): string {
    const { stateDir } = this.flags;
    if (stateDir !== undefined) {
      if (stateDir.trim() === '') throw new UsageError('--state-dir is empty', 'name a directory, or leave out --state-dir for .acctops');
      return resolveStateDir(stateDir, this.runtime.cwd);
    }
    const fromEnv = this.env.ACCTOPS_STATE_DIR;
    if (fromEnv !== undefined) {
      if (fromEnv.trim() === '') throw new CliConfigError('ACCTOPS_STATE_DIR is empty', 'set it to a directory, or unset it for .acctops');
      return resolveStateDir(fromEnv, this.runtime.cwd);
    }
    return resolveStateDir(DEFAULT_STATE_DIR, this.runtime.cwd);
  }

  /**
   * The mode's operations, loaded on first use with `import()`: the embedded world (the SDK and the
   * sandbox) or the AWS clients, which `--help` and usage errors never load. The only place that
   * picks a mode.
   */
  operations(): Promise<Operations> {
    this.ops ??=
      this.mode === 'aws'
        ? import('./operations/aws-operations.ts').then(async (m) => {
            const operations = await m.openAwsOperations(this);
            // What comes next calls AWS: the "before anything was written" line would no longer be true.
            workStarted();
            return operations;
          })
        : import('./operations/local-operations.ts').then((m) => new m.LocalOperations(this));
    return this.ops;
  }

  /** Marks the run as partly failed (exit 5) unless something worse was recorded. */
  partial(): void {
    if (this.exitCode === ExitCode.ok) this.exitCode = ExitCode.partial;
  }
}
