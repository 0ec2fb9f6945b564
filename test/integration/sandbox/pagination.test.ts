import { request } from 'node:http';
import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

describe('sandbox: list envelopes and pagination', () => {
  let sandbox: RunningSandbox;
  let companyId: string;
  let key: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock: new ManualClock(), demo: false });
    companyId = (await sandbox.admin.createCompany({ name: 'Pages Co' })).publicId;
    await sandbox.admin.generateTransactions({ companyId, month: '2026-10', count: 2_500 });
    for (let i = 0; i < 120; i++) await sandbox.admin.addCategory({ companyId, name: `Category ${i}` });
    for (let i = 0; i < 45; i++) await sandbox.admin.addTaxReport({ companyId, periodStart: '2026-01-01', periodEnd: '2026-01-31' });
    key = (await sandbox.admin.createApiKey({ companyId, permissions: ['full_access'] })).key;
    for (let i = 0; i < 30; i++) await sandbox.admin.createApiKey({ companyId, permissions: ['read_transactions'] });
  });
  afterAll(() => sandbox.stop());

  const get = (path: string) => call(sandbox.baseUrl, path, { bearer: key });

  it('uses a different default page size per resource', async () => {
    expect((await get('/companies/')).body.results).toHaveLength(1);
    expect((await get(`/companies/${companyId}/taxes/reports/`)).body.results).toHaveLength(20);
    expect((await get('/accounting/transactions/')).body.results).toHaveLength(100);
    expect((await get('/accounting/categories/')).body.results).toHaveLength(50);
    expect((await get('/api-keys/')).body.results).toHaveLength(25);
  });

  it('returns count, absolute next/previous links that carry every parameter, and results', async () => {
    const first = await get('/accounting/transactions/?date_from=2026-10-01&date_to=2026-10-31&page_size=1000&unknown=kept');
    expect(first.status).toBe(200);
    expect(Object.keys(first.body)).toEqual(['count', 'next', 'previous', 'results']);
    expect(first.body.count).toBe(2_500);
    expect(first.body.previous).toBeNull();
    const next = new URL(first.body.next);
    expect(`${next.origin}/api/v1`).toBe(sandbox.baseUrl);
    expect(next.pathname).toBe('/api/v1/accounting/transactions/');
    expect(Object.fromEntries(next.searchParams)).toEqual({
      date_from: '2026-10-01',
      date_to: '2026-10-31',
      page_size: '1000',
      unknown: 'kept',
      page: '2',
    });

    const second = await get(first.body.next);
    expect(new URL(second.body.previous).searchParams.get('page')).toBe('1');
    const third = await get(second.body.next);
    expect(third.body.results).toHaveLength(500);
    expect(third.body.next).toBeNull();
    expect(new URL(third.body.previous).searchParams.get('page_size')).toBe('1000');

    const ids = [first, second, third].flatMap((p) => p.body.results.map((t: { publicId: string }) => t.publicId));
    expect(new Set(ids).size).toBe(2_500);
  });

  it('honours each resource its own spelling and ignores the other', async () => {
    expect((await get('/accounting/categories/?pageSize=7')).body.results).toHaveLength(7);
    expect((await get('/accounting/categories/?page_size=7')).body.results).toHaveLength(50);
    expect((await get('/accounting/transactions/?page_size=7')).body.results).toHaveLength(7);
    expect((await get('/accounting/transactions/?pageSize=7')).body.results).toHaveLength(100);
    const link = new URL((await get('/accounting/categories/?pageSize=7')).body.next);
    expect(link.searchParams.get('pageSize')).toBe('7');
  });

  it('clamps page sizes above 1000 and refuses zero, negative or non-numeric sizes and pages', async () => {
    const clamped = await get('/accounting/transactions/?page_size=5000');
    expect(clamped.body.results).toHaveLength(1000);
    expect(new URL(clamped.body.next).searchParams.get('page_size')).toBe('5000');
    for (const bad of ['page_size=0', 'page_size=-1', 'page_size=ten', 'page=0', 'page=x']) {
      const res = await get(`/accounting/transactions/?${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(bad.split('=')[0]);
    }
  });

  it('answers 404 for a page past the last, and an empty first page for an empty list', async () => {
    const past = await get('/accounting/transactions/?page_size=1000&page=4');
    expect(past.status).toBe(404);
    expect(past.body.error.code).toBe('not_found');
    const empty = await get('/accounting/transactions/?date_from=2027-01-01');
    expect(empty.body).toEqual({ count: 0, next: null, previous: null, results: [] });
  });

  it('orders lists stably: transactions by instant then publicId, others by publicId', async () => {
    const txs = (await get('/accounting/transactions/?page_size=1000')).body.results as { valueDate: string; publicId: string }[];
    for (let i = 1; i < txs.length; i++) {
      const [prev, cur] = [txs[i - 1]!, txs[i]!];
      const order = Date.parse(prev.valueDate) - Date.parse(cur.valueDate) || (prev.publicId < cur.publicId ? -1 : 1);
      expect(order).toBeLessThan(0);
    }
    const categories = (await get('/accounting/categories/?pageSize=1000')).body.results as { publicId: string }[];
    expect(categories.map((c) => c.publicId)).toEqual(categories.map((c) => c.publicId).sort());
    expect(categories).toHaveLength(120);
  });

  it('builds links from the Host the caller used', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: sandbox.port,
          path: '/api/v1/accounting/categories/?pageSize=10',
          headers: { host: `sandbox.test:${sandbox.port}`, authorization: `Bearer ${key}` },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect((JSON.parse(body) as { next: string }).next).toBe(
      `http://sandbox.test:${sandbox.port}/api/v1/accounting/categories/?pageSize=10&page=2`,
    );
  });
});
