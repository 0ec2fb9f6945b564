import fc from 'fast-check';
import { AmountSums, TotalsAccumulator } from '../../../src/core/exports/formats/totals';

/**
 * The manifest's totals are exact whatever the amounts: AmountSums adds small amounts in a number
 * and the rest in bigint, and must agree with a plain bigint sum, across the 2^52 and 2^53 edges.
 */
describe('AmountSums', () => {
  const EDGES = [0n, 1n, -1n, 2n ** 52n - 1n, 2n ** 52n, 2n ** 53n + 1n, -(2n ** 52n) + 1n, -(2n ** 53n) - 1n, 10n ** 14n, 10n ** 18n];
  const amount = fc.oneof(
    fc.bigInt({ min: -(10n ** 6n), max: 10n ** 6n }),
    fc.constantFrom(...EDGES),
    fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }),
  );
  const entry = fc.record({
    currency: fc.constantFrom('EUR', 'JPY', 'KWD'),
    cashflowType: fc.constantFrom(null, 'INCOME', 'EXPENSE'),
    minor: amount,
  });

  it('equals a bigint sum per currency and cashflow type, with the records counted', () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 300 }), (entries) => {
        const sums = new AmountSums();
        const want = new Map<string, { records: number; minor: bigint }>();
        for (const e of entries) {
          sums.add(e.currency, e.cashflowType, 1, e.minor);
          const key = `${e.currency}/${e.cashflowType}`;
          const w = want.get(key) ?? { records: 0, minor: 0n };
          want.set(key, { records: w.records + 1, minor: w.minor + e.minor });
        }
        const got = sums.result();
        expect(got).toHaveLength(want.size);
        for (const t of got) {
          const w = want.get(`${t.currency}/${t.cashflowType}`)!;
          expect({ records: t.records, minor: t.amountMinor }).toEqual({ records: w.records, minor: w.minor.toString() });
        }
      }),
      { numRuns: 300 },
    );
  });

  it('stays exact when many amounts just under 2^52 add up past 2^53', () => {
    const sums = new AmountSums();
    const big = 2n ** 52n - 1n;
    for (let i = 0; i < 1000; i++) sums.add('EUR', null, 1, i % 2 === 0 ? big : -3n);
    expect(sums.result()[0]!.amountMinor).toBe((500n * big - 1500n).toString());
  });

  it('lists currencies, then cashflow types (none first), in order, whatever order they came in', () => {
    const sums = new AmountSums();
    for (const [currency, cashflowType] of [
      ['KWD', 'INCOME'],
      ['EUR', 'INCOME'],
      ['EUR', null],
      ['EUR', 'EXPENSE'],
      ['JPY', null],
    ] as const)
      sums.add(currency, cashflowType, 1, 1n);
    expect(sums.result().map((t) => [t.currency, t.cashflowType])).toEqual([
      ['EUR', null],
      ['EUR', 'EXPENSE'],
      ['EUR', 'INCOME'],
      ['JPY', null],
      ['KWD', 'INCOME'],
    ]);
  });

  it("writes each sum with its currency's fraction digits, and adds the records a part brings", () => {
    const sums = new AmountSums();
    sums.add('EUR', null, 40, -4999n);
    sums.add('JPY', null, 2, 125000n);
    sums.add('KWD', null, 3, -1003n);
    sums.add('EUR', null, 2, 1n);
    expect(sums.result()).toEqual([
      { currency: 'EUR', cashflowType: null, records: 42, amount: '-49.98', amountMinor: '-4998' },
      { currency: 'JPY', cashflowType: null, records: 2, amount: '125000', amountMinor: '125000' },
      { currency: 'KWD', cashflowType: null, records: 3, amount: '-1.003', amountMinor: '-1003' },
    ]);
  });
});

describe('TotalsAccumulator', () => {
  it('sums rows by their currency and cashflow type columns, and leaves out a row without amount or currency', () => {
    const totals = new TotalsAccumulator({ amount: 'amount_minor', currency: 'currency', cashflowType: 'cashflow_type' });
    totals.add({ amount_minor: 100n, currency: 'EUR', cashflow_type: 'INCOME' });
    totals.add({ amount_minor: -30n, currency: 'EUR', cashflow_type: null });
    totals.add({ amount_minor: 5n, currency: 'EUR', cashflow_type: 'INCOME' });
    totals.add({ amount_minor: null, currency: 'EUR', cashflow_type: 'INCOME' });
    totals.add({ amount_minor: 7n, currency: null, cashflow_type: 'INCOME' });
    expect(totals.result()).toEqual([
      { currency: 'EUR', cashflowType: null, records: 1, amount: '-0.30', amountMinor: '-30' },
      { currency: 'EUR', cashflowType: 'INCOME', records: 2, amount: '1.05', amountMinor: '105' },
    ]);
  });
});
