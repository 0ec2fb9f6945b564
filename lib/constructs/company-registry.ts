import { CfnOutput, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsCustomResource, AwsCustomResourcePolicy, PhysicalResourceId } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { REGISTRY_TABLE } from '../../contract/tables';
import type { StageConfig } from '../config/stage';
import { stageKey } from './stage-key';
import { attribute } from './table-keys';

export interface CompanyRegistryProps {
  readonly stage: StageConfig;
  /** Formats of a company seeded from the stage config (the exports' default formats). */
  readonly seedFormats: readonly string[];
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The company registry (docs/fleet.md): a DynamoDB table of its own,
 * encrypted with a customer-managed key of its own, one item per company, written at run time by
 * `acctops companies` and read a page at a time by the monthly planner.
 *
 * Companies of the stage config (cdk.json `companies`) are seeded once each: a conditional PutItem
 * when the company first appears in the config, never repeated on later deploys and never on
 * delete, so `acctops companies remove` sticks even while the company is still in cdk.json. The
 * same holds for a company's `defaultCurrency`: a change in cdk.json after that first deploy is an
 * Update with no call, and the entry keeps what it has (`companies add --default-currency` changes it).
 */
export class CompanyRegistry extends Construct {
  readonly table: Table;
  /** Its own key, or the stage's supplied one (`kmsKeyArn`). */
  readonly key: IKey;

  constructor(scope: Construct, id: string, props: CompanyRegistryProps) {
    super(scope, id);
    const { stage } = props;
    this.key = stageKey(this, 'Key', stage, {
      description: `acctops ${stage.name}: encrypts the company registry table`,
      alias: `alias/acctops/${stage.name}/companies`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });
    this.table = new Table(this, 'Table', {
      partitionKey: attribute(REGISTRY_TABLE.partitionKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: stage.retainData,
      removalPolicy: props.removalPolicy,
    });

    if (stage.companies.length > 0) this.seed(stage, props.seedFormats, props.removalPolicy);

    new CfnOutput(Stack.of(this), 'CompanyRegistryTableName', {
      value: this.table.tableName,
      description: '`acctops companies add|list|remove` read and write this table; the monthly planner reads it a page at a time',
    });
  }

  private seed(stage: StageConfig, formats: readonly string[], removalPolicy: RemovalPolicy): void {
    // The seeding function (AwsCustomResource's one per stack) gets a log group and a role of our
    // own, like every AcctopsFunction: CDK's default role carries AWSLambdaBasicExecutionRole
    // (CreateLogGroup and PutLogEvents on every log group) and its log group would never expire.
    const logGroup = new LogGroup(this, 'SeedLogs', {
      logGroupName: `/acctops/${stage.name}/seed-company-registry`,
      // The stage schema only admits values CloudWatch Logs accepts, which are RetentionDays' values.
      retention: stage.logRetentionDays as RetentionDays,
      removalPolicy,
    });
    const role = new Role(this, 'SeedRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Seeds the company registry of ${stage.name} from the stage config at deploy time (AwsCustomResource)`,
    });
    logGroup.grantWrite(role);
    // The actions a DynamoDB write needs of the table's key (acctops-function.ts TABLE_ACTIONS.write),
    // through DynamoDB only: the seeder's one call is PutItem.
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
        resources: [this.key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` } },
      }),
    );
    const policy = AwsCustomResourcePolicy.fromSdkCalls({ resources: [this.table.tableArn] });
    for (const company of stage.companies) {
      const companyId = company.companyId.toLowerCase();
      new AwsCustomResource(this, `Seed-${companyId}`, {
        // onCreate only: a later deploy must not bring back a company `companies remove` removed.
        onCreate: {
          service: 'DynamoDB',
          action: 'putItem',
          parameters: {
            TableName: this.table.tableName,
            Item: {
              companyId: { S: companyId },
              formats: { L: formats.map((f) => ({ S: f })) },
              ...(company.defaultCurrency !== undefined ? { defaultCurrency: { S: company.defaultCurrency } } : {}),
              seededFrom: { S: 'stage-config' },
            },
            ConditionExpression: 'attribute_not_exists(companyId)',
          },
          // Added by the CLI before the deploy: that entry wins.
          ignoreErrorCodesMatching: 'ConditionalCheckFailedException',
          physicalResourceId: PhysicalResourceId.of(`${stage.name}-${companyId}`),
        },
        policy,
        role,
        logGroup,
        installLatestAwsSdk: false,
      });
    }
  }
}
