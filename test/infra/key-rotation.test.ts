import type { CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import type { IConstruct } from 'constructs';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY, REVOCATION_SCHEDULE_PREFIX } from '../../lib/constructs/key-rotation';
import * as core from '../../src/core/api-keys';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { acknowledgements, describeViolations, nagViolations, roleStatements, synthAcctopsStack, testApp, testStage } from '../helpers/cdk';

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

const CREATED = '0B7E4C9A-3F1D-4C2B-9A8E-5D6F7A8B9C0D';
const IMPORTED = '1b4e28ba-2fa1-41d2-883f-0016d3cca427';
const IMPORTED_ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:legacy/company-key-AbCdEf';

type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown; Effect: string };
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('KeyRotation', () => {
  const { app, stack, template } = synthAcctopsStack({
    companies: [{ companyId: CREATED }, { companyId: IMPORTED, existingSecretArn: IMPORTED_ARN }],
    apiKeys: { rotationDays: 7, revocationGraceMinutes: 45 },
  });
  const keys = stack.keyRotation;
  const created = keys.secrets.get(CREATED.toLowerCase())!;
  const createdRef = { Ref: logicalId(created) };
  const statementsOf = (role: IConstruct) => roleStatements(template, logicalId(role)) as Statement[];

  it('keeps the tags equal to the ones the functions look for (lib cannot import src)', () => {
    expect(COMPANY_KEY_TAGS).toEqual(core.COMPANY_KEY_TAGS);
    expect(PURPOSE_COMPANY_KEY).toBe(core.PURPOSE_COMPANY_KEY);
  });

  it('creates the secret of a configured company under the stack key, tagged, and imports the other by ARN', () => {
    expect(keys.secrets.get(IMPORTED)!.secretArn).toBe(IMPORTED_ARN);
    template.resourceCountIs('AWS::SecretsManager::Secret', 3); // the institution credential, the export webhook's and the created one
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      Name: `acctops/test/company/${CREATED.toLowerCase()}/api-key`,
      KmsKeyId: { 'Fn::GetAtt': [logicalId(stack.secretsKey), 'Arn'] },
      Tags: Match.arrayWith([
        { Key: 'acctops:company', Value: CREATED.toLowerCase() },
        { Key: 'acctops:purpose', Value: 'company-api-key' },
      ]),
    });
  });

  it('attaches a RotationSchedule to every company secret: the rotation function, every rotationDays, no rotation on deploy', () => {
    const schedules = Object.values(template.findResources('AWS::SecretsManager::RotationSchedule')).map((r) => r.Properties);
    expect(schedules).toHaveLength(2);
    for (const props of schedules) {
      expect(props).toMatchObject({
        RotationLambdaARN: { 'Fn::GetAtt': [logicalId(keys.rotateFunction), 'Arn'] },
        RotationRules: { AutomaticallyAfterDays: 7 },
        RotateImmediatelyOnUpdate: false,
      });
    }
    expect(schedules.map((p) => p.SecretId)).toEqual(expect.arrayContaining([createdRef, IMPORTED_ARN]));
    // Secrets Manager may invoke the function for this stage's company secrets (one permission on
    // the name pattern, which covers the secrets created at run time too) and for each imported one
    // (its own permission): never for another secret of the account.
    const permissions = Object.entries(template.findResources('AWS::Lambda::Permission')).filter(
      ([, r]) => r.Properties.Principal === 'secretsmanager.amazonaws.com',
    );
    const pattern = stack.resolve(keys.companySecretsArnPattern) as unknown;
    expect(permissions.map(([, r]) => r.Properties)).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [logicalId(keys.rotateFunction), 'Arn'] },
        Principal: 'secretsmanager.amazonaws.com',
        SourceAccount: { Ref: 'AWS::AccountId' },
        SourceArn: pattern,
      },
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [logicalId(keys.rotateFunction), 'Arn'] },
        Principal: 'secretsmanager.amazonaws.com',
        SourceAccount: { Ref: 'AWS::AccountId' },
        SourceArn: IMPORTED_ARN,
      },
    ]);
    expect(JSON.stringify(pattern)).toContain(':secret:acctops/test/company/*');
    // Each schedule is created after the permission that covers its secret, or CloudFormation's
    // configuration test could not invoke the function.
    const permissionOf = (secretId: unknown) =>
      permissions.find(
        ([, r]) => JSON.stringify(r.Properties.SourceArn) === JSON.stringify(secretId === IMPORTED_ARN ? IMPORTED_ARN : pattern),
      )![0];
    for (const schedule of Object.values(template.findResources('AWS::SecretsManager::RotationSchedule'))) {
      expect(schedule.DependsOn).toContain(permissionOf(schedule.Properties.SecretId));
    }
  });

  it('defaults to every 30 days', () => {
    const { template: t } = synthAcctopsStack({ companies: [{ companyId: IMPORTED }] });
    t.hasResourceProperties('AWS::SecretsManager::RotationSchedule', { RotationRules: { AutomaticallyAfterDays: 30 } });
  });

  it('gives the functions the grace period, the cache TTL and the revocation wiring in their environment', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          ACCTOPS_FUNCTION: 'rotate-api-key',
          REVOCATION_GRACE_SECONDS: '2700',
          SECRET_CACHE_TTL_SECONDS: '300',
          REVOCATION_SCHEDULE_GROUP: 'acctops-test-key-revocations',
          REVOKE_FUNCTION_ARN: { 'Fn::GetAtt': [logicalId(keys.revokeFunction), 'Arn'] },
          REVOCATION_SCHEDULER_ROLE_ARN: { 'Fn::GetAtt': [logicalId(keys.revocationSchedulerRole), 'Arn'] },
        }),
      },
    });
  });

  describe('least privilege', () => {
    const tagPattern = {
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':secretsmanager:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':secret:acctops/test/company/*',
        ],
      ],
    };
    const stageCondition = {
      StringEquals: { 'aws:ResourceTag/acctops:stage': 'test', 'aws:ResourceTag/acctops:purpose': 'company-api-key' },
    };
    // Created secrets by the stage tag (one statement, any number of companies); the imported one by its ARN.
    const secretResources = [tagPattern, IMPORTED_ARN];

    it('company secrets are reached by tag: every statement on the name pattern requires the stage and purpose tags', () => {
      for (const fn of [keys.rotateFunction, keys.revokeFunction, keys.doctorFunction]) {
        const onPattern = statementsOf(fn.executionRole).filter((s) => JSON.stringify(s.Resource) === JSON.stringify(tagPattern));
        expect(onPattern).toHaveLength(1);
        expect(onPattern[0]!.Condition).toEqual(stageCondition);
        // No statement names the created secret by ARN any more.
        expect(statementsOf(fn.executionRole).some((s) => JSON.stringify(s.Resource).includes(createdRef.Ref))).toBe(false);
      }
    });
    const scheduleArn = (s: Statement) =>
      JSON.stringify(s.Resource).includes(`schedule/`) && JSON.stringify(s.Resource).includes(`/${REVOCATION_SCHEDULE_PREFIX}*`);

    it('rotation: the four rotation actions on the company secrets, schedules of its group, PassRole of the scheduler role only', () => {
      const statements = statementsOf(keys.rotateFunction.executionRole);
      const secretStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('secretsmanager:')));
      expect(secretStatements.map((s) => s.Resource)).toEqual(expect.arrayContaining(secretResources));
      expect(new Set(secretStatements.flatMap(actionsOf))).toEqual(
        new Set([
          'secretsmanager:DescribeSecret',
          'secretsmanager:GetSecretValue',
          'secretsmanager:PutSecretValue',
          'secretsmanager:UpdateSecretVersionStage',
        ]),
      );
      const scheduler = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('scheduler:')));
      expect(scheduler).toHaveLength(1);
      expect(actionsOf(scheduler[0]!).sort()).toEqual(['scheduler:CreateSchedule', 'scheduler:GetSchedule', 'scheduler:UpdateSchedule']);
      expect(scheduleArn(scheduler[0]!)).toBe(true);
      expect(JSON.stringify(scheduler[0]!.Resource)).toContain('acctops-test-key-revocations');
      const passRole = statements.filter((s) => actionsOf(s).includes('iam:PassRole'));
      expect(passRole).toEqual([
        expect.objectContaining({
          Resource: { 'Fn::GetAtt': [logicalId(keys.revocationSchedulerRole), 'Arn'] },
          Condition: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
        }),
      ]);
      expect(statements.some((s) => s.Resource === '*')).toBe(false);
      // The customer-managed key, only through Secrets Manager, for this stage's company secrets.
      expect(statements).toContainEqual(
        expect.objectContaining({
          Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
          Condition: expect.objectContaining({ StringLike: { 'kms:EncryptionContext:SecretARN': tagPattern } }),
        }),
      );
    });

    it("rotation: one company registry entry by key (GetItem, the registry's key through DynamoDB), to refuse a removed company; nothing else of the registry", () => {
      const table = logicalId(stack.companies.table);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ ACCTOPS_FUNCTION: 'rotate-api-key', COMPANY_REGISTRY_TABLE_NAME: { Ref: table } }) },
      });
      const statements = statementsOf(keys.rotateFunction.executionRole);
      const dynamo = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
      expect(dynamo).toEqual([expect.objectContaining({ Action: 'dynamodb:GetItem', Resource: { 'Fn::GetAtt': [table, 'Arn'] } })]);
      const registryKey = { 'Fn::GetAtt': [logicalId(stack.companies.table.encryptionKey!), 'Arn'] };
      expect(statements.filter((s) => JSON.stringify(s.Resource) === JSON.stringify(registryKey))).toEqual([
        expect.objectContaining({
          Action: 'kms:Decrypt',
          Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } } },
        }),
      ]);
    });

    it('revocation: reads the company secrets and sends its failed invocations to FailedInvocations, nothing else', () => {
      const statements = statementsOf(keys.revokeFunction.executionRole).filter((s) => !actionsOf(s).some((a) => a.startsWith('logs:')));
      expect(new Set(statements.flatMap(actionsOf))).toEqual(new Set(['secretsmanager:GetSecretValue', 'kms:Decrypt', 'sqs:SendMessage']));
    });

    it('doctor: no PutSecretValue; list calls only where no resource-level permission exists', () => {
      const statements = statementsOf(keys.doctorFunction.executionRole);
      const actions = new Set(statements.flatMap(actionsOf));
      expect(actions.has('secretsmanager:PutSecretValue')).toBe(false);
      expect(actions.has('scheduler:CreateSchedule')).toBe(false);
      const wildcard = statements.filter((s) => s.Resource === '*');
      expect(wildcard.flatMap(actionsOf).sort()).toEqual(['scheduler:ListSchedules', 'secretsmanager:ListSecrets']);
    });

    it('the revocation schedules run as a role that may invoke revoke-api-key and dead-letter to FailedInvocations, nothing else', () => {
      expect(statementsOf(keys.revocationSchedulerRole)).toEqual([
        { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: { 'Fn::GetAtt': [logicalId(keys.revokeFunction), 'Arn'] } },
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [logicalId(stack.failedInvocations.queue), 'Arn'] } },
      ]);
      const role = template.findResources('AWS::IAM::Role')[logicalId(keys.revocationSchedulerRole)]!;
      expect(role.Properties.AssumeRolePolicyDocument.Statement[0]).toMatchObject({
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': expect.anything() } },
      });
    });
  });

  it('runs the doctor on a schedule and sends every alarm to the stack topic', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 hour)',
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [logicalId(keys.doctorFunction), 'Arn'] },
        Input: JSON.stringify({
          source: 'acctops.scheduler',
          schedule: 'key-rotation-doctor',
          scheduledAt: '<aws.scheduler.scheduled-time>',
          executionId: '<aws.scheduler.execution-id>',
        }),
      }),
    });
    const topic = { Ref: logicalId(stack.alarmTopic) };
    for (const alarm of Object.values(keys.alarms)) {
      const props = template.findResources('AWS::CloudWatch::Alarm')[logicalId(alarm)]!.Properties;
      expect(props.AlarmActions).toEqual([topic]);
    }
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'UnrepairedRotationFindings',
      Namespace: 'Acctops',
      Dimensions: Match.arrayWith([{ Name: 'Function', Value: 'check-key-rotations' }]),
    });
  });

  it('grantCompanyKeys lets a consumer read every company key and find them by tag, nag-clean', () => {
    const other = testApp();
    const withConsumer = new AcctopsStack(other, 'acctops-test', { stage: testStage({ companies: [{ companyId: CREATED }] }) });
    // Another stage name: the stack's own check-health already has /acctops/test/check-health.
    const consumer = new AcctopsFunction(withConsumer, 'Consumer', {
      ...withConsumer.functionDefaults,
      stageName: 'consumer',
      handlerDir: 'check-health',
      description: 'a consumer',
    });
    withConsumer.keyRotation.grantCompanyKeys(consumer);
    const t = Template.fromStack(withConsumer);
    const statements = roleStatements(t, logicalId(consumer.executionRole)) as Statement[];
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: 'secretsmanager:GetSecretValue',
        Resource: withConsumer.resolve(withConsumer.keyRotation.companySecretsArnPattern) as unknown,
        Condition: { StringEquals: { 'aws:ResourceTag/acctops:stage': 'test', 'aws:ResourceTag/acctops:purpose': 'company-api-key' } },
      }),
    );
    expect(statements).toContainEqual(expect.objectContaining({ Action: 'secretsmanager:ListSecrets', Resource: '*' }));
    expect(new Set(statements.flatMap(actionsOf))).not.toContain('secretsmanager:PutSecretValue');
    expect(describeViolations(nagViolations(other))).toEqual([]);
  });

  describe('cdk-nag AwsSolutions', () => {
    it('reports no unacknowledged error or warning', () => {
      expect(describeViolations(nagViolations(app))).toEqual([]);
    });

    it('acknowledges only wildcards it explains', () => {
      const mine = acknowledgements(app).filter((a) => a.path.includes('/KeyRotation/'));
      expect(mine.length).toBeGreaterThan(0);
      for (const ack of mine) {
        expect(ack.id).toMatch(/^AwsSolutions-IAM5\[Resource::/);
        expect(ack.reason.length).toBeGreaterThan(60);
      }
    });
  });
});

describe('KeyRotation: an imported secret under a customer-managed key (existingSecretKmsKeyArn)', () => {
  const KEY_ARN = 'arn:aws:kms:eu-central-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  const viaSecretsManager = { 'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.amazonaws.com']] };
  const companies = (key?: string) => [
    { companyId: CREATED },
    { companyId: IMPORTED, existingSecretArn: IMPORTED_ARN, ...(key === undefined ? {} : { existingSecretKmsKeyArn: key }) },
  ];

  /** handlerDir → its statements, for every function of the stack. */
  const functionStatements = ({ stack, template }: ReturnType<typeof synthAcctopsStack>) =>
    new Map(
      stack.node
        .findAll()
        .filter((c): c is AcctopsFunction => c instanceof AcctopsFunction)
        .map((fn) => [fn.handlerDir, roleStatements(template, logicalId(fn.executionRole)) as Statement[]]),
    );
  /** The functions that read or write the imported secret's value, which Secrets Manager decrypts or encrypts with its key. */
  const valueUsers = (statements: Map<string, Statement[]>) =>
    [...statements]
      .filter(([, list]) =>
        list.some(
          (s) =>
            JSON.stringify(s.Resource) === JSON.stringify(IMPORTED_ARN) &&
            actionsOf(s).some((a) => a === 'secretsmanager:GetSecretValue' || a === 'secretsmanager:PutSecretValue'),
        ),
      )
      .map(([name]) => name)
      .sort();
  /** Statements granting KMS actions for the imported secret (its ARN as the encryption context). */
  const importedKeyGrants = (list: Statement[]) =>
    list.filter((s) => actionsOf(s).some((a) => a.startsWith('kms:')) && JSON.stringify(s.Condition ?? {}).includes(IMPORTED_ARN));

  it('grants each function that reads or writes the secret its key, through Secrets Manager, for that secret only', () => {
    const statements = functionStatements(synthAcctopsStack({ companies: companies(KEY_ARN) }));
    expect(valueUsers(statements)).toEqual(['check-key-rotations', 'export-period', 'revoke-api-key', 'rotate-api-key']);
    for (const [name, list] of statements) {
      const expected = !valueUsers(statements).includes(name)
        ? []
        : [
            {
              Effect: 'Allow',
              // Rotation writes a new version (PutSecretValue: GenerateDataKey); the others only read.
              Action: name === 'rotate-api-key' ? ['kms:Decrypt', 'kms:GenerateDataKey'] : 'kms:Decrypt',
              Resource: KEY_ARN,
              Condition: {
                StringEquals: { 'kms:ViaService': viaSecretsManager, 'kms:EncryptionContext:SecretARN': IMPORTED_ARN },
              },
            },
          ];
      expect([name, importedKeyGrants(list)]).toEqual([name, expected]);
      // Nothing else of that key: no grant without the secret's context.
      expect([name, list.filter((s) => s.Resource === KEY_ARN && !importedKeyGrants(list).includes(s))]).toEqual([name, []]);
    }
  });

  it.each([
    ['names none', undefined],
    ["names 'aws/secretsmanager'", 'aws/secretsmanager'],
  ])('grants no key for an imported secret that %s (the AWS managed key needs no grant)', (_, key) => {
    const statements = functionStatements(synthAcctopsStack({ companies: companies(key) }));
    expect(valueUsers(statements)).toHaveLength(4);
    for (const [name, list] of statements) expect([name, importedKeyGrants(list)]).toEqual([name, []]);
  });

  it("still grants the key for the imported secret's ARN when it is the stage's own kmsKeyArn", () => {
    const statements = functionStatements(synthAcctopsStack({ kmsKeyArn: KEY_ARN, companies: companies(KEY_ARN) }));
    for (const name of ['check-key-rotations', 'export-period', 'revoke-api-key', 'rotate-api-key']) {
      const grants = importedKeyGrants(statements.get(name)!);
      expect([name, grants.map((s) => [s.Resource, s.Condition])]).toEqual([
        name,
        [[KEY_ARN, { StringEquals: { 'kms:ViaService': viaSecretsManager, 'kms:EncryptionContext:SecretARN': IMPORTED_ARN } }]],
      ]);
    }
  });

  it('refuses a key that is no key ARN, and a key without existingSecretArn, naming the field', () => {
    expect(() =>
      synthAcctopsStack({ companies: [{ companyId: IMPORTED, existingSecretArn: IMPORTED_ARN, existingSecretKmsKeyArn: 'alias/legacy' }] }),
    ).toThrow(/stages\.test\.companies\[0\]\.existingSecretKmsKeyArn: expected a KMS key ARN/);
    for (const key of [KEY_ARN, 'aws/secretsmanager'])
      expect(() => synthAcctopsStack({ companies: [{ companyId: IMPORTED, existingSecretKmsKeyArn: key }] })).toThrow(
        /stages\.test\.companies\[0\]\.existingSecretKmsKeyArn: is set without existingSecretArn/,
      );
  });
});
