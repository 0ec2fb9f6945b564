import { gunzipSync } from 'node:zlib';
import { parquetReadObjects } from 'hyparquet';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { taxReportSchema, transactionSchema } from '../../../src/core/accounting-api';
import { formatMinorUnits, parseMinorUnits } from '../../../src/core/accounting-api/money';
import { ConcurrentExportError, ObjectStoreError, PeriodExportError } from '../../../src/core/exports/formats/period-errors';
import { manifestKey, periodPrefix, symlinkKey } from '../../../src/core/exports/formats/layout';
import { readManifest, type Manifest } from '../../../src/core/exports/formats/manifest';
import type { ObjectStore, PutConditions, PutOptions } from '../../../src/core/exports/formats/object-store';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { parseTaxReportFieldList } from '../../../src/core/exports/formats/tax-report-fields';
import { PeriodExporter, type PeriodExportRequest } from '../../../src/core/exports/formats/period-exporter';
import { collectGarbage } from '../../../src/core/exports/formats/publish';
import { staleSymlinks } from '../../../src/core/exports/formats/symlinks';
import type { ExportTaxReport, ExportTransaction } from '../../../src/core/exports/formats/datasets';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import {
  asAsync,
  CATEGORIES,
  COMPANY,
  failingAfter,
  listKeys,
  PARQUET_DECOMPRESSORS,
  sha256Of,
  snapshot,
  taxReport,
  transaction,
  transactions,
} from '../../helpers/export-fixtures';

const PERIOD = parsePeriod('2026-10');
const PREFIX = periodPrefix(COMPANY, PERIOD);
const MANIFEST = manifestKey(COMPANY, PERIOD);
const SYMLINK = symlinkKey(COMPANY, PERIOD, 'transactions');

/** Wraps a store to inject failures and to run code at chosen moments. */
class FaultyStore implements ObjectStore {
  failStreamAfter: ((key: string) => number | undefined) | undefined;
  failPut: ((key: string) => boolean) | undefined;
  beforePut: ((key: string) => Promise<void>) | undefined;
  /** Every key putObject was called with, in order. */
  readonly puts: string[] = [];

  constructor(readonly inner: DirObjectStore) {}

  putStream(key: string, body: Readable, options?: PutOptions): Promise<void> {
    const limit = this.failStreamAfter?.(key);
    if (limit === undefined) return this.inner.putStream(key, body, options);
    let seen = 0;
    const tripwire = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        seen += chunk.length;
        callback(seen > limit ? new Error(`injected failure after ${limit} bytes of ${key}`) : null, chunk);
      },
    });
    body.pipe(tripwire);
    return this.inner.putStream(key, tripwire, options);
  }

  async putObject(key: string, body: Uint8Array | string, options?: PutOptions & PutConditions): Promise<void> {
    this.puts.push(key);
    const hook = this.beforePut;
    if (hook) {
      this.beforePut = undefined;
      await hook(key);
    }
    if (this.failPut?.(key)) throw new ObjectStoreError('put', key, new Error('injected failure'));
    return this.inner.putObject(key, body, options);
  }

  get = (key: string) => this.inner.get(key);
  head = (key: string) => this.inner.head(key);
  list = (prefix: string) => this.inner.list(prefix);
  delete = (keys: readonly string[]) => this.inner.delete(keys);
  url = (key: string) => this.inner.url(key);
}

const BASE_URL = 'https://partner:hunter2-not-logged@api.example.test/api/v1?token=abc123secret#frag';

function request(overrides: Partial<PeriodExportRequest> = {}, count = 40): PeriodExportRequest {
  return {
    company: COMPANY,
    period: '2026-10',
    sources: {
      categories: asAsync(CATEGORIES),
      taxReports: asAsync([taxReport(0), taxReport(1, '-10.05'), taxReport(2, 0)]),
      transactions: asAsync(transactions(count)),
    },
    formats: ['jsonl', 'csv', 'parquet'],
    sourceBaseUrl: BASE_URL,
    ...overrides,
  };
}

describe('PeriodExporter', () => {
  let root: string;
  let dir: DirObjectStore;
  let store: FaultyStore;
  let clock: ManualClock;
  let logger: MemoryLogger;
  const exporter = (runId: string, target: ObjectStore = store) =>
    new PeriodExporter({ store: target, clock, logger, toolVersion: '0.1.0', runIds: () => runId, parquetRowGroupRows: 16 });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-exporter-'));
    dir = new DirObjectStore(root);
    store = new FaultyStore(dir);
    clock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0));
    logger = new MemoryLogger();
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('publishes a complete period: layout, manifest with checksums and exact totals, Athena symlink', async () => {
    const summary = await exporter('run-1').run(request());

    const data = ['categories', 'tax_reports', 'transactions'].flatMap((d) =>
      ['csv', 'jsonl.gz', 'parquet'].map((ext) => `${PREFIX}${d}/run=run-1/part-00000.${ext}`),
    );
    const links = ['categories', 'tax_reports', 'transactions'].map((d) => `${PREFIX}${d}/_symlink/symlink.txt`);
    expect(await listKeys(dir)).toEqual([MANIFEST, ...data, ...links].sort());

    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest).toMatchObject({
      schemaVersion: 1,
      company: COMPANY,
      period: '2026-10',
      runId: 'run-1',
      generatedAt: '2026-11-01T02:00:00.000Z',
      tool: { name: 'acctops', version: '0.1.0' },
      source: { baseUrl: 'https://api.example.test/api/v1', query: { dateFrom: '2026-10-01', dateTo: '2026-10-31' } },
    });
    expect(manifest.objects.map((o) => o.key)).toEqual(data.sort());
    for (const object of manifest.objects) {
      expect(object.sha256).toBe(await sha256Of(dir, object.key));
      expect(object.bytes).toBe((await dir.head(object.key))!.size);
    }
    expect(manifest.datasets.transactions?.records).toBe(40);
    expect(manifest.objects.filter((o) => o.dataset === 'tax_reports').map((o) => o.records)).toEqual([3, 3, 3]);
    expect(manifest.datasets.categories).toMatchObject({ runId: 'run-1', records: 2, totals: [] });
    expect(manifest.datasets.tax_reports?.totals).toEqual([
      { currency: 'EUR', cashflowType: null, records: 3, amount: '1224.51', amountMinor: '122451' },
    ]);

    // The Athena symlink lists exactly the new run's Parquet object.
    const parquet = `${PREFIX}transactions/run=run-1/part-00000.parquet`;
    expect(Buffer.from((await dir.get(SYMLINK))!).toString()).toBe(`${dir.url(parquet)}\n`);
    expect(manifest.symlinks.find((s) => s.dataset === 'transactions')).toMatchObject({ key: SYMLINK, targets: [parquet] });

    expect(summary).toMatchObject({
      runId: 'run-1',
      period: '2026-10',
      manifestKey: MANIFEST,
      manifestUrl: dir.url(MANIFEST),
      carriedOver: [],
    });
    expect(summary.datasets.transactions?.objects).toHaveLength(3);

    // Nothing secret from the base URL reaches the manifest or the logs.
    const manifestText = Buffer.from((await dir.get(MANIFEST))!).toString();
    for (const secret of ['hunter2-not-logged', 'abc123secret']) {
      expect(manifestText).not.toContain(secret);
      expect(logger.lines.join('\n')).not.toContain(secret);
    }
    expect(logger.entries().some((e) => e.message === 'period export published' && e.runId === 'run-1')).toBe(true);
  });

  it('reads a source that hands over pages a page at a time, to the same bytes as item by item', async () => {
    const items = [...transactions(40)];
    const paged = {
      async *pages() {
        for (let i = 0; i < items.length; i += 16) yield { items: items.slice(i, i + 16) };
      },
      [Symbol.asyncIterator](): AsyncIterator<ExportTransaction> {
        throw new Error('read item by item although pages were offered');
      },
    };
    await exporter('run-1').run(request({ formats: ['jsonl', 'csv', 'parquet'], sources: { ...request().sources, transactions: paged } }));
    const byPage = (await readManifest(dir, MANIFEST))!.objects.filter((o) => o.dataset === 'transactions');
    await exporter('run-2').run(request({ sources: { ...request().sources, transactions: asAsync(items) } }));
    const byItem = (await readManifest(dir, MANIFEST))!.objects.filter((o) => o.dataset === 'transactions');
    expect(byPage.map((o) => [o.format, o.sha256, o.records])).toEqual(byItem.map((o) => [o.format, o.sha256, o.records]));
    expect(byPage.find((o) => o.format === 'csv')?.records).toBe(40);
  });

  it('warns of transactions whose category it cannot name where a format has category_name, and not for JSONL alone', async () => {
    const unknown = 'dead0000-0000-4000-8000-000000000000';
    const withUnknown = () => ({
      ...request().sources,
      transactions: asAsync([...transactions(4), transaction(4, { category: unknown }), transaction(5, { category: unknown })]),
    });
    const warnings = () => logger.entries().filter((e) => String(e.message).startsWith('transactions reference unknown categories'));

    await exporter('run-1').run(request({ sources: withUnknown(), formats: ['csv'] }));
    expect(warnings().map((e) => [e.level, e.records])).toEqual([['warn', 2]]);
    const csv = Buffer.from((await dir.get(`${PREFIX}transactions/run=run-1/part-00000.csv`))!).toString('utf8');
    expect(csv.split('\r\n').filter((line) => line.includes(unknown))).toHaveLength(2);

    logger = new MemoryLogger();
    await exporter('run-2').run(request({ sources: withUnknown(), formats: ['jsonl'], replaceFormats: true }));
    expect(warnings()).toEqual([]);
  });

  it('counts the repeats a paged source left out, in the summary and the manifest, per dataset, and warns once a dataset', async () => {
    const items = [...transactions(40)];
    // The client's pages: what they hold, and how many repeats each left out (Page.duplicatesDropped).
    const paged = <T>(pages: { items: T[]; duplicatesDropped: number }[]) => ({
      pages: async function* () {
        yield* pages;
      },
      [Symbol.asyncIterator](): AsyncIterator<T> {
        throw new Error('read item by item although pages were offered');
      },
    });
    const sources = {
      ...request().sources,
      transactions: paged([
        { items: items.slice(0, 16), duplicatesDropped: 0 },
        { items: items.slice(16, 32), duplicatesDropped: 1 },
        { items: items.slice(32), duplicatesDropped: 2 },
      ]),
      categories: paged([{ items: CATEGORIES, duplicatesDropped: 0 }]),
    };
    const summary = await exporter('run-1').run(request({ sources }));
    expect(summary.datasets.transactions).toMatchObject({ records: 40, duplicatesDropped: 3 });
    expect(summary.datasets.categories).not.toHaveProperty('duplicatesDropped');
    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest.datasets.transactions).toMatchObject({ records: 40, duplicatesDropped: 3 });
    expect(manifest.datasets.categories).not.toHaveProperty('duplicatesDropped');
    expect(manifest.datasets.tax_reports).not.toHaveProperty('duplicatesDropped');
    const warned = logger.entries().filter((e) => String(e.message).startsWith('records the service sent again'));
    expect(warned.map((e) => [e.level, e.dataset, e.records])).toEqual([['warn', 'transactions', 3]]);

    // A later run of other datasets carries the transactions over with the count of the run that wrote them.
    await exporter('run-2').run(request({ datasets: ['categories'] }));
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions).toMatchObject({ runId: 'run-1', duplicatesDropped: 3 });
    // A run that dropped nothing says nothing.
    const clean = await exporter('run-3').run(request({ datasets: ['transactions'] }));
    expect(clean.datasets.transactions).not.toHaveProperty('duplicatesDropped');
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions).not.toHaveProperty('duplicatesDropped');
  });

  it('keeps transactions the service returned dated outside the month, and counts them in the summary and the manifest', async () => {
    const items = [
      ...transactions(5),
      transaction(5, { valueDate: '2026-11-01T00:30:00+01:00', amount: -300 }),
      transaction(6, { valueDate: '2026-09-30T23:59:59+00:00', amount: -200 }),
      // October as written, though November in UTC: inside.
      transaction(7, { valueDate: '2026-10-31T23:30:00-02:00', amount: -100 }),
    ];
    const summary = await exporter('run-1').run(request({ sources: { ...request().sources, transactions: asAsync(items) } }));
    // Kept: in the records, the files and the totals.
    expect(summary.datasets.transactions).toMatchObject({ records: 8, outsidePeriod: 2 });
    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest.datasets.transactions).toMatchObject({ records: 8, outsidePeriod: 2 });
    expect(manifest.datasets.transactions!.totals.reduce((n, t) => n + t.records, 0)).toBe(8);
    expect(manifest.datasets.tax_reports).not.toHaveProperty('outsidePeriod');
    const warned = logger.entries().filter((e) => String(e.message).startsWith('transactions dated outside'));
    expect(warned.map((e) => [e.level, e.records, e.dateFrom, e.dateTo])).toEqual([['warn', 2, '2026-10-01', '2026-10-31']]);

    const inside = await exporter('run-2').run(request());
    expect(inside.datasets.transactions).not.toHaveProperty('outsidePeriod');
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions).not.toHaveProperty('outsidePeriod');
  });

  it("records how the source read date_to in the manifest's transactions, carries it over with them, and reads manifests without it", async () => {
    const reading = { setting: 'detect', read: 'exclusive', lastDayRecords: 7, lastDayRepeats: 2 } as const;
    let asked = 0;
    const summary = await exporter('run-1').run(
      request({
        sources: {
          ...request().sources,
          transactionsDateTo: () => {
            asked += 1;
            return reading;
          },
        },
      }),
    );
    expect(asked).toBe(1);
    expect(summary.datasets.transactions!.dateTo).toEqual(reading);
    expect(summary.datasets.categories).not.toHaveProperty('dateTo');
    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest.datasets.transactions!.dateTo).toEqual(reading);
    expect(manifest.datasets.tax_reports).not.toHaveProperty('dateTo');

    // It describes how the transactions were read: a run of other datasets keeps it with them.
    await exporter('run-2').run(request({ datasets: ['categories'] }));
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions).toMatchObject({ runId: 'run-1', dateTo: reading });
    // A source that does not say (a plain iterable) records nothing.
    const plain = await exporter('run-3').run(request({ datasets: ['transactions'] }));
    expect(plain.datasets.transactions).not.toHaveProperty('dateTo');
    const written = (await readManifest(dir, MANIFEST))!;
    expect(written.datasets.transactions).not.toHaveProperty('dateTo');

    // A manifest written before the field (none) is read as before; one with a reading no version knows is refused.
    const json = JSON.parse(Buffer.from((await dir.get(MANIFEST))!).toString('utf8')) as Manifest;
    await dir.putObject(MANIFEST, JSON.stringify(json));
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions!.records).toBe(40);
    json.datasets.transactions!.dateTo = { ...reading, read: 'sometimes' as 'exclusive' };
    await dir.putObject(MANIFEST, JSON.stringify(json));
    await expect(readManifest(dir, MANIFEST)).rejects.toThrow(/datasets\.transactions\.dateTo\.read/);
  });

  it("writes the API's text of a record to JSONL when the source has it, and logs how many it had to serialise", async () => {
    const items = [...transactions(4)].map((item, i) => {
      if (i % 2 === 1) return item;
      // The API's own spelling of this record, which JSON.stringify of the parsed object would not give.
      const text = Buffer.from(JSON.stringify(item.raw).replace('{', '{ "spelt" : 1.50 ,'));
      return { ...item, json: { bytes: text, start: 0, end: text.length } };
    });
    await exporter('run-1').run(request({ formats: ['jsonl'], sources: { ...request().sources, transactions: asAsync(items) } }));
    const key = (await readManifest(dir, MANIFEST))!.objects.find((o) => o.dataset === 'transactions')!.key;
    const lines = gunzipSync(Buffer.from((await dir.get(key))!))
      .toString('utf8')
      .trimEnd()
      .split('\n');
    expect(lines.map((l) => l.startsWith('{ "spelt" : 1.50 ,'))).toEqual([true, false, true, false]);
    expect(lines[1]).toBe(JSON.stringify(items[1]!.raw));
    const logged = logger.entries().filter((e) => e.message === 'records serialised for JSONL');
    expect(logged.map((e) => [e.dataset, e.records])).toContainEqual(['transactions', 2]);
  });

  it('warns with a count when tax reports carry no date to place them by (kept in every month)', async () => {
    // The period and the creation time under names the spec does not show: nothing places the report.
    const raw = { pk: '3a3a3a3a-0000-4000-8000-00000000000a', startDate: '2026-05-01', endDate: '2026-05-31', created: '2026-06-10' };
    const undated: ExportTaxReport = { raw, parsed: taxReportSchema.parse(raw) };
    const reports = [taxReport(0), undated];
    const summary = await exporter('run-1').run(
      request({ sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['jsonl'] }),
    );
    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest.datasets.tax_reports!.records).toBe(2);
    // The summary says so too, for the CLI's report.
    expect(summary.datasets.tax_reports).toMatchObject({ records: 2, undated: 1 });
    const warned = logger.entries().filter((e) => e.message === 'records without a date to place them in a month, kept in every month');
    expect(warned.map((e) => [e.level, e.dataset, e.records])).toEqual([['warn', 'tax_reports', 1]]);
  });

  it('writes a tax report whose currency it cannot read without one, never the default EUR, and warns with a count', async () => {
    // The amount under a name the operator mapped, the currency under one nobody did (the minimal dialect's).
    const raw = { pk: '3a3a3a3a-0000-4000-8000-00000000000c', endDate: '2026-10-31', totalAmount: '12.34', currencyCode: 'GBP' };
    const eur = {
      pk: '3a3a3a3a-0000-4000-8000-00000000000b',
      endDate: '2026-10-31',
      totalAmount: 100,
      currency: 'EUR',
      currencyCode: 'EUR',
    };
    const reports = [eur, raw].map((r) => ({ raw: r, parsed: taxReportSchema.parse(r) }) as ExportTaxReport);
    const mapped = new PeriodExporter({
      store,
      clock,
      logger,
      toolVersion: '0.1.0',
      runIds: () => 'run-1',
      taxReportFields: { periodEnd: 'endDate', amountDue: 'totalAmount' },
    });
    const summary = await mapped.run(
      request({ sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['csv', 'parquet'] }),
    );
    expect(summary.datasets.tax_reports).toMatchObject({ records: 2, withoutCurrency: 1 });
    const manifest = (await readManifest(dir, MANIFEST))!;
    // The EUR report's total only: the other's amount is in no currency anyone can name.
    expect(manifest.datasets.tax_reports!.totals).toEqual([
      { currency: 'EUR', cashflowType: null, records: 1, amount: '1.00', amountMinor: '100' },
    ]);
    const csv = Buffer.from((await dir.get(manifest.objects.find((o) => o.format === 'csv')!.key))!)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimEnd()
      .split('\r\n')
      .map((line) => line.split(','));
    const column = (name: string) => csv.slice(1).map((row) => row[csv[0]!.indexOf(name)]);
    expect(column('currency')).toEqual(['EUR', '']);
    expect(column('amount_due')).toEqual(['1.00', '']);
    expect(column('amount_due_minor')).toEqual(['100', '1234']);
    const file = new Uint8Array((await dir.get(manifest.objects.find((o) => o.format === 'parquet')!.key))!).buffer;
    const rows = await parquetReadObjects({
      file,
      columns: ['currency', 'amount_due', 'amount_due_minor'],
      compressors: PARQUET_DECOMPRESSORS,
    });
    expect(rows.map((r) => [r.currency, r.amount_due !== null, r.amount_due_minor])).toEqual([
      // hyparquet reads DECIMAL as a float: whether it is there is what counts here.
      ['EUR', true, 100n],
      [null, false, 1234n],
    ]);
    const warned = logger.entries().filter((e) => String(e.message).startsWith('records with an amount but no currency'));
    expect(warned.map((e) => [e.level, e.dataset, e.records])).toEqual([['warn', 'tax_reports', 1]]);

    // Named, the currency is the service's own.
    await new PeriodExporter({
      store,
      clock,
      logger,
      toolVersion: '0.1.0',
      runIds: () => 'run-2',
      taxReportFields: { periodEnd: 'endDate', amountDue: 'totalAmount', currency: 'currencyCode' },
    }).run(request({ sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['csv'], replaceFormats: true }));
    expect((await readManifest(dir, MANIFEST))!.datasets.tax_reports!.totals.map((t) => [t.currency, t.amount])).toEqual([
      ['EUR', '1.00'],
      ['GBP', '12.34'],
    ]);
  });

  it('labels transactions sent without a currency with the default, counts them and warns once; --default-currency names another', async () => {
    // The spec names no currency field of a transaction: a service that follows it alone sends none.
    const noCurrency = (i: number, amount: number) => {
      const raw = { ...(transaction(i, { amount }).raw as Record<string, unknown>) };
      delete raw.currency;
      return { raw, parsed: transactionSchema.parse(raw) } as ExportTransaction;
    };
    const items = [noCurrency(0, -4999), transaction(1, { amount: 700, currency: 'CHF' }), noCurrency(2, 1250)];
    const only = (replaceFormats = false) =>
      request({ sources: { transactions: asAsync(items) }, datasets: ['transactions'], formats: ['csv'], replaceFormats });
    const summary = await exporter('run-1').run(only());
    expect(summary.datasets.transactions).toMatchObject({ records: 3, withDefaultCurrency: 2 });
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions!.totals.map((t) => [t.currency, t.cashflowType, t.amount])).toEqual([
      ['CHF', 'INCOME', '7.00'],
      ['EUR', 'EXPENSE', '-49.99'],
      ['EUR', 'INCOME', '12.50'],
    ]);
    const warned = logger.entries().filter((e) => String(e.message).startsWith('records without a currency'));
    expect(warned.map((e) => [e.level, e.dataset, e.records, e.currency])).toEqual([['warn', 'transactions', 2, 'EUR']]);
    expect(String(warned[0]!.hint)).toContain('--default-currency');

    await new PeriodExporter({ store, clock, logger, toolVersion: '0.1.0', runIds: () => 'run-2', defaultCurrency: 'GBP' }).run(only(true));
    expect((await readManifest(dir, MANIFEST))!.datasets.transactions!.totals.map((t) => [t.currency, t.cashflowType, t.amount])).toEqual([
      ['CHF', 'INCOME', '7.00'],
      ['GBP', 'EXPENSE', '-49.99'],
      ['GBP', 'INCOME', '12.50'],
    ]);

    // Every transaction with its own currency: nothing to count, nothing said.
    const full = await exporter('run-3').run(request({ datasets: ['transactions'], formats: ['csv'], replaceFormats: true }));
    expect(full.datasets.transactions).not.toHaveProperty('withDefaultCurrency');
    expect(logger.entries().filter((e) => String(e.message).startsWith('records without a currency'))).toHaveLength(2);
  });

  it("with the service's names for the tax-report fields, places each report by its own period and fills every column", async () => {
    const spelt = (pk: string, month: string, amount: string) => {
      const raw = {
        pk,
        reportType: 'vat_return',
        startDate: `2026-${month}-01`,
        endDate: `2026-${month}-28`,
        state: 'submitted',
        totalAmount: amount,
        currencyCode: 'EUR',
        created: `2026-${month}-28T10:00:00+02:00`,
        // A field that happens to carry one of our names holds something else here: it stays in `extra`.
        periodEnd: 'not ours',
      };
      return { raw, parsed: taxReportSchema.parse(raw) } as ExportTaxReport;
    };
    const reports = [
      spelt('3a3a3a3a-0000-4000-8000-00000000000a', '09', '12.50'),
      spelt('3a3a3a3a-0000-4000-8000-00000000000b', '10', '-0.05'),
    ];
    const names = {
      type: 'reportType',
      periodStart: 'startDate',
      periodEnd: 'endDate',
      status: 'state',
      amountDue: 'totalAmount',
      currency: 'currencyCode',
      createdAt: 'created',
    } as const;
    const mapped = new PeriodExporter({ store, clock, logger, toolVersion: '0.1.0', runIds: () => 'run-1', taxReportFields: names });
    const summary = await mapped.run(request({ sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['csv'] }));
    expect(summary.datasets.tax_reports).not.toHaveProperty('undated');
    const manifest = (await readManifest(dir, MANIFEST))!;
    // October's folder holds the report whose period ends in October, not both.
    expect(manifest.datasets.tax_reports!.records).toBe(1);
    expect(manifest.datasets.tax_reports!.totals).toEqual([expect.objectContaining({ currency: 'EUR', amount: '-0.05' })]);
    const csv = Buffer.from((await dir.get(manifest.objects.find((o) => o.format === 'csv')!.key))!)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimEnd()
      .split('\r\n');
    const [header, row] = [csv[0]!.split(','), csv[1]!];
    expect(header).toEqual([
      'pk',
      'type',
      'period_start',
      'period_end',
      'status',
      'amount_due',
      'amount_due_minor',
      'currency',
      'created_at',
      'created_at_utc',
      'created_at_offset_minutes',
      'extra',
    ]);
    expect(row).toBe(
      '3a3a3a3a-0000-4000-8000-00000000000b,VAT_RETURN,2026-10-01,2026-10-28,submitted,-0.05,-5,EUR,2026-10-28T10:00:00+02:00,2026-10-28T08:00:00.000Z,120,"{""periodEnd"":""not ours""}"',
    );
    expect(logger.entries().filter((e) => String(e.message).startsWith('records without a date'))).toEqual([]);
  });

  it('reads an empty string under a configured name as no value: the next date places the report', async () => {
    const raw = { pk: '3a3a3a3a-0000-4000-8000-00000000000d', endDate: '', startDate: '2026-10-01' };
    const reports = [{ raw, parsed: taxReportSchema.parse(raw) } as ExportTaxReport];
    const mapped = new PeriodExporter({
      store,
      clock,
      logger,
      toolVersion: '0.1.0',
      taxReportFields: { periodEnd: 'endDate', periodStart: 'startDate' },
    });
    await mapped.run(request({ sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['jsonl'] }));
    expect((await readManifest(dir, MANIFEST))!.datasets.tax_reports!.records).toBe(1);
    await new PeriodExporter({
      store,
      clock,
      logger,
      toolVersion: '0.1.0',
      taxReportFields: { periodEnd: 'endDate', periodStart: 'startDate' },
    }).run(request({ period: '2026-09', sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['jsonl'] }));
    const september = (await readManifest(dir, manifestKey(COMPANY, parsePeriod('2026-09'))))!;
    expect(september.datasets.tax_reports!.records).toBe(0);
  });

  it('reads a dotted name inside a nested object (--tax-report-fields periodStart=period.from,periodEnd=period.to): each report in its own month', async () => {
    const nested = (i: number, from: string, to: string) => {
      const raw = { pk: `3a3a3a3a-0000-4000-8000-00000000010${i}`, period: { from, to } };
      return { raw, parsed: taxReportSchema.parse(raw) } as ExportTaxReport;
    };
    const reports = [nested(1, '2026-09-01', '2026-09-30'), nested(2, '2026-10-01', '2026-10-31'), nested(3, '2026-10-01', '2026-10-31')];
    const names = parseTaxReportFieldList('periodStart=period.from,periodEnd=period.to');
    for (const period of ['2026-09', '2026-10']) {
      await new PeriodExporter({ store, clock, logger, toolVersion: '0.1.0', taxReportFields: names }).run(
        request({ period, sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['csv'] }),
      );
    }
    const records = async (period: string) =>
      (await readManifest(dir, manifestKey(COMPANY, parsePeriod(period))))!.datasets.tax_reports!.records;
    expect(await records('2026-09')).toBe(1);
    expect(await records('2026-10')).toBe(2);
  });

  it("names the service's field when a value under a configured name is malformed", async () => {
    const raw = { pk: '3a3a3a3a-0000-4000-8000-00000000000c', endDate: '28.10.2026' };
    const reports = [{ raw, parsed: taxReportSchema.parse(raw) } as ExportTaxReport];
    const mapped = new PeriodExporter({ store, clock, logger, toolVersion: '0.1.0', taxReportFields: { periodEnd: 'endDate' } });
    const error = await mapped
      .run(request({ sources: { taxReports: asAsync(reports) }, datasets: ['tax_reports'], formats: ['csv'] }))
      .catch((e: unknown) => e);
    const cause = (error as Error).cause as ValidationError;
    expect(cause).toBeInstanceOf(ValidationError);
    expect(cause.issues).toEqual([{ path: 'endDate', message: 'expected a date YYYY-MM-DD (configured as periodEnd)' }]);
    expect(await readManifest(dir, MANIFEST)).toBeUndefined();
  });

  it('totals per currency and cashflow type equal the exact sum of the API amounts, both encodings mixed', async () => {
    const items: ExportTransaction[] = [
      ...transactions(30, (i) => ({ currency: i % 3 === 0 ? 'USD' : 'EUR' })),
      // Beyond 2^53 minor units: a float sum would lose the last digits.
      transaction(30, { amount: '90071992547409.93', cashflowType: 'Income' }),
      transaction(31, { amount: 9007199254740991, cashflowType: 'INCOME' }),
      transaction(32, { amount: '-0.01', cashflowType: 'EXPENSE', currency: null }),
    ];
    const expected = new Map<string, bigint>();
    const counts = new Map<string, number>();
    for (const t of items) {
      const raw = t.raw as { amount: number | string; currency: string | null; cashflowType: string };
      const key = `${raw.currency ?? 'EUR'}/${raw.cashflowType.toUpperCase()}`;
      expected.set(key, (expected.get(key) ?? 0n) + parseMinorUnits(raw.amount));
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    await exporter('run-1').run(request({ sources: { categories: CATEGORIES, transactions: asAsync(items) } }));

    const totals = (await readManifest(dir, MANIFEST))!.datasets.transactions!.totals;
    expect(totals.map((t) => `${t.currency}/${t.cashflowType}`)).toEqual([...expected.keys()].sort());
    for (const total of totals) {
      const sum = expected.get(`${total.currency}/${total.cashflowType}`)!;
      expect(total.amountMinor).toBe(sum.toString());
      expect(total.amount).toBe(formatMinorUnits(sum));
      expect(total.records).toBe(counts.get(`${total.currency}/${total.cashflowType}`));
    }
    // The sum is past 2^53, where adding floats would already have gone wrong.
    const income = items.filter((t) => (t.parsed.currency ?? 'EUR') === 'EUR' && t.parsed.cashflowType === 'INCOME');
    const floatSum = income.reduce((sum, t) => sum + Number(t.parsed.amount), 0);
    const exact = totals.find((t) => t.currency === 'EUR' && t.cashflowType === 'INCOME')!.amountMinor;
    expect(BigInt(exact) > 2n ** 53n).toBe(true);
    expect(BigInt(floatSum)).not.toBe(BigInt(exact));
  });

  it('resolves category names even when categories themselves are not exported', async () => {
    await exporter('run-1').run(request({ datasets: ['transactions'], formats: ['csv'] }));
    expect(await listKeys(dir, `${PREFIX}categories/`)).toEqual([]);
    const csv = Buffer.from((await dir.get(`${PREFIX}transactions/run=run-1/part-00000.csv`))!).toString();
    expect(csv).toContain(',Office supplies,');
    expect(csv).toContain(',Travel,');
    expect((await readManifest(dir, MANIFEST))!.datasets.categories).toBeUndefined();
  });

  it('a failure in the middle of a write leaves the previous complete period exactly as it was', async () => {
    await exporter('run-1').run(request({}, 3000));
    const before = await snapshot(dir, PREFIX);

    store.failStreamAfter = (key) => (key.endsWith('transactions/run=run-2/part-00000.csv') ? 20_000 : undefined);
    const error = await exporter('run-2')
      .run(request({}, 3000))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PeriodExportError);
    expect((error as PeriodExportError).cause).toBeInstanceOf(ObjectStoreError);
    expect((error as PeriodExportError).runId).toBe('run-2');

    expect(await snapshot(dir, PREFIX)).toEqual(before);
    expect((await listKeys(dir)).filter((k) => k.includes('run=run-2'))).toEqual([]);
  });

  it('an API failure midway publishes nothing for a period that had no export yet', async () => {
    const sources = { categories: CATEGORIES, transactions: failingAfter(transactions(500), 250) };
    await expect(exporter('run-1').run(request({ sources }))).rejects.toThrow(/upstream 503/);
    expect(await listKeys(dir)).toEqual([]);
    // INFO: the caller (exportCompanyPeriod, the split worker) logs the outcome at the level it knows, retry or failure.
    expect(
      logger
        .entries()
        .find((e) => e.runId === 'run-1' && e.message === 'period export failed; the previous export of the period is unchanged'),
    ).toMatchObject({
      level: 'info',
      error: expect.objectContaining({ message: expect.stringMatching(/upstream 503/) }),
    });
    expect(logger.entries().filter((e) => e.level === 'error')).toEqual([]);
  });

  it('an empty Parquet dataset whose upload failed rejects the run and leaves no unhandled rejection', async () => {
    // A month without tax reports, read after one page's wait: the upload under /dev/null has
    // failed by the time the writer, holding no rows, writes the footer.
    const noTaxReports: AsyncIterable<ExportTaxReport> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise((resolve) => setTimeout(() => resolve({ done: true, value: undefined }), 30)),
      }),
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let error: unknown;
    try {
      error = await exporter('run-1', new DirObjectStore('/dev/null/out'))
        .run(request({ sources: { taxReports: noTaxReports }, datasets: ['tax_reports'], formats: ['parquet'] }))
        .catch((e: unknown) => e);
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(error).toBeInstanceOf(PeriodExportError);
    expect((error as PeriodExportError).cause).toBeInstanceOf(ObjectStoreError);
    expect(unhandled).toEqual([]);
  });

  it('a failed manifest write leaves the previous period, Athena included, exactly as it was: no symlink was touched', async () => {
    await exporter('run-1').run(request());
    const before = await snapshot(dir, PREFIX);
    store.puts.length = 0;
    store.failPut = (key) => key === MANIFEST;
    await expect(exporter('run-2').run(request())).rejects.toBeInstanceOf(PeriodExportError);
    expect(await snapshot(dir, PREFIX)).toEqual(before);
    // Never written and pointed back: not written at all, so a crash at that point could not leave one either.
    expect(store.puts).toEqual([MANIFEST]);
  });

  it('a symlink that cannot be written after the commit: published, reported stale, its old target kept; the next export rewrites it', async () => {
    await exporter('run-1').run(request());
    const oldParquet = `${PREFIX}transactions/run=run-1/part-00000.parquet`;
    clock.advance(60_000);
    store.failPut = (key) => key === SYMLINK;

    const summary = await exporter('run-2').run(request());
    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest.runId).toBe('run-2');
    expect(summary.staleSymlinks).toEqual(['transactions']);
    // The manifest records the symlink Athena should have; the store still holds the previous one.
    expect(manifest.symlinks.find((l) => l.dataset === 'transactions')!.targets).toEqual([
      `${PREFIX}transactions/run=run-2/part-00000.parquet`,
    ]);
    expect(Buffer.from((await dir.get(SYMLINK))!).toString()).toBe(`${dir.url(oldParquet)}\n`);
    expect(await staleSymlinks(dir, manifest)).toEqual(['transactions']);
    // The other datasets followed the manifest.
    for (const dataset of ['categories', 'tax_reports'] as const) {
      expect(Buffer.from((await dir.get(symlinkKey(COMPANY, PERIOD, dataset)))!).toString()).toContain(`/${dataset}/run=run-2/`);
    }
    // GC kept what the stale symlink still names, superseded though it is, and removed the rest of run-1.
    expect((await listKeys(dir)).filter((k) => k.includes('run=run-1'))).toEqual([oldParquet]);
    const logged = logger.entries().find((e) => e.level === 'error' && e.runId === 'run-2');
    expect(logged).toMatchObject({ manifestKey: MANIFEST, symlinkKeys: [SYMLINK], datasets: ['transactions'] });
    expect(logged?.message).toMatch(/Athena still shows the previous export/);

    // Any later export of the period repairs it, even one that carries the dataset over.
    store.failPut = undefined;
    clock.advance(60_000);
    const repaired = await exporter('run-3').run(request({ datasets: ['categories'] }));
    expect(repaired.staleSymlinks).toEqual([]);
    const after = (await readManifest(dir, MANIFEST))!;
    expect(after.datasets.transactions?.runId).toBe('run-2');
    expect(await staleSymlinks(dir, after)).toEqual([]);
    expect(Buffer.from((await dir.get(SYMLINK))!).toString()).toBe(`${dir.url(`${PREFIX}transactions/run=run-2/part-00000.parquet`)}\n`);
  });

  describe('a process that stops anywhere in the publish (kill -9, a Lambda timeout)', () => {
    /**
     * From its `crashAfter`-th putObject or delete on, every call never returns and reaches no file:
     * the process is gone. Calls already under way finish (they were made before the stop).
     */
    class StoppingStore implements ObjectStore {
      private calls = 0;
      private readonly running = new Set<Promise<unknown>>();
      stopped = false;
      constructor(
        readonly inner: DirObjectStore,
        readonly crashAfter: number,
      ) {}
      private step<T>(run: () => Promise<T>): Promise<T> {
        if (this.calls++ >= this.crashAfter) {
          this.stopped = true;
          return new Promise<T>(() => undefined);
        }
        const call = run();
        this.running.add(call);
        return call;
      }
      /** What is on disk once the stop has happened and every call made before it has landed. */
      async settled(): Promise<void> {
        await Promise.allSettled([...this.running]);
      }
      putStream = (key: string, body: Readable, options?: PutOptions) => this.inner.putStream(key, body, options);
      putObject = (key: string, body: Uint8Array | string, options?: PutOptions & PutConditions) =>
        this.step(() => this.inner.putObject(key, body, options));
      delete = (keys: readonly string[]) => this.step(() => this.inner.delete(keys));
      get = (key: string) => this.inner.get(key);
      head = (key: string) => this.inner.head(key);
      list = (prefix: string) => this.inner.list(prefix);
      url = (key: string) => this.inner.url(key);
    }

    const DATASET_NAMES = ['categories', 'tax_reports', 'transactions'] as const;
    const parquetUrls = (m: Manifest, dataset: string) =>
      m.objects.filter((o) => o.dataset === dataset && o.format === 'parquet').map((o) => dir.url(o.key));

    // The publish makes 5 such calls: the manifest, 3 symlinks, one GC delete.
    it.each([0, 1, 2, 3, 4, 5])(
      'stopped after %i of its writes: Athena shows only committed runs, never more than the manifest, and nothing it shows is gone',
      async (crashAfter) => {
        const previous = (await exporter('run-1').run(request())).manifest;
        clock.advance(60_000);
        const stopping = new StoppingStore(dir, crashAfter);
        const run = exporter('run-2', stopping).run(request());
        if (crashAfter < 5) {
          await new Promise<void>((resolve) => {
            const poll = () => (stopping.stopped ? resolve() : setTimeout(poll, 5));
            poll();
          });
          await stopping.settled();
        } else {
          await run;
          expect(stopping.stopped).toBe(false);
        }

        const current = (await readManifest(dir, MANIFEST))!;
        const stored = (await listKeys(dir)).map((k) => dir.url(k));
        expect(current.runId).toBe(crashAfter === 0 ? 'run-1' : 'run-2');
        for (const dataset of DATASET_NAMES) {
          const shown = Buffer.from((await dir.get(symlinkKey(COMPANY, PERIOD, dataset)))!)
            .toString()
            .split('\n')
            .filter(Boolean);
          // The committed manifest's view, or the one it replaced; before the commit, only the previous.
          const allowed =
            current.runId === 'run-1' ? [parquetUrls(previous, dataset)] : [parquetUrls(current, dataset), parquetUrls(previous, dataset)];
          expect(allowed).toContainEqual(shown);
          for (const url of shown) expect(stored).toContain(url);
        }
        // Each symlink is in line with the manifest, or reported as not (what doctor compares).
        const behind = await staleSymlinks(dir, current);
        for (const dataset of DATASET_NAMES) {
          const shown = Buffer.from((await dir.get(symlinkKey(COMPANY, PERIOD, dataset)))!).toString();
          expect(behind.includes(dataset)).toBe(
            shown !==
              parquetUrls(current, dataset)
                .map((u) => `${u}\n`)
                .join(''),
          );
        }
        // A symlink not yet written when it stopped (the manifest is the first of the writes, each symlink one).
        expect(behind).toHaveLength(crashAfter === 0 ? 0 : Math.max(0, 4 - crashAfter));

        // The next export of the period brings Athena back in line with its manifest.
        clock.advance(60_000);
        await exporter('run-3', dir).run(request());
        expect(await staleSymlinks(dir, (await readManifest(dir, MANIFEST))!)).toEqual([]);
      },
    );
  });

  it('re-running a period switches atomically to equal checksums and collects the previous run', async () => {
    const first = await exporter('run-1').run(request());
    clock.advance(60_000);
    const second = await exporter('run-2').run(request());

    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(manifest.runId).toBe('run-2');
    const checksums = (m: Manifest) => m.objects.map((o) => `${o.dataset}/${o.format}:${o.sha256}`);
    expect(checksums(manifest)).toEqual(checksums(first.manifest));
    expect(manifest.objects.every((o) => o.key.includes('/run=run-2/'))).toBe(true);
    expect((await listKeys(dir)).filter((k) => k.includes('run=run-1'))).toEqual([]);
    expect(second.garbageCollected).toBe(first.manifest.objects.length);
    expect(Buffer.from((await dir.get(SYMLINK))!).toString()).toContain('/transactions/run=run-2/part-00000.parquet');
  });

  it('a run of some datasets keeps the others from the previous export (no data loss)', async () => {
    await exporter('run-1').run(request());
    const summary = await exporter('run-2').run(request({ datasets: ['transactions'] }));

    const manifest = (await readManifest(dir, MANIFEST))!;
    expect(summary.carriedOver).toEqual(['tax_reports', 'categories']);
    expect(manifest.datasets.tax_reports?.runId).toBe('run-1');
    expect(manifest.datasets.transactions?.runId).toBe('run-2');
    for (const object of manifest.objects) {
      expect(object.key).toContain(object.dataset === 'transactions' ? 'run=run-2' : 'run=run-1');
      expect(await sha256Of(dir, object.key)).toBe(object.sha256);
    }
    expect(await listKeys(dir, `${PREFIX}transactions/run=run-1/`)).toEqual([]);
    expect(manifest.symlinks.map((s) => s.dataset)).toEqual(['categories', 'tax_reports', 'transactions']);
  });

  describe("Parquet's DECIMAL(18,4) bounds amounts only where Parquet is written", () => {
    // JPY has no fraction digits, so DECIMAL(18,4) holds |minor| < 10^14 of it.
    const big = () => asAsync([transaction(0), transaction(1, { amount: 100_000_000_000_001, currency: 'JPY' })]);
    const csvOf = async (runId: string) =>
      Buffer.from((await dir.get(`${PREFIX}transactions/run=${runId}/part-00000.csv`))!).toString('utf8');

    it('a CSV and JSONL export writes the amount exactly; one with Parquet is refused, naming the field and the way out', async () => {
      const summary = await exporter('run-1').run(request({ sources: { transactions: big() }, formats: ['csv', 'jsonl'] }));
      expect(summary.datasets.transactions?.totals.find((t) => t.currency === 'JPY')).toMatchObject({
        amount: '100000000000001',
        amountMinor: '100000000000001',
      });
      expect(await csvOf('run-1')).toContain(',100000000000001,100000000000001,JPY,');
      const jsonl = gunzipSync((await dir.get(`${PREFIX}transactions/run=run-1/part-00000.jsonl.gz`))!).toString('utf8');
      expect(jsonl).toContain('"amount":100000000000001');

      const before = await snapshot(dir, PREFIX);
      const error = await exporter('run-2')
        .run(request({ sources: { transactions: big() }, formats: ['csv', 'jsonl', 'parquet'] }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PeriodExportError);
      const cause = (error as PeriodExportError).cause as ValidationError;
      expect(cause).toBeInstanceOf(ValidationError);
      expect(cause.field).toBe('amount');
      expect(cause.message).toContain('beyond DECIMAL(18,4)');
      expect(cause.message).toContain('Parquet');
      expect(cause.message).toContain('--format csv,jsonl');
      expect(await snapshot(dir, PREFIX)).toEqual(before);
    });

    it("a run without Parquet passes though the period keeps other datasets' Parquet from an earlier run", async () => {
      await exporter('run-1').run(request());
      const summary = await exporter('run-2').run(
        request({ sources: { transactions: big() }, datasets: ['transactions'], formats: ['csv', 'jsonl'], replaceFormats: true }),
      );
      expect(summary.carriedOver).toEqual(['tax_reports', 'categories']);
      const manifest = (await readManifest(dir, MANIFEST))!;
      const parquet = manifest.objects.filter((o) => o.format === 'parquet').map((o) => [o.dataset, o.key.includes('run=run-1')]);
      expect(parquet).toEqual([
        ['categories', true],
        ['tax_reports', true],
      ]);
      expect(await csvOf('run-2')).toContain(',100000000000001,100000000000001,JPY,');
    });
  });

  it('refuses to reuse the run id of the current export', async () => {
    await exporter('run-1').run(request());
    const before = await snapshot(dir, PREFIX);
    const error = await exporter('run-1')
      .run(request())
      .catch((e: unknown) => e);
    expect((error as PeriodExportError).cause).toBeInstanceOf(ValidationError);
    expect(await snapshot(dir, PREFIX)).toEqual(before);
  });

  it('validates the request before touching the store', async () => {
    await expect(exporter('run-1').run(request({ company: '../other' }))).rejects.toMatchObject({ field: 'company' });
    await expect(exporter('run-1').run(request({ period: '2026-13' }))).rejects.toMatchObject({ field: 'period' });
    await expect(exporter('run-1').run(request({ formats: [] }))).rejects.toMatchObject({ field: 'formats' });
    await expect(exporter('run-1').run(request({ formats: ['xlsx' as 'csv'] }))).rejects.toMatchObject({ field: 'formats' });
    await expect(exporter('run 1').run(request())).rejects.toMatchObject({ field: 'runId' });
    await expect(exporter('run-1').run(request({ sources: { categories: CATEGORIES }, datasets: ['transactions'] }))).rejects.toMatchObject(
      {
        field: 'datasets',
      },
    );
    await expect(exporter('run-1').run(request({ sourceBaseUrl: 'not a url' }))).rejects.toMatchObject({ field: 'sourceBaseUrl' });
    expect(await listKeys(dir)).toEqual([]);
  });

  describe('concurrent runs of one period', () => {
    it('the run that commits first wins; the other fails without changing anything', async () => {
      let winner: Promise<unknown> | undefined;
      async function* slowTransactions() {
        let i = 0;
        for (const t of transactions(40)) {
          if (i++ === 20) await (winner = exporter('run-b').run(request()));
          yield t;
        }
      }
      const error = await exporter('run-a')
        .run(request({ sources: { categories: CATEGORIES, transactions: slowTransactions() } }))
        .catch((e: unknown) => e);
      await winner;
      expect((error as PeriodExportError).cause).toBeInstanceOf(ConcurrentExportError);
      expect((await readManifest(dir, MANIFEST))!.runId).toBe('run-b');
      expect((await listKeys(dir)).filter((k) => k.includes('run=run-a'))).toEqual([]);
      expect(Buffer.from((await dir.get(SYMLINK))!).toString()).toContain('run=run-b');
    });

    it('a race inside the switch is caught by the conditional manifest write; the symlinks stay as the winner wrote them', async () => {
      // run-b commits right before run-a's manifest write, after run-a's last check.
      store.beforePut = async (key) => {
        expect(key).toBe(MANIFEST);
        await exporter('run-b', dir).run(request());
      };
      const error = await exporter('run-a')
        .run(request())
        .catch((e: unknown) => e);
      expect((error as PeriodExportError).cause).toBeInstanceOf(ConcurrentExportError);
      const manifest = (await readManifest(dir, MANIFEST))!;
      expect(manifest.runId).toBe('run-b');
      expect(manifest.symlinks.map((l) => l.dataset)).toEqual(['categories', 'tax_reports', 'transactions']);
      for (const link of manifest.symlinks) {
        expect(Buffer.from((await dir.get(link.key))!).toString()).toBe(link.targets.map((t) => `${dir.url(t)}\n`).join(''));
        expect(link.targets.every((t) => t.includes('/run=run-b/'))).toBe(true);
      }
      expect(await staleSymlinks(dir, manifest)).toEqual([]);
      // The loser wrote nothing but its refused manifest.
      expect(store.puts).toEqual([MANIFEST]);
      expect((await listKeys(dir)).filter((k) => k.includes('run=run-a'))).toEqual([]);
    });

    it('a race inside the switch of a period exported before is caught by the manifest version the run started from', async () => {
      await exporter('run-0').run(request());
      // Both start from run-0's manifest; run-b replaces it right before run-a's manifest write.
      store.beforePut = async (key) => {
        expect(key).toBe(MANIFEST);
        await exporter('run-b', dir).run(request());
      };
      const error = await exporter('run-a')
        .run(request())
        .catch((e: unknown) => e);
      expect((error as PeriodExportError).cause).toBeInstanceOf(ConcurrentExportError);
      const manifest = (await readManifest(dir, MANIFEST))!;
      expect(manifest.runId).toBe('run-b');
      for (const object of manifest.objects) expect(await dir.head(object.key)).toBeDefined();
      expect((await listKeys(dir)).filter((k) => k.includes('run=run-a'))).toEqual([]);
    });
  });

  describe('garbage collection', () => {
    it('removes abandoned run objects after the grace period and never what a manifest or symlink references', async () => {
      const now = Date.now();
      clock.set(now);
      const orphan = `${PREFIX}transactions/run=crashed/part-00000.csv`;
      const athenaOnly = `${PREFIX}transactions/run=ahead/part-00000.parquet`;
      await dir.putObject(orphan, 'left by a crashed run');
      await dir.putObject(athenaOnly, 'named by a symlink the manifest no longer lists');
      await exporter('run-1').run(request());
      // A young orphan might belong to a run still in flight: kept.
      expect(await dir.head(orphan)).toBeDefined();

      await dir.putObject(SYMLINK, `${dir.url(athenaOnly)}\n`);
      const later = now + 25 * 60 * 60 * 1000;
      const deleted = await collectGarbage(dir, COMPANY, PERIOD, { now: later, graceMs: 24 * 60 * 60 * 1000 });
      expect(deleted).toEqual([orphan]);
      expect(await dir.head(athenaOnly)).toBeDefined();
      const manifest = (await readManifest(dir, MANIFEST))!;
      for (const object of manifest.objects) expect(await dir.head(object.key)).toBeDefined();
      expect(await dir.head(MANIFEST)).toBeDefined();

      // Safe to repeat.
      expect(await collectGarbage(dir, COMPANY, PERIOD, { now: later, graceMs: 24 * 60 * 60 * 1000 })).toEqual([]);
    });

    it('without a manifest, only old run objects go', async () => {
      await dir.putObject(`${PREFIX}transactions/run=x/part-00000.csv`, 'x');
      await dir.putObject(`${PREFIX}notes.txt`, 'not ours to delete');
      const deleted = await collectGarbage(dir, COMPANY, PERIOD, { now: Date.now() + 2000, graceMs: 1000 });
      expect(deleted).toEqual([`${PREFIX}transactions/run=x/part-00000.csv`]);
      expect(await listKeys(dir)).toEqual([`${PREFIX}notes.txt`]);
    });

    it('refuses to guess when the manifest is unreadable', async () => {
      await dir.putObject(MANIFEST, '{"schemaVersion": 99}');
      await dir.putObject(`${PREFIX}transactions/run=x/part-00000.csv`, 'x');
      await expect(collectGarbage(dir, COMPANY, PERIOD, { now: Date.now() + 2000, graceMs: 1000 })).rejects.toMatchObject({
        code: 'manifest_invalid',
      });
      expect(await listKeys(dir)).toHaveLength(2);
    });
  });
});
