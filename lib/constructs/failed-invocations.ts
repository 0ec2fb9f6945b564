import { Duration, Stack, Validations } from 'aws-cdk-lib';
import type { Alarm, IAlarmAction } from 'aws-cdk-lib/aws-cloudwatch';
import { type CfnRule, Rule } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, Role } from 'aws-cdk-lib/aws-iam';
import type { IDestination } from 'aws-cdk-lib/aws-lambda';
import { type CfnSchedule, Schedule } from 'aws-cdk-lib/aws-scheduler';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct, type IConstruct } from 'constructs';
import { AcctopsFunction } from './acctops-function';
import { acctopsAlarm } from './alarms';

export interface FailedInvocationsProps {
  readonly alarmAction: IAlarmAction;
}

/**
 * Nothing asynchronous fails silently (docs/reliability.md, "Failed invocations"): one queue takes
 * what EventBridge Scheduler could not deliver (every schedule's dead-letter queue, the run-time
 * revocation schedules included) and every asynchronous invocation that failed all of Lambda's
 * attempts (the on-failure destination of each function a schedule or an event rule invokes, and of
 * revoke-api-key). The queue keeps each message 14 days, and its alarm stays in ALARM while one is
 * there: a revocation that failed stays visible until someone handles it (runbook "A failed invocation").
 */
export class FailedInvocations extends Construct {
  readonly queue: Queue;
  readonly alarm: Alarm;
  private readonly covered = new Set<AcctopsFunction>();

  constructor(scope: Construct, id: string, props: FailedInvocationsProps) {
    super(scope, id);
    this.queue = new Queue(this, 'Queue', {
      // The messages hold the schedules' inputs and the functions' redacted errors: ids, never a
      // credential; SQS-managed encryption lets Scheduler and Lambda write without a key grant.
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is itself the dead-letter queue of every schedule and the on-failure destination of every function invoked asynchronously (each schedule's target, each event rule's target, revoke-api-key).",
    });
    // Monitoring adds the OK action to every alarm of the stack.
    this.alarm = acctopsAlarm(this, 'Alarm', {
      action: props.alarmAction,
      description:
        "A schedule could not invoke its function, or an asynchronously invoked function (a schedule's target, request-export, a key revocation) failed every attempt. " +
        'The message in the FailedInvocations queue names the function and the input. Runbook: "A failed invocation".',
      metric: this.queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
    });
  }

  /**
   * Gives every schedule under `scope` this queue as its dead-letter queue (its role may send to
   * it) and every function they invoke an on-failure destination. Found by walking the tree, so
   * that a schedule added later is covered without being listed here.
   */
  coverSchedules(scope: IConstruct): void {
    const stack = Stack.of(this);
    const roles = scope.node.findAll().filter((c): c is Role => c instanceof Role);
    const functions = scope.node.findAll().filter((c): c is AcctopsFunction => c instanceof AcctopsFunction);
    for (const schedule of scope.node.findAll().filter((c): c is Schedule => c instanceof Schedule)) {
      const cfn = schedule.node.defaultChild as CfnSchedule;
      const target = stack.resolve(cfn.target) as CfnSchedule.TargetProperty;
      const role = roles.find((r) => JSON.stringify(stack.resolve(r.roleArn)) === JSON.stringify(target.roleArn));
      if (!role) throw new Error(`schedule ${schedule.node.path}: its role is not in this stack`);
      this.allowSend(role);
      cfn.target = { ...(cfn.target as CfnSchedule.TargetProperty), deadLetterConfig: { arn: this.queue.queueArn } };
      const fn = functions.find((f) => JSON.stringify(stack.resolve(f.functionArn)) === JSON.stringify(target.arn));
      if (!fn) throw new Error(`schedule ${schedule.node.path}: its target is not a function of this stack`);
      this.coverAsyncInvocations(fn);
    }
  }

  /**
   * Gives every function that an EventBridge rule under `scope` invokes an on-failure destination.
   * A rule's own dead-letter queue takes only what EventBridge could not deliver; an invocation the
   * function failed (a malformed event, a refused send) would be dropped after Lambda's retries.
   */
  coverEventRules(scope: IConstruct): void {
    const stack = Stack.of(this);
    const functions = scope.node.findAll().filter((c): c is AcctopsFunction => c instanceof AcctopsFunction);
    for (const rule of scope.node.findAll().filter((c): c is Rule => c instanceof Rule)) {
      const targets = (stack.resolve((rule.node.defaultChild as CfnRule).targets) ?? []) as CfnRule.TargetProperty[];
      for (const target of targets) {
        const fn = functions.find((f) => JSON.stringify(stack.resolve(f.functionArn)) === JSON.stringify(target.arn));
        // A target that is not a function (a queue, a bus) has no invocation of Lambda's to fail.
        if (fn) this.coverAsyncInvocations(fn);
      }
    }
  }

  /** The role a schedule made at run time assumes (the revocation schedules): it may dead-letter here. */
  allowSend(role: Role): void {
    role.addToPolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }));
  }

  /** Lambda's two retries of an asynchronous invocation, then the event to this queue. */
  coverAsyncInvocations(fn: AcctopsFunction): void {
    if (this.covered.has(fn)) return;
    this.covered.add(fn);
    // Not SqsDestination: it also grants GetQueueAttributes and GetQueueUrl, which Lambda does not need.
    const queueArn = this.queue.queueArn;
    const onFailure: IDestination = {
      bind: (_scope, target) => {
        target.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queueArn] }));
        return { destination: queueArn };
      },
    };
    fn.configureAsyncInvoke({ onFailure, retryAttempts: 2 });
  }
}
