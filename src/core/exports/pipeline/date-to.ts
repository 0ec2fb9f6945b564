import {
  ApiValidationError,
  localDateOf,
  timestampMillis,
  type DataClient,
  type Page,
  type PageItem,
  type Transaction,
} from '../../accounting-api';
import type { Logger } from '../../shared/logger';
import type { DateToReading } from '../formats/datasets';

/**
 * Whether the service's `date_to` includes its own day (spec §4.2 names `date_from (date), date_to
 * (date)` and nothing more; docs/exports.md, "The last day of a range").
 *
 * - `inclusive`: [date_from, date_to] is the range; nothing more is read.
 * - `exclusive`: the range ends the day before `date_to`, so its last day is read as well, with
 *   `date_from=<last day>&date_to=<the day after>`, into the same files.
 * - `detect` (the default): after the range is read, one page-size-1 request with
 *   `date_from = date_to = d`, for a day `d` the records show to be busy, tells the two apart: an
 *   exclusive service has nothing (or refuses the empty range with a 400) where an inclusive one
 *   counts the day's records.
 *
 * Under `exclusive` (found or set) the last day's read drops every record the range already
 * yielded: a service that is inclusive after all (a misdetection, or a wrong setting) would
 * otherwise have its last day written twice. The range keeps, for that, the ids of its records
 * that either reading of their `valueDate` (own offset, UTC) places on its last day. Once such a
 * repeat has shown `date_to` inclusive, the rest of that read is the day after the range, which
 * belongs to the next range: dropped too, and counted as `nextDayDropped` (decision 85).
 */
export const DATE_TO_MODES = ['detect', 'inclusive', 'exclusive'] as const;
export type DateToMode = (typeof DATE_TO_MODES)[number];

export interface DateToFinding {
  /** What the range was read as; `undetermined` when neither the range nor its last day holds a record. */
  dateTo: 'inclusive' | 'exclusive' | 'undetermined';
  /** True when a probe decided it, false when the setting did. */
  detected: boolean;
  /** Records read for the last day beyond the range (exclusive only), before repeats are dropped. */
  lastDayRecords: number;
  /** Of `lastDayRecords`, those the range had already yielded, dropped: the service's `date_to` is inclusive after all. */
  lastDayRepeats: number;
  /**
   * Of `lastDayRecords`, those the read returned besides the repeats once a repeat had shown
   * `date_to` inclusive: the day after the range (for a whole month, the next month's first day),
   * which the next range reads. Dropped, and counted nowhere else.
   */
  nextDayDropped: number;
}

/** The manifest's account of a finding (`datasets.transactions.dateTo`). */
export function dateToReading(mode: DateToMode, finding: DateToFinding): DateToReading {
  return {
    setting: mode,
    read: finding.dateTo,
    lastDayRecords: finding.lastDayRecords,
    lastDayRepeats: finding.lastDayRepeats,
    ...(finding.nextDayDropped > 0 ? { nextDayDropped: finding.nextDayDropped } : {}),
  };
}

export interface RangeOptions {
  dateTo: DateToMode;
  logger: Logger;
  /** Called once the list has ended, with what it found. */
  onFinding?: (finding: DateToFinding) => void;
}

type Item = PageItem<Transaction>;

/** A day of some record: `safe` when its date is the same in every zone from UTC-8 to UTC+8 and in its own offset. */
interface Candidate {
  days: string[];
  safe: boolean;
}

/**
 * The transactions of [dateFrom, dateTo] as the exporter reads them, a page at a time, with the last
 * day read again after the range when the service's `date_to` is exclusive. A page is sampled for a
 * busy day (three items at most) only until one is found; unless the setting is `inclusive`, each
 * record of the range costs a comparison of its date's characters (LastDayIds).
 * `reading()` says, once the pages have ended, how `date_to` was read (undefined before).
 */
export function transactionsOfRange(
  client: DataClient,
  range: { dateFrom: string; dateTo: string },
  options: RangeOptions,
): AsyncIterable<Item> & { pages(): AsyncGenerator<Page<Transaction>>; reading(): DateToReading | undefined } {
  let reading: DateToReading | undefined;
  async function* pages(): AsyncGenerator<Page<Transaction>> {
    let candidate: Candidate | undefined;
    let finding: DateToFinding | undefined;
    reading = undefined;
    const lastDay = { dateFrom: range.dateTo, dateTo: nextDay(range.dateTo) };
    // Only an exclusive reading reads the last day again; `detect` knows whether it will at the end.
    const seen = options.dateTo === 'inclusive' ? undefined : new LastDayIds(range.dateTo);
    for await (const page of client.transactions.list(range).pages()) {
      seen?.add(page.items);
      if (options.dateTo === 'detect' && !candidate?.safe) candidate = sample(page.items) ?? candidate;
      if (page.next !== null) {
        yield page;
        continue;
      }
      // Decided before the range's last page is handed over, so that a reader of `next` (a progress
      // bar's "done") sees the last day still to come.
      finding = await decide(candidate);
      yield finding.dateTo === 'exclusive' ? { ...page, next: `${page.request} (then its last day: date_to is exclusive)` } : page;
    }
    finding ??= await decide(candidate);
    if (finding.dateTo !== 'exclusive' || seen === undefined) {
      reading = dateToReading(options.dateTo, finding);
      options.onFinding?.(finding);
      return;
    }
    for await (const page of client.transactions.list(lastDay).pages()) {
      finding.lastDayRecords += page.items.length;
      const kept = seen.size === 0 ? page.items : page.items.filter((item) => !seen.has(item.parsed.publicId));
      const repeats = page.items.length - kept.length;
      // Counted as the pagination's repeats are, so the manifest, the event and the metric say it.
      finding.lastDayRepeats += repeats;
      // Once a repeat has shown `date_to` inclusive, `[last, last+1]` is the last day, which the range
      // already yielded, and the day after: whatever is not a repeat belongs to the next range (a
      // whole month's next month, which exports it), however its own offset dates it. Until then
      // nothing is dropped: an exclusive service's read is the last day alone, and none of it may go.
      const nextDay = finding.lastDayRepeats > 0 ? kept.length : 0;
      finding.nextDayDropped += nextDay;
      if (repeats === 0 && nextDay === 0) {
        yield page;
        continue;
      }
      yield { ...page, items: nextDay > 0 ? [] : kept, duplicatesDropped: page.duplicatesDropped + repeats };
    }
    if (finding.lastDayRepeats > 0) {
      // Only an inclusive `date_to` gives the range records its last day gives again: the reading was
      // wrong, and the setting that avoids both the probe and the second read is inclusive.
      options.logger.warn(
        'the last day read on its own repeated records the range already held, dropped: the service treats date_to as inclusive',
        {
          ...range,
          detected: finding.detected,
          lastDayRecords: finding.lastDayRecords,
          repeatsDropped: finding.lastDayRepeats,
          nextDayDropped: finding.nextDayDropped,
          hint: "set the stage's exports.dateTo (or --date-to) to inclusive",
        },
      );
    } else {
      // A loss this export avoided, and every earlier one may have had: worth a warning, once a range.
      options.logger.warn('the service treats date_to as exclusive; its last day was read on its own and written with the range', {
        ...range,
        detected: finding.detected,
        lastDayRecords: finding.lastDayRecords,
        hint: finding.detected
          ? "set the stage's exports.dateTo (or --date-to) to exclusive to skip the probe"
          : 'exports.dateTo (or --date-to) says exclusive',
      });
    }
    reading = dateToReading(options.dateTo, finding);
    options.onFinding?.(finding);

    async function decide(sampled: Candidate | undefined): Promise<DateToFinding> {
      if (options.dateTo !== 'detect')
        return { dateTo: options.dateTo, detected: false, lastDayRecords: 0, lastDayRepeats: 0, nextDayDropped: 0 };
      // A range without a record shows no busy day: the last day's own records (by either reading) may.
      const probe = sampled ?? (await lastDayCandidate(client, lastDay));
      if (probe === undefined) {
        options.logger.info('no transaction in the range nor on the day after it: whether date_to is inclusive does not matter', range);
        return { dateTo: 'undetermined', detected: false, lastDayRecords: 0, lastDayRepeats: 0, nextDayDropped: 0 };
      }
      const inclusive = await countsEqualEnds(client, probe.days);
      if (inclusive) options.logger.info('the service treats date_to as inclusive', { ...range, probed: probe.days });
      return { dateTo: inclusive ? 'inclusive' : 'exclusive', detected: true, lastDayRecords: 0, lastDayRepeats: 0, nextDayDropped: 0 };
    }
  }
  return {
    pages,
    reading: () => reading,
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) for (const item of page.items) yield item;
    },
  };
}

/**
 * The ids of a range's records that could be on its last day `day`, whichever way the service dates
 * them: the date of `valueDate` in its own offset, or in UTC. Memory is a day's ids. An export reads
 * a million records through here, so a record costs a character comparison unless its own date may
 * be `day`, the day before or the day after (only those can be `day` in UTC: an offset is less than a
 * day); then its first ten characters are compared, and a record of the day before with a negative
 * offset, or of the day after with a positive one, is parsed.
 */
class LastDayIds {
  private readonly ids = new Set<string>();
  private readonly before: string;
  private readonly after: string;
  private readonly start: number;
  private readonly end: number;
  /** The last digit of each candidate day: the tenth character of an extended timestamp. */
  private readonly digits: readonly [number, number, number];

  constructor(private readonly day: string) {
    this.start = Date.parse(`${day}T00:00:00Z`);
    this.end = this.start + 24 * HOUR_MS;
    this.before = new Date(this.start - 24 * HOUR_MS).toISOString().slice(0, 10);
    this.after = nextDay(day);
    this.digits = [day.charCodeAt(9), this.before.charCodeAt(9), this.after.charCodeAt(9)];
  }

  get size(): number {
    return this.ids.size;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(items: readonly Item[]): void {
    const { day, before, after, ids } = this;
    const [d0, d1, d2] = this.digits;
    for (const item of items) {
      const { valueDate } = item.parsed;
      const digit = valueDate.charCodeAt(9);
      if (digit !== d0 && digit !== d1 && digit !== d2 && valueDate.charCodeAt(4) === DASH) continue;
      if (valueDate.charCodeAt(4) !== DASH) {
        // A basic-format date (`20261031T…`) is rare: read the slow way.
        this.addOwnOrUtc(item.parsed.publicId, valueDate, localDateOf(valueDate));
      } else if (startsWithDate(valueDate, day)) {
        ids.add(item.parsed.publicId);
      } else if (
        startsWithDate(valueDate, before) ? valueDate.lastIndexOf('-') > 10 : startsWithDate(valueDate, after) && valueDate.indexOf('+') > 0
      ) {
        // The day before with a negative offset, or the day after with a positive one: `day` in UTC, perhaps.
        if (this.utcOnDay(valueDate)) ids.add(item.parsed.publicId);
      }
    }
  }

  private addOwnOrUtc(id: string, valueDate: string, own: string): void {
    if (own === this.day || ((own === this.before || own === this.after) && this.utcOnDay(valueDate))) this.ids.add(id);
  }

  private utcOnDay(valueDate: string): boolean {
    const utc = timestampMillis(valueDate);
    return utc !== undefined && utc >= this.start && utc < this.end;
  }
}

const DASH = 0x2d;

/** Whether `text` starts with the date `date` (`YYYY-MM-DD`), compared from its last digit back, without a string made. */
function startsWithDate(text: string, date: string): boolean {
  // Dates of one range differ first in their day's digits.
  for (let i = 9; i >= 0; i--) if (text.charCodeAt(i) !== date.charCodeAt(i)) return false;
  return true;
}

/** Whether any of `days`, asked as `date_from = date_to`, has a record: true only where `date_to` is inclusive. */
async function countsEqualEnds(client: DataClient, days: readonly string[]): Promise<boolean> {
  for (const day of days) {
    try {
      const page = await client.transactions.list({ dateFrom: day, dateTo: day, pageSize: 1 }).firstPage();
      if (page.count > 0 || page.items.length > 0) return true;
    } catch (error) {
      // An empty range refused as invalid is what an exclusive end makes of equal ends.
      if (!(error instanceof ApiValidationError)) throw error;
    }
  }
  return false;
}

async function lastDayCandidate(client: DataClient, lastDay: { dateFrom: string; dateTo: string }): Promise<Candidate | undefined> {
  return sample((await client.transactions.list(lastDay).firstPage()).items);
}

const HOUR_MS = 3_600_000;

/**
 * A day of the page's records to probe: the first, middle and last item are looked at. A record
 * between 08:00 and 16:00 UTC whose own offset dates it the same day is on that date wherever the
 * service places its days (UTC, its own zone, the record's offset): a safe probe of one day.
 * Otherwise the record's two readings (own offset, UTC) are both probed.
 */
function sample(items: readonly Item[]): Candidate | undefined {
  let fallback: Candidate | undefined;
  for (const index of new Set([0, items.length >> 1, items.length - 1])) {
    const text = items[index]?.parsed.valueDate;
    if (typeof text !== 'string') continue;
    // The client's reading, not Date.parse: a basic-format timestamp (`20261031T…`) is valid too.
    const utc = timestampMillis(text);
    if (utc === undefined) continue;
    const local = localDateOf(text);
    const utcDay = new Date(utc).toISOString().slice(0, 10);
    const hour = (utc % (24 * HOUR_MS)) / HOUR_MS;
    if (local === utcDay && hour >= 8 && hour < 16) return { days: [local], safe: true };
    fallback ??= { days: local === utcDay ? [local] : [local, utcDay], safe: false };
  }
  return fallback;
}

/** The calendar day after `YYYY-MM-DD`. */
export function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + 24 * HOUR_MS).toISOString().slice(0, 10);
}
