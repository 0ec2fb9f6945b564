import { randomUUID } from 'node:crypto';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { EventBridgePublisher } from '../../../src/adapters/aws/eventbridge-publisher';
import { EnqueueError, SqsRefreshQueue } from '../../../src/adapters/aws/sqs-refresh-queue';
import { SqsExportQueue } from '../../../src/adapters/aws/sqs-export-queue';
import { SqsRotationCheckQueue } from '../../../src/adapters/aws/sqs-rotation-check-queue';
import type { QueuedCheck } from '../../../src/core/api-keys';
import type { QueuedJob } from '../../../src/core/exports/pipeline/export-jobs';
import { EventPublishError } from '../../../src/core/ports/events';
import { decodeRefreshRequest } from '../../../src/core/tokens/refresh-queue';
import { LOCAL_REGION, localClientConfig, localCredentials } from '../../helpers/aws-credentials';
import { startAwsRecorder, type AwsRecorder } from '../../helpers/aws-recorder';

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
