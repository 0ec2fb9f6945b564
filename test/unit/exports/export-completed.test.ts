import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { MemoryEventPublisher } from '../../../src/adapters/local/memory-event-publisher';
import { apiKeyAuth } from '../../../src/core/accounting-api';
import { EXPORT_EVENT_TYPES, type ExportCompletedDetail } from '../../../src/core/exports/pipeline/export-events';
import { exportCompanyPeriod, type ExportOutcome } from '../../../src/core/exports/pipeline/export-company-period';
import type { DatasetName, ExportFormat } from '../../../src/core/exports/formats/datasets';
import type { PutConditions, PutOptions } from '../../../src/core/exports/formats/object-store';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { BASE_URL, COMPANY_A, category, fakeTransport, listHandler, transaction, type Handler } from '../accounting-api/fake-transport';

/**
 * ExportCompleted and the export metrics carry what the manifest, the log and the CLI say of a
 * published month: records the service repeated across pages, transactions dated outside the month,
 * and Athena symlinks that could not be written after the commit (docs/exports.md, "Result events").
 */
describe('ExportCompleted and the metrics of a published month', () => {
  /** A dir store whose writes of Athena symlinks fail while `symlinksFail` is set. */
  class SymlinkFailingStore extends DirObjectStore {
    symlinksFail = false;
    override putObject(key: string, body: Uint8Array | string, options?: PutOptions & PutConditions): Promise<void> {
      if (this.symlinksFail && key.endsWith('/_symlink/symlink.txt')) return Promise.reject(new Error('injected: symlink write refused'));
      return super.putObject(key, body, options);
    }
  }

  // Pages of 3: page 2 starts with the last record of page 1 again (a record inserted before the read
  // position), and `count` is the 5 distinct records; one of them is dated in September.
  const SEPTEMBER = transaction(3, { valueDate: '2026-09-30T12:00:00+00:00' });
  const TRANSACTIONS = [transaction(0), transaction(1), transaction(2), transaction(2), SEPTEMBER, transaction(4)];
  const transactions = listHandler('/accounting/transactions/', TRANSACTIONS, { sizeParam: 'page_size', count: 5 });
  const categories = listHandler('/accounting/categories/', [category(1), category(2)], { sizeParam: 'pageSize' });
  const handler: Handler = (request, url) =>
    url.pathname.endsWith('/accounting/categories/') ? categories(request, url) : transactions(request, url);

  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-export-completed-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  function world() {
    const store = new SymlinkFailingStore(root);
    const events = new MemoryEventPublisher();
    const clock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0));
    const logger = new MemoryLogger();
    const run = async (datasets: DatasetName[], formats: ExportFormat[] = ['csv', 'parquet']) => {
      const metrics = new MemoryMetrics();
      const outcome: ExportOutcome = await exportCompanyPeriod(
        {
          store,
          events,
          clock,
          logger,
          metrics,
          toolVersion: '0.1.0',
          baseUrl: BASE_URL,
          client: { transport: fakeTransport(handler).transport, maxPageSize: 3 },
        },
        {
          companyId: COMPANY_A,
          // The service's spelling of the id is known here; the GET /companies/ lookup has its own tests.
          serviceCompanyId: COMPANY_A,
          period: '2026-10',
          credentials: apiKeyAuth('sbx_AbCdEf1234567890abcdefghijklmnop'),
          source: { kind: 'apiKey' },
          trigger: { kind: 'on_demand', requestId: 'test', via: 'event' },
          datasets,
          formats,
        },
      );
      if (outcome.status !== 'completed') throw outcome.error;
      const completed = events.ofType(EXPORT_EVENT_TYPES.completed);
      return { summary: outcome.summary, detail: completed[completed.length - 1]!.detail as unknown as ExportCompletedDetail, metrics };
    };
    return { store, run };
  }

  it('counts repeats per dataset, transactions outside the month and symlinks left behind, as the manifest does', async () => {
    const w = world();
    w.store.symlinksFail = true;
    const { summary, detail, metrics } = await w.run(['transactions', 'categories']);

    // What the manifest and the run's summary say (the CLI and doctor read these) ...
    expect(summary.manifest.datasets.transactions).toMatchObject({ records: 5, duplicatesDropped: 1, outsidePeriod: 1 });
    expect(summary.staleSymlinks.sort()).toEqual(['categories', 'transactions']);
    // ... the event says too, every count present, 0 where there is nothing to count.
    expect(detail).toMatchObject({
      records: { transactions: 5, categories: 2 },
      duplicatesDropped: { transactions: 1, categories: 0 },
      transactionsOutsidePeriod: 1,
      // No date_to reading dropped a next day here (its count has tests of its own): 0, not absent.
      transactionsNextDayDropped: 0,
    });
    expect(detail.staleSymlinks.sort()).toEqual(['categories', 'transactions']);
    // And the metrics, under Stage and Function only (no company, no dataset dimension).
    expect(metrics.sum('ExportDuplicatesDropped')).toBe(1);
    expect(metrics.sum('ExportOutsidePeriod')).toBe(1);
    expect(metrics.sum('ExportStaleSymlinks')).toBe(2);
    expect(metrics.sum('ExportCompleted')).toBe(1);
    for (const m of metrics.recorded) expect(m.dimensions).toEqual({});
    expect(metrics.recorded.find((m) => m.name === 'ExportStaleSymlinks')).toMatchObject({ unit: 'Count' });
    // Counts, dataset names and locations only: nothing of the credential or of a record.
    const text = JSON.stringify([detail, metrics.recorded]);
    expect(text).not.toContain('sbx_');
    expect(text).not.toContain('purchase');
    expect(text).not.toContain(String(SEPTEMBER.publicId));
  });

  it('a clean export reports zeros and no stale symlink; one without transactions reports their outside count as null', async () => {
    const w = world();
    w.store.symlinksFail = true;
    await w.run(['transactions', 'categories']);

    // Categories again, the symlinks writable: every symlink of the period is rewritten, so none is behind.
    w.store.symlinksFail = false;
    const { detail, metrics } = await w.run(['categories']);
    expect(detail).toMatchObject({
      records: { categories: 2 },
      duplicatesDropped: { categories: 0 },
      transactionsOutsidePeriod: null,
      transactionsNextDayDropped: null,
      staleSymlinks: [],
      carriedOver: ['transactions'],
    });
    expect(detail.records).not.toHaveProperty('transactions');
    expect(detail.duplicatesDropped).not.toHaveProperty('transactions');
    // Zeros are written, as ExportedRecords' are: a graph shows each publish as 0, not as a gap.
    expect(
      metrics.recorded.filter((m) => ['ExportDuplicatesDropped', 'ExportOutsidePeriod', 'ExportStaleSymlinks'].includes(m.name)),
    ).toEqual([
      expect.objectContaining({ name: 'ExportDuplicatesDropped', value: 0 }),
      expect.objectContaining({ name: 'ExportOutsidePeriod', value: 0 }),
      expect.objectContaining({ name: 'ExportStaleSymlinks', value: 0 }),
    ]);
  });
});
