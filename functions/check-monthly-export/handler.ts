import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { AwsExportOverdueRuntime } from '../../src/adapters/aws/export-overdue-runtime';
import { checkMonthlyExport } from '../../src/core/exports/pipeline/monthly-export';
import { createHandler } from '../_shared/create-handler';
import { scheduledCorrelationId, scheduledEventSchema } from '../_shared/scheduled-event';

const { env, runtime } = exportRuntimeFromEnv(AwsExportOverdueRuntime, [
  'EXPORT_BUCKET_NAME',
  'EXPORT_EVENT_BUS_NAME',
  'EXPORT_RUNS_TABLE_NAME',
  'EXPORT_TIME_ZONE',
  'EXPORT_DUE_AFTER_HOURS',
]);

/** The hourly schedule's input (lib/constructs/exports/pipeline.ts). */
const eventSchema = scheduledEventSchema('monthly-export-check');

export const handler = createHandler({
  eventSchema,
  correlationId: scheduledCorrelationId,
  handler: (_event, { logger, metrics }) =>
    checkMonthlyExport(runtime.overdueDeps({ logger, metrics }), {
      timeZone: env.EXPORT_TIME_ZONE,
      dueAfterHours: env.EXPORT_DUE_AFTER_HOURS,
    }),
});
