import { Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { Alarm, IAlarmAction } from 'aws-cdk-lib/aws-cloudwatch';
import { BillingMode, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { FunctionUrlAuthType, type FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { ALARMED_METRICS } from '../../../contract/metrics';
import { REPLAY_TABLE } from '../../../contract/tables';
import type { StageConfig } from '../../config/stage';
import { AcctopsFunction, type AcctopsFunctionDefaults } from '../acctops-function';
import { acctopsAlarm, acctopsMetric } from '../alarms';
import { Grouping } from '../grouping';
import { attribute } from '../table-keys';

export interface ExportWebhookProps {
  readonly stage: StageConfig;
  readonly functionDefaults: AcctopsFunctionDefaults & { readonly environment: Readonly<Record<string, string>> };
  /** Encrypts the replay table (the exports key). */
  readonly key: IKey;
  /** Encrypts the webhook secret, like every acctops secret. */
  readonly secretsKey: IKey;
  /** Where accepted requests become export jobs. */
  readonly queue: IQueue;
  /** Of the replay table and the secret. */
  readonly removalPolicy: RemovalPolicy;
  readonly alarmAction: IAlarmAction;
  /** Tenant isolation: the webhook gets the requested company's item (GetItem only) at run time. */
  readonly companyRegistryTable: ITable;
}

/**
 * The signed export webhook (docs/exports.md, "Webhook"): a Function URL without IAM auth whose
 * function checks the HMAC signature before anything else, claims the event id in the replay
 * table, looks the company up in the registry and enqueues export jobs; its shared secret; the alarms on its refusals and outages. The
 * webhook reads only its own secret.
 */
export class ExportWebhook extends Grouping {
  readonly replayTable: Table;
  readonly secret: Secret;
  readonly function: AcctopsFunction;
  readonly url: FunctionUrl;
  readonly alarms: { webhookUnavailable: Alarm; webhookRejected: Alarm };

  constructor(scope: Construct, id: string, props: ExportWebhookProps) {
    super(scope, id);
    const { stage, functionDefaults: base } = props;

    this.replayTable = new Table(this, 'WebhookReplay', {
      partitionKey: attribute(REPLAY_TABLE.partitionKey),
      timeToLiveAttribute: REPLAY_TABLE.timeToLiveAttribute,
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: props.key,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: stage.retainData,
      removalPolicy: props.removalPolicy,
    });

    this.secret = new Secret(this, 'WebhookSecret', {
      secretName: `acctops/${stage.name}/export-webhook`,
      description:
        'Shared secret of the export webhook (HMAC-SHA256). Give it to the sender; change it with the runbook "Change the export webhook secret".',
      encryptionKey: props.secretsKey,
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The webhook secret is shared with an outside sender, so it changes when the sender is ready: the runbook "Change the export webhook secret" puts a new version, ' +
        'the webhook accepts AWSCURRENT and AWSPREVIOUS meanwhile, then the sender switches. An automatic rotation would break the sender.',
    });

    this.function = new AcctopsFunction(this, 'Webhook', {
      ...base,
      handlerDir: 'receive-export-webhook',
      description: 'The signed export webhook (Function URL): checks, then enqueues export jobs',
      timeout: Duration.seconds(10),
      // A cap, so that a flood at the public URL throttles the webhook and not the account's other
      // functions; a stage whose account cannot reserve any sets null (exports.webhookReservedConcurrency).
      reservedConcurrency: stage.exports.webhookReservedConcurrency ?? undefined,
      environment: {
        ...base.environment,
        SECRET_CACHE_TTL_SECONDS: String(stage.secretCacheTtlSeconds),
        // Which month is the current one: a later one is refused before anything is queued.
        EXPORT_TIME_ZONE: stage.schedules.timeZone,
      },
    })
      .bindSecret(this.secret, 'WEBHOOK_SECRET_ARN', 'read')
      .bindTable(this.replayTable, 'WEBHOOK_REPLAY_TABLE_NAME', 'claims')
      // Tenant isolation from the registry at run time: GetItem only, no list in the template.
      .bindTable(props.companyRegistryTable, 'COMPANY_REGISTRY_TABLE_NAME', 'getItem')
      .bindQueue(props.queue, 'EXPORT_QUEUE_URL', 'send');
    // No IAM auth: the sender is outside AWS, and the HMAC signature over timestamp and body is the
    // authentication (checked before anything else happens; docs/exports.md, "Webhook").
    this.url = this.function.addFunctionUrl({ authType: FunctionUrlAuthType.NONE });

    const logs = this.function.logGroupName;
    this.alarms = {
      webhookUnavailable: acctopsAlarm(this, 'WebhookUnavailableAlarm', {
        action: props.alarmAction,
        description: `The export webhook answered 503 (its secret, replay table or queue failed): the sender must retry. ${logs} names the dependency.`,
        metric: acctopsMetric(stage.name, ALARMED_METRICS.webhookUnavailable, { statistic: 'Sum', period: Duration.minutes(5) }),
      }),
      webhookRejected: acctopsAlarm(this, 'WebhookRejectedAlarm', {
        action: props.alarmAction,
        description:
          'The export webhook refused a signed request (bad or stale signature, unknown company, malformed body, a month not begun): a sender whose exports silently do not happen, ' +
          `often after a change of the webhook secret (runbook "Change the export webhook secret"). Unsigned requests and replays of accepted events are not counted (WebhookUnsigned, WebhookReplayed). ` +
          `Its "webhook refused" line with "metric":"WebhookRejected" in ${logs} names the reason, the source IP and the user agent.`,
        metric: acctopsMetric(stage.name, ALARMED_METRICS.webhookRejected, { statistic: 'Sum', period: Duration.hours(1) }),
      }),
    };
  }
}
