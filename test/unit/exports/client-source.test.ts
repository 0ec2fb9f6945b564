import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { apiKeyAuth, createAccountingClient } from '../../../src/core/accounting-api';
import { parsePeriod, periodRange } from '../../../src/core/exports/formats/period';
import { PeriodExporter } from '../../../src/core/exports/formats/period-exporter';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { BASE_URL, COMPANY_A, category, fakeTransport, listHandler, transaction, type Handler } from '../accounting-api/fake-transport';

/**
 * The exporter's input is the client's own list items: `client.transactions.list(...)` goes in as
 * it is, with no adapter, and what the client kept lossless stays lossless in the files.
 */
describe('exporting straight from the typed client', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-client-source-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('takes PaginatedList sources; big integers, both amount encodings and labels come through exactly', async () => {
    const BIG = '9007199254740993'; // 2^53 + 1: JSON.parse alone would read 9007199254740992
    const items = [
      transaction(0, { amount: '__BIG__', cashflowType: 'Income', category: '10000000-0000-4000-8000-000000000001' }),
      transaction(1, { amount: '-49.99' }),
      ...Array.from({ length: 5 }, (_, i) => transaction(i + 2)),
    ];
    const transactions = listHandler('/accounting/transactions/', items, { sizeParam: 'page_size' });
    const categories = listHandler('/accounting/categories/', [category(1, { metadata: '{broken' })], { sizeParam: 'pageSize' });
    const handler: Handler = async (request, url) => {
      if (url.pathname.endsWith('/accounting/categories/')) return categories(request, url);
      const response = await transactions(request, url);
      return { ...response, body: response.body.replace('"__BIG__"', BIG) };
    };
    const fake = fakeTransport(handler);
    const client = createAccountingClient({
      baseUrl: BASE_URL,
      credentials: apiKeyAuth('sbx_AbCdEf1234567890abcdefghijklmnop'),
      transport: fake.transport,
      pageSize: 3,
    });
    const period = parsePeriod('2026-10');

    const store = new DirObjectStore(root);
    const summary = await new PeriodExporter({
      store,
      clock: new ManualClock(),
      logger: new MemoryLogger(),
      toolVersion: 'test',
      runIds: () => 'run-1',
    }).run({
      company: COMPANY_A,
      period,
      sources: { transactions: client.transactions.list(periodRange(period)), categories: client.categories.list() },
      datasets: ['transactions', 'categories'],
      formats: ['jsonl', 'csv'],
      sourceBaseUrl: BASE_URL,
    });

    expect(fake.urls().filter((u) => u.pathname.endsWith('/accounting/transactions/'))).toHaveLength(3);
    expect(summary.datasets.transactions?.records).toBe(7);
    const income = summary.datasets.transactions!.totals.find((t) => t.cashflowType === 'INCOME')!;
    expect(income.amountMinor).toBe(BIG);
    expect(income.amount).toBe('90071992547409.93');

    const jsonl = gunzipSync(Buffer.from((await store.get(summary.datasets.transactions!.objects.find((o) => o.format === 'jsonl')!.key))!))
      .toString()
      .split('\n');
    // Exact digits, as a string: the client's lossless parse decided the JSON type (docs/exports.md).
    expect(jsonl[0]).toContain(`"amount":"${BIG}"`);
    expect(jsonl[0]).toContain('"cashflowType":"Income"');
    const csv = Buffer.from((await store.get(summary.datasets.transactions!.objects.find((o) => o.format === 'csv')!.key))!).toString();
    expect(csv).toContain(',90071992547409.93,9007199254740993,EUR,INCOME,10000000-0000-4000-8000-000000000001,Category 1,');
    expect(csv).toContain(',-49.99,-4999,EUR,EXPENSE,');
    // Category metadata keeps the text as sent, even where the client could not parse it.
    const categoriesCsv = Buffer.from(
      (await store.get(summary.datasets.categories!.objects.find((o) => o.format === 'csv')!.key))!,
    ).toString();
    expect(categoriesCsv.split('\r\n')[1]).toMatch(/,\{broken$/);
  });
});
