import fc from 'fast-check';
import { amountSchema, formatMinorUnits, MoneyFormatError, parseMinorUnits, parseJsonLossless } from '../../../src/core/accounting-api';

const TWO_53 = 2n ** 53n;
const anyMinor = fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n });
const safeMinor = fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
const beyond53 = fc.bigInt({ min: TWO_53 + 1n, max: 10n ** 30n }).chain((n) => fc.constantFrom(n, -n));

describe('money', () => {
  it('parses both encodings of the same amount to the same bigint', () => {
    fc.assert(
      fc.property(safeMinor, (n) => {
        const fromInteger = parseMinorUnits(n);
        const fromDecimal = parseMinorUnits(formatMinorUnits(BigInt(n)));
        expect(fromInteger).toBe(BigInt(n));
        expect(fromDecimal).toBe(fromInteger);
      }),
    );
  });

  it('reads the examples of the spec', () => {
    expect(parseMinorUnits(4999)).toBe(4999n);
    expect(parseMinorUnits('49.99')).toBe(4999n);
    expect(parseMinorUnits('-0.50')).toBe(-50n);
    expect(parseMinorUnits('-49.99')).toBe(-4999n);
    expect(formatMinorUnits(-50n)).toBe('-0.50');
    expect(formatMinorUnits(5n)).toBe('0.05');
    expect(formatMinorUnits(0n)).toBe('0.00');
    expect(formatMinorUnits(-9999999999999999n)).toBe('-99999999999999.99');
    expect(formatMinorUnits(123456n, 3)).toBe('123.456');
    expect(formatMinorUnits(-7n, 0)).toBe('-7');
  });

  it('reads every string exactly as the regex definition does, refusals included', () => {
    // The definition parseMinorUnits's hand-written fast path must agree with.
    const reference = (text: string): bigint | 'refused' => {
      const decimal = /^(-?)(\d+)\.(\d{2})$/.exec(text);
      if (decimal) {
        const minor = BigInt(decimal[2]!) * 100n + BigInt(decimal[3]!);
        return decimal[1] === '-' ? -minor : minor;
      }
      // Digits alone only beyond 2^53 (what lossless JSON makes of an integer literal).
      if (!/^-?\d+$/.test(text)) return 'refused';
      const minor = BigInt(text);
      return minor > BigInt(Number.MAX_SAFE_INTEGER) || minor < -BigInt(Number.MAX_SAFE_INTEGER) ? minor : 'refused';
    };
    // '/' and ':' sit either side of '0'-'9' in ASCII: they catch an off-by-one in the fast path's range.
    const text = fc
      .array(fc.constantFrom('-', '0', '1', '9', '.', '.', ' ', '+', 'e', '٣', '/', ':'), { maxLength: 8 })
      .map((c) => c.join(''));
    fc.assert(
      fc.property(text, (t) => {
        let actual: bigint | 'refused';
        try {
          actual = parseMinorUnits(t);
        } catch (error) {
          expect(error).toBeInstanceOf(MoneyFormatError);
          actual = 'refused';
        }
        expect(actual).toBe(reference(t));
      }),
      { seed: 20261121, numRuns: 20_000 },
    );
  });

  it('round-trips format then parse for any amount', () => {
    fc.assert(fc.property(anyMinor, (n) => expect(parseMinorUnits(formatMinorUnits(n))).toBe(n)));
  });

  it('round-trips parse then format for any canonical decimal string', () => {
    const decimal = fc
      .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 25n }), fc.integer({ min: 0, max: 99 }))
      .filter(([negative, whole, cents]) => !(negative && whole === 0n && cents === 0))
      .map(([negative, whole, cents]) => `${negative ? '-' : ''}${whole}.${String(cents).padStart(2, '0')}`);
    fc.assert(fc.property(decimal, (s) => expect(formatMinorUnits(parseMinorUnits(s))).toBe(s)));
  });

  it('reads decimal strings exactly on both sides of 15 digits, where a number stops being enough', () => {
    // Up to 15 digits the parse goes through a number; from 16 on through a BigInt of the text.
    for (let digits = 1; digits <= 20; digits++) {
      for (const text of [
        '9'.repeat(digits),
        `1${'0'.repeat(digits - 1)}`,
        `${'0'.repeat(digits - 1)}7`,
        '9007199254740993'.slice(0, digits),
      ]) {
        const padded = text.padStart(3, '0');
        const decimal = `${padded.slice(0, -2)}.${padded.slice(-2)}`;
        expect(parseMinorUnits(decimal)).toBe(BigInt(padded));
        expect(parseMinorUnits(`-${decimal}`)).toBe(-BigInt(padded));
      }
    }
    expect(parseMinorUnits('-0.00')).toBe(0n);
  });

  it('stays exact beyond 2^53 in both encodings, through lossless JSON and the schema', () => {
    fc.assert(
      fc.property(beyond53, (n) => {
        const integerBody = parseJsonLossless(`{"amount":${n.toString()}}`) as { amount: unknown };
        const decimalBody = parseJsonLossless(`{"amount":"${formatMinorUnits(n)}"}`) as { amount: unknown };
        expect(amountSchema.parse(integerBody.amount)).toBe(n);
        expect(amountSchema.parse(decimalBody.amount)).toBe(n);
        expect(parseMinorUnits(n.toString())).toBe(n);
      }),
    );
  });

  it('reads an integer-valued literal with a zero fraction exactly, beyond 2^53 as below it', () => {
    const body = parseJsonLossless(
      '{"a":9007199254740993.0,"b":-90071992547409930.00,"c":-4999.0,"d":"9007199254740993.0","e":9007199254740993.5}',
    ) as Record<string, unknown>;
    expect(amountSchema.parse(body.a)).toBe(9007199254740993n);
    expect(amountSchema.parse(body.b)).toBe(-90071992547409930n);
    expect(amountSchema.parse(body.c)).toBe(-4999n);
    expect(body.d).toBe('9007199254740993.0'); // a string literal is left as sent
    expect(amountSchema.safeParse(body.e).success).toBe(false); // a real fraction is still refused
  });

  it('refuses what would be rounded rather than guessing', () => {
    expect(() => parseMinorUnits(49.99)).toThrow(MoneyFormatError);
    expect(() => parseMinorUnits(2 ** 60)).toThrow(MoneyFormatError);
    expect(() => parseMinorUnits('49.9')).toThrow(MoneyFormatError);
    expect(() => parseMinorUnits('49.999')).toThrow(MoneyFormatError);
    expect(() => parseMinorUnits('1e3')).toThrow(MoneyFormatError);
    // Digits without a point are neither spec form (§2): minor units or whole units, 100x apart.
    expect(() => parseMinorUnits('-50')).toThrow(MoneyFormatError);
    expect(() => parseMinorUnits('4999')).toThrow(MoneyFormatError);
    expect(() => parseMinorUnits(String(Number.MAX_SAFE_INTEGER))).toThrow(MoneyFormatError);
    expect(amountSchema.safeParse('-50').success).toBe(false);
    expect(() => parseMinorUnits(null)).toThrow(MoneyFormatError);
    expect(amountSchema.safeParse(12.5).success).toBe(false);
  });
});
