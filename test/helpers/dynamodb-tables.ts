/**
 * Creates the DynamoDB tables as lib's constructs declare them, from the same core constants, on
 * dynalite (tests and benchmarks). Test-only: production tables come from CDK, and the CLI's local
 * mode keeps its state in files.
 */
import { CreateTableCommand, UpdateTimeToLiveCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { REGISTRY_TABLE } from '../../src/core/companies/company-registry';
import { REPLAY_TABLE, RUN_LEDGER_TABLE } from '../../contract/tables';
import { TOKEN_TABLE } from '../../src/core/tokens/token-table';

export async function createTokenTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const { partitionKey, dueIndex } = TOKEN_TABLE;
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: TOKEN_TABLE.billingMode,
      AttributeDefinitions: [partitionKey, dueIndex.partitionKey, dueIndex.sortKey].map((a) => ({
        AttributeName: a.name,
        AttributeType: a.type,
      })),
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
    }),
  );
}

export async function createRegistryTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const key = REGISTRY_TABLE.partitionKey;
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: REGISTRY_TABLE.billingMode,
      AttributeDefinitions: [{ AttributeName: key.name, AttributeType: key.type }],
      KeySchema: [{ AttributeName: key.name, KeyType: 'HASH' }],
    }),
  );
}

export async function createRunLedgerTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [
        { AttributeName: RUN_LEDGER_TABLE.partitionKey.name, KeyType: 'HASH' },
        { AttributeName: RUN_LEDGER_TABLE.sortKey.name, KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: RUN_LEDGER_TABLE.partitionKey.name, AttributeType: RUN_LEDGER_TABLE.partitionKey.type },
        { AttributeName: RUN_LEDGER_TABLE.sortKey.name, AttributeType: RUN_LEDGER_TABLE.sortKey.type },
      ],
      BillingMode: RUN_LEDGER_TABLE.billingMode,
    }),
  );
  await enableTtl(client, tableName, RUN_LEDGER_TABLE.timeToLiveAttribute);
}

export async function createReplayTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [{ AttributeName: REPLAY_TABLE.partitionKey.name, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: REPLAY_TABLE.partitionKey.name, AttributeType: REPLAY_TABLE.partitionKey.type }],
      BillingMode: REPLAY_TABLE.billingMode,
    }),
  );
  await enableTtl(client, tableName, REPLAY_TABLE.timeToLiveAttribute);
}

/** dynalite does not implement TTL; real DynamoDB does. Tests never rely on deletion by TTL. */
async function enableTtl(client: DynamoDBClient, tableName: string, attribute: string): Promise<void> {
  try {
    await client.send(
      new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: attribute, Enabled: true } }),
    );
  } catch (error) {
    if ((error as { name?: string }).name !== 'UnknownOperationException') throw error;
  }
}
