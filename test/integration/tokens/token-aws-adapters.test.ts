import { randomUUID } from 'node:crypto';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { EventBridgePublisher } from '../../../src/adapters/aws/eventbridge-publisher';
import { EnqueueError, SqsRefreshQueue } from '../../../src/adapters/aws/sqs-refresh-queue';
import { EventPublishError } from '../../../src/core/ports/events';
import { decodeRefreshRequest } from '../../../src/core/tokens/refresh-queue';
import { localClientConfig } from '../../helpers/aws-credentials';
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
