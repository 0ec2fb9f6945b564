import * as z from 'zod';
import { parseJsonWith, parseWith } from '../shared/errors';
import type { DueToken } from './token-store';
import { lazySchema } from '../shared/lazy-schema';

/**
 * Between the planner and the workers: one message per due user. SQS in AWS, memory locally.
 * Delivery is at least once and unordered; duplicates are harmless because the worker takes the
 * user's lease and re-checks `isDue` on the record it read under the lease.
 */
export interface RefreshQueue {
  /** Enqueues every request or throws; a retry may enqueue some twice, which is harmless. */
  enqueue(requests: readonly RefreshRequest[]): Promise<void>;
}

export const refreshRequestSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    // Not folded: the planner sends the store's key as the due index holds it, which finds the
    // record whatever its case (storedKeySpellings), a mixed-case one of the older code included.
    externalId: z.guid(),
    /** The record's refresh deadline when planned (epoch ms): for logs and lag metrics only. */
    dueAt: z.int().min(0),
  }),
);
export type RefreshRequest = z.output<typeof refreshRequestSchema>;

export function refreshRequestOf(due: DueToken): RefreshRequest {
  return { externalId: due.externalId, dueAt: due.dueAt };
}

/** The wire form of a message body. */
export function encodeRefreshRequest(request: RefreshRequest): string {
  return JSON.stringify(parseWith(refreshRequestSchema, request, 'refresh request'));
}

/** Parses a message body; a ValidationError names the field (`(root)` for text that is not JSON). */
export function decodeRefreshRequest(body: string, source = 'refresh request'): RefreshRequest {
  return parseJsonWith(refreshRequestSchema, body, source);
}
