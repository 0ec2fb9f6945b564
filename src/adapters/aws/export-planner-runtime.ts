import { requiredEnv } from '../../core/shared/env';
import { DynamoDbTokenStore } from './dynamodb-token-store';
import { AwsExportRuntime } from './export-runtime';

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
