import type { RefreshQueue, RefreshRequest } from '../../core/tokens/refresh-queue';

/**
 * The refresh queue in memory: what the planner enqueued, for the worker to take in batches. For
 * tests and the local mode, where one process plans and refreshes.
 */
export class MemoryRefreshQueue implements RefreshQueue {
  private readonly pending: RefreshRequest[] = [];

  enqueue(requests: readonly RefreshRequest[]): Promise<void> {
    this.pending.push(...requests.map((request) => ({ ...request })));
    return Promise.resolve();
  }

  /** Removes and returns up to `size` requests, oldest first. */
  take(size: number): RefreshRequest[] {
    return this.pending.splice(0, size);
  }

  get size(): number {
    return this.pending.length;
  }
}
