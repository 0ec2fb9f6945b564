import * as z from 'zod';
import { AwsKeyRotationRuntime, keyRotationEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { revocationSchema, revokeApiKey } from '../../src/core/api-keys';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    ACCTOPS_BASE_URL: keyRotationEnv.ACCTOPS_BASE_URL,
    REVOCATION_GRACE_SECONDS: keyRotationEnv.REVOCATION_GRACE_SECONDS,
    SECRET_CACHE_TTL_SECONDS: keyRotationEnv.SECRET_CACHE_TTL_SECONDS,
    API_KEY_PATH_LIST: keyRotationEnv.API_KEY_PATH_LIST,
    API_KEY_PATH_CREATE: keyRotationEnv.API_KEY_PATH_CREATE,
    API_KEY_PATH_REVOKE: keyRotationEnv.API_KEY_PATH_REVOKE,
  }),
);
const runtime = new AwsKeyRotationRuntime({
  baseUrl: env.ACCTOPS_BASE_URL,
  graceMs: env.REVOCATION_GRACE_SECONDS * 1000,
  consumerCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  apiKeyPaths: { list: env.API_KEY_PATH_LIST, create: env.API_KEY_PATH_CREATE, revoke: env.API_KEY_PATH_REVOKE },
  clock: systemClock,
});

/**
 * Invoked by the one-time EventBridge Scheduler schedule that finishSecret created: the input is
 * the revocation (ids and prefix, never a key). Idempotent; never revokes the current key.
 */
export const handler = createHandler({
  eventSchema: revocationSchema,
  correlationId: (event) => (event as { rotationToken?: unknown } | null)?.rotationToken as string | undefined,
  handler: async (event, { logger, metrics }) => ({ apiKeyId: event.apiKeyId, outcome: await revokeApiKey(event, runtime.revokeDeps({ logger, metrics })) }),
});
