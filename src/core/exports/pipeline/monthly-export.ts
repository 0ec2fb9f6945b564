import { ALARMED_METRICS } from '../../../../contract/metrics';
import { activeCompanyPages, type CompanyRegistry, type RegistryFinding } from '../../companies/company-registry';
import type { EventPublisher } from '../../ports/events';
import type { Clock } from '../../shared/clock';
import { mapWithConcurrency } from '../../shared/concurrency';
import { foldUuid } from '../../shared/uuid';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics';
import { KEEP_ALIVE_MS, type TokenStore } from '../../tokens/token-store';
import { dueExportPeriod } from './export-deadline';
import { monthlyExportFinished, monthlyExportStarted } from './export-events';
import { monthlyRunId, type DiscoverJob, type ExportJob, type ExportQueue } from './export-jobs';
import { assertCompanyId } from '../formats/layout';
import { periodExported } from '../formats/manifest';
import type { ObjectStore } from '../formats/object-store';
import { assertTimeZone, parsePeriod, previousMonth } from '../formats/period';
import type { MonthlyRun, RunLedger, RunTally } from './run-ledger';
import type { DatasetName, ExportFormat } from '../formats/datasets';

/**
 * `queryDue` with this margin lists every active user: a record's `dueAt` is at most its last
 * refresh plus the 24 h keep-alive, so no active user's deadline lies further ahead than that.
 * The due index is sparse and keys-only: the planner sees active users' ids and never a token.
 */
const EVERY_ACTIVE_USER_MS = 2 * KEEP_ALIVE_MS;
const USER_PAGE = 1000;
/** Ledger writes in flight while planning (DynamoDB conditional puts). */
const PLAN_CONCURRENCY = 16;
/** Failed companies named in the summary event and in log lines; the ledger holds them all. */
const LISTED = 100;

/** How far ahead of the planner's clock a schedule's time may be (clock skew); further is refused. */
export const SCHEDULED_AT_SKEW_MS = 5 * 60_000;

export interface MonthlyExportDeps {
  ledger: RunLedger;
  queue: ExportQueue;
  events: EventPublisher;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

export interface PlanMonthlyExportInput {
  /** The schedule's time (ISO 8601): the month before it, on the wall clock of `timeZone`, is exported. */
  scheduledAt: string;
  /** The scheduler's execution id: a retried invocation plans the same run. */
  executionId: string;
  timeZone: string;
  /**
   * Companies exported with their own API key, read a page at a time; each with its own formats.
   * Removed companies are skipped; an item that fails its schema is skipped and reported.
   */
  registry?: Pick<CompanyRegistry, 'pages'>;
  /** A fixed list of API-key companies, exported with `formats` (tests, the local mode's one-off runs). */
  companies?: readonly string[];
  /** Institution users' token store; each active user's companies are discovered by the workers. */
  users?: Pick<TokenStore, 'queryDue'>;
  formats: readonly ExportFormat[];
  datasets?: readonly DatasetName[];
}

export interface MonthlyPlanReport {
  runId: string;
  period: string;
  /** Export jobs enqueued for API-key companies. */
  companies: number;
  /** Discovery jobs enqueued for users. */
  users: number;
  /** Registry items skipped because they fail their schema, the first 100 (`acctops doctor` lists them too). */
  skipped: RegistryFinding[];
  /** True when this run had been planned before (a retried invocation). */
  repeated: boolean;
}

/**
 * The monthly schedule's planner: the previous month in the schedule's time zone, one export job
 * per API-key company and one discovery job per active institution user, each entered in the run
 * ledger before it is enqueued (so a company reachable through several sources is exported once,
 * and a repeated invocation enqueues only what is still open). Publishes MonthlyExportStarted, once
 * per run unless the invocation fails between publishing it and recording that in the ledger.
 */
export async function planMonthlyExport(deps: MonthlyExportDeps, input: PlanMonthlyExportInput): Promise<MonthlyPlanReport> {
  const { ledger, queue, clock } = deps;
  assertTimeZone(input.timeZone, 'timeZone');
  const scheduled = Date.parse(input.scheduledAt);
  if (Number.isNaN(scheduled))
    throw new ValidationError('monthly export plan', [{ path: 'scheduledAt', message: 'expected an ISO 8601 time' }]);
  // The scheduler invokes at its time or later, so a time ahead of the clock is a hand-made event:
  // it would plan a month that has not ended (2099-01-01 plans 2098-12) and mark it done.
  if (scheduled > clock.now() + SCHEDULED_AT_SKEW_MS) {
    throw new ValidationError('monthly export plan', [
      {
        path: 'scheduledAt',
        message: `is in the future; a re-run names the original schedule's time (at most ${SCHEDULED_AT_SKEW_MS / 60_000} minutes ahead)`,
      },
    ]);
  }
  const period = previousMonth(scheduled, input.timeZone).text;
  const runId = monthlyRunId(period, input.executionId);
  const fixed = [...new Set((input.companies ?? []).map((c) => c.toLowerCase()))];
  fixed.forEach((c, i) => assertCompanyId(c, `companies[${i}]`));
  const logger = deps.logger.child({ runId, period });
  const { run, created } = await ledger.startRun({
    runId,
    period,
    timeZone: input.timeZone,
    scheduledAt: input.scheduledAt,
    startedAt: clock.now(),
  });
  const repeated = !created;
  const trigger = { kind: 'monthly' as const, runId };
  const datasets = input.datasets ? { datasets: [...input.datasets] } : {};
  const selection = { formats: [...input.formats], ...datasets };

  // A page at a time: memory and each burst of ledger writes grow with a page, not with the fleet.
  let companyJobCount = 0;
  const planned: string[] = [];
  const skipped: RegistryFinding[] = [];
  let skippedCount = 0;
  const planCompanies = async (page: { companyId: string; formats: readonly ExportFormat[] }[]) => {
    const source = { kind: 'apiKey' } as const;
    const results = ledger.expectCompanies
      ? await ledger.expectCompanies(
          runId,
          page.map((c) => c.companyId),
          source,
        )
      : await mapWithConcurrency(page, PLAN_CONCURRENCY, (c) => ledger.expectCompany(runId, c.companyId, source));
    const jobs: ExportJob[] = page
      .filter((_, i) => results[i] !== 'taken')
      .map((c) => ({
        type: 'export',
        companyId: c.companyId,
        period,
        formats: [...c.formats],
        ...datasets,
        source: { kind: 'apiKey' },
        trigger,
      }));
    await queue.enqueue(jobs);
    companyJobCount += jobs.length;
    for (const c of page) if (planned.length < LISTED) planned.push(c.companyId);
    return page.length;
  };
  let companyCount = await planCompanies(fixed.map((companyId) => ({ companyId, formats: input.formats })));
  if (input.registry) {
    const seen = new Set(fixed);
    for await (const page of activeCompanyPages(input.registry)) {
      skippedCount += page.skipped.length;
      skipped.push(...page.skipped.slice(0, Math.max(0, LISTED - skipped.length)));
      companyCount += await planCompanies(page.items.filter((c) => !seen.has(c.companyId)));
    }
  }
  if (skippedCount > 0) deps.metrics.add('CompanyRegistryItemsSkipped', skippedCount);

  let users = 0;
  let cursor: string | null = null;
  if (input.users) {
    do {
      const page = await input.users.queryDue({ now: clock.now(), marginMs: EVERY_ACTIVE_USER_MS, limit: USER_PAGE, cursor });
      const ids = page.items.map((u) => foldUuid(u.externalId));
      const results = await mapWithConcurrency(ids, PLAN_CONCURRENCY, (id) => ledger.expectDiscovery(runId, id));
      const jobs: DiscoverJob[] = ids
        .filter((_, i) => results[i] !== 'taken')
        .map((externalId) => ({ type: 'discover', externalId, period, ...selection, trigger }));
      await queue.enqueue(jobs);
      users += jobs.length;
      cursor = page.nextCursor;
    } while (cursor !== null);
  }

  deps.metrics.add('MonthlyExportsPlanned', companyJobCount);
  deps.metrics.add('MonthlyDiscoveriesPlanned', users);
  // Workers settle companies while the planner still enters others, and an invocation that fails
  // part-way is retried minutes later: until this mark, the entries settled so far are not the run.
  if (run.plannedAt === undefined) await ledger.markPlanned(runId, clock.now());
  // Once per run: a repeat (a scheduler retry, a redelivered event) publishes it only when the
  // earlier invocation did not record publishing it (it failed before, or between the two).
  if (run.announcedAt === undefined) {
    const now = clock.now();
    await deps.events.publish([
      monthlyExportStarted(
        { runId, period, timeZone: input.timeZone, scheduledAt: input.scheduledAt, companies: planned, companyCount, users },
        now,
      ),
    ]);
    await ledger.markAnnounced(runId, now);
  }
  logger.info('monthly export planned', { companies: companyJobCount, users, repeated, skippedRegistryItems: skippedCount });
  // A run with nothing to do (no company, no user) is finished now, and so is one whose workers
  // settled everything before the mark above (they saw the run unplanned and left the summary).
  await finishRunIfDone(deps, runId);
  return { runId, period, companies: companyJobCount, users, repeated, skipped };
}

/**
 * Publishes MonthlyExportFinished once nothing of the run is open, from the ledger's exact counts.
 * At least once: two workers settling the last two companies at the same moment may both publish
 * (consumers key on `runId`); the ledger marks the run summarized after publishing. Nothing is
 * published before a planner has marked the run planned (`runPlanned`): the planner tallies again
 * after its mark, so a run its workers finished first is still summarized.
 */
export async function finishRunIfDone(
  deps: Pick<MonthlyExportDeps, 'ledger' | 'events' | 'clock' | 'logger'>,
  runId: string,
): Promise<RunTally | undefined> {
  const { ledger, clock } = deps;
  const run = await ledger.getRun(runId);
  if (!run || run.summarizedAt !== undefined || !runPlanned(run)) return undefined;
  const tally = await ledger.tally(runId);
  if (tally.openCompanies.length > 0 || tally.pendingDiscoveries > 0) return undefined;
  const now = clock.now();
  await deps.events.publish([
    monthlyExportFinished(
      {
        runId,
        period: run.period,
        startedAt: new Date(run.startedAt).toISOString(),
        finishedAt: new Date(now).toISOString(),
        expected: tally.expected,
        completed: tally.completed,
        failed: tally.failed,
        failedDiscoveries: tally.failedDiscoveries,
        failedCompanies: tally.failedCompanies.slice(0, LISTED),
      },
      now,
    ),
  ]);
  await ledger.markSummarized(runId, now);
  deps.logger.info('monthly export finished', {
    runId,
    period: run.period,
    expected: tally.expected,
    completed: tally.completed,
    failed: tally.failed,
  });
  return tally;
}

/**
 * Whether a planner entered everything of the run. A run recorded before `plannedAt` existed was
 * announced only after its whole plan, so its `announcedAt` says the same.
 */
export function runPlanned(run: Pick<MonthlyRun, 'plannedAt' | 'announcedAt'>): boolean {
  return run.plannedAt !== undefined || run.announcedAt !== undefined;
}

export interface CheckMonthlyExportDeps extends Pick<MonthlyExportDeps, 'ledger' | 'events' | 'clock' | 'logger' | 'metrics'> {
  /** The export bucket: a company is overdue exactly when the period has no manifest. */
  store: Pick<ObjectStore, 'get'>;
}

export interface CheckMonthlyExportInput {
  timeZone: string;
  /**
   * The previous month's exports are due this many hours after midnight on the 1st, local time
   * (the schedule runs at 03:00 by default, so 12 leaves nine hours for the run and its retries).
   */
  dueAfterHours: number;
}

export interface OverdueReport {
  period: string;
  runId: string | null;
  /** False before the deadline: nothing is judged yet. */
  due: boolean;
  /**
   * Companies of the run without a complete export of the period, plus 1 per user whose companies
   * were not discovered (still pending, or failed), plus 1 for a run whose plan never completed,
   * or 1 for a missing run.
   */
  overdue: number;
  overdueCompanies: string[];
  /** External ids of the users counted in `overdue`: their discovery is pending or failed (ids, never tokens). */
  overdueUsers: string[];
  missingRun: boolean;
  /**
   * The run's planner never finished entering it (every invocation the scheduler made failed
   * part-way): companies and users it did not reach are in no entry, so the run counts 1 more.
   */
  unplannedRun: boolean;
}

/**
 * The overdue check (hourly): after the deadline, every company of the previous month's run must
 * have a manifest for the period. Counts the ones that do not (open or failed) as
 * `MonthlyExportsOverdue` (alarmed at 1), plus each user whose discovery is pending or failed, since
 * that user's companies were never entered in the run and no manifest can speak for them; a run
 * that never started counts 1, and so does one whose plan never completed (what its planner did
 * not reach is in no entry, so no company of it is counted otherwise). A later successful
 * on-demand export of a company clears it, because the manifest is what counts; a user, a later
 * successful discovery in the run. When it finds the run settled but not summarized (a worker died
 * between its two writes), it publishes the summary.
 */
export async function checkMonthlyExport(deps: CheckMonthlyExportDeps, input: CheckMonthlyExportInput): Promise<OverdueReport> {
  assertTimeZone(input.timeZone, 'timeZone');
  const now = deps.clock.now();
  const period = previousMonth(now, input.timeZone).text;
  const due = dueExportPeriod(now, input.timeZone, input.dueAfterHours).text === period;
  const run = await deps.ledger.latestRun(period);
  const report = (fields: Partial<OverdueReport>): OverdueReport => {
    const out: OverdueReport = {
      period,
      runId: run?.runId ?? null,
      due,
      overdue: 0,
      overdueCompanies: [],
      overdueUsers: [],
      missingRun: false,
      unplannedRun: false,
      ...fields,
    };
    deps.metrics.add(ALARMED_METRICS.monthlyExportsOverdue.name, out.overdue);
    if (out.overdue > 0) {
      deps.logger.error('monthly exports overdue', {
        ...out,
        overdueCompanies: out.overdueCompanies.slice(0, LISTED),
        overdueUsers: out.overdueUsers.slice(0, LISTED),
      });
    }
    return out;
  };
  if (!due) return report({});
  if (!run) return report({ overdue: 1, missingRun: true });

  const tally = (await finishRunIfDone(deps, run.runId)) ?? (await deps.ledger.tally(run.runId));
  const candidates = [...tally.openCompanies, ...tally.failedCompanies];
  const parsed = parsePeriod(period);
  const complete = await mapWithConcurrency(candidates, 8, (company) => periodExported(deps.store, company, parsed, input.timeZone));
  const overdueCompanies = candidates.filter((_, i) => !complete[i]);
  const overdueUsers = [...tally.pendingUsers, ...tally.failedUsers];
  const unplannedRun = !runPlanned(run);
  return report({
    overdue: overdueCompanies.length + overdueUsers.length + (unplannedRun ? 1 : 0),
    overdueCompanies,
    overdueUsers,
    unplannedRun,
  });
}
