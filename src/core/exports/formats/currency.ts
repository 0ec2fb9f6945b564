/**
 * Minor-unit exponents (fraction digits) of currencies, from the runtime's ICU data through
 * `Intl.NumberFormat` rather than a table of our own: JPY has 0, EUR 2, KWD 3, CLF 4. A code ICU
 * does not know gets ICU's default of 2.
 */
const digitsCache = new Map<string, number>();

export function minorUnitDigits(currency: string): number {
  let digits = digitsCache.get(currency);
  if (digits === undefined) {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
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
