import type { SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import { deduplicationIdOf, encodeJob, messageGroupOf, type ExportQueue, type QueuedJob } from '../../core/exports/pipeline/export-jobs';
import { ExportEnqueueError } from '../../core/exports/pipeline/pipeline-errors';
import { mapWithConcurrency } from '../../core/shared/concurrency';
import { sdkOnFirstUse } from './sdk-on-first-use';

const sqs = sdkOnFirstUse(() => import('@aws-sdk/client-sqs'));

/** SendMessageBatch takes at most 10 messages per call. */
const MAX_BATCH = 10;

export interface SqsExportQueueOptions {
  /**
   * @default a client from the environment (region, credentials, AWS_ENDPOINT_URL_SQS), created on
   * the first send: the SDK package loads only then (src/adapters/aws/sdk-on-first-use.ts)
   */
  client?: SQSClient;
  /** A FIFO queue (`….fifo`). */
  queueUrl: string;
  /** @default 10 */
  concurrency?: number;
  /**
   * Further sends of the entries SQS refused in a batch before giving up.
   * @default 2
   */
  entryRetries?: number;
}

/**
 * The ExportQueue on an SQS FIFO queue: every job with its message group (`<company>#<period>`,
 * so one period is never exported twice at once) and an explicit deduplication id (a job sent
 * twice within five minutes, by a retried planner or webhook, is delivered once).
 */
export class SqsExportQueue implements ExportQueue {
  private client: SQSClient | undefined;

  constructor(private readonly options: SqsExportQueueOptions) {
    this.client = options.client;
  }

  async enqueue(jobs: readonly QueuedJob[]): Promise<void> {
    const batches: SendMessageBatchRequestEntry[][] = [];
    for (let i = 0; i < jobs.length; i += MAX_BATCH) {
      batches.push(
        jobs.slice(i, i + MAX_BATCH).map((job, j) => ({
          Id: String(j),
          MessageBody: encodeJob(job),
          MessageGroupId: messageGroupOf(job),
          MessageDeduplicationId: deduplicationIdOf(job),
        })),
      );
    }
    await mapWithConcurrency(batches, this.options.concurrency ?? 10, (entries) => this.send(entries));
  }

  private async send(entries: SendMessageBatchRequestEntry[]): Promise<void> {
    const sdk = await sqs();
    const client = (this.client ??= new sdk.SQSClient({}));
    const retries = this.options.entryRetries ?? 2;
    let pending = entries;
    for (let attempt = 0; ; attempt++) {
      let out;
      try {
        out = await client.send(new sdk.SendMessageBatchCommand({ QueueUrl: this.options.queueUrl, Entries: pending }));
      } catch (error) {
        throw new ExportEnqueueError(`${pending.length} export jobs not enqueued`, pending.length, error);
      }
      const failed = out.Failed ?? [];
      if (failed.length === 0) return;
      // Sender faults (a malformed entry) do not heal by repeating; a resend keeps its deduplication id.
      if (attempt >= retries || failed.some((f) => f.SenderFault)) {
        const codes = [...new Set(failed.map((f) => f.Code ?? 'unknown'))].join(', ');
        throw new ExportEnqueueError(`${failed.length} export jobs not enqueued (${codes})`, failed.length);
      }
      const ids = new Set(failed.map((f) => f.Id));
      pending = pending.filter((entry) => ids.has(entry.Id));
    }
  }
}
