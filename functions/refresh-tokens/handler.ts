import type { SQSBatchResponse } from 'aws-lambda';
import * as z from 'zod';
import { AwsTokenRuntime, tokenEnv } from '../../src/adapters/aws/token-runtime';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { refreshQueuedBatch } from '../../src/core/tokens/refresh-worker';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    TOKEN_TABLE_NAME: tokenEnv.TOKEN_TABLE_NAME,
    INSTITUTION_SECRET_ARN: tokenEnv.INSTITUTION_SECRET_ARN,
    ACCTOPS_BASE_URL: tokenEnv.ACCTOPS_BASE_URL,
    TOKEN_EVENT_BUS_NAME: tokenEnv.TOKEN_EVENT_BUS_NAME,
    TOKEN_REFRESH_MARGIN_SECONDS: tokenEnv.TOKEN_REFRESH_MARGIN_SECONDS,
    ACCESS_TOKEN_LIFETIME_SECONDS: tokenEnv.ACCESS_TOKEN_LIFETIME_SECONDS,
    TOKEN_LEASE_SECONDS: tokenEnv.TOKEN_LEASE_SECONDS,
    REFRESH_CONCURRENCY: tokenEnv.REFRESH_CONCURRENCY,
    SECRET_CACHE_TTL_SECONDS: tokenEnv.SECRET_CACHE_TTL_SECONDS,
  }),
);
const runtime = new AwsTokenRuntime({
  tableName: env.TOKEN_TABLE_NAME,
  institutionSecretArn: env.INSTITUTION_SECRET_ARN,
  baseUrl: env.ACCTOPS_BASE_URL,
  eventBusName: env.TOKEN_EVENT_BUS_NAME,
  marginMs: env.TOKEN_REFRESH_MARGIN_SECONDS * 1000,
  accessTokenLifetimeMs: env.ACCESS_TOKEN_LIFETIME_SECONDS * 1000,
  leaseMs: env.TOKEN_LEASE_SECONDS * 1000,
  concurrency: env.REFRESH_CONCURRENCY,
  secretCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  clock: systemClock,
});

/**
 * Kept back from the Lambda timeout: no user starts later than this before it, so a user started
 * last (a refresh, then a recovery, each within the client's 20 s budget) still finishes.
 */
const RESERVE_MS = 60_000;

/**
 * The SQS envelope only: each body is parsed per message in src, so one bad message is one batch
 * item failure (bound for the DLQ), not a failed batch.
 */
const eventSchema = z.object({
  Records: z
    .array(z.looseObject({ messageId: z.string().min(1), body: z.string(), eventSource: z.literal('aws:sqs') }))
    .min(1),
});

export const handler = createHandler({
  eventSchema,
  handler: async (event, { logger, metrics, requestId, lambdaContext }): Promise<SQSBatchResponse> => {
    const remaining = lambdaContext.getRemainingTimeInMillis?.();
    const report = await refreshQueuedBatch(
      runtime.lifecycle({ logger, metrics, ownerPrefix: `refresh-tokens:${requestId}` }),
      event.Records.map((r) => ({ messageId: r.messageId, body: r.body })),
      { logger, deadline: remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS },
    );
    return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
  },
});
