import {
  deduplicationIdOf,
  encodeJob,
  messageGroupOf,
  type ExportQueue,
  type QueuedJob,
} from '../../src/core/exports/pipeline/export-jobs';

export interface QueuedExportMessage {
  body: string;
  groupId: string;
  deduplicationId: string;
}

/**
 * The export queue in memory, for tests and the local mode: keeps what was sent, with the FIFO
 * group and deduplication id SQS would get, and (like SQS FIFO within its window) drops a message
 * whose deduplication id it has already accepted.
 */
export class MemoryExportQueue implements ExportQueue {
  readonly messages: QueuedExportMessage[] = [];
  private readonly seen = new Set<string>();
  /** Set to make the next enqueue fail (a queue outage). */
  failNext?: Error;

  enqueue(jobs: readonly QueuedJob[]): Promise<void> {
    if (this.failNext) {
      const error = this.failNext;
      this.failNext = undefined;
      return Promise.reject(error);
    }
    for (const job of jobs) {
      const message = { body: encodeJob(job), groupId: messageGroupOf(job), deduplicationId: deduplicationIdOf(job) };
      if (this.seen.has(message.deduplicationId)) continue;
      this.seen.add(message.deduplicationId);
      this.messages.push(message);
    }
    return Promise.resolve();
  }

  /** Takes every message out, oldest first. */
  drain(): QueuedExportMessage[] {
    return this.messages.splice(0, this.messages.length);
  }
}
