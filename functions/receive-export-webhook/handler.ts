import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import * as z from 'zod';
import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { AwsExportWebhookRuntime } from '../../src/adapters/aws/export-webhook-runtime';
import { receiveExportWebhook } from '../../src/core/exports/pipeline/webhook';
import { createHandler } from '../_shared/create-handler';
import { lazySchema } from '../../src/core/shared/lazy-schema';

const { runtime } = exportRuntimeFromEnv(AwsExportWebhookRuntime, [
  'EXPORT_QUEUE_URL',
  'WEBHOOK_SECRET_ARN',
  'WEBHOOK_REPLAY_TABLE_NAME',
  'COMPANY_REGISTRY_TABLE_NAME',
  'WEBHOOK_MAX_BODY_BYTES',
  'SECRET_CACHE_TTL_SECONDS',
]);

/** A Lambda Function URL request (payload format 2.0): what the checks need, nothing more. */
const eventSchema = lazySchema(() =>
  z.looseObject({
    headers: z.record(z.string(), z.string()).default({}),
    body: z.string().optional(),
    isBase64Encoded: z.boolean().default(false),
    requestContext: z.looseObject({ http: z.looseObject({ method: z.string().min(1) }) }),
  }),
);

export const handler = createHandler({
  eventSchema,
  // A sender's header must not become our correlation id: the request id is used.
  correlationId: () => undefined,
  handler: async (event, { logger, metrics }): Promise<APIGatewayProxyStructuredResultV2> => {
    const body = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
    const headers = Object.fromEntries(Object.entries(event.headers).map(([name, value]) => [name.toLowerCase(), value]));
    const response = await receiveExportWebhook(runtime.webhookDeps({ logger, metrics }), {
      method: event.requestContext.http.method,
      headers,
      body,
    });
    return { statusCode: response.status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(response.body) };
  },
});
