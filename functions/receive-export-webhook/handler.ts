import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import * as z from 'zod';
import { exportRuntimeFromEnv } from '../../src/adapters/aws/export-runtime';
import { AwsExportWebhookRuntime } from '../../src/adapters/aws/export-webhook-runtime';
import { receiveExportWebhook } from '../../src/core/exports/pipeline/webhook';
import { createHandler } from '../_shared/create-handler';
import { lazySchema } from '../../src/core/shared/lazy-schema';

const { env, runtime } = exportRuntimeFromEnv(AwsExportWebhookRuntime, [
  'EXPORT_QUEUE_URL',
  'WEBHOOK_SECRET_ARN',
  'WEBHOOK_REPLAY_TABLE_NAME',
  'COMPANY_REGISTRY_TABLE_NAME',
  'WEBHOOK_MAX_BODY_BYTES',
  'SECRET_CACHE_TTL_SECONDS',
  'EXPORT_TIME_ZONE',
]);

/** A Lambda Function URL request (payload format 2.0): what the checks need, nothing more. */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  z.looseObject({
    headers: z.record(z.string(), z.string()).default({}),
    body: z.string().optional(),
    isBase64Encoded: z.boolean().default(false),
    requestContext: z.looseObject({
      // Where the request came from, for the log line of a refusal (never a header that could be secret).
      http: z.looseObject({ method: z.string().min(1), sourceIp: z.string().optional(), userAgent: z.string().optional() }),
    }),
  }),
);

export const handler = createHandler({
  eventSchema,
  // A sender's header must not become our correlation id: the request id is used.
  correlationId: () => undefined,
  handler: async (event, { logger, metrics }): Promise<APIGatewayProxyStructuredResultV2> => {
    const body = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
    const headers = Object.fromEntries(Object.entries(event.headers).map(([name, value]) => [name.toLowerCase(), value]));
    const { method, sourceIp, userAgent } = event.requestContext.http;
    const response = await receiveExportWebhook(
      { ...runtime.webhookDeps({ logger, metrics }), timeZone: env.EXPORT_TIME_ZONE },
      { method, headers, body, source: { ip: sourceIp, userAgent } },
    );
    return { statusCode: response.status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(response.body) };
  },
});
