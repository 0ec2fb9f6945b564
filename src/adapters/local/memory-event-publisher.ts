import type { DomainEvent, EventPublisher } from '../../core/ports/events';

/** Keeps published events in memory: for tests and the local mode, which has no event bus. */
export class MemoryEventPublisher implements EventPublisher {
  readonly events: DomainEvent[] = [];

  publish(events: readonly DomainEvent[]): Promise<void> {
    // Copies, as a real bus would serialise them: a later change by the caller cannot rewrite history.
    this.events.push(...events.map((event) => structuredClone(event)));
    return Promise.resolve();
  }

  /** Events of one `type`. */
  ofType(type: string): DomainEvent[] {
    return this.events.filter((event) => event.type === type);
  }
}
