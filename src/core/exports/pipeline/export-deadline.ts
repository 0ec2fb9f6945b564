import { DEFAULT_DUE_AFTER_HOURS } from '../../../../contract/exports';
import { ValidationError } from '../../shared/errors';
import { assertTimeZone, DEFAULT_TIME_ZONE, previousMonth, previousPeriod, type Period } from '../formats/period';

/** When last month's exports are due: `dueAfterHours` after midnight on the 1st, on the wall clock of `timeZone`. */
export interface ExportDeadline {
  timeZone: string;
  dueAfterHours: number;
}

/** The deadline a stage gets when it sets neither `schedules.timeZone` nor `ExportsTuning.dueAfterHours`. */
export const DEFAULT_EXPORT_DEADLINE: Readonly<ExportDeadline> = { timeZone: DEFAULT_TIME_ZONE, dueAfterHours: DEFAULT_DUE_AFTER_HOURS };

/**
 * The latest month whose exports are due by `now`: the previous month once `dueAfterHours` of the
 * current one have passed, the month before it until then. The deployed overdue check and
 * `acctops doctor` both judge by this, so they never disagree about which month must exist.
 */
export function dueExportPeriod(now: number, timeZone: string, dueAfterHours: number): Period {
  assertExportDeadline({ timeZone, dueAfterHours });
  const previous = previousMonth(now, timeZone);
  return hoursIntoMonth(now, timeZone) >= dueAfterHours ? previous : previousPeriod(previous);
}

/** Throws a ValidationError naming `timeZone` or `dueAfterHours` when `deadline` cannot be one. */
export function assertExportDeadline(deadline: ExportDeadline): void {
  assertTimeZone(deadline.timeZone, 'timeZone');
  const hours = deadline.dueAfterHours;
  // The functions' cap (EXPORT_DUE_AFTER_HOURS): much later, February would end before its deadline came.
  if (!Number.isInteger(hours) || hours < 0 || hours > 24 * 27)
    throw new ValidationError('export deadline', [{ path: 'dueAfterHours', message: 'expected whole hours from 0 to 648' }]);
}

const hourFormatters = new Map<string, Intl.DateTimeFormat>();

/** Hours since midnight of the 1st of the current month, on the wall clock of `timeZone`. */
function hoursIntoMonth(instant: number, timeZone: string): number {
  let formatter = hourFormatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone, day: 'numeric', hour: 'numeric', hourCycle: 'h23' });
    hourFormatters.set(timeZone, formatter);
  }
  const parts = formatter.formatToParts(instant);
  const day = Number(parts.find((p) => p.type === 'day')?.value);
  const hour = Number(parts.find((p) => p.type === 'hour')?.value);
  return (day - 1) * 24 + hour;
}
