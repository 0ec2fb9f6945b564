import {
  checkQueuedCompanies,
  dueReason,
  givenUpAt,
  givenUpLabel,
  type QueuedCheck,
  type QueuedCheckDeps,
  type RotationCandidate,
  type SweepDeps,
  sweepKeyRotations,
} from '../../../src/core/api-keys';
import type { CompanyStanding } from '../../../src/core/companies/company-removal';
import type { SecretDescription } from '../../../src/core/ports/secrets';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger, silentLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';

const DAY = 24 * 3600_000;
const T0 = Date.UTC(2026, 10, 1, 9, 0, 0);

function description(over: Partial<SecretDescription['rotation']> & { pending?: boolean } = {}): SecretDescription {
  const { pending, ...rotation } = over;
  return {
    secretArn: 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:x',
    name: 'x',
    versionStages: pending ? { v1: ['AWSCURRENT'], v2: ['AWSPENDING'] } : { v1: ['AWSCURRENT'] },
    rotation: { enabled: true, automaticallyAfterDays: 30, nextRotationAt: T0 + 10 * DAY, ...rotation },
    tags: {},
  };
}

describe('dueReason (the selection, from DescribeSecret alone)', () => {
  it('AWSPENDING on a version that is not current is a rotation in progress', () => {
    expect(dueReason(description({ pending: true }), T0)).toEqual({ reason: 'in_progress' });
  });
  it('AWSPENDING together with AWSCURRENT (a finished rotation AWS left labelled) is not in progress', () => {
    const d = { ...description(), versionStages: { v1: ['AWSCURRENT', 'AWSPENDING'] } };
    expect(dueReason(d, T0).reason).toBeUndefined();
  });
  it('a version the doctor gave up (its label, AWSCURRENT or not) is in progress until a full check takes the label off', () => {
    const label = givenUpLabel(T0 - 3_600_000);
    expect(dueReason({ ...description(), versionStages: { v1: ['AWSCURRENT'], v2: [label] } }, T0)).toEqual({ reason: 'in_progress' });
    expect(dueReason({ ...description(), versionStages: { v1: ['AWSPREVIOUS'], v2: ['AWSCURRENT', label] } }, T0)).toEqual({
      reason: 'in_progress',
    });
    // Another tool's label is not ours.
    expect(dueReason({ ...description(), versionStages: { v1: ['AWSCURRENT'], v2: ['ACCTOPS_GIVEN_UP'] } }, T0).reason).toBeUndefined();
  });
  it('the given-up label names its time to the second, and reads back', () => {
    expect(givenUpLabel(Date.UTC(2026, 10, 2, 9, 5, 7, 999))).toBe('ACCTOPS_GIVEN_UP_20261102T090507Z');
    expect(givenUpAt('ACCTOPS_GIVEN_UP_20261102T090507Z')).toBe(Date.UTC(2026, 10, 2, 9, 5, 7));
    expect(givenUpAt('AWSPENDING')).toBeUndefined();
  });
  it('rotation off is examined (the full check reports rotation_disabled)', () => {
    expect(dueReason(description({ enabled: false }), T0)).toEqual({ reason: 'rotation_disabled' });
  });
  it('due at or after NextRotationDate, overdue past overdueAfterMs', () => {
    expect(dueReason(description({ nextRotationAt: T0 }), T0)).toEqual({ reason: 'due' });
    expect(dueReason(description({ nextRotationAt: T0 - DAY }), T0)).toEqual({ reason: 'due' });
    expect(dueReason(description({ nextRotationAt: T0 - DAY - 1 }), T0)).toEqual({ reason: 'overdue' });
    expect(dueReason(description({ nextRotationAt: T0 - 3_600_000 }), T0, { overdueAfterMs: 60_000 })).toEqual({ reason: 'overdue' });
  });
  it('without NextRotationDate, LastRotatedDate plus the interval decides; with neither, it is looked at', () => {
    expect(dueReason(description({ nextRotationAt: undefined, lastRotatedAt: T0 - 31 * DAY }), T0).reason).toBe('due');
    expect(dueReason(description({ nextRotationAt: undefined, lastRotatedAt: T0 - 25 * DAY }), T0)).toEqual({
      reason: undefined,
      nextCheckAt: T0 + 5 * DAY,
    });
    expect(dueReason(description({ nextRotationAt: undefined, lastRotatedAt: undefined }), T0).reason).toBe('due');
  });
  it('not due: looked at again at its next rotation, or after maxRecheckMs if sooner', () => {
    expect(dueReason(description({ nextRotationAt: T0 + 3 * DAY }), T0)).toEqual({ reason: undefined, nextCheckAt: T0 + 3 * DAY });
    expect(dueReason(description({ nextRotationAt: T0 + 30 * DAY }), T0)).toEqual({ reason: undefined, nextCheckAt: T0 + 7 * DAY });
    expect(dueReason(description({ nextRotationAt: T0 + 30 * DAY }), T0, { maxRecheckMs: DAY })).toEqual({
      reason: undefined,
      nextCheckAt: T0 + DAY,
    });
  });
});

/** A registry, a secret store's DescribeSecret and a queue, in memory; counts the describes. */
function fleet(clock: ManualClock, size: number, secretOf: (i: number) => SecretDescription | undefined) {
  const ids = Array.from({ length: size }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
  const marks = new Map<string, number>();
  const described: string[] = [];
  const queued: QueuedCheck[] = [];
  const metrics = new MemoryMetrics();
  const deps: SweepDeps = {
    index: {
      async *pages() {
        for (let i = 0; i < ids.length; i += 7) {
          yield ids
            .slice(i, i + 7)
            .map((companyId): RotationCandidate =>
              marks.has(companyId) ? { companyId, checkAfter: marks.get(companyId)! } : { companyId },
            );
        }
      },
      setCheckAfter: async (companyId, at) => {
        marks.set(companyId, at);
      },
    },
    describeCompanySecret: async (companyId) => {
      described.push(companyId);
      const d = secretOf(ids.indexOf(companyId));
      return d && { entry: { companyId, secretId: `arn:${companyId}`, name: `acctops/test/company/${companyId}/api-key` }, description: d };
    },
    queue: { enqueue: async (checks) => void queued.push(...checks) },
    store: {
      describeSecret: () => Promise.reject(new Error('the sweep must not read a secret')),
      readSecret: () => Promise.reject(new Error('the sweep must not read a secret value')),
      listVersions: () => Promise.reject(new Error('the sweep must not list versions')),
      moveStage: () => Promise.reject(new Error('the sweep must not move a stage')),
    },
    scheduler: { pending: async function* () {} },
    clientFor: () => {
      throw new Error('the sweep must not call the service');
    },
    clock,
    logger: silentLogger,
    metrics,
  };
  return { ids, marks, described, queued, deps, metrics };
}

describe('sweepKeyRotations', () => {
  it('describes only companies without a current mark, queues the due ones, marks the rest, reads no value', async () => {
    const clock = new ManualClock(T0);
    // 100 companies: #3 in progress, #10..#14 due, #20 rotation off, #30 no secret, the rest due in 10 days.
    const f = fleet(clock, 100, (i) =>
      i === 30
        ? undefined
        : i === 3
          ? description({ pending: true })
          : i >= 10 && i < 15
            ? description({ nextRotationAt: T0 - 60_000 })
            : i === 20
              ? description({ enabled: false })
              : description(),
    );
    const report = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000, inlineLimit: 2 });
    expect(report).toMatchObject({
      registered: 100,
      described: 100,
      queued: 7,
      companies: 7,
      due: { in_progress: 1, due: 5, overdue: 0, rotation_disabled: 1 },
    });
    expect(f.queued.map((q) => q.companyId).sort()).toEqual([3, 10, 11, 12, 13, 14, 20].map((i) => f.ids[i]).sort());
    expect(report.findings).toEqual([expect.objectContaining({ type: 'key_missing', companyId: f.ids[30], secret: null })]);
    // The fix names the company, not a placeholder.
    expect(report.findings[0]!.detail).toContain(`acctops keys install --company ${f.ids[30]}`);
    // Not due: marked for their next rotation (in 10 days; the 7-day cap is sooner).
    expect(f.marks.size).toBe(100 - 7 - 1);
    expect(new Set(f.marks.values())).toEqual(new Set([T0 + 7 * DAY]));

    // An hour later: only the unmarked (due, missing) are described again.
    clock.advance(3_600_000);
    f.described.length = 0;
    f.queued.length = 0;
    const second = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000, inlineLimit: 2 });
    expect(second.described).toBe(8);
    expect(f.described).toHaveLength(8);
    expect(second.queued).toBe(7);

    // A week later every mark has come due: all are described once more.
    clock.advance(7 * DAY);
    const third = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000, inlineLimit: 2 });
    expect(third.described).toBe(100);
  });

  it('checks inline (no queue) when at most inlineLimit are due, and counts them in metrics', async () => {
    const clock = new ManualClock(T0);
    const f = fleet(clock, 20, () => description());
    const report = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000, inlineLimit: 5 });
    expect(report).toMatchObject({ described: 20, queued: 0, companies: 0, findings: [] });
    expect(f.metrics.sum('RotationCompaniesDescribed')).toBe(20);
    expect(f.metrics.sum('UnrepairedRotationFindings')).toBe(0);
  });

  it('a failing DescribeSecret is a check_failed finding for that company, not a failed run', async () => {
    const clock = new ManualClock(T0);
    const f = fleet(clock, 10, () => description());
    const describe = f.deps.describeCompanySecret;
    f.deps.describeCompanySecret = async (companyId) => {
      if (companyId === f.ids[4]) throw new Error('ThrottlingException: Rate exceeded');
      return describe(companyId);
    };
    const report = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000 });
    expect(report.findings).toEqual([expect.objectContaining({ type: 'check_failed', companyId: f.ids[4] })]);
    expect(f.marks.size).toBe(9);
  });

  it('stops describing at its deadline, leaves the rest unmarked and queues the due it found; the next run finishes', async () => {
    const clock = new ManualClock(T0);
    // 100 companies, #5 due; each DescribeSecret takes one second of the manual clock.
    const f = fleet(clock, 100, (i) => (i === 5 ? description({ nextRotationAt: T0 - 60_000 }) : description()));
    const describe = f.deps.describeCompanySecret;
    f.deps.describeCompanySecret = async (companyId) => {
      const found = await describe(companyId);
      clock.advance(1000);
      return found;
    };
    const report = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000, concurrency: 1, deadline: T0 + 30_000 });
    // Describes at T0..T0+29 s; the rest of the fifth page of 7 (#30..#34) is deferred, later pages unread.
    expect(report).toMatchObject({ complete: false, described: 30, deferred: 5, registered: 35, queued: 1, companies: 1, findings: [] });
    expect(f.described).toEqual(f.ids.slice(0, 30));
    expect(f.queued.map((q) => q.companyId)).toEqual([f.ids[5]]);
    expect(f.marks.size).toBe(29);
    expect(f.metrics.sum('RotationChecksDeferred')).toBe(5);

    f.described.length = 0;
    const next = await sweepKeyRotations(f.deps, { graceMs: 30 * 60_000, concurrency: 1, inlineLimit: 0, deadline: clock.now() + 600_000 });
    expect(next).toMatchObject({ complete: true, deferred: 0, registered: 100 });
    // The 29 marked are skipped; the due one (unmarked) and the 70 left over are described.
    expect(next.described).toBe(71);
    expect(f.described).not.toContain(f.ids[0]);
    expect(f.marks.size).toBe(99);
  });
});

describe('checkQueuedCompanies (the worker)', () => {
  it('an unreadable message is a batch item failure; the others are checked', async () => {
    const clock = new ManualClock(T0);
    const f = fleet(clock, 1, () => description());
    const result = await checkQueuedCompanies(f.deps, { graceMs: 30 * 60_000 }, [
      { messageId: 'm1', body: '{"companyId":"c"}' },
      { messageId: 'm2', body: 'not json' },
      {
        messageId: 'm3',
        body: JSON.stringify({ companyId: f.ids[0], secretId: 'arn:s', name: 'acctops/test/company/x/api-key', reason: 'due' }),
      },
    ]);
    expect(result.failedMessageIds).toEqual(['m1', 'm2']);
    expect(result.checked).toBe(1);
    // The fake store refuses every read: the company's full check fails as a finding, like the inline run's.
    expect(result.findings).toEqual([expect.objectContaining({ type: 'check_failed', companyId: f.ids[0] })]);
  });

  it('logs an unreadable body as a ValidationError naming the field, never quoting the body', async () => {
    const clock = new ManualClock(T0);
    const f = fleet(clock, 1, () => description());
    const logger = new MemoryLogger();
    const result = await checkQueuedCompanies({ ...f.deps, logger }, { graceMs: 30 * 60_000 }, [
      { messageId: 'm1', body: 'nope-body' },
      { messageId: 'm2', body: '{"companyId":"c"}' },
    ]);
    expect(result.failedMessageIds).toEqual(['m1', 'm2']);
    const lines = logger.lines
      .filter((l) => l.includes('queued rotation check unreadable'))
      .map((l) => JSON.parse(l) as { messageId: string; error: { name: string; message: string } });
    expect(lines.map((l) => [l.messageId, l.error.name])).toEqual([
      ['m1', 'ValidationError'],
      ['m2', 'ValidationError'],
    ]);
    expect(lines[0]!.error.message).toContain('(root): not valid JSON');
    expect(lines[1]!.error.message).toContain('secretId');
    expect(lines.map((l) => JSON.stringify(l)).join('\n')).not.toContain('nope-body');
  });

  describe('a company removed, gone or no longer due since it was queued', () => {
    const body = (companyId: string, reason: QueuedCheck['reason'] = 'due') =>
      JSON.stringify({ companyId, secretId: `arn:${companyId}`, name: `acctops/test/company/${companyId}/api-key`, reason });

    /** The worker's deps over `fleet`, whose store describes a due secret and refuses every other call (a full check fails as check_failed). */
    function worker(
      standing: Record<string, CompanyStanding | Error>,
      secret: () => SecretDescription = () => description({ nextRotationAt: T0 - 60_000 }),
    ) {
      const clock = new ManualClock(T0);
      const f = fleet(clock, 4, () => description());
      const logger = new MemoryLogger();
      const asked: string[] = [];
      const described: string[] = [];
      const deps: QueuedCheckDeps = {
        ...f.deps,
        store: {
          ...f.deps.store,
          describeSecret: async (secretId) => {
            described.push(secretId);
            return secret();
          },
        },
        logger,
        companyStanding: async (companyId) => {
          asked.push(companyId);
          const s = standing[companyId] ?? { state: 'active' };
          if (s instanceof Error) throw s;
          return s;
        },
      };
      return { f, deps, logger, asked, described };
    }

    it('removed (removedAt) or without an entry: no check, no finding, no event; an info line and RotationChecksSkipped say why', async () => {
      const published: unknown[] = [];
      const w = worker({});
      const [active, removed, gone] = w.f.ids;
      const standing: Record<string, CompanyStanding> = {
        [removed!]: { state: 'removed', removedAt: '2026-11-01T08:59:00.000Z' },
        [gone!]: { state: 'not_registered' },
      };
      const deps: QueuedCheckDeps = {
        ...w.deps,
        events: { publish: async (events) => void published.push(...events) },
        companyStanding: async (companyId) => standing[companyId] ?? { state: 'active' },
      };
      const result = await checkQueuedCompanies(deps, { graceMs: 30 * 60_000 }, [
        { messageId: 'm1', body: body(removed!) },
        { messageId: 'm2', body: body(gone!) },
        { messageId: 'm3', body: body(active!) },
      ]);
      // Only the active company is checked (and its check fails on the fake store, as before).
      expect(result.checked).toBe(1);
      expect(result.findings.map((f) => [f.type, f.companyId])).toEqual([['check_failed', active]]);
      expect(result.failedMessageIds).toEqual([]);
      expect(result.skipped).toEqual([
        { companyId: removed, reason: 'company_removed' },
        { companyId: gone, reason: 'company_not_registered' },
      ]);
      expect(published.map((e) => (e as { detail: { companyId: string } }).detail.companyId)).toEqual([active]);
      expect(w.f.metrics.sum('RotationChecksSkipped', { Reason: 'company_removed' })).toBe(1);
      expect(w.f.metrics.sum('RotationChecksSkipped', { Reason: 'company_not_registered' })).toBe(1);
      expect(w.f.metrics.sum('UnrepairedRotationFindings')).toBe(1);
      const infos = w.logger.entries().filter((l) => l.level === 'info' && String(l.message).startsWith('queued rotation check skipped'));
      expect(infos).toEqual([
        expect.objectContaining({ companyId: removed, reason: 'company_removed', removedAt: '2026-11-01T08:59:00.000Z' }),
        expect.objectContaining({ companyId: gone, reason: 'company_not_registered' }),
      ]);
      expect(String(infos[0]!.message)).toContain('removed from the registry');
      // No warning or error about the two: nothing for an operator to act on.
      const loud = w.logger.entries().filter((l) => l.level !== 'info' && [removed, gone].includes(l.companyId as string));
      expect(loud).toEqual([]);
    });

    it('a removed company whose every message is skipped reports a run with no finding (the alarm sees 0)', async () => {
      const w = worker({});
      const removed = w.f.ids[1]!;
      const deps = { ...w.deps, companyStanding: async () => ({ state: 'removed', removedAt: '2026-11-01T08:59:00.000Z' }) as const };
      const result = await checkQueuedCompanies(deps, { graceMs: 30 * 60_000 }, [
        { messageId: 'm1', body: body(removed, 'rotation_disabled') },
        { messageId: 'm2', body: body(removed, 'rotation_disabled') },
      ]);
      expect(result).toEqual({
        checked: 0,
        findings: [],
        failedMessageIds: [],
        skipped: [{ companyId: removed, reason: 'company_removed' }],
      });
      expect(w.f.metrics.sum('UnrepairedRotationFindings')).toBe(0);
      expect(w.f.metrics.sum('RotationFindings')).toBe(0);
      // Asked the registry once, never the secret.
      expect(w.described).toEqual([]);
    });

    it("a registry it cannot read fails that company's messages (retried, then the DLQ), and checks nothing of it", async () => {
      const w = worker({});
      const [active, unknown] = w.f.ids;
      const deps = {
        ...w.deps,
        companyStanding: async (companyId: string): Promise<CompanyStanding> => {
          if (companyId === unknown)
            throw new Error('ProvisionedThroughputExceededException: DynamoDB GetItem on the company registry table');
          return { state: 'active' };
        },
      };
      const result = await checkQueuedCompanies(deps, { graceMs: 30 * 60_000 }, [
        { messageId: 'm1', body: body(unknown!) },
        { messageId: 'm2', body: body(active!) },
        { messageId: 'm3', body: body(unknown!) },
      ]);
      expect(result.failedMessageIds).toEqual(['m1', 'm3']);
      expect(result.findings.map((f) => f.companyId)).toEqual([active]);
      expect(result.skipped).toEqual([]);
      expect(w.logger.entries().filter((l) => l.level === 'error' && l.companyId === unknown)).toEqual([
        expect.objectContaining({ messageIds: ['m1', 'm3'], message: expect.stringContaining('registry could not be read') as unknown }),
      ]);
    });

    it('no longer due (a rotation finished since the sweep): skipped as not_due after one DescribeSecret; still due or deleted: checked', async () => {
      const notDue = worker({}, () => description());
      const company = notDue.f.ids[0]!;
      const skipped = await checkQueuedCompanies(notDue.deps, { graceMs: 30 * 60_000 }, [{ messageId: 'm1', body: body(company) }]);
      expect(skipped).toMatchObject({ checked: 0, findings: [], skipped: [{ companyId: company, reason: 'not_due' }] });
      expect(notDue.described).toEqual([`arn:${company}`]);
      expect(notDue.f.metrics.sum('RotationChecksSkipped', { Reason: 'not_due' })).toBe(1);

      for (const secret of [() => description({ pending: true }), () => ({ ...description(), deletedAt: T0 - DAY })]) {
        const w = worker({}, secret);
        const result = await checkQueuedCompanies(w.deps, { graceMs: 30 * 60_000 }, [{ messageId: 'm1', body: body(company) }]);
        expect(result).toMatchObject({ checked: 1, skipped: [] });
      }
    });
  });
});
