import type { CfnElement } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { DATASETS, EARLIEST_PERIOD, EXPORT_COLUMNS, GLUE_COLUMNS } from '../../contract/exports';
import { REPLAY_TABLE, RUN_LEDGER_TABLE } from '../../contract/tables';
import type { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { loadStageConfig } from '../../lib/config/stage';
import type { Exports } from '../../lib/constructs/exports/exports';
import { exportRequestedRuleName } from '../../lib/constructs/exports/pipeline';
import type { KeyRotation } from '../../lib/constructs/key-rotation';
import type { TokenLifecycle } from '../../lib/constructs/token-lifecycle';
import {
  categoriesTable,
  taxReportsTable,
  transactionsTable,
  type Table as WriterTable,
} from '../../src/core/exports/formats/dataset-tables';
import { periodContaining, refuseFuturePeriod } from '../../src/core/exports/formats/period';
import { acknowledgements, describeViolations, nagViolations, roleStatements, synthAcctopsStack } from '../helpers/cdk';

const COMPANY = '6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B';

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };
const actions = (s: Statement) => [s.Action].flat();

describe('Exports', () => {
  const { app, stack, template } = synthAcctopsStack({ companies: [{ companyId: COMPANY }] });
  const exports = stack.node.findChild('Exports') as Exports;
  const tokens = stack.node.findChild('Tokens') as TokenLifecycle;
  const keyRotation = stack.node.findChild('KeyRotation') as KeyRotation;
  const id = (c: IConstruct) => logicalId(c);
  const arnOf = (c: IConstruct) => ({ 'Fn::GetAtt': [id(c), 'Arn'] });
  const statementsOf = (fn: AcctopsFunction) => roleStatements(template, id(fn.executionRole)) as Statement[];
  const mentions = (value: unknown, logical: string) => JSON.stringify(value).includes(`"${logical}"`);
  const allPolicies = () =>
    Object.values(template.findResources('AWS::IAM::Policy')).map((p) => ({
      roles: (p.Properties.Roles as { Ref: string }[]).map((r) => r.Ref),
      statements: p.Properties.PolicyDocument.Statement as Statement[],
    }));

  describe('cdk-nag AwsSolutions', () => {
    it('reports no finding anywhere in the stack', () => {
      expect(describeViolations(nagViolations(app))).toEqual([]);
    });

    it('acknowledges exactly these, each with a reason', () => {
      const acks = acknowledgements(exports);
      expect(acks.map((a) => `${a.path.replace('acctops-test/Exports/', '')} ${a.id}`).sort()).toEqual(
        [
          // The log bucket does not log itself. (No ACL, so no W3045 note of CDK's: logs arrive under the bucket policy.)
          'Storage/AccessLogs AwsSolutions-S1',
          // A dead-letter queue of an EventBridge target needs no dead-letter queue of its own.
          'Default/RequestDeadLetters AwsSolutions-SQS3',
          // Shared with an outside sender: changed by runbook, not rotated by Lambda.
          'WebhookIntake/WebhookSecret AwsSolutions-SMG4',
          // Object keys under exports/ are made at run time (bindBucket).
          `Default/WorkerRole AwsSolutions-IAM5[Resource::<${id(exports.bucket)}.Arn>/exports/*]`,
          `Default/OverdueCheckRole AwsSolutions-IAM5[Resource::<${id(exports.bucket)}.Arn>/exports/*]`,
          // secretsmanager:ListSecrets has no resource-level permissions (KeyRotation.grantCompanyKeys).
          'Default/WorkerRole AwsSolutions-IAM5[Resource::*]',
          // This stage's company key secrets by tag (KeyRotation.grantCompanyKeys, issue 15).
          'Default/WorkerRole AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:acctops/test/company/*]',
        ].sort(),
      );
      for (const ack of acks) if (ack.id.startsWith('AwsSolutions')) expect(ack.reason.length).toBeGreaterThan(40);
    });
  });

  describe('monthly schedule', () => {
    it('runs the planner on the cron of the stage in its time zone (default Europe/Berlin), retried, with the schedule context as input', () => {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'cron(0 3 1 * ? *)',
        ScheduleExpressionTimezone: 'Europe/Berlin',
        Target: {
          Arn: arnOf(exports.planner),
          Input: JSON.stringify({
            source: 'acctops.scheduler',
            schedule: 'monthly-export',
            scheduledAt: '<aws.scheduler.scheduled-time>',
            executionId: '<aws.scheduler.execution-id>',
          }),
          RetryPolicy: { MaximumRetryAttempts: 2 },
        },
      });
    });

    it('takes the time zone and cron from the stage config, and gives the planner the same zone', () => {
      const other = synthAcctopsStack({ schedules: { monthlyExport: 'cron(30 0 1 * ? *)', timeZone: 'America/New_York' } });
      const ex = other.stack.node.findChild('Exports') as Exports;
      other.template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'cron(30 0 1 * ? *)',
        ScheduleExpressionTimezone: 'America/New_York',
        Target: { Arn: { 'Fn::GetAtt': [logicalId(ex.planner), 'Arn'] } },
      });
      other.template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ ACCTOPS_FUNCTION: 'plan-monthly-export', EXPORT_TIME_ZONE: 'America/New_York' }) },
      });
    });

    it('the scheduler’s role may invoke the planner and dead-letter to FailedInvocations, nothing else', () => {
      const [schedule] = Object.values(
        template.findResources('AWS::Scheduler::Schedule', { Properties: { ScheduleExpression: 'cron(0 3 1 * ? *)' } }),
      );
      const role = (schedule!.Properties.Target.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      expect(roleStatements(template, role)).toEqual([
        { Action: 'lambda:InvokeFunction', Effect: 'Allow', Resource: arnOf(exports.planner) },
        {
          Action: 'sqs:SendMessage',
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(stack.failedInvocations.queue.node.defaultChild as CfnElement), 'Arn'] },
        },
      ]);
    });
  });

  describe('the bucket', () => {
    const bucket = () => template.findResources('AWS::S3::Bucket')[id(exports.bucket)]!.Properties;

    it('is encrypted with its own rotating KMS key, versioned, private and logs access to a separate bucket', () => {
      expect(bucket()).toMatchObject({
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [
            { ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: arnOf(exports.key) }, BucketKeyEnabled: true },
          ],
        },
        VersioningConfiguration: { Status: 'Enabled' },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        LoggingConfiguration: { DestinationBucketName: { Ref: id(exports.accessLogs) } },
      });
      template.hasResourceProperties('AWS::KMS::Key', { Description: Match.stringLikeRegexp('exports bucket'), EnableKeyRotation: true });
      expect(template.findResources('AWS::S3::Bucket')[id(exports.accessLogs)]!.Properties).toMatchObject({
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      });
      // Delivered under the bucket policy, not the LogDeliveryWrite ACL: only the exports bucket's logs, from this account.
      expect(template.findResources('AWS::S3::Bucket')[id(exports.accessLogs)]!.Properties.AccessControl).toBeUndefined();
      const logPolicy = Object.values(template.findResources('AWS::S3::BucketPolicy')).find(
        (p) => (p.Properties.Bucket as { Ref: string }).Ref === id(exports.accessLogs),
      )!;
      expect((logPolicy.Properties.PolicyDocument.Statement as Statement[]).filter((s) => s.Effect === 'Allow')).toEqual([
        {
          Effect: 'Allow',
          Principal: { Service: 'logging.s3.amazonaws.com' },
          Action: 's3:PutObject',
          Resource: { 'Fn::Join': ['', [arnOf(exports.accessLogs), '/exports-bucket/*']] },
          Condition: {
            ArnLike: { 'aws:SourceArn': arnOf(exports.bucket) },
            StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
          },
        },
      ]);
    });

    it('aborts incomplete multipart uploads, expires noncurrent versions and removes expired delete markers', () => {
      expect(bucket().LifecycleConfiguration.Rules).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
          expect.objectContaining({ NoncurrentVersionExpiration: { NoncurrentDays: 30 }, Status: 'Enabled' }),
          expect.objectContaining({ ExpiredObjectDeleteMarker: true, Status: 'Enabled' }),
        ]),
      );
    });

    it('its policy refuses any request without TLS (and TLS below 1.2), and allows nothing to anyone', () => {
      const policies = Object.values(template.findResources('AWS::S3::BucketPolicy')).filter((p) =>
        mentions(p.Properties.Bucket, id(exports.bucket)),
      );
      expect(policies).toHaveLength(1);
      const statements = policies[0]!.Properties.PolicyDocument.Statement as (Statement & { Principal: unknown })[];
      const resources = [arnOf(exports.bucket), { 'Fn::Join': ['', [arnOf(exports.bucket), '/*']] }];
      expect(statements).toEqual(
        expect.arrayContaining([
          {
            Action: 's3:*',
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            Resource: resources,
          },
          {
            Action: 's3:*',
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } },
            Resource: resources,
          },
        ]),
      );
      expect(statements.filter((s) => s.Effect === 'Allow')).toEqual([]);
    });
  });

  describe('the Glue tables', () => {
    const glueType = { text: 'string', date: 'date', timestamp: 'timestamp', integer: 'bigint', decimal: 'decimal(18,4)' } as const;
    const writers: Record<keyof typeof GLUE_COLUMNS, WriterTable<never>> = {
      transactions: transactionsTable as WriterTable<never>,
      tax_reports: taxReportsTable as WriterTable<never>,
      categories: categoriesTable as WriterTable<never>,
    };

    it('read the Parquet through the period’s symlink with partition projection on company and period (no crawler)', () => {
      const bucketName = { Ref: id(exports.bucket) };
      template.hasResourceProperties('AWS::Glue::Table', {
        DatabaseName: { Ref: stack.getLogicalId(exports.database) },
        TableInput: {
          Name: 'transactions',
          TableType: 'EXTERNAL_TABLE',
          PartitionKeys: [
            { Name: 'company', Type: 'string' },
            { Name: 'period', Type: 'string' },
          ],
          Parameters: {
            'projection.enabled': 'true',
            'projection.company.type': 'injected',
            'projection.period.type': 'date',
            'projection.period.format': 'yyyy-MM',
            'projection.period.range': '2000-01,NOW+14HOURS',
            'projection.period.interval': '1',
            'projection.period.interval.unit': 'MONTHS',
            'storage.location.template': {
              'Fn::Join': ['', ['s3://', bucketName, '/exports/company=${company}/period=${period}/transactions/_symlink/']],
            },
          },
          StorageDescriptor: {
            Location: { 'Fn::Join': ['', ['s3://', bucketName, '/exports/']] },
            InputFormat: 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat',
            OutputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
            SerdeInfo: { SerializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' },
          },
        },
      });
    });

    it('project every month an export can be made for: from EARLIEST_PERIOD to the month begun in any time zone', () => {
      const ranges = Object.values(template.findResources('AWS::Glue::Table')).map(
        (table) => table.Properties.TableInput.Parameters['projection.period.range'] as string,
      );
      expect(ranges).toHaveLength(DATASETS.length);
      expect(new Set(ranges).size).toBe(1);
      // Athena's relative end: NOW, optionally plus hours, read in UTC at query time.
      const [, start, hours] = /^(\d{4}-\d{2}),NOW(?:\+(\d+)HOURS)?$/.exec(ranges[0]!) ?? [];
      // The writers' lower bound, so that a backfill of 2000-01..2019-12 is queryable.
      expect(start).toBe(EARLIEST_PERIOD);
      // The latest month an export may be made for is the current one in the stage's zone
      // (refuseFuturePeriod): it must be projected at every instant around a month's start, in every
      // zone the runtime knows (southern summer and northern summer: offsets change with DST).
      const hourMs = 3_600_000;
      const late: string[] = [];
      for (const zone of Intl.supportedValuesOf('timeZone')) {
        for (const monthStart of [Date.UTC(2026, 6, 1), Date.UTC(2026, 11, 1)]) {
          for (let now = monthStart - 15 * hourMs; now <= monthStart; now += hourMs / 4) {
            const current = periodContaining(now, zone).text;
            if (current > periodContaining(now + Number(hours ?? 0) * hourMs, 'UTC').text)
              late.push(`${zone} at ${new Date(now).toISOString()}`);
          }
        }
      }
      expect(late).toEqual([]);
      const kiritimati = Date.UTC(2026, 10, 30, 10, 30);
      expect(() => refuseFuturePeriod('2026-12', kiritimati, 'Pacific/Kiritimati')).not.toThrow();
    });

    it.each(Object.keys(GLUE_COLUMNS) as (keyof typeof GLUE_COLUMNS)[])(
      '%s has exactly the writer’s columns and types (no float, amounts decimal)',
      (dataset) => {
        const tables = Object.values(template.findResources('AWS::Glue::Table')).filter((t) => t.Properties.TableInput.Name === dataset);
        expect(tables).toHaveLength(1);
        const columns = tables[0]!.Properties.TableInput.StorageDescriptor.Columns as { Name: string; Type: string }[];
        expect(writers[dataset].columns).toBe(EXPORT_COLUMNS[dataset]);
        expect(columns).toEqual(writers[dataset].columns.map((c) => ({ Name: c.name, Type: glueType[c.kind] })));
        expect(columns.some((c) => /float|double/.test(c.Type))).toBe(false);
        expect(JSON.stringify(tables[0]!.Properties.TableInput.Parameters['storage.location.template'])).toContain(`/${dataset}/_symlink/`);
      },
    );
  });

  describe('queue, worker and tables', () => {
    it('is a FIFO queue with explicit deduplication ids and a FIFO dead-letter queue', () => {
      expect(template.findResources('AWS::SQS::Queue')[id(exports.queue)]!.Properties).toMatchObject({
        FifoQueue: true,
        ContentBasedDeduplication: false,
        VisibilityTimeout: 5400,
        KmsMasterKeyId: arnOf(exports.key),
        RedrivePolicy: { deadLetterTargetArn: arnOf(exports.deadLetterQueue), maxReceiveCount: 3 },
      });
      expect(template.findResources('AWS::SQS::Queue')[id(exports.deadLetterQueue)]!.Properties).toMatchObject({ FifoQueue: true });
    });

    it('drives the worker one job per invocation, at most 5 at once, with partial batch responses', () => {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: arnOf(exports.queue),
        FunctionName: { Ref: id(exports.worker) },
        BatchSize: 1,
        ScalingConfig: { MaximumConcurrency: 5 },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({
            ACCTOPS_FUNCTION: 'export-period',
            EXPORT_MAX_RECEIVE_COUNT: '3',
            ACCTOPS_TOOL_VERSION: Match.stringLikeRegexp('^\\d+\\.\\d+\\.\\d+'),
            // A 16 MiB semi-space instead of the runtime's 51: the export's peak RSS bound (bench/);
            // an old space of 2,047 MiB, for V8's pacing of full collections (the construct's prop says why).
            NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=16 --max-old-space-size=2047',
          }),
        },
        Timeout: 900,
        MemorySize: 1024,
      });
    });

    it('gives the planner, the webhook and the worker the registry table and no list of companies; the worker the split size', () => {
      const planner = Object.values(template.findResources('AWS::Lambda::Function')).find(
        (f) =>
          (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties.Environment?.Variables
            ?.ACCTOPS_FUNCTION === 'plan-monthly-export',
      ) as { Properties: { Environment: { Variables: Record<string, unknown> } } };
      expect(planner.Properties.Environment.Variables).toHaveProperty('COMPANY_REGISTRY_TABLE_NAME');
      expect(planner.Properties.Environment.Variables).not.toHaveProperty('EXPORT_COMPANY_IDS');
      expect(JSON.stringify(planner.Properties.Environment.Variables)).not.toContain(COMPANY.toLowerCase());
      const webhook = Object.values(template.findResources('AWS::Lambda::Function')).find(
        (f) =>
          (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties.Environment?.Variables
            ?.ACCTOPS_FUNCTION === 'receive-export-webhook',
      ) as { Properties: { Environment: { Variables: Record<string, unknown> }; ReservedConcurrentExecutions: number } };
      expect(webhook.Properties.ReservedConcurrentExecutions).toBe(10);
      expect(webhook.Properties.Environment.Variables).toHaveProperty('COMPANY_REGISTRY_TABLE_NAME');
      expect(webhook.Properties.Environment.Variables).not.toHaveProperty('WEBHOOK_COMPANY_IDS');
      expect(JSON.stringify(webhook.Properties.Environment.Variables)).not.toContain(COMPANY.toLowerCase());
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ ACCTOPS_FUNCTION: 'export-period', EXPORT_MAX_TRANSACTIONS_PER_PART: '500000' }) },
      });
      // The worker reads the company's entry (its default currency): the table's name, and GetItem only (the IAM matrix).
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ ACCTOPS_FUNCTION: 'export-period', COMPANY_REGISTRY_TABLE_NAME: Match.anyValue() }) },
      });
      // Not configured: not set, and the template is as before.
      expect(JSON.stringify(template.toJSON())).not.toContain('EXPORT_TAX_REPORT_FIELDS');
    });

    it("gives the worker the stage's tax-report field names, as the JSON its environment schema reads", () => {
      const names = { periodEnd: 'endDate', periodStart: 'startDate' };
      const configured = synthAcctopsStack({ exports: { taxReportFields: names } }).template;
      const workers = Object.values(configured.findResources('AWS::Lambda::Function')).filter(
        (f) =>
          (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties.Environment?.Variables
            ?.EXPORT_TAX_REPORT_FIELDS,
      ) as { Properties: { Environment: { Variables: Record<string, string> } } }[];
      expect(workers.map((w) => w.Properties.Environment.Variables.ACCTOPS_FUNCTION)).toEqual(['export-period']);
      expect(JSON.parse(workers[0]!.Properties.Environment.Variables.EXPORT_TAX_REPORT_FIELDS!)).toEqual(names);
    });

    it('has the run ledger and replay tables of RUN_LEDGER_TABLE and REPLAY_TABLE, with TTL, encrypted with the exports key', () => {
      const tables = template.findResources('AWS::DynamoDB::Table');
      expect(tables[id(exports.runsTable)]!.Properties).toMatchObject({
        BillingMode: RUN_LEDGER_TABLE.billingMode,
        KeySchema: [
          { AttributeName: RUN_LEDGER_TABLE.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: RUN_LEDGER_TABLE.sortKey.name, KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: RUN_LEDGER_TABLE.partitionKey.name, AttributeType: RUN_LEDGER_TABLE.partitionKey.type },
          { AttributeName: RUN_LEDGER_TABLE.sortKey.name, AttributeType: RUN_LEDGER_TABLE.sortKey.type },
        ],
        TimeToLiveSpecification: { AttributeName: RUN_LEDGER_TABLE.timeToLiveAttribute, Enabled: true },
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: arnOf(exports.key) },
      });
      expect(tables[id(exports.replayTable)]!.Properties).toMatchObject({
        BillingMode: REPLAY_TABLE.billingMode,
        KeySchema: [{ AttributeName: REPLAY_TABLE.partitionKey.name, KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: REPLAY_TABLE.partitionKey.name, AttributeType: REPLAY_TABLE.partitionKey.type }],
        TimeToLiveSpecification: { AttributeName: REPLAY_TABLE.timeToLiveAttribute, Enabled: true },
      });
    });

    it('routes ExportRequested on the exports bus to request-export, with a dead-letter queue', () => {
      template.hasResourceProperties('AWS::Events::Rule', {
        EventBusName: { Ref: id(exports.eventBus) },
        EventPattern: { 'detail-type': ['ExportRequested'] },
        Targets: [
          Match.objectLike({
            Arn: arnOf(exports.requester),
            DeadLetterConfig: { Arn: arnOf(exports.requestDeadLetterQueue) },
            RetryPolicy: { MaximumRetryAttempts: 2 },
          }),
        ],
      });
    });

    it("lets EventBridge use the exports key for that rule's dead-letter queue only: its ARN, written from the rule's fixed name", () => {
      const keyPolicy = template.findResources('AWS::KMS::Key')[id(exports.key)]!.Properties.KeyPolicy.Statement as (Statement & {
        Principal: { Service?: string };
      })[];
      const forEvents = keyPolicy.filter((st) => st.Principal.Service === 'events.amazonaws.com');
      expect(forEvents).toHaveLength(1);
      expect(forEvents[0]!.Action).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
      const { StringEquals, ArnEquals, ...others } = forEvents[0]!.Condition!;
      expect([StringEquals, others]).toEqual([{ 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, {}]);
      // The ARN CloudFormation gives a rule on a custom bus (arn:…:rule/<bus>/<rule>), from the names in the template.
      const [ruleId, rule] = Object.entries(template.findResources('AWS::Events::Rule')).find(
        ([, r]) => JSON.stringify(r.Properties.EventPattern) === JSON.stringify({ 'detail-type': ['ExportRequested'] }),
      )!;
      const busName = template.findResources('AWS::Events::EventBus')[id(exports.eventBus)]!.Properties.Name as string;
      expect([ruleId, rule.Properties.Name]).toEqual([ruleId, 'acctops-test-export-requested']);
      expect(stack.resolve(ArnEquals)).toEqual({
        'aws:SourceArn': {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':events:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              `:rule/${busName}/${rule.Properties.Name as string}`,
            ],
          ],
        },
      });
      // No reference to the rule: the key would depend on it, and through its target on the DLQ and the key again.
      expect(JSON.stringify(forEvents)).not.toContain(ruleId);
    });

    it("names the rule within EventBridge's 64 characters for the longest stage name", () => {
      expect(exportRequestedRuleName('a'.repeat(20)).length).toBeLessThanOrEqual(64);
      expect(() =>
        loadStageConfig((key) => (key === 'stage' ? 'a'.repeat(21) : { ['a'.repeat(21)]: { baseUrl: 'https://x.example' } })),
      ).toThrow(/expected a stage name/);
    });

    it('serves the webhook on a Function URL without IAM auth (the HMAC signature is the authentication)', () => {
      template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE', TargetFunctionArn: arnOf(exports.webhook) });
    });
  });

  describe('least privilege', () => {
    const bucketId = () => id(exports.bucket);
    const keyId = () => id(exports.key);

    it('the worker writes and deletes objects under exports/ only, lists only that prefix, and uses the key only through S3 for it', () => {
      const statements = statementsOf(exports.worker);
      const s3 = statements.filter((s) => actions(s).some((a) => a.startsWith('s3:')));
      expect(s3).toEqual([
        {
          Action: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload', 's3:DeleteObject'],
          Effect: 'Allow',
          Resource: { 'Fn::Join': ['', [arnOf(exports.bucket), '/exports/*']] },
        },
        {
          Action: 's3:ListBucket',
          Effect: 'Allow',
          Resource: arnOf(exports.bucket),
          Condition: { StringLike: { 's3:prefix': ['exports/*'] } },
        },
      ]);
    });

    it('the worker reads the company key secrets and user tokens, but neither the institution secret nor the webhook secret', () => {
      const statements = statementsOf(exports.worker);
      const secretReads = statements.filter((s) => actions(s).includes('secretsmanager:GetSecretValue'));
      // By tag (issue 15): this stage's company key secrets, whatever their number, not one statement per secret.
      expect(secretReads.map((s) => [s.Resource, s.Condition])).toEqual([
        [
          stack.resolve(keyRotation.companySecretsArnPattern),
          { StringEquals: { 'aws:ResourceTag/acctops:stage': 'test', 'aws:ResourceTag/acctops:purpose': 'company-api-key' } },
        ],
      ]);
      expect(mentions(statements, id(stack.institutionSecret))).toBe(false);
      expect(mentions(statements, id(exports.webhookSecret))).toBe(false);
      const tokenTable = statements.filter((s) => mentions(s.Resource, id(tokens.table)));
      // One user's item by key (dynamodb-token-reader.ts): no batch, no query.
      expect(tokenTable.map((s) => s.Action)).toEqual(['dynamodb:GetItem']);
    });

    it('the planner lists active users through the keys-only index only, and touches neither the bucket nor any secret', () => {
      const statements = statementsOf(exports.planner);
      const tokenTable = statements.filter((s) => mentions(s.Resource, id(tokens.table)));
      expect(tokenTable).toEqual([
        { Action: 'dynamodb:Query', Effect: 'Allow', Resource: { 'Fn::Join': ['', [arnOf(tokens.table), '/index/due']] } },
      ]);
      expect(mentions(statements, bucketId())).toBe(false);
      expect(statements.some((s) => actions(s).some((a) => a.startsWith('secretsmanager:') || a.startsWith('s3:')))).toBe(false);
    });

    it('the webhook reads its own secret, writes the replay table, gets registry items, sends to the queue: nothing more', () => {
      const statements = statementsOf(exports.webhook);
      // The registry: GetItem on its table (and Decrypt with its key), no Scan, no write.
      const registryTable = id(stack.companies.table);
      const onRegistry = statements.filter((s) => mentions(s.Resource, registryTable));
      expect(onRegistry.flatMap(actions)).toEqual(['dynamodb:GetItem']);
      expect(statements.flatMap(actions).sort()).toEqual(
        [
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'secretsmanager:GetSecretValue',
          'kms:Decrypt',
          'dynamodb:GetItem',
          'kms:Decrypt',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'kms:Decrypt',
          'kms:Encrypt',
          'kms:GenerateDataKey',
          'sqs:SendMessage',
          'kms:Decrypt',
          'kms:GenerateDataKey',
        ].sort(),
      );
      expect(statements.find((s) => actions(s).includes('secretsmanager:GetSecretValue'))!.Resource).toEqual({
        Ref: id(exports.webhookSecret),
      });
      expect(mentions(statements, bucketId())).toBe(false);
    });

    it('no role but the worker’s and the overdue check’s may touch the bucket; the key serves other roles only through SQS or DynamoDB', () => {
      const allowed = new Set([id(exports.worker.executionRole), id(exports.checker.executionRole)]);
      for (const policy of allPolicies()) {
        for (const statement of policy.statements) {
          const s3Actions = actions(statement).filter((a) => a.startsWith('s3:'));
          if (mentions(statement.Resource, bucketId()) || s3Actions.length > 0) {
            expect([policy.roles, allowed.has(policy.roles[0]!)]).toEqual([policy.roles, true]);
          }
          if (mentions(statement.Resource, keyId()) && !allowed.has(policy.roles[0]!)) {
            const via = JSON.stringify(statement.Condition?.StringEquals?.['kms:ViaService'] ?? 'none');
            expect([policy.roles, /(sqs|dynamodb)\./.test(via)]).toEqual([policy.roles, true]);
          }
        }
      }
      // The token worker, for one, has no statement about the exports bucket or key.
      const tokenWorker = roleStatements(template, id(tokens.worker.executionRole));
      expect(mentions(tokenWorker, bucketId()) || mentions(tokenWorker, keyId())).toBe(false);
    });

    it('the overdue check may read objects under exports/ and nothing in S3 beyond that', () => {
      const s3 = statementsOf(exports.checker).filter((s) => actions(s).some((a) => a.startsWith('s3:')));
      expect(s3.flatMap(actions).sort()).toEqual(['s3:GetObject', 's3:ListBucket']);
    });
  });

  describe('alarms', () => {
    it.each([
      ['export failures', 'ExportFailed', 'export-period'],
      ['symlinks Athena still reads from an earlier export', 'ExportStaleSymlinks', 'export-period'],
      ['overdue companies', 'MonthlyExportsOverdue', 'check-monthly-export'],
    ])('alarms on %s (%s of %s, Stage and Function dimensions) to the alarm topic', (_name, metric, fn) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Acctops',
        MetricName: metric,
        Dimensions: [
          { Name: 'Function', Value: fn },
          { Name: 'Stage', Value: 'test' },
        ],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [{ Ref: id(stack.alarmTopic) }],
      });
    });

    it('alarms on messages in either dead-letter queue', () => {
      for (const queue of [exports.deadLetterQueue, exports.requestDeadLetterQueue]) {
        template.hasResourceProperties('AWS::CloudWatch::Alarm', {
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [id(queue), 'QueueName'] } }],
          Threshold: 1,
        });
      }
    });
  });

  it('publishes the outputs the CLI and the runbooks use', () => {
    for (const name of [
      'ExportBucketName',
      'ExportEventBusName',
      'ExportQueueUrl',
      'ExportWebhookUrl',
      'ExportWebhookSecretArn',
      'ExportGlueDatabaseName',
      'ExportTimeZone',
      'ExportDueAfterHours',
    ]) {
      template.hasOutput(name, {});
    }
  });
});

/**
 * Lambda refuses a reservation that leaves the account fewer than 100 unreserved executions, so the
 * webhook's is a stage setting an account with a low quota turns off (decision 100).
 */
describe("the webhook's reserved concurrency (exports.webhookReservedConcurrency)", () => {
  const synth = (exportsSettings: Record<string, unknown>) => {
    const { stack, template } = synthAcctopsStack({ exports: exportsSettings });
    const functions = template.findResources('AWS::Lambda::Function') as Record<string, { Properties: Record<string, unknown> }>;
    const throttleAlarms = Object.values(
      template.findResources('AWS::CloudWatch::Alarm') as Record<string, { Properties: Record<string, unknown> }>,
    ).filter((a) => a.Properties.MetricName === 'Throttles');
    return { webhook: functions[logicalId(stack.exports.webhook)]!.Properties, functions, throttleAlarms };
  };

  it('reserves the number given, and alarms on throttles at it', () => {
    const { webhook, throttleAlarms } = synth({ webhookReservedConcurrency: 25 });
    expect(webhook.ReservedConcurrentExecutions).toBe(25);
    expect(throttleAlarms.map((a) => a.Properties.AlarmDescription)).toEqual([expect.stringContaining('reserved concurrency (25)')]);
  });

  it('reserves nothing for null: no function of the stack reserves any, and no throttles alarm is made', () => {
    const { webhook, functions, throttleAlarms } = synth({ webhookReservedConcurrency: null });
    expect(webhook).not.toHaveProperty('ReservedConcurrentExecutions');
    expect(Object.values(functions).filter((f) => f.Properties.ReservedConcurrentExecutions !== undefined)).toEqual([]);
    expect(throttleAlarms).toEqual([]);
  });
});
