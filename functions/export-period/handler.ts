import type { SQSBatchResponse } from 'aws-lambda';
import * as z from 'zod';
import { AwsExportRuntime, exportEnv } from '../../src/adapters/aws/export-runtime';
import { processExportBatch } from '../../src/core/exports/export-worker';
import { systemClock } from '../../src/core/shared/clock';
import { readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';

const env = readEnv(
  z.object({
    ACCTOPS_BASE_URL: exportEnv.ACCTOPS_BASE_URL,
    ACCTOPS_TOOL_VERSION: exportEnv.ACCTOPS_TOOL_VERSION,
    EXPORT_BUCKET_NAME: exportEnv.EXPORT_BUCKET_NAME,
    EXPORT_QUEUE_URL: exportEnv.EXPORT_QUEUE_URL,
    EXPORT_EVENT_BUS_NAME: exportEnv.EXPORT_EVENT_BUS_NAME,
    EXPORT_RUNS_TABLE_NAME: exportEnv.EXPORT_RUNS_TABLE_NAME,
    TOKEN_TABLE_NAME: exportEnv.TOKEN_TABLE_NAME,
    EXPORT_MAX_RECEIVE_COUNT: exportEnv.EXPORT_MAX_RECEIVE_COUNT,
    SECRET_CACHE_TTL_SECONDS: exportEnv.SECRET_CACHE_TTL_SECONDS,
  }),
);
const runtime = new AwsExportRuntime({
  clock: systemClock,
  baseUrl: env.ACCTOPS_BASE_URL,
  bucketName: env.EXPORT_BUCKET_NAME,
  queueUrl: env.EXPORT_QUEUE_URL,
  eventBusName: env.EXPORT_EVENT_BUS_NAME,
  runsTableName: env.EXPORT_RUNS_TABLE_NAME,
  tokenTableName: env.TOKEN_TABLE_NAME,
  secretCacheTtlMs: env.SECRET_CACHE_TTL_SECONDS * 1000,
});

/**
 * The SQS envelope only: each body is parsed per message in src, so one bad message is one batch
 * item failure (bound for the DLQ), not a failed batch.
 */
const eventSchema = z.object({
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
});

export const handler = createHandler({
  eventSchema,
  handler: async (event, { logger, metrics }): Promise<SQSBatchResponse> => {
    const report = await processExportBatch(
      {
        exporter: runtime.exporter(env.ACCTOPS_TOOL_VERSION),
        credentials: runtime.credentials(logger),
        queue: runtime.queue(),
        ledger: runtime.ledger(),
        events: runtime.events(),
        clock: systemClock,
        logger,
        metrics,
        maxReceiveCount: env.EXPORT_MAX_RECEIVE_COUNT,
      },
      event.Records.map((r) => ({ messageId: r.messageId, body: r.body, receiveCount: r.attributes.ApproximateReceiveCount })),
    );
    return { batchItemFailures: report.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
  },
});
