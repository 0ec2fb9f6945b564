import type { ExportSource } from './export-jobs';

/**
 * The ledger of monthly export runs (docs/exports.md, "The pipeline"): which companies a
 * run expects, through which source, and how each ended; which users' companies are still being
 * discovered. It makes the run's summary exact (MonthlyExportFinished counts entries, not
 * messages), deduplicates companies reachable through several sources, and lets the overdue check
 * name the companies without a complete export. DynamoDB in AWS, memory in tests.
 *
 * Every operation is idempotent, because every caller is an SQS consumer that may run twice.
 */

export interface MonthlyRun {
  runId: string;
  /** `YYYY-MM`: the month exported. */
  period: string;
  timeZone: string;
  /** The schedule's time (ISO), as EventBridge Scheduler sent it. */
  scheduledAt: string;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms of the first MonthlyExportFinished, once published. */
  summarizedAt?: number;
  /**
   * Epoch ms at which a planner had entered every company and discovery of the run. Until then
   * the entries settled so far are not the run: no summary is published from them.
   */
  plannedAt?: number;
  /** Epoch ms of the MonthlyExportStarted a planner recorded publishing; a repeat does not publish it again. */
  announcedAt?: number;
}

/**
 * `created`: this call added the entry: enqueue its job. `mine`: the entry was there, from the same
 * source and still open (a repeated call after a crash): enqueue again (the queue deduplicates).
 * `taken`: another source has it, or it is settled: do nothing.
 */
export type ExpectResult = 'created' | 'mine' | 'taken';

export type CompanyOutcome = 'completed' | 'failed';
export type DiscoveryOutcome = 'done' | 'failed';

export interface RunTally {
  /** Companies of the run, settled or not. */
  expected: number;
  completed: number;
  failed: number;
  /** Expected and not yet settled. */
  openCompanies: string[];
  failedCompanies: string[];
  pendingDiscoveries: number;
  failedDiscoveries: number;
  /** External ids of the users counted in `pendingDiscoveries` and `failedDiscoveries` (ids, never tokens). */
  pendingUsers: string[];
  failedUsers: string[];
}

export interface RunLedger {
  /**
   * Creates the run and makes it the period's latest. On a repeat (`created: false`) the stored
   * run is returned unchanged.
   */
  startRun(run: Omit<MonthlyRun, 'summarizedAt' | 'announcedAt' | 'plannedAt'>): Promise<{ run: MonthlyRun; created: boolean }>;
  getRun(runId: string): Promise<MonthlyRun | undefined>;
  /** The run most recently started for `period`. */
  latestRun(period: string): Promise<MonthlyRun | undefined>;
  expectCompany(runId: string, companyId: string, source: ExportSource): Promise<ExpectResult>;
  /**
   * `expectCompany` for a page of companies (the planner's): the same results in order, with the
   * run's open counter moved once for the page instead of once per company (docs/fleet-exports.md).
   */
  expectCompanies?(runId: string, companyIds: readonly string[], source: ExportSource): Promise<ExpectResult[]>;
  expectDiscovery(runId: string, externalId: string): Promise<ExpectResult>;
  /**
   * Records how a company ended (a later success replaces a failure, e.g. after a redrive).
   * `mayBeFinished` is a cheap hint that nothing may be open any more: confirm with `tally`.
   */
  settleCompany(runId: string, companyId: string, outcome: CompanyOutcome): Promise<{ mayBeFinished: boolean }>;
  /**
   * Records how a discovery ended. A later `done` replaces `failed` (a redriven or re-sent discovery
   * job), as for companies: the failure is what the overdue check counts until then.
   */
  settleDiscovery(runId: string, externalId: string, outcome: DiscoveryOutcome): Promise<{ mayBeFinished: boolean }>;
  /** Exact counts from the entries (a strongly consistent read). */
  tally(runId: string): Promise<RunTally>;
  /** Records that the summary was published; false when it already was. */
  markSummarized(runId: string, at: number): Promise<boolean>;
  /** Records that MonthlyExportStarted was published; false when it already was. */
  markAnnounced(runId: string, at: number): Promise<boolean>;
  /** Records that the run's plan is complete (every entry made); false when it already was. */
  markPlanned(runId: string, at: number): Promise<boolean>;
}

export function sameSource(a: ExportSource, b: ExportSource): boolean {
  return a.kind === b.kind && (a.kind === 'apiKey' || (b.kind === 'user' && a.externalId === b.externalId));
}
