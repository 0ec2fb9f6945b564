import {
  cellReader,
  categoriesTable,
  taxReportsTable,
  transactionsTable,
  type Cell,
  type Row,
  type RowContext,
} from '../../../src/core/exports/formats/dataset-tables';
import type { ExportTransaction, TransactionFields } from '../../../src/core/exports/formats/datasets';
import { ValidationError } from '../../../src/core/shared/errors';

const context = (index = 0, parquet = true): RowContext => ({ index, defaultCurrency: 'EUR', parquet, categoryName: () => null });

function transaction(fields: Partial<TransactionFields>): ExportTransaction {
  const parsed: TransactionFields = {
    publicId: 'f3c7a1de-5b0e-4c53-9d2a-0c8e5f1b2a77',
    amount: 4999n,
    currency: 'EUR',
    cashflowType: 'EXPENSE',
    valueDate: '2026-10-31T23:30:00.5-02:00',
    description: null,
    category: null,
    bankAccount: null,
    ...fields,
  };
  return { raw: parsed, parsed };
}

function rowError(item: ExportTransaction, index = 0): ValidationError {
  try {
    transactionsTable.row(item, context(index, true));
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('row() accepted the record');
}

describe('dataset tables: rows', () => {
  it('takes the date, instant and offset of a timestamp from one parse', () => {
    const row = transactionsTable.row(transaction({}), context());
    expect(row).toMatchObject({
      value_date_local: '2026-10-31',
      value_date: '2026-10-31T23:30:00.5-02:00',
      value_date_utc: Date.UTC(2026, 10, 1, 1, 30, 0, 500),
      value_date_offset_minutes: -120n,
    });
    expect(transactionsTable.row(transaction({ valueDate: '2026-10-01T00:00:00Z' }), context()).value_date_offset_minutes).toBe(0n);
  });

  it('bounds minor units by what DECIMAL(18,4) holds in each currency, exactly at the edge', () => {
    // EUR: 2 fraction digits, scaled by 100: |minor| < 10^16.
    expect(transactionsTable.row(transaction({ amount: 10n ** 16n - 1n }), context()).amount_minor).toBe(10n ** 16n - 1n);
    expect(transactionsTable.row(transaction({ amount: -(10n ** 16n) + 1n }), context()).amount_minor).toBe(-(10n ** 16n) + 1n);
    expect(rowError(transaction({ amount: 10n ** 16n })).message).toMatch(/amount: beyond DECIMAL\(18,4\)/);
    expect(rowError(transaction({ amount: -(10n ** 16n) })).message).toMatch(/amount: beyond DECIMAL\(18,4\)/);
    // JPY: no fraction digits, scaled by 10^4: |minor| < 10^14.
    expect(transactionsTable.row(transaction({ amount: 10n ** 14n - 1n, currency: 'JPY' }), context()).amount_minor).toBe(10n ** 14n - 1n);
    expect(rowError(transaction({ amount: 10n ** 14n, currency: 'JPY' })).field).toBe('amount');
  });

  it("says the bound is Parquet's and how to export without it; a row for CSV and JSONL only has no bound", () => {
    const error = rowError(transaction({ amount: 10n ** 14n + 1n, currency: 'JPY' }));
    expect(error.field).toBe('amount');
    expect(error.message).toMatch(/amount: beyond DECIMAL\(18,4\), .*Parquet.*--format csv,jsonl/);
    const row = (amount: bigint, currency = 'JPY') => transactionsTable.row(transaction({ amount, currency }), context(0, false));
    expect(row(10n ** 14n + 1n).amount_minor).toBe(10n ** 14n + 1n);
    expect(row(-(10n ** 30n), 'EUR').amount).toBe(-(10n ** 30n));
    const report = {
      raw: {},
      parsed: {
        pk: 'r1',
        type: null,
        periodStart: null,
        periodEnd: null,
        status: null,
        amountDue: 10n ** 20n,
        currency: null,
        createdAt: null,
      },
    };
    expect(taxReportsTable.row(report, context(0, false)).amount_due_minor).toBe(10n ** 20n);
    expect(() => taxReportsTable.row(report, context(0, true))).toThrow(/amountDue: beyond DECIMAL\(18,4\), .*Parquet/);
  });

  it('names the failing record, not the one checked before it', () => {
    transactionsTable.row(transaction({ publicId: 'first-record' }), context(0));
    const error = rowError(transaction({ publicId: 'second-record', valueDate: '2026-10-31' }), 1);
    expect(error.source).toBe('transaction second-record');
    expect(error.field).toBe('valueDate');
    const unnamed = rowError(transaction({ publicId: '', currency: 'EURO' }), 7);
    expect(unnamed.source).toBe('transaction at position 7');
  });

  it('keeps a tax report offset exact and null without a creation time', () => {
    const report = (createdAt: string | null) => ({
      raw: {},
      parsed: { pk: 'r1', type: null, periodStart: null, periodEnd: null, status: null, amountDue: null, currency: null, createdAt },
    });
    expect(taxReportsTable.row(report('2026-10-05T12:34:00+05:45'), context()).created_at_offset_minutes).toBe(345n);
    expect(taxReportsTable.row(report(null), context()).created_at_offset_minutes).toBeNull();
  });
});

describe('dataset tables: cell readers', () => {
  it("a table's own reader gives exactly the values by column name, in column order, absent ones null", () => {
    const rows: Row[] = [
      transactionsTable.row(transaction({}), context()),
      transactionsTable.row(
        transaction({ currency: null, description: 'Rent', category: 'c0c0c0c0-0000-4000-8000-000000000001' }),
        context(),
      ),
      // Absent and extra keys: a reader that trusted the object's key order would shift them.
      { amount: 1n, public_id: 'x', extra: 'not a column' },
      {},
    ];
    const tables = [transactionsTable, taxReportsTable, categoriesTable].filter((table) => table.cells !== undefined);
    expect(tables.map((table) => table.dataset)).toContain('transactions');
    for (const table of tables) {
      for (const row of rows) {
        const own: Cell[] = [];
        const byName: Cell[] = [];
        table.cells!(row, own);
        cellReader(table.columns)(row, byName);
        expect(own).toEqual(byName);
        expect(byName).toEqual(table.columns.map((column) => (column.name in row ? row[column.name] : null)));
      }
    }
  });
});
