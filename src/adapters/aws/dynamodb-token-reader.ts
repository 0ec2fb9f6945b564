import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { parseStoredItem, toRecord } from '../../core/tokens/token-item';
import { storedKeySpellings, type StoredTokenItem, type TokenRecord, type TokenStore } from '../../core/tokens/token-store';
import { TOKEN_TABLE } from '../../core/tokens/token-table';

export interface DynamoDbTokenReaderOptions {
  client: DynamoDBClient;
  tableName: string;
}

/**
 * One token record by its key: a consistent GetItem, validated. The token store reads through it,
 * and the export worker, which only reads a user's current access token, gets it alone: its
 * bundle then carries none of the store's writes (the bundle bound, BENCHMARKS.md), as its role
 * grants none (docs/security.md).
 */
export class DynamoDbTokenReader implements Pick<TokenStore, 'get'> {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(options: DynamoDbTokenReaderOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client);
    this.tableName = options.tableName;
  }

  async get(externalId: string): Promise<TokenRecord | null> {
    const item = await this.getItem(externalId);
    return item ? toRecord(item) : null;
  }

  /**
   * The stored item as it is, or null, under the first of the id's spellings that holds one: a miss
   * costs a read per spelling (two for a folded id). Consistent: a refresh that just committed is seen.
   */
  async getItem(externalId: string): Promise<StoredTokenItem | null> {
    for (const key of storedKeySpellings(externalId)) {
      const item = await this.getExact(key);
      if (item) return item;
    }
    return null;
  }

  /** The item stored under exactly `key`, or null. */
  async getExact(key: string): Promise<StoredTokenItem | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { [TOKEN_TABLE.partitionKey.name]: key }, ConsistentRead: true }),
    );
    return out.Item ? parseStoredItem(out.Item, key) : null;
  }
}
