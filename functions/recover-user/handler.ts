import * as z from 'zod';
import { AwsTokenRuntime, tokenEnv } from '../../src/adapters/aws/token-runtime';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    TOKEN_TABLE_NAME: tokenEnv.TOKEN_TABLE_NAME,
    INSTITUTION_SECRET_ARN: tokenEnv.INSTITUTION_SECRET_ARN,
    ACCTOPS_BASE_URL: tokenEnv.ACCTOPS_BASE_URL,
    ACCESS_TOKEN_LIFETIME_SECONDS: tokenEnv.ACCESS_TOKEN_LIFETIME_SECONDS,
    TOKEN_LEASE_SECONDS: tokenEnv.TOKEN_LEASE_SECONDS,
    SECRET_CACHE_TTL_SECONDS: tokenEnv.SECRET_CACHE_TTL_SECONDS,
  }),
);
const runtime = new AwsTokenRuntime({
  tableName: env.TOKEN_TABLE_NAME,
  institutionSecretArn: env.INSTITUTION_SECRET_ARN,
  baseUrl: env.ACCTOPS_BASE_URL,
  accessTokenLifetimeMs: env.ACCESS_TOKEN_LIFETIME_SECONDS * 1000,
  leaseMs: env.TOKEN_LEASE_SECONDS * 1000,
  secretCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  clock: systemClock,
});

/**
 * Invoked by the runbook for a user in `needs_attention` (or `acctops tokens recover`): retrieves
 * a new pair and puts the user back in the schedule. A revoked user needs `reactivate: true`.
 */
const eventSchema = z.strictObject({ externalId: z.guid(), reactivate: z.boolean().optional() });

export const handler = createHandler({
  eventSchema,
  handler: (event, { logger, metrics, requestId }) =>
    runtime.lifecycle({ logger, metrics, ownerPrefix: `recover-user:${requestId}` }).recover(event.externalId, { reactivate: event.reactivate }),
});
