import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { REGISTRY_TABLE, type RegisteredCompany, type RegistryTable } from '../../core/companies/company-registry';
import { decodeCursor, encodeCursor } from '../../core/tokens/token-transitions';
import { lazySchema } from '../../core/shared/lazy-schema';

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

/**
 * One registry entry by key, raw, for a reader that needs nothing else of the registry: the export
 * worker (registryCurrency), whose bundle then carries neither the table's writes and scans nor
 * CompanyRegistry.
 */
export function registryEntryReader(options: { client: DynamoDBClient; tableName: string }): (companyId: string) => Promise<unknown> {
  const doc = DynamoDBDocumentClient.from(options.client);
  return (companyId) => getRegistryItem(doc, options.tableName, companyId);
}

async function getRegistryItem(doc: DynamoDBDocumentClient, tableName: string, companyId: string): Promise<unknown> {
  // Consistent: `companies add` right after `remove` must see the removal.
  const out = await onRegistryTable(tableName, 'GetItem', () =>
    doc.send(new GetCommand({ TableName: tableName, Key: { [KEY]: companyId }, ConsistentRead: true })),
  );
  return out.Item ?? null;
}

/**
 * Runs one call on the registry table and names the table in the message of what it throws.
 * DynamoDB's own messages say "the table" without naming it ("The level of configured provisioned
 * throughput for the table was exceeded"), and the functions that read the registry reach other
 * tables too, so a throttled registry read in a log or a CLI error did not say which table to look
 * at. Only the message changes: the error stays the SDK's, so its class and `name` (ExportFailed's
 * `errorClass`, the retry decision) and its `$metadata` (the request id) are as they were.
 */
async function onRegistryTable<T>(tableName: string, operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof Error) error.message = `DynamoDB ${operation} on the company registry table ${tableName} failed: ${error.message}`;
    throw error;
  }
}
