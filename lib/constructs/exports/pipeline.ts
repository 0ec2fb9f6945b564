import { Duration, type RemovalPolicy, Stack, TimeZone, Validations } from 'aws-cdk-lib';
import type { Alarm, IAlarmAction } from 'aws-cdk-lib/aws-cloudwatch';
import { BillingMode, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput, type IScheduleTarget } from 'aws-cdk-lib/aws-scheduler';
import { DeduplicationScope, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { EXPORT_LAYOUT } from '../../../contract/exports';
import { ALARMED_METRICS } from '../../../contract/metrics';
import { RUN_LEDGER_TABLE } from '../../../contract/tables';
import type { StageConfig } from '../../config/stage';
import { AcctopsFunction, type AcctopsFunctionDefaults } from '../acctops-function';
import { acctopsAlarm, acctopsMetric } from '../alarms';
import { allowOnOwnKey } from '../stage-key';
import { attribute } from '../table-keys';

/** Every object the pipeline writes lives under this prefix; the functions' grants stop there. */
const EXPORT_PREFIX = `${EXPORT_LAYOUT.root}/`;
const WORKER_TIMEOUT = Duration.minutes(15);

export interface ExportPipelineProps {
  readonly stage: StageConfig;
  readonly functionDefaults: AcctopsFunctionDefaults & { readonly environment: Readonly<Record<string, string>> };
  /** The version the worker records in every manifest it writes (ACCTOPS_TOOL_VERSION, its function only). */
  readonly toolVersion: string;
  readonly key: IKey;
  readonly bucket: IBucket;
  /** Of the run ledger. */
  readonly removalPolicy: RemovalPolicy;
  readonly alarmAction: IAlarmAction;
  readonly tokenTable: ITable;
  readonly tokenDueIndexName: string;
  readonly companyRegistryTable: ITable;
  readonly companyKeys: { grantCompanyKeys(fn: AcctopsFunction): void };
  readonly workerMaxConcurrency: number;
  readonly maxReceiveCount: number;
  readonly dueAfterHours: number;
  readonly formats: readonly string[];
}

/** The exports bus's name; a rule on it has the ARN `arn:…:rule/<bus name>/<rule name>`. */
export function exportsEventBusName(stage: string): string {
  return `acctops-${stage}-exports`;
}

/**
 * The ExportRequested rule's name, fixed so that the exports key's policy can name the rule's ARN
 * (at most 45 characters: a stage name has at most 20, a rule name may have 64).
 */
export function exportRequestedRuleName(stage: string): string {
  return `acctops-${stage}-export-requested`;
}

/**
 * The monthly export and the exports asked for: the monthly schedule (in the stage's time zone)
 * and its planner, the FIFO export queue with its DLQ and the worker, the hourly overdue check,
 * ExportRequested on the exports bus turned into jobs, the run ledger, and their alarms.
 *
 * Least privilege: only the worker writes (and deletes) objects, under `exports/` only; the
 * overdue check reads there. The worker reads the company key secrets and user tokens.
 *
 * Exports creates it as its `Default` child. CDK leaves `Default` out of every id it derives from
 * a path, its logical ids and `Names.nodeUniqueId` alike: the event source mapping (named after
 * the queue), the rule's invoke permission and the dead-letter queue's statement id (named after
 * the rule) keep the names they had before Exports was split.
 */
export class ExportPipeline extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly requestDeadLetterQueue: Queue;
  readonly eventBus: EventBus;
  readonly runsTable: Table;
  readonly planner: AcctopsFunction;
  readonly worker: AcctopsFunction;
  readonly checker: AcctopsFunction;
  readonly requester: AcctopsFunction;
  readonly monthlySchedule: Schedule;
  readonly checkSchedule: Schedule;
  readonly alarms: {
    exportFailures: Alarm;
    staleSymlinks: Alarm;
    deadLetters: Alarm;
    requestDeadLetters: Alarm;
    overdue: Alarm;
    plannerErrors: Alarm;
  };

  constructor(scope: Construct, id: string, props: ExportPipelineProps) {
    super(scope, id);
    const { stage, functionDefaults: base, key } = props;
    const timeZone = stage.schedules.timeZone;

    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      fifo: true,
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'Queue', {
      fifo: true,
      // Deduplication ids are explicit (deduplicationIdOf): the same job for the same reason.
      contentBasedDeduplication: false,
      deduplicationScope: DeduplicationScope.QUEUE,
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      // AWS's advice for Lambda event sources: six times the function's timeout.
      visibilityTimeout: Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    });
    this.requestDeadLetterQueue = new Queue(this, 'RequestDeadLetters', {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.requestDeadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself a dead-letter queue: of the ExportRequested rule target (EventBridge keeps events it could not deliver here).',
    });
    // SQS may not use the key of an encrypted DLQ unless EventBridge may (EventBridge DLQ docs),
    // and only for the rule whose DLQ it is. The rule's ARN is written from its fixed name: a
    // reference to the rule would make the key depend on the rule, which depends on the queue,
    // which depends on the key; and the owner of a supplied key can copy a fixed ARN into its
    // policy before the first deploy (docs/infrastructure.md, "Bring your own key").
    const busName = exportsEventBusName(stage.name);
    const requestRuleName = exportRequestedRuleName(stage.name);
    allowOnOwnKey(
      key,
      new PolicyStatement({
        principals: [new ServicePrincipal('events.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
        conditions: {
          StringEquals: { 'aws:SourceAccount': Stack.of(this).account },
          ArnEquals: {
            'aws:SourceArn': Stack.of(this).formatArn({
              service: 'events',
              resource: 'rule',
              resourceName: `${busName}/${requestRuleName}`,
            }),
          },
        },
      }),
    );

    this.eventBus = new EventBus(this, 'Events', {
      eventBusName: busName,
      description:
        'acctops exports: ExportRequested (in), ExportCompleted, ExportFailed, MonthlyExportStarted, MonthlyExportFinished (source acctops.exports)',
    });

    this.runsTable = new Table(this, 'Runs', {
      partitionKey: attribute(RUN_LEDGER_TABLE.partitionKey),
      sortKey: attribute(RUN_LEDGER_TABLE.sortKey),
      timeToLiveAttribute: RUN_LEDGER_TABLE.timeToLiveAttribute,
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: key,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: stage.retainData,
      removalPolicy: props.removalPolicy,
    });

    this.planner = new AcctopsFunction(this, 'Planner', {
      ...base,
      handlerDir: 'plan-monthly-export',
      description: 'Plans the monthly export: last month for every company key and every active user (EventBridge Scheduler)',
      timeout: Duration.minutes(10),
      memorySize: 512,
      environment: {
        ...base.environment,
        EXPORT_TIME_ZONE: timeZone,
        EXPORT_FORMATS: props.formats.join(','),
      },
    })
      .bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send')
      .bindEventBus(this.eventBus, 'EXPORT_EVENT_BUS_NAME')
      .bindTable(this.runsTable, 'EXPORT_RUNS_TABLE_NAME', 'getPutUpdateQuery')
      .bindTable(props.tokenTable, 'TOKEN_TABLE_NAME', 'queryIndexes', { indexes: [props.tokenDueIndexName] })
      .bindTable(props.companyRegistryTable, 'COMPANY_REGISTRY_TABLE_NAME', 'scan');

    this.worker = new AcctopsFunction(this, 'Worker', {
      ...base,
      handlerDir: 'export-period',
      description: "Exports one company's month to S3 (or lists a user's companies), from the export queue",
      timeout: WORKER_TIMEOUT,
      // CPU grows with memory: Parquet encoding and gzip are CPU-bound.
      memorySize: 1024,
      // The export allocates per record and keeps ~15 MiB; the runtime's 51 MiB semi-spaces at
      // 1024 MB only hold garbage longer (peak RSS 320 vs 185 MiB at 1M transactions, no slower:
      // BENCHMARKS.md, "Memory: what we found").
      maxSemiSpaceMb: 16,
      // It keeps ~15 MiB and allocates fast: at the runtime's 922 MiB V8 started a full collection
      // about every 150 ms of a JSONL export; at 2,047 its heap may grow twice what survived before
      // the next one. Interleaved A/B at 1M transactions (2026-11-26): child CPU -19% (JSONL), -1 to
      // -3% (all formats), peak RSS +4 to +9 MiB (decision 73; BENCHMARKS.md, "Memory: what we found", finding 6).
      maxOldSpaceMb: 2047,
      environment: {
        ...base.environment,
        ACCTOPS_TOOL_VERSION: props.toolVersion,
        ACCTOPS_BASE_URL: stage.baseUrl,
        SECRET_CACHE_TTL_SECONDS: String(stage.secretCacheTtlSeconds),
        EXPORT_MAX_RECEIVE_COUNT: String(props.maxReceiveCount),
        EXPORT_MAX_TRANSACTIONS_PER_PART: String(stage.exports.maxTransactionsPerPart),
        ...(stage.exports.pageSize !== undefined ? { EXPORT_PAGE_SIZE: String(stage.exports.pageSize) } : {}),
        ...(stage.exports.dateTo !== undefined ? { EXPORT_DATE_TO: stage.exports.dateTo } : {}),
        // Set only when configured, so that a stage without it synthesizes as before.
        ...(Object.keys(stage.exports.taxReportFields).length > 0
          ? { EXPORT_TAX_REPORT_FIELDS: JSON.stringify(stage.exports.taxReportFields) }
          : {}),
      },
    })
      .bindBucket(props.bucket, 'EXPORT_BUCKET_NAME', 'readWriteDelete', { prefix: EXPORT_PREFIX })
      .bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send')
      .bindEventBus(this.eventBus, 'EXPORT_EVENT_BUS_NAME')
      .bindTable(this.runsTable, 'EXPORT_RUNS_TABLE_NAME', 'getPutUpdateQuery')
      .bindTable(props.tokenTable, 'TOKEN_TABLE_NAME', 'getItem')
      // The company's entry when its export starts (its default currency): GetItem only, no Scan.
      .bindTable(props.companyRegistryTable, 'COMPANY_REGISTRY_TABLE_NAME', 'getItem')
      .consumeQueue(this.queue, { batchSize: 1, maxConcurrency: props.workerMaxConcurrency });
    props.companyKeys.grantCompanyKeys(this.worker);

    this.checker = new AcctopsFunction(this, 'OverdueCheck', {
      ...base,
      handlerDir: 'check-monthly-export',
      description: 'Counts the companies whose last month is not exported by the deadline (MonthlyExportsOverdue)',
      timeout: Duration.minutes(2),
      environment: { ...base.environment, EXPORT_TIME_ZONE: timeZone, EXPORT_DUE_AFTER_HOURS: String(props.dueAfterHours) },
    })
      .bindBucket(props.bucket, 'EXPORT_BUCKET_NAME', 'read', { prefix: EXPORT_PREFIX })
      .bindEventBus(this.eventBus, 'EXPORT_EVENT_BUS_NAME')
      .bindTable(this.runsTable, 'EXPORT_RUNS_TABLE_NAME', 'getUpdateQuery');

    this.requester = new AcctopsFunction(this, 'Requester', {
      ...base,
      handlerDir: 'request-export',
      description: 'Turns an ExportRequested event into export jobs, one per month',
      // Which month is the current one: a later one is refused before anything is queued.
      environment: { ...base.environment, EXPORT_TIME_ZONE: timeZone },
    }).bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send');
    // Its dead-letter queue takes only what EventBridge could not deliver; an event request-export
    // itself failed goes, after Lambda's retries, to the stack's FailedInvocations queue
    // (FailedInvocations.coverEventRules).
    new Rule(this, 'ExportRequestedRule', {
      ruleName: requestRuleName,
      eventBus: this.eventBus,
      description: 'ExportRequested -> request-export',
      eventPattern: { detailType: ['ExportRequested'] },
      targets: [
        new LambdaFunction(this.requester, {
          deadLetterQueue: this.requestDeadLetterQueue,
          retryAttempts: 2,
          maxEventAge: Duration.hours(1),
        }),
      ],
    });

    this.monthlySchedule = new Schedule(this, 'MonthlySchedule', {
      description: `acctops ${stage.name}: exports the previous month (${timeZone})`,
      schedule: ScheduleExpression.expression(stage.schedules.monthlyExport, TimeZone.of(timeZone)),
      target: this.scheduleTarget('MonthlyScheduleRole', this.planner, 'monthly-export', 2),
    });
    this.checkSchedule = new Schedule(this, 'CheckSchedule', {
      description: `acctops ${stage.name}: checks that last month's exports are complete`,
      schedule: ScheduleExpression.expression('rate(1 hour)'),
      target: this.scheduleTarget('CheckScheduleRole', this.checker, 'monthly-export-check', 0),
    });

    const action = props.alarmAction;
    this.alarms = {
      exportFailures: acctopsAlarm(this, 'ExportFailuresAlarm', {
        action,
        description:
          'An export failed for good (ExportFailed): a refused permission, no credential, or every delivery failed. Runbook: "The monthly export failed for one company".',
        metric: acctopsMetric(stage.name, ALARMED_METRICS.exportFailed, { statistic: 'Sum', period: Duration.hours(1) }),
      }),
      // Nothing else pages for it: the export succeeded, and Athena's readers see the previous
      // month's data without an error until someone runs doctor or exports the period again.
      staleSymlinks: acctopsAlarm(this, 'StaleSymlinksAlarm', {
        action,
        description:
          'An export was published, but Athena still shows the previous export of some of its datasets: their symlinks could not be written after the manifest. Runbook: "Athena shows an older export than the manifest".',
        metric: acctopsMetric(stage.name, ALARMED_METRICS.exportStaleSymlinks, { statistic: 'Sum', period: Duration.hours(1) }),
      }),
      deadLetters: acctopsAlarm(this, 'DeadLettersAlarm', {
        action,
        description:
          'Export jobs reached the dead-letter queue: malformed, or failing on every delivery. `acctops doctor` names the companies and months without an export; ' +
          'runbook "The monthly export failed for one company", then purge the queue (its jobs are re-requested with `acctops export`).',
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      }),
      requestDeadLetters: acctopsAlarm(this, 'RequestDeadLettersAlarm', {
        action,
        description:
          'EventBridge could not deliver ExportRequested events to request-export (2 retries within an hour): each message is the event. ' +
          'An event request-export refused or could not enqueue goes to the FailedInvocations queue instead (runbook "A failed invocation").',
        metric: this.requestDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      }),
      overdue: acctopsAlarm(this, 'OverdueAlarm', {
        action,
        description: `A company's previous month has no complete export ${props.dueAfterHours} h into the month (or the monthly run never started). Runbook: "The monthly export failed for one company".`,
        metric: acctopsMetric(stage.name, ALARMED_METRICS.monthlyExportsOverdue, { statistic: 'Maximum', period: Duration.hours(1) }),
      }),
      plannerErrors: acctopsAlarm(this, 'PlannerErrorsAlarm', {
        action,
        description:
          'The monthly export planner failed: the month is not (fully) enqueued. Invoke it again with the same scheduledAt, ' +
          "or `acctops export --month <last month>` requests every registered company's export.",
        metric: this.planner.metricErrors({ period: Duration.hours(1), statistic: 'Sum' }),
      }),
    };
  }

  /**
   * A function as a schedule's target, with a role of its own that may invoke exactly that
   * function. The planner gets retries (a missed month is costly; a repeated invocation plans the
   * same run); the hourly check does not (the next one is an hour away).
   */
  private scheduleTarget(roleId: string, fn: AcctopsFunction, schedule: string, retries: number): IScheduleTarget {
    const role = new Role(this, roleId, {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: `Lets EventBridge Scheduler invoke ${fn.node.id}, and nothing else`,
    });
    role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [fn.functionArn] }));
    return {
      bind: () => ({
        arn: fn.functionArn,
        role,
        input: ScheduleTargetInput.fromObject({
          source: 'acctops.scheduler',
          schedule,
          scheduledAt: ContextAttribute.scheduledTime,
          executionId: ContextAttribute.executionId,
        }),
        retryPolicy: { maximumRetryAttempts: retries, maximumEventAgeInSeconds: 3600 },
      }),
    };
  }
}
