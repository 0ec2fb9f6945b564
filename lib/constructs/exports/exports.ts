import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { CfnOutput, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Table, ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { EventBus } from 'aws-cdk-lib/aws-events';
import type { CfnDatabase, CfnTable } from 'aws-cdk-lib/aws-glue';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { Schedule } from 'aws-cdk-lib/aws-scheduler';
import type { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_DUE_AFTER_HOURS, type DatasetName } from '../../../contract/exports';
import type { StageConfig } from '../../config/stage';
import type { AcctopsFunction, AcctopsFunctionDefaults } from '../acctops-function';
import { ExportCatalog, glueDatabaseName } from './catalog';
import { ExportPipeline } from './pipeline';
import { ExportStorage } from './storage';
import { ExportWebhook } from './webhook';

const TOOL_VERSION = (JSON.parse(readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string })
  .version;

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
   * webhook gets one item per request (its allowlist), the worker one per export (the company's
   * default currency).
   */
  readonly companyRegistryTable: ITable;
  /** Grants a function read access to the company API-key secrets (KeyRotation). */
  readonly companyKeys: { grantCompanyKeys(fn: AcctopsFunction): void };
  readonly tuning?: ExportsTuning;
}

/**
 * Exports to S3 (docs/exports.md, "The pipeline"; docs/infrastructure-notes.md), made of
 * four parts:
 * - `storage` (ExportStorage): the exports key, the bucket and its access-log bucket;
 * - `pipeline` (ExportPipeline): schedules, queues, the exports bus, the run ledger, the planner,
 *   worker, overdue check and requester, and their alarms;
 * - `intake` (ExportWebhook): the signed webhook, its secret and replay table, and its alarms;
 * - `catalog` (ExportCatalog): the Glue database and tables (partition projection, no crawler).
 *
 * Its members below are the parts' members, for the stack, the CLI's outputs and the tests. The
 * split kept every logical id of the template (see the parts: Grouping and `Default`).
 *
 * Least privilege: only the worker writes (and deletes) objects, under `exports/` only; the
 * overdue check reads there; no other function of the stack is granted the bucket or its key. The
 * worker reads the company key secrets and user tokens; the webhook reads only its own secret.
 */
export class Exports extends Construct {
  readonly storage: ExportStorage;
  readonly pipeline: ExportPipeline;
  readonly intake: ExportWebhook;
  readonly catalog: ExportCatalog;
  readonly key: IKey;
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
  readonly tables: Record<DatasetName, CfnTable>;
  readonly alarms: ExportPipeline['alarms'] & ExportWebhook['alarms'];

  constructor(scope: Construct, id: string, props: ExportsProps) {
    super(scope, id);
    const { stage } = props;
    const tuning = {
      workerMaxConcurrency: 5,
      maxReceiveCount: 3,
      dueAfterHours: DEFAULT_DUE_AFTER_HOURS,
      formats: ['jsonl', 'csv', 'parquet'] as const,
      noncurrentVersionDays: 30,
      accessLogDays: 365,
      ...props.tuning,
    };
    const functionDefaults = { ...props.functionDefaults, environment: {} };
    const alarmAction = new SnsAction(props.alarmTopic);

    this.storage = new ExportStorage(this, 'Storage', {
      stage,
      removalPolicy: props.removalPolicy,
      noncurrentVersionDays: tuning.noncurrentVersionDays,
      accessLogDays: tuning.accessLogDays,
    });
    // `Default`: CDK leaves it out of the ids it derives from paths (ExportPipeline says which).
    this.pipeline = new ExportPipeline(this, 'Default', {
      stage,
      functionDefaults,
      toolVersion: TOOL_VERSION,
      key: this.storage.key,
      bucket: this.storage.bucket,
      removalPolicy: props.removalPolicy,
      alarmAction,
      tokenTable: props.tokenTable,
      tokenDueIndexName: props.tokenDueIndexName,
      companyRegistryTable: props.companyRegistryTable,
      companyKeys: props.companyKeys,
      workerMaxConcurrency: tuning.workerMaxConcurrency,
      maxReceiveCount: tuning.maxReceiveCount,
      dueAfterHours: tuning.dueAfterHours,
      formats: tuning.formats,
    });
    this.intake = new ExportWebhook(this, 'WebhookIntake', {
      stage,
      functionDefaults,
      key: this.storage.key,
      secretsKey: props.secretsKey,
      queue: this.pipeline.queue,
      removalPolicy: props.removalPolicy,
      alarmAction,
      companyRegistryTable: props.companyRegistryTable,
    });
    this.catalog = new ExportCatalog(this, 'Catalog', { stageName: stage.name, bucket: this.storage.bucket });

    const { storage, pipeline, intake, catalog } = this;
    this.key = storage.key;
    this.bucket = storage.bucket;
    this.accessLogs = storage.accessLogs;
    this.queue = pipeline.queue;
    this.deadLetterQueue = pipeline.deadLetterQueue;
    this.requestDeadLetterQueue = pipeline.requestDeadLetterQueue;
    this.eventBus = pipeline.eventBus;
    this.runsTable = pipeline.runsTable;
    this.planner = pipeline.planner;
    this.worker = pipeline.worker;
    this.checker = pipeline.checker;
    this.requester = pipeline.requester;
    this.monthlySchedule = pipeline.monthlySchedule;
    this.checkSchedule = pipeline.checkSchedule;
    this.replayTable = intake.replayTable;
    this.webhookSecret = intake.secret;
    this.webhook = intake.function;
    this.webhookUrl = intake.url;
    this.database = catalog.database;
    this.tables = catalog.tables;
    this.alarms = { ...this.pipeline.alarms, ...this.intake.alarms };

    const stack = Stack.of(this);
    new CfnOutput(stack, 'ExportBucketName', {
      value: this.bucket.bucketName,
      description: 'Bucket holding the exports (exports/company=…/period=…/)',
    });
    new CfnOutput(stack, 'ExportEventBusName', {
      value: this.eventBus.eventBusName,
      description: 'Event bus taking ExportRequested and carrying ExportCompleted/ExportFailed/MonthlyExport* (source acctops.exports)',
    });
    new CfnOutput(stack, 'ExportQueueUrl', { value: this.queue.queueUrl, description: 'FIFO queue of export jobs' });
    new CfnOutput(stack, 'ExportWebhookUrl', {
      value: this.webhookUrl.url,
      description: 'The signed export webhook (POST; docs/exports.md)',
    });
    new CfnOutput(stack, 'ExportWebhookSecretArn', {
      value: this.webhookSecret.secretArn,
      description: 'Shared secret of the export webhook',
    });
    new CfnOutput(stack, 'ExportGlueDatabaseName', {
      value: glueDatabaseName(stage.name),
      description: 'Glue database of the export tables (Athena)',
    });
    new CfnOutput(stack, 'ExportTimeZone', {
      value: stage.schedules.timeZone,
      description: "Time zone of the export's month boundaries and deadline (`acctops doctor` judges by it)",
    });
    new CfnOutput(stack, 'ExportDueAfterHours', {
      value: String(tuning.dueAfterHours),
      description: 'Hours after midnight on the 1st (local) by which last month is exported (`acctops doctor` judges by it)',
    });
  }
}
