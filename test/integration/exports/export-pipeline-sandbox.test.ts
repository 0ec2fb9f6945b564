import { gunzipSync } from 'node:zlib';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { MemoryEventPublisher } from '../../../src/adapters/local/memory-event-publisher';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import {
  apiKeyAuth,
  createAccountingClient,
  fetchTransport,
  parseJsonLossless,
  parseMinorUnits,
  type Transport,
} from '../../../src/core/accounting-api';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import { exportCompanyPeriod, type ExportOutcome } from '../../../src/core/exports/pipeline/export-company-period';
import type { ExportProgress } from '../../../src/core/exports/pipeline/export-sources';
import { manifestKey, periodPrefix } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import type { ObjectStore } from '../../../src/core/exports/formats/object-store';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { ExportCountMismatchError } from '../../../src/core/exports/pipeline/pipeline-errors';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { listKeys, PARQUET_DECOMPRESSORS, snapshot } from '../../helpers/export-fixtures';
import { startS3, type LocalS3 } from '../../helpers/s3rver';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // The export use case end to end: the typed client against the sandbox over HTTP, the
  // PeriodExporter writing to s3rver through the real S3 client, events in memory.

  const BUCKET = 'acctops-exports';
  const OCTOBER = parsePeriod('2026-10');
  /** The `date_to` that asks this dialect for all of October: the minimal dialect's is exclusive (docs/assumptions.md). */
  const OCTOBER_TO = dialect === 'minimal' ? '2026-11-01' : '2026-10-31';

  /** Transactions around both ends of October in several offsets; `in` says whether October's query returns it. */
  const BOUNDARY = [
    { valueDate: '2026-09-30T23:59:59+00:00', in: false },
    { valueDate: '2026-09-30T22:30:00-02:00', in: false }, // October in UTC
    { valueDate: '2026-10-01T00:00:00+00:00', in: true },
    { valueDate: '2026-10-01T00:15:00+05:30', in: true }, // September in UTC
    { valueDate: '2026-10-01T00:00:00.000+14:00', in: true },
    { valueDate: '2026-10-31T23:30:00-02:00', in: true }, // November in UTC
    { valueDate: '2026-10-31T23:59:59.999-12:00', in: true },
    { valueDate: '2026-11-01T00:30:00+01:00', in: false }, // October in UTC
    { valueDate: '2026-11-01T00:00:00-00:00', in: false },
  ];

  let sandbox: RunningSandbox;
  let s3: LocalS3;
  let company: string;
  let apiKey: string;
  const sandboxClock = new ManualClock(Date.UTC(2026, 10, 5, 8, 0));

  beforeAll(async () => {
    [sandbox, s3] = await Promise.all([startSandbox({ dialect, demo: false, clock: sandboxClock }), startS3([BUCKET])]);
    company = (await sandbox.admin.createCompany({ currency: 'EUR' })).publicId;
    apiKey = (
      await sandbox.admin.createApiKey({ companyId: company, permissions: ['read_transactions', 'read_categories', 'read_tax_reports'] })
    ).key;
    // Categories: one full page of 1000 and a partial one, through the `pageSize` spelling.
    for (let i = 0; i < 1005; i++)
      await sandbox.admin.addCategory({ companyId: company, name: `Category ${i} ü€`, cashflowType: 'EXPENSE' });
    // Transactions: two full pages of 1000 and a partial one, through the `page_size` spelling.
    await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count: 2480 });
    await sandbox.admin.addTransactions({
      companyId: company,
      transactions: BOUNDARY.map((t, i) => ({ valueDate: t.valueDate, amount: i % 2 === 0 ? -(1000 + i) : `${10 + i}.05` })),
    });
    // An amount beyond 2^53 minor units: exact only through the client's lossless parse.
    await sandbox.admin.addTransactions({
      companyId: company,
      transactions: [{ valueDate: '2026-10-15T12:00:00+02:00', amount: '9007199254740993', currency: 'EUR' }],
    });
    await sandbox.admin.addTaxReport({
      companyId: company,
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31',
      amountDue: '1234.56',
      currency: 'EUR',
    });
  });

  afterAll(async () => {
    await Promise.all([sandbox.stop(), s3.stop()]);
    forgetRegisteredSecrets();
  });

  afterEach(async () => {
    await sandbox.admin.faults.clear();
    await sandbox.admin.configure({ amountEncoding: 'integer' });
  });

  interface Setup {
    store: ObjectStore;
    events: MemoryEventPublisher;
    logger: MemoryLogger;
    metrics: MemoryMetrics;
    urls: URL[];
    run(options?: { period?: string; progress?: ExportProgress[]; last?: boolean }): Promise<ExportOutcome>;
  }

  /** A fresh prefix per test keeps each test's periods apart in the one bucket. */
  let prefixes = 0;
  /** `blindProbe`: the probe of date_to (equal ends, page size 1) asks a day without records, so it reads any service as exclusive. */
  function setup(options: { blindProbe?: boolean } = {}): Setup {
    const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET, prefix: `t${++prefixes}` });
    const events = new MemoryEventPublisher();
    const logger = new MemoryLogger();
    const metrics = new MemoryMetrics();
    const urls: URL[] = [];
    const real = fetchTransport();
    const transport: Transport = (request) => {
      const url = new URL(request.url);
      urls.push(url);
      if (
        options.blindProbe &&
        url.searchParams.get('page_size') === '1' &&
        url.searchParams.get('date_from') === url.searchParams.get('date_to')
      ) {
        const blind = new URL(url);
        blind.searchParams.set('date_from', '2001-01-01');
        blind.searchParams.set('date_to', '2001-01-01');
        return real({ ...request, url: blind.href });
      }
      return real(request);
    };
    // The client's backoff waits on this clock: it moves by itself, so a Retry-After costs no real time.
    const clock = ManualClock.autoAdvancing(Date.UTC(2026, 10, 1, 2, 0));
    return {
      store,
      events,
      logger,
      metrics,
      urls,
      run: (options = {}) =>
        exportCompanyPeriod(
          { store, events, clock, logger, metrics, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl, client: { transport } },
          {
            companyId: company,
            period: options.period ?? OCTOBER.text,
            credentials: apiKeyAuth(apiKey),
            source: { kind: 'apiKey' },
            trigger: { kind: 'on_demand', requestId: 'test', via: 'event' },
            formats: ['jsonl', 'csv', 'parquet'],
            attempt: { number: 1, last: options.last ?? true },
            onProgress: options.progress ? (p) => options.progress!.push(p) : undefined,
          },
        ),
    };
  }

  async function completed(outcome: Promise<ExportOutcome>) {
    const result = await outcome;
    if (result.status !== 'completed') throw result.error;
    return result.summary;
  }

  async function objectText(store: ObjectStore, key: string): Promise<string> {
    const bytes = Buffer.from((await store.get(key))!);
    return key.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
  }

  /** What the API returns for October, read with a plain client: the reference the export must match. */
  async function apiOctober(): Promise<{ ids: string[]; amounts: bigint[] }> {
    const client = createAccountingClient({ baseUrl: sandbox.baseUrl, credentials: apiKeyAuth(apiKey) });
    const ids: string[] = [];
    const amounts: bigint[] = [];
    for await (const item of client.transactions.list({ dateFrom: '2026-10-01', dateTo: OCTOBER_TO })) {
      ids.push(item.parsed.publicId);
      amounts.push(item.parsed.amount);
    }
    return { ids, amounts };
  }

  /**
   * October's transactions as the JSON text of each item on the wire without its whitespace, found
   * without the exporter's scanner: the item's JSON.stringify (with the lossless parse's digit
   * strings back as the literals they were). The default dialect writes compact JSON, so that text
   * occurs in its body as it is; the minimal one writes Python's `", "` and `": "`.
   */
  async function apiOctoberTexts(): Promise<string[]> {
    const texts: string[] = [];
    let url: string | null = `${sandbox.baseUrl}/accounting/transactions/?date_from=2026-10-01&date_to=${OCTOBER_TO}&page_size=1000`;
    while (url) {
      const response = await fetch(url, { headers: { accept: 'application/json', authorization: `Bearer ${apiKey}` } });
      const body = await response.text();
      const page = parseJsonLossless(body) as { next: string | null; results: unknown[] };
      expect(body.includes('": ')).toBe(dialect === 'minimal');
      for (const item of page.results) {
        const text = JSON.stringify(item).replace(/"amount":"(\d{16,})"/g, '"amount":$1');
        if (dialect === 'default') expect(body.includes(text)).toBe(true);
        texts.push(text);
      }
      url = page.next;
    }
    return texts;
  }

  describe('exportCompanyPeriod against the sandbox and s3rver', () => {
    it('exports every record the API returns for the month exactly once, month boundaries in every offset included', async () => {
      const { store, run } = setup();
      const summary = await completed(run());
      const jsonl = summary.datasets.transactions!.objects.find((o) => o.format === 'jsonl')!;
      const lines = (await objectText(store, jsonl.key)).trimEnd().split('\n');
      const exported = lines.map((line) => JSON.parse(line) as { publicId: string; valueDate: string });

      const api = await apiOctober();
      expect(exported.map((t) => t.publicId)).toEqual(api.ids);
      expect(new Set(api.ids).size).toBe(api.ids.length);
      const dates = new Set(exported.map((t) => t.valueDate));
      for (const boundary of BOUNDARY)
        expect([boundary.valueDate, dates.has(boundary.valueDate)]).toEqual([boundary.valueDate, boundary.in]);
      const summaryOfApi = await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-01', dateTo: '2026-10-31' });
      expect(summary.datasets.transactions!.records).toBe(summaryOfApi.count);
      expect(summary.manifest.source.query).toEqual({ dateFrom: '2026-10-01', dateTo: '2026-10-31' });
    });

    it.each(['integer', 'string', 'mixed'] as const)('totals equal the sum of the API amounts exactly, %s encoding', async (encoding) => {
      await sandbox.admin.configure({ amountEncoding: encoding });
      const { store, run } = setup();
      const summary = await completed(run());

      const expected = await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-01', dateTo: '2026-10-31' });
      const totals: Record<string, Record<string, string>> = {};
      for (const t of summary.datasets.transactions!.totals) (totals[t.currency] ??= {})[t.cashflowType!] = t.amountMinor;
      expect(totals).toEqual(expected.totals);
      const manifest = (await readManifest(store, summary.manifestKey))!;
      expect(manifest.datasets.transactions!.totals).toEqual(summary.datasets.transactions!.totals);

      // Parquet end to end: the INT64 minor units read back equal the API's amounts, one by one.
      const parquet = summary.datasets.transactions!.objects.find((o) => o.format === 'parquet')!;
      const file = new Uint8Array(Buffer.from((await store.get(parquet.key))!)).buffer;
      const rows = await parquetReadObjects({
        file,
        metadata: parquetMetadata(file),
        columns: ['public_id', 'amount_minor'],
        compressors: PARQUET_DECOMPRESSORS,
      });
      const api = await apiOctober();
      expect(rows.map((r) => r.amount_minor as bigint)).toEqual(api.amounts);
      expect(rows.some((r) => r.amount_minor === 9007199254740993n)).toBe(true);
      // And the JSONL keeps each record as the API sent it: every line is an item of the API's pages,
      // byte for byte, so the amount beyond 2^53 stays the literal the API wrote (a reader that wants
      // it exact parses losslessly, as the client does).
      const jsonl = await objectText(store, summary.datasets.transactions!.objects.find((o) => o.format === 'jsonl')!.key);
      const lines = jsonl.trimEnd().split('\n');
      expect(lines).toEqual(await apiOctoberTexts());
      if (encoding === 'integer') expect(lines.some((l) => l.includes('"amount":9007199254740993'))).toBe(true);
      const spelled = lines.map((l) => (parseJsonLossless(l) as { amount: unknown }).amount);
      expect(spelled.map((a) => parseMinorUnits(a))).toEqual(api.amounts);
      if (encoding === 'string') expect(spelled.every((a) => typeof a === 'string' && /\.\d{2}$/.test(a))).toBe(true);
      if (encoding === 'mixed') expect(new Set(spelled.map((a) => typeof a))).toEqual(new Set(['number', 'string']));
    });

    it('reads every page with page size 1000 in both spellings: several full pages and a partial one', async () => {
      const { run, urls, store } = setup();
      const progress: ExportProgress[] = [];
      const summary = await completed(run({ progress }));

      const listed = urls.filter((u) => u.pathname.endsWith('/accounting/transactions/'));
      // After the month, one page-size-1 probe of a busy day decides how date_to reads (src/core/exports/pipeline/date-to.ts).
      const probes = listed.filter((u) => u.searchParams.get('page_size') === '1');
      expect(probes).toHaveLength(1);
      expect(probes[0]!.searchParams.get('date_from')).toBe(probes[0]!.searchParams.get('date_to'));
      // The minimal dialect's date_to is exclusive: the 31st is read on its own, [31st, 1st of November).
      const lastDay = listed.filter((u) => u.searchParams.get('date_from') === '2026-10-31');
      expect(lastDay.map((u) => u.searchParams.get('date_to'))).toEqual(dialect === 'minimal' ? ['2026-11-01'] : []);
      expect(summary.dateToExclusive).toBe(dialect === 'minimal' ? true : undefined);
      // The manifest says how date_to was read and what the last day's own read added (nothing repeated here).
      const lastDayCount = (await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-31', dateTo: '2026-10-31' }))
        .count;
      expect(lastDayCount).toBeGreaterThan(0);
      expect((await readManifest(store, summary.manifestKey))!.datasets.transactions!.dateTo).toEqual({
        setting: 'detect',
        read: dialect === 'minimal' ? 'exclusive' : 'inclusive',
        lastDayRecords: dialect === 'minimal' ? lastDayCount : 0,
        lastDayRepeats: 0,
      });
      expect(summary.manifest.datasets.transactions).not.toHaveProperty('duplicatesDropped');
      const transactions = listed.filter((u) => !probes.includes(u) && !lastDay.includes(u));
      const categories = urls.filter((u) => u.pathname.endsWith('/accounting/categories/'));
      const taxReports = urls.filter((u) => u.pathname.endsWith('/taxes/reports/'));
      expect(transactions).toHaveLength(3);
      expect(transactions.every((u) => u.searchParams.get('page_size') === '1000' && !u.searchParams.has('pageSize'))).toBe(true);
      expect(
        transactions.every((u) => u.searchParams.get('date_from') === '2026-10-01' && u.searchParams.get('date_to') === '2026-10-31'),
      ).toBe(true);
      expect(categories).toHaveLength(2);
      expect(categories.every((u) => u.searchParams.get('pageSize') === '1000' && !u.searchParams.has('page_size'))).toBe(true);
      expect(taxReports.every((u) => u.searchParams.get('page_size') === '1000')).toBe(true);
      expect(summary.datasets.categories!.records).toBe(1005);

      const records = summary.datasets.transactions!.records;
      const read = progress.filter((p) => p.dataset === 'transactions').map((p) => [p.records, p.done]);
      expect(read.slice(0, 2)).toEqual([
        [1000, false],
        [2000, false],
      ]);
      // Done once, at the very end: after the last day where it is read on its own.
      expect(read.slice(2)).toEqual(
        dialect === 'minimal'
          ? [
              [expect.any(Number), false],
              [records, true],
            ]
          : [[records, true]],
      );
      expect(progress.filter((p) => p.dataset === 'categories').map((p) => p.records)).toEqual([1000, 1005]);
    });

    it('recovers from 429, 5xx and a reset connection in the middle of the stream', async () => {
      const { store, run, urls } = setup();
      const reference = await completed(setup().run());
      const route = 'GET /accounting/transactions/';
      await sandbox.admin.faults.add({ route, query: { page: '2' }, times: 1, fault: { type: 'status', status: 429 } });
      await sandbox.admin.faults.add({ route, query: { page: '3' }, times: 2, fault: { type: 'status', status: 503 } });
      await sandbox.admin.faults.add({
        route: 'GET /accounting/categories/',
        query: { page: '2' },
        times: 1,
        fault: { type: 'reset', phase: 'partial' },
      });

      const summary = await completed(run());
      expect(urls.filter((u) => u.pathname.endsWith('/accounting/transactions/') && u.searchParams.get('page') === '3')).toHaveLength(3);
      expect(summary.datasets.transactions!.records).toBe(reference.datasets.transactions!.records);
      expect(summary.manifest.objects.map((o) => o.sha256)).toEqual(reference.manifest.objects.map((o) => o.sha256));
      expect(await readManifest(store, summary.manifestKey)).toBeDefined();
    });

    it('a failure in the middle of the stream leaves no manifest and nothing of the period; a retryable attempt publishes nothing', async () => {
      const { store, run, events, metrics, logger } = setup();
      await sandbox.admin.faults.add({
        route: 'GET /accounting/transactions/',
        query: { page: '2' },
        times: 'always',
        fault: { type: 'status', status: 503 },
      });

      const outcome = await run({ last: false });
      expect(outcome).toMatchObject({ status: 'failed', retryable: true, final: false });
      expect(await listKeys(store, periodPrefix(company, OCTOBER))).toEqual([]);
      expect(events.events).toEqual([]);
      expect(metrics.sum('ExportAttemptFailed')).toBe(1);
      // A retry is an expected outcome: WARN, naming the company, the month and the error's class and status.
      expect(logger.entries().filter((e) => e.level === 'error')).toEqual([]);
      expect(logger.entries().find((e) => e.message === 'export attempt failed; the queue will retry')).toMatchObject({
        level: 'warn',
        companyId: company,
        period: '2026-10',
        attempt: 1,
        retryable: true,
        error: expect.objectContaining({ name: 'ServerError', status: 503 }),
      });

      // The queue's last delivery: the failure that stays is ERROR.
      const logged = logger.entries().length;
      expect(await run({ last: true })).toMatchObject({ status: 'failed', retryable: true, final: true });
      expect(
        logger
          .entries()
          .slice(logged)
          .filter((e) => e.level === 'error')
          .map((e) => e.message),
      ).toEqual(['export failed']);
    });

    it('a failed re-run keeps the previous complete export intact and reports where it is', async () => {
      const { store, run, events } = setup();
      await completed(run());
      const before = await snapshot(store, periodPrefix(company, OCTOBER));
      await sandbox.admin.faults.add({
        route: 'GET /accounting/transactions/',
        query: { page: '3' },
        times: 'always',
        fault: { type: 'status', status: 500 },
      });

      const outcome = await run();
      expect(outcome).toMatchObject({ status: 'failed', retryable: true, final: true });
      expect(await snapshot(store, periodPrefix(company, OCTOBER))).toEqual(before);
      const failed = events.ofType(EXPORT_EVENT_TYPES.failed);
      expect(failed).toHaveLength(1);
      expect(failed[0]!.detail).toMatchObject({
        companyId: company,
        period: '2026-10',
        manifestKey: manifestKey(company, OCTOBER),
        manifestUrl: store.url(manifestKey(company, OCTOBER)),
        previousExport: true,
        retryable: true,
        errorClass: 'ServerError',
        status: 500,
      });
    });

    it('a list that changes while it is read fails the export instead of exporting a skewed month', async () => {
      const { store, run } = setup();
      await sandbox.admin.faults.add({ route: 'GET /accounting/transactions/', times: 1, fault: { type: 'count_mismatch', delta: 1 } });
      const outcome = await run();
      expect(outcome.status).toBe('failed');
      expect(outcome.status === 'failed' && outcome.error).toBeInstanceOf(ExportCountMismatchError);
      expect(outcome.status === 'failed' && outcome.retryable).toBe(true);
      expect(await store.head(manifestKey(company, OCTOBER))).toBeUndefined();
    });

    it('pages that repeat the previous page’s last records while the count holds: each record written once, totals exact, the repeats counted', async () => {
      const reference = await completed(setup().run());
      const { store, run, logger } = setup();
      await sandbox.admin.faults.add({
        route: 'GET /accounting/transactions/',
        query: { page: '2' },
        times: 1,
        fault: { type: 'page_overlap', items: 2 },
      });
      await sandbox.admin.faults.add({
        route: 'GET /accounting/categories/',
        query: { page: '2' },
        times: 1,
        fault: { type: 'page_overlap' },
      });
      const summary = await completed(run());
      expect((await sandbox.admin.stats()).faultsFired).toMatchObject({ page_overlap: 2 });

      // Every file is the one an export without the repeats writes, byte for byte.
      expect(summary.manifest.objects.map((o) => [o.dataset, o.format, o.records, o.sha256])).toEqual(
        reference.manifest.objects.map((o) => [o.dataset, o.format, o.records, o.sha256]),
      );
      const api = await apiOctober();
      const csv = (await objectText(store, summary.datasets.transactions!.objects.find((o) => o.format === 'csv')!.key))
        .trimEnd()
        .split('\r\n');
      const idColumn = csv[0]!
        .replace(/^\uFEFF/, '')
        .split(',')
        .indexOf('public_id');
      expect(csv.slice(1).map((line) => line.split(',')[idColumn])).toEqual(api.ids);
      const parquet = summary.datasets.transactions!.objects.find((o) => o.format === 'parquet')!;
      const file = new Uint8Array(Buffer.from((await store.get(parquet.key))!)).buffer;
      const rows = await parquetReadObjects({
        file,
        metadata: parquetMetadata(file),
        columns: ['public_id'],
        compressors: PARQUET_DECOMPRESSORS,
      });
      expect(rows.map((r) => r.public_id)).toEqual(api.ids);
      const expected = await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-01', dateTo: '2026-10-31' });
      const totals: Record<string, Record<string, string>> = {};
      for (const t of summary.datasets.transactions!.totals) (totals[t.currency] ??= {})[t.cashflowType!] = t.amountMinor;
      expect(totals).toEqual(expected.totals);

      // Counted where a reader of the export sees it, and said.
      expect(summary.datasets.transactions).toMatchObject({ records: api.ids.length, duplicatesDropped: 2 });
      expect(summary.datasets.categories).toMatchObject({ records: 1005, duplicatesDropped: 1 });
      const manifest = (await readManifest(store, summary.manifestKey))!;
      expect(manifest.datasets.transactions).toMatchObject({ records: api.ids.length, duplicatesDropped: 2 });
      expect(manifest.datasets.categories).toMatchObject({ records: 1005, duplicatesDropped: 1 });
      expect(manifest.datasets.tax_reports).not.toHaveProperty('duplicatesDropped');
      expect(reference.manifest.datasets.transactions).not.toHaveProperty('duplicatesDropped');
      const repeats = logger.entries().filter((e) => e.message === 'accounting api warning' && e.type === 'duplicate_item');
      expect(
        repeats.map((e) => [e.level, String(e.request).replace(/^GET \/api\/v1\/accounting\/(\w+)\/.*[?&]page=(\d+).*$/, '$1 $2'), e.path]),
      ).toEqual([
        ['warn', 'categories 2', 'results[0]'],
        ['warn', 'transactions 2', 'results[0]'],
        ['warn', 'transactions 2', 'results[1]'],
      ]);
      const said = logger.entries().filter((e) => String(e.message).startsWith('records the service sent again'));
      expect(said.map((e) => [e.level, e.dataset, e.records])).toEqual([
        ['warn', 'categories', 1],
        ['warn', 'transactions', 2],
      ]);
    });

    it("a probe that misreads date_to as exclusive: the last day is in the files once, its repeats counted in the manifest and the event; the next month's first day is dropped and named, not counted outside the month", async () => {
      const { store, run, events, logger } = setup({ blindProbe: true });
      const summary = await completed(run());
      const count = async (dateFrom: string, dateTo: string) =>
        (await sandbox.admin.transactionSummary({ companyId: company, dateFrom, dateTo })).count;
      const [october, lastDay, firstOfNovember] = [
        await count('2026-10-01', '2026-10-31'),
        await count('2026-10-31', '2026-10-31'),
        await count('2026-11-01', '2026-11-01'),
      ];
      expect(lastDay).toBeGreaterThan(0);
      expect(firstOfNovember).toBeGreaterThan(0);
      const inclusive = dialect !== 'minimal';
      const csv = (await objectText(store, summary.datasets.transactions!.objects.find((o) => o.format === 'csv')!.key))
        .trimEnd()
        .split('\r\n');
      const header = csv[0]!.replace(/^\uFEFF/, '').split(',');
      const [idColumn, dayColumn] = [header.indexOf('public_id'), header.indexOf('value_date_local')];
      const rows = csv.slice(1).map((line) => line.split(','));
      const ids = rows.map((row) => row[idColumn]);
      expect(new Set(ids).size).toBe(ids.length);
      // The inclusive service's [31st, 1st] holds the 1st too: November's, which its own export reads, so not in October's files.
      expect(ids).toHaveLength(october);
      expect(rows.filter((row) => !row[dayColumn]!.startsWith('2026-10'))).toEqual([]);
      const manifest = (await readManifest(store, summary.manifestKey))!;
      expect(manifest.datasets.transactions).toMatchObject({
        records: october,
        dateTo: {
          setting: 'detect',
          read: 'exclusive',
          lastDayRecords: inclusive ? lastDay + firstOfNovember : lastDay,
          lastDayRepeats: inclusive ? lastDay : 0,
        },
      });
      expect(manifest.datasets.transactions!.dateTo!.nextDayDropped).toBe(inclusive ? firstOfNovember : undefined);
      expect(manifest.datasets.transactions!.duplicatesDropped).toBe(inclusive ? lastDay : undefined);
      // Not outside the month: no record of another month is in it.
      expect(manifest.datasets.transactions!.outsidePeriod).toBeUndefined();
      // The event says what the manifest says: November's 1st dropped, 0 when nothing was.
      expect(events.ofType(EXPORT_EVENT_TYPES.completed)[0]!.detail).toMatchObject({
        duplicatesDropped: { transactions: inclusive ? lastDay : 0 },
        transactionsOutsidePeriod: 0,
        transactionsNextDayDropped: inclusive ? firstOfNovember : 0,
      });
      const said = logger.entries().filter((e) => String(e.message).includes('repeated records the range already held'));
      expect(said.map((e) => [e.level, e.repeatsDropped, e.nextDayDropped])).toEqual(inclusive ? [['warn', lastDay, firstOfNovember]] : []);
      expect(logger.entries().filter((e) => String(e.message).startsWith('transactions dated outside the queried range'))).toEqual([]);
    });

    it('a permission the key lacks is a final, non-retryable failure on the first attempt', async () => {
      const narrow = (await sandbox.admin.createApiKey({ companyId: company, permissions: ['read_transactions', 'read_categories'] })).key;
      const events = new MemoryEventPublisher();
      const outcome = await exportCompanyPeriod(
        {
          store: setup().store,
          events,
          clock: ManualClock.autoAdvancing(),
          logger: new MemoryLogger(),
          toolVersion: '0.1.0',
          baseUrl: sandbox.baseUrl,
        },
        {
          companyId: company,
          period: '2026-10',
          credentials: apiKeyAuth(narrow),
          source: { kind: 'apiKey' },
          trigger: { kind: 'on_demand', requestId: 'test', via: 'event' },
          formats: ['csv'],
          attempt: { number: 1, last: false },
        },
      );
      expect(outcome).toMatchObject({ status: 'failed', retryable: false, final: true });
      expect(events.ofType(EXPORT_EVENT_TYPES.failed)[0]!.detail).toMatchObject({
        errorClass: 'PermissionDeniedError',
        previousExport: false,
        retryable: false,
      });
    });

    it('a re-run gives the same checksums, and ExportCompleted carries the manifest location and counts', async () => {
      const { store, run, events } = setup();
      const first = await completed(run());
      const second = await completed(run());
      expect(second.runId).not.toBe(first.runId);
      expect(second.manifest.objects.map((o) => [o.dataset, o.format, o.sha256, o.bytes])).toEqual(
        first.manifest.objects.map((o) => [o.dataset, o.format, o.sha256, o.bytes]),
      );
      const done = events.ofType(EXPORT_EVENT_TYPES.completed);
      expect(done).toHaveLength(2);
      expect(done[1]!.detail).toMatchObject({
        companyId: company,
        period: '2026-10',
        manifestKey: second.manifestKey,
        manifestUrl: store.url(second.manifestKey),
        runId: second.runId,
        records: { transactions: first.datasets.transactions!.records, tax_reports: 1, categories: 1005 },
        source: { kind: 'apiKey' },
      });
    });

    it('no secret in any log line, event, metric or exported object (decompressed)', async () => {
      const { store, run, events, logger, metrics } = setup();
      await sandbox.admin.faults.add({
        route: 'GET /accounting/transactions/',
        query: { page: '2' },
        times: 1,
        fault: { type: 'status', status: 401 },
      });
      await completed(run()).catch(() => undefined);
      await completed(run());

      const texts = [...logger.lines, JSON.stringify(events.events), JSON.stringify(metrics.recorded)];
      for (const key of await listKeys(store, ''))
        texts.push(await objectText(store, key), Buffer.from((await store.get(key))!).toString('latin1'));
      expect(texts.length).toBeGreaterThan(10);
      const canaries = [apiKey, apiKey.slice(4)];
      for (const text of texts) for (const canary of canaries) expect(text.includes(canary)).toBe(false);
      // Not vacuous: the texts hold the export itself (the company, every category name).
      expect(texts.filter((t) => t.includes(company)).length).toBeGreaterThan(3);
      expect(texts.some((t) => t.includes('Category 1004 ü€'))).toBe(true);
    });
  });
});
