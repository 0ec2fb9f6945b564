import type { MonthlyExportDeps } from '../../core/exports/pipeline/monthly-export';
import { requiredEnv } from '../../core/shared/env';
import type { DynamoDbRegistryTable } from './dynamodb-company-registry';
import { DynamoDbTokenStore } from './dynamodb-token-store';
import { AwsExportRuntime, type Scope } from './export-runtime';
import { exportDynamo, exportLedger, exportRegistryTable } from './export-runtime-dynamodb';
import { exportEvents } from './export-runtime-events';
import { exportQueue } from './export-runtime-sqs';

/**
 * plan-monthly-export's root: the ledger, the queue and the bus of a run, the registry it reads the
 * companies from and the token store it lists the users from. The token store is here, not shared:
 * the worker only reads a token (DynamoDbTokenReader) and does not carry the store's writes.
 */
export class AwsExportPlannerRuntime extends AwsExportRuntime {
  registryTable(): DynamoDbRegistryTable {
    return exportRegistryTable(this);
  }

  tokenStore(): DynamoDbTokenStore {
    return this.once(
      'tokens',
      () => new DynamoDbTokenStore({ client: exportDynamo(this), tableName: requiredEnv(this.config.tokenTableName, 'TOKEN_TABLE_NAME') }),
    );
  }

  /** planMonthlyExport's deps, with this invocation's logger and metrics. */
  planDeps(scope: Scope): MonthlyExportDeps {
    return { ledger: exportLedger(this), queue: exportQueue(this), events: exportEvents(this), clock: this.config.clock, ...scope };
  }
}
