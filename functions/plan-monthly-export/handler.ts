import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { AwsExportPlannerRuntime } from '../../src/adapters/aws/export-planner-runtime';
import { CompanyRegistry } from '../../src/core/companies/company-registry';
import { planMonthlyExport } from '../../src/core/exports/pipeline/monthly-export';
import { createHandler } from '../_shared/create-handler';
import { scheduledCorrelationId, scheduledEventSchema } from '../_shared/scheduled-event';

const { env, runtime } = exportRuntimeFromEnv(AwsExportPlannerRuntime, [
  'EXPORT_QUEUE_URL',
  'EXPORT_EVENT_BUS_NAME',
  'EXPORT_RUNS_TABLE_NAME',
  'TOKEN_TABLE_NAME',
  'COMPANY_REGISTRY_TABLE_NAME',
  'EXPORT_FORMATS',
  'EXPORT_TIME_ZONE',
]);

/**
 * What EventBridge Scheduler sends (lib/constructs/exports/pipeline.ts); a runbook may invoke the planner
 * with the same shape to plan a month again (`scheduledAt` in the month after it, a new
 * `executionId` for a new run).
 */
const eventSchema = scheduledEventSchema('monthly-export');

export const handler = createHandler({
  eventSchema,
  correlationId: scheduledCorrelationId,
  handler: (event, { logger, metrics }) =>
    planMonthlyExport(runtime.planDeps({ logger, metrics }), {
      scheduledAt: event.scheduledAt,
      executionId: event.executionId,
      timeZone: env.EXPORT_TIME_ZONE,
      // Seeded from cdk.json `companies` by the stack, added and removed by `acctops companies`.
      registry: new CompanyRegistry(runtime.registryTable(), { defaultFormats: env.EXPORT_FORMATS, logger }),
      users: runtime.tokenStore(),
      formats: env.EXPORT_FORMATS,
    }),
});
