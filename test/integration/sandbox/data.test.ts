import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call, minor, uuidPattern } from './support';

interface Tx {
  publicId: string;
  amount: number | string;
  cashflowType: string;
  valueDate: string;
  currency: string;
  description: string;
}

describe('sandbox: data conventions', () => {
  let sandbox: RunningSandbox;
  let companyId: string;
  let key: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock: new ManualClock(), demo: false });
    companyId = (await sandbox.admin.createCompany({ name: 'Data Co', currency: 'EUR' })).publicId;
    const parent = await sandbox.admin.addCategory({ companyId, name: 'Operating expenses', metadata: '{"accountCode":"4900"}' });
    await sandbox.admin.addCategory({ companyId, name: 'Bank fees', parent: parent.publicId, metadata: '{"broken":', examples: '' });
    await sandbox.admin.generateTransactions({ companyId, month: '2026-10', count: 400 });
    await sandbox.admin.addTransactions({
      companyId,
      transactions: [
        { amount: -4999, valueDate: '2026-10-31T23:30:00-02:00', description: 'November in UTC, October as written' },
        { amount: 125000, valueDate: '2026-11-01T00:15:00+05:30', description: 'October in UTC, November as written' },
        { amount: '-50', valueDate: '2026-09-30T23:59:59Z', description: 'last second of September' },
        { amount: '90071992547409930', valueDate: '2026-10-15T12:00:00+01:00', description: 'beyond 2^53' },
      ],
    });
    await sandbox.admin.addTaxReport({
      companyId,
      periodStart: '2026-09-01',
      periodEnd: '2026-09-30',
      status: 'submitted',
      amountDue: '1234.56',
    });
    key = (await sandbox.admin.createApiKey({ companyId, permissions: ['full_access'] })).key;
  });
  afterAll(() => sandbox.stop());

  const get = (path: string) => call(sandbox.baseUrl, path, { bearer: key });
  const october = async () =>
    (await get('/accounting/transactions/?date_from=2026-10-01&date_to=2026-10-31&page_size=1000')).body.results as Tx[];

  afterEach(() => sandbox.admin.configure({ amountEncoding: 'integer', displayLabels: false }));

  it('sends amounts as integer minor units by default; expenses negative, income positive', async () => {
    const txs = await october();
    const regular = txs.filter((t) => t.description !== 'beyond 2^53');
    expect(regular.length).toBe(txs.length - 1);
    expect(regular.every((t) => Number.isInteger(t.amount))).toBe(true);
    expect(regular.every((t) => (t.cashflowType === 'EXPENSE' ? Number(t.amount) < 0 : Number(t.amount) > 0))).toBe(true);
    expect(new Set(txs.map((t) => t.cashflowType))).toEqual(new Set(['EXPENSE', 'INCOME']));
  });

  it('sends an integer beyond 2^53 as exact JSON digits', async () => {
    const page = await get('/accounting/transactions/?date_from=2026-10-15&date_to=2026-10-15&page_size=1000');
    expect(page.text).toContain('"amount":90071992547409930,');
  });

  it('sends decimal strings with two fraction digits, or both encodings on one page, for the same amounts', async () => {
    const asIntegers = await october();
    await sandbox.admin.configure({ amountEncoding: 'string' });
    const asStrings = await october();
    expect(asStrings.every((t) => typeof t.amount === 'string' && /^-?\d+\.\d{2}$/.test(t.amount))).toBe(true);
    expect(asStrings.find((t) => t.description === 'November in UTC, October as written')?.amount).toBe('-49.99');
    expect(asStrings.find((t) => t.description === 'beyond 2^53')?.amount).toBe('900719925474099.30');

    await sandbox.admin.configure({ amountEncoding: 'mixed' });
    const mixed = await october();
    expect(new Set(mixed.map((t) => typeof t.amount))).toEqual(new Set(['number', 'string']));
    // JSON.parse rounds the integer beyond 2^53, so that one is compared as text (previous test).
    const exact = (txs: Tx[]) => txs.filter((t) => t.description !== 'beyond 2^53').map((t) => minor(t.amount));
    expect(exact(asStrings)).toEqual(exact(asIntegers));
    expect(exact(mixed)).toEqual(exact(asIntegers));
    // A record keeps its encoding from page to page.
    expect((await october()).map((t) => t.amount)).toEqual(mixed.map((t) => t.amount));
  });

  it('shows display labels for some records when configured', async () => {
    await sandbox.admin.configure({ displayLabels: true });
    const labels = new Set((await october()).map((t) => t.cashflowType));
    expect(labels).toEqual(new Set(['EXPENSE', 'INCOME', 'Expense', 'Income']));
    const report = (await get(`/companies/${companyId}/taxes/reports/`)).body.results[0];
    expect(['submitted', 'Submitted']).toContain(report.status);
  });

  it('keeps valueDate a timestamp with its own offset, with several offsets', async () => {
    const txs = await october();
    expect(txs.every((t) => /T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})$/.test(t.valueDate))).toBe(true);
    expect(new Set(txs.map((t) => t.valueDate.slice(-6))).size).toBeGreaterThan(5);
  });

  it('filters on the date as written in its own offset, at both month boundaries, inclusively', async () => {
    const oct = await october();
    const descriptions = oct.map((t) => t.description);
    expect(descriptions).toContain('November in UTC, October as written');
    expect(descriptions).not.toContain('October in UTC, November as written');
    expect(descriptions).not.toContain('last second of September');
    expect(oct.every((t) => t.valueDate.startsWith('2026-10-'))).toBe(true);

    const nov = (await get('/accounting/transactions/?date_from=2026-11-01&date_to=2026-11-30')).body.results as Tx[];
    expect(nov.map((t) => t.description)).toEqual(['October in UTC, November as written']);
    const lastDay = (await get('/accounting/transactions/?date_from=2026-10-31&date_to=2026-10-31&page_size=1000')).body.results as Tx[];
    expect(lastDay.length).toBeGreaterThan(1);
    expect(lastDay.every((t) => t.valueDate.startsWith('2026-10-31'))).toBe(true);
    // Generated boundary records: the first of the month is still September in UTC, the last already November.
    expect(oct.some((t) => t.valueDate.startsWith('2026-10-01T00:') && t.valueDate.endsWith('+02:00'))).toBe(true);
    expect(oct.some((t) => t.valueDate.startsWith('2026-10-31T23:') && t.valueDate.endsWith('-03:00'))).toBe(true);

    const bad = await get('/accounting/transactions/?date_from=2026-13-01');
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('date_from');
  });

  it('serves categories with parent, metadata as JSON text (one invalid) and possibly empty examples', async () => {
    const categories = (await get('/accounting/categories/')).body.results as Record<string, string | null>[];
    const parent = categories.find((c) => c.name === 'Operating expenses')!;
    const child = categories.find((c) => c.name === 'Bank fees')!;
    expect(child.parent).toBe(parent.publicId);
    expect(parent.parent).toBeNull();
    expect(JSON.parse(parent.metadata!)).toEqual({ accountCode: '4900' });
    expect(() => JSON.parse(child.metadata!)).toThrow();
    expect(child.examples).toBe('');
    expect(child).toMatchObject({ cashflowType: 'EXPENSE', vatApplied: 'YES' });
  });

  it('identifies tax reports by pk and sends their money like transactions', async () => {
    const report = (await get(`/companies/${companyId}/taxes/reports/`)).body.results[0];
    expect(report.pk).toMatch(uuidPattern);
    expect(report).not.toHaveProperty('publicId');
    expect(report).toMatchObject({
      type: 'VAT_RETURN',
      periodStart: '2026-09-01',
      periodEnd: '2026-09-30',
      amountDue: 123456,
      currency: 'EUR',
    });
  });

  it('keeps paths exact: no trailing slash, no route', async () => {
    const res = await get('/accounting/transactions');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect(res.headers.get('x-request-id')).toBe(res.body.error.requestId);
    expect((await call(sandbox.baseUrl.replace('/api/v1', '/api/v2'), '/companies/', { bearer: key })).status).toBe(404);
  });
});
