import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import {
  REGISTRY_TABLE,
  RegistryChangedError,
  registryVersionOf,
  type RegisteredCompany,
  type RegistryTable,
} from '../../core/companies/company-registry';
import { decodeCursor, encodeCursor } from '../../core/tokens/token-transitions';
import { lazySchema } from '../../core/shared/lazy-schema';
import { getRegistryItem, onRegistryTable } from './dynamodb-registry-entry';

const KEY = REGISTRY_TABLE.partitionKey.name;
const cursorSchema = /* @__PURE__ */ lazySchema(() => z.object({ after: z.string().min(1) }));

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

  async putItem(item: RegisteredCompany, expected?: RegisteredCompany | null): Promise<void> {
    try {
      await onRegistryTable(this.options.tableName, 'PutItem', () =>
        this.doc.send(
          new PutCommand({ TableName: this.options.tableName, Item: item, ...(expected !== undefined ? condition(expected) : {}) }),
        ),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new RegistryChangedError(item.companyId, error);
      throw error;
    }
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

/** The entry is still the one read: absent, or with the same `updatedAt` and `removedAt` (each present or not). */
function condition(expected: RegisteredCompany | null) {
  if (expected === null) return { ConditionExpression: 'attribute_not_exists(#key)', ExpressionAttributeNames: { '#key': KEY } };
  const version = registryVersionOf(expected);
  const names: Record<string, string> = { '#key': KEY };
  const values: Record<string, string> = {};
  const parts = ['attribute_exists(#key)'];
  for (const field of ['updatedAt', 'removedAt'] as const) {
    names[`#${field}`] = field;
    const value = version[field];
    if (value === undefined) parts.push(`attribute_not_exists(#${field})`);
    else {
      values[`:${field}`] = value;
      parts.push(`#${field} = :${field}`);
    }
  }
  return {
    ConditionExpression: parts.join(' AND '),
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  };
}
