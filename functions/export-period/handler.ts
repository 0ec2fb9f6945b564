import type { SQSBatchResponse } from 'aws-lambda';
import * as z from 'zod';
import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { AwsExportWorkerRuntime } from '../../src/adapters/aws/export-worker-runtime';
import { processExportBatch } from '../../src/core/exports/pipeline/export-worker';
// Not create-handler: this bundle has no room for Powertools (docs/observability.md).
import { createHandler } from '../_shared/create-lean-handler';
import { lazySchema } from '../../src/core/shared/lazy-schema';
import { systemClock } from '../../src/core/shared/clock';

const { runtime } = exportRuntimeFromEnv(AwsExportWorkerRuntime, [
  'ACCTOPS_BASE_URL',
  'ACCTOPS_TOOL_VERSION',
  'EXPORT_BUCKET_NAME',
  'EXPORT_QUEUE_URL',
  'EXPORT_EVENT_BUS_NAME',
  'EXPORT_RUNS_TABLE_NAME',
  'TOKEN_TABLE_NAME',
  'COMPANY_REGISTRY_TABLE_NAME',
  'EXPORT_MAX_RECEIVE_COUNT',
  'EXPORT_MAX_TRANSACTIONS_PER_PART',
  'EXPORT_TAX_REPORT_FIELDS',
  'SECRET_CACHE_TTL_SECONDS',
  'EXPORT_PAGE_SIZE',
  'EXPORT_DATE_TO',
]);

/**
 * What an invocation keeps after the last retry's wait: that attempt (60 s at most) and the
 * failure's report (cleanup, ExportFailed). No wait ends later than the invocation's end less this.
 */
const RESERVE_MS = 90_000;

/**
 * The SQS envelope only: each body is parsed per message in src, so one bad message is one batch
 * item failure (bound for the DLQ), not a failed batch.
 */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    Records: z
      .array(
        z.looseObject({
          messageId: z.string().min(1),
          body: z.string(),
          eventSource: z.literal('aws:sqs'),
          attributes: z.looseObject({ ApproximateReceiveCount: z.coerce.number().int().min(1) }),
        }),
      )
      .min(1),
  }),
);

export const handler = createHandler({
  eventSchema,
  handler: async (event, { logger, metrics, lambdaContext }): Promise<SQSBatchResponse> => {
    const remaining = lambdaContext.getRemainingTimeInMillis?.();
    const report = await processExportBatch(
      runtime.workerDeps(
        { logger, metrics },
        { deadlineAt: remaining === undefined ? undefined : systemClock.now() + remaining - RESERVE_MS },
      ),
      event.Records.map((r) => ({ messageId: r.messageId, body: r.body, receiveCount: r.attributes.ApproximateReceiveCount })),
    );
    return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
  },
});
