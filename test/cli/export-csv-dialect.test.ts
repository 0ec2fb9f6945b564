import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXPORT_COLUMNS } from '../../contract/exports';
import { parseJson, useCliState, type CliResult } from '../helpers/cli';
import { formulaCells, parseSpreadsheetCsv } from '../helpers/spreadsheet-csv';

/** `acctops export --csv-dialect` through the real binary (decision 95; docs/exports.md, "CSV dialects"). */
describe('acctops export --csv-dialect', () => {
  const state = useCliState();
  const { acctops } = state;
  const oneLine = (r: CliResult) => r.stderr.trim();

  it('excel-de to a directory: the report and the manifest name the dialect, the CSV is ";" with decimal commas', async () => {
    const out = join(state.dir, 'for-the-accountant');
    const result = await acctops('--json', 'export', '--csv-dialect', 'EXCEL-DE', '--out', out);
    expect(result.code).toBe(0);
    const report = parseJson<{ csvDialect: string; companies: { status: string; manifestUrl: string }[] }>(result);
    expect(report.csvDialect).toBe('excel-de');
    expect(report.companies.length).toBeGreaterThan(0);
    for (const company of report.companies) {
      expect(company.status).toBe('completed');
      const manifest = JSON.parse(await readFile(fileURLToPath(company.manifestUrl), 'utf8')) as {
        objects: { key: string; format: string; csvDialect?: string }[];
        datasets: { transactions: { totals: { currency: string; amountMinor: string }[] } };
      };
      const csv = manifest.objects.filter((o) => o.format === 'csv');
      expect(csv.map((o) => o.csvDialect)).toEqual(['excel-de', 'excel-de', 'excel-de']);
      const transactions = csv.find((o) => o.key.includes('/transactions/'))!;
      const text = await readFile(join(out, transactions.key), 'utf8');
      const rows = parseSpreadsheetCsv(text.replace(/^\uFEFF/, ''), ';');
      expect(rows[0]).toEqual(EXPORT_COLUMNS.transactions.map((c) => c.name));
      expect(formulaCells(rows)).toEqual([]);
      const at = (name: string) => rows[0]!.indexOf(name);
      // The demo's descriptions hold no line break: one row per transaction, each amount in the decimal-comma form.
      const data = rows.slice(1).filter((r) => r.length === rows[0]!.length);
      expect(data.length).toBeGreaterThan(0);
      for (const row of data) {
        expect(row[at('amount')]).toMatch(/^-?\d+(,\d+)?$/);
        // The same digits as the exact integer: `-0,05` is -5 minor units.
        expect(row[at('amount')]!.replace(',', '').replace(/^(-?)0+(?=\d)/, '$1')).toBe(row[at('amount_minor')]);
        expect(row[at('value_date_utc')]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(,\d{3})?$/);
      }
      // Minor units summed from the file equal the manifest's totals, per currency.
      const sums = new Map<string, bigint>();
      for (const row of data) sums.set(row[at('currency')]!, (sums.get(row[at('currency')]!) ?? 0n) + BigInt(row[at('amount_minor')]!));
      const totals = new Map<string, bigint>();
      for (const t of manifest.datasets.transactions.totals) totals.set(t.currency, (totals.get(t.currency) ?? 0n) + BigInt(t.amountMinor));
      expect(sums).toEqual(totals);
    }
    // For people, the header line names the dialect.
    const human = await acctops('export', '--csv-dialect', 'excel-de', '--format', 'csv', '--out', join(state.dir, 'csv-only'));
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^Export of \d{4}-\d{2} \(local mode, csv \(excel-de\)\) to \//);
  });

  it('refuses a dialect it does not know, excel-de without csv, and excel-de to S3 or in AWS mode: exit 2 before anything runs', async () => {
    const unknown = await acctops('export', '--csv-dialect', 'excel-fr');
    expect(unknown.code).toBe(2);
    expect(oneLine(unknown)).toMatch(
      /^acctops: error: option '--csv-dialect <standard\|excel-de>' is invalid: expected standard or excel-de/,
    );

    const noCsv = await acctops('export', '--csv-dialect', 'excel-de', '--format', 'parquet,jsonl', '--out', join(state.dir, 'none'));
    expect(noCsv.code).toBe(2);
    expect(oneLine(noCsv)).toMatch(/--csv-dialect excel-de spells the CSV, but --format parquet,jsonl writes none/);
    expect(existsSync(join(state.dir, 'none'))).toBe(false);

    const bucket = await acctops('export', '--csv-dialect', 'excel-de', '--out', 's3://acctops-test-bucket/exports-de');
    expect(bucket.code).toBe(2);
    expect(oneLine(bucket)).toMatch(/--csv-dialect excel-de is written only to a local directory/);
    const direct = await state.run(
      ['export', '--base-url', 'http://127.0.0.1:9/api/v1', '--csv-dialect', 'excel-de', '--out', 's3://acctops-test-bucket/x'],
      { env: { ACCTOPS_API_KEY: 'not-a-real-key' } },
    );
    expect(direct.code).toBe(2);
    expect(oneLine(direct)).toMatch(/--csv-dialect excel-de is written only to a local directory/);

    const aws = await state.run(['--stack', 'acctops-test', 'export', '--month', '2026-10', '--csv-dialect', 'excel-de'], {
      env: {
        AWS_REGION: 'eu-central-1',
        AWS_ACCESS_KEY_ID: 'AKIAFAKE0000',
        AWS_SECRET_ACCESS_KEY: 'fake',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        AWS_MAX_ATTEMPTS: '1',
      },
    });
    expect(aws.code).toBe(2);
    expect(oneLine(aws)).toMatch(/--csv-dialect excel-de is for exports to a local directory \(local and direct modes\)/);
    // `standard` is what every mode writes anyway: no refusal for it.
    const standard = await acctops('--json', 'export', '--csv-dialect', 'standard', '--format', 'csv', '--out', join(state.dir, 'std'));
    expect(standard.code).toBe(0);
    expect(parseJson<{ csvDialect: string }>(standard).csvDialect).toBe('standard');
    expect((await readdir(join(state.dir, 'std', 'exports'))).length).toBeGreaterThan(0);
  });
});
