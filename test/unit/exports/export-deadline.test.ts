import { DEFAULT_DUE_AFTER_HOURS } from '../../../contract/exports';
import { DEFAULT_EXPORT_DEADLINE, assertExportDeadline, dueExportPeriod } from '../../../src/core/exports/pipeline/export-deadline';
import { ValidationError } from '../../../src/core/shared/errors';

describe('dueExportPeriod: the latest month whose exports are due', () => {
  const due = (iso: string, dueAfterHours = 12, timeZone = 'Europe/Berlin') =>
    dueExportPeriod(Date.parse(iso), timeZone, dueAfterHours).text;

  it('is the month before last until 12:00 local on the 1st, and last month from 12:00 on (CET, UTC+1)', () => {
    expect(due('2026-11-01T10:59:00Z')).toBe('2026-09'); // 11:59
    expect(due('2026-11-01T10:59:59.999Z')).toBe('2026-09');
    expect(due('2026-11-01T11:00:00Z')).toBe('2026-10'); // 12:00
    expect(due('2026-11-15T00:00:00Z')).toBe('2026-10');
    expect(due('2026-11-30T22:59:59.999Z')).toBe('2026-10'); // 23:59:59 on the 30th
    // Midnight in Berlin on 1 December, still November in UTC: December has begun, its deadline not yet.
    expect(due('2026-11-30T23:00:00Z')).toBe('2026-10');
  });

  it('reads the deadline on the wall clock in summer time too (CEST, UTC+2): 12:00 local is 10:00 UTC', () => {
    // Summer time began on 29 March 2026; a UTC reading would call 10:30Z 10:30, not 12:30.
    expect(due('2026-04-01T09:59:59.999Z')).toBe('2026-02');
    expect(due('2026-04-01T10:00:00Z')).toBe('2026-03');
    expect(due('2026-10-01T09:59:59.999Z')).toBe('2026-08');
    expect(due('2026-10-01T10:00:00Z')).toBe('2026-09');
  });

  it('counts wall-clock hours across a DST change inside the month', () => {
    // 648 h: 00:00 on the 28th. October 2026 gains an hour on the 25th, so 649 real hours have passed by then.
    expect(due('2026-10-27T22:59:59.999Z', 648)).toBe('2026-08'); // 23:59:59 CET on the 27th
    expect(due('2026-10-27T23:00:00Z', 648)).toBe('2026-09'); // 00:00 CET on the 28th
    // March 2026 loses one on the 29th: 6 h after midnight on the 1st is 05:00Z (CET) before it.
    expect(due('2026-03-01T04:59:59.999Z', 6)).toBe('2026-01');
    expect(due('2026-03-01T05:00:00Z', 6)).toBe('2026-02');
  });

  it('crosses the year boundary both ways', () => {
    // 00:30 on 1 January in Berlin, still 2026 in UTC: the new year has begun, November is the latest due.
    expect(due('2026-12-31T23:30:00Z')).toBe('2026-11');
    expect(due('2027-01-01T10:59:59.999Z')).toBe('2026-11');
    expect(due('2027-01-01T11:00:00Z')).toBe('2026-12');
    expect(due('2027-02-01T10:59:59.999Z')).toBe('2026-12');
    expect(due('2027-02-01T11:00:00Z')).toBe('2027-01');
  });

  it('draws the month boundaries in the time zone it is given', () => {
    // 22:59Z on 31 October is 11:59 on 1 November in Auckland (UTC+13): not yet due there; in UTC still October.
    expect(due('2026-10-31T22:59:00Z', 12, 'Pacific/Auckland')).toBe('2026-09');
    expect(due('2026-10-31T23:00:00Z', 12, 'Pacific/Auckland')).toBe('2026-10');
    expect(due('2026-10-31T23:00:00Z', 12, 'UTC')).toBe('2026-09');
    expect(due('2026-11-01T00:00:00Z', 0, 'UTC')).toBe('2026-10');
  });

  it('the default is the stack’s: Europe/Berlin and contract’s DEFAULT_DUE_AFTER_HOURS (12)', () => {
    expect(DEFAULT_EXPORT_DEADLINE).toEqual({ timeZone: 'Europe/Berlin', dueAfterHours: DEFAULT_DUE_AFTER_HOURS });
    expect(DEFAULT_DUE_AFTER_HOURS).toBe(12);
  });

  it('refuses a deadline that cannot be one, naming the field', () => {
    for (const hours of [-1, 1.5, 649, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => dueExportPeriod(0, 'Europe/Berlin', hours)).toThrow(ValidationError);
      expect(() => assertExportDeadline({ timeZone: 'Europe/Berlin', dueAfterHours: hours })).toThrow(
        expect.objectContaining({ field: 'dueAfterHours' }),
      );
    }
    expect(() => assertExportDeadline({ timeZone: 'Europe/Berlinn', dueAfterHours: 12 })).toThrow(
      expect.objectContaining({ field: 'timeZone' }),
    );
    expect(() => assertExportDeadline({ timeZone: 'Europe/Berlin', dueAfterHours: 648 })).not.toThrow();
  });
});
