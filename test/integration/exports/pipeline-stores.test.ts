import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbReplayGuard } from '../../../src/adapters/aws/dynamodb-replay-guard';
import { DynamoDbRunLedger } from '../../../src/adapters/aws/dynamodb-run-ledger';
import { MemoryReplayGuard } from '../../helpers/memory-replay-guard';
import { MemoryRunLedger } from '../../helpers/memory-run-ledger';
import type { PartLedger } from '../../../src/core/exports/pipeline/part-ledger';
import type { RunLedger } from '../../../src/core/exports/pipeline/run-ledger';
import type { ReplayGuard } from '../../../src/core/exports/pipeline/webhook';
import { ManualClock } from '../../../src/core/shared/clock';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { createRunLedgerTable, createReplayTable } from '../../helpers/dynamodb-tables';

// One contract for the run ledger and one for the replay guard, each run against the memory twin
// and the DynamoDB adapter on dynalite.

const A = 'aaaaaaaa-0000-4000-8000-000000000001';
const B = 'bbbbbbbb-0000-4000-8000-000000000002';
const C = 'cccccccc-0000-4000-8000-000000000003';
const U1 = '11111111-0000-4000-8000-000000000001';
const U2 = '22222222-0000-4000-8000-000000000002';

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let tables = 0;

beforeAll(async () => {
  dynamo = await startDynamo();
  client = dynamo.client();
});
afterAll(async () => {
  client.destroy();
  await dynamo.stop();
});

const clock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0));

const ledgers: [string, () => Promise<RunLedger & PartLedger>][] = [
  ['memory', () => Promise.resolve(new MemoryRunLedger())],
  [
    'DynamoDB (dynalite)',
    async () => {
      const tableName = `export-runs-${++tables}`;
      await createRunLedgerTable(client, tableName);
      return new DynamoDbRunLedger({ client, tableName, clock });
    },
  ],
];

const run = (runId: string, period = '2026-10', startedAt = clock.now()) => ({
  runId,
  period,
  timeZone: 'Europe/Berlin',
  scheduledAt: '2026-11-01T02:00:00Z',
  startedAt,
});

describe.each(ledgers)('run ledger contract: %s', (_name, make) => {
  let ledger: RunLedger & PartLedger;
  beforeEach(async () => {
    ledger = await make();
  });

  it('starts a run once, points the month at the latest run, and reads it back', async () => {
    expect(await ledger.startRun(run('r1'))).toEqual({ run: run('r1'), created: true });
    expect(await ledger.startRun({ ...run('r1'), startedAt: clock.now() + 5 })).toEqual({ run: run('r1'), created: false });
    expect(await ledger.getRun('r1')).toEqual(run('r1'));
    expect(await ledger.latestRun('2026-10')).toEqual(run('r1'));
    await ledger.startRun(run('r2', '2026-10', clock.now() + 1000));
    expect((await ledger.latestRun('2026-10'))?.runId).toBe('r2');
    expect(await ledger.latestRun('2026-09')).toBeUndefined();
    expect(await ledger.getRun('nope')).toBeUndefined();
  });

  it('expects a company once: the same source again is mine while open, another source is taken', async () => {
    await ledger.startRun(run('r1'));
    expect(await ledger.expectCompany('r1', A, { kind: 'apiKey' })).toBe('created');
    expect(await ledger.expectCompany('r1', A, { kind: 'apiKey' })).toBe('mine');
    expect(await ledger.expectCompany('r1', A, { kind: 'user', externalId: U1 })).toBe('taken');
    expect(await ledger.expectCompany('r1', B, { kind: 'user', externalId: U1 })).toBe('created');
    expect(await ledger.expectCompany('r1', B, { kind: 'user', externalId: U2 })).toBe('taken');
    expect(await ledger.expectCompany('r1', B, { kind: 'user', externalId: U1 })).toBe('mine');
    await ledger.settleCompany('r1', A, 'completed');
    expect(await ledger.expectCompany('r1', A, { kind: 'apiKey' })).toBe('taken');
  });

  it('expects a page of companies at once with the same answers, and the run counts them open (one counter write)', async () => {
    await ledger.startRun(run('r1'));
    await ledger.expectCompany('r1', C, { kind: 'user', externalId: U1 });
    const page = (ids: string[]) =>
      ledger.expectCompanies
        ? ledger.expectCompanies('r1', ids, { kind: 'apiKey' })
        : Promise.all(ids.map((id) => ledger.expectCompany('r1', id, { kind: 'apiKey' })));
    expect(await page([A, B, C])).toEqual(['created', 'created', 'taken']);
    expect(await page([A, B])).toEqual(['mine', 'mine']);
    expect(await ledger.settleCompany('r1', A, 'completed')).toEqual({ mayBeFinished: false });
    expect(await ledger.settleCompany('r1', C, 'completed')).toEqual({ mayBeFinished: false });
    expect(await ledger.settleCompany('r1', B, 'failed')).toEqual({ mayBeFinished: true });
  });

  it('tallies exactly, says when the run may be finished, and lets a late success replace a failure (never the reverse)', async () => {
    await ledger.startRun(run('r1'));
    for (const company of [A, B, C]) await ledger.expectCompany('r1', company, { kind: 'apiKey' });
    expect(await ledger.expectDiscovery('r1', U1)).toBe('created');
    expect(await ledger.expectDiscovery('r1', U1)).toBe('mine');

    expect(await ledger.settleCompany('r1', A, 'completed')).toEqual({ mayBeFinished: false });
    expect(await ledger.settleCompany('r1', B, 'failed')).toEqual({ mayBeFinished: false });
    expect(await ledger.settleDiscovery('r1', U1, 'failed')).toEqual({ mayBeFinished: false });
    expect(await ledger.expectDiscovery('r1', U1)).toBe('taken');
    expect(await ledger.tally('r1')).toEqual({
      expected: 3,
      completed: 1,
      failed: 1,
      openCompanies: [C],
      failedCompanies: [B],
      pendingDiscoveries: 0,
      failedDiscoveries: 1,
      pendingUsers: [],
      failedUsers: [U1],
    });
    expect(await ledger.settleCompany('r1', C, 'completed')).toEqual({ mayBeFinished: true });
    // Repeats (redeliveries) change nothing and still answer.
    expect(await ledger.settleCompany('r1', C, 'completed')).toEqual({ mayBeFinished: true });
    expect(await ledger.settleCompany('r1', A, 'failed')).toEqual({ mayBeFinished: true });
    expect(await ledger.settleCompany('r1', B, 'completed')).toEqual({ mayBeFinished: true });
    expect(await ledger.tally('r1')).toMatchObject({ expected: 3, completed: 3, failed: 0, openCompanies: [], failedCompanies: [] });
    // A discovery job sent again after its failure (the overdue runbook) settles it done; nothing undoes that.
    expect(await ledger.settleDiscovery('r1', U1, 'done')).toEqual({ mayBeFinished: true });
    expect(await ledger.settleDiscovery('r1', U1, 'failed')).toEqual({ mayBeFinished: true });
    expect(await ledger.tally('r1')).toMatchObject({ pendingDiscoveries: 0, failedDiscoveries: 0, pendingUsers: [], failedUsers: [] });
  });

  it('names the users whose discovery is pending or failed', async () => {
    await ledger.startRun(run('r1'));
    for (const user of [U1, U2]) await ledger.expectDiscovery('r1', user);
    await ledger.settleDiscovery('r1', U2, 'failed');
    expect(await ledger.tally('r1')).toMatchObject({ pendingDiscoveries: 1, pendingUsers: [U1], failedDiscoveries: 1, failedUsers: [U2] });
  });

  it('marks a run summarized once', async () => {
    await ledger.startRun(run('r1'));
    expect(await ledger.markSummarized('r1', 42)).toBe(true);
    expect(await ledger.markSummarized('r1', 43)).toBe(false);
    expect((await ledger.getRun('r1'))?.summarizedAt).toBe(42);
  });

  it('marks a run announced once, and a repeated start returns the mark', async () => {
    await ledger.startRun(run('r1'));
    expect((await ledger.getRun('r1'))?.announcedAt).toBeUndefined();
    expect(await ledger.markAnnounced('r1', 42)).toBe(true);
    expect(await ledger.markAnnounced('r1', 43)).toBe(false);
    expect((await ledger.startRun(run('r1'))).run).toMatchObject({ announcedAt: 42 });
    expect((await ledger.getRun('r1'))?.summarizedAt).toBeUndefined();
  });

  it('marks a run planned once, apart from its other marks, and a repeated start returns the mark', async () => {
    await ledger.startRun(run('r1'));
    expect((await ledger.getRun('r1'))?.plannedAt).toBeUndefined();
    expect(await ledger.markPlanned('r1', 42)).toBe(true);
    expect(await ledger.markPlanned('r1', 43)).toBe(false);
    expect((await ledger.startRun(run('r1'))).run).toMatchObject({ plannedAt: 42 });
    expect(await ledger.getRun('r1')).not.toHaveProperty('announcedAt');
    expect(await ledger.getRun('r1')).not.toHaveProperty('summarizedAt');
  });

  it("keeps a split's default currency for its parts, and reads a split recorded without one as none", async () => {
    const parts = [
      { index: 0, dateFrom: '2026-10-01', dateTo: '2026-10-15' },
      { index: 1, dateFrom: '2026-10-16', dateTo: '2026-10-31' },
    ];
    const base = { companyId: A, period: '2026-10', runId: 'r1', parts, createdAt: 1 };
    expect((await ledger.startSplit({ ...base, splitId: 'jpy', defaultCurrency: 'JPY' })).split.defaultCurrency).toBe('JPY');
    expect((await ledger.getSplit('jpy'))?.defaultCurrency).toBe('JPY');
    // A repeat returns the stored split unchanged, its currency too.
    expect((await ledger.startSplit({ ...base, splitId: 'jpy', defaultCurrency: 'GBP' })).split.defaultCurrency).toBe('JPY');
    await ledger.startSplit({ ...base, splitId: 'older' });
    expect(await ledger.getSplit('older')).not.toHaveProperty('defaultCurrency');
  });

  it("keeps a split's publish attempts, each once, and which of them were refused", async () => {
    const parts = [{ index: 0, dateFrom: '2026-10-01', dateTo: '2026-10-31' }];
    const { split } = await ledger.startSplit({ splitId: 's1', companyId: A, period: '2026-10', runId: 'r1', parts, createdAt: 1 });
    expect(split.publishAttempts).toEqual([]);
    await ledger.recordPublishAttempt('s1', { id: 'a1', at: 10 });
    await ledger.recordPublishAttempt('s1', { id: 'a1', at: 10 });
    await ledger.recordPublishAttempt('s1', { id: 'a2', at: 20, from: '"etag-with-quotes"' });
    await ledger.refusePublishAttempt('s1', 'a1');
    await ledger.refusePublishAttempt('s1', 'a1');
    expect((await ledger.getSplit('s1'))!.publishAttempts).toEqual([
      { id: 'a1', at: 10, refused: true },
      { id: 'a2', at: 20, from: '"etag-with-quotes"', refused: false },
    ]);
    // The marks that follow leave the attempts as they are.
    expect(await ledger.markSplitPublished('s1', 30)).toBe(true);
    expect(await ledger.getSplit('s1')).toMatchObject({ publishedAt: 30, publishAttempts: [{ id: 'a1' }, { id: 'a2' }] });
    await expect(ledger.recordPublishAttempt('unknown', { id: 'a3', at: 40 })).rejects.toThrow();
  });

  it('records the publish with the report when its own mark is missing, and keeps an earlier one', async () => {
    const parts = [{ index: 0, dateFrom: '2026-10-01', dateTo: '2026-10-31' }];
    for (const splitId of ['unmarked', 'marked']) {
      await ledger.startSplit({ splitId, companyId: A, period: '2026-10', runId: 'r1', parts, createdAt: 1 });
    }
    expect(await ledger.markSplitReported('unmarked', 50)).toBe(true);
    expect(await ledger.getSplit('unmarked')).toMatchObject({ publishedAt: 50, reportedAt: 50 });
    expect(await ledger.markSplitPublished('unmarked', 60)).toBe(false);

    expect(await ledger.markSplitPublished('marked', 30)).toBe(true);
    expect(await ledger.markSplitReported('marked', 50)).toBe(true);
    expect(await ledger.markSplitReported('marked', 70)).toBe(false);
    expect(await ledger.getSplit('marked')).toMatchObject({ publishedAt: 30, reportedAt: 50 });
  });
});

describe('DynamoDB run ledger', () => {
  it('tallies a run across several query pages', async () => {
    const tableName = `export-runs-${++tables}`;
    await createRunLedgerTable(client, tableName);
    const ledger = new DynamoDbRunLedger({ client, tableName, clock, queryPageSize: 7 });
    await ledger.startRun(run('big'));
    const ids = Array.from({ length: 40 }, (_, i) => `dddddddd-0000-4000-8000-${String(i).padStart(12, '0')}`);
    await Promise.all(ids.map((id) => ledger.expectCompany('big', id, { kind: 'apiKey' })));
    await Promise.all(ids.slice(0, 10).map((id) => ledger.settleCompany('big', id, 'failed')));
    const tally = await ledger.tally('big');
    expect(tally).toMatchObject({ expected: 40, completed: 0, failed: 10 });
    expect(tally.openCompanies).toEqual(ids.slice(10));
  });
});

const guards: [string, () => Promise<ReplayGuard>][] = [
  ['memory', () => Promise.resolve(new MemoryReplayGuard(clock))],
  [
    'DynamoDB (dynalite)',
    async () => {
      const tableName = `webhook-replay-${++tables}`;
      await createReplayTable(client, tableName);
      return new DynamoDbReplayGuard({ client, tableName, clock });
    },
  ],
];

describe.each(guards)('replay guard contract: %s', (_name, make) => {
  it('claims an id as a lease; a confirm makes it an acceptance until it expires; a release frees it again', async () => {
    const guard = await make();
    const lease = clock.now() + 30_000;
    const until = clock.now() + 6 * 60_000;
    expect(await guard.claim('evt_1', lease)).toBe('claimed');
    expect(await guard.claim('evt_1', lease)).toBe('in_flight');
    await guard.confirm('evt_1', until);
    expect(await guard.claim('evt_1', lease)).toBe('accepted');
    expect(await guard.claim('evt_2', lease)).toBe('claimed');
    await guard.release('evt_2');
    expect(await guard.claim('evt_2', lease)).toBe('claimed');
    clock.advance(6 * 60_000 + 1);
    expect(await guard.claim('evt_1', clock.now() + 30_000)).toBe('claimed');
  });

  it('a lease never confirmed (the function died before enqueueing) lapses on its own', async () => {
    const guard = await make();
    expect(await guard.claim('evt_dead', clock.now() + 30_000)).toBe('claimed');
    clock.advance(29_000);
    expect(await guard.claim('evt_dead', clock.now() + 30_000)).toBe('in_flight');
    clock.advance(1_001);
    expect(await guard.claim('evt_dead', clock.now() + 30_000)).toBe('claimed');
  });
});

describe('DynamoDB replay guard', () => {
  it('a release by the loser of a race does not undo the winner’s claim', async () => {
    const tableName = `webhook-replay-${++tables}`;
    await createReplayTable(client, tableName);
    const winner = new DynamoDbReplayGuard({ client, tableName, clock });
    const loser = new DynamoDbReplayGuard({ client, tableName, clock });
    const until = clock.now() + 60_000;
    expect(await winner.claim('evt_race', until)).toBe('claimed');
    expect(await loser.claim('evt_race', until)).toBe('in_flight');
    await loser.release('evt_race');
    await loser.confirm('evt_race', until + 60_000);
    expect(await loser.claim('evt_race', until)).toBe('in_flight');
    await winner.confirm('evt_race', until + 60_000);
    expect(await loser.claim('evt_race', until)).toBe('accepted');
  });
});
