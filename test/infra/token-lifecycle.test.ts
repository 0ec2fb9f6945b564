import { Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Table, AttributeType } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import type { IConstruct } from 'constructs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AcctopsFunction, RESERVED_ENV } from '../../lib/constructs/acctops-function';
import type { TokenLifecycle } from '../../lib/constructs/token-lifecycle';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { TOKEN_TABLE } from '../../contract/tables';
import { acknowledgements, describeViolations, nagViolations, roleStatements, synthAcctopsStack, testApp, testStage } from '../helpers/cdk';

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
const actionsOf = (statements: Record<string, unknown>[]) => (statements as Statement[]).flatMap((s) => [s.Action].flat());

describe('TokenLifecycle', () => {
  const { app, stack, template } = synthAcctopsStack({ alarmEmails: ['oncall@example.com'] });
  const tokens = stack.node.findChild('Tokens') as TokenLifecycle;
  const tableArn = { 'Fn::GetAtt': [logicalId(tokens.table), 'Arn'] };
  const keyArn = { 'Fn::GetAtt': [logicalId(tokens.key), 'Arn'] };
  const statementsOf = (fn: AcctopsFunction) => roleStatements(template, logicalId(fn.executionRole));
  const tokenFunctions = () => [tokens.planner, tokens.worker, tokens.onboardUser, tokens.revokeUser, tokens.recoverUser];

  it('is cdk-nag clean without a single acknowledgement', () => {
    expect(describeViolations(nagViolations(app))).toEqual([]);
    expect(acknowledgements(tokens)).toEqual([]);
  });

  describe('the token table', () => {
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table'));

    it('has exactly the shape of TOKEN_TABLE (contract/tables.ts)', () => {
      const { partitionKey, dueIndex } = TOKEN_TABLE;
      expect(table!.Properties).toMatchObject({
        BillingMode: TOKEN_TABLE.billingMode,
        KeySchema: [{ AttributeName: partitionKey.name, KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [
          {
            IndexName: dueIndex.name,
            KeySchema: [
              { AttributeName: dueIndex.partitionKey.name, KeyType: 'HASH' },
              { AttributeName: dueIndex.sortKey.name, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: dueIndex.projection },
          },
        ],
      });
      expect(new Set(table!.Properties.AttributeDefinitions)).toEqual(
        new Set(
          [partitionKey, dueIndex.partitionKey, dueIndex.sortKey].map((a) =>
            expect.objectContaining({ AttributeName: a.name, AttributeType: a.type }),
          ),
        ),
      );
      expect(table!.Properties.AttributeDefinitions).toHaveLength(3);
    });

    it('is encrypted with its own rotating customer-managed key, with point-in-time recovery', () => {
      expect(table!.Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: keyArn });
      expect(table!.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(template.findResources('AWS::KMS::Key')[logicalId(tokens.key)]!.Properties.EnableKeyRotation).toBe(true);
      expect(table!.DeletionPolicy).toBe('Retain');
    });

    it('is reachable by the token functions and the export planner and worker only', () => {
      // The exports' own test (test/infra/exports.test.ts) pins their access: the planner queries the
      // keys-only index, the worker reads a user's token.
      const exportRoles = [stack.exports.planner, stack.exports.worker].map((fn) => logicalId(fn.executionRole));
      const tokenRoles = new Set([...tokenFunctions().map((fn) => logicalId(fn.executionRole)), ...exportRoles]);
      const table = logicalId(tokens.table);
      for (const [, policy] of Object.entries(template.findResources('AWS::IAM::Policy'))) {
        const text = JSON.stringify(policy.Properties.PolicyDocument);
        if (!text.includes(table)) continue;
        for (const role of policy.Properties.Roles as { Ref: string }[]) expect(tokenRoles).toContain(role.Ref);
      }
    });
  });

  describe('least privilege', () => {
    it('the planner may only query the due index (never read an item) and send to the queue', () => {
      const statements = statementsOf(tokens.planner) as Statement[];
      expect(actionsOf(statements).sort()).toEqual(
        // The second SendMessage: its on-failure destination (FailedInvocations).
        [
          'dynamodb:Query',
          'kms:Decrypt',
          'kms:Decrypt',
          'kms:GenerateDataKey',
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'sqs:SendMessage',
          'sqs:SendMessage',
        ].sort(),
      );
      expect(statements.find((s) => s.Action === 'dynamodb:Query')!.Resource).toEqual({ 'Fn::Join': ['', [tableArn, '/index/due']] });
      expect(JSON.stringify(statements)).not.toMatch(/secretsmanager|events:/);
    });

    it('the worker may get and update items, read the institution secret, publish to its bus and consume its queue: nothing else', () => {
      const statements = statementsOf(tokens.worker) as Statement[];
      const dynamo = statements.filter((s) => actionsOf([s]).some((a) => a.startsWith('dynamodb:')));
      expect(dynamo).toEqual([{ Effect: 'Allow', Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], Resource: tableArn }]);
      expect(statements).toContainEqual({
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: { Ref: logicalId(stack.institutionSecret) },
      });
      expect(statements).toContainEqual({
        Effect: 'Allow',
        Action: 'events:PutEvents',
        Resource: { 'Fn::GetAtt': [logicalId(tokens.eventBus), 'Arn'] },
      });
      expect(
        actionsOf(statements)
          .filter((a) => a.startsWith('sqs:'))
          .sort(),
      ).toEqual(['sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage']);
      expect(actionsOf(statements).filter((a) => !/^(dynamodb|secretsmanager|events|sqs|kms|logs):/.test(a))).toEqual([]);
    });

    it('onboard may create an item and update one (the lease of its path back for a user in needs_attention); revoke and recover may update but not create', () => {
      const dynamo = (fn: AcctopsFunction) =>
        actionsOf(statementsOf(fn))
          .filter((a) => a.startsWith('dynamodb:'))
          .sort();
      expect(dynamo(tokens.onboardUser)).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
      expect(dynamo(tokens.revokeUser)).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
      expect(dynamo(tokens.recoverUser)).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    });

    it('no token function may touch S3 (the export buckets), scan the table or use a wildcard resource', () => {
      for (const fn of tokenFunctions()) {
        const statements = statementsOf(fn) as Statement[];
        expect(actionsOf(statements).filter((a) => a.startsWith('s3:') || a === 'dynamodb:Scan' || a.includes('*'))).toEqual([]);
        expect(statements.filter((s) => JSON.stringify(s.Resource).includes('*'))).toEqual([]);
      }
    });

    it('the worker cannot read an export bucket even when the stack has one', () => {
      const other = testApp();
      const withBucket = new AcctopsStack(other, 'acctops-test', { stage: testStage() });
      const bucket = new Bucket(withBucket, 'AnotherBucket');
      const t = Template.fromStack(withBucket);
      const worker = (withBucket.node.findChild('Tokens') as TokenLifecycle).worker;
      const text = JSON.stringify(roleStatements(t, logicalId(worker.executionRole)));
      expect(text).not.toContain(logicalId(bucket));
      expect(text).not.toMatch(/"s3:/);
    });

    it('only the scheduler may invoke the planner, and only the planner', () => {
      const role = template.findResources('AWS::IAM::Role', {
        Properties: { AssumeRolePolicyDocument: { Statement: [Match.objectLike({ Principal: { Service: 'scheduler.amazonaws.com' } })] } },
      });
      const [roleId] = Object.keys(role);
      expect(roleStatements(template, roleId!)).toEqual([
        { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: { 'Fn::GetAtt': [logicalId(tokens.planner), 'Arn'] } },
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [logicalId(stack.failedInvocations.queue), 'Arn'] } },
      ]);
    });
  });

  describe('the refresh pipeline', () => {
    it('runs the planner every 5 minutes through EventBridge Scheduler, with the scheduler input its handler parses', () => {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'rate(5 minutes)',
        State: 'ENABLED',
        Target: {
          Arn: { 'Fn::GetAtt': [logicalId(tokens.planner), 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 300 },
        },
      });
      const [schedule] = Object.values(template.findResources('AWS::Scheduler::Schedule'));
      expect(JSON.parse(schedule!.Properties.Target.Input as string)).toEqual({
        source: 'acctops.scheduler',
        schedule: 'token-refresh',
        scheduledAt: '<aws.scheduler.scheduled-time>',
        executionId: '<aws.scheduler.execution-id>',
      });
    });

    it('takes the schedule from the stage', () => {
      const { template: t } = synthAcctopsStack({ schedules: { tokenRefresh: 'cron(0/10 * * * ? *)', timeZone: 'Europe/Paris' } });
      t.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'cron(0/10 * * * ? *)',
        ScheduleExpressionTimezone: 'Europe/Paris',
      });
    });

    it('feeds the worker from a KMS-encrypted, TLS-only queue with a dead-letter queue, in capped batches with partial failures', () => {
      const queue = template.findResources('AWS::SQS::Queue')[logicalId(tokens.queue)]!;
      expect(queue.Properties).toMatchObject({
        KmsMasterKeyId: keyArn,
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(tokens.deadLetterQueue), 'Arn'] }, maxReceiveCount: 3 },
        VisibilityTimeout: 6 * 120,
      });
      expect(template.findResources('AWS::SQS::Queue')[logicalId(tokens.deadLetterQueue)]!.Properties.KmsMasterKeyId).toEqual(keyArn);
      for (const q of [tokens.queue, tokens.deadLetterQueue]) {
        template.hasResourceProperties('AWS::SQS::QueuePolicy', {
          Queues: [{ Ref: logicalId(q) }],
          PolicyDocument: {
            Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
          },
        });
      }
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [logicalId(tokens.queue), 'Arn'] },
        FunctionName: { Ref: logicalId(tokens.worker) },
        BatchSize: 10,
        ScalingConfig: { MaximumConcurrency: 5 },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    });

    it('gives each token function only variables its handler reads (onboard reads the lease it takes on its path back)', () => {
      const unread = tokenFunctions().flatMap((fn) => {
        const variables = Object.keys(template.findResources('AWS::Lambda::Function')[logicalId(fn)]!.Properties.Environment.Variables);
        const handler = readFileSync(join(__dirname, '..', '..', 'functions', fn.handlerDir, 'handler.ts'), 'utf8');
        return variables
          .filter((name) => !(RESERVED_ENV as readonly string[]).includes(name) && !new RegExp(`'${name}'`).test(handler))
          .map((name) => `${fn.handlerDir} ${name}`);
      });
      expect(unread).toEqual([]);
    });

    it('gives the lease more time than the worker can run, and the functions names and ARNs, never a secret', () => {
      const worker = template.findResources('AWS::Lambda::Function')[logicalId(tokens.worker)]!.Properties;
      const env = worker.Environment.Variables as Record<string, unknown>;
      expect(Number(env.TOKEN_LEASE_SECONDS)).toBeGreaterThan(worker.Timeout as number);
      expect(env).toMatchObject({
        INSTITUTION_SECRET_ARN: { Ref: logicalId(stack.institutionSecret) },
        TOKEN_TABLE_NAME: { Ref: logicalId(tokens.table) },
        TOKEN_EVENT_BUS_NAME: { Ref: logicalId(tokens.eventBus) },
        ACCTOPS_BASE_URL: 'https://accounting.example.com/api/v1',
        TOKEN_REFRESH_MARGIN_SECONDS: '900',
        ACCTOPS_FUNCTION: 'refresh-tokens',
      });
      const planner = template.findResources('AWS::Lambda::Function')[logicalId(tokens.planner)]!.Properties.Environment.Variables;
      expect(Object.keys(planner).sort()).toEqual(
        [
          'ACCTOPS_FUNCTION',
          'ACCTOPS_STAGE',
          'LOG_LEVEL',
          'NODE_OPTIONS',
          'POWERTOOLS_SERVICE_NAME',
          'REFRESH_QUEUE_URL',
          'TOKEN_REFRESH_MARGIN_SECONDS',
          'TOKEN_TABLE_NAME',
        ].sort(),
      );
    });
  });

  it('passes the stage’s accessTokenLifetimeSeconds to every function that stores a token pair', () => {
    const short = synthAcctopsStack({ accessTokenLifetimeSeconds: 300 });
    const shortTokens = short.stack.node.findChild('Tokens') as TokenLifecycle;
    const functions = short.template.findResources('AWS::Lambda::Function');
    for (const fn of [shortTokens.worker, shortTokens.onboardUser, shortTokens.recoverUser]) {
      expect(functions[logicalId(fn)]!.Properties.Environment.Variables).toMatchObject({ ACCESS_TOKEN_LIFETIME_SECONDS: '300' });
    }
    const defaults = template.findResources('AWS::Lambda::Function')[logicalId(tokens.onboardUser)]!.Properties.Environment.Variables;
    expect(defaults).toMatchObject({ ACCESS_TOKEN_LIFETIME_SECONDS: '1800' });
  });

  describe('alarms, all on the stack’s alarm topic', () => {
    const topic = { Ref: logicalId(stack.alarmTopic) };

    it('alarms on any message in the dead-letter queue', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(tokens.deadLetterQueue), 'QueueName'] } }],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [topic],
      });
    });

    it.each([
      ['TokenNeedsAttention', 'refresh-tokens'],
      ['TokenRefreshDeferred', 'refresh-tokens'],
      ['TokensOverdue', 'plan-token-refresh'],
    ])('alarms on the %s metric with the dimensions the %s function emits', (metric, fn) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Acctops',
        MetricName: metric,
        Dimensions: [
          { Name: 'Function', Value: fn },
          { Name: 'Stage', Value: 'test' },
        ],
        Statistic: 'Sum',
        AlarmActions: [topic],
        TreatMissingData: 'notBreaching',
      });
    });

    it('alarms when the planner fails', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(tokens.planner) } }],
        AlarmActions: [topic],
      });
    });
  });
});

describe('AcctopsFunction table access levels used by the token functions', () => {
  const stack = new Stack(testApp(), 'levels');
  const table = new Table(stack, 'T', { partitionKey: { name: 'k', type: AttributeType.STRING } });
  // A stage each, so that their log groups (/acctops/<stage>/check-health) differ.
  let n = 0;
  const fn = () => new AcctopsFunction(stack, `F${++n}`, { handlerDir: 'check-health', description: 'x', stageName: `test${n}` });

  it('queryIndexes needs indexes; getPut and getUpdate take none', () => {
    expect(() => fn().bindTable(table, 'TABLE', 'queryIndexes')).toThrow(/needs the indexes/);
    expect(() => fn().bindTable(table, 'TABLE', 'getUpdate', { indexes: ['due'] })).toThrow(/indexes are read-only/);
    expect(() => fn().bindTable(table, 'TABLE', 'getPut', { indexes: ['due'] })).toThrow(/indexes are read-only/);
  });
});
