import { randomUUID } from 'node:crypto';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbTokenStore } from '../../../src/adapters/aws/dynamodb-token-store';
import { ManualClock } from '../../../src/core/shared/clock';
import { TOKEN_TABLE, dueShardOf } from '../../../src/core/tokens/token-table';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { tokenStoreContract } from './token-store-contract';
import { createTokenTable } from '../../helpers/dynamodb-tables';

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let tables = 0;

beforeAll(async () => {
  dynamo = await startDynamo();
  client = dynamo.client();
});
afterAll(async () => {
  client.destroy();
  await dynamo.stop();
});

/** A fresh table per test: tests share one dynalite but never each other's records. */
async function freshTable(): Promise<{ tableName: string; store: DynamoDbTokenStore; doc: DynamoDBDocumentClient }> {
  const tableName = `tokens-${++tables}`;
  await createTokenTable(client, tableName);
  return { tableName, store: new DynamoDbTokenStore({ client, tableName }), doc: DynamoDBDocumentClient.from(client) };
}

tokenStoreContract('DynamoDbTokenStore on dynalite', async () => {
  const { tableName, store, doc } = await freshTable();
  return {
    store,
    corrupt: async (externalId, attribute, value) => {
      await doc.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { externalId },
          UpdateExpression: 'SET #a = :v',
          ExpressionAttributeNames: { '#a': attribute },
          ExpressionAttributeValues: { ':v': value },
        }),
      );
    },
    rekey: async (externalId, key) => {
      const { Item } = await doc.send(new GetCommand({ TableName: tableName, Key: { externalId }, ConsistentRead: true }));
      const moved: Record<string, unknown> = { ...Item, externalId: key };
      if (moved[TOKEN_TABLE.dueIndex.partitionKey.name] !== undefined) moved[TOKEN_TABLE.dueIndex.partitionKey.name] = dueShardOf(key);
      await doc.send(new PutCommand({ TableName: tableName, Item: moved }));
      await doc.send(new DeleteCommand({ TableName: tableName, Key: { externalId } }));
    },
    close: async () => undefined,
  };
});

describe('DynamoDbTokenStore: table shape and index', () => {
  const clock = new ManualClock();
  const newToken = (expiresInMs: number) => ({
    externalId: randomUUID(),
    username: 'ada',
    email: 'ada@example.test',
    accessToken: `canary-access-${randomUUID()}`,
    refreshToken: `canary-refresh-${randomUUID()}`,
    accessTokenExpiresAt: clock.now() + expiresInMs,
  });

  it('createTokenTable builds the table TOKEN_TABLE describes', async () => {
    const { tableName } = await freshTable();
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    expect(Table?.KeySchema).toEqual([{ AttributeName: 'externalId', KeyType: 'HASH' }]);
    expect(Table?.GlobalSecondaryIndexes).toHaveLength(1);
    const index = Table!.GlobalSecondaryIndexes![0]!;
    expect(index.IndexName).toBe(TOKEN_TABLE.dueIndex.name);
    expect(index.KeySchema).toEqual([
      { AttributeName: 'dueShard', KeyType: 'HASH' },
      { AttributeName: 'dueAt', KeyType: 'RANGE' },
    ]);
    expect(index.Projection?.ProjectionType).toBe('KEYS_ONLY');
  });

  it('indexes an active record under its shard with keys only, and drops it from the index when it leaves active', async () => {
    const { tableName, store, doc } = await freshTable();
    const input = newToken(10 * 60_000);
    await store.create(input, clock.now());
    const shard = dueShardOf(input.externalId);
    const raw = await doc.send(new GetCommand({ TableName: tableName, Key: { externalId: input.externalId } }));
    expect(raw.Item).toMatchObject({ dueShard: shard, dueAt: input.accessTokenExpiresAt });

    const queryShard = () =>
      doc.send(
        new QueryCommand({
          TableName: tableName,
          IndexName: TOKEN_TABLE.dueIndex.name,
          KeyConditionExpression: 'dueShard = :s',
          ExpressionAttributeValues: { ':s': shard },
        }),
      );
    const indexed = await queryShard();
    // KEYS_ONLY: the index, which the planner reads, holds no token.
    expect(indexed.Items).toEqual([{ externalId: input.externalId, dueShard: shard, dueAt: input.accessTokenExpiresAt }]);

    await store.acquireLease(input.externalId, 'revoker', clock.now() + 60_000, clock.now());
    await store.markStatus(input.externalId, { status: 'revoked' }, { expectedVersion: 1, owner: 'revoker', now: clock.now() });
    const after = await doc.send(new GetCommand({ TableName: tableName, Key: { externalId: input.externalId } }));
    expect(after.Item).not.toHaveProperty('dueShard');
    expect(after.Item).not.toHaveProperty('dueAt');
    expect((await queryShard()).Items).toEqual([]);
  });

  it('spreads records over the shards, and the due walk merges them in order', async () => {
    const { store } = await freshTable();
    const records = [];
    for (let i = 0; i < 48; i++) records.push(await store.create(newToken(i * 1000), clock.now()));
    const shards = new Set(records.map((r) => dueShardOf(r.externalId)));
    expect(shards.size).toBeGreaterThanOrEqual(10);

    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await store.queryDue({ now: clock.now(), marginMs: 15 * 60_000, limit: 5, cursor });
      seen.push(...page.items.map((d) => d.dueAt));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(records.map((r) => r.accessTokenExpiresAt));
  });
});
