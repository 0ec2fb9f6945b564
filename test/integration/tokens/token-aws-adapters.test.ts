import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { EventBridgePublisher } from '../../../src/adapters/aws/eventbridge-publisher';
import { EnqueueError, SqsRefreshQueue } from '../../../src/adapters/aws/sqs-refresh-queue';
import { SqsExportQueue } from '../../../src/adapters/aws/sqs-export-queue';
import { SqsRotationCheckQueue } from '../../../src/adapters/aws/sqs-rotation-check-queue';
import type { QueuedCheck } from '../../../src/core/api-keys';
import type { QueuedJob } from '../../../src/core/exports/pipeline/export-jobs';
import { AccountingApiError, apiKeyAuth, createAccountingClient } from '../../../src/core/accounting-api';
import { exportFailed } from '../../../src/core/exports/pipeline/export-events';
import { EventPublishError } from '../../../src/core/ports/events';
import { ManualClock } from '../../../src/core/shared/clock';
import { tokenRefreshFailed } from '../../../src/core/tokens/token-events';
import { decodeRefreshRequest } from '../../../src/core/tokens/refresh-queue';
import { LOCAL_REGION, localClientConfig, localCredentials } from '../../helpers/aws-credentials';
import { startAwsRecorder, type AwsRecorder } from '../../helpers/aws-recorder';
import { canaryApiKey, expectNoCanaries, trackSecret } from '../../helpers/canary';
import { closeServer, listenOnLoopback } from '../../helpers/loopback';

// The SQS and EventBridge adapters with the real SDK clients against the recorder, including the
// per-entry refusals both services can answer a batch call with.

let recorder: AwsRecorder;
let sqs: SQSClient;
let events: EventBridgeClient;

beforeAll(async () => {
  recorder = await startAwsRecorder();
  sqs = new SQSClient(localClientConfig(recorder.endpoint));
  events = new EventBridgeClient(localClientConfig(recorder.endpoint));
});
afterAll(async () => {
  sqs.destroy();
  events.destroy();
  await recorder.stop();
});
beforeEach(() => {
  recorder.messages.length = 0;
  recorder.events.length = 0;
  recorder.refuseNext(0);
});

const requests = (n: number) => Array.from({ length: n }, (_, i) => ({ externalId: randomUUID(), dueAt: 1_000 + i }));

describe('SqsRefreshQueue', () => {
  it('sends one message per user, ten to a call', async () => {
    const queueUrl = recorder.queueUrl('refresh');
    const before = recorder.calls['AmazonSQS.SendMessageBatch'] ?? 0;
    const sent = requests(23);
    await new SqsRefreshQueue({ client: sqs, queueUrl }).enqueue(sent);
    expect(recorder.calls['AmazonSQS.SendMessageBatch']! - before).toBe(3);
    expect(recorder.messages.map((m) => decodeRefreshRequest(m.body)).sort((a, b) => a.dueAt - b.dueAt)).toEqual(sent);
  });

  it('sends refused entries again, and only those', async () => {
    const sent = requests(10);
    recorder.refuseNext(3);
    await new SqsRefreshQueue({ client: sqs, queueUrl: recorder.queueUrl('refresh') }).enqueue(sent);
    expect(recorder.messages).toHaveLength(10);
    expect(new Set(recorder.messages.map((m) => m.body)).size).toBe(10);
  });

  it('gives up with EnqueueError on a sender fault or when refusals persist', async () => {
    recorder.refuseNext(1, { senderFault: true });
    await expect(new SqsRefreshQueue({ client: sqs, queueUrl: recorder.queueUrl('refresh') }).enqueue(requests(2))).rejects.toMatchObject({
      name: 'EnqueueError',
      failed: 1,
      message: expect.stringMatching(/InvalidParameterValue/),
    });
    recorder.refuseNext(100);
    await expect(
      new SqsRefreshQueue({ client: sqs, queueUrl: recorder.queueUrl('refresh'), entryRetries: 2 }).enqueue(requests(1)),
    ).rejects.toBeInstanceOf(EnqueueError);
  });
});

describe('EventBridgePublisher', () => {
  it('publishes each event with the source, detail-type, time and JSON detail', async () => {
    const publisher = new EventBridgePublisher({ client: events, eventBusName: 'bus-1', source: 'acctops.tokens' });
    const batch = Array.from({ length: 12 }, (_, i) => ({ type: 'TokenRefreshFailed', time: Date.UTC(2026, 10, 1), detail: { n: i } }));
    await publisher.publish(batch);
    expect(recorder.events).toHaveLength(12);
    expect(recorder.events[11]).toEqual({
      eventBusName: 'bus-1',
      source: 'acctops.tokens',
      detailType: 'TokenRefreshFailed',
      detail: { n: 11 },
    });
  });

  it('raises EventPublishError naming the refusal codes when the bus refuses an entry', async () => {
    recorder.refuseNext(1);
    const publisher = new EventBridgePublisher({ client: events, eventBusName: 'bus-1', source: 'acctops.tokens' });
    const error = await publisher
      .publish([
        { type: 'X', time: 0, detail: { externalId: 'a' } },
        { type: 'X', time: 0, detail: {} },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventPublishError);
    expect(error).toMatchObject({ failed: 1, message: expect.stringMatching(/1 of 2 events refused by bus-1 \(InternalFailure\)/) });
  });
});

describe('EventBridgePublisher: no key in an event detail', () => {
  // Never registered: a key the service echoes, which acctops never held.
  const ECHOED = canaryApiKey('token-aws-adapters-echoed');
  const OURS = canaryApiKey('token-aws-adapters-ours');
  const rest = ECHOED.slice('sbx_'.length + 8);
  let service: Server;
  let origin: string;

  beforeAll(async () => {
    trackSecret(ECHOED);
    trackSecret(OURS);
    // A service (or a proxy, or a fault) that puts a key in every error field but the message.
    service = createServer((req, res) => {
      req.resume();
      res.writeHead(401, { 'content-type': 'application/json', 'x-request-id': ECHOED });
      res.end(JSON.stringify({ detail: 'refused', code: ECHOED }));
    });
    origin = await listenOnLoopback(service);
  });
  afterAll(() => closeServer(service));

  async function serviceFailure(): Promise<unknown> {
    const client = createAccountingClient({
      baseUrl: `${origin}/api/v1`,
      credentials: apiKeyAuth(OURS),
      clock: ManualClock.autoAdvancing(),
      retry: { maxAttempts: 1 },
    });
    return client.companies
      .list()
      .all()
      .catch((e: unknown) => e);
  }

  it('TokenRefreshFailed and ExportFailed of a failure whose code and request id the service made a key', async () => {
    const error = await serviceFailure();
    expect(error).toMatchObject({ name: 'AuthenticationError', status: 401 });
    const time = Date.UTC(2026, 10, 1);
    const record = { externalId: randomUUID(), consecutiveFailures: 3, accessTokenExpiresAt: time };
    const base = {
      companyId: randomUUID(),
      period: '2026-10',
      manifestKey: 'exports/x/_manifest.json',
      manifestUrl: 's3://b/exports/x/_manifest.json',
      previousExport: false,
      retryable: false,
      attempts: 1,
      source: { kind: 'apiKey' as const },
      trigger: { kind: 'monthly' as const, runId: 'run-1' },
    };
    await new EventBridgePublisher({ client: events, eventBusName: 'bus-1', source: 'acctops.tokens' }).publish([
      tokenRefreshFailed(record, { retrieveError: error, refreshError: error }, time),
      exportFailed(base, error, time),
    ]);
    expect(recorder.events).toHaveLength(2);
    for (const event of recorder.events) {
      expect(event.detail).toMatchObject({
        errorClass: 'AuthenticationError',
        status: 401,
        apiCode: '[REDACTED]',
        requestId: '[REDACTED]',
      });
    }
    expect(JSON.stringify(recorder.events)).not.toContain(rest);
    expectNoCanaries(recorder.events, 'published events');
  });

  it('a detail that holds a key anyway (built from an error made elsewhere) is cut to the prefix, its field names kept', async () => {
    const error = new AccountingApiError(undefined, { status: 409, apiCode: ECHOED, requestId: `id ${ECHOED}` });
    const time = Date.UTC(2026, 10, 1);
    const record = { externalId: randomUUID(), consecutiveFailures: 1, accessTokenExpiresAt: time };
    await new EventBridgePublisher({ client: events, eventBusName: 'bus-1', source: 'acctops.keys' }).publish([
      tokenRefreshFailed(record, { retrieveError: error, refreshError: error }, time),
      { type: 'KeyRotationFinding', time, detail: { secret: 'acctops/test/company/c_1', detail: `echoed ${ECHOED}` } },
    ]);
    expect(JSON.stringify(recorder.events)).not.toContain(rest);
    expect(recorder.events[0]!.detail).toMatchObject({ apiCode: `${ECHOED.slice(0, 12)}…[REDACTED]` });
    expect(recorder.events[1]!.detail).toEqual({ secret: 'acctops/test/company/c_1', detail: `echoed ${ECHOED.slice(0, 12)}…[REDACTED]` });
    expectNoCanaries(recorder.events, 'published events');
  });
});

describe('without a client: the SDK package loads, and the client is made from the environment, on the first send', () => {
  const saved = { ...process.env };
  beforeEach(() => {
    process.env.AWS_REGION = LOCAL_REGION;
    process.env.AWS_ACCESS_KEY_ID = localCredentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = localCredentials.secretAccessKey;
    process.env.AWS_ENDPOINT_URL_SQS = recorder.endpoint;
    process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = recorder.endpoint;
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  it('SqsRefreshQueue, SqsExportQueue and SqsRotationCheckQueue send through a client of their own', async () => {
    await new SqsRefreshQueue({ queueUrl: recorder.queueUrl('refresh') }).enqueue(requests(3));
    const job: QueuedJob = {
      type: 'export',
      companyId: randomUUID(),
      period: '2026-10',
      formats: ['csv'],
      source: { kind: 'apiKey' },
      trigger: { kind: 'monthly', runId: 'run-1' },
    };
    await new SqsExportQueue({ queueUrl: recorder.queueUrl('exports.fifo') }).enqueue([job]);
    const check: QueuedCheck = { companyId: 'c_2', secretId: 'arn:secret', name: 'acctops/dev/company/c_2/api-key', reason: 'due' };
    await new SqsRotationCheckQueue({ queueUrl: recorder.queueUrl('rotation-checks') }).enqueue([check]);
    expect(recorder.messages.map((m) => m.body)).toEqual(
      expect.arrayContaining([expect.stringContaining(job.companyId), JSON.stringify(check)]),
    );
    expect(recorder.messages).toHaveLength(5);
  });

  it('EventBridgePublisher publishes through a client of its own, and not at all for no events', async () => {
    const before = recorder.calls['AWSEvents.PutEvents'] ?? 0;
    const publisher = new EventBridgePublisher({ eventBusName: 'bus-2', source: 'acctops.keys' });
    await publisher.publish([]);
    expect(recorder.calls['AWSEvents.PutEvents'] ?? 0).toBe(before);
    await publisher.publish([{ type: 'KeyRotationFinding', time: 0, detail: { companyId: 'c_3' } }]);
    expect(recorder.events).toEqual([
      { eventBusName: 'bus-2', source: 'acctops.keys', detailType: 'KeyRotationFinding', detail: { companyId: 'c_3' } },
    ]);
  });
});
