import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { REGISTRY_TABLE, type RegisteredCompany, type RegistryTable } from '../../core/companies/company-registry';
import { decodeCursor, encodeCursor } from '../../core/tokens/token-transitions';
import { lazySchema } from '../../core/shared/lazy-schema';
import { getRegistryItem, onRegistryTable } from './dynamodb-registry-entry';

const KEY = REGISTRY_TABLE.partitionKey.name;
const cursorSchema = lazySchema(() => z.object({ after: z.string().min(1) }));

/**
 * The company registry on its own DynamoDB table (docs/fleet.md). A
 * page is one Scan call: Scan reads the table in its own order, which is enough for planners that
 * visit every company once, and its cursor is the last key (opaque to callers).
 */
export class DynamoDbRegistryTable implements RegistryTable {
  private readonly doc: DynamoDBDocumentClient;

  constructor(private readonly options: { client: DynamoDBClient; tableName: string }) {
    this.doc = DynamoDBDocumentClient.from(options.client);
  }

  getItem(companyId: string): Promise<unknown> {
    return getRegistryItem(this.doc, this.options.tableName, companyId);
  }

  async putItem(item: RegisteredCompany): Promise<void> {
    await onRegistryTable(this.options.tableName, 'PutItem', () =>
      this.doc.send(new PutCommand({ TableName: this.options.tableName, Item: item })),
    );
  }

  async scanPage(request: { cursor: string | null; limit: number }): Promise<{ items: unknown[]; nextCursor: string | null }> {
    const after = request.cursor === null ? null : decodeCursor(cursorSchema, request.cursor).after;
    const out = await onRegistryTable(this.options.tableName, 'Scan', () =>
      this.doc.send(
        new ScanCommand({
          TableName: this.options.tableName,
          Limit: request.limit,
          ExclusiveStartKey: after === null ? undefined : { [KEY]: after },
        }),
      ),
    );
    const last = out.LastEvaluatedKey?.[KEY];
    return { items: out.Items ?? [], nextCursor: typeof last === 'string' ? encodeCursor({ after: last }) : null };
  }
}
