import { formatMinorUnits } from '../../accounting-api';
import { minorUnitDigits } from './currency';
import type { Row, Table } from './dataset-tables';

/** One line of the manifest's totals: exact, as decimal text and as minor units (text, for bigint). */
export interface AmountTotal {
  currency: string;
  cashflowType: string | null;
  records: number;
  amount: string;
  amountMinor: string;
}

/**
 * Exact sums per currency and cashflow type, in bigint minor units (never floats): a dataset's rows
 * (TotalsAccumulator) and a split month's parts (mergeTotals) add into the same thing.
 */
export class AmountSums {
  private readonly sums = new Map<string, Sum>();
  /** The last row's sum: a month's rows are mostly one currency and a few cashflow types. */
  private last: Sum | undefined;

  add(currency: string, cashflowType: string | null, records: number, minor: bigint): void {
    let sum = this.last;
    if (sum === undefined || sum.currency !== currency || sum.cashflowType !== cashflowType) {
      // NUL cannot be in a currency code (the tables check /^[A-Z]{3}$/), so keys cannot collide.
      const key = cashflowType === null ? currency : `${currency}\u0000${cashflowType}`;
      sum = this.sums.get(key);
      if (sum === undefined) {
        sum = { currency, cashflowType, records: 0, minor: 0n, small: 0 };
        this.sums.set(key, sum);
      }
      this.last = sum;
    }
    sum.records += records;
    // Amounts below 2^52 add up in a number while it stays below 2^52 (so every partial sum is an
    // exact integer): a bigint addition allocates a new bigint for every row.
    const n = Number(minor);
    if (n > -SMALL && n < SMALL && sum.small + n > -SMALL && sum.small + n < SMALL) {
      sum.small += n;
    } else {
      sum.minor += minor + BigInt(sum.small);
      sum.small = 0;
    }
  }

  /** Sorted by currency, then cashflow type (null first), so the manifest is deterministic. */
  result(): AmountTotal[] {
    for (const sum of this.sums.values()) {
      sum.minor += BigInt(sum.small);
      sum.small = 0;
    }
    return [...this.sums.values()]
      .sort((a, b) => compare(a.currency, b.currency) || compare(a.cashflowType ?? '', b.cashflowType ?? ''))
      .map((s) => ({
        currency: s.currency,
        cashflowType: s.cashflowType,
        records: s.records,
        amount: formatMinorUnits(s.minor, minorUnitDigits(s.currency)),
        amountMinor: s.minor.toString(),
      }));
  }
}

interface Sum {
  currency: string;
  cashflowType: string | null;
  records: number;
  /** The exact sum is `minor + small`. */
  minor: bigint;
  small: number;
}

const SMALL = 2 ** 52;

/** Sums a dataset's amounts per currency and cashflow type. */
export class TotalsAccumulator {
  private readonly sums = new AmountSums();

  constructor(private readonly columns: NonNullable<Table<unknown>['totals']>) {}

  add(row: Row): void {
    const minor = row[this.columns.amount];
    if (typeof minor !== 'bigint') return;
    const currency = row[this.columns.currency];
    // An amount in an unknown currency has no sum to join (the table counts it: withoutCurrency).
    if (typeof currency !== 'string') return;
    const cashflowType = this.columns.cashflowType ? ((row[this.columns.cashflowType] as string | null) ?? null) : null;
    this.sums.add(currency, cashflowType, 1, minor);
  }

  result(): AmountTotal[] {
    return this.sums.result();
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
