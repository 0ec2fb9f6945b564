import { MemoryRegistryTable } from '../../../src/adapters/local/file-company-registry';
import { MemoryEventPublisher } from '../../../src/adapters/local/memory-event-publisher';
import { MemoryExportQueue } from '../../helpers/memory-export-queue';
import { MemoryRunLedger } from '../../helpers/memory-run-ledger';
import { FlakyEvents } from '../../helpers/flaky-events';
import { CompanyRegistry } from '../../../src/core/companies/company-registry';
import { decodeJob, type ExportJob } from '../../../src/core/exports/pipeline/export-jobs';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import { planMonthlyExport } from '../../../src/core/exports/pipeline/monthly-export';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';

const id = (n: number) => `6f1c2a3b-0000-4000-8000-${String(n).padStart(12, '0')}`;
const T0 = Date.parse('2026-10-15T00:00:00Z');

/** A planner's stores in memory, its clock at `now` (the night of November's run by default). */
function planDeps<E extends MemoryEventPublisher | FlakyEvents = MemoryEventPublisher>(
  now = Date.parse('2026-11-01T02:00:00Z'),
  events?: E,
) {
  return {
    ledger: new MemoryRunLedger(),
    queue: new MemoryExportQueue(),
    events: (events ?? new MemoryEventPublisher()) as E,
    clock: new ManualClock(now),
    logger: new MemoryLogger(),
    metrics: new MemoryMetrics(),
  };
}

/** The registry, a page at a time, counting the pages it hands out. */
function countingRegistry(registry: CompanyRegistry, limits: number[]): Pick<CompanyRegistry, 'pages'> {
  return {
    pages: (limit?: number) => {
      limits.push(limit ?? -1);
      return registry.pages(limit);
    },
  };
}

describe('planMonthlyExport over the company registry', () => {
  it('plans every active registered company once, with its own formats, skipping removed and unreadable entries', async () => {
    const table = new MemoryRegistryTable();
    const logger = new MemoryLogger();
    const registry = new CompanyRegistry(table, { defaultFormats: ['jsonl'], logger });
    for (let n = 0; n < 1203; n++) await registry.add({ companyId: id(n) }, T0);
    await registry.add({ companyId: id(7), formats: ['parquet', 'csv'] }, T0);
    await registry.remove(id(9), T0);
    table.items['zz-bad'] = { companyId: 'sk_live_notanid', formats: [], addedAt: 'x' };
    const queue = new MemoryExportQueue();
    const events = new MemoryEventPublisher();
    const metrics = new MemoryMetrics();
    const calls: number[] = [];

    const report = await planMonthlyExport(
      { ledger: new MemoryRunLedger(), queue, events, clock: new ManualClock(Date.parse('2026-11-01T02:00:00Z')), logger, metrics },
      {
        scheduledAt: '2026-11-01T02:00:00Z',
        executionId: 'exec-1',
        timeZone: 'Europe/Berlin',
        // A company both in a fixed list and in the registry is planned once.
        companies: [id(1).toUpperCase()],
        registry: countingRegistry(registry, calls),
        formats: ['jsonl', 'csv', 'parquet'],
      },
    );

    const jobs = queue.messages.map((m) => decodeJob(m.body) as ExportJob);
    expect(report.companies).toBe(1202);
    expect(jobs).toHaveLength(1202);
    expect(new Set(jobs.map((j) => j.companyId)).size).toBe(1202);
    expect(jobs.some((j) => j.companyId === id(9))).toBe(false);
    expect(jobs.find((j) => j.companyId === id(7))?.formats).toEqual(['parquet', 'csv']);
    expect(jobs.find((j) => j.companyId === id(8))?.formats).toEqual(['jsonl']);
    // The fixed list keeps the run's formats.
    expect(jobs.find((j) => j.companyId === id(1))?.formats).toEqual(['jsonl', 'csv', 'parquet']);
    expect(report.skipped).toEqual([
      {
        key: '(malformed key)',
        position: expect.any(Number),
        issues: expect.arrayContaining([expect.objectContaining({ path: 'companyId' })]),
      },
    ]);
    expect(metrics.sum('CompanyRegistryItemsSkipped')).toBe(1);
    expect(logger.lines.join('\n')).not.toContain('sk_live');
    expect(calls).toEqual([-1]);

    // The event names the first 100 and counts them all: a fleet does not fit in one event.
    const started = events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.monthlyStarted);
    expect((started[0]!.detail as { companies: string[] }).companies).toHaveLength(100);
    expect((started[0]!.detail as { companyCount: number }).companyCount).toBe(1202);
  });

  it('a repeated invocation plans the same run again: still-open companies go to the queue again, which drops the duplicates', async () => {
    const registry = new CompanyRegistry(new MemoryRegistryTable(), { defaultFormats: ['csv'] });
    for (let n = 0; n < 3; n++) await registry.add({ companyId: id(n) }, T0);
    const deps = planDeps();
    const input = {
      scheduledAt: '2026-11-01T02:00:00Z',
      executionId: 'exec-1',
      timeZone: 'Europe/Berlin',
      registry,
      formats: ['jsonl' as const],
    };
    expect((await planMonthlyExport(deps, input)).companies).toBe(3);
    const again = await planMonthlyExport(deps, input);
    expect(again).toMatchObject({ runId: expect.any(String), repeated: true });
    expect(deps.queue.messages).toHaveLength(3);
    // The run was announced by the first invocation: the repeat does not start it a second time.
    expect(deps.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.monthlyStarted)).toHaveLength(1);
  });

  it('a repeat after the bus refused MonthlyExportStarted publishes it, once', async () => {
    const events = new FlakyEvents();
    const deps = planDeps(undefined, events);
    const input = {
      scheduledAt: '2026-11-01T02:00:00Z',
      executionId: 'exec-1',
      timeZone: 'Europe/Berlin',
      companies: [id(1)],
      formats: ['csv' as const],
    };
    events.failures = 1;
    await expect(planMonthlyExport(deps, input)).rejects.toThrow(/event bus unavailable/);
    const started = () => events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.monthlyStarted);
    expect(started()).toHaveLength(0);
    expect((await planMonthlyExport(deps, input)).repeated).toBe(true);
    expect(started()).toHaveLength(1);
    await planMonthlyExport(deps, input);
    expect(started()).toHaveLength(1);
  });

  it('refuses a scheduledAt ahead of its clock (a hand-made event that would plan a month not ended), planning nothing', async () => {
    const registry = new CompanyRegistry(new MemoryRegistryTable(), { defaultFormats: ['csv'] });
    await registry.add({ companyId: id(1) }, T0);
    const now = Date.parse('2026-11-27T03:00:00Z');
    const deps = planDeps(now);
    const input = (scheduledAt: string, executionId: string) => ({
      scheduledAt,
      executionId,
      timeZone: 'Europe/Berlin',
      registry,
      formats: ['jsonl' as const],
    });
    await expect(planMonthlyExport(deps, input('2099-01-01T03:00:00Z', 'exec-2099'))).rejects.toMatchObject({
      name: 'ValidationError',
      field: 'scheduledAt',
    });
    await expect(planMonthlyExport(deps, input(new Date(now + 6 * 60_000).toISOString(), 'exec-6min'))).rejects.toMatchObject({
      field: 'scheduledAt',
    });
    expect(deps.queue.messages).toEqual([]);
    expect(deps.events.events).toEqual([]);
    // Clock skew is allowed, and a re-run of an old schedule plans its month.
    expect((await planMonthlyExport(deps, input(new Date(now + 4 * 60_000).toISOString(), 'exec-skew'))).period).toBe('2026-10');
    expect((await planMonthlyExport(deps, input('2026-09-01T00:30:00+02:00', 'exec-rerun'))).period).toBe('2026-08');
  });
});
