import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback';

/**
 * A local peer for the two AWS calls the token functions make that have no emulator here: SQS
 * SendMessageBatch (awsJson1.0) and EventBridge PutEvents (awsJson1.1). It answers as AWS does
 * (SQS's MD5 of each body included, which the SDK checks) and records what it was sent, so that
 * handler tests run the real SDK clients against it through `AWS_ENDPOINT_URL_SQS` and
 * `AWS_ENDPOINT_URL_EVENTBRIDGE`.
 */

export interface RecordedMessage {
  queueUrl: string;
  body: string;
  /** FIFO queues only. */
  groupId?: string;
  deduplicationId?: string;
}

export interface RecordedEvent {
  eventBusName: string | undefined;
  source: string | undefined;
  detailType: string | undefined;
  detail: unknown;
}

export interface AwsRecorder {
  endpoint: string;
  messages: RecordedMessage[];
  events: RecordedEvent[];
  /** Calls per `X-Amz-Target`. */
  calls: Record<string, number>;
  /**
   * The next `count` entries sent (SQS messages or EventBridge events) are refused, as AWS refuses
   * single entries of a batch: SQS with `InternalError` (or a sender fault), EventBridge with
   * `InternalFailure`. Refused entries are not recorded.
   */
  refuseNext(count: number, options?: { senderFault?: boolean }): void;
  /** A queue URL on this peer. */
  queueUrl(name: string): string;
  stop(): Promise<void>;
}

interface SendMessageBatchInput {
  QueueUrl: string;
  Entries: { Id: string; MessageBody: string; MessageGroupId?: string; MessageDeduplicationId?: string }[];
}

interface PutEventsInput {
  Entries: { EventBusName?: string; Source?: string; DetailType?: string; Detail?: string }[];
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, status: number, contentType: string, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': randomUUID() });
  res.end(text);
}

export async function startAwsRecorder(): Promise<AwsRecorder> {
  const messages: RecordedMessage[] = [];
  const events: RecordedEvent[] = [];
  const calls: Record<string, number> = {};
  let refusals = { count: 0, senderFault: false };
  const refuse = () => refusals.count > 0 && refusals.count-- > 0;
  const server = createServer((req, res) => {
    void (async () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      calls[target] = (calls[target] ?? 0) + 1;
      const input = JSON.parse((await readBody(req)) || '{}') as unknown;
      if (target === 'AmazonSQS.SendMessageBatch') {
        const { QueueUrl, Entries } = input as SendMessageBatchInput;
        const refused = Entries.filter(refuse);
        const accepted = Entries.filter((entry) => !refused.includes(entry));
        for (const entry of accepted) {
          messages.push({
            queueUrl: QueueUrl,
            body: entry.MessageBody,
            ...(entry.MessageGroupId === undefined ? {} : { groupId: entry.MessageGroupId, deduplicationId: entry.MessageDeduplicationId }),
          });
        }
        reply(res, 200, 'application/x-amz-json-1.0', {
          Successful: accepted.map((entry) => ({
            Id: entry.Id,
            MessageId: randomUUID(),
            MD5OfMessageBody: createHash('md5').update(entry.MessageBody).digest('hex'),
          })),
          Failed: refused.map((entry) => ({
            Id: entry.Id,
            SenderFault: refusals.senderFault,
            Code: refusals.senderFault ? 'InvalidParameterValue' : 'InternalError',
          })),
        });
        return;
      }
      if (target === 'AWSEvents.PutEvents') {
        const { Entries } = input as PutEventsInput;
        const results = Entries.map((entry) => {
          if (refuse()) return { ErrorCode: 'InternalFailure', ErrorMessage: 'refused by the recorder' };
          events.push({
            eventBusName: entry.EventBusName,
            source: entry.Source,
            detailType: entry.DetailType,
            detail: entry.Detail === undefined ? undefined : JSON.parse(entry.Detail),
          });
          return { EventId: randomUUID() };
        });
        const failed = results.filter((r) => 'ErrorCode' in r).length;
        reply(res, 200, 'application/x-amz-json-1.1', { FailedEntryCount: failed, Entries: results });
        return;
      }
      reply(res, 400, 'application/x-amz-json-1.1', { __type: 'UnknownOperationException', message: `not recorded: ${target}` });
    })().catch((error: unknown) => {
      res.destroy(error instanceof Error ? error : undefined);
    });
  });
  const endpoint = await listenOnLoopback(server);
  return {
    endpoint,
    messages,
    events,
    calls,
    refuseNext: (count, options = {}) => {
      refusals = { count, senderFault: options.senderFault ?? false };
    },
    queueUrl: (name) => `${endpoint}/123456789012/${name}`,
    stop: () => closeServer(server),
  };
}
