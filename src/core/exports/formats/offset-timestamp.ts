import { localDateOf, timestampInstant } from '../../accounting-api';

/** An API timestamp taken apart for the exports (the client validates the same shape). */
export interface OffsetTimestamp {
  /** The instant, in milliseconds since the epoch (fractions below a millisecond are truncated). */
  utcMillis: number;
  /** The offset as written, in minutes east of UTC (`-02:00` is -120, `Z` is 0). */
  offsetMinutes: number;
  /** The calendar date in the timestamp's own offset, `YYYY-MM-DD` (what periods filter on). */
  localDate: string;
}

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
export { epochDayOf as epochDay } from '../../accounting-api';
