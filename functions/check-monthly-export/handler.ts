import * as z from 'zod';
import { AwsExportRuntime, exportEnv } from '../../src/adapters/aws/export-runtime';
import { checkMonthlyExport } from '../../src/core/exports/monthly-export';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    EXPORT_BUCKET_NAME: exportEnv.EXPORT_BUCKET_NAME,
    EXPORT_EVENT_BUS_NAME: exportEnv.EXPORT_EVENT_BUS_NAME,
    EXPORT_RUNS_TABLE_NAME: exportEnv.EXPORT_RUNS_TABLE_NAME,
    EXPORT_TIME_ZONE: exportEnv.EXPORT_TIME_ZONE,
    EXPORT_DUE_AFTER_HOURS: exportEnv.EXPORT_DUE_AFTER_HOURS,
  }),
);
const runtime = new AwsExportRuntime({
  clock: systemClock,
  bucketName: env.EXPORT_BUCKET_NAME,
  eventBusName: env.EXPORT_EVENT_BUS_NAME,
  runsTableName: env.EXPORT_RUNS_TABLE_NAME,
});

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
