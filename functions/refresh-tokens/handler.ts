import type { SQSBatchResponse } from 'aws-lambda';
import * as z from 'zod';
import { AwsTokenLifecycleRuntime } from '../../src/adapters/aws/token-lifecycle-runtime';
import { tokenRuntimeFromEnv } from '../../src/adapters/aws/token-runtime';
import { systemClock } from '../../src/core/shared/clock';
import { refreshQueuedBatch } from '../../src/core/tokens/refresh-worker';
import { TokenLifecycle } from '../../src/core/tokens/token-lifecycle';
import { createHandler } from '../_shared/create-handler';
import { lazySchema } from '../../src/core/shared/lazy-schema';

const { runtime } = tokenRuntimeFromEnv(AwsTokenLifecycleRuntime, [
  'TOKEN_TABLE_NAME',
  'INSTITUTION_SECRET_ARN',
  'ACCTOPS_BASE_URL',
  'TOKEN_EVENT_BUS_NAME',
  'TOKEN_REFRESH_MARGIN_SECONDS',
  'ACCESS_TOKEN_LIFETIME_SECONDS',
  'TOKEN_LEASE_SECONDS',
  'REFRESH_CONCURRENCY',
  'SECRET_CACHE_TTL_SECONDS',
]);

/**
 * Kept back from the Lambda timeout: no user starts later than this before it, so a user started
 * last (a refresh, then a recovery, each within the client's 20 s budget) still finishes.
 */
const RESERVE_MS = 60_000;

/**
 * The SQS envelope only: each body is parsed per message in src, so one bad message is one batch
 * item failure (bound for the DLQ), not a failed batch.
 */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    Records: z.array(z.looseObject({ messageId: z.string().min(1), body: z.string(), eventSource: z.literal('aws:sqs') })).min(1),
  }),
);

export const handler = createHandler({
  eventSchema,
  handler: async (event, { logger, metrics, requestId, lambdaContext }): Promise<SQSBatchResponse> => {
    const remaining = lambdaContext.getRemainingTimeInMillis?.();
    const report = await refreshQueuedBatch(
      new TokenLifecycle(runtime.lifecycleDeps({ logger, metrics, ownerPrefix: `refresh-tokens:${requestId}` })),
      event.Records.map((r) => ({ messageId: r.messageId, body: r.body })),
      { logger, deadline: remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS },
    );
    return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
  },
});
