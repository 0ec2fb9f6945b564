import { AwsTokenPlannerRuntime } from '../../src/adapters/aws/token-planner-runtime';
import { tokenRuntimeFromEnv } from '../../src/adapters/aws/token-runtime';
import { systemClock } from '../../src/core/shared/clock';
import { planTokenRefresh } from '../../src/core/tokens/plan-refresh';
import { createHandler } from '../_shared/create-handler';
import { scheduledCorrelationId, scheduledEventSchema } from '../_shared/scheduled-event';

const { env, runtime } = tokenRuntimeFromEnv(AwsTokenPlannerRuntime, [
  'TOKEN_TABLE_NAME',
  'REFRESH_QUEUE_URL',
  'TOKEN_REFRESH_MARGIN_SECONDS',
]);

/** Time kept back from the Lambda timeout: the page in progress finishes, none starts after. */
const RESERVE_MS = 15_000;

/**
 * What EventBridge Scheduler sends (the schedule's input, lib/constructs/token-lifecycle.ts); a
 * runbook may invoke the planner with the same shape.
 */
const eventSchema = scheduledEventSchema('token-refresh');

export const handler = createHandler({
  eventSchema,
  correlationId: scheduledCorrelationId,
  handler: async (event, { logger, metrics, lambdaContext }) => {
    const remaining = lambdaContext.getRemainingTimeInMillis?.();
    return planTokenRefresh(runtime.planDeps({ logger: logger.child({ scheduledAt: event.scheduledAt }), metrics }), {
      marginMs: env.TOKEN_REFRESH_MARGIN_SECONDS * 1000,
      deadline: remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS,
    });
  },
});
