/**
 * ISO 8601 timestamps with an explicit offset, as the API writes them:
 * `YYYY-MM-DDTHH:MM[:SS[.fraction]](Z|±HH[:]MM)`, the fraction one digit or more (ISO 8601 and RFC
 * 3339 set no limit, so a service may send ten: one such record must not fail a month's export).
 *
 * Read by hand, not with a regex and `Date`: an export reads one per transaction, twice (the
 * validation, then the row), and the regex, the `Number` conversions and the `Date` object cost
 * about 0.9 µs a record of a ~6 µs budget. timestamps.test.ts holds the regex this replaces and
 * checks that both accept the same strings and give the same instant.
 */

/** An accepted timestamp: its instant and the offset it was written in. */
export interface TimestampInstant {
  /** Milliseconds since the epoch (digits below a millisecond are truncated). */
  readonly utcMillis: number;
  /** Minutes east of UTC as written: `-02:00` is -120, `Z` is 0. */
  readonly offsetMinutes: number;
}

const ZERO = 0x30;
const COLON = 0x3a;
const DOT = 0x2e;
const DASH = 0x2d;
const PLUS = 0x2b;
const Z = 0x5a;
const T = 0x54;
const MILLIS_PER_MINUTE = 60_000;

/**
 * The client validates a page's timestamps, then the export makes each record's row and reads
 * the same strings again, in the same order (the pager validates a page whole before handing it
 * over). So the parses are kept in a ring, in the order made, and `recalledTimestamp` looks
 * only at the next one not yet recalled: one comparison per record instead of a second parse. The
 * strings are compared by value, so a hit is always the parse of an equal string, whoever made it.
 */
const RECENT = 2048;
const recentTexts: (string | undefined)[] = new Array<string | undefined>(RECENT).fill(undefined);
const recentInstants: (TimestampInstant | undefined)[] = new Array<TimestampInstant | undefined>(RECENT).fill(undefined);
let remembered = 0;
let recalled = 0;

/** The timestamp's instant and offset, or undefined when it is not one (format, date or time). */
export function parseTimestamp(text: string): TimestampInstant | undefined {
  const instant = parse(text);
  const slot = remembered++ & (RECENT - 1);
  recentTexts[slot] = text;
  recentInstants[slot] = instant;
  return instant;
}

/**
 * `parseTimestamp` for a string that was most likely just parsed by it, in the same order: the
 * export's rows after the page's validation. The next parse not yet recalled is the one looked at;
 * when it differs (other parses came first, or the rows skip some), the search goes on through the
 * later parses kept, and the recall resumes after the one found. Each kept parse is looked at
 * once at most, so the search costs nothing per record; what is not found is parsed again.
 */
export function recalledTimestamp(text: string): TimestampInstant | undefined {
  for (let at = Math.max(recalled, remembered - RECENT); at < remembered; at++) {
    const slot = at & (RECENT - 1);
    if (recentTexts[slot] === text) {
      recalled = at + 1;
      return recentInstants[slot];
    }
  }
  recalled = remembered;
  return parse(text);
}

function parse(s: string): TimestampInstant | undefined {
  const length = s.length;
  // The shortest form: 2026-10-05T12:34Z
  if (length < 17) return undefined;
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hours = digits(s, 11, 2);
  const minutes = digits(s, 14, 2);
  if (year < 0 || month < 0 || day < 0 || hours < 0 || minutes < 0) return undefined;
  if (s.charCodeAt(4) !== DASH || s.charCodeAt(7) !== DASH || s.charCodeAt(10) !== T || s.charCodeAt(13) !== COLON) return undefined;

  let at = 16;
  let seconds = 0;
  let millis = 0;
  if (s.charCodeAt(at) === COLON) {
    seconds = digits(s, at + 1, 2);
    if (seconds < 0) return undefined;
    at += 3;
    if (s.charCodeAt(at) === DOT) {
      const start = ++at;
      while (at < length && isDigit(s.charCodeAt(at))) at++;
      const count = at - start;
      if (count < 1) return undefined;
      // Milliseconds: the first three digits, padded with zeros.
      millis = (s.charCodeAt(start) - ZERO) * 100;
      if (count > 1) millis += (s.charCodeAt(start + 1) - ZERO) * 10;
      if (count > 2) millis += s.charCodeAt(start + 2) - ZERO;
    }
  }

  let offset: number;
  const sign = s.charCodeAt(at);
  if (sign === Z) {
    if (at + 1 !== length) return undefined;
    offset = 0;
  } else if (sign === PLUS || sign === DASH) {
    const offsetHours = digits(s, at + 1, 2);
    const colon = s.charCodeAt(at + 3) === COLON ? 1 : 0;
    const offsetMins = digits(s, at + 3 + colon, 2);
    if (offsetHours < 0 || offsetMins < 0 || at + 5 + colon !== length) return undefined;
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offset = (sign === DASH ? -1 : 1) * (offsetHours * 60 + offsetMins);
  } else {
    return undefined;
  }

  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hours > 23 || minutes > 59 || seconds > 59) return undefined;
  const minutesSinceEpoch = (daysFromCivil(year, month, day) * 24 + hours) * 60 + minutes - offset;
  return { utcMillis: minutesSinceEpoch * MILLIS_PER_MINUTE + seconds * 1000 + millis, offsetMinutes: offset };
}

/** Days since 1970-01-01 of a `YYYY-MM-DD` calendar date (Parquet DATE), or undefined when it is not a real one. */
export function epochDayOf(text: string): number | undefined {
  if (text.length !== 10 || text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH) return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  return daysFromCivil(year, month, day);
}

function isDigit(code: number): boolean {
  return code >= ZERO && code <= ZERO + 9;
}

/** The value of `count` ASCII digits at `at`, or -1 when one of them is not a digit (or missing). */
function digits(s: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const code = s.charCodeAt(i);
    // charCodeAt past the end is NaN, which fails this test too.
    if (!(code >= ZERO && code <= ZERO + 9)) return -1;
    value = value * 10 + (code - ZERO);
  }
  return value;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Days from 1970-01-01 to a proleptic Gregorian date (what `Date` counts in), for any year
 * 0000-9999: the civil-from-days arithmetic of H. Hinnant's "chrono-compatible date algorithms",
 * with eras of 400 years starting on 1 March.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
