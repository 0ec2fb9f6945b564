import * as z from 'zod';
import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { AwsExportRequestRuntime } from '../../src/adapters/aws/export-request-runtime';
import { EXPORT_EVENT_TYPES } from '../../src/core/exports/pipeline/export-events';
import { periodOpen } from '../../src/core/exports/formats/period';
import { onDemandJobs, exportRequestedSchema, refuseFutureRequest } from '../../src/core/exports/pipeline/on-demand';
import { systemClock } from '../../src/core/shared/clock';
import { createHandler } from '../_shared/create-handler';
import { lazySchema } from '../../src/core/shared/lazy-schema';

const { env, runtime } = exportRuntimeFromEnv(AwsExportRequestRuntime, ['EXPORT_QUEUE_URL', 'EXPORT_TIME_ZONE']);

/** An `ExportRequested` event as the EventBridge rule delivers it (docs/exports.md, "On demand"). */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  z.looseObject({
    id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/),
    'detail-type': z.literal(EXPORT_EVENT_TYPES.requested),
    detail: exportRequestedSchema,
  }),
);

export const handler = createHandler({
  eventSchema,
  logFields: (event) => ({
    companyId: event.detail.companyId,
    userExternalId: event.detail.userExternalId,
    period: event.detail.period,
    from: event.detail.from,
    to: event.detail.to,
  }),
  handler: async (event, { logger }) => {
    const at = { now: systemClock.now(), timeZone: env.EXPORT_TIME_ZONE };
    // Before anything is queued: a month that has not begun, or one before 2000-01 (a mistyped
    // year), would be exported empty and reported complete (FuturePeriodError naming detail.period
    // or detail.to, EarlyPeriodError naming detail.period or detail.from; the CLI's rule).
    refuseFutureRequest(event.detail, at, 'detail.');
    // The request id (the sender's, else the event's) makes the jobs' deduplication ids:
    // EventBridge's at-least-once delivery of one event enqueues each month once.
    const jobs = onDemandJobs(event.detail, { kind: 'on_demand', requestId: event.detail.requestId ?? event.id, via: 'event' });
    await runtime.queue().enqueue(jobs);
    const periods = jobs.map((j) => j.period);
    // The current month is exported as it stands so far, like `acctops export --month <this month>`.
    const monthOpen = periods.some((period) => periodOpen(period, at.now, at.timeZone));
    logger.info('export requested', { companyId: event.detail.companyId, periods, source: jobs[0]?.source.kind, monthOpen });
    return { companyId: event.detail.companyId, periods };
  },
});
