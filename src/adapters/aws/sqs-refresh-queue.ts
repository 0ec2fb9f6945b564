import type { SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import { AcctopsError } from '../../core/shared/errors';
import { mapWithConcurrency } from '../../core/shared/concurrency';
import { encodeRefreshRequest, type RefreshQueue, type RefreshRequest } from '../../core/tokens/refresh-queue';
import { sdkOnFirstUse } from './sdk-on-first-use';

const sqs = sdkOnFirstUse(() => import('@aws-sdk/client-sqs'));

/** SendMessageBatch takes at most 10 messages per call. */
const MAX_BATCH = 10;

export interface SqsRefreshQueueOptions {
  /**
   * @default a client from the environment (region, credentials, AWS_ENDPOINT_URL_SQS), created on
   * the first send: the SDK package loads only then (src/adapters/aws/sdk-on-first-use.ts)
   */
  client?: SQSClient;
  queueUrl: string;
  /**
   * SendMessageBatch calls in flight at once: a page of 1,000 due users is 100 calls.
   * @default 10
   */
  concurrency?: number;
  /**
   * Further sends of the entries SQS refused in a batch (throttling, an internal error) before giving up.
   * @default 2
   */
  entryRetries?: number;
}

/** Some messages could not be enqueued. Names the SQS error codes, never a body. */
export class EnqueueError extends AcctopsError {
  override readonly name: string = 'EnqueueError';
  readonly failed: number;

  constructor(message: string, failed: number, cause?: unknown) {
    super(message, { code: 'enqueue_failed', cause });
    this.failed = failed;
  }
}

/** The RefreshQueue port on SQS: one message per user, sent ten to a call. */
export class SqsRefreshQueue implements RefreshQueue {
  private client: SQSClient | undefined;
  private readonly concurrency: number;
  private readonly entryRetries: number;

  constructor(private readonly options: SqsRefreshQueueOptions) {
    this.client = options.client;
    this.concurrency = options.concurrency ?? 10;
    this.entryRetries = options.entryRetries ?? 2;
  }

  async enqueue(requests: readonly RefreshRequest[]): Promise<void> {
    const batches: SendMessageBatchRequestEntry[][] = [];
    for (let i = 0; i < requests.length; i += MAX_BATCH) {
      batches.push(requests.slice(i, i + MAX_BATCH).map((request, j) => ({ Id: String(j), MessageBody: encodeRefreshRequest(request) })));
    }
    await mapWithConcurrency(batches, this.concurrency, (entries) => this.send(entries));
  }

  /** Sends one batch; refused entries are sent again, up to `entryRetries` times. */
  private async send(entries: SendMessageBatchRequestEntry[]): Promise<void> {
    const sdk = await sqs();
    const client = (this.client ??= new sdk.SQSClient({}));
    let pending = entries;
    for (let attempt = 0; ; attempt++) {
      const out = await client.send(new sdk.SendMessageBatchCommand({ QueueUrl: this.options.queueUrl, Entries: pending }));
      const failed = out.Failed ?? [];
      if (failed.length === 0) return;
      // Sender faults (a malformed entry) do not heal by repeating.
      if (attempt >= this.entryRetries || failed.some((f) => f.SenderFault)) {
        const codes = [...new Set(failed.map((f) => f.Code ?? 'unknown'))].join(', ');
        throw new EnqueueError(`${failed.length} refresh requests not enqueued (${codes})`, failed.length);
      }
      const ids = new Set(failed.map((f) => f.Id));
      pending = pending.filter((entry) => ids.has(entry.Id));
    }
  }
}
