import { ALARMED_METRICS } from '../../../contract/metrics';
import * as z from 'zod';
import type { Clock } from '../shared/clock';
import { parseWith } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { Metrics } from '../shared/metrics';
import { refreshRequestOf, type RefreshQueue } from './refresh-queue';
import { MAX_PAGE_SIZE, type TokenStore } from './token-store';
import { lazySchema } from '../shared/lazy-schema';

export interface PlanRefreshDeps {
  /** Only the due index: the planner never reads a record, so it never sees a token. */
  store: Pick<TokenStore, 'queryDue'>;
  queue: RefreshQueue;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

const optionsSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    marginMs: z.int().min(0),
    pageSize: z.int().min(1).max(MAX_PAGE_SIZE).default(MAX_PAGE_SIZE),
    /** No page is started after this instant (epoch ms): the invocation's time budget. */
    deadline: z.int().min(0).optional(),
  }),
);
export type PlanRefreshOptions = z.input<typeof optionsSchema>;

export interface PlanReport {
  /** Users enqueued for a refresh. */
  enqueued: number;
  pages: number;
  /** False when the deadline stopped the walk; the next run continues with the most urgent. */
  complete: boolean;
  /** Enqueued users whose deadline had already passed: the refresh is late. */
  overdue: number;
  /** The instant the due query was evaluated at (epoch ms). */
  plannedAt: number;
}

/**
 * The planner: walks the due index page by page, most urgent first, and enqueues each page as it
 * comes, so that memory stays flat at 100,000 users and a walk cut short by the deadline has
 * already enqueued the tokens closest to expiry. One `now` for the whole walk keeps the query
 * consistent across pages.
 */
export async function planTokenRefresh(deps: PlanRefreshDeps, options: PlanRefreshOptions): Promise<PlanReport> {
  const { marginMs, pageSize, deadline } = parseWith(optionsSchema, options, 'plan options');
  const plannedAt = deps.clock.now();
  const report: PlanReport = { enqueued: 0, pages: 0, complete: false, overdue: 0, plannedAt };
  let cursor: string | null = null;
  do {
    if (deadline !== undefined && deps.clock.now() >= deadline) {
      deps.logger.warn('token refresh planning stopped at its deadline', { ...report });
      break;
    }
    const page = await deps.store.queryDue({ now: plannedAt, marginMs, limit: pageSize, cursor });
    if (page.items.length > 0) await deps.queue.enqueue(page.items.map(refreshRequestOf));
    report.pages++;
    report.enqueued += page.items.length;
    report.overdue += page.items.filter((due) => due.dueAt <= plannedAt).length;
    cursor = page.nextCursor;
    if (cursor === null) report.complete = true;
  } while (cursor !== null);

  deps.metrics.add('TokensPlanned', report.enqueued);
  deps.metrics.add(ALARMED_METRICS.tokensOverdue.name, report.overdue);
  if (!report.complete) deps.metrics.add('TokenPlanIncomplete', 1);
  deps.logger.info('token refresh planned', { ...report });
  return report;
}
