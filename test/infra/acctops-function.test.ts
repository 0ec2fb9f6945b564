import { Duration, RemovalPolicy, Stack, Validations, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption } from 'aws-cdk-lib/aws-s3';
import { ScheduleGroup } from 'aws-cdk-lib/aws-scheduler';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import {
  AcctopsFunction,
  BUCKET_ACTIONS,
  EVENT_SOURCE_QUEUE_ACTIONS,
  FUNCTION_RUNTIME,
  nodeOptions,
  QUEUE_ACTIONS,
  SCHEDULE_ACTIONS,
  SECRET_ACTIONS,
  TABLE_ACTIONS,
  type AcctopsFunctionProps,
} from '../../lib/constructs/acctops-function';
import { acknowledgements, describeViolations, nagViolations, roleStatements, testApp } from '../helpers/cdk';

const logicalId = (construct: IConstruct) => {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return element.stack.getLogicalId(element);
};

const BASE: AcctopsFunctionProps = { handlerDir: 'check-health', description: 'test function', stageName: 'test' };

function stackWith(build: (stack: Stack) => void): { stack: Stack; template: Template } {
  const app = testApp();
  const stack = new Stack(app, 'Test');
  build(stack);
  return { stack, template: Template.fromStack(stack) };
}

describe('AcctopsFunction', () => {
  it('uses the newest Node.js runtime aws-cdk-lib offers (bump it when this fails)', () => {
    const newest = Runtime.ALL.filter((r) => /^nodejs\d+\.x$/.test(r.name))
      .map((r) => r.name)
      .sort((a, b) => Number.parseInt(a.slice(6), 10) - Number.parseInt(b.slice(6), 10))
      .pop();
    expect(FUNCTION_RUNTIME.name).toBe(newest);
  });

  describe('defaults', () => {
    let fn!: AcctopsFunction;
    const { template } = stackWith((stack) => {
      fn = new AcctopsFunction(stack, 'Fn', { ...BASE, logRetention: RetentionDays.TWO_WEEKS, logLevel: 'debug' });
    });

    it('runs on arm64 with the newest runtime, JSON logs into its own log group', () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Runtime: FUNCTION_RUNTIME.name,
        Architectures: ['arm64'],
        Handler: 'index.handler',
        MemorySize: 256,
        Timeout: 30,
        LoggingConfig: {
          LogFormat: 'JSON',
          ApplicationLogLevel: 'TRACE',
          SystemLogLevel: 'INFO',
          LogGroup: { Ref: logicalId(fn.logs) },
        },
      });
      template.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/acctops/test/check-health', RetentionInDays: 14 });
      expect(fn.logGroupName).toBe('/acctops/test/check-health');
      expect(Object.values(template.findResources('AWS::Logs::LogGroup'))[0]!.DeletionPolicy).toBe('Retain');
    });

    it('sets source maps, its identity and its log level in the environment', () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: {
            NODE_OPTIONS: '--enable-source-maps',
            ACCTOPS_STAGE: 'test',
            ACCTOPS_FUNCTION: 'check-health',
            LOG_LEVEL: 'debug',
            POWERTOOLS_SERVICE_NAME: 'acctops',
          },
        },
      });
    });

    it('has no tracing, no reserved concurrency and no managed policy', () => {
      const [resource] = Object.values(template.findResources('AWS::Lambda::Function'));
      expect(resource!.Properties.TracingConfig).toBeUndefined();
      expect(resource!.Properties.ReservedConcurrentExecutions).toBeUndefined();
      template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
    });

    it('may only write to its own log group', () => {
      expect(roleStatements(template, logicalId(fn.executionRole))).toEqual([
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [logicalId(fn.logs), 'Arn'] },
        },
      ]);
    });
  });

  it('refuses a second function of the same handlerDir and stage (their log groups would collide at deploy)', () => {
    const stack = new Stack(testApp(), 'Test');
    new AcctopsFunction(stack, 'Fn', BASE);
    new AcctopsFunction(stack, 'Other', { ...BASE, stageName: 'other' });
    expect(() => new AcctopsFunction(stack, 'Twin', BASE)).toThrow('Test/Fn already logs to /acctops/test/check-health');
  });

  it('refuses a stage name that cannot be one level of a log group name', () => {
    const stack = new Stack(testApp(), 'Test');
    expect(() => new AcctopsFunction(stack, 'Fn', { ...BASE, stageName: 'a/b' })).toThrow(/stageName .*"a\/b"/);
  });

  it('passes reserved concurrency, memory, timeout and removal policy through', () => {
    const { template } = stackWith((stack) => {
      new AcctopsFunction(stack, 'Fn', {
        ...BASE,
        reservedConcurrency: 3,
        memorySize: 1024,
        timeout: Duration.minutes(5),
        logRemovalPolicy: RemovalPolicy.DESTROY,
      });
    });
    template.hasResourceProperties('AWS::Lambda::Function', { ReservedConcurrentExecutions: 3, MemorySize: 1024, Timeout: 300 });
    expect(Object.values(template.findResources('AWS::Logs::LogGroup'))[0]!.DeletionPolicy).toBe('Delete');
  });

  it('caps the semi-space through NODE_OPTIONS with the old space the runtime would pick, since the bootstrap then sets neither', () => {
    const { template } = stackWith((stack) => {
      new AcctopsFunction(stack, 'Fn', { ...BASE, memorySize: 1024, maxSemiSpaceMb: 16 });
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({ NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=16 --max-old-space-size=922' }),
      },
    });
    expect(nodeOptions(256, undefined)).toBe('--enable-source-maps');
    expect(nodeOptions(512, 8)).toBe('--enable-source-maps --max-semi-space-size=8 --max-old-space-size=461');
  });

  it('sets the old space when asked, beside the semi-space cap, and refuses it alone or out of range', () => {
    const { template } = stackWith((stack) => {
      new AcctopsFunction(stack, 'Fn', { ...BASE, memorySize: 1024, maxSemiSpaceMb: 16, maxOldSpaceMb: 2047 });
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({ NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=16 --max-old-space-size=2047' }),
      },
    });
    expect(() => nodeOptions(1024, undefined, 2047)).toThrow(/maxOldSpaceMb needs maxSemiSpaceMb/);
    for (const mb of [63, 1000.5, 4097])
      expect(() => nodeOptions(1024, 16, mb)).toThrow(/maxOldSpaceMb must be a whole number from 64 to 4096/);
  });

  it.each([0, 2.5, 52])('refuses a semi-space cap of %s MiB at 1024 MB (a whole number up to the runtime’s own 51)', (mb) => {
    const stack = new Stack(testApp(), 'Test');
    expect(() => new AcctopsFunction(stack, 'Fn', { ...BASE, memorySize: 1024, maxSemiSpaceMb: mb })).toThrow(
      /maxSemiSpaceMb must be a whole number from 1 to memory \/ 20 \(51\)/,
    );
  });

  it('turns X-Ray on when asked and acknowledges its unavoidable wildcard with a reason', () => {
    let fn!: AcctopsFunction;
    const { stack, template } = stackWith((s) => {
      fn = new AcctopsFunction(s, 'Fn', { ...BASE, tracing: true });
    });
    template.hasResourceProperties('AWS::Lambda::Function', { TracingConfig: { Mode: 'Active' } });
    expect(roleStatements(template, logicalId(fn.executionRole))).toContainEqual({
      Effect: 'Allow',
      Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
      Resource: '*',
    });
    expect(describeViolations(nagViolations(stack))).toEqual([]);
  });

  it('passes a log sample rate to Powertools Logger, and none by default', () => {
    const { template } = stackWith((stack) => new AcctopsFunction(stack, 'Fn', { ...BASE, logSampleRate: 0.05 }));
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ POWERTOOLS_LOGGER_SAMPLE_RATE: '0.05' }) },
    });
    const plain = stackWith((stack) => new AcctopsFunction(stack, 'Fn', BASE)).template;
    const [resource] = Object.values(plain.findResources('AWS::Lambda::Function'));
    expect(resource!.Properties.Environment.Variables.POWERTOOLS_LOGGER_SAMPLE_RATE).toBeUndefined();
  });

  it.each([
    ['a handler directory that is not verb-noun', { handlerDir: 'Health' }, /verb-noun/],
    ['a handler that does not exist', { handlerDir: 'check-nothing' }, /no handler at functions\/check-nothing/],
    ['a reserved variable', { environment: { LOG_LEVEL: 'debug' } }, /LOG_LEVEL is set by AcctopsFunction/],
    [
      'a Powertools variable',
      { environment: { POWERTOOLS_LOGGER_SAMPLE_RATE: '1' } },
      /POWERTOOLS_LOGGER_SAMPLE_RATE is set by AcctopsFunction/,
    ],
    ['a sample rate above 1', { logSampleRate: 1.5 }, /logSampleRate must be between 0 and 1/],
  ])('refuses %s', (_what, props, message) => {
    expect(() => stackWith((stack) => new AcctopsFunction(stack, 'Fn', { ...BASE, ...props }))).toThrow(message);
  });

  describe('bind*', () => {
    let fn!: AcctopsFunction;
    let key!: Key;
    let secret!: Secret;
    let table!: Table;
    let bucket!: Bucket;
    let queue!: Queue;
    let jobs!: Queue;
    let bus!: EventBus;
    const { stack, template } = stackWith((s) => {
      key = new Key(s, 'Key', { enableKeyRotation: true });
      secret = new Secret(s, 'Secret', { encryptionKey: key });
      Validations.of(secret).acknowledge({ id: 'AwsSolutions-SMG4', reason: 'A test fixture: rotation is not under test here.' });
      table = new Table(s, 'Table', {
        partitionKey: { name: 'pk', type: AttributeType.STRING },
        encryption: TableEncryption.CUSTOMER_MANAGED,
        encryptionKey: key,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      });
      table.addGlobalSecondaryIndex({ indexName: 'due', partitionKey: { name: 'dueAt', type: AttributeType.NUMBER } });
      const logs = new Bucket(s, 'AccessLogs', {
        enforceSSL: true,
        blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
        encryption: BucketEncryption.S3_MANAGED,
      });
      bucket = new Bucket(s, 'Bucket', {
        encryptionKey: key,
        enforceSSL: true,
        blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
        serverAccessLogsBucket: logs,
      });
      const dlq = new Queue(s, 'Dlq', { encryption: QueueEncryption.KMS, encryptionMasterKey: key, enforceSSL: true });
      queue = new Queue(s, 'Queue', {
        encryption: QueueEncryption.KMS,
        encryptionMasterKey: key,
        enforceSSL: true,
        deadLetterQueue: { queue: dlq, maxReceiveCount: 3 },
      });
      jobs = new Queue(s, 'Jobs', {
        encryption: QueueEncryption.KMS,
        encryptionMasterKey: key,
        enforceSSL: true,
        deadLetterQueue: { queue: dlq, maxReceiveCount: 3 },
      });
      bus = new EventBus(s, 'Bus');
      fn = new AcctopsFunction(s, 'Fn', BASE)
        .bindSecret(secret, 'SECRET_ARN', 'rotate')
        .bindTable(table, 'TABLE_NAME', 'readWrite', { indexes: ['due'] })
        .bindBucket(bucket, 'BUCKET_NAME', 'write', { prefix: 'exports/' })
        .bindQueue(queue, 'QUEUE_URL', 'send')
        .bindEventBus(bus, 'BUS_NAME')
        .consumeQueue(jobs, { batchSize: 5, maxConcurrency: 4 });
    });
    const statements = () => roleStatements(template, logicalId(fn.executionRole));
    const arn = (c: IConstruct) => ({ 'Fn::GetAtt': [logicalId(c), 'Arn'] });
    const viaService = (service: string) => ({
      'Fn::Join': ['', [`${service}.`, { Ref: 'AWS::Region' }, '.amazonaws.com']],
    });

    it('sets each variable to the resource’s identifier', () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({
            SECRET_ARN: { Ref: logicalId(secret) },
            TABLE_NAME: { Ref: logicalId(table) },
            BUCKET_NAME: { Ref: logicalId(bucket) },
            QUEUE_URL: { Ref: logicalId(queue) },
            BUS_NAME: { Ref: logicalId(bus) },
          }),
        },
      });
    });

    it('grants the secret’s actions on that secret, and its key only via Secrets Manager for that secret', () => {
      expect(statements()).toContainEqual({ Effect: 'Allow', Action: SECRET_ACTIONS.rotate.secret, Resource: { Ref: logicalId(secret) } });
      expect(statements()).toContainEqual({
        Effect: 'Allow',
        Action: SECRET_ACTIONS.rotate.key,
        Resource: arn(key),
        Condition: {
          StringEquals: {
            'kms:ViaService': viaService('secretsmanager'),
            'kms:EncryptionContext:SecretARN': { Ref: logicalId(secret) },
          },
        },
      });
    });

    it('grants the table’s actions on the table and the named index, never a wildcard', () => {
      expect(statements()).toContainEqual({
        Effect: 'Allow',
        Action: TABLE_ACTIONS.readWrite.table,
        Resource: [arn(table), { 'Fn::Join': ['', [arn(table), '/index/due']] }],
      });
      expect(TABLE_ACTIONS.readWrite.table).not.toContain('dynamodb:Scan');
    });

    it('grants the bucket’s actions under the prefix only, listing limited to the prefix when readable', () => {
      expect(statements()).toContainEqual({
        Effect: 'Allow',
        Action: BUCKET_ACTIONS.write.objects,
        Resource: { 'Fn::Join': ['', [arn(bucket), '/exports/*']] },
      });
      expect(statements().some((s) => s.Action === 's3:ListBucket')).toBe(false);
      const ack = acknowledgements(stack).find((a) => a.id.startsWith('AwsSolutions-IAM5'));
      expect(ack).toEqual({
        path: expect.stringContaining('FnRole'),
        id: `AwsSolutions-IAM5[Resource::<${logicalId(bucket)}.Arn>/exports/*]`,
        reason: expect.stringMatching(/created at run time/),
      });
    });

    it('grants sending on the queue and consumes the other with partial batch responses and a concurrency cap', () => {
      expect(statements()).toContainEqual({ Effect: 'Allow', Action: QUEUE_ACTIONS.send.queue[0], Resource: arn(queue) });
      expect(statements()).toContainEqual({ Effect: 'Allow', Action: 'events:PutEvents', Resource: arn(bus) });
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: arn(jobs),
        BatchSize: 5,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 4 },
      });
    });

    it('grants the poller of the consumed queue what Lambda needs of it and no more: no ChangeMessageVisibility, no GetQueueUrl', () => {
      const onJobs = statements().filter((s) => JSON.stringify(s.Resource) === JSON.stringify(arn(jobs)));
      expect(onJobs).toEqual([{ Effect: 'Allow', Action: [...EVENT_SOURCE_QUEUE_ACTIONS], Resource: arn(jobs) }]);
      expect(EVENT_SOURCE_QUEUE_ACTIONS).toEqual(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']);
      // The poller decrypts through SQS only: SqsEventSource's own grant had no condition.
      expect(statements()).toContainEqual({
        Effect: 'Allow',
        Action: 'kms:Decrypt',
        Resource: arn(key),
        Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['sqs.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } } },
      });
      expect(statements().filter((s) => s.Action === 'kms:Decrypt' && s.Condition === undefined)).toEqual([]);
      expect(() => fn.consumeQueue(queue, { batchSize: 11 })).toThrow(/batchSize must be 1 to 10/);
    });

    it('leaves cdk-nag nothing unacknowledged', () => {
      expect(describeViolations(nagViolations(stack))).toEqual([]);
    });

    it('refuses to bind one variable twice, and write access to an index', () => {
      expect(() => fn.bindSecret(secret, 'SECRET_ARN', 'read')).toThrow(/SECRET_ARN is already bound/);
      expect(() => fn.bindSecret(secret, 'ACCTOPS_STAGE', 'read')).toThrow(/already bound/);
      expect(() => fn.bindSecret(secret, 'secretArn', 'read')).toThrow(/UPPER_SNAKE_CASE/);
      expect(() => fn.bindTable(table, 'OTHER_TABLE', 'write', { indexes: ['due'] })).toThrow(/indexes are read-only/);
    });
  });

  describe('bindScheduleCreation: the variables a run-time schedule is made of, with their grants', () => {
    let fn!: AcctopsFunction;
    let target!: AcctopsFunction;
    let role!: Role;
    let key!: Key;
    let deadLetters!: Queue;
    const { stack, template } = stackWith((s) => {
      key = new Key(s, 'Key', { enableKeyRotation: true });
      deadLetters = new Queue(s, 'DeadLetters', { encryption: QueueEncryption.KMS, encryptionMasterKey: key, enforceSSL: true });
      Validations.of(deadLetters).acknowledge({ id: 'AwsSolutions-SQS3', reason: 'A test fixture: it is itself the dead-letter queue.' });
      target = new AcctopsFunction(s, 'Target', { ...BASE, handlerDir: 'revoke-api-key' });
      role = new Role(s, 'SchedulesRole', { assumedBy: new ServicePrincipal('scheduler.amazonaws.com') });
      fn = new AcctopsFunction(s, 'Fn', BASE).bindScheduleCreation({
        group: new ScheduleGroup(s, 'Group', { scheduleGroupName: 'jobs' }),
        namePrefix: 'job-',
        reason: 'Schedules are named at run time; the grant covers the job- schedules of one group only.',
        target,
        role,
        deadLetterQueue: deadLetters,
        env: { group: 'JOB_GROUP', target: 'JOB_TARGET_ARN', role: 'JOB_ROLE_ARN', deadLetter: 'JOB_DEAD_LETTER_ARN' },
      });
    });
    const arn = (c: IConstruct) => ({ 'Fn::GetAtt': [logicalId(c), 'Arn'] });
    const schedules = {
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':scheduler:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':schedule/jobs/job-*'],
      ],
    };

    it('sets the four variables to the group, the target, the role and the queue', () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({
            JOB_GROUP: 'jobs',
            JOB_TARGET_ARN: arn(target),
            JOB_ROLE_ARN: arn(role),
            JOB_DEAD_LETTER_ARN: arn(deadLetters),
          }),
        },
      });
      expect([...fn.boundVariables].sort()).toEqual(['JOB_DEAD_LETTER_ARN', 'JOB_GROUP', 'JOB_ROLE_ARN', 'JOB_TARGET_ARN']);
    });

    it('grants the function the schedules of that group and prefix and passing that role to Scheduler, nothing else', () => {
      expect(roleStatements(template, logicalId(fn.executionRole)).filter((st) => !JSON.stringify(st.Action).includes('logs:'))).toEqual([
        { Effect: 'Allow', Action: SCHEDULE_ACTIONS.create, Resource: schedules },
        {
          Effect: 'Allow',
          Action: 'iam:PassRole',
          Resource: arn(role),
          Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
        },
      ]);
      expect(acknowledgements(stack).filter((a) => a.path.includes('FnRole'))).toEqual([
        {
          path: expect.stringContaining('FnRole'),
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/jobs/job-*]`,
          reason: expect.stringMatching(/named at run time/),
        },
      ]);
    });

    it('grants the role invoking the target and sending to the queue (its key through SQS only), nothing else', () => {
      expect(roleStatements(template, logicalId(role))).toEqual([
        { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: arn(target) },
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: arn(deadLetters) },
        {
          Effect: 'Allow',
          Action: QUEUE_ACTIONS.send.key,
          Resource: arn(key),
          Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['sqs.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } } },
        },
      ]);
    });

    it('binds the group alone for a reader, and refuses a variable bound twice', () => {
      const reader = new AcctopsFunction(stack, 'Reader', { ...BASE, handlerDir: 'check-key-rotations' });
      const group = ScheduleGroup.fromScheduleGroupName(stack, 'Other', 'other');
      reader.bindScheduleGroup(group, 'GROUP', 'read', {
        namePrefix: 'job-',
        reason: 'reads the job- schedules of one group only, by name',
      });
      expect(reader.boundVariables.has('GROUP')).toBe(true);
      expect(() => reader.bindScheduleGroup(group, 'GROUP', 'read', { namePrefix: 'x-', reason: 'again' })).toThrow(
        /GROUP is already bound/,
      );
      expect(SCHEDULE_ACTIONS.read).toEqual(['scheduler:GetSchedule']);
    });
  });
});
