import type { Command } from 'commander';
import { CliConfigError } from './errors';
import { ExitCode, type ExitCodeValue } from './exit-codes';
import { DEFAULT_STATE_DIR, resolveStateDir } from './local/state-dir';
import type { LocalWorld } from './local/local-world';
import type * as LocalWorldModule from './local/local-world';
import { lazy } from './lazy';
import { Output, type CliIo } from './output';

/** What the process gives the CLI: its streams, environment and working directory (tests pass their own). */
export interface CliRuntime {
  io: CliIo;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface GlobalFlags {
  json?: boolean;
  verbose?: boolean;
  stateDir?: string;
  stack?: string;
  region?: string;
  /** `Key=Value` pairs naming stack outputs instead of discovering them. */
  output?: string[];
}

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the embedded world loads the SDK and the sandbox; `--help` must not (cli/lazy.ts)
const localWorld = lazy(() => require('./local/local-world') as typeof LocalWorldModule);

export type Mode = 'local' | 'aws';

/**
 * One invocation: the global flags, the output, and the world a command acts on. Local mode unless
 * a stack is named (`--stack` or ACCTOPS_STACK).
 */
export class Session {
  readonly out: Output;
  readonly flags: GlobalFlags;
  exitCode: ExitCodeValue = ExitCode.ok;

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
    const stack = this.flags.stack ?? this.env.ACCTOPS_STACK;
    return stack === undefined || stack.trim() === '' ? undefined : stack.trim();
  }

  get mode(): Mode {
    return this.stack === undefined ? 'local' : 'aws';
  }

  get stateDir(): string {
    return resolveStateDir(this.flags.stateDir ?? this.env.ACCTOPS_STATE_DIR ?? DEFAULT_STATE_DIR, this.runtime.cwd);
  }

  /** Runs `work` in the local embedded world (created on first use), saved when it ends. */
  async local<T>(work: (world: LocalWorld) => Promise<T>, options: { tolerateDamage?: boolean } = {}): Promise<T> {
    if (this.mode !== 'local') throw new CliConfigError('this command needs the local mode, but a stack is named', 'drop --stack / ACCTOPS_STACK');
    return localWorld().withLocalWorld({ stateDir: this.stateDir, logger: this.out.logger(), env: this.env, ...options }, async (world) => {
      if (world.created) this.out.note(`acctops: created the local state in ${world.stateDir} (embedded sandbox with demo data)`);
      return work(world);
    });
  }

  /** Marks the run as partly failed (exit 5) unless something worse was recorded. */
  partial(): void {
    if (this.exitCode === ExitCode.ok) this.exitCode = ExitCode.partial;
  }
}
