/**
 * ISO 8601 timestamps with an explicit offset, as the API writes them:
 * `YYYY-MM-DDTHH:MM[:SS[.fraction]](Z|±HH[:]MM)`, the fraction one digit or more (ISO 8601 and RFC
 * 3339 set no limit, so a service may send ten: one such record must not fail a month's export).
 *
 * Read by hand, not with a regex and `Date`: an export reads one per transaction, twice (the
 * validation, then the row), and the regex, the `Number` conversions and the `Date` object cost
 * about 0.9 µs a record of a ~6 µs budget. timestamps.test.ts holds the regex this replaces and
 * checks that both accept the same strings and give the same instant.
 *
 * The other ISO 8601 forms with an offset (spec §2 names only "ISO 8601 with timezone") are read
 * on a slow path, only after the fast one refused a string: a comma before the fraction
 * (`10:00:00,5`), an offset in hours alone (`+02`), the basic format (`20261020T100000+0200`), and
 * `t` and `z` in lower case (RFC 3339 §5.6 allows them; the text is kept as sent).
 * Fractions of minutes or hours, `24:00`, week and ordinal dates are still refused.
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
  const instant = parse(text) ?? parseOtherForm(text);
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
  return parse(text) ?? parseOtherForm(text);
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

// The forms of the slow path: extended (dashes and colons) or basic (neither), never mixed; the
// offset as `Z`, `±HH`, `±HH:MM` or `±HHMM` (the fast path accepts `+0200` after an extended time too).
// `t` and `z` in lower case too (RFC 3339 §5.6: "may alternatively be lower case").
const EXTENDED = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)$/;
const BASIC = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(?:(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?:\d{2})?)$/;

/** The forms the fast path leaves out (see the top of this file), or undefined. */
function parseOtherForm(s: string): TimestampInstant | undefined {
  const m = EXTENDED.exec(s) ?? BASIC.exec(s);
  if (!m) return undefined;
  const [year, month, day, hours, minutes] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const seconds = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  const offset = offsetMinutesOf(m[8]!);
  if (offset === undefined) return undefined;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hours > 23 || minutes > 59 || seconds > 59) return undefined;
  const minutesSinceEpoch = (daysFromCivil(year, month, day) * 24 + hours) * 60 + minutes - offset;
  return { utcMillis: minutesSinceEpoch * MILLIS_PER_MINUTE + seconds * 1000 + millis, offsetMinutes: offset };
}

/** `Z` (or `z`), `±HH`, `±HH:MM` or `±HHMM` in minutes east of UTC, or undefined when out of range. */
function offsetMinutesOf(text: string): number | undefined {
  if (text === 'Z' || text === 'z') return 0;
  const hours = Number(text.slice(1, 3));
  const minutes = text.length > 3 ? Number(text.slice(-2)) : 0;
  if (hours > 23 || minutes > 59) return undefined;
  return (text.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

/**
 * The calendar date as written (in the timestamp's own offset), `YYYY-MM-DD`, of a timestamp
 * `parseTimestamp` accepts: the first ten characters, or the basic format's eight made extended.
 */
export function localDateOf(timestamp: string): string {
  if (timestamp.charCodeAt(4) === DASH) return timestamp.slice(0, 10);
  return `${timestamp.slice(0, 4)}-${timestamp.slice(4, 6)}-${timestamp.slice(6, 8)}`;
}

const DATE_PART = /^(?:\d{4}-(\d{2})-(\d{2})|\d{4}(\d{2})(\d{2}))$/;
const TIME_PART = /^(?:(\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?|(\d{2})(\d{2})(?:(\d{2})(?:[.,]\d+)?)?)$/;
const OFFSET_PART = /^(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * What is wrong with a string `parseTimestamp` refuses, naming the part (date, time, offset) and
 * never repeating the text: a response's values stay out of errors and logs.
 */
export function timestampProblem(text: string): string {
  const expected = 'expected an ISO 8601 timestamp with an offset, such as 2026-01-31T09:30:00+01:00';
  const t = Math.max(text.indexOf('T'), text.indexOf('t'));
  if (t < 0) {
    return DATE_PART.test(text) ? `a date without a time and offset; ${expected}` : `no "T" between a date and a time; ${expected}`;
  }
  const date = DATE_PART.exec(text.slice(0, t));
  if (!date) return `the date is not YYYY-MM-DD (or YYYYMMDD); ${expected}`;
  const year = Number(text.slice(0, 4));
  const month = Number(date[1] ?? date[3]);
  const day = Number(date[2] ?? date[4]);
  if (month < 1 || month > 12) return 'the month of the date is out of range (01-12)';
  if (day < 1 || day > daysInMonth(year, month)) return 'the day of the date does not exist in its month';
  const rest = text.slice(t + 1);
  const at = Math.max(rest.indexOf('Z'), rest.indexOf('z'), rest.indexOf('+'), rest.indexOf('-'));
  if (at < 0) return 'no offset after the time: ISO 8601 with a timezone needs Z, ±HH, ±HH:MM or ±HHMM (spec §2)';
  const time = TIME_PART.exec(rest.slice(0, at));
  if (!time) return 'the time is not HH:MM[:SS[.fraction]] (or HHMM[SS[.fraction]])';
  const hours = Number(time[1] ?? time[4]);
  const minutes = Number(time[2] ?? time[5]);
  const seconds = Number(time[3] ?? time[6] ?? 0);
  if (hours > 23) return 'the hour of the time is out of range (00-23)';
  if (minutes > 59) return 'the minute of the time is out of range (00-59)';
  if (seconds > 59) return 'the second of the time is out of range (00-59)';
  const offset = rest.slice(at);
  if (!OFFSET_PART.test(offset)) return 'the offset is not Z, ±HH, ±HH:MM or ±HHMM';
  if (offsetMinutesOf(offset) === undefined) return 'the offset is out of range (hours 00-23, minutes 00-59)';
  if ((date[1] === undefined) !== (time[1] === undefined)) {
    return 'the date and the time mix the basic (20261020T100000) and extended (2026-10-20T10:00:00) formats';
  }
  return expected;
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
