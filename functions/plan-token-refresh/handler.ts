import * as z from 'zod';
import { tokenRuntimeFromEnv } from '../../src/adapters/aws/token-runtime';
import { systemClock } from '../../src/core/shared/clock';
import { planTokenRefresh } from '../../src/core/tokens/plan-refresh';
import { createHandler } from '../_shared/create-handler';

const { env, runtime } = tokenRuntimeFromEnv(['TOKEN_TABLE_NAME', 'REFRESH_QUEUE_URL', 'TOKEN_REFRESH_MARGIN_SECONDS']);

/** Time kept back from the Lambda timeout: the page in progress finishes, none starts after. */
const RESERVE_MS = 15_000;

/**
 * What EventBridge Scheduler sends (the schedule's input, lib/constructs/token-lifecycle.ts); a
 * runbook may invoke the planner with the same shape.
 */
const eventSchema = z.strictObject({
  source: z.literal('acctops.scheduler'),
  schedule: z.literal('token-refresh'),
  scheduledAt: z.iso.datetime({ offset: true }),
  executionId: z.string().min(1).max(128),
});

export const handler = createHandler({
  eventSchema,
  correlationId: (event) => (event as { executionId?: string } | null)?.executionId,
  handler: async (event, { logger, metrics, lambdaContext }) => {
    const remaining = lambdaContext.getRemainingTimeInMillis?.();
    return planTokenRefresh(
      { store: runtime.store, queue: runtime.queue(), clock: systemClock, logger: logger.child({ scheduledAt: event.scheduledAt }), metrics },
      {
        marginMs: env.TOKEN_REFRESH_MARGIN_SECONDS * 1000,
        deadline: remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS,
      },
    );
  },
});
