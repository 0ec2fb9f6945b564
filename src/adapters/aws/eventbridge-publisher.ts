import type { EventBridgeClient, PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { EventPublishError, type DomainEvent, type EventPublisher } from '../../core/ports/events';
import { redactValues } from '../../core/shared/redact';
import { sdkOnFirstUse } from './sdk-on-first-use';

const eventBridge = sdkOnFirstUse(() => import('@aws-sdk/client-eventbridge'));

/** PutEvents takes at most 10 entries per call. */
const MAX_ENTRIES = 10;

export interface EventBridgePublisherOptions {
  /**
   * @default a client from the environment (region, credentials, AWS_ENDPOINT_URL_EVENTBRIDGE),
   * created on the first publish: the SDK package loads only then (src/adapters/aws/sdk-on-first-use.ts)
   */
  client?: EventBridgeClient;
  eventBusName: string;
  /** The events' `source`, e.g. `acctops.tokens`. */
  source: string;
}

/**
 * The EventPublisher port on an EventBridge bus. An entry the bus refuses makes the whole call an
 * EventPublishError that names the refusal codes; entries already accepted stay published, so a
 * caller that repeats the call may publish some events twice (consumers match on detail fields).
 */
export class EventBridgePublisher implements EventPublisher {
  private client: EventBridgeClient | undefined;

  constructor(private readonly options: EventBridgePublisherOptions) {
    this.client = options.client;
  }

  async publish(events: readonly DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    const sdk = await eventBridge();
    const client = (this.client ??= new sdk.EventBridgeClient({}));
    const codes = new Set<string>();
    let failed = 0;
    for (let i = 0; i < events.length; i += MAX_ENTRIES) {
      const entries: PutEventsRequestEntry[] = events.slice(i, i + MAX_ENTRIES).map((event) => ({
        EventBusName: this.options.eventBusName,
        Source: this.options.source,
        DetailType: event.type,
        Time: new Date(event.time),
        // The last line before the bus: a detail is built from ids and error descriptions, but some
        // of those come from outside (the service's code and request id), and the bus's consumers
        // and its archive are beyond our redacting logger. Values only: field names are the contract.
        Detail: JSON.stringify(redactValues(event.detail)),
      }));
      let out;
      try {
        out = await client.send(new sdk.PutEventsCommand({ Entries: entries }));
      } catch (error) {
        throw new EventPublishError(`PutEvents to ${this.options.eventBusName} failed`, {
          failed: events.length - i + failed,
          cause: error,
        });
      }
      if ((out.FailedEntryCount ?? 0) > 0) {
        failed += out.FailedEntryCount ?? 0;
        for (const entry of out.Entries ?? []) if (entry.ErrorCode) codes.add(entry.ErrorCode);
      }
    }
    if (failed > 0) {
      throw new EventPublishError(
        `${failed} of ${events.length} events refused by ${this.options.eventBusName} (${[...codes].join(', ') || 'no code'})`,
        {
          failed,
        },
      );
    }
  }
}
