import * as z from 'zod';
import { keyRotationRuntimeFromEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { checkKeyRotations, checkQueuedCompanies, sweepKeyRotations } from '../../src/core/api-keys';
import { systemClock } from '../../src/core/shared/clock';
import { createHandler } from '../_shared/create-handler';

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
  'COMPANY_REGISTRY_TABLE_NAME',
  'ROTATION_CHECK_QUEUE_URL',
  'ROTATION_INLINE_LIMIT',
]);

/**
 * The rotation doctor, on a schedule (or `acctops doctor`): `{}` repairs what is safe, and
 * `{ "repair": false }` only reports. Extra members (an EventBridge envelope) are ignored. With the
 * registry (COMPANY_REGISTRY_TABLE_NAME) it sweeps for due companies only and queues them when many
 * (docs/fleet-rotation.md); the same function then consumes that queue: an SQS batch is one
 * company's full check per message, with partial batch failures.
 */
/**
 * Time kept back from the Lambda timeout (5 min): describing stops then; the 16 calls in flight,
 * queueing the due companies and the findings' events still have to fit.
 */
const RESERVE_MS = 60_000;

const sqsRecord = z.looseObject({ messageId: z.string().min(1), body: z.string(), eventSource: z.literal('aws:sqs') });
// One object rather than a union, so that a broken member is named in the ValidationError.
const eventSchema = z.looseObject({ repair: z.boolean().optional(), Records: z.array(sqsRecord).min(1).optional() });

export const handler = createHandler({
  eventSchema,
  handler: async (event, { logger, metrics, lambdaContext }) => {
    if (event.Records !== undefined) {
      const { deps, settings } = runtime.doctor({ logger, metrics });
      const result = await checkQueuedCompanies(deps, settings, event.Records.map((r) => ({ messageId: r.messageId, body: r.body })));
      return { batchItemFailures: result.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    }
    const repair = event.repair ?? true;
    const sweep = runtime.sweep({ logger, metrics });
    if (sweep) {
      const remaining = lambdaContext.getRemainingTimeInMillis?.();
      const deadline = remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS;
      return sweepKeyRotations(sweep.deps, { ...sweep.settings, repair, deadline });
    }
    const { deps, settings } = runtime.doctor({ logger, metrics });
    return checkKeyRotations(deps, { ...settings, repair });
  },
});
