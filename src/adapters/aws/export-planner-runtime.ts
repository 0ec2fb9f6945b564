import { requiredEnv } from '../../core/shared/env';
import { DynamoDbTokenStore } from './dynamodb-token-store';
import { AwsExportRuntime, exportConfigFromEnv, type ExportEnvName, type ExportEnvOf } from './export-runtime';

/** The monthly planner's composition root (plan-monthly-export): exportRuntimeFromEnv's, with the planner's runtime. */
export function exportPlannerRuntimeFromEnv<K extends ExportEnvName>(
  names: readonly K[],
  processEnv: NodeJS.ProcessEnv = process.env,
): { env: ExportEnvOf<K>; runtime: AwsExportPlannerRuntime } {
  const { env, config } = exportConfigFromEnv(names, processEnv);
  return { env, runtime: new AwsExportPlannerRuntime(config) };
}

/**
 * The monthly planner's runtime: the shared adapters of AwsExportRuntime, plus the token store it
 * lists the users from. Its own module, so that the worker, which only reads a token
 * (DynamoDbTokenReader), does not carry the store's writes.
 */
export class AwsExportPlannerRuntime extends AwsExportRuntime {
  tokenStore(): DynamoDbTokenStore {
    return this.once(
      'tokens',
      () => new DynamoDbTokenStore({ client: this.dynamo(), tableName: requiredEnv(this.config.tokenTableName, 'TOKEN_TABLE_NAME') }),
    );
  }
}
