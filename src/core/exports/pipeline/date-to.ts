import {
  ApiValidationError,
  localDateOf,
  timestampMillis,
  type AccountingClient,
  type Page,
  type PageItem,
  type Transaction,
} from '../../accounting-api';
import type { Logger } from '../../shared/logger';

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
 * day read again after the range when the service's `date_to` is exclusive. Nothing per record: a
 * page is sampled for a busy day (three items at most) only until one is found.
 */
export function transactionsOfRange(
  client: AccountingClient,
  range: { dateFrom: string; dateTo: string },
  options: RangeOptions,
): AsyncIterable<Item> & { pages(): AsyncGenerator<Page<Transaction>> } {
  async function* pages(): AsyncGenerator<Page<Transaction>> {
    let candidate: Candidate | undefined;
    let finding: DateToFinding | undefined;
    const lastDay = { dateFrom: range.dateTo, dateTo: nextDay(range.dateTo) };
    for await (const page of client.transactions.list(range).pages()) {
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
    if (finding.dateTo !== 'exclusive') {
      options.onFinding?.(finding);
      return;
    }
    for await (const page of client.transactions.list(lastDay).pages()) {
      finding.lastDayRecords += page.items.length;
      yield page;
    }
    // A loss this export avoided, and every earlier one may have had: worth a warning, once a range.
    options.logger.warn('the service treats date_to as exclusive; its last day was read on its own and written with the range', {
      ...range,
      detected: finding.detected,
      lastDayRecords: finding.lastDayRecords,
      hint: finding.detected
        ? "set the stage's exports.dateTo (or --date-to) to exclusive to skip the probe"
        : 'exports.dateTo (or --date-to) says exclusive',
    });
    options.onFinding?.(finding);

    async function decide(sampled: Candidate | undefined): Promise<DateToFinding> {
      if (options.dateTo !== 'detect') return { dateTo: options.dateTo, detected: false, lastDayRecords: 0 };
      // A range without a record shows no busy day: the last day's own records (by either reading) may.
      const probe = sampled ?? (await lastDayCandidate(client, lastDay));
      if (probe === undefined) {
        options.logger.info('no transaction in the range nor on the day after it: whether date_to is inclusive does not matter', range);
        return { dateTo: 'undetermined', detected: false, lastDayRecords: 0 };
      }
      const inclusive = await countsEqualEnds(client, probe.days);
      if (inclusive) options.logger.info('the service treats date_to as inclusive', { ...range, probed: probe.days });
      return { dateTo: inclusive ? 'inclusive' : 'exclusive', detected: true, lastDayRecords: 0 };
    }
  }
  return {
    pages,
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) for (const item of page.items) yield item;
    },
  };
}

/** Whether any of `days`, asked as `date_from = date_to`, has a record: true only where `date_to` is inclusive. */
async function countsEqualEnds(client: AccountingClient, days: readonly string[]): Promise<boolean> {
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

async function lastDayCandidate(client: AccountingClient, lastDay: { dateFrom: string; dateTo: string }): Promise<Candidate | undefined> {
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
