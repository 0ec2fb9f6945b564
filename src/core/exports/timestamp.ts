import { daysInMonth } from './period';

/**
 * ISO 8601 timestamps with an offset, taken apart exactly. `Date.parse` is not used: it accepts
 * shapes the spec does not allow (no offset, which it reads as local time) and hides the offset,
 * which the exports must keep because the API filters periods on the date *as written*.
 */
export interface OffsetTimestamp {
  /** The instant, in milliseconds since the epoch (fractions below a millisecond are truncated). */
  utcMillis: number;
  /** The offset as written, in minutes east of UTC (`-02:00` is -120, `Z` is 0). */
  offsetMinutes: number;
  /** The calendar date in the timestamp's own offset, `YYYY-MM-DD`. */
  localDate: string;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Undefined when `text` is not a valid ISO 8601 timestamp with an offset. */
export function parseOffsetTimestamp(text: string): OffsetTimestamp | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = '00', fraction = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (!validDate(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined;

  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = sign * (oh * 60 + om);
  }
  const millis = Number(fraction.padEnd(3, '0').slice(0, 3));
  const wallClock = utcMillis(year, month, day) + ((hour * 60 + minute) * 60 + second) * 1000 + millis;
  return { utcMillis: wallClock - offsetMinutes * 60_000, offsetMinutes, localDate: `${y}-${mo}-${d}` };
}

/** Days since 1970-01-01 of a `YYYY-MM-DD` date, or undefined when it is not a real date. */
export function epochDay(date: string): number | undefined {
  const m = DATE.exec(date);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (!validDate(year, month, day)) return undefined;
  return utcMillis(year, month, day) / 86_400_000;
}

function validDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth({ year, month });
}

function utcMillis(year: number, month: number, day: number): number {
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getTime();
}
