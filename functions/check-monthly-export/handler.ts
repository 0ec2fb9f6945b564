import * as z from 'zod';
import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { checkMonthlyExport } from '../../src/core/exports/pipeline/monthly-export';
import { systemClock } from '../../src/core/shared/clock';
import { createHandler } from '../_shared/create-handler';

const { env, runtime } = exportRuntimeFromEnv([
  'EXPORT_BUCKET_NAME',
  'EXPORT_EVENT_BUS_NAME',
  'EXPORT_RUNS_TABLE_NAME',
  'EXPORT_TIME_ZONE',
  'EXPORT_DUE_AFTER_HOURS',
]);

/** The hourly schedule's input (lib/constructs/exports.ts). */
const eventSchema = z.strictObject({
  source: z.literal('acctops.scheduler'),
  schedule: z.literal('monthly-export-check'),
  scheduledAt: z.iso.datetime({ offset: true }),
  executionId: z.string().min(1).max(128),
});

export const handler = createHandler({
  eventSchema,
  correlationId: (event) => (event as { executionId?: string } | null)?.executionId,
  handler: (_event, { logger, metrics }) =>
    checkMonthlyExport(
      { ledger: runtime.ledger(), store: runtime.store(), events: runtime.events(), clock: systemClock, logger, metrics },
      { timeZone: env.EXPORT_TIME_ZONE, dueAfterHours: env.EXPORT_DUE_AFTER_HOURS },
    ),
});
