import * as z from 'zod';
import { AwsKeyDoctorRuntime } from '../../src/adapters/aws/key-doctor-runtime';
import { keyRotationRuntimeFromEnv } from '../../src/adapters/aws/key-rotation-runtime';
import { checkKeyRotations, checkQueuedCompanies, sweepKeyRotations } from '../../src/core/api-keys';
import { systemClock } from '../../src/core/shared/clock';
import { createHandler } from '../_shared/create-handler';
import { scheduledCorrelationId, scheduledOrManualEventSchema } from '../_shared/scheduled-event';
import { lazySchema } from '../../src/core/shared/lazy-schema';

const { runtime } = keyRotationRuntimeFromEnv(AwsKeyDoctorRuntime, [
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
 * Time kept back from the Lambda timeout (5 min): describing stops then; the 16 calls in flight,
 * queueing the due companies and the findings' events still have to fit.
 */
const RESERVE_MS = 60_000;

/**
 * The rotation doctor, on its schedule (lib/constructs/key-rotation.ts) or by hand (`acctops
 * doctor`): without `repair` it repairs what is safe, and `{ "repair": false }` only reports. With
 * the registry (COMPANY_REGISTRY_TABLE_NAME) it sweeps for due companies only and queues them when
 * many (docs/fleet-rotation.md); the same function then consumes that queue: an SQS batch is one
 * company's full check per message, with partial batch failures, unless the company left the
 * registry or stopped being due since it was queued (then the message ends with a log line and
 * `RotationChecksSkipped`).
 */
const sqsRecord = /* @__PURE__ */ lazySchema(() =>
  z.looseObject({ messageId: z.string().min(1), body: z.string(), eventSource: z.literal('aws:sqs') }),
);
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  scheduledOrManualEventSchema('key-rotation-doctor', {
    repair: z.boolean().optional(),
    Records: z.array(sqsRecord).min(1).optional(),
  }),
);

export const handler = createHandler({
  eventSchema,
  correlationId: scheduledCorrelationId,
  handler: async (event, { logger, metrics, lambdaContext }) => {
    if (event.Records !== undefined) {
      const messages = event.Records.map((r) => ({ messageId: r.messageId, body: r.body }));
      const result = await checkQueuedCompanies(runtime.queuedCheckDeps({ logger, metrics }), runtime.doctorSettings(), messages);
      return { batchItemFailures: result.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    }
    const repair = event.repair ?? true;
    const sweep = runtime.sweepDeps({ logger, metrics });
    if (sweep) {
      const remaining = lambdaContext.getRemainingTimeInMillis?.();
      const deadline = remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS;
      return sweepKeyRotations(sweep, { ...runtime.sweepSettings(), repair, deadline });
    }
    return checkKeyRotations(runtime.doctorDeps({ logger, metrics }), { ...runtime.doctorSettings(), repair });
  },
});
