import { SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { requiredEnv } from '../../core/shared/env';
import type { PlanRefreshDeps } from '../../core/tokens/plan-refresh';
import { SqsRefreshQueue } from './sqs-refresh-queue';
import { AwsTokenRuntime } from './token-runtime';

/** plan-token-refresh's root: the token store and the refresh queue it fills. */
export class AwsTokenPlannerRuntime extends AwsTokenRuntime {
  private refreshQueue?: SqsRefreshQueue;

  /** The queue the planner fills. */
  queue(): SqsRefreshQueue {
    this.refreshQueue ??= new SqsRefreshQueue({
      client: new SQSClient({}),
      queueUrl: requiredEnv(this.config.queueUrl, 'REFRESH_QUEUE_URL'),
    });
    return this.refreshQueue;
  }

  /** planTokenRefresh's deps, with this invocation's logger and metrics. */
  planDeps(scope: { logger: Logger; metrics: Metrics }): PlanRefreshDeps {
    return { store: this.store(), queue: this.queue(), clock: this.config.clock, ...scope };
  }
}
