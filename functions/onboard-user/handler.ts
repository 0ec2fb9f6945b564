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
    SECRET_CACHE_TTL_SECONDS: tokenEnv.SECRET_CACHE_TTL_SECONDS,
  }),
);
const runtime = new AwsTokenRuntime({
  tableName: env.TOKEN_TABLE_NAME,
  institutionSecretArn: env.INSTITUTION_SECRET_ARN,
  baseUrl: env.ACCTOPS_BASE_URL,
  accessTokenLifetimeMs: env.ACCESS_TOKEN_LIFETIME_SECONDS * 1000,
  secretCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  clock: systemClock,
});

/** Invoked by a runbook or `acctops tokens onboard`: the user as the service knows it. */
const eventSchema = z.strictObject({
  externalId: z.guid(),
  username: z.string().min(1),
  email: z.email(),
});

/** Returns the outcome, the status and the expiry: never a token. */
export const handler = createHandler({
  eventSchema,
  handler: (event, { logger, metrics, requestId }) =>
    runtime.lifecycle({ logger, metrics, ownerPrefix: `onboard-user:${requestId}` }).onboard(event),
});
