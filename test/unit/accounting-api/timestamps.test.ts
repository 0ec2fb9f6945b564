import fc from 'fast-check';
import { epochDayOf, localDateOf, parseTimestamp, recalledTimestamp, timestampProblem } from '../../../src/core/accounting-api/timestamps';

const SEED = 20261121;

/**
 * The implementation parseTimestamp replaced (regex, Number, Date), widened to the other ISO 8601
 * forms it now reads on its slow path (a comma before the fraction, an offset in hours alone, the
 * basic format, which is not mixed with the extended one): the reference it must agree with on
 * every string, accepted or not.
 */
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?)$/;
const BASIC_TIMESTAMP = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(?:(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?:\d{2})?)$/;
function reference(text: string): { utcMillis: number; offsetMinutes: number } | undefined {
  const m = TIMESTAMP.exec(text) ?? BASIC_TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [year, month, day, hours, minutes] = [1, 2, 3, 4, 5].map((i) => Number(m[i]));
  const seconds = m[6] === undefined ? 0 : Number(m[6]);
  const offset = m[8]!;
  let shift: number | undefined = 0;
  if (offset !== 'Z') {
    const digits = offset.slice(1).replace(':', '');
    const [h, min] = [Number(digits.slice(0, 2)), Number(digits.slice(2))];
    shift = h > 23 || min > 59 ? undefined : (offset.startsWith('-') ? -1 : 1) * (h * 60 + min);
  }
  const last = new Date(Date.UTC(2000, month! - 1 + 1, 0)).getUTCDate();
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : last;
  if (month! < 1 || month! > 12 || day! < 1 || day! > days) return undefined;
  if (hours! > 23 || minutes! > 59 || seconds > 59 || shift === undefined) return undefined;
  const millis = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  const instant = new Date(Date.UTC(2000, month! - 1, day, hours, minutes, seconds, millis));
  instant.setUTCFullYear(year!);
  return { utcMillis: instant.getTime() - shift * 60_000, offsetMinutes: shift };
}

const two = (n: number) => String(n).padStart(2, '0');
/** Well-formed timestamps (some on impossible days or times), every optional part on or off. */
const shaped = fc
  .record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    hours: fc.integer({ min: 0, max: 25 }),
    minutes: fc.integer({ min: 0, max: 60 }),
    seconds: fc.option(fc.integer({ min: 0, max: 60 })),
    fraction: fc.option(fc.stringMatching(/^\d{0,11}$/)),
    decimalSign: fc.constantFrom('.', ','),
    offset: fc.oneof(
      fc.constant('Z'),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 25 }), fc.constantFrom(':', '', null), fc.integer({ min: 0, max: 61 }))
        .map(([sign, h, colon, m]) => `${sign}${two(h)}${colon === null ? '' : `${colon}${two(m)}`}`),
    ),
    basic: fc.boolean(),
  })
  .map(({ year, month, day, hours, minutes, seconds, fraction, decimalSign, offset, basic }) => {
    const [dash, colon] = basic ? ['', ''] : ['-', ':'];
    const time =
      seconds === null
        ? `${two(hours)}${colon}${two(minutes)}`
        : `${two(hours)}${colon}${two(minutes)}${colon}${two(seconds)}${fraction === null ? '' : `${decimalSign}${fraction}`}`;
    return `${String(year).padStart(4, '0')}${dash}${two(month)}${dash}${two(day)}T${time}${offset}`;
  });
/** One character of a well-formed timestamp replaced, removed or doubled. */
const mutated = fc
  .tuple(shaped, fc.nat(), fc.constantFrom('', '0', '9', ':', '-', '+', 'T', 'Z', '.', ',', ' ', 'a', '٣'), fc.boolean())
  .map(([text, at, char, insert]) => {
    const i = at % text.length;
    return insert ? text.slice(0, i) + char + text.slice(i) : text.slice(0, i) + char + text.slice(i + 1);
  });

describe('parseTimestamp', () => {
  it('accepts and refuses exactly what the reference (regex and Date) does, and agrees on the instant', () => {
    fc.assert(
      fc.property(fc.oneof(shaped, mutated, fc.string()), (text) => {
        const expected = reference(text);
        expect(parseTimestamp(text)).toEqual(expected);
        // A refusal always says something, and never throws.
        if (expected === undefined) expect(timestampProblem(text)).toMatch(/\S/);
      }),
      { seed: SEED, numRuns: 20_000 },
    );
  });

  it('reads the common forms, years 0-99 included (Date.UTC would put them in the 1900s)', () => {
    expect(parseTimestamp('2026-10-31T23:30:00-02:00')).toEqual({ utcMillis: Date.UTC(2026, 10, 1, 1, 30), offsetMinutes: -120 });
    expect(parseTimestamp('2026-03-29T02:30:00.123456+0530')).toEqual({
      utcMillis: Date.UTC(2026, 2, 28, 21, 0, 0, 123),
      offsetMinutes: 330,
    });
    expect(parseTimestamp('2024-02-29T00:00Z')).toEqual({ utcMillis: Date.UTC(2024, 1, 29), offsetMinutes: 0 });
    // Any number of fraction digits (ISO 8601, RFC 3339): ten, or thirty, read to the millisecond.
    expect(parseTimestamp('2026-10-15T12:00:00.9999999999+00:00')).toEqual({
      utcMillis: Date.UTC(2026, 9, 15, 12, 0, 0, 999),
      offsetMinutes: 0,
    });
    expect(parseTimestamp(`2026-10-15T12:00:00.5${'0'.repeat(29)}Z`)?.utcMillis).toBe(Date.UTC(2026, 9, 15, 12, 0, 0, 500));
    expect(parseTimestamp('0099-12-31T23:59:59Z')?.utcMillis).toBe(new Date('0099-12-31T23:59:59Z').getTime());
    expect(parseTimestamp('0000-01-01T00:00:00Z')?.utcMillis).toBe(new Date('0000-01-01T00:00:00Z').getTime());
  });

  it('reads the other ISO 8601 forms with an offset: a comma before the fraction, the basic format, an offset in hours', () => {
    const instant = { utcMillis: Date.UTC(2026, 9, 20, 8, 0, 0, 500), offsetMinutes: 120 };
    expect(parseTimestamp('2026-10-20T10:00:00,5+02:00')).toEqual(instant);
    expect(parseTimestamp('20261020T100000,5+0200')).toEqual(instant);
    expect(parseTimestamp('20261020T100000.5+02')).toEqual(instant);
    expect(parseTimestamp('20261020T100000+0200')).toEqual({ utcMillis: Date.UTC(2026, 9, 20, 8), offsetMinutes: 120 });
    expect(parseTimestamp('2026-10-20T10:00:00+02')).toEqual({ utcMillis: Date.UTC(2026, 9, 20, 8), offsetMinutes: 120 });
    expect(parseTimestamp('2026-10-20T10:00-05')).toEqual({ utcMillis: Date.UTC(2026, 9, 20, 15), offsetMinutes: -300 });
    expect(parseTimestamp('20261020T1000Z')).toEqual({ utcMillis: Date.UTC(2026, 9, 20, 10), offsetMinutes: 0 });
    // The basic and extended formats are not mixed (ISO 8601 §4.3.2).
    expect(parseTimestamp('20261020T10:00:00+02:00')).toBeUndefined();
    expect(parseTimestamp('2026-10-20T100000+0200')).toBeUndefined();
    expect(parseTimestamp('20261020T100000+02:00')).toBeUndefined();
  });

  it('reads t and z in lower case (RFC 3339 §5.6), in every form, as the same instant', () => {
    const utc = { utcMillis: Date.UTC(2026, 9, 28, 8), offsetMinutes: 0 };
    expect(parseTimestamp('2026-10-28t08:00:00z')).toEqual(utc);
    expect(parseTimestamp('2026-10-28T08:00:00z')).toEqual(utc);
    expect(parseTimestamp('20261028t080000z')).toEqual(utc);
    expect(parseTimestamp('2026-10-28t10:00:00+02:00')).toEqual({ ...utc, offsetMinutes: 120 });
    expect(localDateOf('2026-10-28t08:00:00z')).toBe('2026-10-28');
    // Still a timestamp's rules: a real hour, an offset, a T of either case.
    expect(parseTimestamp('2026-10-28t24:00:00z')).toBeUndefined();
    expect(parseTimestamp('2026-10-28x08:00:00z')).toBeUndefined();
    expect(timestampProblem('2026-10-28t25:00:00z')).toContain('hour');
  });

  it('the local date as written: the first ten characters, or the basic date made extended', () => {
    expect(localDateOf('2026-10-31T23:30:00-02:00')).toBe('2026-10-31');
    expect(localDateOf('20261031T233000-02')).toBe('2026-10-31');
    fc.assert(
      fc.property(shaped, (text) => {
        if (parseTimestamp(text) === undefined) return;
        const written = /^(\d{4})-?(\d{2})-?(\d{2})T/.exec(text)!;
        expect(localDateOf(text)).toBe(`${written[1]}-${written[2]}-${written[3]}`);
        expect(epochDayOf(localDateOf(text))).toBeDefined();
      }),
      { seed: SEED, numRuns: 5_000 },
    );
  });

  it.each([
    ['2026-10-20', /a date without a time and offset/],
    ['2026/10/20 10:00:00+02:00', /no "T" between a date and a time/],
    ['2026-1-20T10:00:00+02:00', /the date is not YYYY-MM-DD/],
    ['2026-13-20T10:00:00+02:00', /the month of the date is out of range/],
    ['2026-02-30T10:00:00+02:00', /the day of the date does not exist in its month/],
    ['2026-10-20T10:00:00', /no offset after the time/],
    ['2026-10-20T10h00+02:00', /the time is not HH:MM\[:SS\[.fraction\]\]/],
    ['2026-10-20T25:00:00+02:00', /the hour of the time is out of range/],
    ['2026-10-20T10:60:00+02:00', /the minute of the time is out of range/],
    ['2026-10-20T10:00:60+02:00', /the second of the time is out of range/],
    ['2026-10-20T10:00:00+2:00', /the offset is not Z, ±HH, ±HH:MM or ±HHMM/],
    ['2026-10-20T10:00:00+24:00', /the offset is out of range/],
    ['20261020T10:00:00+02', /mix the basic .* and extended .* formats/],
  ])('names the part that is wrong, never the text: %s', (text, message) => {
    expect(parseTimestamp(text)).toBeUndefined();
    const problem = timestampProblem(text);
    expect(problem).toMatch(message);
    expect(problem).not.toContain(text);
  });

  it('refuses what is not a timestamp with an offset on a real day', () => {
    for (const bad of [
      '2026-10-31T23:30:00',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-10-31T24:00:00Z',
      '2026-10-31T23:30:00+24:00',
      '2026-10-31T23:30:00.Z',
      '2026-10-31T23:30:00Z ',
    ]) {
      expect(parseTimestamp(bad)).toBeUndefined();
    }
  });

  it('parses a repeated string afresh, with the same result', () => {
    const first = parseTimestamp('2026-10-05T12:00:00Z');
    expect(parseTimestamp('2026-10-05T12:00:00Z')).toEqual(first);
    expect(parseTimestamp('2026-10-05T12:00:00+01:00')).toEqual({ utcMillis: first!.utcMillis - 3_600_000, offsetMinutes: 60 });
    expect(parseTimestamp('2026-02-30T12:00:00Z')).toBeUndefined();
    expect(parseTimestamp('2026-02-30T12:00:00Z')).toBeUndefined();
  });
});

describe('recalledTimestamp', () => {
  const page = (n: number, minute = 0) =>
    Array.from(
      { length: n },
      (_, i) =>
        `2026-10-${String(1 + (i % 28)).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:${String((i + minute) % 60).padStart(2, '0')}:00+02:00`,
    );

  it("returns the validation's own parse for a page read again in order: one parse per record, not two", () => {
    const texts = page(1000);
    const parsed = texts.map(parseTimestamp);
    texts.forEach((text, i) => expect(recalledTimestamp(text)).toBe(parsed[i]));
  });

  it('parses again, with the same result, what it cannot recall: another order, a page larger than it keeps, a string never parsed', () => {
    const texts = page(3000, 7);
    const parsed = texts.map(parseTimestamp);
    // 3,000 parses and a ring of 2,048: the first ones are gone, and the order is reversed.
    for (let i = texts.length - 1; i >= 0; i--) expect(recalledTimestamp(texts[i]!)).toEqual(parsed[i]);
    expect(recalledTimestamp('2026-10-05T12:00Z')).toEqual(reference('2026-10-05T12:00Z'));
    expect(recalledTimestamp('2026-02-30T12:00:00Z')).toBeUndefined();
    // After the misses, the next page is recalled again.
    const next = page(10, 13);
    const again = next.map(parseTimestamp);
    next.forEach((text, i) => expect(recalledTimestamp(text)).toBe(again[i]));
  });

  it('always answers what the reference answers, whatever mix of parses and recalls comes before', () => {
    const text = fc.oneof(
      fc.constantFrom('2026-10-05T12:00:00Z', '2026-10-05T12:00:00+01:00', '2026-02-30T12:00:00Z', 'not a timestamp'),
      fc.date({ min: new Date(0), max: new Date(Date.UTC(9999, 0)), noInvalidDate: true }).map((d) => d.toISOString()),
    );
    const step = fc.record({ recall: fc.boolean(), text });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        for (const { recall, text } of steps) {
          const got = recall ? recalledTimestamp(text) : parseTimestamp(text);
          expect(got).toEqual(reference(text));
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe('epochDayOf', () => {
  it('counts the days Date counts for every real date of years 0000-9999, and refuses the rest', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        (year, month, day) => {
          const text = `${String(year).padStart(4, '0')}-${two(month)}-${two(day)}`;
          const date = new Date(0);
          date.setUTCFullYear(year, month - 1, day);
          const real = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
          expect(epochDayOf(text)).toBe(real ? date.getTime() / 86_400_000 : undefined);
        },
      ),
      { seed: SEED, numRuns: 5_000 },
    );
    for (const bad of ['2026-1-01', '2026-10-01T', '2026/10/01', '２０２６-10-01', '']) expect(epochDayOf(bad)).toBeUndefined();
  });
});
