import { ALARMED_METRICS } from '../../../contract/metrics';
import { MemoryRefreshQueue } from '../../../src/adapters/local/memory-refresh-queue';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { planTokenRefresh } from '../../../src/core/tokens/plan-refresh';
import type { DueToken, TokenStore } from '../../../src/core/tokens/token-store';

const NOW = Date.UTC(2026, 10, 3, 10, 0, 0);
const MINUTE = 60_000;

/** A due index over fixed entries, most urgent first; each query may move the clock (a slow page). */
function dueIndex(entries: DueToken[], onQuery: () => void = () => undefined): Pick<TokenStore, 'queryDue'> & { queries: number } {
  const index = {
    queries: 0,
    queryDue: ({ now, marginMs, limit, cursor }: { now: number; marginMs: number; limit?: number; cursor?: string | null }) => {
      index.queries++;
      onQuery();
      const due = entries.filter((e) => e.dueAt - marginMs <= now).sort((a, b) => a.dueAt - b.dueAt);
      const from = cursor ? Number(cursor) : 0;
      const to = from + (limit ?? 1000);
      return Promise.resolve({ items: due.slice(from, to), nextCursor: to < due.length ? String(to) : null });
    },
  };
  return index;
}

const user = (n: number, dueAt: number): DueToken => ({ externalId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, dueAt });

function harness() {
  const clock = new ManualClock(NOW);
  return { clock, queue: new MemoryRefreshQueue(), logger: new MemoryLogger(), metrics: new MemoryMetrics() };
}

describe('planTokenRefresh', () => {
  it('counts as overdue, in the alarmed metric, a user whose deadline is now or past, not one still inside the margin', async () => {
    const { clock, queue, logger, metrics } = harness();
    const store = dueIndex([user(1, NOW - MINUTE), user(2, NOW), user(3, NOW + 1), user(4, NOW + 14 * MINUTE)]);
    const report = await planTokenRefresh({ store, queue, clock, logger, metrics }, { marginMs: 15 * MINUTE });
    expect(report).toMatchObject({ enqueued: 4, overdue: 2, complete: true });
    expect(metrics.sum(ALARMED_METRICS.tokensOverdue.name)).toBe(2);
  });

  it('starts no page after its deadline: the most urgent are enqueued, the walk says it is incomplete', async () => {
    const { clock, queue, logger, metrics } = harness();
    const entries = Array.from({ length: 10 }, (_, i) => user(i + 1, NOW + i * 1000));
    // Each page takes a minute; the deadline falls after the second.
    const store = dueIndex(entries, () => clock.advance(MINUTE));
    const report = await planTokenRefresh(
      { store, queue, clock, logger, metrics },
      { marginMs: 15 * MINUTE, pageSize: 3, deadline: NOW + 2 * MINUTE },
    );
    expect(store.queries).toBe(2);
    expect(report).toMatchObject({ enqueued: 6, pages: 2, complete: false });
    expect(queue.take(queue.size).map((r) => r.externalId)).toEqual(entries.slice(0, 6).map((e) => e.externalId));
    expect(metrics.sum('TokenPlanIncomplete')).toBe(1);
  });
});
