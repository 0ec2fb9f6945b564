import type { Clock } from '../../src/core/shared/clock';
import type { ClaimResult, ReplayGuard } from '../../src/core/exports/pipeline/webhook';

/** Webhook event ids in memory (tests, a local webhook): a lease, then an acceptance, each until its expiry. */
export class MemoryReplayGuard implements ReplayGuard {
  private readonly claims = new Map<string, { until: number; confirmed: boolean }>();

  constructor(private readonly clock: Clock) {}

  claim(eventId: string, leaseUntil: number): Promise<ClaimResult> {
    const existing = this.claims.get(eventId);
    if (existing !== undefined && existing.until > this.clock.now()) return Promise.resolve(existing.confirmed ? 'accepted' : 'in_flight');
    this.claims.set(eventId, { until: leaseUntil, confirmed: false });
    return Promise.resolve('claimed');
  }

  confirm(eventId: string, expiresAt: number): Promise<void> {
    this.claims.set(eventId, { until: expiresAt, confirmed: true });
    return Promise.resolve();
  }

  release(eventId: string): Promise<void> {
    this.claims.delete(eventId);
    return Promise.resolve();
  }
}
