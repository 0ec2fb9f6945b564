import { AcctopsError } from '../shared/errors';

/**
 * Domain events for other systems (on-call tooling, a partner's back office): EventBridge in AWS,
 * memory in tests and the local mode. An event's detail is a plain JSON object that must never
 * hold a secret: identifiers and error classes only.
 */
export interface DomainEvent {
  /** The EventBridge `detail-type`, e.g. `TokenRefreshFailed`. */
  type: string;
  /** When it happened (epoch ms, from the Clock port). */
  time: number;
  detail: Readonly<Record<string, unknown>>;
}

export interface EventPublisher {
  /** Publishes every event or throws EventPublishError; events of one call are not ordered. */
  publish(events: readonly DomainEvent[]): Promise<void>;
}

/** Some events were not accepted. Names how many and the destination's error codes, never a detail. */
export class EventPublishError extends AcctopsError {
  override readonly name: string = 'EventPublishError';
  readonly failed: number;

  constructor(message: string, options: { failed: number; cause?: unknown }) {
    super(message, { code: 'event_publish_failed', cause: options.cause });
    this.failed = options.failed;
  }
}
