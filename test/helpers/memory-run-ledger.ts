import type { ExportSource } from '../../src/core/exports/pipeline/export-jobs';
import {
  partResultSchema,
  type NewSplit,
  type PartLedger,
  type PartResult,
  type PublishAttempt,
  type SplitRecord,
} from '../../src/core/exports/pipeline/part-ledger';
import { parseWith } from '../../src/core/shared/errors';
import {
  sameSource,
  type CompanyOutcome,
  type DiscoveryOutcome,
  type ExpectResult,
  type MonthlyRun,
  type RunLedger,
  type RunTally,
} from '../../src/core/exports/pipeline/run-ledger';

interface RunState {
  run: MonthlyRun;
  companies: Map<string, { source: ExportSource; state: 'expected' | CompanyOutcome }>;
  discoveries: Map<string, 'pending' | DiscoveryOutcome>;
}

/** The run ledger in memory (tests, the local mode): exact, so `mayBeFinished` is exact too. */
export class MemoryRunLedger implements RunLedger, PartLedger {
  private readonly runs = new Map<string, RunState>();
  private readonly latest = new Map<string, string>();
  private readonly splits = new Map<string, { split: SplitRecord; results: Map<number, string> }>();

  startSplit(split: NewSplit): Promise<{ split: SplitRecord; created: boolean }> {
    const existing = this.splits.get(split.splitId);
    if (existing) return Promise.resolve({ split: copySplit(existing.split), created: false });
    const stored: SplitRecord = { ...split, parts: split.parts.map((p) => ({ ...p })), done: [], publishAttempts: [] };
    this.splits.set(split.splitId, { split: stored, results: new Map() });
    return Promise.resolve({ split: copySplit(stored), created: true });
  }

  getSplit(splitId: string): Promise<SplitRecord | undefined> {
    const state = this.splits.get(splitId);
    return Promise.resolve(state ? copySplit(state.split) : undefined);
  }

  completePart(splitId: string, result: PartResult): Promise<{ done: number; parts: number }> {
    const state = this.splitState(splitId);
    // Stored as the DynamoDB adapter stores it (JSON), so tests see the same round trip.
    state.results.set(result.index, JSON.stringify(result));
    if (!state.split.done.includes(result.index)) state.split.done = [...state.split.done, result.index].sort((a, b) => a - b);
    return Promise.resolve({ done: state.split.done.length, parts: state.split.parts.length });
  }

  partResults(splitId: string): Promise<PartResult[]> {
    const state = this.splitState(splitId);
    return Promise.resolve(
      [...state.results.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, json]) => parseWith(partResultSchema, JSON.parse(json), `split ${splitId} part ${index}`)),
    );
  }

  // Rejected, not thrown, for an unknown split: as the DynamoDB adapter's conditional update.
  recordPublishAttempt(splitId: string, attempt: Omit<PublishAttempt, 'refused'>): Promise<void> {
    return Promise.resolve().then(() => {
      const state = this.splitState(splitId);
      if (!state.split.publishAttempts.some((a) => a.id === attempt.id)) state.split.publishAttempts.push({ ...attempt, refused: false });
    });
  }

  refusePublishAttempt(splitId: string, attemptId: string): Promise<void> {
    return Promise.resolve().then(() => {
      for (const attempt of this.splitState(splitId).split.publishAttempts) if (attempt.id === attemptId) attempt.refused = true;
    });
  }

  markSplitPublished(splitId: string, at: number): Promise<boolean> {
    const state = this.splitState(splitId);
    if (state.split.publishedAt !== undefined) return Promise.resolve(false);
    state.split.publishedAt = at;
    return Promise.resolve(true);
  }

  markSplitReported(splitId: string, at: number): Promise<boolean> {
    const state = this.splitState(splitId);
    if (state.split.reportedAt !== undefined) return Promise.resolve(false);
    state.split.reportedAt = at;
    state.split.publishedAt ??= at;
    return Promise.resolve(true);
  }

  private splitState(splitId: string) {
    const state = this.splits.get(splitId);
    if (!state) throw new Error(`unknown split ${splitId}`);
    return state;
  }

  startRun(run: Omit<MonthlyRun, 'summarizedAt' | 'announcedAt' | 'plannedAt'>): Promise<{ run: MonthlyRun; created: boolean }> {
    const existing = this.runs.get(run.runId);
    if (existing) return Promise.resolve({ run: { ...existing.run }, created: false });
    this.runs.set(run.runId, { run: { ...run }, companies: new Map(), discoveries: new Map() });
    this.latest.set(run.period, run.runId);
    return Promise.resolve({ run: { ...run }, created: true });
  }

  getRun(runId: string): Promise<MonthlyRun | undefined> {
    const state = this.runs.get(runId);
    return Promise.resolve(state ? { ...state.run } : undefined);
  }

  latestRun(period: string): Promise<MonthlyRun | undefined> {
    const runId = this.latest.get(period);
    return this.getRun(runId ?? '');
  }

  expectCompany(runId: string, companyId: string, source: ExportSource): Promise<ExpectResult> {
    const state = this.state(runId);
    const entry = state.companies.get(companyId);
    if (!entry) {
      state.companies.set(companyId, { source, state: 'expected' });
      return Promise.resolve('created');
    }
    return Promise.resolve(entry.state === 'expected' && sameSource(entry.source, source) ? 'mine' : 'taken');
  }

  expectDiscovery(runId: string, externalId: string): Promise<ExpectResult> {
    const state = this.state(runId);
    const entry = state.discoveries.get(externalId);
    if (entry === undefined) {
      state.discoveries.set(externalId, 'pending');
      return Promise.resolve('created');
    }
    return Promise.resolve(entry === 'pending' ? 'mine' : 'taken');
  }

  settleCompany(runId: string, companyId: string, outcome: CompanyOutcome): Promise<{ mayBeFinished: boolean }> {
    const entry = this.state(runId).companies.get(companyId);
    // A late success replaces a failure; nothing replaces a success.
    if (entry && entry.state !== 'completed') entry.state = outcome;
    return Promise.resolve({ mayBeFinished: this.isFinished(runId) });
  }

  settleDiscovery(runId: string, externalId: string, outcome: DiscoveryOutcome): Promise<{ mayBeFinished: boolean }> {
    const state = this.state(runId);
    const entry = state.discoveries.get(externalId);
    // A late success replaces a failure; nothing replaces a success.
    if (entry === 'pending' || (entry === 'failed' && outcome === 'done')) state.discoveries.set(externalId, outcome);
    return Promise.resolve({ mayBeFinished: this.isFinished(runId) });
  }

  tally(runId: string): Promise<RunTally> {
    const state = this.state(runId);
    const tally: RunTally = {
      expected: 0,
      completed: 0,
      failed: 0,
      openCompanies: [],
      failedCompanies: [],
      pendingDiscoveries: 0,
      failedDiscoveries: 0,
      pendingUsers: [],
      failedUsers: [],
    };
    for (const [companyId, entry] of [...state.companies].sort(([a], [b]) => a.localeCompare(b))) {
      tally.expected += 1;
      if (entry.state === 'completed') tally.completed += 1;
      else if (entry.state === 'failed') {
        tally.failed += 1;
        tally.failedCompanies.push(companyId);
      } else tally.openCompanies.push(companyId);
    }
    for (const [externalId, discovery] of [...state.discoveries].sort(([a], [b]) => a.localeCompare(b))) {
      if (discovery === 'pending') {
        tally.pendingDiscoveries += 1;
        tally.pendingUsers.push(externalId);
      } else if (discovery === 'failed') {
        tally.failedDiscoveries += 1;
        tally.failedUsers.push(externalId);
      }
    }
    return Promise.resolve(tally);
  }

  markSummarized(runId: string, at: number): Promise<boolean> {
    const state = this.state(runId);
    if (state.run.summarizedAt !== undefined) return Promise.resolve(false);
    state.run.summarizedAt = at;
    return Promise.resolve(true);
  }

  markAnnounced(runId: string, at: number): Promise<boolean> {
    const state = this.state(runId);
    if (state.run.announcedAt !== undefined) return Promise.resolve(false);
    state.run.announcedAt = at;
    return Promise.resolve(true);
  }

  markPlanned(runId: string, at: number): Promise<boolean> {
    const state = this.state(runId);
    if (state.run.plannedAt !== undefined) return Promise.resolve(false);
    state.run.plannedAt = at;
    return Promise.resolve(true);
  }

  private isFinished(runId: string): boolean {
    const state = this.state(runId);
    return (
      [...state.companies.values()].every((e) => e.state !== 'expected') && [...state.discoveries.values()].every((d) => d !== 'pending')
    );
  }

  private state(runId: string): RunState {
    const state = this.runs.get(runId);
    if (!state) throw new Error(`unknown run ${runId}`);
    return state;
  }
}

function copySplit(split: SplitRecord): SplitRecord {
  return {
    ...split,
    parts: split.parts.map((p) => ({ ...p })),
    done: [...split.done],
    publishAttempts: split.publishAttempts.map((a) => ({ ...a })),
  };
}
