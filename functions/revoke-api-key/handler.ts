import { AwsKeyRotationRuntime, keyRotationRuntimeFromEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { revocationSchema, revokeApiKey } from '../../src/core/api-keys';
import { createHandler } from '../_shared/create-handler';

const { runtime } = keyRotationRuntimeFromEnv(AwsKeyRotationRuntime, [
  'ACCTOPS_BASE_URL',
  'REVOCATION_GRACE_SECONDS',
  'SECRET_CACHE_TTL_SECONDS',
  'API_KEY_PATH_LIST',
  'API_KEY_PATH_CREATE',
  'API_KEY_PATH_REVOKE',
]);

/**
 * Invoked by the one-time EventBridge Scheduler schedule that finishSecret created: the input is
 * the revocation (ids and prefix, never a key). Idempotent; never revokes the current key.
 */
export const handler = createHandler({
  eventSchema: revocationSchema,
  logFields: (event) => ({ companyId: event.companyId, apiKeyId: event.apiKeyId, keyPrefix: event.keyPrefix }),
  correlationId: (event) => (event as { rotationToken?: unknown } | null)?.rotationToken as string | undefined,
  handler: async (event, { logger, metrics }) => ({
    apiKeyId: event.apiKeyId,
    outcome: await revokeApiKey(runtime.revokeDeps({ logger, metrics }), event),
  }),
});
