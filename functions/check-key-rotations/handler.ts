import * as z from 'zod';
import { keyRotationRuntimeFromEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { checkKeyRotations } from '../../src/core/api-keys';
import { createHandler } from '../_shared/create-handler';
import { scheduledCorrelationId, scheduledOrManualEventSchema } from '../_shared/scheduled-event';

const { runtime } = keyRotationRuntimeFromEnv([
  'ACCTOPS_BASE_URL',
  'REVOCATION_GRACE_SECONDS',
  'SECRET_CACHE_TTL_SECONDS',
  'REVOCATION_SCHEDULE_GROUP',
  'KEY_EVENT_BUS_NAME',
  'API_KEY_PATH_LIST',
  'API_KEY_PATH_CREATE',
  'API_KEY_PATH_REVOKE',
  'STUCK_PENDING_AFTER_MINUTES',
  'EXPIRY_WARNING_DAYS',
]);

/**
 * The rotation doctor, on its schedule (lib/constructs/key-rotation.ts) or by hand (`acctops
 * doctor`): without `repair` it repairs what is safe, and `{ "repair": false }` only reports.
 */
const eventSchema = scheduledOrManualEventSchema('key-rotation-doctor', { repair: z.boolean().optional() });

export const handler = createHandler({
  eventSchema,
  correlationId: scheduledCorrelationId,
  handler: (event, { logger, metrics }) =>
    checkKeyRotations(runtime.doctorDeps({ logger, metrics }), { ...runtime.doctorSettings(), repair: event.repair ?? true }),
});
