import { randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbRegistryTable } from '../../src/adapters/aws/dynamodb-company-registry';
import { DynamoDbReplayGuard } from '../../src/adapters/aws/dynamodb-replay-guard';
import { MemoryExportQueue } from '../helpers/memory-export-queue';
import { MemoryReplayGuard } from '../helpers/memory-replay-guard';
import { CompanyRegistry } from '../../src/core/companies/company-registry';
import { FORMATS } from '../../src/core/exports/formats/datasets';
import { registryAllowlist, type CompanyAllowlist } from '../../src/core/exports/pipeline/company-allowlist';
import { decodeJob } from '../../src/core/exports/pipeline/export-jobs';
import {
  WEBHOOK_HEADERS,
  receiveExportWebhook,
  signWebhook,
  type ReplayGuard,
  type WebhookDeps,
  type WebhookResponse,
} from '../../src/core/exports/pipeline/webhook';
import { webhookSecretsFromStore } from '../../src/core/exports/pipeline/webhook-secrets';
import { ManualClock } from '../../src/core/shared/clock';
import { MemoryLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../src/core/shared/redact';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { startDynamo, startDynamoFaults, type LocalDynamo } from '../helpers/dynalite';
import { client as secretsClient, secretStore, startSecretsManager, type RunningSecretsManager } from '../helpers/secrets-manager';
import { matrixColumn } from './harness';
import { createRegistryTable, createReplayTable } from '../helpers/dynamodb-tables';

/**
 * The webhook column of the fault matrix (docs/reliability.md): receiveExportWebhook as the
 * receive-export-webhook function wires it, with the signing secret (a canary) in the Secrets
 * Manager emulator, the replay guard on dynalite and the export queue in memory. The body faults
 * are a sender's schema drift: each is refused with a 4xx that names the field, nothing enqueued.
 */

const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const clock = new ManualClock(Date.UTC(2026, 10, 3, 10, 0));
const logger = new MemoryLogger();
let sm: RunningSecretsManager;
let dynamo: LocalDynamo;
let ddb: DynamoDBClient;
let secretArn: string;

beforeAll(async () => {
  [sm, dynamo] = await Promise.all([startSecretsManager({ clock }), startDynamo()]);
  ddb = dynamo.client();
  const sdk = secretsClient(sm);
  secretArn = (await sdk.send(new CreateSecretCommand({ Name: 'acctops/matrix/webhook', SecretString: CANARY.webhookSecret }))).ARN!;
  sdk.destroy();
});

afterEach(() => sm.admin.clearFaults());

afterAll(async () => {
  ddb.destroy();
  await Promise.all([sm.stop(), dynamo.stop()]);
  forgetRegisteredSecrets();
});

interface Receiver {
  queue: MemoryExportQueue;
  metrics: MemoryMetrics;
  deps: WebhookDeps;
  send(body: string | object, options?: { secret?: string }): Promise<WebhookResponse>;
}

/** One function instance: its own secret cache, replay guard (memory unless given) and metrics; a shared queue. */
function receiver(options: { replay?: ReplayGuard; queue?: MemoryExportQueue; allowlist?: CompanyAllowlist } = {}): Receiver {
  const queue = options.queue ?? new MemoryExportQueue();
  const metrics = new MemoryMetrics();
  const deps: WebhookDeps = {
    secrets: webhookSecretsFromStore(secretStore(sm), secretArn, { clock, logger }),
    replay: options.replay ?? new MemoryReplayGuard(clock),
    queue,
    allowedCompanies: options.allowlist ?? new Set([COMPANY]),
    clock,
    logger,
    metrics,
  };
  return {
    queue,
    metrics,
    deps,
    send: async (body, sendOptions = {}) => {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      const timestamp = Math.floor(clock.now() / 1000);
      const response = await receiveExportWebhook(deps, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [WEBHOOK_HEADERS.timestamp]: String(timestamp),
          [WEBHOOK_HEADERS.signature]: signWebhook(sendOptions.secret ?? CANARY.webhookSecret, timestamp, text),
        },
        body: Buffer.from(text, 'utf8'),
      });
      expectNoCanaries(response, 'webhook response');
      return response;
    },
  };
}

const request = (overrides: Record<string, unknown> = {}) => ({
  id: `evt-${randomUUID()}`,
  companyId: COMPANY,
  period: '2026-10',
  formats: ['csv'],
  ...overrides,
});

/** A sender's drift: refused with 400 naming `field`, nothing enqueued, the event id free for a corrected delivery. */
async function refusedNaming(body: Record<string, unknown>, field: string, message?: RegExp): Promise<'typed_failure'> {
  const r = receiver();
  const response = await r.send(body);
  expect(response).toMatchObject({
    status: 400,
    body: { error: { code: 'body_invalid', issues: [expect.objectContaining({ path: field })] } },
  });
  if (message) expect((response.body as { error: { issues: { message: string }[] } }).error.issues[0]!.message).toMatch(message);
  expect(r.metrics.sum('WebhookRejected')).toBe(1);
  expect(r.queue.messages).toEqual([]);
  // The refused delivery did not consume the event id: the corrected one is accepted.
  await expect(r.send(request({ id: body.id }))).resolves.toMatchObject({ status: 202 });
  expect(r.queue.messages).toHaveLength(1);
  return 'typed_failure';
}

matrixColumn('webhook', {
  timeout: async () => {
    const r = receiver();
    const body = request();
    r.queue.failNext = Object.assign(new Error('SQS SendMessageBatch timed out'), { name: 'TimeoutError' });
    await expect(r.send(body)).resolves.toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
    expect(r.metrics.sum('WebhookUnavailable')).toBe(1);
    expect(r.queue.messages).toEqual([]);
    // The sender retries the same event: accepted, once; a third delivery is a replay.
    await expect(r.send(body)).resolves.toMatchObject({ status: 202 });
    await expect(r.send(body)).resolves.toMatchObject({ status: 409, body: { error: { code: 'event_replayed' } } });
    expect(r.queue.messages).toHaveLength(1);
    return 'typed_failure';
  },

  'malformed-json': async () => {
    const r = receiver();
    const response = await r.send('{"id": "evt-1", "companyId": ');
    expect(response).toMatchObject({
      status: 400,
      body: { error: { code: 'body_invalid', issues: [{ path: '', message: 'not valid JSON' }] } },
    });
    expect(r.metrics.sum('WebhookRejected')).toBe(1);
    expect(r.queue.messages).toEqual([]);
    return 'typed_failure';
  },

  'drift-missing-field': () => {
    const { companyId: _dropped, ...body } = request();
    return refusedNaming(body, 'companyId');
  },

  'drift-extra-fields': () => refusedNaming({ ...request(), priority: 'high' }, '', /priority/),

  'drift-unknown-enum': () => refusedNaming(request({ formats: ['xlsx'] }), 'formats[0]'),

  'secrets-throttling': async () => {
    const r = receiver();
    const body = request();
    sm.admin.injectFault({ operation: 'GetSecretValue', count: 1000 });
    await expect(r.send(body)).resolves.toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
    expect(r.metrics.sum('WebhookUnavailable')).toBe(1);
    expect(r.metrics.sum('WebhookRejected')).toBe(0);
    expect(r.queue.messages).toEqual([]);
    sm.admin.clearFaults();
    // Nothing was claimed: the sender's retry goes through.
    await expect(r.send(body)).resolves.toMatchObject({ status: 202 });
    expect(r.queue.messages.map((m) => decodeJob(m.body))).toEqual([expect.objectContaining({ companyId: COMPANY, period: '2026-10' })]);
    return 'typed_failure';
  },

  'registry-read-throttled': async () => {
    const tableName = `matrix-registry-${randomUUID().slice(0, 8)}`;
    await createRegistryTable(ddb, tableName);
    await new CompanyRegistry(new DynamoDbRegistryTable({ client: ddb, tableName }), { defaultFormats: FORMATS }).add(
      { companyId: COMPANY },
      clock.now(),
    );
    const faults = await startDynamoFaults(dynamo);
    const client = faults.client();
    try {
      // As the webhook's root wires it (export-webhook-runtime.ts), on a client with the SDK's default retries.
      const allowlist = registryAllowlist(
        new CompanyRegistry(new DynamoDbRegistryTable({ client, tableName }), { defaultFormats: FORMATS }),
        {
          clock,
        },
      );
      const r = receiver({ allowlist });
      const body = request();
      faults.inject({ operation: 'GetItem', count: 'always' });
      await expect(r.send(body)).resolves.toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
      expect(faults.stats.errors).toEqual({ ProvisionedThroughputExceededException: await client.config.maxAttempts() });
      expect(r.metrics.sum('WebhookUnavailable')).toBe(1);
      expect(r.metrics.sum('WebhookRejected')).toBe(0);
      expect(r.queue.messages).toEqual([]);
      faults.clear();
      // A failed read is not cached as "not allowed", and the claim was released: the sender's retry goes through.
      await expect(r.send(body)).resolves.toMatchObject({ status: 202 });
      expect(r.queue.messages.map((m) => decodeJob(m.body))).toEqual([expect.objectContaining({ companyId: COMPANY, period: '2026-10' })]);
    } finally {
      client.destroy();
      await faults.stop();
    }
    return 'typed_failure';
  },

  'dynamodb-conditional': async () => {
    const tableName = `matrix-replay-${randomUUID().slice(0, 8)}`;
    await createReplayTable(ddb, tableName);
    const queue = new MemoryExportQueue();
    // Two function instances get the same delivery at once (the sender retried a slow answer).
    const [a, b] = [0, 1].map(() => receiver({ queue, replay: new DynamoDbReplayGuard({ client: ddb, tableName, clock }) }));
    const body = request();
    const answers = await Promise.all([a!.send(body), b!.send(body)]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409]);
    expect(queue.messages).toHaveLength(1);
    // Later deliveries of the same id keep losing the conditional put.
    await expect(receiver({ queue, replay: new DynamoDbReplayGuard({ client: ddb, tableName, clock }) }).send(body)).resolves.toMatchObject(
      { status: 409 },
    );
    expect(queue.messages).toHaveLength(1);
    return 'consistent';
  },
});
