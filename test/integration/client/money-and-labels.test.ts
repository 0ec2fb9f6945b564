import { type PageItem, type Transaction, formatMinorUnits, toUtcIso } from '../../../src/core/accounting-api';
import { type World, startWorld } from './support';

const OCTOBER = { dateFrom: '2026-10-01', dateTo: '2026-10-31' } as const;
const INTEGER_WIRE = /^-?\d+$/; // a JSON number, or the digit string lossless JSON makes of one beyond 2^53
const DECIMAL_WIRE = /^-?\d+\.\d{2}$/;

type Encoding = 'integer' | 'string' | 'mixed';
const wireKind = (amount: unknown): 'integer' | 'string' =>
  typeof amount === 'number' || (typeof amount === 'string' && INTEGER_WIRE.test(amount)) ? 'integer' : 'string';

/** Exact sums per currency and cashflow type, as the sandbox's transactionSummary gives them. */
function totals(items: PageItem<Transaction>[]): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, bigint>> = {};
  for (const { parsed } of items) {
    const byType = (out[parsed.currency ?? 'none'] ??= {});
    const type = parsed.cashflowType ?? 'none';
    byType[type] = (byType[type] ?? 0n) + parsed.amount;
  }
  return Object.fromEntries(
    Object.entries(out).map(([c, t]) => [c, Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v.toString()]))]),
  );
}

describe('client against the sandbox: money encodings and display labels', () => {
  let world: World;
  let edgeIds: string[];
  const edgeAmounts = [-50n, 123_456_789_012_345_678_901n, -9_007_199_254_740_993n, 4999n, -1n];

  beforeAll(async () => {
    world = await startWorld();
    const { admin } = world.sandbox;
    const { companyId } = world;
    await admin.generateTransactions({ companyId, month: '2026-10', count: 300 });
    edgeIds = (
      await admin.addTransactions({
        companyId,
        transactions: [
          { amount: '-0.50', valueDate: '2026-10-15T10:00:00+02:00', cashflowType: 'EXPENSE', description: 'bank fee' },
          { amount: '123456789012345678901', valueDate: '2026-10-20T12:00:00Z', cashflowType: 'INCOME', description: 'beyond 2^53' },
          { amount: '-9007199254740993', valueDate: '2026-10-21T12:00:00Z', cashflowType: 'EXPENSE', description: '-(2^53 + 1)' },
          { amount: 4999, valueDate: '2026-10-31T23:30:00-02:00', cashflowType: 'INCOME', description: 'November in UTC' },
          { amount: -1, valueDate: '2026-10-01T00:15:00+05:30', cashflowType: 'EXPENSE', description: 'September in UTC' },
        ],
      })
    ).publicIds;
    for (let m = 1; m <= 8; m++) {
      await admin.addTaxReport({
        companyId,
        periodStart: `2026-0${m}-01`,
        periodEnd: `2026-0${m}-28`,
        status: m % 2 ? 'draft' : 'submitted',
        amountDue: m * 100_003 - 400_000,
      });
    }
    for (let i = 0; i < 8; i++) await admin.addCategory({ companyId, name: `Category ${i}`, cashflowType: i % 2 ? 'INCOME' : 'EXPENSE' });
  });
  afterAll(() => world.sandbox.stop());
  afterEach(() => world.sandbox.admin.configure({ amountEncoding: 'integer', displayLabels: false }));

  async function readUnder(encoding: Encoding) {
    await world.sandbox.admin.configure({ amountEncoding: encoding });
    const client = world.client();
    const pages = [];
    for await (const page of client.transactions.list({ ...OCTOBER, pageSize: 100 }).pages()) pages.push(page);
    const reports = await client.taxReports.list(world.companyId).all();
    return { pages, items: pages.flatMap((p) => p.items), reports };
  }

  it('parses both encodings (and both mixed on one page) to the same exact amounts, summing to the sandbox totals', async () => {
    const summary = await world.sandbox.admin.transactionSummary({ companyId: world.companyId, ...OCTOBER });
    expect(summary.count).toBe(305);
    const parsedBy: Record<string, Map<string, bigint>> = {};
    const reportsBy: Record<string, Map<string, bigint | null>> = {};
    for (const encoding of ['integer', 'string', 'mixed'] as const) {
      const { pages, items, reports } = await readUnder(encoding);
      expect(pages.length).toBeGreaterThan(3);
      expect(items).toHaveLength(summary.count);
      expect(totals(items)).toEqual(summary.totals);

      const kinds = items.map((i) => wireKind(i.raw.amount));
      if (encoding === 'integer') expect(new Set(kinds)).toEqual(new Set(['integer']));
      if (encoding === 'string') expect(items.every((i) => DECIMAL_WIRE.test(i.raw.amount as string))).toBe(true);
      // Mixed: every page carries both encodings.
      if (encoding === 'mixed')
        for (const page of pages) expect(new Set(page.items.map((i) => wireKind(i.raw.amount)))).toEqual(new Set(['integer', 'string']));
      expect(new Set(reports.map((r) => wireKind(r.raw.amountDue)))).toEqual(
        encoding === 'mixed' ? new Set(['integer', 'string']) : new Set([encoding]),
      );

      parsedBy[encoding] = new Map(items.map((i) => [i.parsed.publicId, i.parsed.amount]));
      reportsBy[encoding] = new Map(reports.map((r) => [r.parsed.pk, r.parsed.amountDue]));
      expect(edgeIds.map((id) => parsedBy[encoding]!.get(id))).toEqual(edgeAmounts);
    }
    expect(parsedBy.string).toEqual(parsedBy.integer);
    expect(parsedBy.mixed).toEqual(parsedBy.integer);
    expect(reportsBy.string).toEqual(reportsBy.integer);
    expect(reportsBy.mixed).toEqual(reportsBy.integer);
  });

  it('keeps amounts beyond 2^53 exact in raw too: digits in the integer encoding, the decimal text in the string one', async () => {
    const huge = edgeIds[1]!;
    const asInteger = (await readUnder('integer')).items.find((i) => i.parsed.publicId === huge)!;
    expect(asInteger.raw.amount).toBe('123456789012345678901');
    const asString = (await readUnder('string')).items.find((i) => i.parsed.publicId === huge)!;
    expect(asString.raw.amount).toBe('1234567890123456789.01');
    expect(formatMinorUnits(asString.parsed.amount)).toBe('1234567890123456789.01');
  });

  it('normalises display labels on read: transactions, categories and tax reports', async () => {
    await world.sandbox.admin.configure({ displayLabels: true });
    const client = world.client();
    const transactions = await client.transactions.list(OCTOBER).all();
    const categories = await client.categories.list().all();
    const reports = await client.taxReports.list(world.companyId).all();

    // The sandbox did send labels (else this test would prove nothing)...
    expect(new Set(transactions.map((t) => t.raw.cashflowType))).toEqual(new Set(['EXPENSE', 'INCOME', 'Expense', 'Income']));
    expect(categories.some((c) => c.raw.cashflowType === 'Expense' || c.raw.cashflowType === 'Income')).toBe(true);
    expect(reports.some((r) => r.raw.status === 'Draft' || r.raw.status === 'Submitted')).toBe(true);
    // ...and the client reads them as the request values.
    for (const { parsed } of transactions) expect(parsed.cashflowType).toBe(parsed.amount < 0n ? 'EXPENSE' : 'INCOME');
    for (const { raw, parsed } of categories) expect(parsed.cashflowType).toBe(String(raw.cashflowType).toUpperCase());
    for (const { raw, parsed } of reports) expect(parsed.status).toBe(String(raw.status).toLowerCase());
    expect(new Set(reports.map((r) => r.parsed.status))).toEqual(new Set(['draft', 'submitted']));
  });

  it('keeps valueDate as written: the date in its own offset decides the month, at both boundaries', async () => {
    const client = world.client();
    const october = await client.transactions.list(OCTOBER).all();
    const late = october.find((t) => t.parsed.publicId === edgeIds[3])!;
    const early = october.find((t) => t.parsed.publicId === edgeIds[4])!;
    expect(late.parsed.valueDate).toBe('2026-10-31T23:30:00-02:00');
    expect(toUtcIso(late.parsed.valueDate)).toBe('2026-11-01T01:30:00.000Z');
    expect(early.parsed.valueDate).toBe('2026-10-01T00:15:00+05:30');
    expect(toUtcIso(early.parsed.valueDate)).toBe('2026-09-30T18:45:00.000Z');
    const november = await client.transactions.list({ dateFrom: '2026-11-01', dateTo: '2026-11-30' }).all();
    const september = await client.transactions.list({ dateFrom: '2026-09-01', dateTo: '2026-09-30' }).all();
    expect([...november, ...september].map((t) => t.parsed.publicId)).not.toContain(late.parsed.publicId);
    expect([...november, ...september].map((t) => t.parsed.publicId)).not.toContain(early.parsed.publicId);
  });
});
