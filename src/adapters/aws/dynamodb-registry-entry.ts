import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { REGISTRY_TABLE } from '../../../contract/tables';

/**
 * One company registry entry by key, raw, for a reader that needs nothing else of the registry:
 * the export worker (registryExportStanding, registryCurrency) and the rotation function
 * (registryRemovedAt). Kept apart from DynamoDbRegistryTable so that their bundles carry neither the
 * table's writes and scans nor CompanyRegistry (the rotation function not its schema either).
 */
export function registryEntryReader(options: { client: DynamoDBClient; tableName: string }): (companyId: string) => Promise<unknown> {
  const doc = DynamoDBDocumentClient.from(options.client);
  return (companyId) => getRegistryItem(doc, options.tableName, companyId);
}

export async function getRegistryItem(doc: DynamoDBDocumentClient, tableName: string, companyId: string): Promise<unknown> {
  // Consistent: `companies add` right after `remove` must see the removal, and so must a rotation.
  const out = await onRegistryTable(tableName, 'GetItem', () =>
    doc.send(new GetCommand({ TableName: tableName, Key: { [REGISTRY_TABLE.partitionKey.name]: companyId }, ConsistentRead: true })),
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
export async function onRegistryTable<T>(tableName: string, operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof Error) error.message = `DynamoDB ${operation} on the company registry table ${tableName} failed: ${error.message}`;
    throw error;
  }
}
