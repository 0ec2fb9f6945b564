import * as z from 'zod';
import { AwsKeyRotationRuntime, keyRotationEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { checkKeyRotations } from '../../src/core/api-keys';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    ACCTOPS_BASE_URL: keyRotationEnv.ACCTOPS_BASE_URL,
    REVOCATION_GRACE_SECONDS: keyRotationEnv.REVOCATION_GRACE_SECONDS,
    SECRET_CACHE_TTL_SECONDS: keyRotationEnv.SECRET_CACHE_TTL_SECONDS,
    REVOCATION_SCHEDULE_GROUP: keyRotationEnv.REVOCATION_SCHEDULE_GROUP,
    KEY_EVENT_BUS_NAME: keyRotationEnv.KEY_EVENT_BUS_NAME,
    API_KEY_PATH_LIST: keyRotationEnv.API_KEY_PATH_LIST,
    API_KEY_PATH_CREATE: keyRotationEnv.API_KEY_PATH_CREATE,
    API_KEY_PATH_REVOKE: keyRotationEnv.API_KEY_PATH_REVOKE,
    STUCK_PENDING_AFTER_MINUTES: keyRotationEnv.STUCK_PENDING_AFTER_MINUTES,
    EXPIRY_WARNING_DAYS: keyRotationEnv.EXPIRY_WARNING_DAYS,
  }),
);
const runtime = new AwsKeyRotationRuntime({
  baseUrl: env.ACCTOPS_BASE_URL,
  graceMs: env.REVOCATION_GRACE_SECONDS * 1000,
  consumerCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
  scheduleGroup: env.REVOCATION_SCHEDULE_GROUP,
  eventBusName: env.KEY_EVENT_BUS_NAME,
  apiKeyPaths: { list: env.API_KEY_PATH_LIST, create: env.API_KEY_PATH_CREATE, revoke: env.API_KEY_PATH_REVOKE },
  doctor: { stuckPendingAfterMs: env.STUCK_PENDING_AFTER_MINUTES * 60_000, expiryWarningMs: env.EXPIRY_WARNING_DAYS * 86_400_000 },
  clock: systemClock,
});

/**
 * The rotation doctor, on a schedule (or `acctops doctor`): `{}` repairs what is safe, and
 * `{ "repair": false }` only reports. Extra members (an EventBridge envelope) are ignored.
 */
const eventSchema = z.looseObject({ repair: z.boolean().optional() });

export const handler = createHandler({
  eventSchema,
  handler: async (event, { logger, metrics }) => {
    const { deps, settings } = runtime.doctor({ logger, metrics });
    return checkKeyRotations(deps, { ...settings, repair: event.repair ?? true });
  },
});
