import type { Command } from 'commander';
import { Session, type CliRuntime } from '../session';

/** What every command's action gets: a Session, whose `operations()` act in the mode it names. */
export interface CommandHost {
  readonly runtime: CliRuntime;
  /** Wraps an action: makes the Session, runs it, records its exit code. */
  run<O>(action: (session: Session, options: O, command: Command) => Promise<void>): (options: O, command: Command) => Promise<void>;
}

export class Host implements CommandHost {
  /** The session of the action that ran (one per invocation). */
  session: Session | undefined;

  constructor(readonly runtime: CliRuntime) {}

  run<O>(action: (session: Session, options: O, command: Command) => Promise<void>) {
    return async (options: O, command: Command): Promise<void> => {
      this.session = new Session(this.runtime, command);
      await action(this.session, options, command);
    };
  }
}
