import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { CfnOutput, Duration, type RemovalPolicy, Stack, TimeZone, Validations } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, TreatMissingData, type IAlarmAction } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AttributeType, BillingMode, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { CfnDatabase, CfnTable } from 'aws-cdk-lib/aws-glue';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key, type IKey } from 'aws-cdk-lib/aws-kms';
import { FunctionUrlAuthType, type FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput, type IScheduleTarget } from 'aws-cdk-lib/aws-scheduler';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { DeduplicationScope, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { StageConfig } from '../config/stage';
import { AcctopsFunction, type AcctopsFunctionDefaults } from './acctops-function';

/**
 * The pipeline tables' names, repeated from RUN_LEDGER_TABLE and REPLAY_TABLE in
 * src/core/exports/pipeline/state-tables.ts (lib may not import src). test/infra/exports.test.ts
 * compares the synthesized tables with those constants, so the two cannot drift.
 */
export const EXPORT_TABLE_SHAPES = {
  runLedger: {
    partitionKey: { name: 'pk', type: AttributeType.STRING },
    sortKey: { name: 'sk', type: AttributeType.STRING },
    timeToLiveAttribute: 'expiresAt',
  },
  replay: { partitionKey: { name: 'eventId', type: AttributeType.STRING }, timeToLiveAttribute: 'expiresAt' },
} as const;

/**
 * Glue columns of the Parquet files, in the order of src/core/exports/formats/dataset-tables.ts (docs/exports.md,
 * "Columns"); test/infra/exports.test.ts compares them with the writer's tables.
 */
export const GLUE_COLUMNS: Record<'transactions' | 'tax_reports' | 'categories', [string, string][]> = {
  transactions: [
    ['public_id', 'string'],
    ['value_date_local', 'date'],
    ['value_date', 'string'],
    ['value_date_utc', 'timestamp'],
    ['value_date_offset_minutes', 'bigint'],
    ['amount', 'decimal(18,4)'],
    ['amount_minor', 'bigint'],
    ['currency', 'string'],
    ['cashflow_type', 'string'],
    ['category_id', 'string'],
    ['category_name', 'string'],
    ['description', 'string'],
    ['bank_account_id', 'string'],
  ],
  tax_reports: [
    ['pk', 'string'],
    ['type', 'string'],
    ['period_start', 'date'],
    ['period_end', 'date'],
    ['status', 'string'],
    ['amount_due', 'decimal(18,4)'],
    ['amount_due_minor', 'bigint'],
    ['currency', 'string'],
    ['created_at', 'string'],
    ['created_at_utc', 'timestamp'],
    ['created_at_offset_minutes', 'bigint'],
    ['extra', 'string'],
  ],
  categories: [
    ['public_id', 'string'],
    ['name', 'string'],
    ['parent_id', 'string'],
    ['cashflow_type', 'string'],
    ['vat_applied', 'string'],
    ['description', 'string'],
    ['examples', 'string'],
    ['metadata', 'string'],
  ],
};

/** The namespace of the functions' EMF metrics (METRICS_NAMESPACE in src/core/shared/metrics.ts). */
const METRICS_NAMESPACE = 'Acctops';
/** Every object the pipeline writes lives under this prefix (EXPORT_ROOT in src/core/exports/formats/layout.ts). */
const EXPORT_PREFIX = 'exports/';
const WORKER_TIMEOUT = Duration.minutes(15);
const TOOL_VERSION = (JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

export interface ExportsTuning {
  /**
   * Export workers at once (the SQS event source's maximum concurrency, 2 to 1000): with one
   * company per invocation, the cap on exports running at the same time.
   * @default 5
   */
  readonly workerMaxConcurrency?: number;
  /**
   * Deliveries of an export job before it moves to the dead-letter queue.
   * @default 3
   */
  readonly maxReceiveCount?: number;
  /**
   * Hours after midnight on the 1st (local) by which every company's previous month must be exported.
   * @default 12
   */
  readonly dueAfterHours?: number;
  /**
   * Formats of the monthly exports.
   * @default ['jsonl', 'csv', 'parquet']
   */
  readonly formats?: readonly ('jsonl' | 'csv' | 'parquet')[];
  /**
   * Days a replaced or deleted export object is kept as a noncurrent version.
   * @default 30
   */
  readonly noncurrentVersionDays?: number;
  /**
   * Days the bucket's server access logs are kept.
   * @default 365
   */
  readonly accessLogDays?: number;
  /**
   * Concurrent executions reserved for (and capping) the webhook: an unauthenticated URL must not
   * be able to take the account's concurrency.
   * @default 10
   */
  readonly webhookConcurrency?: number;
}

export interface ExportsProps {
  readonly stage: StageConfig;
  readonly functionDefaults: AcctopsFunctionDefaults;
  readonly alarmTopic: ITopic;
  /** Of the bucket, key, tables and the webhook secret (the stack's dataRemovalPolicy). */
  readonly removalPolicy: RemovalPolicy;
  /** Encrypts the webhook secret, like every acctops secret. */
  readonly secretsKey: IKey;
  /** The user-token table: the planner lists active users through its keys-only index, the worker reads tokens. */
  readonly tokenTable: ITable;
  readonly tokenDueIndexName: string;
  /**
   * The company registry: the planner scans it, a page at a time, for the companies to export; the
   * webhook gets one item per request (its allowlist).
   */
  readonly companyRegistryTable: ITable;
  /** Grants a function read access to the company API-key secrets (KeyRotation). */
  readonly companyKeys: { grantCompanyKeys(fn: AcctopsFunction): void };
  readonly tuning?: ExportsTuning;
}

/**
 * Exports to S3 (docs/exports.md, "The pipeline"): the KMS-encrypted, versioned, TLS-only
 * bucket with its access-log bucket; the Glue database and tables (partition projection over the
 * Parquet symlinks, no crawler); the monthly schedule (in the stage's time zone) and the hourly
 * overdue check; the FIFO export queue, its DLQ and the worker; ExportRequested on the exports
 * bus and the signed webhook (Function URL); the run ledger and replay tables; the alarms.
 *
 * Least privilege: only the worker writes (and deletes) objects, under `exports/` only; the
 * overdue check reads there; no other function of the stack is granted the bucket or its key. The
 * worker reads the company key secrets and user tokens; the webhook reads only its own secret.
 */
export class Exports extends Construct {
  readonly key: Key;
  readonly bucket: Bucket;
  readonly accessLogs: Bucket;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly requestDeadLetterQueue: Queue;
  readonly eventBus: EventBus;
  readonly runsTable: Table;
  readonly replayTable: Table;
  readonly webhookSecret: Secret;
  readonly planner: AcctopsFunction;
  readonly worker: AcctopsFunction;
  readonly checker: AcctopsFunction;
  readonly requester: AcctopsFunction;
  readonly webhook: AcctopsFunction;
  readonly webhookUrl: FunctionUrl;
  readonly monthlySchedule: Schedule;
  readonly checkSchedule: Schedule;
  readonly database: CfnDatabase;
  readonly tables: Record<keyof typeof GLUE_COLUMNS, CfnTable>;
  readonly alarms: {
    exportFailures: Alarm;
    deadLetters: Alarm;
    requestDeadLetters: Alarm;
    overdue: Alarm;
    plannerErrors: Alarm;
    webhookUnavailable: Alarm;
    webhookRejected: Alarm;
  };
  private readonly stageName: string;

  constructor(scope: Construct, id: string, props: ExportsProps) {
    super(scope, id);
    const { stage, functionDefaults } = props;
    this.stageName = stage.name;
    const tuning = {
      workerMaxConcurrency: 5,
      maxReceiveCount: 3,
      dueAfterHours: 12,
      formats: ['jsonl', 'csv', 'parquet'] as const,
      noncurrentVersionDays: 30,
      accessLogDays: 365,
      webhookConcurrency: 10,
      ...props.tuning,
    };
    const timeZone = stage.schedules.timeZone;

    this.key = new Key(this, 'Key', {
      description: `acctops ${stage.name}: encrypts the exports bucket, the export queues and tables`,
      alias: `alias/acctops/${stage.name}/exports`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });

    // S3 writes server access logs only into an SSE-S3 bucket (not SSE-KMS), hence a bucket of its own.
    this.accessLogs = new Bucket(this, 'AccessLogs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(tuning.accessLogDays) }],
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This bucket receives the exports bucket’s server access logs; logging the log bucket into itself would only log its own log deliveries.',
    });

    this.bucket = new Bucket(this, 'Bucket', {
      encryption: BucketEncryption.KMS,
      encryptionKey: this.key,
      // One data key per bucket instead of one KMS call per object: exports write thousands of parts.
      bucketKeyEnabled: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      versioned: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'exports-bucket/',
      lifecycleRules: [
        // An abort that itself failed leaves invisible parts that cost storage until this rule ends them.
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Re-runs replace objects and the garbage collection deletes superseded runs: old versions go after a while.
        { id: 'expire-noncurrent-versions', noncurrentVersionExpiration: Duration.days(tuning.noncurrentVersionDays) },
        { id: 'remove-expired-delete-markers', expiredObjectDeleteMarker: true },
      ],
      removalPolicy: props.removalPolicy,
    });

    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      fifo: true,
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'Queue', {
      fifo: true,
      // Deduplication ids are explicit (deduplicationIdOf): the same job for the same reason.
      contentBasedDeduplication: false,
      deduplicationScope: DeduplicationScope.QUEUE,
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      // AWS's advice for Lambda event sources: six times the function's timeout.
      visibilityTimeout: Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: tuning.maxReceiveCount },
    });
    this.requestDeadLetterQueue = new Queue(this, 'RequestDeadLetters', {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.requestDeadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This queue is itself a dead-letter queue: of the ExportRequested rule target (EventBridge keeps events it could not deliver here).',
    });
    // SQS may not use the key of an encrypted DLQ unless EventBridge may (EventBridge DLQ docs).
    this.key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('events.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    );

    this.eventBus = new EventBus(this, 'Events', {
      eventBusName: `acctops-${stage.name}-exports`,
      description: 'acctops exports: ExportRequested (in), ExportCompleted, ExportFailed, MonthlyExportStarted, MonthlyExportFinished (source acctops.exports)',
    });

    this.runsTable = new Table(this, 'Runs', {
      partitionKey: EXPORT_TABLE_SHAPES.runLedger.partitionKey,
      sortKey: EXPORT_TABLE_SHAPES.runLedger.sortKey,
      timeToLiveAttribute: EXPORT_TABLE_SHAPES.runLedger.timeToLiveAttribute,
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: props.removalPolicy,
    });
    this.replayTable = new Table(this, 'WebhookReplay', {
      partitionKey: EXPORT_TABLE_SHAPES.replay.partitionKey,
      timeToLiveAttribute: EXPORT_TABLE_SHAPES.replay.timeToLiveAttribute,
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: props.removalPolicy,
    });

    this.webhookSecret = new Secret(this, 'WebhookSecret', {
      secretName: `acctops/${stage.name}/export-webhook`,
      description: 'Shared secret of the export webhook (HMAC-SHA256). Give it to the sender; change it with the runbook "Change the export webhook secret".',
      encryptionKey: props.secretsKey,
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.webhookSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The webhook secret is shared with an outside sender, so it changes when the sender is ready: the runbook "Change the export webhook secret" puts a new version, ' +
        'the webhook accepts AWSCURRENT and AWSPREVIOUS meanwhile, then the sender switches. An automatic rotation would break the sender.',
    });

    const base = { ...functionDefaults, environment: { ACCTOPS_TOOL_VERSION: TOOL_VERSION } };

    this.planner = new AcctopsFunction(this, 'Planner', {
      ...base,
      handlerDir: 'plan-monthly-export',
      description: 'Plans the monthly export: last month for every company key and every active user (EventBridge Scheduler)',
      timeout: Duration.minutes(10),
      memorySize: 512,
      environment: {
        ...base.environment,
        EXPORT_TIME_ZONE: timeZone,
        EXPORT_FORMATS: tuning.formats.join(','),
      },
    })
      .bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send')
      .bindEventBus(this.eventBus, 'EXPORT_EVENT_BUS_NAME')
      .bindTable(this.runsTable, 'EXPORT_RUNS_TABLE_NAME', 'readWrite')
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
      environment: {
        ...base.environment,
        ACCTOPS_BASE_URL: stage.baseUrl,
        SECRET_CACHE_TTL_SECONDS: String(stage.secretCacheTtlSeconds),
        EXPORT_MAX_RECEIVE_COUNT: String(tuning.maxReceiveCount),
        EXPORT_MAX_TRANSACTIONS_PER_PART: String(stage.exports.maxTransactionsPerPart),
      },
    })
      .bindBucket(this.bucket, 'EXPORT_BUCKET_NAME', 'readWriteDelete', { prefix: EXPORT_PREFIX })
      .bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send')
      .bindEventBus(this.eventBus, 'EXPORT_EVENT_BUS_NAME')
      .bindTable(this.runsTable, 'EXPORT_RUNS_TABLE_NAME', 'readWrite')
      .bindTable(props.tokenTable, 'TOKEN_TABLE_NAME', 'read')
      .consumeQueue(this.queue, { batchSize: 1, maxConcurrency: tuning.workerMaxConcurrency });
    props.companyKeys.grantCompanyKeys(this.worker);

    this.checker = new AcctopsFunction(this, 'OverdueCheck', {
      ...base,
      handlerDir: 'check-monthly-export',
      description: "Counts the companies whose last month is not exported by the deadline (MonthlyExportsOverdue)",
      timeout: Duration.minutes(2),
      environment: { ...base.environment, EXPORT_TIME_ZONE: timeZone, EXPORT_DUE_AFTER_HOURS: String(tuning.dueAfterHours) },
    })
      .bindBucket(this.bucket, 'EXPORT_BUCKET_NAME', 'read', { prefix: EXPORT_PREFIX })
      .bindEventBus(this.eventBus, 'EXPORT_EVENT_BUS_NAME')
      .bindTable(this.runsTable, 'EXPORT_RUNS_TABLE_NAME', 'readWrite');

    this.requester = new AcctopsFunction(this, 'Requester', {
      ...base,
      handlerDir: 'request-export',
      description: 'Turns an ExportRequested event into export jobs, one per month',
    }).bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send');
    new Rule(this, 'ExportRequestedRule', {
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

    this.webhook = new AcctopsFunction(this, 'Webhook', {
      ...base,
      handlerDir: 'receive-export-webhook',
      description: 'The signed export webhook (Function URL): checks, then enqueues export jobs',
      timeout: Duration.seconds(10),
      reservedConcurrency: tuning.webhookConcurrency,
      environment: {
        ...base.environment,
        SECRET_CACHE_TTL_SECONDS: String(stage.secretCacheTtlSeconds),
      },
    })
      .bindSecret(this.webhookSecret, 'WEBHOOK_SECRET_ARN', 'read')
      .bindTable(this.replayTable, 'WEBHOOK_REPLAY_TABLE_NAME', 'claims')
      // Tenant isolation from the registry at run time: GetItem only, no list in the template.
      .bindTable(props.companyRegistryTable, 'COMPANY_REGISTRY_TABLE_NAME', 'getItem')
      .bindQueue(this.queue, 'EXPORT_QUEUE_URL', 'send');
    // No IAM auth: the sender is outside AWS, and the HMAC signature over timestamp and body is the
    // authentication (checked before anything else happens; docs/exports.md, "Webhook").
    this.webhookUrl = this.webhook.addFunctionUrl({ authType: FunctionUrlAuthType.NONE });

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

    this.database = new CfnDatabase(this, 'Database', {
      catalogId: Stack.of(this).account,
      databaseInput: { name: `acctops_${stage.name.replace(/-/g, '_')}_exports`, description: 'acctops exports (Parquet through symlinks; docs/exports.md)' },
    });
    this.tables = {
      transactions: this.glueTable('TransactionsTable', 'transactions'),
      tax_reports: this.glueTable('TaxReportsTable', 'tax_reports'),
      categories: this.glueTable('CategoriesTable', 'categories'),
    };

    const action = new SnsAction(props.alarmTopic);
    this.alarms = {
      exportFailures: this.alarm('ExportFailuresAlarm', action, {
        description: 'An export failed for good (ExportFailed): a refused permission, no credential, or every delivery failed. Runbook: "The monthly export failed for one company".',
        metric: this.metric('ExportFailed', 'export-period', 'Sum', Duration.hours(1)),
      }),
      deadLetters: this.alarm('DeadLettersAlarm', action, {
        description: 'Export jobs reached the dead-letter queue: malformed, or failing on every delivery. Redrive after the cause is fixed.',
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      }),
      requestDeadLetters: this.alarm('RequestDeadLettersAlarm', action, {
        description: 'ExportRequested events could not be turned into export jobs (malformed, or the queue refused).',
        metric: this.requestDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      }),
      overdue: this.alarm('OverdueAlarm', action, {
        description: `A company's previous month has no complete export ${tuning.dueAfterHours} h into the month (or the monthly run never started). Runbook: "The monthly export failed for one company".`,
        metric: this.metric('MonthlyExportsOverdue', 'check-monthly-export', 'Maximum', Duration.hours(1)),
      }),
      plannerErrors: this.alarm('PlannerErrorsAlarm', action, {
        description: 'The monthly export planner failed: the month is not (fully) enqueued. Invoke it again with the same scheduledAt.',
        metric: this.planner.metricErrors({ period: Duration.hours(1), statistic: 'Sum' }),
      }),
      webhookUnavailable: this.alarm('WebhookUnavailableAlarm', action, {
        description: `The export webhook answered 503 (its secret, replay table or queue failed): the sender must retry. ${this.webhook.logGroupName} names the dependency.`,
        metric: this.metric('WebhookUnavailable', 'receive-export-webhook', 'Sum', Duration.minutes(5)),
      }),
      webhookRejected: this.alarm('WebhookRejectedAlarm', action, {
        description:
          'The export webhook refused a request (bad or stale signature, unknown company, malformed body): a sender whose exports silently do not happen, ' +
          `often after a change of the webhook secret (runbook "Change the export webhook secret"). Its "webhook refused" line in ${this.webhook.logGroupName} names the reason.`,
        metric: this.metric('WebhookRejected', 'receive-export-webhook', 'Sum', Duration.hours(1)),
      }),
    };

    const stack = Stack.of(this);
    new CfnOutput(stack, 'ExportBucketName', { value: this.bucket.bucketName, description: 'Bucket holding the exports (exports/company=…/period=…/)' });
    new CfnOutput(stack, 'ExportEventBusName', {
      value: this.eventBus.eventBusName,
      description: 'Event bus taking ExportRequested and carrying ExportCompleted/ExportFailed/MonthlyExport* (source acctops.exports)',
    });
    new CfnOutput(stack, 'ExportQueueUrl', { value: this.queue.queueUrl, description: 'FIFO queue of export jobs' });
    new CfnOutput(stack, 'ExportWebhookUrl', { value: this.webhookUrl.url, description: 'The signed export webhook (POST; docs/exports.md)' });
    new CfnOutput(stack, 'ExportWebhookSecretArn', { value: this.webhookSecret.secretArn, description: 'Shared secret of the export webhook' });
    new CfnOutput(stack, 'ExportGlueDatabaseName', { value: `acctops_${stage.name.replace(/-/g, '_')}_exports`, description: 'Glue database of the export tables (Athena)' });
  }

  /**
   * A function as a schedule's target, with a role of its own that may invoke exactly that
   * function. The planner gets retries (a missed month is costly; a repeated invocation plans the
   * same run); the hourly check does not (the next one is an hour away).
   */
  private scheduleTarget(roleId: string, fn: AcctopsFunction, schedule: string, retries: number): IScheduleTarget {
    const role = new Role(this, roleId, {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', { conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } } }),
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

  /**
   * A Glue table over one dataset's Parquet, read through `<dataset>/_symlink/symlink.txt`
   * (SymlinkTextInputFormat) so that Athena sees exactly the current run of each period; partition
   * projection computes the partitions (no crawler, no MSCK REPAIR): `company` is injected (a query
   * names it), `period` is a month from 2020 to now.
   */
  private glueTable(id: string, dataset: keyof typeof GLUE_COLUMNS): CfnTable {
    const root = `s3://${this.bucket.bucketName}/${EXPORT_PREFIX}`;
    return new CfnTable(this, id, {
      catalogId: Stack.of(this).account,
      databaseName: this.database.ref,
      tableInput: {
        name: dataset,
        description: `acctops ${dataset} (docs/exports.md, "Columns"); WHERE company = '<publicId>' is required`,
        tableType: 'EXTERNAL_TABLE',
        partitionKeys: [
          { name: 'company', type: 'string' },
          { name: 'period', type: 'string' },
        ],
        parameters: {
          classification: 'parquet',
          EXTERNAL: 'TRUE',
          'projection.enabled': 'true',
          'projection.company.type': 'injected',
          'projection.period.type': 'date',
          'projection.period.format': 'yyyy-MM',
          'projection.period.range': '2020-01,NOW',
          'projection.period.interval': '1',
          'projection.period.interval.unit': 'MONTHS',
          'storage.location.template': `${root}company=\${company}/period=\${period}/${dataset}/_symlink/`,
        },
        storageDescriptor: {
          location: root,
          inputFormat: 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat',
          outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
          serdeInfo: { serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' },
          columns: GLUE_COLUMNS[dataset].map(([name, type]) => ({ name, type })),
        },
      },
    });
  }

  /** A metric as createHandler emits it: namespace Acctops, dimensions Stage and Function. */
  private metric(metricName: string, functionName: string, statistic: string, period: Duration): Metric {
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName,
      dimensionsMap: { Stage: this.stageName, Function: functionName },
      statistic,
      period,
    });
  }

  private alarm(id: string, action: IAlarmAction, options: { description: string; metric: Metric }): Alarm {
    const alarm = new Alarm(this, id, {
      alarmDescription: options.description,
      metric: options.metric,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data means nothing happened (no failure, nothing dead-lettered, no check run yet).
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(action);
    return alarm;
  }
}
