import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { requiredEnv } from '../../core/shared/env';
import { DynamoDbRegistryTable } from './dynamodb-company-registry';
import { DynamoDbRunLedger } from './dynamodb-run-ledger';
import type { AwsExportRuntime } from './export-runtime';

/** One DynamoDB client for every table a function uses. */
export function exportDynamo(runtime: AwsExportRuntime): DynamoDBClient {
  return runtime.once('dynamo', () => new DynamoDBClient({}));
}

/** The run ledger. */
export function exportLedger(runtime: AwsExportRuntime): DynamoDbRunLedger {
  return runtime.once(
    'ledger',
    () =>
      new DynamoDbRunLedger({
        client: exportDynamo(runtime),
        tableName: requiredEnv(runtime.config.runsTableName, 'EXPORT_RUNS_TABLE_NAME'),
        clock: runtime.config.clock,
      }),
  );
}

/** The company registry's table; the caller makes a CompanyRegistry of it with its own logger. */
export function exportRegistryTable(runtime: AwsExportRuntime): DynamoDbRegistryTable {
  return runtime.once(
    'registry',
    () =>
      new DynamoDbRegistryTable({
        client: exportDynamo(runtime),
        tableName: requiredEnv(runtime.config.registryTableName, 'COMPANY_REGISTRY_TABLE_NAME'),
      }),
  );
}
