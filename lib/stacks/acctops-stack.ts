import { ArnFormat, CfnOutput, RemovalPolicy, Stack, Token, Validations, type CfnElement, type StackProps } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Construct } from 'constructs';
import { TOKEN_TABLE } from '../../contract/tables';
import type { StageConfig } from '../config/stage';
import { AcctopsFunction, type AcctopsFunctionDefaults } from '../constructs/acctops-function';
import { CompanyRegistry } from '../constructs/company-registry';
import { Exports } from '../constructs/exports/exports';
import { FailedInvocations } from '../constructs/failed-invocations';
import { logicalIdOutsideGroupings } from '../constructs/grouping';
import { KeyRotation } from '../constructs/key-rotation';
import { RotationFanout } from '../constructs/rotation-fanout';
import { Monitoring } from '../constructs/monitoring';
import { warnAboutStage } from '../constructs/stage-checks';
import { allowOnOwnKey, stageKey } from '../constructs/stage-key';
import { TokenLifecycle } from '../constructs/token-lifecycle';

/**
 * The services that call KMS with the stack's keys on its principals' behalf: Secrets Manager
 * (secrets), DynamoDB (tables), SQS (queues), S3 (the exports bucket), SNS (the alarm topic).
 */
export const KMS_VIA_SERVICES = ['secretsmanager', 'dynamodb', 'sqs', 's3', 'sns'] as const;

export interface AcctopsStackProps extends StackProps {
  /** The validated stage settings (lib/config/stage.ts). */
  readonly stage: StageConfig;
}

/** The stack's name for a stage; the CLI finds a deployment's outputs by it. */
export function stackName(stage: string): string {
  return `acctops-${stage}`;
}

/**
 * Everything acctops deploys for one stage. Capabilities (token refresh, key rotation, exports,
 * monitoring) are constructs added here; each gets `functionDefaults`, `secretsKey` and
 * `alarmTopic` from this stack rather than making its own. Monitoring comes last: it walks the
 * stack for its functions and alarms.
 *
 * Outputs (`aws cloudformation describe-stacks --stack-name acctops-<stage>`):
 * - InstitutionSecretArn: where the institution credential lives (runbook "Change the institution secret").
 * - SecretsKeyArn: the customer-managed key of every acctops secret (the stage's `kmsKeyArn` when it names one).
 * - KmsKeyViaServices: with `kmsKeyArn` only, the services whose calls its key policy must admit (kms:ViaService).
 * - AlarmTopicArn: the SNS topic every alarm notifies.
 * - CheckHealthFunctionName: the function `acctops doctor` invokes.
 * - ServiceBaseUrl: the stage's `baseUrl`; the CLI's AWS mode calls the service there.
 * - DashboardName (Monitoring): the CloudWatch dashboard of every alarm.
 */
export class AcctopsStack extends Stack {
  readonly stage: StageConfig;
  /** Spread into every AcctopsFunction's props: stage name, log retention and level, removal. */
  readonly functionDefaults: AcctopsFunctionDefaults;
  /** Removal policy of stateful resources, from the stage's `retainData`. */
  readonly dataRemovalPolicy: RemovalPolicy;
  /** Encrypts the institution credential and the company API-key secrets: its own key, or the stage's `kmsKeyArn`. */
  readonly secretsKey: IKey;
  /** `<institution_id>:<secret_key>`; functions receive its ARN through bindSecret, never its value. */
  readonly institutionSecret: Secret;
  /** Every alarm of the stack notifies this topic. */
  readonly alarmTopic: Topic;
  readonly checkHealth: AcctopsFunction;
  readonly tokens: TokenLifecycle;
  /** Company API-key secrets, their rotation, revocation and doctor. */
  readonly keyRotation: KeyRotation;
  readonly exports: Exports;
  /** The company registry table (issue 15): which companies the stage exports, changed at run time. */
  readonly companies: CompanyRegistry;
  /** The rotation doctor's sweep of the registry and its queue of due companies (issue 15). */
  readonly rotationFanout: RotationFanout;
  /** Every function's alarms, the health schedule, OK notifications and the dashboard. */
  readonly monitoring: Monitoring;
  readonly failedInvocations: FailedInvocations;

  constructor(scope: Construct, id: string, props: AcctopsStackProps) {
    super(scope, id, {
      description: `acctops (${props.stage.name}): credential custody, token refresh, API-key rotation and exports for the Accounting API`,
      ...props,
    });
    const { stage } = props;
    this.stage = stage;
    warnAboutStage(this, stage);
    this.dataRemovalPolicy = stage.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.functionDefaults = {
      stageName: stage.name,
      // The stage schema only admits values CloudWatch Logs accepts, which are RetentionDays' values.
      logRetention: stage.logRetentionDays as RetentionDays,
      logLevel: stage.logLevel,
      logRemovalPolicy: this.dataRemovalPolicy,
    };

    this.secretsKey = stageKey(this, 'SecretsKey', stage, {
      description: `acctops ${stage.name}: encrypts the institution credential and company API keys`,
      alias: `alias/acctops/${stage.name}/secrets`,
      enableKeyRotation: true,
      removalPolicy: this.dataRemovalPolicy,
    });

    this.institutionSecret = new Secret(this, 'InstitutionCredential', {
      secretName: `acctops/${stage.name}/institution-credential`,
      description:
        'The institution credential, <institution_id>:<secret_key>. Created with a random placeholder; ' +
        'set the real value with the runbook "Change the institution secret".',
      encryptionKey: this.secretsKey,
      removalPolicy: this.dataRemovalPolicy,
    });
    Validations.of(this.institutionSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The service owner issues the institution secret; Secrets Manager cannot mint a new one. ' +
        'It changes by the runbook "Change the institution secret", which readers pick up after an authentication error.',
    });

    this.alarmTopic = this.createAlarmTopic();

    this.checkHealth = new AcctopsFunction(this, 'CheckHealth', {
      ...this.functionDefaults,
      handlerDir: 'check-health',
      description: 'Checks that the institution credential is readable and the Accounting API answers',
      environment: { ACCTOPS_BASE_URL: stage.baseUrl },
    }).bindSecret(this.institutionSecret, 'INSTITUTION_SECRET_ARN', 'read');

    this.tokens = new TokenLifecycle(this, 'Tokens', {
      stage,
      functionDefaults: this.functionDefaults,
      institutionSecret: this.institutionSecret,
      alarmTopic: this.alarmTopic,
      removalPolicy: this.dataRemovalPolicy,
    });

    this.keyRotation = new KeyRotation(this, 'KeyRotation', {
      stage,
      functionDefaults: this.functionDefaults,
      secretsKey: this.secretsKey,
      alarmTopic: this.alarmTopic,
      removalPolicy: this.dataRemovalPolicy,
    });

    // Seeded companies get the Exports construct's default formats; `acctops companies add --formats` changes them.
    this.companies = new CompanyRegistry(this, 'Companies', {
      stage,
      seedFormats: ['jsonl', 'csv', 'parquet'],
      removalPolicy: this.dataRemovalPolicy,
    });
    this.keyRotation.bindCompanyRegistry(this.companies.table);

    this.exports = new Exports(this, 'Exports', {
      stage,
      functionDefaults: this.functionDefaults,
      alarmTopic: this.alarmTopic,
      removalPolicy: this.dataRemovalPolicy,
      secretsKey: this.secretsKey,
      tokenTable: this.tokens.table,
      tokenDueIndexName: TOKEN_TABLE.dueIndex.name,
      companyKeys: this.keyRotation,
      companyRegistryTable: this.companies.table,
    });

    this.rotationFanout = new RotationFanout(this, 'RotationFanout', {
      stage,
      keyRotation: this.keyRotation,
      companyRegistryTable: this.companies.table,
      alarmTopic: this.alarmTopic,
      removalPolicy: this.dataRemovalPolicy,
    });

    // Before Monitoring, which puts every alarm of the stack on its dashboard.
    this.failedInvocations = new FailedInvocations(this, 'FailedInvocations', { alarmAction: new SnsAction(this.alarmTopic) });

    this.monitoring = new Monitoring(this, 'Monitoring', {
      stageName: stage.name,
      alarmTopic: this.alarmTopic,
      opsTopicArn: stage.opsTopicArn,
      checkHealth: this.checkHealth,
      rows: [
        { title: 'Tokens', scope: this.tokens },
        { title: 'API-key rotation', scope: this.keyRotation },
        { title: 'Rotation fan-out', scope: this.rotationFanout },
        { title: 'Exports', scope: this.exports },
        { title: 'Failed invocations', scope: this.failedInvocations },
      ],
    });
    // Every schedule (Monitoring's health schedule included) and every function they or an event
    // rule (ExportRequested -> request-export) invoke; the revocation schedules exist only at run
    // time: their role and target are covered by name.
    this.failedInvocations.coverSchedules(this);
    this.failedInvocations.coverEventRules(this);
    this.keyRotation.bindRevocationScheduler(this.failedInvocations.queue);
    this.failedInvocations.coverAsyncInvocations(this.keyRotation.revokeFunction);

    new CfnOutput(this, 'InstitutionSecretArn', {
      value: this.institutionSecret.secretArn,
      description: 'Secret holding the institution credential (set it with the runbook "Change the institution secret")',
    });
    new CfnOutput(this, 'SecretsKeyArn', {
      value: this.secretsKey.keyArn,
      description: 'KMS key encrypting every acctops secret',
    });
    if (stage.kmsKeyArn !== undefined) {
      // What the supplied key's owner must admit, resolved for this deployment's region
      // (docs/infrastructure.md, "Bring your own key").
      new CfnOutput(this, 'KmsKeyViaServices', {
        value: KMS_VIA_SERVICES.map((service) => `${service}.${this.region}.amazonaws.com`).join(','),
        // A literal: CloudFormation refuses an output description that is not one ("Template format
        // error"), and an environment-agnostic stack's account is a token until deploy time.
        description: `kms:ViaService values the key policy of ${stage.kmsKeyArn} must allow for ${
          Token.isUnresolved(this.account) ? "this stack's account" : `account ${this.account}`
        }`,
      });
    }
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.alarmTopic.topicArn,
      description: 'SNS topic notified by every acctops alarm',
    });
    new CfnOutput(this, 'CheckHealthFunctionName', {
      value: this.checkHealth.functionName,
      description: 'Function invoked by `acctops doctor` to check the deployment',
    });
    new CfnOutput(this, 'ServiceBaseUrl', {
      value: stage.baseUrl,
      description: 'The Accounting API base URL of this stage; `acctops keys status|install|rotate --revoke-previous-now` call it',
    });
  }

  /** Groupings (lib/constructs/grouping.ts) are not part of a logical id: see Grouping. */
  protected override allocateLogicalId(element: CfnElement): string {
    return logicalIdOutsideGroupings(this, element) ?? super.allocateLogicalId(element);
  }

  private createAlarmTopic(): Topic {
    // A key of its own: CloudWatch must be allowed to use it, which the secrets key must never allow.
    // A supplied key (kmsKeyArn) serves here too, its owner then admitting CloudWatch (decision 84).
    const key = stageKey(this, 'AlarmTopicKey', this.stage, {
      description: `acctops ${this.stage.name}: encrypts the alarm topic`,
      enableKeyRotation: true,
      removalPolicy: this.dataRemovalPolicy,
    });
    // CloudWatch alarms publish to an encrypted topic only if they may use its key (SNS docs,
    // "Enable compatibility between event sources and encrypted topics",
    // https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services);
    // only for this account's alarms in this region, so that no other account's alarm can have
    // CloudWatch use it (confused deputy).
    const fromOurAlarms = {
      StringEquals: { 'aws:SourceAccount': this.account },
      ArnLike: {
        'aws:SourceArn': this.formatArn({
          service: 'cloudwatch',
          resource: 'alarm',
          resourceName: '*',
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      },
    };
    allowOnOwnKey(
      key,
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: fromOurAlarms,
      }),
    );
    const topic = new Topic(this, 'AlarmTopic', {
      displayName: `acctops ${this.stage.name} alarms`,
      masterKey: key,
      enforceSSL: true,
    });
    // A topic policy from CloudFormation replaces SNS's default one, under which the account's own
    // alarms could publish: without this statement only enforceSSL's deny is left, and no alarm
    // notification would be delivered. The SNS example "Allow CloudWatch alarms to
    // publish to a topic" (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html)
    // names the same principal and conditions.
    topic.addToResourcePolicy(
      new PolicyStatement({
        sid: 'AllowPublishFromOurAlarms',
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: fromOurAlarms,
      }),
    );
    for (const email of this.stage.alarmEmails) topic.addSubscription(new EmailSubscription(email));
    return topic;
  }
}
