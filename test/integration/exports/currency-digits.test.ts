import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { PeriodExportSummary } from '../../../src/core/exports/formats/period-exporter';
import { ManualClock } from '../../../src/core/shared/clock';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { runDirectExport } from '../../helpers/run-direct-export';
import { DuckDb } from '../../helpers/duckdb';

/**
 * A HUF company end to end: the sandbox over HTTP, the direct export into a directory, the files
 * read by DuckDB. ISO 4217 gives HUF two fraction digits and the service counts in ISO's minor
 * units, but ICU 78 (Node 20.20) says 0: before the correction in
 * src/core/exports/formats/currency.ts, 123456 minor units (1234.56 HUF) were written as 123456 HUF
 * in the CSV, the Parquet DECIMAL and the manifest, beside a raw JSONL that said "1234.56".
 */
describe.each(TEST_DIALECTS)('%s dialect: a HUF company’s export', (dialect) => {
  let sandbox: RunningSandbox;
  let root: string;
  let summary: PeriodExportSummary;
  let duck: DuckDb;

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, demo: false, clock: new ManualClock(Date.UTC(2026, 10, 5, 8, 0)) });
    const company = (await sandbox.admin.createCompany({ currency: 'HUF', country: 'HU' })).publicId;
    const key = (await sandbox.admin.createApiKey({ companyId: company, permissions: ['full_access'] })).key;
    await sandbox.admin.addTransactions({
      companyId: company,
      transactions: [
        { valueDate: '2026-10-05T10:00:00+02:00', amount: 123456 },
        { valueDate: '2026-10-06T10:00:00+02:00', amount: -5 },
      ],
    });
    await sandbox.admin.addTaxReport({ companyId: company, periodStart: '2026-10-01', periodEnd: '2026-10-31', amountDue: 123456 });
    // The spec's other encoding: the JSONL then carries the service's own "1234.56".
    await sandbox.admin.configure({ amountEncoding: 'string' });
    root = await mkdtemp(join(tmpdir(), 'acctops-huf-'));
    summary = await runDirectExport({
      baseUrl: sandbox.baseUrl,
      apiKey: key,
      month: '2026-10',
      outDir: root,
      toolVersion: '0.1.0',
      // The minimal dialect spells the report's fields its own way.
      taxReportFields:
        dialect === 'minimal' ? { periodEnd: 'endDate', periodStart: 'startDate', amountDue: 'totalAmount', currency: 'currencyCode' } : {},
    });
    duck = await DuckDb.open();
  });

  afterAll(async () => {
    duck?.close();
    await sandbox?.stop();
    if (root) await rm(root, { recursive: true, force: true });
    forgetRegisteredSecrets();
  });

  const file = (dataset: string, format: string) =>
    join(root, summary.manifest.objects.find((o) => o.dataset === dataset && o.format === format)!.key);

  const rows = (sql: string) => duck.rows(sql);

  it('writes 1234.56 HUF in the CSV and 1234.5600 in the Parquet DECIMAL(18,4), as the raw JSONL says', async () => {
    const jsonl = gunzipSync(await readFile(file('transactions', 'jsonl')))
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { amount: unknown; currency?: string });
    expect(jsonl.map((t) => [t.amount, t.currency])).toEqual([
      ['1234.56', 'HUF'],
      ['-0.05', 'HUF'],
    ]);
    const csv = await rows(
      `SELECT amount, amount_minor, currency FROM read_csv('${file('transactions', 'csv')}', header = true, all_varchar = true) ORDER BY value_date`,
    );
    expect(csv).toEqual([
      { amount: '1234.56', amount_minor: '123456', currency: 'HUF' },
      { amount: '-0.05', amount_minor: '-5', currency: 'HUF' },
    ]);
    const parquet = await rows(
      `SELECT amount::VARCHAR AS amount, typeof(amount) AS type, amount_minor::VARCHAR AS amount_minor FROM read_parquet('${file('transactions', 'parquet')}') ORDER BY value_date_utc`,
    );
    expect(parquet).toEqual([
      { amount: '1234.5600', type: 'DECIMAL(18,4)', amount_minor: '123456' },
      { amount: '-0.0500', type: 'DECIMAL(18,4)', amount_minor: '-5' },
    ]);
    const report = await rows(`SELECT amount_due::VARCHAR AS amount_due, currency FROM read_parquet('${file('tax_reports', 'parquet')}')`);
    expect(report).toEqual([{ amount_due: '1234.5600', currency: 'HUF' }]);
  });

  it('states the same totals in the manifest, with two fraction digits, and DuckDB’s sums of the files agree', async () => {
    const manifest = JSON.parse(await readFile(join(root, summary.manifestKey), 'utf8')) as typeof summary.manifest;
    expect(manifest.datasets.transactions!.totals).toEqual([
      { currency: 'HUF', cashflowType: 'EXPENSE', records: 1, amount: '-0.05', amountMinor: '-5' },
      { currency: 'HUF', cashflowType: 'INCOME', records: 1, amount: '1234.56', amountMinor: '123456' },
    ]);
    expect(manifest.datasets.tax_reports!.totals).toEqual([
      { currency: 'HUF', cashflowType: null, records: 1, amount: '1234.56', amountMinor: '123456' },
    ]);
    const sums = await rows(
      `SELECT cashflow_type, sum(amount)::VARCHAR AS parquet, (SELECT sum(c.amount::DECIMAL(18,4))::VARCHAR FROM read_csv('${file('transactions', 'csv')}', header = true, all_varchar = true) c WHERE c.cashflow_type = p.cashflow_type) AS csv FROM read_parquet('${file('transactions', 'parquet')}') p GROUP BY cashflow_type ORDER BY cashflow_type`,
    );
    expect(sums).toEqual([
      { cashflow_type: 'EXPENSE', parquet: '-0.0500', csv: '-0.0500' },
      { cashflow_type: 'INCOME', parquet: '1234.5600', csv: '1234.5600' },
    ]);
  });
});
