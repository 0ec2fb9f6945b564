import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { CompanyRegistry } from '../../lib/constructs/company-registry';
import type { Exports } from '../../lib/constructs/exports/exports';
import { REGISTRY_TABLE } from '../../contract/tables';
import { acknowledgements, describeViolations, nagViolations, roleStatements, synthAcctopsStack } from '../helpers/cdk';

const COMPANY = '6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B';
const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

/** The PutItem `Item` of a seeding resource's Create call, keyed by company id (the table name is a Ref, joined as a placeholder). */
function seededItems(template: ReturnType<typeof synthAcctopsStack>['template']): Map<string, Record<string, unknown>> {
  const items = new Map<string, Record<string, unknown>>();
  for (const seed of Object.values(template.findResources('Custom::AWS'))) {
    const create = seed.Properties.Create as { 'Fn::Join': [string, unknown[]] };
    const call = JSON.parse(create['Fn::Join'][1].map((part) => (typeof part === 'string' ? part : 'TOKEN')).join('')) as {
      parameters: { Item: Record<string, { S?: string }> };
    };
    items.set(call.parameters.Item.companyId!.S!, call.parameters.Item);
  }
  return items;
}

describe('CompanyRegistry', () => {
  const { app, stack, template } = synthAcctopsStack({ companies: [{ companyId: COMPANY }] });
  const registry = stack.node.findChild('Companies') as CompanyRegistry;
  const exports = stack.node.findChild('Exports') as Exports;
  const tableId = logicalId(registry.table);

  it('keys the table as REGISTRY_TABLE (contract/tables.ts) says, encrypted with its own rotating customer-managed key, with PITR', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: REGISTRY_TABLE.partitionKey.name, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: REGISTRY_TABLE.partitionKey.name, AttributeType: REGISTRY_TABLE.partitionKey.type }],
      BillingMode: REGISTRY_TABLE.billingMode,
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: { 'Fn::GetAtt': [logicalId(registry.key), 'Arn'] } },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      Description: 'acctops test: encrypts the company registry table',
    });
    template.hasOutput('CompanyRegistryTableName', { Value: { Ref: tableId } });
  });

  it('grants the monthly planner only Scan on the registry (and Decrypt on its key): no write', () => {
    const statements = roleStatements(template, logicalId(exports.planner.executionRole)) as Statement[];
    const onRegistry = statements.filter((s) => JSON.stringify(s.Resource).includes(`"${tableId}"`));
    expect(onRegistry.map((s) => [s.Action].flat())).toEqual([['dynamodb:Scan']]);
    const onKey = statements.filter((s) => JSON.stringify(s.Resource).includes(`"${logicalId(registry.key)}"`));
    expect(onKey.map((s) => [s.Action].flat())).toEqual([['kms:Decrypt']]);
  });

  it('seeds each stage-config company once, conditionally, lower case, and never on update or delete', () => {
    const seeds = Object.values(template.findResources('Custom::AWS'));
    expect(seeds).toHaveLength(1);
    const create = JSON.stringify(seeds[0]!.Properties.Create);
    expect(create).toContain(COMPANY.toLowerCase());
    expect(create).toContain('attribute_not_exists(companyId)');
    expect(create).toContain('stage-config');
    expect(seeds[0]!.Properties.Update).toBeUndefined();
    expect(seeds[0]!.Properties.Delete).toBeUndefined();
  });

  it("seeds a company's defaultCurrency, upper-cased, only where the stage config names one", () => {
    const OTHER = '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d';
    const items = seededItems(
      synthAcctopsStack({ companies: [{ companyId: COMPANY, defaultCurrency: 'jpy' }, { companyId: OTHER }] }).template,
    );
    expect(items.get(COMPANY.toLowerCase())).toEqual({
      companyId: { S: COMPANY.toLowerCase() },
      formats: { L: [{ S: 'jsonl' }, { S: 'csv' }, { S: 'parquet' }] },
      defaultCurrency: { S: 'JPY' },
      seededFrom: { S: 'stage-config' },
    });
    // None configured: no attribute at all, so the entry reads as EUR, as entries from before the field do.
    expect(items.get(OTHER)).not.toHaveProperty('defaultCurrency');
    expect(seededItems(template).get(COMPANY.toLowerCase())).not.toHaveProperty('defaultCurrency');
  });

  it('adds no seeding resource when the stage config names no company', () => {
    const empty = synthAcctopsStack({ companies: [] });
    expect(Object.keys(empty.template.findResources('Custom::AWS'))).toEqual([]);
    expect(describeViolations(nagViolations(empty.app))).toEqual([]);
  });

  it('is cdk-nag clean without acknowledging anything of the seeding function', () => {
    expect(describeViolations(nagViolations(app))).toEqual([]);
    expect(
      acknowledgements(stack).filter((a) => a.path.includes('AWS679f53fac002430cb0da5b7982bd2287') || a.path.includes('Companies')),
    ).toEqual([]);
  });

  describe('the seeding function (AwsCustomResource’s one per stack)', () => {
    const [seederId, seeder] = Object.entries(template.findResources('AWS::Lambda::Function')).find(([id]) =>
      id.startsWith('AWS679f53fac002430cb0da5b7982bd2287'),
    )!;
    const roleId = (seeder.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];

    it("logs to a log group of its own, with the stage's retention and removal", () => {
      const group =
        template.findResources('AWS::Logs::LogGroup')[(seeder.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref]!;
      expect(group.Properties).toEqual({ LogGroupName: '/acctops/test/seed-company-registry', RetentionInDays: 30 });
      expect(group.DeletionPolicy).toBe('Retain');
      const yearly = synthAcctopsStack({ companies: [{ companyId: COMPANY }], logRetentionDays: 365, retainData: false }).template;
      expect(
        Object.values(yearly.findResources('AWS::Logs::LogGroup', { Properties: { LogGroupName: '/acctops/test/seed-company-registry' } })),
      ).toEqual([expect.objectContaining({ Properties: expect.objectContaining({ RetentionInDays: 365 }), DeletionPolicy: 'Delete' })]);
    });

    it('has a role with no managed policy: its own log group, PutItem on the registry, the registry key through DynamoDB only', () => {
      expect(seederId).toBeDefined();
      const role = template.findResources('AWS::IAM::Role')[roleId]!;
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      const statements = roleStatements(template, roleId) as (Statement & { Condition?: unknown })[];
      expect(statements).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
            Resource: { 'Fn::GetAtt': [logicalId(registry.node.findChild('SeedLogs')), 'Arn'] },
          }),
          expect.objectContaining({ Action: 'dynamodb:PutItem', Resource: { 'Fn::GetAtt': [tableId, 'Arn'] } }),
          expect.objectContaining({
            Action: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
            Resource: { 'Fn::GetAtt': [logicalId(registry.key), 'Arn'] },
            Condition: {
              StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } },
            },
          }),
        ]),
      );
      expect(statements).toHaveLength(3);
    });
  });
});
