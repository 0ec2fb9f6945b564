import { EARLIEST_PERIOD } from '../../../../contract/exports';
import { ValidationError } from '../../shared/errors';

/** A calendar month, the unit of export. `text` is `YYYY-MM`. */
export interface Period {
  readonly year: number;
  readonly month: number;
  readonly text: string;
}

export const DEFAULT_TIME_ZONE = 'Europe/Berlin';

const PERIOD = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** Parses `YYYY-MM`; anything else (`2026-13`, `2026-1`, `26-10`) is a ValidationError naming `field`. */
export function parsePeriod(text: string, field = 'period'): Period {
  const match = PERIOD.exec(text);
  if (!match) throw new ValidationError('period', [{ path: field, message: 'expected a month as YYYY-MM' }]);
  return periodOf(Number(match[1]), Number(match[2]));
}

export function periodOf(year: number, month: number): Period {
  if (!Number.isInteger(year) || year < 1 || year > 9999 || !Number.isInteger(month) || month < 1 || month > 12) {
    throw new ValidationError('period', [{ path: 'period', message: 'year must be 1-9999 and month 1-12' }]);
  }
  return { year, month, text: `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}` };
}

export function daysInMonth(period: Pick<Period, 'year' | 'month'>): number {
  if (period.month === 2) return isLeapYear(period.year) ? 29 : 28;
  return [4, 6, 9, 11].includes(period.month) ? 30 : 31;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** `YYYY-MM-01`. */
export function firstDay(period: Period): string {
  return `${period.text}-01`;
}

/** The last calendar day, leap years included: `2028-02-29`. */
export function lastDay(period: Period): string {
  return `${period.text}-${String(daysInMonth(period)).padStart(2, '0')}`;
}

/**
 * The transaction query of a period: both ends inclusive, on the calendar date of `valueDate` as
 * written in its own offset (docs/assumptions.md), so every record of the month comes exactly once.
 */
export function periodRange(period: Period): { dateFrom: string; dateTo: string } {
  return { dateFrom: firstDay(period), dateTo: lastDay(period) };
}

export function previousPeriod(period: Period): Period {
  return period.month === 1 ? periodOf(period.year - 1, 12) : periodOf(period.year, period.month - 1);
}

/** The month that contains `instant` on the wall clock of `timeZone`. */
export function periodContaining(instant: number | Date, timeZone = DEFAULT_TIME_ZONE): Period {
  const parts = zonedFormatter(timeZone).formatToParts(instant);
  const year = Number(parts.find((p) => p.type === 'year')?.value);
  const month = Number(parts.find((p) => p.type === 'month')?.value);
  return periodOf(year, month);
}

/**
 * A month after the current one (on the wall clock of `timeZone`): it has no data yet, and its
 * export would "complete" empty and then count as the company's latest. `field` is the request's
 * field that named it (`period`, `to`, `detail.period`). Its code is `period_in_future`.
 */
export class FuturePeriodError extends ValidationError {
  override readonly name: string = 'FuturePeriodError';
  /** The current month when the request was refused (`YYYY-MM`). */
  readonly currentPeriod: string;

  constructor(field: string, currentPeriod: string, timeZone: string) {
    super('period', [{ path: field, message: `is after the current month (${currentPeriod}, ${timeZone})` }]);
    Object.defineProperty(this, 'code', { value: 'period_in_future' });
    this.currentPeriod = currentPeriod;
  }
}

/** The earliest month exported; the Glue tables project `period` from it too (contract/exports.ts). */
export { EARLIEST_PERIOD };

/** A month before EARLIEST_PERIOD, named by the request's field (`period`, `from`, `--month`). Its code is `period_too_early`. */
export class EarlyPeriodError extends ValidationError {
  override readonly name: string = 'EarlyPeriodError';

  constructor(field: string) {
    super('period', [{ path: field, message: `is before ${EARLIEST_PERIOD}, the earliest month exported (a mistyped year?)` }]);
    Object.defineProperty(this, 'code', { value: 'period_too_early' });
  }
}

/** Refuses a month before EARLIEST_PERIOD (EarlyPeriodError naming `field`): the CLI's `--month` and the pipeline's requests alike. */
export function refuseEarlyPeriod(period: string, field = 'period'): void {
  // YYYY-MM with a four-digit year: text order is month order.
  if (period < EARLIEST_PERIOD) throw new EarlyPeriodError(field);
}

/**
 * Refuses a month after the one containing `now` in `timeZone` (FuturePeriodError naming `field`).
 * The current month is allowed: it is exported as it stands so far (see periodOpen). The one rule
 * for the CLI, request-export and the webhook (decision 79 in docs/architecture.md).
 */
export function refuseFuturePeriod(period: string, now: number, timeZone = DEFAULT_TIME_ZONE, field = 'period'): void {
  const current = periodContaining(now, timeZone).text;
  // YYYY-MM with a four-digit year: text order is month order.
  if (period > current) throw new FuturePeriodError(field, current, timeZone);
}

/** Whether `period` has not ended yet at `now` in `timeZone`: the current month (or a later one). */
export function periodOpen(period: string, now: number, timeZone = DEFAULT_TIME_ZONE): boolean {
  return period >= periodContaining(now, timeZone).text;
}

/**
 * The month before the one containing `instant` in `timeZone`: what the monthly schedule, firing on
 * the 1st at 00:xx Berlin time (still the previous day in UTC), must export.
 */
export function previousMonth(instant: number | Date, timeZone = DEFAULT_TIME_ZONE): Period {
  return previousPeriod(periodContaining(instant, timeZone));
}

/** Throws a ValidationError for a time zone Intl does not know (`Europe/Berlinn`). */
export function assertTimeZone(timeZone: string, field = 'timeZone'): void {
  zonedFormatter(timeZone, field);
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function zonedFormatter(timeZone: string, field = 'timeZone'): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', calendar: 'gregory' });
    } catch (error) {
      throw new ValidationError('time zone', [{ path: field, message: 'unknown IANA time zone' }], error);
    }
    formatters.set(timeZone, formatter);
  }
  return formatter;
}
