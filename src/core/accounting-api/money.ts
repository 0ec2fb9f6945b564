import * as z from 'zod';

/**
 * Money is an integer number of minor units (cents for EUR), held as a bigint so that it stays
 * exact beyond 2^53 and can never be mixed with a float by accident.
 *
 * The service sends an amount either as integer minor units (`4999`) or as a decimal string with
 * two fraction digits (`"49.99"`); both mean the same amount. See docs/assumptions.md.
 */
export type MinorUnits = bigint;

export const MINOR_DIGITS = 2;
const DECIMAL = /^(-?)(\d+)\.(\d{2})$/;
const INTEGER = /^-?\d+$/;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export class MoneyFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoneyFormatError';
  }
}

/**
 * Parses either encoding into exact minor units.
 * - a safe integer number, or a bigint: already minor units;
 * - a string with exactly two fraction digits: a decimal amount (`"-0.50"` is -50);
 * - a string of digits only beyond 2^53: minor units sent as text (what lossless JSON parsing
 *   yields for an integer literal beyond 2^53, and only for one).
 * Floats, unsafe integers and other strings are refused rather than rounded. A string of digits
 * only within 2^53 (`"-50"`) is neither of the spec's forms (§2): it could be minor units or a
 * whole amount (-50.00 serialised without its fraction), 100 times apart, so it is refused like
 * `"49.9"`, never guessed.
 */
export function parseMinorUnits(value: unknown): MinorUnits {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new MoneyFormatError(
        Number.isInteger(value) ? 'integer amount is beyond 2^53 and was not parsed losslessly' : 'amount is not an integer of minor units',
      );
    }
    return BigInt(value);
  }
  if (typeof value === 'string') {
    // The common shape, `-?digits.dd`, by hand: its digits as a number while they are exact
    // (no substring, no text for BigInt to parse), else one BigInt of the digits without the point.
    const small = plainDecimalMinor(value);
    if (small !== undefined) return BigInt(small);
    if (isPlainDecimal(value)) return BigInt(value.slice(0, -3) + value.slice(-2));
    const decimal = DECIMAL.exec(value);
    if (decimal) {
      const [, sign, whole, fraction] = decimal;
      const minor = BigInt(whole!) * 100n + BigInt(fraction!);
      return sign === '-' ? -minor : minor;
    }
    if (INTEGER.test(value)) {
      const minor = BigInt(value);
      if (minor > MAX_SAFE || minor < -MAX_SAFE) return minor;
    }
    throw new MoneyFormatError('amount string must have exactly two fraction digits, e.g. "49.99"');
  }
  throw new MoneyFormatError('amount must be an integer or a decimal string');
}

/**
 * The minor units of `text` when it matches DECIMAL with at most 15 digits (every such value is
 * below 2^53, so the number is exact); undefined otherwise, the longer ones included.
 */
function plainDecimalMinor(text: string): number | undefined {
  const point = text.length - 3;
  const negative = text.charCodeAt(0) === 0x2d;
  const start = negative ? 1 : 0;
  if (point <= start || point - start > 13 || text.charCodeAt(point) !== 0x2e) return undefined;
  let minor = 0;
  for (let i = start; i < text.length; i++) {
    if (i === point) continue;
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    minor = minor * 10 + digit;
  }
  // -0 is 0n like BigInt("-000").
  return negative ? -minor : minor;
}

/** Whether `text` matches DECIMAL (`-?\d+\.\d{2}`), checked without a regex. */
function isPlainDecimal(text: string): boolean {
  const point = text.length - 3;
  const start = text.charCodeAt(0) === 0x2d ? 1 : 0;
  if (point <= start || text.charCodeAt(point) !== 0x2e) return false;
  for (let i = start; i < text.length; i++) {
    if (i === point) continue;
    const code = text.charCodeAt(i);
    if (code < 0x30 || code > 0x39) return false;
  }
  return true;
}

/** Formats minor units as an exact decimal string: -50n is "-0.50", 4999n is "49.99". */
export function formatMinorUnits(minor: MinorUnits, fractionDigits = MINOR_DIGITS, decimalMark = '.'): string {
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  if (fractionDigits === 0) return `${negative ? '-' : ''}${abs.toString()}`;
  // Digits, then the point: no bigint division (this runs for every amount of a CSV export).
  const digits = abs.toString().padStart(fractionDigits + 1, '0');
  const point = digits.length - fractionDigits;
  return `${negative ? '-' : ''}${digits.slice(0, point)}${decimalMark}${digits.slice(point)}`;
}

/** zod schema for an amount field in either encoding; the output is exact minor units. */
export const amountSchema = z.union([z.number(), z.string(), z.bigint()]).transform((value, ctx) => {
  try {
    return parseMinorUnits(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});
