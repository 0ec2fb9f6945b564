import {
  ActionAfterCompletion,
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  FlexibleTimeWindowMode,
  GetScheduleCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  type SchedulerClientConfig,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { type Revocation, type RevocationScheduler, RevocationSchedulerError, revocationSchema } from '../../core/api-keys';
import { requiredEnv } from '../../core/shared/env';
import { parseWith } from '../../core/shared/errors';

export interface EventBridgeRevocationSchedulerOptions {
  /** The schedule group every revocation goes into; the rotation function may touch only it. */
  groupName: string;
  /** The revoke-api-key function; needed to schedule, not to list. */
  targetArn?: string;
  /** The role EventBridge Scheduler assumes to invoke it; needed to schedule, not to list. */
  roleArn?: string;
  /**
   * The SQS queue a schedule sends its revocation to when it cannot invoke the function after its
   * retries (the stack's FailedInvocations queue, which alarms): a lost revocation stays visible.
   */
  deadLetterArn?: string;
  /**
   * Schedule names are `<prefix><apiKeyId>`.
   * @default 'revoke-'
   */
  namePrefix?: string;
  /** A client, or a client config (`{ endpoint }` for a local fake). */
  client?: SchedulerClient | SchedulerClientConfig;
}

/**
 * The RevocationScheduler over EventBridge Scheduler: one one-time schedule per key
 * (`at(...)`, UTC, no flexible window) whose target is the revoke-api-key function and whose
 * input is the revocation itself (ids and prefix, never a key). It deletes itself after it fired
 * (ActionAfterCompletion DELETE), so the group holds exactly the pending revocations.
 */
export class EventBridgeRevocationScheduler implements RevocationScheduler {
  private readonly client: SchedulerClient;
  private readonly namePrefix: string;

  constructor(private readonly options: EventBridgeRevocationSchedulerOptions) {
    const client = options.client ?? {};
    this.client = client instanceof SchedulerClient ? client : new SchedulerClient(client);
    this.namePrefix = options.namePrefix ?? 'revoke-';
  }

  /** Where the key's revocation waits: for an operator to be told which schedule to look at or delete. */
  scheduleOf(apiKeyId: string): { name: string; group: string } {
    return { name: `${this.namePrefix}${apiKeyId}`, group: this.options.groupName };
  }

  /** Creates the key's schedule; if it exists, moves it later when asked for a later time, never earlier. */
  async schedule(revocation: Revocation): Promise<void> {
    const entry = parseWith(revocationSchema, revocation, 'revocation');
    const input = this.scheduleInput(entry);
    try {
      await this.client.send(new CreateScheduleCommand(input));
      return;
    } catch (error) {
      if (!(error instanceof ConflictException)) throw schedulerError('CreateSchedule', input.Name!, error);
    }
    const existing = await this.read(input.Name!);
    if (existing && existing.revokeAt >= entry.revokeAt) return;
    try {
      await this.client.send(new UpdateScheduleCommand(input));
    } catch (error) {
      throw schedulerError('UpdateSchedule', input.Name!, error);
    }
  }

  /**
   * Deletes the key's schedule, so that it never fires: for a key revoked already whose schedule
   * would fail (its company's key secret about to be scheduled for deletion, decision 107). A
   * schedule that is gone (it fired meanwhile, or a repeat) counts as deleted.
   *
   * It is read first, and only one that exists is deleted: IAM refuses DeleteSchedule to a caller
   * without the action before the service looks for the schedule, so an operator without it met an
   * AccessDenied for a schedule that was never made or was gone already (decision 113). GetSchedule
   * is what listing the pending revocations needs anyway; if it cannot be read, the delete is tried.
   */
  async cancel(apiKeyId: string): Promise<void> {
    const name = `${this.namePrefix}${apiKeyId}`;
    try {
      await this.client.send(new GetScheduleCommand({ Name: name, GroupName: this.options.groupName }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return;
    }
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.options.groupName }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return;
      throw schedulerError('DeleteSchedule', name, error);
    }
  }

  async *pending(): AsyncIterable<Revocation> {
    let NextToken: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListSchedulesCommand({ GroupName: this.options.groupName, NamePrefix: this.namePrefix, NextToken, MaxResults: 100 }),
        );
      } catch (error) {
        throw schedulerError('ListSchedules', this.options.groupName, error);
      }
      for (const summary of page.Schedules ?? []) {
        const revocation = summary.Name ? await this.read(summary.Name) : undefined;
        if (revocation) yield revocation;
      }
      NextToken = page.NextToken;
    } while (NextToken);
  }

  /** The revocation a schedule carries; undefined when it is gone (it fired meanwhile). */
  private async read(name: string): Promise<Revocation | undefined> {
    let schedule;
    try {
      schedule = await this.client.send(new GetScheduleCommand({ Name: name, GroupName: this.options.groupName }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return undefined;
      throw schedulerError('GetSchedule', name, error);
    }
    let json: unknown;
    try {
      json = JSON.parse(schedule.Target?.Input ?? '');
    } catch {
      json = undefined;
    }
    return parseWith(revocationSchema, json, `input of schedule ${name}`);
  }

  private scheduleInput(revocation: Revocation): CreateScheduleCommandInput {
    const { targetArn, roleArn } = this.options;
    if (targetArn === undefined || roleArn === undefined) {
      throw new RevocationSchedulerError('this scheduler was made without a target function and role; it can only list', {
        code: 'revocation_target_missing',
      });
    }
    return {
      Name: `${this.namePrefix}${revocation.apiKeyId}`,
      GroupName: this.options.groupName,
      ScheduleExpression: atExpression(revocation.revokeAt),
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: FlexibleTimeWindowMode.OFF },
      ActionAfterCompletion: ActionAfterCompletion.DELETE,
      Description: `Revoke API key ${revocation.keyPrefix} of company ${revocation.companyId} (rotation ${revocation.rotationToken})`,
      Target: {
        Arn: targetArn,
        RoleArn: roleArn,
        Input: JSON.stringify(revocation),
        // Delivery retries; the function's own failures are retried by Lambda's asynchronous invocation.
        RetryPolicy: { MaximumEventAgeInSeconds: 24 * 3600, MaximumRetryAttempts: 20 },
        ...(this.options.deadLetterArn === undefined ? {} : { DeadLetterConfig: { Arn: this.options.deadLetterArn } }),
      },
    };
  }
}

/** `at(yyyy-mm-ddThh:mm:ss)` in UTC, rounded up to the second: never before `epochMs`. */
export function atExpression(epochMs: number): string {
  return `at(${new Date(Math.ceil(epochMs / 1000) * 1000).toISOString().slice(0, 19)})`;
}

function schedulerError(operation: string, name: string, error: unknown): RevocationSchedulerError {
  const kind = error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error';
  return new RevocationSchedulerError(`EventBridge Scheduler ${operation} failed for ${name}: ${kind}`, { cause: error });
}

/**
 * A key function's scheduler, from its root's config: the group is required
 * (REVOCATION_SCHEDULE_GROUP); the target is needed to schedule, not to list.
 */
export function revocationSchedulerFrom(config: {
  scheduleGroup?: string;
  revokeTarget?: { functionArn: string; roleArn: string; deadLetterArn?: string };
}): EventBridgeRevocationScheduler {
  return new EventBridgeRevocationScheduler({
    client: new SchedulerClient({}),
    groupName: requiredEnv(config.scheduleGroup, 'REVOCATION_SCHEDULE_GROUP'),
    targetArn: config.revokeTarget?.functionArn,
    roleArn: config.revokeTarget?.roleArn,
    deadLetterArn: config.revokeTarget?.deadLetterArn,
  });
}
