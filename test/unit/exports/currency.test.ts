import { ISO_MINOR_UNITS_WHERE_ICU_DIFFERS, minorUnitDigits, scaleFactor } from '../../../src/core/exports/formats/currency';

/**
 * ISO 4217's minor units (list one, as amended to 2025) of the codes whose minor unit is not 2;
 * every other current code has 2. Written out here, in the test only, so that the exporter can
 * keep asking ICU (src/core/exports/formats/currency.ts says why) while an ICU that disagrees with
 * ISO on any code it knows fails this suite instead of shifting a company's amounts.
 */
const ISO_NOT_TWO: Readonly<Record<string, number>> = {
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
  CLF: 4,
  UYW: 4,
};

/** ISO 4217 gives these no minor unit ("N.A.": funds, metals, the testing and "no currency" codes); any of ours will do. */
const ISO_NO_MINOR_UNIT = new Set(['XAG', 'XAU', 'XBA', 'XBB', 'XBC', 'XBD', 'XDR', 'XPD', 'XPT', 'XSU', 'XTS', 'XUA', 'XXX']);

const intlDigits = (code: string) =>
  new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits;

describe('minorUnitDigits: ISO 4217 minor units, from ICU where it agrees', () => {
  it.each([
    ['HUF', 2],
    ['IQD', 3],
    ['JPY', 0],
    ['KWD', 3],
    ['EUR', 2],
    ['CLF', 4],
    ['UYW', 4],
    ['COP', 2],
    ['IDR', 2],
  ])('%s has %i', (code, digits) => {
    expect(minorUnitDigits(code)).toBe(digits);
    expect(minorUnitDigits(code.toLowerCase())).toBe(digits);
  });

  it('scales HUF to the Parquet DECIMAL(18,4) by 100, as EUR', () => {
    expect(scaleFactor('HUF', 4)).toBe(100n);
    expect(scaleFactor('IQD', 4)).toBe(10n);
  });

  it('scales a currency with as many digits as the scale by 1, refuses one with more, and keys the factor by scale', () => {
    expect(scaleFactor('CLF', 4)).toBe(1n);
    expect(scaleFactor('JPY', 4)).toBe(10_000n);
    expect(scaleFactor('CLF', 3)).toBeUndefined();
    expect(scaleFactor('EUR', 4)).toBe(100n);
    expect(scaleFactor('EUR', 2)).toBe(1n);
  });

  it('corrects only to ISO minor units (never a guess of ours), and each correction is a code ISO lists', () => {
    for (const [code, digits] of ISO_MINOR_UNITS_WHERE_ICU_DIFFERS) {
      expect([code, digits]).toEqual([code, ISO_NOT_TWO[code] ?? 2]);
    }
  });

  const supported = Intl.supportedValuesOf('currency');

  it("answers 0, 2, 3 or 4 for every currency the runtime's Intl knows, and ISO 4217's minor unit for each", () => {
    expect(supported.length).toBeGreaterThan(100);
    const wrong = supported.filter((code) => {
      const digits = minorUnitDigits(code);
      if (![0, 2, 3, 4].includes(digits)) return true;
      return !ISO_NO_MINOR_UNIT.has(code) && digits !== (ISO_NOT_TWO[code] ?? 2);
    });
    // A code here is one where this runtime's ICU newly disagrees with ISO 4217 (or ISO changed):
    // add it to ISO_MINOR_UNITS_WHERE_ICU_DIFFERS with ISO's minor unit.
    expect(wrong).toEqual([]);
  });

  it('records which corrections this runtime needs: those where its Intl disagrees; the others change nothing', () => {
    const disagreeing = supported.filter((code) => intlDigits(code) !== minorUnitDigits(code));
    // Every disagreement is a correction of the list (nothing else overrides ICU).
    expect(disagreeing.filter((code) => !ISO_MINOR_UNITS_WHERE_ICU_DIFFERS.has(code))).toEqual([]);
    const harmless = [...ISO_MINOR_UNITS_WHERE_ICU_DIFFERS.keys()].filter((code) => !disagreeing.includes(code));
    // Shown in the test's output, so a run on another Node (the Lambda runtime's) says which
    // corrections its ICU needs; ICU 78.2 (Node 20.20) needs every one.
    process.stdout.write(
      `Intl ${process.versions.icu ?? '(no ICU)'} (Node ${process.versions.node}): ISO corrections applied: ${disagreeing.join(' ') || 'none'}; agreeing already: ${harmless.join(' ') || 'none'}\n`,
    );
    if (process.versions.icu === '78.2') expect(disagreeing).toEqual([...ISO_MINOR_UNITS_WHERE_ICU_DIFFERS.keys()]);
  });
});
