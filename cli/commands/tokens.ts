import { Command } from 'commander';
import { MemoryRefreshQueue } from '../../src/adapters/local/memory-refresh-queue';
import { noMetrics } from '../../src/core/shared/metrics';
import { planTokenRefresh } from '../../src/core/tokens/plan-refresh';
import type { RefreshOutcome, RefreshResult } from '../../src/core/tokens/token-lifecycle';
import { guid } from '../args';
import { UsageError } from '../errors';
import { counts } from '../format';
import type { LocalWorld } from '../local/local-world';
import type { Session } from '../session';
import type { CommandHost } from './host';
import type { Output } from '../output';
import { REFRESH_MARGIN_MS } from './users';

export interface RefreshReport {
  /** `local`: refreshed here, now; `enqueued`: handed to the deployed workers. */
  mode: 'local' | 'enqueued';
  /** Users found due (local), or enqueued by the deployed planner. */
  planned: number;
  outcomes: RefreshOutcome[];
  counts: Partial<Record<RefreshResult, number>>;
}

/** Results that need someone: a refresh deferred or a user out of the schedule. */
const TROUBLE: readonly RefreshResult[] = ['failed', 'needs_attention'];

/** One refresh cycle of the local mode: the planner over the due index, then the worker over what it enqueued. */
export async function refreshDueLocal(world: LocalWorld): Promise<RefreshReport> {
  const queue = new MemoryRefreshQueue();
  const plan = await planTokenRefresh({ store: world.tokens, queue, clock: world.clock, logger: world.logger, metrics: noMetrics }, { marginMs: REFRESH_MARGIN_MS });
  const ids = queue.take(queue.size).map((r) => r.externalId);
  const outcomes = await world.lifecycle().refreshBatch(ids);
  return { mode: 'local', planned: plan.enqueued, outcomes, counts: counts(outcomes.map((o) => o.result)) };
}

export function tokensCommand(host: CommandHost): Command {
  const tokens = new Command('tokens').description('User token refresh, as the schedule runs it.');

  tokens
    .command('refresh')
    .description('Refresh the due users now (--all) or one user (--user), with the same single-flight rules as the schedule.')
    .option('--all', 'every user whose token is due (access token expiring within 15 minutes, or 24 h since the last refresh)')
    .option('--user <externalId>', 'only this user (refreshed if due, else reported not_due)', guid)
    .action(
      host.run(async (session, opts: { all?: boolean; user?: string }) => {
        if ((opts.all === true) === (opts.user !== undefined)) throw new UsageError('give exactly one of --all and --user <externalId>', 'run `acctops tokens refresh --help`');
        const report = await refresh(session, host, opts);
        if (report.outcomes.some((o) => TROUBLE.includes(o.result))) session.partial();
        session.out.result(report, () => renderRefresh(session.out, report));
      }),
    );
  return tokens;
}

async function refresh(session: Session, host: CommandHost, opts: { all?: boolean; user?: string }): Promise<RefreshReport> {
  if (session.mode === 'aws') {
    const aws = await host.aws(session);
    return opts.user !== undefined ? aws.refreshUser(opts.user) : aws.refreshDue();
  }
  return session.local(async (world) => {
    if (opts.user === undefined) return refreshDueLocal(world);
    const outcome = await world.lifecycle().refresh(opts.user);
    return { mode: 'local', planned: 1, outcomes: [outcome], counts: { [outcome.result]: 1 } };
  });
}

export function renderRefresh(out: Output, report: RefreshReport): void {
  if (report.mode === 'enqueued') {
    out.line(`Enqueued ${report.planned} due user(s) for the deployed refresh workers; follow them with \`acctops users list\`.`);
    return;
  }
  out.table(report.outcomes, [
    { header: 'EXTERNAL ID', value: (o) => o.externalId },
    { header: 'RESULT', value: (o) => o.result },
    { header: 'ERROR', value: (o) => o.errorClass },
  ], 'no user was due');
  const summary = Object.entries(report.counts).map(([k, v]) => `${k} ${v}`).join(', ');
  out.line(`${report.outcomes.length} user(s) handled${summary ? `: ${summary}` : ''}.`);
  if (report.outcomes.some((o) => o.result === 'needs_attention')) {
    out.line('Users in needs_attention are out of the schedule: see docs/runbooks.md, "Recover a user".');
  }
}
