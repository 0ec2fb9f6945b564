import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import type { DomainEvent } from '../../src/core/ports/events';

/** Events that refuse the next `failures` calls, as EventBridge does when it is unwell. */
export class FlakyEvents extends MemoryEventPublisher {
  failures = 0;
  override publish(events: readonly DomainEvent[]): Promise<void> {
    if (this.failures > 0) {
      this.failures -= 1;
      return Promise.reject(new Error('injected: event bus unavailable'));
    }
    return super.publish(events);
  }
}
