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
    TOKEN_LEASE_SECONDS: tokenEnv.TOKEN_LEASE_SECONDS,
    SECRET_CACHE_TTL_SECONDS: tokenEnv.SECRET_CACHE_TTL_SECONDS,
  }),
);
const runtime = new AwsTokenRuntime({
  tableName: env.TOKEN_TABLE_NAME,
  institutionSecretArn: env.INSTITUTION_SECRET_ARN,
  baseUrl: env.ACCTOPS_BASE_URL,
  leaseMs: env.TOKEN_LEASE_SECONDS * 1000,
  secretCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  clock: systemClock,
});

/** Invoked by a runbook or `acctops tokens revoke`. */
const eventSchema = z.strictObject({ externalId: z.guid() });

/** Expires the user's tokens at the service and marks it revoked; idempotent. */
export const handler = createHandler({
  eventSchema,
  handler: (event, { logger, metrics, requestId }) =>
    runtime.lifecycle({ logger, metrics, ownerPrefix: `revoke-user:${requestId}` }).revoke(event.externalId),
});
