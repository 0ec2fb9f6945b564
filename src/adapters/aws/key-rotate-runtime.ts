import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KeyRotationDeps } from '../../core/api-keys';
import { type CompanyRemovedAt, registryRemovedAt } from '../../core/companies/company-removal';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { registryEntryReader } from './dynamodb-registry-entry';
import { AwsKeyRotationRuntime } from './key-rotation-runtime';
import { type EventBridgeRevocationScheduler, revocationSchedulerFrom } from './revocation-scheduler';

/**
 * rotate-api-key's root: the secret store, the service's client, the scheduler of the old key's
 * revocation, and the company registry's entries (createSecret refuses a removed company).
 */
export class AwsKeyRotateRuntime extends AwsKeyRotationRuntime {
  private scheduler?: EventBridgeRevocationScheduler;
  private removedAt?: CompanyRemovedAt;

  /** KeyRotation's deps, with this invocation's logger and metrics. */
  rotationDeps(scope: { logger: Logger; metrics: Metrics }): KeyRotationDeps {
    const companyRemovedAt = this.companyRemovedAt();
    return {
      store: this.store(),
      clientFor: (key) => this.clientFor(key, scope.logger),
      scheduler: this.revocationScheduler(),
      settings: this.settings,
      clock: this.config.clock,
      ...(companyRemovedAt ? { companyRemovedAt } : {}),
      ...scope,
    };
  }

  private revocationScheduler(): EventBridgeRevocationScheduler {
    return (this.scheduler ??= revocationSchedulerFrom(this.config));
  }

  /** One GetItem of the company's entry per createSecret; undefined without COMPANY_REGISTRY_TABLE_NAME. */
  private companyRemovedAt(): CompanyRemovedAt | undefined {
    const tableName = this.config.registryTableName;
    if (tableName === undefined) return undefined;
    return (this.removedAt ??= registryRemovedAt(registryEntryReader({ client: new DynamoDBClient({}), tableName })));
  }
}
