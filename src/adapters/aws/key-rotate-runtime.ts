import type { KeyRotationDeps } from '../../core/api-keys';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { AwsKeyRotationRuntime } from './key-rotation-runtime';
import { type EventBridgeRevocationScheduler, revocationSchedulerFrom } from './revocation-scheduler';

/** rotate-api-key's root: the secret store, the service's client and the scheduler of the old key's revocation. */
export class AwsKeyRotateRuntime extends AwsKeyRotationRuntime {
  private scheduler?: EventBridgeRevocationScheduler;

  /** KeyRotation's deps, with this invocation's logger and metrics. */
  rotationDeps(scope: { logger: Logger; metrics: Metrics }): KeyRotationDeps {
    return {
      store: this.store(),
      clientFor: (key) => this.clientFor(key, scope.logger),
      scheduler: this.revocationScheduler(),
      settings: this.settings,
      clock: this.config.clock,
      ...scope,
    };
  }

  private revocationScheduler(): EventBridgeRevocationScheduler {
    return (this.scheduler ??= revocationSchedulerFrom(this.config));
  }
}
