import { ValidationError } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { decodeRefreshRequest } from './refresh-queue';
import type { RefreshOutcome, TokenLifecycle } from './token-lifecycle';

/** A message taken from the refresh queue: its id (for partial batch failures) and body. */
export interface QueuedMessage {
  messageId: string;
  body: string;
}

export interface WorkerReport {
  /** Messages to hand back to the queue: malformed ones (bound for the DLQ) and users to retry. */
  failedMessageIds: string[];
  outcomes: RefreshOutcome[];
  malformed: number;
}

/**
 * The worker's batch: decodes every message, refreshes the users (single flight, capped
 * concurrency), and says which messages failed. A malformed body is a ValidationError logged with
 * the field it names and a failed message, so that it ends in the dead-letter queue after its last
 * delivery instead of blocking or silently vanishing; it changes no record.
 */
export async function refreshQueuedBatch(
  lifecycle: Pick<TokenLifecycle, 'refreshBatch'>,
  messages: readonly QueuedMessage[],
  options: { logger: Logger; deadline?: number },
): Promise<WorkerReport> {
  const failed = new Set<string>();
  const messagesOf = new Map<string, string[]>();
  for (const message of messages) {
    try {
      const { externalId } = decodeRefreshRequest(message.body, `refresh request in message ${message.messageId}`);
      messagesOf.set(externalId, [...(messagesOf.get(externalId) ?? []), message.messageId]);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      options.logger.error('malformed refresh request; left for the dead-letter queue', { messageId: message.messageId, error });
      failed.add(message.messageId);
    }
  }
  const malformed = failed.size;
  const outcomes = await lifecycle.refreshBatch([...messagesOf.keys()], { deadline: options.deadline });
  for (const outcome of outcomes) {
    if (outcome.result === 'failed') for (const id of messagesOf.get(outcome.externalId) ?? []) failed.add(id);
  }
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome.result] = (counts[outcome.result] ?? 0) + 1;
  options.logger.info('refresh batch done', { messages: messages.length, malformed, ...counts });
  return { failedMessageIds: messages.map((m) => m.messageId).filter((id) => failed.has(id)), outcomes, malformed };
}
