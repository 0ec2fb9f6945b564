import type { Clock } from '../../core/shared/clock';
import type { ReplayGuard } from '../../core/exports/webhook';

/** Webhook event ids in memory (tests, a local webhook): a claim lives until its expiry. */
export class MemoryReplayGuard implements ReplayGuard {
  private readonly claims = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  claim(eventId: string, expiresAt: number): Promise<boolean> {
    const existing = this.claims.get(eventId);
    if (existing !== undefined && existing > this.clock.now()) return Promise.resolve(false);
    this.claims.set(eventId, expiresAt);
    return Promise.resolve(true);
  }

  release(eventId: string): Promise<void> {
    this.claims.delete(eventId);
    return Promise.resolve();
  }
}
