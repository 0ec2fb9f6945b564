import { AwsKeyRotateRuntime } from '../../src/adapters/aws/key-rotate-runtime';
import { keyRotationRuntimeFromEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { KeyRotation, rotationEventSchema } from '../../src/core/api-keys';
import { createHandler } from '../_shared/create-handler';

const { runtime } = keyRotationRuntimeFromEnv(AwsKeyRotateRuntime, [
  'ACCTOPS_BASE_URL',
  'REVOCATION_GRACE_SECONDS',
  'SECRET_CACHE_TTL_SECONDS',
  'REVOCATION_SCHEDULE_GROUP',
  'REVOKE_FUNCTION_ARN',
  'REVOCATION_SCHEDULER_ROLE_ARN',
  'REVOCATION_DEAD_LETTER_ARN',
  'API_KEY_PATH_LIST',
  'API_KEY_PATH_CREATE',
  'API_KEY_PATH_REVOKE',
  'COMPANY_REGISTRY_TABLE_NAME',
]);

/**
 * The Secrets Manager rotation function of the company API-key secrets: one of the four steps per
 * invocation (`{ SecretId, ClientRequestToken, Step }`). A thrown error is a failed step, which
 * Secrets Manager records; the step has rolled the rotation back by then. createSecret of a company
 * the registry says was removed is such a failure (CompanyRemovedRotationError).
 */
export const handler = createHandler({
  eventSchema: rotationEventSchema,
  correlationId: (event) => (event as { ClientRequestToken?: unknown } | null)?.ClientRequestToken as string | undefined,
  handler: async (event, { logger, metrics }) => {
    const outcome = await new KeyRotation(runtime.rotationDeps({ logger, metrics })).runStep(event);
    return { step: event.Step, outcome };
  },
});
