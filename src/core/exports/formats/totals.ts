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
  private readonly sums = new Map<string, { currency: string; cashflowType: string | null; records: number; minor: bigint }>();

  add(currency: string, cashflowType: string | null, records: number, minor: bigint): void {
    // NUL cannot be in a currency code (the tables check /^[A-Z]{3}$/), so keys cannot collide.
    const key = cashflowType === null ? currency : `${currency}\u0000${cashflowType}`;
    const sum = this.sums.get(key);
    if (sum) {
      sum.minor += minor;
      sum.records += records;
    } else {
      this.sums.set(key, { currency, cashflowType, records, minor });
    }
  }

  /** Sorted by currency, then cashflow type (null first), so the manifest is deterministic. */
  result(): AmountTotal[] {
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
