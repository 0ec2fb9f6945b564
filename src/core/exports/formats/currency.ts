/**
 * The currency of transactions the service sends without one, unless the company's registry entry
 * or `--default-currency` names another: the spec's one example of minor units is EUR, and its
 * world is the euro area's (docs/assumptions.md; docs/exports.md, "A transaction's currency").
 */
export const DEFAULT_CURRENCY = 'EUR';

/**
 * Minor-unit exponents (fraction digits) of currencies: ISO 4217's minor unit, which is what the
 * service's integer amounts count in (the spec: "integer in minor currency units … For EUR, 4999
 * means 49.99"). The runtime's ICU data (`Intl.NumberFormat`) answers for most currencies, so no
 * table of our own has to follow ISO's amendments: JPY 0, EUR 2, KWD 3, CLF 4. A code ICU does not
 * know gets ICU's default of 2.
 *
 * ICU's digits are CLDR's, which follow how a currency is used in practice, not ISO 4217, and they
 * change between ICU versions: ICU 78.2 (Node 20.20 here) gives 0 for the currencies below, so a
 * HUF company's 123456 minor units (1234.56 HUF) were written as 123456 HUF in the CSV, the
 * Parquet DECIMAL and the manifest's totals, while the raw JSONL said "1234.56". Where ICU is
 * known to differ, ISO's minor unit is taken instead; for a runtime that agrees, the entry changes
 * nothing. test/unit/exports/currency.test.ts checks every code the runtime knows against ISO 4217,
 * so an ICU that newly disagrees fails it (docs/exports.md, "CSV").
 */
export const ISO_MINOR_UNITS_WHERE_ICU_DIFFERS: ReadonlyMap<string, number> = new Map([
  ['AFN', 2],
  ['ALL', 2],
  ['COP', 2],
  ['HUF', 2],
  ['IDR', 2],
  ['IQD', 3],
  ['IRR', 2],
  ['KPW', 2],
  ['LAK', 2],
  ['LBP', 2],
  ['MGA', 2],
  ['MMK', 2],
  ['PKR', 2],
  ['SLL', 2],
  ['SOS', 2],
  ['SYP', 2],
  ['YER', 2],
]);

const digitsCache = new Map<string, number>();

export function minorUnitDigits(currency: string): number {
  let digits = digitsCache.get(currency);
  if (digits === undefined) {
    digits =
      ISO_MINOR_UNITS_WHERE_ICU_DIFFERS.get(currency.toUpperCase()) ??
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2;
    digitsCache.set(currency, digits);
  }
  return digits;
}

const factorCache = new Map<string, bigint>();

/**
 * The factor from a currency's minor units to a decimal of `scale` fraction digits (100 for EUR
 * at scale 4). A currency with more digits than `scale` cannot be represented: undefined.
 */
export function scaleFactor(currency: string, scale: number): bigint | undefined {
  const key = `${currency}/${scale}`;
  let factor = factorCache.get(key);
  if (factor === undefined) {
    const digits = minorUnitDigits(currency);
    if (digits > scale) return undefined;
    factor = 10n ** BigInt(scale - digits);
    factorCache.set(key, factor);
  }
  return factor;
}
