/**
 * JSON.parse turns an integer literal beyond 2^53 into the nearest double, silently. Money in
 * minor units must stay exact, so a body that holds such a literal is parsed a second time with
 * every unsafe integer literal turned into a digit string (`parseMinorUnits` accepts those), an
 * integer-valued one written with a zero fraction (`9007199254740993.0`) included.
 *
 * The fast path is JSON.parse plus one look at the text: an integer of 15 digits or fewer is
 * always safe, so a body without a run of 16 digits needs no further look.
 */

/**
 * `bytes`, when given, must be the UTF-8 encoding of `text` (a transport's body as received): the
 * look for 16 digits then reads them, at half the cost of reading the string. UTF-8 encodes an
 * ASCII digit as itself and never uses its byte inside another character, so both hold the same runs.
 */
export function parseJsonLossless(text: string, bytes?: Uint8Array): unknown {
  const value: unknown = JSON.parse(text);
  if (!(bytes === undefined ? hasSixteenDigitRun(text) : hasSixteenDigitRunIn(bytes)) || !containsUnsafeInteger(value)) return value;
  return JSON.parse(quoteUnsafeIntegers(text));
}

/**
 * Whether `text` holds 16 ASCII digits in a row (`/\d{16}/.test`, five times faster: it runs on
 * every page). Any 16 consecutive positions include exactly one of each remainder modulo 16, so
 * looking at every 16th character, and around it only when it is a digit, misses no such run;
 * after a shorter run the stride restarts from its end, which keeps that true.
 */
export function hasSixteenDigitRun(text: string): boolean {
  const length = text.length;
  for (let i = 15; i < length; i += 16) {
    if (!isDigit(text.charCodeAt(i))) continue;
    let start = i;
    while (start > 0 && isDigit(text.charCodeAt(start - 1))) start--;
    let end = i;
    while (end + 1 < length && isDigit(text.charCodeAt(end + 1))) end++;
    if (end - start + 1 >= 16) return true;
    i = end;
  }
  return false;
}

/** `hasSixteenDigitRun` of UTF-8 bytes: the same stride, on bytes (a page is read as both). */
export function hasSixteenDigitRunIn(bytes: Uint8Array): boolean {
  const length = bytes.length;
  for (let i = 15; i < length; i += 16) {
    if (!isDigit(bytes[i]!)) continue;
    let start = i;
    while (start > 0 && isDigit(bytes[start - 1]!)) start--;
    let end = i;
    while (end + 1 < length && isDigit(bytes[end + 1]!)) end++;
    if (end - start + 1 >= 16) return true;
    i = end;
  }
  return false;
}

function containsUnsafeInteger(value: unknown): boolean {
  if (typeof value === 'number') return Number.isInteger(value) && !Number.isSafeInteger(value);
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(containsUnsafeInteger);
  for (const key in value) {
    if (containsUnsafeInteger((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

const QUOTE = 0x22;
/** A fraction of zeros and no exponent: `.0`, `.00`. */
const ZERO_FRACTION = /^\.0+$/;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

function isDigit(code: number): boolean {
  return code >= DIGIT_0 && code <= DIGIT_9;
}

/**
 * Rewrites integer literals that are not safe integers as strings (a zero fraction dropped). String-aware: digits inside
 * a string literal (an IBAN in a description) are left alone. Only called on text that
 * JSON.parse has already accepted, so the grammar is known to be valid.
 */
export function quoteUnsafeIntegers(text: string): string {
  let out = '';
  let copiedUpTo = 0;
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      i++;
      while (i < text.length) {
        const c = text.charCodeAt(i);
        if (c === BACKSLASH) i += 2;
        else if (c === QUOTE) break;
        else i++;
      }
      i++;
      continue;
    }
    if (code === MINUS || isDigit(code)) {
      const start = i;
      i++;
      while (i < text.length && isDigit(text.charCodeAt(i))) i++;
      const digitsEnd = i;
      const next = text[i];
      if (next === '.' || next === 'e' || next === 'E') {
        // A fraction or exponent: a float, which money never is; leave it to JSON.parse. Except a
        // zero fraction (`9007199254740993.0`): an integer, read exactly as `-4999.0` is below 2^53.
        while (i < text.length && /[0-9.eE+-]/.test(text[i]!)) i++;
        const integerPart = text.slice(start, digitsEnd);
        if (ZERO_FRACTION.test(text.slice(digitsEnd, i)) && !Number.isSafeInteger(Number(integerPart))) {
          out += `${text.slice(copiedUpTo, start)}"${integerPart}"`;
          copiedUpTo = i;
        }
        continue;
      }
      const literal = text.slice(start, i);
      if (!Number.isSafeInteger(Number(literal))) {
        out += `${text.slice(copiedUpTo, start)}"${literal}"`;
        copiedUpTo = i;
      }
      continue;
    }
    i++;
  }
  return copiedUpTo === 0 ? text : out + text.slice(copiedUpTo);
}
