import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { RemovalPolicy, Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { IConstruct } from 'constructs';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { KeyRotation } from '../../lib/constructs/key-rotation';
import { AcctopsStack, stackName } from '../../lib/stacks/acctops-stack';
import { acknowledgements, describeViolations, nagViolations, roleStatements, synthAcctopsStack, testApp, testStage } from '../helpers/cdk';
import { DEFAULT_EXPORT_DEADLINE } from '../../src/core/exports/pipeline/export-deadline';

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

describe('AcctopsStack', () => {
  const { app, stack, template } = synthAcctopsStack({ alarmEmails: ['oncall@example.com'] });

  describe('cdk-nag AwsSolutions', () => {
    it('reports no unacknowledged error or warning', () => {
      expect(describeViolations(nagViolations(app))).toEqual([]);
    });

    it('acknowledges only what is listed here, each with a written reason', () => {
      const acks = acknowledgements(app);
      const revocationSchedules =
        'arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/acctops-test-key-revocations/revoke-*';
      const companySecrets = 'arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:acctops/test/company/*';
      expect(acks.map((a) => a.id).sort()).toEqual(
        [
          // The key rotation doctor's list calls, and the revocation schedules of one group (test/infra/key-rotation.test.ts).
          'AwsSolutions-IAM5[Resource::*]',
          `AwsSolutions-IAM5[Resource::${revocationSchedules}]`,
          `AwsSolutions-IAM5[Resource::${revocationSchedules}]`,
          // Company key secrets by tag (issue 15): rotate, revoke, the doctor and the export worker, each on
          // acctops/<stage>/company/* conditioned on the stage and purpose tags (docs/fleet-rotation.md).
          ...Array.from({ length: 4 }, () => `AwsSolutions-IAM5[Resource::${companySecrets}]`),
          'AwsSolutions-SMG4',
          // The exports (test/infra/exports.test.ts lists them with their reasons): the export worker's
          // ListSecrets, the exports/ prefix of the worker and the overdue check, the webhook secret,
          // the access-log bucket (no ACL, so no note of CDK's on one), the ExportRequested dead-letter queue.
          'AwsSolutions-IAM5[Resource::*]',
          'AwsSolutions-IAM5[Resource::<ExportsBucket54D5CE64.Arn>/exports/*]',
          'AwsSolutions-IAM5[Resource::<ExportsBucket54D5CE64.Arn>/exports/*]',
          'AwsSolutions-SMG4',
          'AwsSolutions-S1',
          'AwsSolutions-SQS3',
          // FailedInvocations: the queue is itself the dead-letter queue of every schedule (test/infra/failed-invocations.test.ts).
          'AwsSolutions-SQS3',
        ].sort(),
      );
      for (const ack of acks) expect(ack.reason.length).toBeGreaterThan(40);
    });

    it('is not vacuous: a topic that accepts publishing without TLS is reported', () => {
      const other = testApp();
      const bad = new AcctopsStack(other, 'acctops-test', { stage: testStage() });
      new Topic(bad, 'Careless');
      Template.fromStack(bad);
      const rules = nagViolations(other).map((v) => v.ruleName);
      expect(rules).toContain('AwsSolutions-SNS3');
    });
  });

  it('is named after the stage', () => {
    expect(stack.stackName).toBe('acctops-test');
    expect(stackName('production')).toBe('acctops-production');
  });

  it('keeps the institution credential in Secrets Manager under a rotating customer-managed key', () => {
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      Name: 'acctops/test/institution-credential',
      KmsKeyId: { 'Fn::GetAtt': [logicalId(stack.secretsKey), 'Arn'] },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      Description: Match.stringLikeRegexp('institution credential'),
      EnableKeyRotation: true,
    });
  });

  it('encrypts the alarm topic with its own key, usable by CloudWatch, and refuses publishing without TLS', () => {
    const topicKey = template.findResources('AWS::KMS::Key', {
      Properties: { Description: Match.stringLikeRegexp('alarm topic') },
    });
    const [keyId, key] = Object.entries(topicKey)[0]!;
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(keyId).not.toBe(logicalId(stack.secretsKey));
    expect(key.Properties.KeyPolicy.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        }),
      ]),
    );
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  describe('lets only this account’s CloudWatch alarms use the alarm topic', () => {
    // arn:<partition>:cloudwatch:<region>:<account>:alarm:*
    const ourAlarms = {
      StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
      ArnLike: {
        'aws:SourceArn': {
          'Fn::Join': [
            '',
            ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':alarm:*'],
          ],
        },
      },
    };

    it('allows them to publish: the topic policy replaces SNS’s default one, so nothing else would', () => {
      const [policy, ...others] = Object.values(template.findResources('AWS::SNS::TopicPolicy'));
      expect(others).toHaveLength(0);
      expect(policy!.Properties.Topics).toEqual([{ Ref: logicalId(stack.alarmTopic) }]);
      const allows = (policy!.Properties.PolicyDocument.Statement as Record<string, unknown>[]).filter((s) => s.Effect === 'Allow');
      expect(allows).toEqual([
        expect.objectContaining({
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: 'sns:Publish',
          Resource: { Ref: logicalId(stack.alarmTopic) },
          Condition: ourAlarms,
        }),
      ]);
    });

    it('lets CloudWatch use the topic’s key for those alarms only', () => {
      const [key] = Object.values(
        template.findResources('AWS::KMS::Key', { Properties: { Description: Match.stringLikeRegexp('alarm topic') } }),
      );
      const forCloudWatch = (key!.Properties.KeyPolicy.Statement as Record<string, unknown>[]).filter((s) =>
        JSON.stringify(s.Principal).includes('cloudwatch.amazonaws.com'),
      );
      expect(forCloudWatch).toEqual([expect.objectContaining({ Action: ['kms:Decrypt', 'kms:GenerateDataKey*'], Condition: ourAlarms })]);
    });
  });

  it('subscribes the stage’s alarm e-mails', () => {
    template.resourceCountIs('AWS::SNS::Subscription', 1);
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
  });

  it('documents its outputs', () => {
    const outputs = template.findOutputs('*');
    expect(Object.keys(outputs).sort()).toEqual([
      'AlarmTopicArn',
      'CheckHealthFunctionName',
      'CheckKeyRotationsFunctionName',
      'CompanyKeyRotationDays',
      'CompanyRegistryTableName',
      'DashboardName',
      'ExportBucketName',
      'ExportDueAfterHours',
      'ExportEventBusName',
      'ExportGlueDatabaseName',
      'ExportQueueUrl',
      'ExportTimeZone',
      'ExportWebhookSecretArn',
      'ExportWebhookUrl',
      'InstitutionSecretArn',
      'KeyRevocationScheduleGroup',
      'OnboardUserFunctionName',
      'PlanTokenRefreshFunctionName',
      'RecoverUserFunctionName',
      'RefreshTokensFunctionName',
      'RevokeUserFunctionName',
      'RotateApiKeyFunctionArn',
      'SecretsKeyArn',
      'ServiceBaseUrl',
      'TokenEventBusName',
      'TokenTableName',
    ]);
    for (const output of Object.values(outputs)) expect(output.Description).toEqual(expect.any(String));
  });

  it("exports the overdue check's deadline, so `acctops doctor` judges by the same one (the defaults here)", () => {
    const outputs = template.findOutputs('*');
    expect(outputs.ExportTimeZone?.Value).toBe(DEFAULT_EXPORT_DEADLINE.timeZone);
    expect(outputs.ExportDueAfterHours?.Value).toBe(String(DEFAULT_EXPORT_DEADLINE.dueAfterHours));
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          EXPORT_TIME_ZONE: outputs.ExportTimeZone?.Value,
          EXPORT_DUE_AFTER_HOURS: outputs.ExportDueAfterHours?.Value,
        }),
      },
    });
  });

  describe('check-health', () => {
    it('receives the secret ARN and the base URL, never a secret value', () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('institution credential'),
        Environment: {
          Variables: Match.objectLike({
            INSTITUTION_SECRET_ARN: { Ref: logicalId(stack.institutionSecret) },
            ACCTOPS_BASE_URL: 'https://accounting.example.com/api/v1',
            ACCTOPS_FUNCTION: 'check-health',
            ACCTOPS_STAGE: 'test',
          }),
        },
      });
    });

    it('may do exactly four things: write its logs, read that secret, decrypt it through Secrets Manager, report a failed invocation', () => {
      const roleId = logicalId(stack.checkHealth.executionRole);
      const role = template.findResources('AWS::IAM::Role')[roleId]!;
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties.Policies).toBeUndefined();

      const secretArn = { Ref: logicalId(stack.institutionSecret) };
      expect(roleStatements(template, roleId)).toEqual([
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [logicalId(stack.checkHealth.logs), 'Arn'] },
        },
        { Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: secretArn },
        {
          Effect: 'Allow',
          Action: 'kms:Decrypt',
          Resource: { 'Fn::GetAtt': [logicalId(stack.secretsKey), 'Arn'] },
          Condition: {
            StringEquals: {
              'kms:ViaService': { 'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']] },
              'kms:EncryptionContext:SecretARN': secretArn,
            },
          },
        },
        // Its failed scheduled invocations (FailedInvocations).
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [logicalId(stack.failedInvocations.queue), 'Arn'] } },
      ]);
    });
  });

  it('sets every variable that names a resource of the stack through a bind* call, which granted access to it in the same step', () => {
    const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    // A resource is named by reference (Ref, Fn::GetAtt, or a Fn::Join of them) or by its literal name.
    const names = new Set(Object.values(resources).flatMap((r) => (typeof r.Properties?.Name === 'string' ? [r.Properties.Name] : [])));
    const namesResource = (value: unknown) =>
      typeof value === 'string' ? names.has(value) : /"(Ref|Fn::GetAtt)"/.test(JSON.stringify(value));
    const functions = stack.node.findAll().filter((c): c is AcctopsFunction => c instanceof AcctopsFunction);
    const checked = functions.flatMap((fn) => {
      const env = resources[logicalId(fn)]!.Properties!.Environment as { Variables: Record<string, unknown> };
      return Object.entries(env.Variables)
        .filter(([, value]) => namesResource(value))
        .map(([name]) => ({ fn: fn.handlerDir, name, bound: fn.boundVariables.has(name) }));
    });
    // Not vacuous: the rotation's revocation wiring, by reference and by its group's literal name.
    expect(checked).toEqual(
      expect.arrayContaining(
        ['REVOCATION_SCHEDULE_GROUP', 'REVOKE_FUNCTION_ARN', 'REVOCATION_SCHEDULER_ROLE_ARN', 'REVOCATION_DEAD_LETTER_ARN'].map((name) => ({
          fn: 'rotate-api-key',
          name,
          bound: true,
        })),
      ),
    );
    expect(checked.filter((c) => !c.bound)).toEqual([]);
  });

  it('refuses to synthesize a KeyRotation whose revocation scheduler was never bound (rotate-api-key would fail at cold start)', () => {
    const other = testApp();
    const unbound = new Stack(other, 'Unbound');
    const stage = testStage();
    new KeyRotation(unbound, 'KeyRotation', {
      stage,
      functionDefaults: { stageName: stage.name },
      secretsKey: new Key(unbound, 'Key'),
      alarmTopic: new Topic(unbound, 'Topic'),
      removalPolicy: RemovalPolicy.DESTROY,
    });
    expect(() => Template.fromStack(unbound)).toThrow(/call bindRevocationScheduler/);
  });

  it("gives every function its own log group /acctops/<stage>/<handlerDir> with the stage's retention", () => {
    const groupOf = (t: Template, s: Stack) =>
      new Map(
        s.node
          .findAll()
          .filter((c): c is AcctopsFunction => c instanceof AcctopsFunction)
          .map((fn) => {
            const loggingConfig = t.findResources('AWS::Lambda::Function')[logicalId(fn)]!.Properties.LoggingConfig as {
              LogGroup: { Ref: string };
            };
            const group = t.findResources('AWS::Logs::LogGroup')[loggingConfig.LogGroup.Ref]!.Properties as Record<string, unknown>;
            return [fn.handlerDir, group];
          }),
      );
    const dirs = readdirSync(join(__dirname, '..', '..', 'functions')).filter((d) => !d.startsWith('_'));
    const groups = groupOf(template, stack);
    expect([...groups.keys()].sort()).toEqual(dirs.sort());
    for (const [dir, group] of groups) expect(group).toEqual({ LogGroupName: `/acctops/test/${dir}`, RetentionInDays: 30 });
    // One log group per function, nothing else logs on its own.
    expect(Object.keys(template.findResources('AWS::Logs::LogGroup'))).toHaveLength(dirs.length);

    const other = synthAcctopsStack({ logRetentionDays: 365 });
    for (const [dir, group] of groupOf(other.template, other.stack)) {
      expect(group).toEqual({ LogGroupName: `/acctops/test/${dir}`, RetentionInDays: 365 });
    }
  });

  it('retains data by default and lets a throw-away stage delete it', () => {
    const policies = (t: Template, type: string) => Object.values(t.findResources(type)).map((r) => r.DeletionPolicy);
    // The institution credential and the export webhook's secret.
    expect(policies(template, 'AWS::SecretsManager::Secret')).toEqual(['Retain', 'Retain']);
    expect(new Set(policies(template, 'AWS::KMS::Key'))).toEqual(new Set(['Retain']));
    expect(new Set(policies(template, 'AWS::Logs::LogGroup'))).toEqual(new Set(['Retain']));

    const { template: throwAway } = synthAcctopsStack({ retainData: false });
    expect(policies(throwAway, 'AWS::SecretsManager::Secret')).toEqual(['Delete', 'Delete']);
    expect(new Set(policies(throwAway, 'AWS::KMS::Key'))).toEqual(new Set(['Delete']));
    expect(new Set(policies(throwAway, 'AWS::Logs::LogGroup'))).toEqual(new Set(['Delete']));
  });

  it('protects every table from deletion when the stage retains data, and none when it does not', () => {
    const protection = (t: Template) =>
      Object.entries(t.findResources('AWS::DynamoDB::Table')).map(([id, r]) => [id, r.Properties.DeletionProtectionEnabled]);
    const tables = protection(template);
    // Tokens, company registry, export run ledger, webhook replay claims.
    expect(tables).toHaveLength(4);
    expect(tables).toEqual(tables.map(([id]) => [id, true]));
    const throwAway = protection(synthAcctopsStack({ retainData: false }).template);
    expect(throwAway).toEqual(throwAway.map(([id]) => [id, false]));
  });
});
