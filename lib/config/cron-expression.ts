/**
 * EventBridge Scheduler's `cron(...)` grammar, checked field by field at synth: CloudFormation only
 * refuses a bad expression at deploy, after the stack's other resources are under way.
 *
 * The grammar is AWS's cron reference (EventBridge Scheduler user guide, "Schedule types", and the
 * EventBridge "Cron expressions reference"): six fields, `minutes hours day-of-month month
 * day-of-week year`, with these values and wildcards:
 *
 * | field | values | wildcards |
 * |---|---|---|
 * | minutes | 0-59 | , - * / |
 * | hours | 0-23 | , - * / |
 * | day-of-month | 1-31 | , - * ? / L W |
 * | month | 1-12 or JAN-DEC | , - * / |
 * | day-of-week | 1-7 or SUN-SAT | , - * ? L # |
 * | year | 1970-2199 | , - * / |
 *
 * and one of day-of-month and day-of-week must be `?` (AWS takes a value, or `*`, in only one).
 * This module imports nothing, as stage.ts.
 */

interface CronField {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names in order, the first being `min` (JAN = 1, SUN = 1). */
  readonly names?: readonly string[];
  readonly question?: boolean;
  readonly step?: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const FIELDS: readonly CronField[] = [
  { name: 'minutes', min: 0, max: 59, step: true },
  { name: 'hours', min: 0, max: 23, step: true },
  { name: 'day-of-month', min: 1, max: 31, question: true, step: true },
  { name: 'month', min: 1, max: 12, names: MONTHS, step: true },
  { name: 'day-of-week', min: 1, max: 7, names: WEEKDAYS, question: true },
  { name: 'year', min: 1970, max: 2199, step: true },
];

const SHAPE = `cron(${FIELDS.map((f) => f.name).join(' ')})`;

/** The first problem of `expression` as a cron(...) expression, in words naming the field; undefined when valid. */
export function cronExpressionIssue(expression: string): string | undefined {
  const match = /^cron\((.*)\)$/.exec(expression);
  if (!match) return `expected ${SHAPE}`;
  const parts = match[1]!.trim().split(/\s+/).filter(Boolean);
  if (parts.length !== FIELDS.length) return `expected 6 fields, ${SHAPE}; got ${parts.length}`;
  for (const [index, field] of FIELDS.entries()) {
    const issue = fieldIssue(field, parts[index]!);
    if (issue !== undefined) return `${field.name} "${parts[index]}": ${issue}`;
  }
  const [dayOfMonth, dayOfWeek] = [parts[2]!, parts[4]!];
  if ((dayOfMonth === '?') === (dayOfWeek === '?')) {
    return `day-of-month "${dayOfMonth}" and day-of-week "${dayOfWeek}": exactly one of them must be ? (AWS takes a value, or *, in only one of the two)`;
  }
  return undefined;
}

function fieldIssue(field: CronField, text: string): string | undefined {
  const allowed = describe(field);
  if (text === '?') return field.question ? undefined : `? is allowed only in day-of-month and day-of-week; expected ${allowed}`;
  if (field.name === 'day-of-week' && text.includes('#')) {
    // One instance of one weekday: `3#2` is the month's second Tuesday; AWS refuses a list with it.
    const [day, nth] = text.split('#');
    if (text.split('#').length !== 2 || valueOf(field, day!) === undefined || !/^[1-5]$/.test(nth ?? '')) {
      return 'expected <weekday>#<1-5> alone, e.g. 3#2 (the second Tuesday)';
    }
    return undefined;
  }
  for (const item of text.split(',')) {
    const issue = itemIssue(field, item);
    if (issue !== undefined) return `${issue}; expected ${allowed}`;
  }
  return undefined;
}

function itemIssue(field: CronField, item: string): string | undefined {
  if (item === '') return 'an empty list item';
  if (item === '?') return '? cannot be part of a list';
  if (item === 'L' && field.question) return undefined;
  if (field.name === 'day-of-month' && /^\d+W$/.test(item)) {
    return inRange(field, Number(item.slice(0, -1))) ? undefined : `${item.slice(0, -1)} is outside ${field.min}-${field.max}`;
  }
  // The last given weekday of the month, `6L` (the last Friday).
  if (field.name === 'day-of-week' && /^[^L]+L$/.test(item) && valueOf(field, item.slice(0, -1)) !== undefined) return undefined;
  const [base, step, extra] = item.split('/');
  if (extra !== undefined) return `"${item}" has more than one /`;
  if (step !== undefined) {
    if (!field.step) return `/ (increments) is not allowed in ${field.name}`;
    if (!/^\d+$/.test(step) || Number(step) < 1) return `the increment after / must be a positive whole number`;
  }
  if (base === '*') return undefined;
  const ends = base!.split('-');
  if (ends.length > 2) return `"${base}" is not a value or a range a-b`;
  for (const end of ends) {
    if (end === '') return `"${base}" is not a value or a range a-b`;
    if (valueOf(field, end) === undefined) {
      if (/^\d+$/.test(end)) return `${end} is outside ${field.min}-${field.max}`;
      return field.names ? `"${end}" is neither a number nor a name` : `"${end}" is not a number`;
    }
  }
  return undefined;
}

function valueOf(field: CronField, text: string): number | undefined {
  if (/^\d+$/.test(text)) return inRange(field, Number(text)) ? Number(text) : undefined;
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  return index >= 0 ? field.min + index : undefined;
}

function inRange(field: CronField, value: number): boolean {
  return value >= field.min && value <= field.max;
}

function describe(field: CronField): string {
  const values = `${field.min}-${field.max}${field.names ? ` or ${field.names[0]}-${field.names[field.names.length - 1]}` : ''}`;
  const extras = [
    field.question ? '?' : undefined,
    field.name === 'day-of-month' ? 'L, <day>W' : undefined,
    field.name === 'day-of-week' ? 'L, <day>L, <day>#<1-5>' : undefined,
  ].filter((x) => x !== undefined);
  return `${values}, *, a range a-b, a list a,b${field.step ? ', an increment a/b or */b' : ''}${extras.length ? `, ${extras.join(', ')}` : ''}`;
}
