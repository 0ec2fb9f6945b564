import type { SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import type { QueuedCheck, RotationCheckQueue } from '../../core/api-keys';
import { mapWithConcurrency } from '../../core/shared/concurrency';
import { EnqueueError } from './sqs-refresh-queue';
import { sdkOnFirstUse } from './sdk-on-first-use';

const sqs = sdkOnFirstUse(() => import('@aws-sdk/client-sqs'));

const MAX_BATCH = 10;

/** The rotation sweep's queue on SQS: one message per due company, ten to a SendMessageBatch call. */
export class SqsRotationCheckQueue implements RotationCheckQueue {
  private client: SQSClient | undefined;

  constructor(private readonly options: { client?: SQSClient; queueUrl: string; concurrency?: number }) {
    this.client = options.client;
  }

  async enqueue(checks: QueuedCheck[]): Promise<void> {
    const batches: SendMessageBatchRequestEntry[][] = [];
    for (let i = 0; i < checks.length; i += MAX_BATCH) {
      batches.push(checks.slice(i, i + MAX_BATCH).map((check, j) => ({ Id: String(j), MessageBody: JSON.stringify(check) })));
    }
    await mapWithConcurrency(batches, this.options.concurrency ?? 10, (entries) => this.send(entries));
  }

  private async send(entries: SendMessageBatchRequestEntry[]): Promise<void> {
    const sdk = await sqs();
    const client = (this.client ??= new sdk.SQSClient({}));
    let pending = entries;
    for (let attempt = 0; ; attempt++) {
      const out = await client.send(new sdk.SendMessageBatchCommand({ QueueUrl: this.options.queueUrl, Entries: pending }));
      const failed = out.Failed ?? [];
      if (failed.length === 0) return;
      if (attempt >= 2 || failed.some((f) => f.SenderFault)) {
        const codes = [...new Set(failed.map((f) => f.Code ?? 'unknown'))].join(', ');
        throw new EnqueueError(`${failed.length} rotation checks not enqueued (${codes})`, failed.length);
      }
      const ids = new Set(failed.map((f) => f.Id));
      pending = pending.filter((entry) => ids.has(entry.Id));
    }
  }
}
