import { localDateOf, timestampInstant } from '../accounting-api';
import { daysInMonth } from './period';

/** An API timestamp taken apart for the exports (the client validates the same shape). */
export interface OffsetTimestamp {
  /** The instant, in milliseconds since the epoch (fractions below a millisecond are truncated). */
  utcMillis: number;
  /** The offset as written, in minutes east of UTC (`-02:00` is -120, `Z` is 0). */
  offsetMinutes: number;
  /** The calendar date in the timestamp's own offset, `YYYY-MM-DD` (what periods filter on). */
  localDate: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * Undefined when `text` is not an ISO 8601 timestamp with an explicit offset and a real date.
 * One parse gives the instant and the offset; every writer then reads them from the row.
 */
export function parseOffsetTimestamp(text: string): OffsetTimestamp | undefined {
  const instant = timestampInstant(text);
  if (instant === undefined) return undefined;
  return { utcMillis: instant.utcMillis, offsetMinutes: instant.offsetMinutes, localDate: localDateOf(text) };
}

/** Days since 1970-01-01 of a `YYYY-MM-DD` date (Parquet DATE), or undefined when it is not a real date. */
export function epochDay(date: string): number | undefined {
  const m = DATE.exec(date);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth({ year, month })) return undefined;
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  const instant = new Date(0);
  instant.setUTCFullYear(year, month - 1, day);
  return instant.getTime() / 86_400_000;
}
