import type { Command } from 'commander';
import { workStarted } from '../interrupt';
import { Session, type CliRuntime } from '../session';

/** What every command's action gets: a Session, whose `operations()` act in the mode it names. */
export interface CommandHost {
  readonly runtime: CliRuntime;
  /**
   * Wraps an action: makes the Session, runs it, records its exit code. From the action's start a
   * signal gets Node's default or the command's own steps, unless `beforeWorkUntilSteps`: then the
   * binary's "before anything was written" line (cli/interrupt.ts) stays until the command
   * registers a step of its own or its operations reach AWS (Session.operations).
   */
  run<O>(
    action: (session: Session, options: O, command: Command) => Promise<void>,
    options?: { beforeWorkUntilSteps?: boolean },
  ): (options: O, command: Command) => Promise<void>;
}

export class Host implements CommandHost {
  /** The session of the action that ran (one per invocation). */
  session: Session | undefined;

  constructor(readonly runtime: CliRuntime) {}

  run<O>(action: (session: Session, options: O, command: Command) => Promise<void>, runOptions: { beforeWorkUntilSteps?: boolean } = {}) {
    return async (options: O, command: Command): Promise<void> => {
      if (runOptions.beforeWorkUntilSteps !== true) workStarted();
      this.session = new Session(this.runtime, command);
      await action(this.session, options, command);
    };
  }
}
