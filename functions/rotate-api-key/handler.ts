import * as z from 'zod';
import { AwsKeyRotationRuntime, keyRotationEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { rotationEventSchema } from '../../src/core/api-keys';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    ACCTOPS_BASE_URL: keyRotationEnv.ACCTOPS_BASE_URL,
    REVOCATION_GRACE_SECONDS: keyRotationEnv.REVOCATION_GRACE_SECONDS,
    SECRET_CACHE_TTL_SECONDS: keyRotationEnv.SECRET_CACHE_TTL_SECONDS,
    REVOCATION_SCHEDULE_GROUP: keyRotationEnv.REVOCATION_SCHEDULE_GROUP,
    REVOKE_FUNCTION_ARN: keyRotationEnv.REVOKE_FUNCTION_ARN,
    REVOCATION_SCHEDULER_ROLE_ARN: keyRotationEnv.REVOCATION_SCHEDULER_ROLE_ARN,
    API_KEY_PATH_LIST: keyRotationEnv.API_KEY_PATH_LIST,
    API_KEY_PATH_CREATE: keyRotationEnv.API_KEY_PATH_CREATE,
    API_KEY_PATH_REVOKE: keyRotationEnv.API_KEY_PATH_REVOKE,
  }),
);
const runtime = new AwsKeyRotationRuntime({
  baseUrl: env.ACCTOPS_BASE_URL,
  graceMs: env.REVOCATION_GRACE_SECONDS * 1000,
  consumerCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  scheduleGroup: env.REVOCATION_SCHEDULE_GROUP,
  revokeTarget: { functionArn: env.REVOKE_FUNCTION_ARN, roleArn: env.REVOCATION_SCHEDULER_ROLE_ARN },
  apiKeyPaths: { list: env.API_KEY_PATH_LIST, create: env.API_KEY_PATH_CREATE, revoke: env.API_KEY_PATH_REVOKE },
  clock: systemClock,
});

/**
 * The Secrets Manager rotation function of the company API-key secrets: one of the four steps per
 * invocation (`{ SecretId, ClientRequestToken, Step }`). A thrown error is a failed step, which
 * Secrets Manager records; the step has rolled the rotation back by then.
 */
export const handler = createHandler({
  eventSchema: rotationEventSchema,
  correlationId: (event) => (event as { ClientRequestToken?: unknown } | null)?.ClientRequestToken as string | undefined,
  handler: async (event, { logger, metrics }) => {
    const outcome = await runtime.rotation({ logger, metrics }).runStep(event);
    return { step: event.Step, outcome };
  },
});
