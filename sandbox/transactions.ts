import { localDateOf, parseTimestamp } from '../src/core/accounting-api';
import { hashString, hex, mix } from './random';

/**
 * Transactions come from two kinds of source: records held in memory (demo edge cases, records
 * added through the admin API) and generated datasets, which hold nothing: record i of a month is
 * derived from (seed, company, month, i), and both its instant and its local date grow with i,
 * so a date filter is an index range computed by arithmetic. A page is cut from the union of the
 * sources by rank, in the order of docs/assumptions.md (instant, then publicId).
 */

export type CashflowType = 'EXPENSE' | 'INCOME';

export interface TransactionRecord {
  publicId: string;
  companyId: string;
  /** Minor units. */
  amount: bigint;
  currency: string;
  cashflowType: CashflowType;
  /** As served: ISO 8601 with its own offset. */
  valueDate: string;
  /** The same moment in epoch milliseconds: the sort key. */
  instant: number;
  /** The calendar date as written in `valueDate`'s own offset: what date filters compare. */
  localDate: string;
  description: string;
  category: string | null;
  bankAccount: string;
  /** Stable pseudo-random bits of the record: pick its encoding in `mixed` mode and whether it shows labels. */
  variant: number;
}

export interface SortKey {
  instant: number;
  id: string;
}

export function compareKeys(a: SortKey, b: SortKey): number {
  if (a.instant !== b.instant) return a.instant < b.instant ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export const keyOf = (r: TransactionRecord): SortKey => ({ instant: r.instant, id: r.publicId });

/** A sorted, indexable run of transactions. */
export interface TransactionSource {
  readonly size: number;
  keyAt(i: number): SortKey;
  itemAt(i: number): TransactionRecord;
}

export interface DateFilter {
  dateFrom?: string | undefined;
  dateTo?: string | undefined;
}

export const inDateRange = (localDate: string, f: DateFilter): boolean =>
  (f.dateFrom === undefined || localDate >= f.dateFrom) && (f.dateTo === undefined || localDate <= f.dateTo);

export class ArraySource implements TransactionSource {
  constructor(private readonly items: readonly TransactionRecord[]) {}
  get size(): number {
    return this.items.length;
  }
  keyAt(i: number): SortKey {
    return keyOf(this.items[i]!);
  }
  itemAt(i: number): TransactionRecord {
    return this.items[i]!;
  }
}

/**
 * Reads the sort key and local date out of a `valueDate` with an explicit offset: any ISO 8601 form
 * the client reads (the basic format, a comma before the fraction, an offset in hours), so that a
 * test can have the service send one.
 */
export function parseValueDate(valueDate: string): { instant: number; localDate: string } | undefined {
  const parsed = parseTimestamp(valueDate);
  if (parsed === undefined) return undefined;
  return { instant: parsed.utcMillis, localDate: localDateOf(valueDate) };
}

const DAY_MS = 86_400_000;
const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const offsetSuffixes = new Map<number, string>();
// Generated records come in order, so consecutive ones share their date: a one-entry cache of the
// date text saves a Date per record on the path that serves a million of them.
let cachedDay = Number.NaN;
let cachedDate = '';

function offsetSuffix(offsetMinutes: number): string {
  let suffix = offsetSuffixes.get(offsetMinutes);
  if (suffix === undefined) {
    const abs = Math.abs(offsetMinutes);
    suffix = offsetMinutes === 0 ? 'Z' : `${offsetMinutes < 0 ? '-' : '+'}${TWO_DIGITS[Math.floor(abs / 60)]}:${TWO_DIGITS[abs % 60]}`;
    offsetSuffixes.set(offsetMinutes, suffix);
  }
  return suffix;
}

/** Writes `instant` as it reads in a zone `offsetMinutes` east of UTC, with milliseconds. */
export function formatWithOffset(instant: number, offsetMinutes: number): string {
  const local = instant + offsetMinutes * 60_000;
  const day = Math.floor(local / DAY_MS);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDate = new Date(day * DAY_MS).toISOString().slice(0, 10);
  }
  const rem = local - day * DAY_MS;
  const ms = rem % 1000;
  const time = `${TWO_DIGITS[Math.floor(rem / 3_600_000)]}:${TWO_DIGITS[Math.floor(rem / 60_000) % 60]}:${TWO_DIGITS[Math.floor(rem / 1000) % 60]}`;
  return `${cachedDate}T${time}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}${offsetSuffix(offsetMinutes)}`;
}

// Offsets of at most ten hours: a regular record sits between 11:00 and 13:00 UTC, so its local
// date is its UTC date and stays monotone. Boundary records use their own offsets below.
const OFFSETS = [0, 60, 120, -300, 330, -210, 540, -480, 600, -600, 345, 60];
const DESCRIPTIONS = [
  'Office supplies',
  'Cloud hosting',
  'Customer payment',
  'Train tickets',
  'Coffee beans',
  'Software licence',
  'Rent',
  'Consulting fee',
  'Bank fee',
  'Hardware',
];
const WINDOW_START_MS = 11 * 3_600_000;
const WINDOW_MS = 2 * 3_600_000;
const EARLY_OFFSET = 120; // 00:05+02:00 on the 1st is still the previous month in UTC
const LATE_OFFSET = -180; // 23:40-03:00 on the last day is already the next month in UTC
export const MAX_GENERATED = 10_000_000;

export interface GeneratedDatasetSpec {
  seed: string;
  companyId: string;
  currency: string;
  month: string;
  count: number;
  categories: readonly string[];
  /**
   * Each category's cashflow type, in the order of `categories`: a transaction takes a category of
   * its own type (an income is never filed under Rent). Absent in the snapshots of states saved
   * before it, whose datasets then draw from every category as they did, so that a saved state
   * exports what it exported before.
   */
  categoryTypes?: readonly CashflowType[];
  bankAccounts: readonly string[];
}

export class GeneratedDataset {
  readonly companyId: string;
  readonly month: string;
  readonly count: number;
  private readonly hash: number;
  private readonly idPrefix: string;
  private readonly monthStart: number;
  private readonly days: number;
  /** The categories an income (an expense) may take: those of its type, or all of them (categoryTypes). */
  private readonly incomeCategories: readonly string[];
  private readonly expenseCategories: readonly string[];

  constructor(readonly spec: GeneratedDatasetSpec) {
    const match = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(spec.month);
    if (!match) throw new RangeError('month must be YYYY-MM');
    if (!Number.isSafeInteger(spec.count) || spec.count < 0 || spec.count > MAX_GENERATED) {
      throw new RangeError(`count must be an integer from 0 to ${MAX_GENERATED}`);
    }
    const year = Number(match[1]);
    const month = Number(match[2]);
    this.companyId = spec.companyId;
    this.month = spec.month;
    this.count = spec.count;
    this.monthStart = Date.UTC(year, month - 1, 1);
    this.days = (Date.UTC(year, month, 1) - this.monthStart) / DAY_MS;
    this.hash = hashString(`${spec.seed}:${spec.companyId}:${spec.month}`);
    const h2 = mix(this.hash, 1);
    // The index is the last UUID group, so publicIds of one dataset sort like their indices.
    this.idPrefix = `${hex(this.hash, 8)}-${hex(h2 >>> 16, 4)}-4${hex(h2, 3)}-8${hex(mix(this.hash, 2), 3)}-`;
    const types = spec.categoryTypes?.length === spec.categories.length ? spec.categoryTypes : undefined;
    const ofType = (type: CashflowType) => (types ? spec.categories.filter((_, i) => types[i] === type) : spec.categories);
    this.incomeCategories = ofType('INCOME');
    this.expenseCategories = ofType('EXPENSE');
  }

  /** First index of day `d` (0-based); `dayStart(days)` is the count. */
  dayStart(d: number): number {
    return Math.ceil((d * this.count) / this.days);
  }

  /** The index range whose local dates fall within the filter, both ends inclusive. */
  range(filter: DateFilter): { lo: number; hi: number } {
    const first = `${this.month}-01`;
    const last = `${this.month}-${String(this.days).padStart(2, '0')}`;
    if ((filter.dateTo !== undefined && filter.dateTo < first) || (filter.dateFrom !== undefined && filter.dateFrom > last)) {
      return { lo: 0, hi: 0 };
    }
    const fromDay = filter.dateFrom !== undefined && filter.dateFrom > first ? Number(filter.dateFrom.slice(8, 10)) - 1 : 0;
    const toDay = filter.dateTo !== undefined && filter.dateTo < last ? Number(filter.dateTo.slice(8, 10)) - 1 : this.days - 1;
    if (toDay < fromDay) return { lo: 0, hi: 0 };
    return { lo: this.dayStart(fromDay), hi: this.dayStart(toDay + 1) };
  }

  private place(i: number): { instant: number; offset: number } {
    let d = Math.floor((i * this.days) / this.count);
    // Guards against a rounding slip of the division; the day is the one whose range holds i.
    while (d > 0 && this.dayStart(d) > i) d--;
    while (d + 1 < this.days && this.dayStart(d + 1) <= i) d++;
    const start = this.dayStart(d);
    const perDay = this.dayStart(d + 1) - start;
    const boundary = Math.min(2, Math.floor(perDay / 4));
    const early = d === 0 ? boundary : 0;
    const late = d === this.days - 1 ? boundary : 0;
    const j = i - start;
    const dayUtc = this.monthStart + d * DAY_MS;
    if (j < early) return { instant: dayUtc - EARLY_OFFSET * 60_000 + (5 + 10 * j) * 60_000, offset: EARLY_OFFSET };
    if (j >= perDay - late) {
      const k = j - (perDay - late);
      return { instant: dayUtc + (23 * 60 + 40 + 10 * k - LATE_OFFSET) * 60_000, offset: LATE_OFFSET };
    }
    const regular = perDay - early - late;
    return {
      instant: dayUtc + WINDOW_START_MS + Math.floor(((j - early) * WINDOW_MS) / regular),
      offset: OFFSETS[mix(this.hash, i) % OFFSETS.length]!,
    };
  }

  keyAt(i: number): SortKey {
    return { instant: this.place(i).instant, id: this.idPrefix + i.toString(16).padStart(12, '0') };
  }

  recordAt(i: number): TransactionRecord {
    const { instant, offset } = this.place(i);
    const r = mix(this.hash ^ 0x5bd1e995, i);
    const r2 = mix(r, 0x27d4eb2f);
    const income = r % 10 < 3;
    const magnitude = BigInt(100 + (r2 % 250_000));
    const valueDate = formatWithOffset(instant, offset);
    const { bankAccounts } = this.spec;
    const categories = income ? this.incomeCategories : this.expenseCategories;
    return {
      publicId: this.idPrefix + i.toString(16).padStart(12, '0'),
      companyId: this.companyId,
      amount: income ? magnitude : -magnitude,
      currency: this.spec.currency,
      cashflowType: income ? 'INCOME' : 'EXPENSE',
      valueDate,
      instant,
      localDate: valueDate.slice(0, 10),
      description: DESCRIPTIONS[(r >>> 8) % DESCRIPTIONS.length]!,
      category: categories.length === 0 || (r >>> 24) % 8 === 0 ? null : categories[(r >>> 16) % categories.length]!,
      bankAccount: bankAccounts[(r2 >>> 20) % bankAccounts.length]!,
      variant: r2,
    };
  }

  /** The part of this dataset that a date filter selects, as a source. */
  source(filter: DateFilter): TransactionSource {
    const { lo, hi } = this.range(filter);
    return {
      size: hi - lo,
      keyAt: (i) => this.keyAt(lo + i),
      itemAt: (i) => this.recordAt(lo + i),
    };
  }
}

function lowerBound(source: TransactionSource, key: SortKey): number {
  let lo = 0;
  let hi = source.size;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(source.keyAt(mid), key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Items `offset` to `offset + limit` of the ordered union of the sources. The start in each source
 * is found by binary search on rank (an item's rank is its index plus the number of smaller items
 * in the other sources), then the sources are merged from there: the cost is logarithmic in their
 * sizes, whatever the offset.
 */
export function selectPage(sources: readonly TransactionSource[], offset: number, limit: number): TransactionRecord[] {
  const live = sources.filter((s) => s.size > 0);
  const out: TransactionRecord[] = [];
  if (live.length === 1) {
    const only = live[0]!;
    for (let i = offset; i < Math.min(only.size, offset + limit); i++) out.push(only.itemAt(i));
    return out;
  }
  const heads = live.map((source, si) => {
    let lo = 0;
    let hi = source.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const key = source.keyAt(mid);
      let rank = mid;
      live.forEach((other, oi) => {
        if (oi !== si) rank += lowerBound(other, key);
      });
      if (rank >= offset) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  });
  const headKeys = live.map((s, si) => (heads[si]! < s.size ? s.keyAt(heads[si]!) : undefined));
  while (out.length < limit) {
    let best = -1;
    headKeys.forEach((key, si) => {
      if (key && (best < 0 || compareKeys(key, headKeys[best]!) < 0)) best = si;
    });
    if (best < 0) break;
    const source = live[best]!;
    const index = heads[best]!;
    out.push(source.itemAt(index));
    heads[best] = index + 1;
    headKeys[best] = index + 1 < source.size ? source.keyAt(index + 1) : undefined;
  }
  return out;
}
