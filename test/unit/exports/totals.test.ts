import fc from 'fast-check';
import { AmountSums } from '../../../src/core/exports/formats/totals';

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
});
