import { CfnOutput, Duration, type RemovalPolicy, Stack, TimeZone } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput, type IScheduleTarget } from 'aws-cdk-lib/aws-scheduler';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ALARMED_METRICS } from '../../contract/metrics';
import { TOKEN_TABLE } from '../../contract/tables';
import type { StageConfig } from '../config/stage';
import { AcctopsFunction, type AcctopsFunctionDefaults } from './acctops-function';
import { acctopsAlarm, acctopsMetric } from './alarms';
import { stageKey } from './stage-key';
import { attribute, projection } from './table-keys';

export interface TokenLifecycleTuning {
  /**
   * Refresh this long before an access token's expiry (or the 24 h keep-alive).
   * @default 15
   */
  readonly refreshMarginMinutes?: number;
  /**
   * Lifetime assumed when a response states none (no JWT `exp`, no expiry field; spec: "usually 30 minutes").
   * @default - the stage's `accessTokenLifetimeSeconds`
   */
  readonly accessTokenLifetimeSeconds?: number;
  /**
   * Users per worker invocation (SQS batch size).
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * Users refreshed at once inside one worker invocation.
   * @default 10
   */
  readonly refreshConcurrency?: number;
  /**
   * Worker invocations at once (the SQS event source's maximum concurrency, 2 to 1000). With
   * `refreshConcurrency`, the cap on requests in flight to the service: 5 × 10 = 50.
   * @default 5
   */
  readonly workerMaxConcurrency?: number;
  /**
   * Deliveries of a refresh request before it moves to the dead-letter queue.
   * @default 3
   */
  readonly maxReceiveCount?: number;
  /**
   * Deferred refreshes (rate limited, service unreachable, institution credential refused) per
   * 5 minutes that, sustained for 15 minutes, raise the refresh-failures alarm.
   * @default 10
   */
  readonly deferredAlarmThreshold?: number;
}

export interface TokenLifecycleProps {
  readonly stage: StageConfig;
  readonly functionDefaults: AcctopsFunctionDefaults;
  readonly institutionSecret: ISecret;
  readonly alarmTopic: ITopic;
  /** Of the table, its key and the queues' key (the stack's dataRemovalPolicy). */
  readonly removalPolicy: RemovalPolicy;
  readonly tuning?: TokenLifecycleTuning;
}

/**
 * The runbook functions' timeout (onboard, revoke, recover): up to three service calls (revoke of
 * a token the service does not know: expire, retrieve, expire), each at most 20 s of attempts plus
 * a 10 s final one. Less than the lease (3 min), so a timed-out run never outlives its lease.
 */
const RUNBOOK_TIMEOUT = Duration.minutes(2);

/** The worker's timeout. The lease (TOKEN_LEASE_SECONDS) must outlast it; the queue's visibility is six times it. */
const WORKER_TIMEOUT = Duration.minutes(2);
const LEASE = Duration.minutes(3);

/**
 * The user-token lifecycle: the token table, EventBridge Scheduler -> planner -> SQS -> worker,
 * the onboard, revoke and recover functions, the TokenRefreshFailed event bus and the alarms.
 * See docs/tokens.md, "Sizing for 100,000 users", for the sizing arithmetic behind the defaults.
 *
 * Least privilege: only these functions touch the table, each with the narrowest access level
 * (the planner queries the keys-only due index and cannot read an item, so never a token); the
 * worker, onboard, revoke and recover functions read the institution secret; nothing here can
 * read an export bucket.
 */
export class TokenLifecycle extends Construct {
  /** Encrypts the table and both queues: its own key, or the stage's supplied one (`kmsKeyArn`). */
  readonly key: IKey;
  readonly table: Table;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly eventBus: EventBus;
  readonly planner: AcctopsFunction;
  readonly worker: AcctopsFunction;
  readonly onboardUser: AcctopsFunction;
  readonly revokeUser: AcctopsFunction;
  readonly recoverUser: AcctopsFunction;
  readonly schedule: Schedule;
  readonly alarms: {
    deadLetters: Alarm;
    needsAttention: Alarm;
    refreshFailures: Alarm;
    overdue: Alarm;
    plannerErrors: Alarm;
  };

  constructor(scope: Construct, id: string, props: TokenLifecycleProps) {
    super(scope, id);
    const { stage, functionDefaults, institutionSecret } = props;
    const tuning = {
      refreshMarginMinutes: 15,
      accessTokenLifetimeSeconds: stage.accessTokenLifetimeSeconds,
      batchSize: 10,
      refreshConcurrency: 10,
      workerMaxConcurrency: 5,
      maxReceiveCount: 3,
      deferredAlarmThreshold: 10,
      ...props.tuning,
    };

    this.key = stageKey(this, 'Key', stage, {
      description: `acctops ${stage.name}: encrypts the user-token table and the token refresh queues`,
      alias: `alias/acctops/${stage.name}/tokens`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });

    this.table = new Table(this, 'Table', {
      partitionKey: attribute(TOKEN_TABLE.partitionKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: stage.retainData,
      removalPolicy: props.removalPolicy,
    });
    this.table.addGlobalSecondaryIndex({
      indexName: TOKEN_TABLE.dueIndex.name,
      partitionKey: attribute(TOKEN_TABLE.dueIndex.partitionKey),
      sortKey: attribute(TOKEN_TABLE.dueIndex.sortKey),
      projectionType: projection(TOKEN_TABLE.dueIndex.projection),
    });

    this.deadLetterQueue = new Queue(this, 'RefreshDeadLetters', {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'RefreshQueue', {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      // AWS's advice for Lambda event sources: six times the function's timeout.
      visibilityTimeout: Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6),
      // The planner enqueues every due user again every run: an hour-old request is only a duplicate.
      retentionPeriod: Duration.hours(1),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: tuning.maxReceiveCount },
    });

    this.eventBus = new EventBus(this, 'Events', {
      eventBusName: `acctops-${stage.name}-tokens`,
      description: 'acctops token events: TokenRefreshFailed (source acctops.tokens)',
    });

    const api = {
      ACCTOPS_BASE_URL: stage.baseUrl,
      SECRET_CACHE_TTL_SECONDS: String(stage.secretCacheTtlSeconds),
      ACCESS_TOKEN_LIFETIME_SECONDS: String(tuning.accessTokenLifetimeSeconds),
      TOKEN_LEASE_SECONDS: String(LEASE.toSeconds()),
    };
    const { ACCESS_TOKEN_LIFETIME_SECONDS: _lifetime, ...revokeApi } = api;
    const margin = { TOKEN_REFRESH_MARGIN_SECONDS: String(tuning.refreshMarginMinutes * 60) };

    this.planner = new AcctopsFunction(this, 'Planner', {
      ...functionDefaults,
      handlerDir: 'plan-token-refresh',
      description: 'Enqueues the users whose access token is due for a refresh (EventBridge Scheduler)',
      timeout: Duration.minutes(2),
      memorySize: 512,
      environment: margin,
    })
      .bindTable(this.table, 'TOKEN_TABLE_NAME', 'queryIndexes', { indexes: [TOKEN_TABLE.dueIndex.name] })
      .bindQueue(this.queue, 'REFRESH_QUEUE_URL', 'send');

    this.worker = new AcctopsFunction(this, 'Worker', {
      ...functionDefaults,
      handlerDir: 'refresh-tokens',
      description: 'Refreshes the access tokens of one batch of users, single flight per user',
      timeout: WORKER_TIMEOUT,
      memorySize: 512,
      environment: { ...api, ...margin, REFRESH_CONCURRENCY: String(tuning.refreshConcurrency) },
    })
      .bindSecret(institutionSecret, 'INSTITUTION_SECRET_ARN', 'read')
      .bindTable(this.table, 'TOKEN_TABLE_NAME', 'getUpdate')
      .bindEventBus(this.eventBus, 'TOKEN_EVENT_BUS_NAME')
      .consumeQueue(this.queue, { batchSize: tuning.batchSize, maxConcurrency: tuning.workerMaxConcurrency });

    this.onboardUser = new AcctopsFunction(this, 'OnboardUser', {
      ...functionDefaults,
      handlerDir: 'onboard-user',
      timeout: RUNBOOK_TIMEOUT,
      description: 'Registers a user with the service and stores its tokens (acctops users onboard)',
      environment: api,
    })
      .bindSecret(institutionSecret, 'INSTITUTION_SECRET_ARN', 'read')
      .bindTable(this.table, 'TOKEN_TABLE_NAME', 'getPutUpdate');

    this.revokeUser = new AcctopsFunction(this, 'RevokeUser', {
      ...functionDefaults,
      handlerDir: 'revoke-user',
      timeout: RUNBOOK_TIMEOUT,
      description: "Expires a user's tokens at the service and stops refreshing them (acctops users revoke)",
      // Revoking stores no new pair, so it has no expiry to assume.
      environment: revokeApi,
    })
      .bindSecret(institutionSecret, 'INSTITUTION_SECRET_ARN', 'read')
      .bindTable(this.table, 'TOKEN_TABLE_NAME', 'getUpdate');

    this.recoverUser = new AcctopsFunction(this, 'RecoverUser', {
      ...functionDefaults,
      handlerDir: 'recover-user',
      timeout: RUNBOOK_TIMEOUT,
      description: 'Retrieves a new token pair for a user in needs_attention and reschedules it (acctops users recover)',
      environment: api,
    })
      .bindSecret(institutionSecret, 'INSTITUTION_SECRET_ARN', 'read')
      .bindTable(this.table, 'TOKEN_TABLE_NAME', 'getUpdate');

    this.schedule = new Schedule(this, 'RefreshSchedule', {
      description: `acctops ${stage.name}: plans the token refresh`,
      // A time zone means something to cron(...) only.
      schedule: ScheduleExpression.expression(
        stage.schedules.tokenRefresh,
        stage.schedules.tokenRefresh.startsWith('cron(') ? TimeZone.of(stage.schedules.timeZone) : undefined,
      ),
      target: this.plannerTarget(),
    });

    const alarmAction = new SnsAction(props.alarmTopic);
    this.alarms = {
      deadLetters: acctopsAlarm(this, 'DeadLettersAlarm', {
        action: alarmAction,
        description: `Token refresh requests reached the dead-letter queue: malformed, or failing on every delivery. The planner enqueues still-due users again; ${this.worker.logGroupName} names the cause (docs/monitoring.md, "Alarms").`,
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
        threshold: 1,
        evaluationPeriods: 1,
      }),
      needsAttention: acctopsAlarm(this, 'NeedsAttentionAlarm', {
        action: alarmAction,
        description: 'A user could be neither refreshed nor recovered and is in needs_attention. Runbook: "Recover a user".',
        metric: acctopsMetric(stage.name, ALARMED_METRICS.tokenNeedsAttention, { statistic: 'Sum', period: Duration.minutes(5) }),
        threshold: 1,
        evaluationPeriods: 1,
      }),
      refreshFailures: acctopsAlarm(this, 'RefreshFailuresAlarm', {
        action: alarmAction,
        description:
          'Token refreshes keep being deferred (rate limited, service unreachable, institution credential refused) for 15 minutes. `acctops doctor` shows which; a refused credential: runbook "Change the institution secret".',
        metric: acctopsMetric(stage.name, ALARMED_METRICS.tokenRefreshDeferred, { statistic: 'Sum', period: Duration.minutes(5) }),
        threshold: tuning.deferredAlarmThreshold,
        evaluationPeriods: 3,
      }),
      overdue: acctopsAlarm(this, 'OverdueAlarm', {
        action: alarmAction,
        description: `The planner found tokens past their deadline in two runs in a row: access tokens are expiring unrefreshed. The workers are behind or failing (the refresh-failures alarm, ${this.worker.logGroupName}); once fixed, \`acctops tokens refresh --all\`.`,
        metric: acctopsMetric(stage.name, ALARMED_METRICS.tokensOverdue, { statistic: 'Sum', period: Duration.minutes(5) }),
        threshold: 1,
        evaluationPeriods: 2,
      }),
      plannerErrors: acctopsAlarm(this, 'PlannerErrorsAlarm', {
        action: alarmAction,
        description: `The token refresh planner failed in two of the last three 5-minute periods: nothing is being enqueued. ${this.planner.logGroupName} names the error; \`acctops tokens refresh --all\` invokes the planner to check the fix.`,
        metric: this.planner.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      }),
    };

    new CfnOutput(Stack.of(this), 'TokenEventBusName', {
      value: this.eventBus.eventBusName,
      description: 'Event bus receiving TokenRefreshFailed (source acctops.tokens)',
    });
    new CfnOutput(Stack.of(this), 'OnboardUserFunctionName', {
      value: this.onboardUser.functionName,
      description: 'Function invoked by `acctops users onboard` with { externalId, username, email }',
    });
    new CfnOutput(Stack.of(this), 'RevokeUserFunctionName', {
      value: this.revokeUser.functionName,
      description: 'Function invoked by `acctops users revoke` with { externalId }',
    });
    new CfnOutput(Stack.of(this), 'RecoverUserFunctionName', {
      value: this.recoverUser.functionName,
      description: 'Function invoked by `acctops users recover` with { externalId, reactivate? }',
    });
    new CfnOutput(Stack.of(this), 'PlanTokenRefreshFunctionName', {
      value: this.planner.functionName,
      description: 'Function invoked by the schedule, or by `acctops tokens refresh --all`, to enqueue the due users',
    });
    new CfnOutput(Stack.of(this), 'RefreshTokensFunctionName', {
      value: this.worker.functionName,
      description: 'Refresh worker; `acctops tokens refresh --user` invokes it with one SQS-shaped record',
    });
    new CfnOutput(Stack.of(this), 'TokenTableName', {
      value: this.table.tableName,
      description: 'Token table; `acctops users list` and `acctops doctor` read its records without the tokens',
    });
  }

  /**
   * The planner as the schedule's target, with a role of its own that may invoke exactly that
   * function (the stock LambdaInvoke target also grants every version and alias, `<arn>:*`).
   * No retries: the next run is minutes away and plans everything still due.
   */
  private plannerTarget(): IScheduleTarget {
    const role = new Role(this, 'SchedulerRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'Lets EventBridge Scheduler invoke the token refresh planner, and nothing else',
    });
    role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.planner.functionArn] }));
    const planner = this.planner;
    return {
      bind: () => ({
        arn: planner.functionArn,
        role,
        input: ScheduleTargetInput.fromObject({
          source: 'acctops.scheduler',
          schedule: 'token-refresh',
          scheduledAt: ContextAttribute.scheduledTime,
          executionId: ContextAttribute.executionId,
        }),
        retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeInSeconds: 300 },
      }),
    };
  }
}
