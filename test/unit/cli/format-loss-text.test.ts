import { formatLossText } from '../../../cli/operations/export-run';
import { FormatLossError } from '../../../src/core/exports/formats/period-errors';

describe('formatLossText: what a refused re-export would delete, each run once', () => {
  it('groups the datasets of one run that lose the same formats', () => {
    const run = '20261101T020000Z-1a2b3c4d';
    const loss = new FormatLossError(
      ['categories', 'tax_reports', 'transactions'].flatMap((dataset) =>
        ['jsonl', 'parquet'].map((format) => ({ dataset, format, runId: run })),
      ),
    );
    expect(formatLossText(loss)).toBe(
      `the period's current export also has jsonl and parquet of categories, tax_reports and transactions (run ${run}), which this re-export would delete`,
    );
  });

  it('keeps apart what differs: another run, or other formats of the same run', () => {
    const loss = new FormatLossError([
      { dataset: 'transactions', format: 'parquet', runId: 'run-a' },
      { dataset: 'categories', format: 'parquet', runId: 'run-b' },
      { dataset: 'tax_reports', format: 'jsonl', runId: 'run-b' },
      { dataset: 'tax_reports', format: 'parquet', runId: 'run-b' },
    ]);
    expect(formatLossText(loss)).toBe(
      "the period's current export also has parquet of transactions (run run-a); parquet of categories (run run-b); " +
        'jsonl and parquet of tax_reports (run run-b), which this re-export would delete',
    );
  });
});
