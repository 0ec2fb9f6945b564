import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call, minor } from './support';

interface Tx {
  publicId: string;
  amount: number;
  cashflowType: string;
  valueDate: string;
}

const MILLION = 1_000_000;
/** First index of 0-based day d of a month of `days` days holding `count` records. */
const dayStart = (d: number, count: number, days: number) => Math.ceil((d * count) / days);

describe('sandbox: generated datasets (1M transactions, not held in memory)', () => {
  let sandbox: RunningSandbox;
  let big: string;
  let twoMonths: string;
  let key: string;
  let heapGrowth: number;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, seed: 42, clock: new ManualClock(), demo: false });
    big = (await sandbox.admin.createCompany({ name: 'Big Co' })).publicId;
    twoMonths = (await sandbox.admin.createCompany({ name: 'Boundary Co' })).publicId;
    const heapBefore = process.memoryUsage().heapUsed;
    await sandbox.admin.generateTransactions({ companyId: big, month: '2026-10', count: MILLION });
    heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    await sandbox.admin.generateTransactions({ companyId: twoMonths, month: '2026-10', count: 100_000 });
    await sandbox.admin.generateTransactions({ companyId: twoMonths, month: '2026-11', count: 100_000 });
    key = (await sandbox.admin.createApiKey({ companyId: big, permissions: ['read_transactions'] })).key;
  });
  afterAll(() => sandbox.stop());

  const page = async (path: string, bearer = key) =>
    (await call(sandbox.baseUrl, path, { bearer })).body as { count: number; next: string | null; results: Tx[] };

  it('registers a million records without materialising them', () => {
    expect(heapGrowth).toBeLessThan(20 * 1024 * 1024);
  });

  it('serves the first, a middle and the last page of 1,000,000', async () => {
    const first = await page('/accounting/transactions/?page_size=1000');
    expect(first.count).toBe(MILLION);
    expect(first.results).toHaveLength(1000);
    expect(first.results[0]!.valueDate).toMatch(/^2026-10-01T00:05:00\.000\+02:00$/);

    const middle = await page('/accounting/transactions/?page_size=1000&page=500');
    expect(middle.results).toHaveLength(1000);
    expect(middle.results[0]!.publicId.endsWith((499_000).toString(16).padStart(12, '0'))).toBe(true);

    const last = await page('/accounting/transactions/?page_size=1000&page=1000');
    expect(last.next).toBeNull();
    expect(last.results.at(-1)!.valueDate).toMatch(/^2026-10-31T23:\d{2}:00\.000-03:00$/);
    expect(last.results.at(-1)!.publicId.endsWith((MILLION - 1).toString(16).padStart(12, '0'))).toBe(true);
    expect((await call(sandbox.baseUrl, '/accounting/transactions/?page_size=1000&page=1001', { bearer: key })).status).toBe(404);
  });

  it('computes a date filter as an index range: counts and edges match day arithmetic', async () => {
    const filtered = await page('/accounting/transactions/?date_from=2026-10-10&date_to=2026-10-12&page_size=1000');
    expect(filtered.count).toBe(dayStart(12, MILLION, 31) - dayStart(9, MILLION, 31));
    expect(filtered.results[0]!.valueDate.startsWith('2026-10-10')).toBe(true);
    const lastPage = Math.ceil(filtered.count / 1000);
    const tail = await page(`/accounting/transactions/?date_from=2026-10-10&date_to=2026-10-12&page_size=1000&page=${lastPage}`);
    expect(tail.results.at(-1)!.valueDate.startsWith('2026-10-12')).toBe(true);
    expect(tail.next).toBeNull();
    expect((await page('/accounting/transactions/?date_from=2026-11-01')).count).toBe(0);
  });

  it('returns every record of two adjacent months exactly once, in instant order, across the boundary', async () => {
    const boundaryKey = (await sandbox.admin.createApiKey({ companyId: twoMonths, permissions: ['read_transactions'] })).key;
    const seen: Tx[] = [];
    let next: string | null = '/accounting/transactions/?date_from=2026-10-31&date_to=2026-11-01&page_size=1000';
    let count = 0;
    while (next) {
      const body = await page(next, boundaryKey);
      count = body.count;
      seen.push(...body.results);
      next = body.next;
    }
    const perDay = (days: number, d: number) => dayStart(d + 1, 100_000, days) - dayStart(d, 100_000, days);
    expect(count).toBe(perDay(31, 30) + perDay(30, 0));
    expect(seen).toHaveLength(count);
    expect(new Set(seen.map((t) => t.publicId)).size).toBe(count);
    expect(seen.filter((t) => t.valueDate.startsWith('2026-10-31')).length).toBe(perDay(31, 30));
    const instants = seen.map((t) => Date.parse(t.valueDate));
    expect(instants.every((v, i) => i === 0 || instants[i - 1]! <= v)).toBe(true);
    // The months interleave in UTC: November's first records come before October's last ones.
    const firstNovember = seen.findIndex((t) => t.valueDate.startsWith('2026-11-01'));
    const lastOctober = seen.map((t) => t.valueDate.startsWith('2026-10-31')).lastIndexOf(true);
    expect(firstNovember).toBeLessThan(lastOctober);

    const october = await page('/accounting/transactions/?date_from=2026-10-01&date_to=2026-10-31&page_size=1', boundaryKey);
    expect(october.count).toBe(100_000);
  });

  it('derives records from the seed: the same seed gives the same data, another seed other data', async () => {
    const again = await startSandbox({ port: 0, seed: 42, clock: new ManualClock(), demo: false });
    const other = await startSandbox({ port: 0, seed: 43, clock: new ManualClock(), demo: false });
    try {
      const read = async (s: RunningSandbox) => {
        const company = (await s.admin.createCompany({ publicId: big, name: 'Big Co' })).publicId;
        await s.admin.generateTransactions({ companyId: company, month: '2026-10', count: MILLION });
        const k = (await s.admin.createApiKey({ companyId: company, permissions: ['read_transactions'] })).key;
        return (await call(s.baseUrl, '/accounting/transactions/?page_size=50&page=777', { bearer: k })).body.results as Tx[];
      };
      const mine = await page('/accounting/transactions/?page_size=50&page=777');
      expect((await read(again)).map((t) => [t.publicId, t.amount, t.valueDate])).toEqual(
        mine.results.map((t) => [t.publicId, t.amount, t.valueDate]),
      );
      expect((await read(other))[0]!.publicId).not.toBe(mine.results[0]!.publicId);
    } finally {
      await Promise.all([again.stop(), other.stop()]);
    }
  });

  it('sums exactly what it serves', async () => {
    const body = await page('/accounting/transactions/?date_from=2026-10-20&date_to=2026-10-20&page_size=1000');
    let all: Tx[] = body.results;
    for (let p = 2; p <= Math.ceil(body.count / 1000); p++) {
      all = all.concat((await page(`/accounting/transactions/?date_from=2026-10-20&date_to=2026-10-20&page_size=1000&page=${p}`)).results);
    }
    const summary = await sandbox.admin.transactionSummary({ companyId: big, dateFrom: '2026-10-20', dateTo: '2026-10-20' });
    expect(summary.count).toBe(all.length);
    const sum = (type: string) =>
      all
        .filter((t) => t.cashflowType === type)
        .reduce((s, t) => s + minor(t.amount), 0n)
        .toString();
    expect(summary.totals.EUR).toEqual({ EXPENSE: sum('EXPENSE'), INCOME: sum('INCOME') });
  });
});
