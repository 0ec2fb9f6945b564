import type { Command } from 'commander';
import type { AwsOperations } from '../aws/aws-operations';
import type * as AwsModule from '../aws/aws-operations';
import { lazy } from '../lazy';
import { Session, type CliRuntime } from '../session';

/** What every command's action gets: a Session, and the AWS side when a stack is named. */
export interface CommandHost {
  readonly runtime: CliRuntime;
  /** Wraps an action: makes the Session, runs it, records its exit code. */
  run<O>(action: (session: Session, options: O, command: Command) => Promise<void>): (options: O, command: Command) => Promise<void>;
  /** The AWS operations of the named stack. */
  aws(session: Session): Promise<AwsOperations>;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports -- only AWS mode needs the SDK clients (cli/lazy.ts)
const awsModule = lazy(() => require('../aws/aws-operations') as typeof AwsModule);

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

  aws(session: Session): Promise<AwsOperations> {
    return awsModule().openAwsOperations(session);
  }
}
