import { ValidationError } from '../../../src/core/shared/errors';
import {
  assertTimeZone,
  EARLIEST_PERIOD,
  EarlyPeriodError,
  firstDay,
  FuturePeriodError,
  lastDay,
  parsePeriod,
  periodContaining,
  periodOpen,
  periodRange,
  previousMonth,
  previousPeriod,
  refuseEarlyPeriod,
  refuseFuturePeriod,
} from '../../../src/core/exports/formats/period';
import { refuseFutureRequest } from '../../../src/core/exports/pipeline/on-demand';
import { epochDay } from '../../../src/core/exports/formats/offset-timestamp';
import { localDateOf, timestampInstant } from '../../../src/core/accounting-api';

describe('periods', () => {
  it('parses YYYY-MM and refuses anything else, naming the field', () => {
    expect(parsePeriod('2026-10')).toEqual({ year: 2026, month: 10, text: '2026-10' });
    for (const bad of ['2026-13', '2026-00', '2026-1', '26-10', '2026-10-01', ' 2026-10', '']) {
      expect(() => parsePeriod(bad, 'month')).toThrow(ValidationError);
      try {
        parsePeriod(bad, 'month');
      } catch (error) {
        expect((error as ValidationError).field).toBe('month');
      }
    }
  });

  it('knows the first and last day of a month, leap years included', () => {
    expect(firstDay(parsePeriod('2026-10'))).toBe('2026-10-01');
    expect(lastDay(parsePeriod('2026-10'))).toBe('2026-10-31');
    expect(lastDay(parsePeriod('2026-11'))).toBe('2026-11-30');
    expect(lastDay(parsePeriod('2028-02'))).toBe('2028-02-29');
    expect(lastDay(parsePeriod('2100-02'))).toBe('2100-02-28');
    expect(lastDay(parsePeriod('2000-02'))).toBe('2000-02-29');
    expect(periodRange(parsePeriod('2026-02'))).toEqual({ dateFrom: '2026-02-01', dateTo: '2026-02-28' });
  });

  it('steps back across a year boundary', () => {
    expect(previousPeriod(parsePeriod('2027-01')).text).toBe('2026-12');
    expect(previousPeriod(parsePeriod('2026-11')).text).toBe('2026-10');
  });

  it('takes the previous month on the wall clock of the time zone, not UTC', () => {
    // 23:30 UTC on 31 October is already 1 November in Berlin (CET, +01:00): export October.
    expect(previousMonth(Date.UTC(2026, 9, 31, 23, 30))).toEqual(parsePeriod('2026-10'));
    // 22:30 UTC on 31 October is still 31 October in Berlin: the previous month is September.
    expect(previousMonth(Date.UTC(2026, 9, 31, 22, 30))).toEqual(parsePeriod('2026-09'));
    // Summer time: 22:30 UTC on 31 July is 00:30 on 1 August in Berlin (CEST, +02:00).
    expect(previousMonth(Date.UTC(2026, 6, 31, 22, 30), 'Europe/Berlin').text).toBe('2026-07');
    expect(previousMonth(Date.UTC(2026, 6, 31, 22, 30), 'UTC').text).toBe('2026-06');
    expect(previousMonth(new Date(Date.UTC(2027, 0, 1, 0, 30)), 'Europe/Berlin').text).toBe('2026-12');
    expect(periodContaining(Date.UTC(2026, 9, 31, 23, 30), 'America/New_York').text).toBe('2026-10');
  });

  it('refuses a month after the current one on the wall clock of the time zone, naming the field; the current month is open', () => {
    // 23:30 UTC on 30 November is 00:30 on 1 December in Berlin.
    const now = Date.UTC(2026, 10, 30, 23, 30);
    expect(() => refuseFuturePeriod('2026-12', now, 'Europe/Berlin')).not.toThrow();
    expect(() => refuseFuturePeriod('2026-11', now, 'UTC')).not.toThrow();
    let refused: unknown;
    try {
      refuseFuturePeriod('2026-12', now, 'UTC', 'detail.to');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(FuturePeriodError);
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused).toMatchObject({ code: 'period_in_future', field: 'detail.to', currentPeriod: '2026-11', name: 'FuturePeriodError' });
    expect(() => refuseFuturePeriod('2099-01', now)).toThrow('period: period: is after the current month (2026-12, Europe/Berlin)');

    expect(periodOpen('2026-12', now, 'Europe/Berlin')).toBe(true);
    expect(periodOpen('2026-11', now, 'Europe/Berlin')).toBe(false);
    expect(periodOpen('2026-11', now, 'UTC')).toBe(true);
  });

  it('refuses a month before 2000-01 (a mistyped year), naming the field; 2000-01 itself is exported', () => {
    for (const month of ['0226-10', '0001-01', '1026-10', '1999-12']) {
      let refused: unknown;
      try {
        refuseEarlyPeriod(month, 'detail.period');
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(EarlyPeriodError);
      expect(refused).toBeInstanceOf(ValidationError);
      expect(refused).toMatchObject({ code: 'period_too_early', field: 'detail.period', name: 'EarlyPeriodError' });
    }
    expect(() => refuseEarlyPeriod(EARLIEST_PERIOD)).not.toThrow();
    expect(EARLIEST_PERIOD).toBe('2000-01');
  });

  it('refuseFutureRequest: a single month or a range starting before 2000-01 is refused whole, naming period or from', () => {
    const at = { now: Date.UTC(2026, 10, 15), timeZone: 'Europe/Berlin' };
    expect(() => refuseFutureRequest({ period: '0226-10' }, at, 'detail.')).toThrow(
      expect.objectContaining({ code: 'period_too_early', field: 'detail.period' }) as Error,
    );
    expect(() => refuseFutureRequest({ from: '1999-12-15', to: '2000-02' }, at)).toThrow(
      expect.objectContaining({ code: 'period_too_early', field: 'from' }) as Error,
    );
    expect(() => refuseFutureRequest({ from: '2000-01', to: '2026-11-30' }, at)).not.toThrow();
    expect(() => refuseFutureRequest({ from: '2026-10', to: '2026-12' }, at)).toThrow(
      expect.objectContaining({ code: 'period_in_future' }) as Error,
    );
  });

  it('refuses an unknown time zone with a ValidationError', () => {
    expect(() => assertTimeZone('Europe/Berlinn')).toThrow(ValidationError);
    expect(() => previousMonth(0, 'Mars/Olympus')).toThrow(ValidationError);
    expect(() => assertTimeZone('Asia/Kolkata')).not.toThrow();
  });
});

/** What the export's row takes from one API timestamp: the instant, the offset and the date as written. */
function parseOffsetTimestamp(text: string) {
  const instant = timestampInstant(text);
  return instant && { utcMillis: instant.utcMillis, offsetMinutes: instant.offsetMinutes, localDate: localDateOf(text) };
}

describe('offset timestamps', () => {
  it('keeps the offset, the date as written and the exact UTC instant', () => {
    expect(parseOffsetTimestamp('2026-10-31T23:30:00-02:00')).toEqual({
      utcMillis: Date.UTC(2026, 10, 1, 1, 30),
      offsetMinutes: -120,
      localDate: '2026-10-31',
    });
    expect(parseOffsetTimestamp('2026-11-01T00:15:00+01:00')).toEqual({
      utcMillis: Date.UTC(2026, 9, 31, 23, 15),
      offsetMinutes: 60,
      localDate: '2026-11-01',
    });
    expect(parseOffsetTimestamp('2026-10-01T00:00:00Z')?.offsetMinutes).toBe(0);
    expect(parseOffsetTimestamp('2026-10-01T05:45:30.1239+0545')).toEqual({
      utcMillis: Date.UTC(2026, 9, 1, 0, 0, 30, 123),
      offsetMinutes: 345,
      localDate: '2026-10-01',
    });
  });

  it('refuses timestamps without an offset and impossible dates', () => {
    for (const bad of [
      '2026-10-01T10:00:00',
      '2026-10-01',
      '2026-02-30T10:00:00Z',
      '2026-10-01T24:00:00Z',
      '2026-10-01T10:00:00+25:00',
      'yesterday',
    ]) {
      expect(parseOffsetTimestamp(bad)).toBeUndefined();
    }
  });

  it('counts epoch days for Parquet DATE', () => {
    expect(epochDay('1970-01-01')).toBe(0);
    expect(epochDay('2026-10-31')).toBe(Date.UTC(2026, 9, 31) / 86_400_000);
    expect(epochDay('2026-02-29')).toBeUndefined();
  });
});
