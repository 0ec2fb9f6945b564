import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { MemoryRegistryTable } from '../../../src/adapters/local/file-company-registry';
import { MemoryEventPublisher } from '../../../src/adapters/local/memory-event-publisher';
import { apiKeyAuth } from '../../../src/core/accounting-api';
import { CompanyRegistry } from '../../../src/core/companies/company-registry';
import { FORMATS } from '../../../src/core/exports/formats/datasets';
import { manifestKey } from '../../../src/core/exports/formats/layout';
import type { Manifest } from '../../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { registryCurrency } from '../../../src/core/exports/pipeline/company-currency';
import { exportCompanyPeriod } from '../../../src/core/exports/pipeline/export-company-period';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import { decodeJob } from '../../../src/core/exports/pipeline/export-jobs';
import { processExportBatch, type ExportWorkerDeps, type JobResult } from '../../../src/core/exports/pipeline/export-worker';
import { planMonthlyExport } from '../../../src/core/exports/pipeline/monthly-export';
import { onDemandJobs } from '../../../src/core/exports/pipeline/on-demand';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { MemoryExportQueue } from '../../helpers/memory-export-queue';
import { MemoryRunLedger } from '../../helpers/memory-run-ledger';
import { DuckDb } from '../../helpers/duckdb';

/**
 * The deployed pipeline's use cases (planner -> queue -> worker, on-demand jobs, a month in parts)
 * with the company registry as the worker reads it: a service that sends no currency on a
 * transaction (the spec names none), a JPY company registered with `defaultCurrency: JPY`, an EUR
 * one registered without it. The files are read by DuckDB: the amounts must be scaled by the
 * registered currency's digits (JPY 0, KWD 3), not EUR's 2.
 */
describe("the export pipeline labels transactions sent without a currency with the company's registered currency", () => {
  const OCTOBER = parsePeriod('2026-10');
  /** 03:00 in Berlin on 1 November: the default monthly schedule. */
  const SCHEDULED = '2026-11-01T02:00:00.000Z';

  let sandbox: RunningSandbox;
  let root: string;
  let duck: DuckDb;
  let jpy: string;
  let eur: string;
  const keys = new Map<string, string>();

  beforeAll(async () => {
    sandbox = await startSandbox({ demo: false, clock: new ManualClock(Date.UTC(2026, 10, 5, 8, 0)), transactionCurrency: false });
    root = await mkdtemp(join(tmpdir(), 'acctops-registry-currency-'));
    jpy = (await sandbox.admin.createCompany({ currency: 'JPY', country: 'JP' })).publicId;
    eur = (await sandbox.admin.createCompany({ currency: 'EUR', country: 'DE' })).publicId;
    for (const company of [jpy, eur]) {
      keys.set(company, (await sandbox.admin.createApiKey({ companyId: company, permissions: ['full_access'] })).key);
      // Two days, so that a threshold of one transaction splits the month in two parts.
      await sandbox.admin.addTransactions({
        companyId: company,
        transactions: [
          { valueDate: '2026-10-05T10:00:00+02:00', amount: 1234 },
          { valueDate: '2026-10-06T10:00:00+02:00', amount: -5 },
        ],
      });
    }
    duck = await DuckDb.open();
  });

  afterAll(async () => {
    duck?.close();
    await sandbox?.stop();
    if (root) await rm(root, { recursive: true, force: true });
    forgetRegisteredSecrets();
  });

  let stores = 0;
  async function pipeline(options: { split?: number } = {}) {
    const table = new MemoryRegistryTable();
    const registry = new CompanyRegistry(table, { defaultFormats: FORMATS });
    await registry.add({ companyId: jpy, defaultCurrency: 'jpy' }, Date.parse(SCHEDULED));
    await registry.add({ companyId: eur }, Date.parse(SCHEDULED));
    const store = new DirObjectStore(join(root, `s${++stores}`));
    const queue = new MemoryExportQueue();
    const ledger = new MemoryRunLedger();
    const events = new MemoryEventPublisher();
    const logger = new MemoryLogger();
    const metrics = new MemoryMetrics();
    const clock = ManualClock.autoAdvancing(Date.parse(SCHEDULED));
    const worker: ExportWorkerDeps = {
      exporter: { store, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl, companyCurrency: registryCurrency((id) => table.getItem(id)) },
      credentials: (_source, companyId) => apiKeyAuth(keys.get(companyId!)!),
      queue,
      ledger,
      events,
      clock,
      logger,
      metrics,
      maxReceiveCount: 3,
      ...(options.split ? { split: { maxTransactionsPerPart: options.split } } : {}),
    };
    const results: { type: string; result: JobResult }[] = [];
    /** Every queued message once, oldest first, until none is left (each job here succeeds or fails for good). */
    const drain = async (before?: () => Promise<void>) => {
      for (let round = 0; round < 5; round++) {
        const messages = queue.drain();
        if (messages.length === 0) return;
        if (before) await before();
        for (const [i, m] of messages.entries()) {
          const report = await processExportBatch(worker, [{ messageId: `m${round}-${i}`, body: m.body, receiveCount: 1 }]);
          results.push({ type: decodeJob(m.body).type, result: report.results[0]!.result });
        }
      }
      throw new Error('the queue did not drain');
    };
    const manifest = async (companyId: string) =>
      JSON.parse(await readFile(join(store.root, manifestKey(companyId, OCTOBER)), 'utf8')) as Manifest;
    const file = async (companyId: string, format: 'csv' | 'parquet') =>
      (await manifest(companyId)).objects
        .filter((o) => o.dataset === 'transactions' && o.format === format)
        .map((o) => join(store.root, o.key));
    return { registry, table, store, queue, events, logger, worker, results, drain, manifest, file, clock };
  }

  const rows = (sql: string) => duck.rows(sql);
  const list = (files: string[]) => `[${files.map((f) => `'${f}'`).join(', ')}]`;
  const csv = async (files: string[]) =>
    rows(
      `SELECT amount, amount_minor, currency FROM read_csv(${list(files)}, header = true, all_varchar = true) ORDER BY amount_minor::BIGINT DESC`,
    );
  const parquet = async (files: string[]) =>
    rows(
      `SELECT amount::VARCHAR AS amount, amount_minor::VARCHAR AS amount_minor, currency FROM read_parquet(${list(files)}) ORDER BY amount_minor DESC`,
    );
  const totals = (m: Manifest) => m.datasets.transactions!.totals.map((t) => [t.currency, t.cashflowType, t.amount, t.amountMinor]);

  it('monthly: the JPY company is JPY in CSV (0 digits), Parquet and the totals; the company without one stays EUR', async () => {
    const p = await pipeline();
    const plan = await planMonthlyExport(
      { ledger: p.worker.ledger, queue: p.queue, events: p.events, clock: p.clock, logger: p.logger, metrics: new MemoryMetrics() },
      { scheduledAt: SCHEDULED, executionId: 'exec-currency', timeZone: 'Europe/Berlin', registry: p.registry, formats: FORMATS },
    );
    expect(plan).toMatchObject({ period: '2026-10', companies: 2 });
    await p.drain();
    expect(p.results).toEqual([
      { type: 'export', result: 'completed' },
      { type: 'export', result: 'completed' },
    ]);

    expect(await csv(await p.file(jpy, 'csv'))).toEqual([
      { amount: '1234', amount_minor: '1234', currency: 'JPY' },
      { amount: '-5', amount_minor: '-5', currency: 'JPY' },
    ]);
    expect(await parquet(await p.file(jpy, 'parquet'))).toEqual([
      { amount: '1234.0000', amount_minor: '1234', currency: 'JPY' },
      { amount: '-5.0000', amount_minor: '-5', currency: 'JPY' },
    ]);
    expect(totals(await p.manifest(jpy))).toEqual([
      ['JPY', 'EXPENSE', '-5', '-5'],
      ['JPY', 'INCOME', '1234', '1234'],
    ]);
    // Registered without one: EUR, as before the field existed.
    expect(await csv(await p.file(eur, 'csv'))).toEqual([
      { amount: '12.34', amount_minor: '1234', currency: 'EUR' },
      { amount: '-0.05', amount_minor: '-5', currency: 'EUR' },
    ]);
    // Still counted and said, with the currency it took.
    const warned = p.logger.entries().filter((e) => e.message === 'records without a currency, labelled with the default currency');
    expect(warned.map((e) => [e.companyId, e.currency, e.records]).sort()).toEqual(
      [
        [eur, 'EUR', 2],
        [jpy, 'JPY', 2],
      ].sort(),
    );
    expect(String(warned[0]!.hint)).toContain('companies add --company <id> --default-currency <ISO code>');
  });

  it('on demand: a currency registered since applies from the next export on', async () => {
    const p = await pipeline();
    await p.queue.enqueue(
      onDemandJobs({ companyId: jpy, period: '2026-10', formats: ['csv'] }, { kind: 'on_demand', requestId: 'r-1', via: 'event' }),
    );
    await p.drain();
    expect(totals(await p.manifest(jpy))).toEqual([
      ['JPY', 'EXPENSE', '-5', '-5'],
      ['JPY', 'INCOME', '1234', '1234'],
    ]);
    await p.registry.add({ companyId: jpy, defaultCurrency: 'GBP' }, Date.parse(SCHEDULED));
    await p.queue.enqueue(
      onDemandJobs({ companyId: jpy, period: '2026-10', formats: ['csv'] }, { kind: 'on_demand', requestId: 'r-2', via: 'webhook' }),
    );
    await p.drain();
    expect(await csv(await p.file(jpy, 'csv'))).toEqual([
      { amount: '12.34', amount_minor: '1234', currency: 'GBP' },
      { amount: '-0.05', amount_minor: '-5', currency: 'GBP' },
    ]);
    expect(p.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.completed)).toHaveLength(2);
  });

  it('a month in parts: every part takes the currency of the split, decided when it was planned (KWD, 3 digits)', async () => {
    const p = await pipeline({ split: 1 });
    await p.registry.add({ companyId: jpy, defaultCurrency: 'KWD' }, Date.parse(SCHEDULED));
    await p.queue.enqueue(
      onDemandJobs(
        { companyId: jpy, period: '2026-10', formats: ['csv', 'parquet'] },
        { kind: 'on_demand', requestId: 'r-3', via: 'event' },
      ),
    );
    // The parts run after the registry changed: they keep the split's KWD, so one month never has two currencies.
    await p.drain(async () => {
      if (p.results.length > 0) await p.registry.add({ companyId: jpy, defaultCurrency: 'JPY' }, Date.parse(SCHEDULED));
    });
    expect(p.results.map((r) => `${r.type}:${r.result}`)).toEqual(['export:split', 'export_part:completed', 'export_part:completed']);
    expect((await p.registry.get(jpy))?.defaultCurrency).toBe('JPY');
    const manifest = await p.manifest(jpy);
    expect(manifest.source).toMatchObject({ parts: [expect.anything(), expect.anything()] });
    expect(await csv(await p.file(jpy, 'csv'))).toEqual([
      { amount: '1.234', amount_minor: '1234', currency: 'KWD' },
      { amount: '-0.005', amount_minor: '-5', currency: 'KWD' },
    ]);
    expect(await parquet(await p.file(jpy, 'parquet'))).toEqual([
      { amount: '1.2340', amount_minor: '1234', currency: 'KWD' },
      { amount: '-0.0050', amount_minor: '-5', currency: 'KWD' },
    ]);
    expect(totals(manifest)).toEqual([
      ['KWD', 'EXPENSE', '-0.005', '-5'],
      ['KWD', 'INCOME', '1.234', '1234'],
    ]);
  });

  it('an entry that fails its schema fails the export for good, naming the field, rather than guessing EUR', async () => {
    const p = await pipeline();
    p.table.items[jpy] = { companyId: jpy, formats: ['csv'], defaultCurrency: 'yen' };
    await p.queue.enqueue(
      onDemandJobs({ companyId: jpy, period: '2026-10', formats: ['csv'] }, { kind: 'on_demand', requestId: 'r-4', via: 'event' }),
    );
    await p.drain();
    expect(p.results).toEqual([{ type: 'export', result: 'failed' }]);
    const failed = p.events.events.filter((e) => e.type === EXPORT_EVENT_TYPES.failed).map((e) => e.detail);
    expect(failed).toEqual([expect.objectContaining({ companyId: jpy, retryable: false, errorClass: 'ValidationError' })]);
    expect(JSON.stringify(p.logger.lines)).toContain('defaultCurrency');
    expect(JSON.stringify(p.logger.lines)).not.toContain('yen');
    await expect(readFile(join(p.store.root, manifestKey(jpy, OCTOBER)))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a currency fixed for the run (the CLI: --default-currency) wins over the registered one', async () => {
    const p = await pipeline();
    const outcome = await exportCompanyPeriod(
      { ...p.worker.exporter, exporter: { defaultCurrency: 'CHF' }, clock: p.clock, logger: p.logger },
      {
        companyId: jpy,
        period: '2026-10',
        credentials: apiKeyAuth(keys.get(jpy)!),
        source: { kind: 'apiKey' },
        trigger: { kind: 'on_demand', requestId: 'cli', via: 'cli' },
        formats: ['csv'],
      },
    );
    expect(outcome.status).toBe('completed');
    expect(outcome.status === 'completed' && outcome.summary.defaultCurrency).toBe('CHF');
    expect((await csv(await p.file(jpy, 'csv'))).map((r) => r.currency)).toEqual(['CHF', 'CHF']);
  });
});
