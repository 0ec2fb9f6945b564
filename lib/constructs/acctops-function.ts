import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Duration, Names, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { ApplicationLogLevel, Architecture, type IFunction, LoggingFormat, Runtime, SystemLogLevel, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogLevel as EsbuildLogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import type { Construct } from 'constructs';

const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const FUNCTIONS_DIR = path.join(PROJECT_ROOT, 'functions');

/**
 * The newest Node.js runtime aws-cdk-lib knows. cdk-nag's AwsSolutions-L1 fails on anything older,
 * and a test fails when aws-cdk-lib adds a newer one, so that the bump is a decision, not a side
 * effect of upgrading CDK.
 */
export const FUNCTION_RUNTIME = Runtime.NODEJS_24_X;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Variables AcctopsFunction sets itself; `environment` and bind* may not reuse them. */
export const RESERVED_ENV = [
  'ACCTOPS_STAGE',
  'ACCTOPS_FUNCTION',
  'LOG_LEVEL',
  'NODE_OPTIONS',
  'POWERTOOLS_SERVICE_NAME',
  'POWERTOOLS_LOGGER_SAMPLE_RATE',
] as const;

/** The `service` of every log line (Powertools Logger); metrics carry no such dimension. */
export const POWERTOOLS_SERVICE_NAME = 'acctops';

export interface AcctopsFunctionProps {
  /**
   * Directory under `functions/` whose `handler.ts` exports `handler`, e.g. `check-health`. It is
   * also the function's ACCTOPS_FUNCTION variable, its log field `function` and its metric
   * dimension `Function`.
   */
  readonly handlerDir: string;
  /** Shown in the console and in `acctops doctor`. */
  readonly description: string;
  /** The stage (cdk.json `stage`); the function's ACCTOPS_STAGE and its metric dimension `Stage`. */
  readonly stageName: string;
  /**
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
  /**
   * Memory in MB; CPU grows with it.
   * @default 256
   */
  readonly memorySize?: number;
  /**
   * Caps each of V8's semi-spaces (the young generation is up to three of them) at this many MiB.
   * The Lambda Node.js runtime sizes them from the function's memory (memory / 20: 51 MiB at
   * 1024 MB), so a function that allocates fast but keeps little, like the exporter, carries up to
   * ~150 MiB of short-lived garbage. Set through NODE_OPTIONS: the runtime's bootstrap leaves both
   * heap flags to NODE_OPTIONS as soon as it names either of them, so the old space is set here too,
   * to what the runtime would have chosen (memory - memory / 10).
   * @default - the runtime's sizing (memory / 20)
   */
  readonly maxSemiSpaceMb?: number;
  /**
   * V8's old-generation limit in MiB (`--max-old-space-size`), set with `maxSemiSpaceMb` (the
   * runtime leaves both heap flags to NODE_OPTIONS once it names either). V8 also paces its full
   * collections by this limit: the heap may grow to at most a factor of what survived the last one
   * before the next starts, 1.3 at 256 MiB rising to 2.0 just below 2,048 MiB and 4.0 from there
   * (V8's MemoryController, 64-bit Node without pointer compression; 1.56 at 922 MiB). A function
   * that keeps little but allocates fast, like the exporter, then collects its whole heap every few
   * hundred milliseconds at the runtime's limit. Above the function's memory the limit is pacing,
   * not a guard: the function's memory stays the ceiling, and a heap that reached it would end the
   * invocation either way (V8's out-of-memory error below it, Lambda's above it).
   * @default - the runtime's sizing (memory - memory / 10)
   */
  readonly maxOldSpaceMb?: number;
  /**
   * Concurrent executions reserved for (and capping) this function, e.g. to respect the service's
   * rate limit. For SQS consumers prefer `consumeQueue`'s `maxConcurrency`, which caps without
   * throttling the poller.
   * @default - unreserved: the account's pool, no cap
   */
  readonly reservedConcurrency?: number;
  /**
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Application log level: LOG_LEVEL, applied by the Lambda logger (functions/_shared/powertools-logger.ts).
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /**
   * Share of invocations (0 to 1) logged at debug whatever `logLevel` says:
   * POWERTOOLS_LOGGER_SAMPLE_RATE, for looking into a problem without redeploying at debug.
   * @default - not set: no sampling
   */
  readonly logSampleRate?: number;
  /**
   * What happens to the log group when the function is removed.
   * @default RemovalPolicy.RETAIN
   */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * Plain settings only: ARNs, names, URLs. Secrets go through `bindSecret`, never here.
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * X-Ray active tracing. Off by default: the bundle carries no X-Ray SDK, so traces would show
   * one opaque segment per invocation, and X-Ray's write actions only accept `Resource: *`. The
   * JSON logs' request and correlation ids and the EMF metrics cover what we need.
   * @default false
   */
  readonly tracing?: boolean;
}

/**
 * The function's NODE_OPTIONS. Stack traces point at the TypeScript sources through the bundle's
 * source map; heap flags only when the semi-space is capped (see `maxSemiSpaceMb`), the old space
 * then as the runtime would size it unless `maxOldSpaceMb` says otherwise.
 */
export function nodeOptions(memoryMb: number, maxSemiSpaceMb: number | undefined, maxOldSpaceMb?: number): string {
  if (maxSemiSpaceMb === undefined) {
    if (maxOldSpaceMb !== undefined) throw new Error('maxOldSpaceMb needs maxSemiSpaceMb: NODE_OPTIONS then holds both heap flags');
    return '--enable-source-maps';
  }
  if (!Number.isInteger(maxSemiSpaceMb) || maxSemiSpaceMb < 1 || maxSemiSpaceMb > Math.floor(memoryMb / 20)) {
    throw new Error(`maxSemiSpaceMb must be a whole number from 1 to memory / 20 (${Math.floor(memoryMb / 20)}): ${maxSemiSpaceMb}`);
  }
  // 4,096 MiB: past it V8's pacing no longer changes (its largest factor from 2,048 on), only the guard is gone.
  if (maxOldSpaceMb !== undefined && (!Number.isInteger(maxOldSpaceMb) || maxOldSpaceMb < 64 || maxOldSpaceMb > 4096)) {
    throw new Error(`maxOldSpaceMb must be a whole number from 64 to 4096: ${maxOldSpaceMb}`);
  }
  const oldSpaceMb = maxOldSpaceMb ?? memoryMb - Math.floor(memoryMb / 10);
  return `--enable-source-maps --max-semi-space-size=${maxSemiSpaceMb} --max-old-space-size=${oldSpaceMb}`;
}

/** What a stack decides once for all its functions; spread it into each function's props. */
export type AcctopsFunctionDefaults = Pick<AcctopsFunctionProps, 'stageName' | 'logRetention' | 'logLevel' | 'logRemovalPolicy'>;

export type SecretAccess = 'read' | 'write' | 'rotate';
export type TableAccess =
  | 'read'
  | 'write'
  | 'readWrite'
  | 'queryIndexes'
  | 'getPut'
  | 'getUpdate'
  | 'getPutUpdate'
  | 'getUpdateQuery'
  | 'getPutUpdateQuery'
  | 'claims'
  | 'scan'
  | 'getItem';
export type BucketAccess = 'read' | 'write' | 'readWrite' | 'readWriteDelete';
export type QueueAccess = 'send' | 'receive';
export type ScheduleAccess = 'read' | 'create';

/** Exactly the actions each access level grants; docs/infrastructure.md repeats this table. */
export const SECRET_ACTIONS: Record<SecretAccess, { secret: string[]; key: string[] }> = {
  read: { secret: ['secretsmanager:GetSecretValue'], key: ['kms:Decrypt'] },
  write: { secret: ['secretsmanager:PutSecretValue'], key: ['kms:GenerateDataKey'] },
  rotate: {
    secret: [
      'secretsmanager:DescribeSecret',
      'secretsmanager:GetSecretValue',
      'secretsmanager:PutSecretValue',
      'secretsmanager:UpdateSecretVersionStage',
    ],
    key: ['kms:Decrypt', 'kms:GenerateDataKey'],
  },
};

export const TABLE_ACTIONS: Record<TableAccess, { table: string[]; key: string[] }> = {
  read: { table: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'], key: ['kms:Decrypt'] },
  write: {
    table: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'],
    key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
  },
  readWrite: {
    table: [
      'dynamodb:GetItem',
      'dynamodb:BatchGetItem',
      'dynamodb:Query',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
      'dynamodb:BatchWriteItem',
    ],
    key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
  },
  /** One item by key, nothing else: an allowlist lookup (the webhook asks the company registry). */
  getItem: { table: ['dynamodb:GetItem'], key: ['kms:Decrypt'] },
  /** Scan only, a page at a time: a planner that visits every item once (the company registry). */
  scan: { table: ['dynamodb:Scan'], key: ['kms:Decrypt'] },
  /** Query on the named indexes only, never on the table: a reader of keys that must not read items. */
  queryIndexes: { table: ['dynamodb:Query'], key: ['kms:Decrypt'] },
  /** Read one item and create one (a conditional put): no update, no delete, no query. */
  getPut: { table: ['dynamodb:GetItem', 'dynamodb:PutItem'], key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'] },
  /** Read one item and change it in place (conditional updates): no create, no delete, no query. */
  getUpdate: { table: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'] },
  /**
   * Create one item, or read one and change it in place: no delete, no query. onboard-user creates a
   * user and, on its way back for a user in needs_attention, takes the user's lease and updates it.
   */
  getPutUpdate: {
    table: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
  },
  /** Read items, change them in place and query the table's partitions: no create, no delete, no batch (the export check on the run ledger). */
  getUpdateQuery: {
    table: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
    key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
  },
  /** getUpdateQuery plus creating items: the run ledger's planner and worker. No delete, no batch (TTL removes old runs). */
  getPutUpdateQuery: {
    table: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
    key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
  },
  /** One item's lifecycle by key (the webhook's replay claims: put, read, confirm, release): no batch, no query. */
  claims: {
    table: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
    key: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
  },
};

/** Access levels that include Query, and so may name indexes. */
const INDEX_ACCESS: readonly TableAccess[] = ['read', 'readWrite', 'queryIndexes'];

export const BUCKET_ACTIONS: Record<BucketAccess, { objects: string[]; list: boolean; key: string[] }> = {
  read: { objects: ['s3:GetObject'], list: true, key: ['kms:Decrypt'] },
  // Multipart uploads (lib-storage's Upload) need kms:Decrypt as well as GenerateDataKey.
  write: { objects: ['s3:PutObject', 's3:AbortMultipartUpload'], list: false, key: ['kms:Decrypt', 'kms:GenerateDataKey'] },
  readWrite: {
    objects: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload'],
    list: true,
    key: ['kms:Decrypt', 'kms:GenerateDataKey'],
  },
  /** readWrite plus DeleteObject: the exporter's atomic publish removes superseded runs (garbage collection). */
  readWriteDelete: {
    objects: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:DeleteObject'],
    list: true,
    key: ['kms:Decrypt', 'kms:GenerateDataKey'],
  },
};

export const QUEUE_ACTIONS: Record<QueueAccess, { queue: string[]; key: string[] }> = {
  send: { queue: ['sqs:SendMessage'], key: ['kms:Decrypt', 'kms:GenerateDataKey'] },
  receive: {
    queue: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes'],
    key: ['kms:Decrypt'],
  },
};

/**
 * EventBridge Scheduler actions on the schedules of one group under one name prefix. `create` makes
 * (or replaces) one-time schedules and reads them back; neither deletes: a one-time schedule deletes
 * itself after it ran (ActionAfterCompletion DELETE).
 */
export const SCHEDULE_ACTIONS: Record<ScheduleAccess, string[]> = {
  read: ['scheduler:GetSchedule'],
  create: ['scheduler:CreateSchedule', 'scheduler:UpdateSchedule', 'scheduler:GetSchedule'],
};

/**
 * What Lambda's poller needs of a queue that invokes the function (consumeQueue): the Lambda
 * Developer Guide's "Execution role permissions" for Amazon SQS event sources name exactly
 * ReceiveMessage, DeleteMessage and GetQueueAttributes (plus kms:Decrypt on a customer-managed
 * key of the queue, granted as before). Not CDK's SqsEventSource grant, which adds ChangeMessageVisibility and
 * GetQueueUrl: the poller calls neither, and our code receives no message itself.
 */
export const EVENT_SOURCE_QUEUE_ACTIONS: readonly string[] = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

export interface BindTableOptions {
  /** Global secondary indexes the function queries; each is granted by its exact ARN. @default [] */
  readonly indexes?: readonly string[];
}

export interface BindBucketOptions {
  /**
   * Key prefix the function may touch, e.g. `exports/`. The objects' ARN ends in a wildcard
   * (their keys are made at run time), which this acknowledges for cdk-nag with that reason.
   * @default '' (the whole bucket)
   */
  readonly prefix?: string;
}

export interface BindScheduleGroupOptions {
  /** The schedules' names start with it; the grant covers `<group>/<namePrefix>*` and nothing else of the account's schedules. */
  readonly namePrefix: string;
  /** Why that wildcard is as narrow as it can be: cdk-nag's IAM5 finding on it is acknowledged with this. */
  readonly reason: string;
}

/** The variables bindScheduleCreation sets, each to the ARN or name of one resource it grants on. */
export interface ScheduleCreationEnv {
  /** The group's name. */
  readonly group: string;
  /** The target function's ARN. */
  readonly target: string;
  /** The schedules' role ARN. */
  readonly role: string;
  /** The dead-letter queue's ARN. */
  readonly deadLetter: string;
}

export interface ScheduleCreation extends BindScheduleGroupOptions {
  readonly group: IScheduleGroup;
  /** What every schedule invokes. */
  readonly target: IFunction;
  /** The role every schedule runs as: the function may pass it to Scheduler, and only it. */
  readonly role: IRole;
  /** Where Scheduler sends an invocation it could not deliver (each schedule's DeadLetterConfig). */
  readonly deadLetterQueue: IQueue;
  readonly env: ScheduleCreationEnv;
}

export interface ConsumeQueueOptions {
  /** @default 10 */
  readonly batchSize?: number;
  /**
   * Cap on concurrent invocations this queue drives (2 to 1000): how a worker respects the
   * service's rate limit without reserved concurrency's throttling.
   * @default - no cap
   */
  readonly maxConcurrency?: number;
  /** @default - none: invoke as soon as messages arrive */
  readonly maxBatchingWindow?: Duration;
}

const HANDLER_DIR = /^[a-z][a-z0-9]*(-[a-z0-9]+)+$/;
const ENV_NAME = /^[A-Z][A-Z0-9_]*$/;
/** What a log group name admits, less `/`: the stage is one level of the name. */
const LOG_GROUP_LEVEL = /^[A-Za-z0-9_.#-]+$/;

/**
 * The log group of a function: `/acctops/<stage>/<handlerDir>`. Named, not left to CloudFormation,
 * so that runbooks and operators can say where a function logs without looking it up, and
 * `aws logs describe-log-groups --log-group-name-prefix /acctops/<stage>/` lists a stage's. Unique
 * per account and region as the stage is (its secrets, buses and schedule groups are named after
 * it too).
 */
export function functionLogGroupName(stageName: string, handlerDir: string): string {
  return `/acctops/${stageName}/${handlerDir}`;
}

/**
 * Every acctops Lambda function: NodejsFunction on the newest Node runtime, arm64, bundled by the
 * local esbuild (never Docker) with source maps and a metafile, `@aws-sdk/*` left to the runtime,
 * JSON logs into its own log group (`/acctops/<stage>/<handlerDir>`) with a retention, and an
 * execution role that starts with only that log group's write actions.
 *
 * Everything else the function may touch comes through a `bind*` call, which sets the environment
 * variable AND grants exactly the actions of the access level, on that resource only, in one step:
 * a variable without its permission (or the reverse) cannot happen.
 */
export class AcctopsFunction extends NodejsFunction {
  /** The function's own role; bind* add to it. */
  readonly executionRole: Role;
  readonly logs: LogGroup;
  /** `/acctops/<stage>/<handlerDir>` (functionLogGroupName), as a plain string for descriptions and docs. */
  readonly logGroupName: string;
  /** Its directory under `functions/`: the function's name in logs, metrics, alarms and the dashboard. */
  readonly handlerDir: string;
  /** The `reservedConcurrency` prop: a capped function can be throttled, so Monitoring alarms on Throttles. */
  readonly reservedConcurrency?: number;
  private readonly boundEnv = new Set<string>();

  /** The variables bind* set, each in the same call that granted access to what it names. */
  get boundVariables(): ReadonlySet<string> {
    return this.boundEnv;
  }

  constructor(scope: Construct, id: string, props: AcctopsFunctionProps) {
    if (!HANDLER_DIR.test(props.handlerDir)) {
      throw new Error(`handlerDir must be a verb-noun directory name like check-health: "${props.handlerDir}"`);
    }
    const entry = path.join(FUNCTIONS_DIR, props.handlerDir, 'handler.ts');
    if (!existsSync(entry)) throw new Error(`no handler at functions/${props.handlerDir}/handler.ts`);
    for (const name of Object.keys(props.environment ?? {})) {
      if ((RESERVED_ENV as readonly string[]).includes(name)) throw new Error(`${name} is set by AcctopsFunction`);
    }
    if (props.logSampleRate !== undefined && !(props.logSampleRate >= 0 && props.logSampleRate <= 1)) {
      throw new Error(`logSampleRate must be between 0 and 1: ${props.logSampleRate}`);
    }
    if (!LOG_GROUP_LEVEL.test(props.stageName)) {
      throw new Error(`stageName must be letters, digits, _ . # or - (it names the log group): "${props.stageName}"`);
    }
    const logGroupName = functionLogGroupName(props.stageName, props.handlerDir);
    // CloudFormation would only fail at deploy, when the second log group of that name is created.
    const twin = Stack.of(scope)
      .node.findAll()
      .find((c): c is AcctopsFunction => c instanceof AcctopsFunction && c.logGroupName === logGroupName);
    if (twin) throw new Error(`${twin.node.path} already logs to ${logGroupName}: one function per handlerDir and stage`);

    // Siblings, not children: NodejsFunction needs both before `this` exists.
    const logs = new LogGroup(scope, `${id}Logs`, {
      logGroupName,
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    // Our own role instead of CDK's default, which attaches the AWS managed
    // AWSLambdaBasicExecutionRole (logs:CreateLogGroup etc. on every log group: AwsSolutions-IAM4).
    const executionRole = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.handlerDir} (${props.stageName})`,
    });
    logs.grantWrite(executionRole);

    const logLevel = props.logLevel ?? 'info';
    super(scope, id, {
      entry,
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      description: props.description,
      runtime: FUNCTION_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout ?? Duration.seconds(30),
      reservedConcurrentExecutions: props.reservedConcurrency,
      role: executionRole,
      logGroup: logs,
      loggingFormat: LoggingFormat.JSON,
      // Lambda's own filter lets everything through and our logger filters at LOG_LEVEL. Powertools
      // defers to this setting (AWS_LAMBDA_LOG_LEVEL) over its own level and turns its debug
      // sampling off under it, so filtering here would also make POWERTOOLS_LOGGER_SAMPLE_RATE moot.
      applicationLogLevelV2: ApplicationLogLevel.TRACE,
      systemLogLevelV2: SystemLogLevel.INFO,
      tracing: props.tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      environment: {
        ...props.environment,
        ACCTOPS_STAGE: props.stageName,
        ACCTOPS_FUNCTION: props.handlerDir,
        LOG_LEVEL: logLevel,
        POWERTOOLS_SERVICE_NAME,
        ...(props.logSampleRate === undefined ? {} : { POWERTOOLS_LOGGER_SAMPLE_RATE: String(props.logSampleRate) }),
        NODE_OPTIONS: nodeOptions(props.memorySize ?? 256, props.maxSemiSpaceMb, props.maxOldSpaceMb),
      },
      bundling: {
        forceDockerBundling: false,
        format: OutputFormat.CJS,
        // Without esbuild's keepNames: its `__name()` call for every function and class was ~13 KB
        // of export-period's bundle. Our error classes declare their `name` as a string instead
        // (AcctopsError; test/unit/architecture/error-names.test.ts), which is the one name anything reads.
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        // bench/ reads the bundle's composition from index.meta.json next to index.js.
        metafile: true,
        // esbuild's size and timing lines, four per function, drowned a synth's own output (`--quiet`
        // too); the sizes are in BENCHMARKS.md, and warnings and errors still print.
        logLevel: EsbuildLogLevel.WARNING,
        // Provided by the Lambda Node.js runtime; bundling it would only add cold-start bytes.
        externalModules: ['@aws-sdk/*'],
      },
    });
    this.executionRole = executionRole;
    this.logs = logs;
    this.logGroupName = logGroupName;
    this.handlerDir = props.handlerDir;
    this.reservedConcurrency = props.reservedConcurrency;

    if (props.tracing) {
      Validations.of(executionRole).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions.',
      });
    }
  }

  /**
   * Puts the secret's ARN (never its value) in `envName` and grants `access` on that secret, plus
   * its KMS key's matching actions limited to Secrets Manager calls for that very secret.
   */
  bindSecret(secret: ISecret, envName: string, access: SecretAccess): this {
    this.bindEnv(envName, secret.secretArn);
    return this.grantSecret(secret, access);
  }

  /** bindSecret without the variable: for secrets the function finds another way (a list in config). */
  grantSecret(secret: ISecret, access: SecretAccess): this {
    const actions = SECRET_ACTIONS[access];
    this.addToRolePolicy(new PolicyStatement({ actions: actions.secret, resources: [secret.secretArn] }));
    this.grantKey(secret.encryptionKey, actions.key, 'secretsmanager', {
      'kms:EncryptionContext:SecretARN': secret.secretArn,
    });
    return this;
  }

  /**
   * Puts the table's name in `envName` and grants `access` on the table and the named indexes;
   * `queryIndexes` grants the indexes only, not the table.
   */
  bindTable(table: ITable, envName: string, access: TableAccess, options: BindTableOptions = {}): this {
    const indexes = options.indexes ?? [];
    if (!INDEX_ACCESS.includes(access) && indexes.length > 0) {
      throw new Error(`indexes are read-only: use ${INDEX_ACCESS.join(', ')} access`);
    }
    if (access === 'queryIndexes' && indexes.length === 0) throw new Error('queryIndexes access needs the indexes to query');
    this.bindEnv(envName, table.tableName);
    const actions = TABLE_ACTIONS[access];
    const indexArns = indexes.map((name) => `${table.tableArn}/index/${name}`);
    this.addToRolePolicy(
      new PolicyStatement({
        actions: actions.table,
        resources: access === 'queryIndexes' ? indexArns : [table.tableArn, ...indexArns],
      }),
    );
    this.grantKey(table.encryptionKey, actions.key, 'dynamodb');
    return this;
  }

  /** Puts the bucket's name in `envName` and grants `access` on the objects under `prefix`. */
  bindBucket(bucket: IBucket, envName: string, access: BucketAccess, options: BindBucketOptions = {}): this {
    this.bindEnv(envName, bucket.bucketName);
    const prefix = options.prefix ?? '';
    const actions = BUCKET_ACTIONS[access];
    const objects = bucket.arnForObjects(`${prefix}*`);
    this.addToRolePolicy(new PolicyStatement({ actions: actions.objects, resources: [objects] }));
    this.acknowledgeWildcard(
      objects,
      `Object keys under "${prefix}" are created at run time; the grant is limited to that prefix of one bucket.`,
    );
    if (actions.list) {
      this.addToRolePolicy(
        new PolicyStatement({
          actions: ['s3:ListBucket'],
          resources: [bucket.bucketArn],
          ...(prefix ? { conditions: { StringLike: { 's3:prefix': [`${prefix}*`] } } } : {}),
        }),
      );
    }
    this.grantKey(bucket.encryptionKey, actions.key, 's3');
    return this;
  }

  /** Puts the queue's URL in `envName` and grants `access` on it. To be invoked by it, use consumeQueue. */
  bindQueue(queue: IQueue, envName: string, access: QueueAccess): this {
    this.bindEnv(envName, queue.queueUrl);
    const actions = QUEUE_ACTIONS[access];
    this.addToRolePolicy(new PolicyStatement({ actions: actions.queue, resources: [queue.queueArn] }));
    this.grantKey(queue.encryptionMasterKey, actions.key, 'sqs');
    return this;
  }

  /** Puts the bus's name in `envName` and grants events:PutEvents on that bus only. */
  bindEventBus(bus: IEventBus, envName: string): this {
    this.bindEnv(envName, bus.eventBusName);
    this.addToRolePolicy(new PolicyStatement({ actions: ['events:PutEvents'], resources: [bus.eventBusArn] }));
    return this;
  }

  /**
   * Puts the group's name in `envName` and grants `access` on the schedules of that group whose
   * names start with `options.namePrefix`.
   */
  bindScheduleGroup(group: IScheduleGroup, envName: string, access: ScheduleAccess, options: BindScheduleGroupOptions): this {
    this.bindEnv(envName, group.scheduleGroupName);
    const schedules = Stack.of(this).formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${group.scheduleGroupName}/${options.namePrefix}*`,
    });
    this.addToRolePolicy(new PolicyStatement({ actions: SCHEDULE_ACTIONS[access], resources: [schedules] }));
    this.acknowledgeWildcard(schedules, options.reason);
    return this;
  }

  /**
   * For a function that makes one-time schedules at run time (the rotation's key revocations): binds
   * the group (`create` access, bindScheduleGroup) and puts the target's ARN, the role's ARN and the
   * dead-letter queue's ARN in `env`'s variables, granting in the same step what a schedule made
   * with them needs: iam:PassRole of that role, to Scheduler only; to the role, invoking the target
   * and sending to the queue (and the queue's key through SQS, if it has one), nothing else. The
   * variables are what the function puts in each schedule, so none can name a resource the schedule
   * could not use.
   */
  bindScheduleCreation(creation: ScheduleCreation): this {
    const { env, role, target, deadLetterQueue } = creation;
    this.bindScheduleGroup(creation.group, env.group, 'create', creation);
    this.bindEnv(env.target, target.functionArn);
    this.bindEnv(env.role, role.roleArn);
    this.bindEnv(env.deadLetter, deadLetterQueue.queueArn);
    this.addToRolePolicy(
      new PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [role.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [target.functionArn] }));
    role.addToPrincipalPolicy(new PolicyStatement({ actions: QUEUE_ACTIONS.send.queue, resources: [deadLetterQueue.queueArn] }));
    const queueKey = deadLetterQueue.encryptionMasterKey;
    if (queueKey) {
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: QUEUE_ACTIONS.send.key,
          resources: [queueKey.keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `sqs.${Stack.of(this).region}.amazonaws.com` } },
        }),
      );
    }
    return this;
  }

  /**
   * Makes the queue invoke this function in batches, with partial batch responses on (the handler
   * returns `{ batchItemFailures }`), and grants the poller exactly EVENT_SOURCE_QUEUE_ACTIONS on
   * that queue. The mapping is made as SqsEventSource makes it (same id, so the same logical id),
   * without that class's broader grant.
   */
  consumeQueue(queue: IQueue, options: ConsumeQueueOptions = {}): this {
    const batchSize = options.batchSize ?? 10;
    if (options.maxBatchingWindow === undefined && (batchSize < 1 || batchSize > 10)) {
      throw new Error(`batchSize must be 1 to 10 without a batching window: ${batchSize}`);
    }
    this.addEventSourceMapping(`SqsEventSource:${Names.nodeUniqueId(queue.node)}`, {
      eventSourceArn: queue.queueArn,
      batchSize,
      maxConcurrency: options.maxConcurrency,
      maxBatchingWindow: options.maxBatchingWindow,
      reportBatchItemFailures: true,
    });
    this.addToRolePolicy(new PolicyStatement({ actions: [...EVENT_SOURCE_QUEUE_ACTIONS], resources: [queue.queueArn] }));
    // The poller's ReceiveMessage decrypts through SQS, so its Decrypt is held to SQS
    // (kms:ViaService), like every bind* grant: SqsEventSource's own grant has no condition, and a
    // stage's kmsKeyArn may encrypt far more than this queue.
    this.grantKey(queue.encryptionMasterKey, ['kms:Decrypt'], 'sqs');
    return this;
  }

  private bindEnv(name: string, value: string): void {
    if (!ENV_NAME.test(name)) throw new Error(`environment variable names are UPPER_SNAKE_CASE: "${name}"`);
    if ((RESERVED_ENV as readonly string[]).includes(name) || this.boundEnv.has(name)) {
      throw new Error(`${this.node.path}: environment variable ${name} is already bound`);
    }
    this.boundEnv.add(name);
    this.addEnvironment(name, value);
  }

  /** A customer-managed key is used only through the service that owns the data (kms:ViaService). */
  private grantKey(key: IKey | undefined, actions: string[], service: string, context: Record<string, string> = {}): void {
    if (!key || actions.length === 0) return;
    this.addToRolePolicy(
      new PolicyStatement({
        actions,
        resources: [key.keyArn],
        conditions: {
          StringEquals: { 'kms:ViaService': `${service}.${Stack.of(this).region}.amazonaws.com`, ...context },
        },
      }),
    );
  }

  /** Acknowledges cdk-nag's IAM5 finding for exactly this resource, under the finding's own name. */
  private acknowledgeWildcard(resource: string, reason: string): void {
    const finding = flattenCfnReference(Stack.of(this).resolve(resource));
    if (!finding.includes('*')) return;
    Validations.of(this.executionRole).acknowledge({ id: `AwsSolutions-IAM5[Resource::${finding}]`, reason });
  }
}
