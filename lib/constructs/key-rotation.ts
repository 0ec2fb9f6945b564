import { ArnFormat, CfnOutput, Duration, type RemovalPolicy, Stack, Tags, Validations } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { EventBus, type IEventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type IKey, Key } from 'aws-cdk-lib/aws-kms';
import { CfnPermission } from 'aws-cdk-lib/aws-lambda';
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleGroup,
  ScheduleTargetInput,
  type IScheduleTarget,
} from 'aws-cdk-lib/aws-scheduler';
import { CfnRotationSchedule, type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import { Construct } from 'constructs';
import { ALARMED_METRICS } from '../../contract/metrics';
import { AWS_MANAGED_SECRETS_KEY, type StageConfig } from '../config/stage';
import { AcctopsFunction, type AcctopsFunctionDefaults } from './acctops-function';
import { acctopsAlarm, acctopsMetric } from './alarms';
import { ROTATION_LATE_FINISH_MS } from '../../contract/key-rotation';

/**
 * The rotation function's timeout. A finishSecret still running when the doctor gives its rotation
 * up must end within the doctor's late-finish window, or its key could be revoked under it.
 */
const ROTATE_FUNCTION_TIMEOUT = Duration.minutes(2);
if (ROTATE_FUNCTION_TIMEOUT.toMilliseconds() >= ROTATION_LATE_FINISH_MS) {
  throw new Error("the rotation function must time out before the rotation doctor's late-finish window ends (contract/key-rotation.ts)");
}

/**
 * Tags by which the functions and the CLI find the company key secrets (COMPANY_KEY_TAGS in
 * src/core/api-keys/key-directory.ts; lib may not import src, test/infra/key-rotation.test.ts
 * keeps the two equal).
 */
export const COMPANY_KEY_TAGS = { purpose: 'acctops:purpose', company: 'acctops:company', stage: 'acctops:stage' } as const;
export const PURPOSE_COMPANY_KEY = 'company-api-key';

/** What the rotation function does to a company key secret (Secrets Manager's four steps). */
const ROTATE_ACTIONS = [
  'secretsmanager:DescribeSecret',
  'secretsmanager:GetSecretValue',
  'secretsmanager:PutSecretValue',
  'secretsmanager:UpdateSecretVersionStage',
];
/** The doctor: DescribeSecret to choose (the sweep), then the full check of the due ones and its one repair (a stuck AWSPENDING label). */
const DOCTOR_ACTIONS = [
  'secretsmanager:DescribeSecret',
  'secretsmanager:GetSecretValue',
  'secretsmanager:ListSecretVersionIds',
  'secretsmanager:UpdateSecretVersionStage',
];

/** Revocation schedules are named `<prefix><apiKeyId>` (EventBridgeRevocationScheduler's default). */
export const REVOCATION_SCHEDULE_PREFIX = 'revoke-';

export interface KeyRotationProps {
  readonly stage: StageConfig;
  readonly functionDefaults: AcctopsFunctionDefaults;
  /** Encrypts the secrets this construct creates. */
  readonly secretsKey: IKey;
  readonly alarmTopic: ITopic;
  /** Of the secrets this construct creates. */
  readonly removalPolicy: RemovalPolicy;
  /**
   * Where the doctor's ApiKeyRotationFinding events go (source `acctops.api-keys`).
   * @default the account's default event bus
   */
  readonly eventBus?: IEventBus;
  /**
   * How often the rotation doctor runs.
   * @default 'rate(1 hour)'
   */
  readonly doctorSchedule?: string;
}

/**
 * Rotation of the company API keys (docs/key-rotation.md):
 * - one secret per company of the stage, created here (encrypted with the stack's key, tagged) or
 *   imported by its complete ARN (the runbook "Install a company API key" tags it), each with a
 *   RotationSchedule (every `apiKeys.rotationDays`, 30 by default) that invokes `rotate-api-key`;
 * - `revoke-api-key`, invoked by the one-time EventBridge Scheduler schedules that finishSecret
 *   creates in the revocation schedule group;
 * - `check-key-rotations`, the doctor, on a schedule;
 * - alarms to the stack's topic: rotation and revocation failures, doctor failures and findings.
 *
 * A deploy never rotates a key by itself (`RotateImmediatelyOnUpdate: false`): a created secret
 * holds a placeholder until the runbook "Install a company API key" puts the real key in it.
 */
export class KeyRotation extends Construct {
  /** By company id (lowercase). */
  readonly secrets: ReadonlyMap<string, ISecret>;
  readonly rotateFunction: AcctopsFunction;
  readonly revokeFunction: AcctopsFunction;
  readonly doctorFunction: AcctopsFunction;
  readonly revocationGroup: ScheduleGroup;
  /** The role the revocation schedules run as; the rotation function may pass it, and only it. */
  readonly revocationSchedulerRole: Role;
  readonly doctorScheduleRule: Schedule;
  /**
   * The ARN pattern of this stage's company key secrets (`acctops/<stage>/company/*`): with the
   * stage and purpose tag conditions, what every function's company-key statement is scoped to.
   */
  readonly companySecretsArnPattern: string;
  /**
   * The permission that lets Secrets Manager invoke the rotation function for this stage's company
   * secrets (SourceArn `acctops/<stage>/company/*`, this account); each imported secret has its own.
   */
  readonly rotationInvokePermission: CfnPermission;
  private readonly stageName: string;
  private readonly secretsKey: IKey;
  private revocationBound = false;
  readonly alarms: { rotationFailures: Alarm; revocationFailures: Alarm; doctorFailures: Alarm; doctorFindings: Alarm };

  constructor(scope: Construct, id: string, props: KeyRotationProps) {
    super(scope, id);
    const { stage, functionDefaults } = props;
    const stack = Stack.of(this);
    this.stageName = stage.name;
    this.secretsKey = props.secretsKey;
    this.companySecretsArnPattern = stack.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `acctops/${stage.name}/company/*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });

    this.secrets = new Map(stage.companies.map((company, i) => [company.companyId.toLowerCase(), this.companySecret(i, company, props)]));

    const paths: Record<string, string> = {};
    if (stage.apiKeys.paths?.list) paths.API_KEY_PATH_LIST = stage.apiKeys.paths.list;
    if (stage.apiKeys.paths?.create) paths.API_KEY_PATH_CREATE = stage.apiKeys.paths.create;
    if (stage.apiKeys.paths?.revoke) paths.API_KEY_PATH_REVOKE = stage.apiKeys.paths.revoke;
    const api = {
      ACCTOPS_BASE_URL: stage.baseUrl,
      REVOCATION_GRACE_SECONDS: String(stage.apiKeys.revocationGraceMinutes * 60),
      SECRET_CACHE_TTL_SECONDS: String(stage.secretCacheTtlSeconds),
      ...paths,
    };

    this.revocationGroup = new ScheduleGroup(this, 'RevocationGroup', { scheduleGroupName: `acctops-${stage.name}-key-revocations` });
    const groupName = this.revocationGroup.scheduleGroupName;
    const revocationSchedules = stack.formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${groupName}/${REVOCATION_SCHEDULE_PREFIX}*`,
    });

    this.revokeFunction = new AcctopsFunction(this, 'RevokeApiKey', {
      ...functionDefaults,
      handlerDir: 'revoke-api-key',
      description: 'Revokes a rotated-out company API key once its grace period is over (one-time EventBridge Scheduler schedule)',
      timeout: Duration.minutes(1),
      environment: api,
    });

    this.revocationSchedulerRole = new Role(this, 'RevocationSchedulerRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: { 'aws:SourceArn': revocationSchedules },
        },
      }),
      description: 'Lets the key revocation schedules invoke revoke-api-key, and nothing else',
    });

    // The revocation wiring (group, target, role, dead-letter queue) is bound in one call,
    // bindRevocationScheduler, once the stack's FailedInvocations queue exists.
    this.rotateFunction = new AcctopsFunction(this, 'RotateApiKey', {
      ...functionDefaults,
      handlerDir: 'rotate-api-key',
      description: 'Secrets Manager rotation function of the company API keys (createSecret, setSecret, testSecret, finishSecret)',
      // A step is a few calls to the service, each bounded to 10 s and 3 attempts, plus the rollback.
      timeout: ROTATE_FUNCTION_TIMEOUT,
      environment: api,
    });
    this.node.addValidation({
      validate: () =>
        this.revocationBound
          ? []
          : [
              `${this.node.path}: call bindRevocationScheduler(deadLetterQueue); without it rotate-api-key has no revocation group, target, role or dead-letter queue and fails at cold start`,
            ],
    });

    this.doctorFunction = new AcctopsFunction(this, 'CheckKeyRotations', {
      ...functionDefaults,
      handlerDir: 'check-key-rotations',
      description: 'The rotation doctor: repairs stuck AWSPENDING labels and orphan keys, reports expiring keys and overdue rotations',
      timeout: Duration.minutes(5),
      environment: api,
    })
      .bindEventBus(props.eventBus ?? EventBus.fromEventBusName(this, 'DefaultBus', 'default'), 'KEY_EVENT_BUS_NAME')
      .bindScheduleGroup(this.revocationGroup, 'REVOCATION_SCHEDULE_GROUP', 'read', {
        namePrefix: REVOCATION_SCHEDULE_PREFIX,
        reason: "The doctor reads the pending revocations: only the revoke- schedules of this stage's revocation group.",
      });
    // Neither list operation supports resource-level permissions.
    this.doctorFunction.addToRolePolicy(
      new PolicyStatement({ actions: ['secretsmanager:ListSecrets', 'scheduler:ListSchedules'], resources: ['*'] }),
    );
    acknowledge(
      this.doctorFunction,
      'Resource::*',
      'secretsmanager:ListSecrets and scheduler:ListSchedules support no resource-level permissions; they return names and tags, never a secret value.',
    );

    // Company secrets created at run time (`acctops keys install`) are reached by their tags, not
    // by ARN: one statement per function, whatever the number of companies (docs/fleet-rotation.md).
    this.grantCompanyKeysByTag(this.rotateFunction, ROTATE_ACTIONS, ['kms:Decrypt', 'kms:GenerateDataKey']);
    this.grantCompanyKeysByTag(this.revokeFunction, ['secretsmanager:GetSecretValue'], ['kms:Decrypt']);
    this.grantCompanyKeysByTag(this.doctorFunction, DOCTOR_ACTIONS, ['kms:Decrypt']);

    // Secrets Manager invokes a rotation function with the secret's ARN as aws:SourceArn, and Lambda
    // compares a permission's SourceArn with StringLike (AddPermission): one permission covers every
    // company secret of this stage, those `acctops keys install` creates at run time included, and
    // Secrets Manager may invoke the function for no other secret. Imported secrets, named
    // otherwise, get one permission each (attachRotation).
    this.rotationInvokePermission = new CfnPermission(this, 'RotationInvoke', {
      action: 'lambda:InvokeFunction',
      functionName: this.rotateFunction.functionArn,
      principal: 'secretsmanager.amazonaws.com',
      sourceAccount: stack.account,
      sourceArn: this.companySecretsArnPattern,
    });
    for (const [companyId, secret] of this.secrets) this.attachRotation(companyId, secret, stage.apiKeys.rotationDays);

    this.doctorScheduleRule = new Schedule(this, 'DoctorSchedule', {
      description: `acctops ${stage.name}: runs the API-key rotation doctor`,
      schedule: ScheduleExpression.expression(props.doctorSchedule ?? 'rate(1 hour)'),
      target: this.doctorTarget(),
    });

    const action = new SnsAction(props.alarmTopic);
    this.alarms = {
      rotationFailures: acctopsAlarm(this, 'RotationFailuresAlarm', {
        action,
        description: `A rotation step of a company API key failed; the rotation was rolled back and AWSCURRENT still works. ${this.rotateFunction.logGroupName} names the step. Runbook: "A key rotation failed".`,
        metric: this.rotateFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      }),
      revocationFailures: acctopsAlarm(this, 'RevocationFailuresAlarm', {
        action,
        description:
          'Revoking a rotated-out API key failed; the old key still works. The rotation doctor revokes it within the hour (revocation_overdue); `acctops doctor --repair` does it now.',
        metric: this.revokeFunction.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      }),
      doctorFailures: acctopsAlarm(this, 'DoctorFailuresAlarm', {
        action,
        description: `The rotation doctor failed: stuck rotations and orphan keys are not being repaired. \`acctops doctor\` invokes it and shows the error; its logs: ${this.doctorFunction.logGroupName}.`,
        metric: this.doctorFunction.metricErrors({ period: Duration.hours(1), statistic: 'Sum' }),
      }),
      doctorFindings: acctopsAlarm(this, 'DoctorFindingsAlarm', {
        action,
        description:
          'The rotation doctor found what it may not repair: a key close to expiry, an overdue or disabled rotation, a company it cannot check. ' +
          '`acctops doctor` lists them. Runbook: "The rotation doctor reports findings".',
        metric: acctopsMetric(stage.name, ALARMED_METRICS.unrepairedRotationFindings, { statistic: 'Maximum', period: Duration.hours(1) }),
      }),
    };

    new CfnOutput(stack, 'CheckKeyRotationsFunctionName', {
      value: this.doctorFunction.functionName,
      description: 'The rotation doctor, invoked by `acctops doctor` with {} or { "repair": false }',
    });
    new CfnOutput(stack, 'RotateApiKeyFunctionArn', {
      value: this.rotateFunction.functionArn,
      description: 'The rotation function `acctops keys install` turns on for a company key secret created at run time',
    });
    new CfnOutput(stack, 'CompanyKeyRotationDays', {
      value: String(stage.apiKeys.rotationDays),
      description: 'Days between rotations of a company key whose registry entry names none (`acctops keys install`)',
    });
    new CfnOutput(stack, 'KeyRevocationScheduleGroup', {
      value: groupName,
      description: 'Schedule group of the pending API-key revocations (`acctops keys status`)',
    });
  }

  /**
   * The rotation function's revocation schedules, in one bind call: the variables it puts in each
   * schedule (REVOCATION_SCHEDULE_GROUP, REVOKE_FUNCTION_ARN, REVOCATION_SCHEDULER_ROLE_ARN,
   * REVOCATION_DEAD_LETTER_ARN) and what those schedules need: creating them in the group (the
   * `revoke-` names only), passing the scheduler role, and the role's invoking revoke-api-key and
   * dead-lettering to `deadLetterQueue` (the stack's FailedInvocations queue). Synth fails without it.
   */
  bindRevocationScheduler(deadLetterQueue: IQueue): void {
    if (this.revocationBound) throw new Error(`${this.node.path}: the revocation scheduler is already bound`);
    this.revocationBound = true;
    this.rotateFunction.bindScheduleCreation({
      group: this.revocationGroup,
      namePrefix: REVOCATION_SCHEDULE_PREFIX,
      reason:
        "Revocation schedules are named after the key they revoke, at run time; the grant covers only the revoke- schedules of this stage's revocation group.",
      target: this.revokeFunction,
      role: this.revocationSchedulerRole,
      deadLetterQueue,
      env: {
        group: 'REVOCATION_SCHEDULE_GROUP',
        target: 'REVOKE_FUNCTION_ARN',
        role: 'REVOCATION_SCHEDULER_ROLE_ARN',
        deadLetter: 'REVOCATION_DEAD_LETTER_ARN',
      },
    });
  }

  /**
   * Lets the rotation function read a company's entry in the company registry: one GetItem by key
   * (and the registry's key through DynamoDB), no scan, no write. createSecret asks it whether the
   * company was removed (`acctops companies remove`) and then refuses to create a key: a secret the
   * stack imports keeps its RotationSchedule after the removal, and a deploy may turn it on again.
   */
  bindCompanyRegistry(table: ITable): void {
    this.rotateFunction.bindTable(table, 'COMPANY_REGISTRY_TABLE_NAME', 'getItem');
  }

  /**
   * Lets a consumer function (an export) read every company key and find them by tag, as
   * `CompanyApiKeys` does (src/core/api-keys/company-api-keys.ts).
   */
  grantCompanyKeys(fn: AcctopsFunction): void {
    this.grantCompanyKeysByTag(fn, ['secretsmanager:GetSecretValue'], ['kms:Decrypt']);
    for (const secret of this.importedSecrets()) fn.grantSecret(secret, 'read');
    fn.addToRolePolicy(new PolicyStatement({ actions: ['secretsmanager:ListSecrets'], resources: ['*'] }));
    acknowledge(
      fn,
      'Resource::*',
      'secretsmanager:ListSecrets supports no resource-level permissions; it finds the company key secrets by tag and returns no value.',
    );
  }

  /**
   * `actions` on this stage's company key secrets, by their tags: `aws:ResourceTag/acctops:stage`
   * and `acctops:purpose` (both supported by every Secrets Manager action on a secret resource, per
   * the Service Authorization Reference) on the `acctops/<stage>/company/*` name prefix, and the
   * secrets key through Secrets Manager for those secrets only. No function is per company, so none
   * is conditioned on `acctops:company` (docs/fleet-rotation.md).
   */
  grantCompanyKeysByTag(fn: AcctopsFunction, actions: string[], keyActions: string[]): void {
    const stack = Stack.of(this);
    fn.addToRolePolicy(
      new PolicyStatement({
        actions,
        resources: [this.companySecretsArnPattern],
        conditions: {
          StringEquals: {
            [`aws:ResourceTag/${COMPANY_KEY_TAGS.stage}`]: this.stageName,
            [`aws:ResourceTag/${COMPANY_KEY_TAGS.purpose}`]: PURPOSE_COMPANY_KEY,
          },
        },
      }),
    );
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: keyActions,
        resources: [this.secretsKey.keyArn],
        conditions: {
          StringEquals: { 'kms:ViaService': `secretsmanager.${stack.region}.amazonaws.com` },
          StringLike: { 'kms:EncryptionContext:SecretARN': this.companySecretsArnPattern },
        },
      }),
    );
    acknowledge(
      fn,
      `Resource::${flattenCfnReference(stack.resolve(this.companySecretsArnPattern))}`,
      `Company key secrets are created at run time (acctops keys install), one per company; the grant covers only secrets named acctops/${this.stageName}/company/* AND tagged ${COMPANY_KEY_TAGS.stage}=${this.stageName} and ${COMPANY_KEY_TAGS.purpose}=${PURPOSE_COMPANY_KEY}, so another stage's secret is out of reach.`,
    );
  }

  /** Secrets imported by ARN (cdk.json existingSecretArn): their names and tags are not ours to rely on. */
  private importedSecrets(): ISecret[] {
    return [...this.secrets.values()].filter((secret) => !(secret instanceof Secret));
  }

  private companySecret(index: number, company: StageConfig['companies'][number], props: KeyRotationProps): ISecret {
    const companyId = company.companyId.toLowerCase();
    if (company.existingSecretArn !== undefined) {
      // With its key, every grantSecret on it also grants that key's actions through Secrets Manager
      // for this secret's ARN, even where the key is the stage's own kmsKeyArn: the tag statements'
      // key grant covers only acctops/<stage>/company/*. Without one, the secret is under the AWS
      // managed key aws/secretsmanager, which needs no grant (docs/infrastructure.md, companies[]).
      const keyArn = company.existingSecretKmsKeyArn === AWS_MANAGED_SECRETS_KEY ? undefined : company.existingSecretKmsKeyArn;
      return Secret.fromSecretAttributes(this, `ImportedCompanySecret${index}`, {
        secretCompleteArn: company.existingSecretArn,
        ...(keyArn === undefined ? {} : { encryptionKey: Key.fromKeyArn(this, `ImportedCompanySecretKey${index}`, keyArn) }),
      });
    }
    const secret = new Secret(this, `CompanySecret${index}`, {
      // companyKeySecretName in src/core/api-keys/key-directory.ts, which `keys install` uses.
      secretName: `acctops/${props.stage.name}/company/${companyId}/api-key`,
      description:
        `API key of company ${companyId} (JSON: apiKey, apiKeyId, keyPrefix, companyId, permissions, createdAt). ` +
        'Created with a placeholder; put the real key with the runbook "Install a company API key".',
      encryptionKey: props.secretsKey,
      removalPolicy: props.removalPolicy,
    });
    Tags.of(secret).add(COMPANY_KEY_TAGS.purpose, PURPOSE_COMPANY_KEY);
    Tags.of(secret).add(COMPANY_KEY_TAGS.company, companyId);
    // Lookups filter on the stage, so two stages in one account never see each other's key.
    Tags.of(secret).add(COMPANY_KEY_TAGS.stage, props.stage.name);
    return secret;
  }

  /** The secret's RotationSchedule, and exactly the permissions each function needs on it. */
  private attachRotation(companyId: string, secret: ISecret, rotationDays: number): void {
    const id = companyId.replace(/-/g, '');
    let invokePermission = this.rotationInvokePermission;
    // Secrets the stack creates carry the stage tag and fall under the tag statements; an imported
    // one keeps its per-ARN grants (it may lack the tag, and its name is not under our prefix).
    if (!(secret instanceof Secret)) {
      this.rotateFunction.grantSecret(secret, 'rotate');
      this.revokeFunction.grantSecret(secret, 'read');
      this.doctorFunction.grantSecret(secret, 'read');
      this.doctorFunction.addToRolePolicy(
        new PolicyStatement({
          actions: DOCTOR_ACTIONS.filter((a) => a !== 'secretsmanager:GetSecretValue'),
          resources: [secret.secretArn],
        }),
      );
      invokePermission = new CfnPermission(this, `RotationInvoke${id}`, {
        action: 'lambda:InvokeFunction',
        functionName: this.rotateFunction.functionArn,
        principal: 'secretsmanager.amazonaws.com',
        sourceAccount: Stack.of(this).account,
        sourceArn: secret.secretArn,
      });
    }
    const schedule = new CfnRotationSchedule(this, `Rotation${id}`, {
      secretId: secret.secretArn,
      rotationLambdaArn: this.rotateFunction.functionArn,
      rotationRules: { automaticallyAfterDays: rotationDays },
      rotateImmediatelyOnUpdate: false,
    });
    // Created after its permission, or Secrets Manager's check that it may invoke the function fails.
    schedule.addResourceDependency(invokePermission);
  }

  /** The doctor as its schedule's target, with a role that may invoke exactly that function. */
  private doctorTarget(): IScheduleTarget {
    const role = new Role(this, 'DoctorSchedulerRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'Lets EventBridge Scheduler invoke the API-key rotation doctor, and nothing else',
    });
    role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.doctorFunction.functionArn] }));
    const doctor = this.doctorFunction;
    return {
      bind: () => ({
        arn: doctor.functionArn,
        role,
        input: ScheduleTargetInput.fromObject({
          source: 'acctops.scheduler',
          schedule: 'key-rotation-doctor',
          scheduledAt: ContextAttribute.scheduledTime,
          executionId: ContextAttribute.executionId,
        }),
        retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeInSeconds: 300 },
      }),
    };
  }
}

function acknowledge(fn: AcctopsFunction, finding: string, reason: string): void {
  Validations.of(fn.executionRole).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason });
}
