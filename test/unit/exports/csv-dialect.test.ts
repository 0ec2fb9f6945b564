import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { TimestampFormatter } from '../../../src/core/exports/formats/csv-writer';
import { EXPORT_COLUMNS } from '../../../contract/exports';
import { manifestKey, periodPrefix } from '../../../src/core/exports/formats/layout';
import { readManifest, type Manifest } from '../../../src/core/exports/formats/manifest';
import type { ObjectStore } from '../../../src/core/exports/formats/object-store';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { PeriodExporter, type PeriodExportRequest } from '../../../src/core/exports/formats/period-exporter';
import { PeriodExportError } from '../../../src/core/exports/formats/period-errors';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { asAsync, CATEGORIES, COMPANY, listKeys, taxReport, transaction } from '../../helpers/export-fixtures';
import { DuckDb } from '../../helpers/duckdb';
import { formulaCells, parseSpreadsheetCsv } from '../../helpers/spreadsheet-csv';

const PERIOD = parsePeriod('2026-10');
const MANIFEST = manifestKey(COMPANY, PERIOD);
const CSV_OF = (run: string, dataset = 'transactions') => `${periodPrefix(COMPANY, PERIOD)}${dataset}/run=${run}/part-00000.csv`;

/**
 * The accountant's review's cases (review-accountant, findings 3 and 4): EUR with two fraction
 * digits, JPY with none, KWD with three (which a German reader takes for a thousands group when
 * written `-1.003`), an amount beyond 2^53 minor units, instants with and without milliseconds, and
 * descriptions that would run as formulas.
 */
const TRANSACTIONS = [
  transaction(0, { amount: -1003, currency: 'EUR', valueDate: '2026-10-01T00:30:00+02:00' }),
  transaction(1, { amount: -1008, currency: 'JPY', valueDate: '2026-10-02T09:00:00.250+09:00' }),
  transaction(2, { amount: -1003, currency: 'KWD', valueDate: '2026-10-03T12:00:00+03:00' }),
  transaction(3, { amount: 999, currency: 'KWD', valueDate: '2026-10-03T13:00:00+03:00' }),
  transaction(4, { amount: '90071992547409.93', currency: 'EUR', valueDate: '2026-10-31T23:59:59.999-02:00' }),
  transaction(5, { amount: 125000, currency: 'JPY', description: 'Rent;=HYPERLINK("http://evil","x")' }),
  transaction(6, { amount: '-49.99', currency: 'EUR', description: 'net, -12 ; @x\r\n=1+1' }),
  transaction(7, { amount: 0, currency: 'EUR', description: 'Plain; and, calm' }),
];

/** What each transaction's cells must read in the excel-de file, worked out by hand. */
const EXPECTED = [
  { amount: '-10,03', minor: '-1003', currency: 'EUR', utc: '2026-09-30 22:30:00' },
  { amount: '-1008', minor: '-1008', currency: 'JPY', utc: '2026-10-02 00:00:00,250' },
  { amount: '-1,003', minor: '-1003', currency: 'KWD', utc: '2026-10-03 09:00:00' },
  { amount: '0,999', minor: '999', currency: 'KWD', utc: '2026-10-03 10:00:00' },
  { amount: '90071992547409,93', minor: '9007199254740993', currency: 'EUR', utc: '2026-11-01 01:59:59,999' },
];

function request(overrides: Partial<PeriodExportRequest> = {}): PeriodExportRequest {
  return {
    company: COMPANY,
    period: '2026-10',
    sources: {
      categories: asAsync(CATEGORIES),
      taxReports: asAsync([taxReport(0, '-10.05'), taxReport(1, 123456)]),
      transactions: asAsync(TRANSACTIONS),
    },
    formats: ['jsonl', 'csv', 'parquet'],
    csvDialect: 'excel-de',
    sourceBaseUrl: 'https://api.example.test/api/v1',
    ...overrides,
  };
}

/** An exact decimal (`-10.03`) as DuckDB prints a DECIMAL(18,4) (`-10.0300`). */
function atScale4(amount: string): string {
  const [whole, fraction = ''] = amount.split('.');
  return `${whole}.${fraction.padEnd(4, '0')}`;
}

describe('CSV dialect excel-de (decision 95)', () => {
  let root: string;
  let dir: DirObjectStore;
  const exporter = (runId: string, store: ObjectStore = dir) =>
    new PeriodExporter({
      store,
      clock: new ManualClock(Date.UTC(2026, 10, 1, 2, 0)),
      logger: new MemoryLogger(),
      toolVersion: '0.1.0',
      runIds: () => runId,
    });
  const text = async (key: string) => Buffer.from((await dir.get(key))!).toString('utf8');

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-excel-de-'));
    dir = new DirObjectStore(root);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('writes ";", decimal commas, date-times without T and Z, BOM and CRLF; a ";" reader gets exact cells and no formula', async () => {
    await exporter('run-1').run(request());
    const file = await text(CSV_OF('run-1'));
    expect(file.startsWith('\uFEFF')).toBe(true);
    const names = EXPORT_COLUMNS.transactions.map((c) => c.name);
    expect(file.slice(1, file.indexOf('\r\n') + 2)).toBe(`${names.join(';')}\r\n`);
    expect(file.endsWith('\r\n')).toBe(true);

    const rows = parseSpreadsheetCsv(file.slice(1), ';');
    const at = (name: string) => names.indexOf(name);
    expect(rows[0]).toEqual(names);
    // Rows of the first five transactions, whose descriptions hold no separator or line break.
    const plain = rows.slice(1, 6).map((r) => ({
      amount: r[at('amount')],
      minor: r[at('amount_minor')],
      currency: r[at('currency')],
      utc: r[at('value_date_utc')],
    }));
    expect(plain).toEqual(EXPECTED);
    expect(rows[1]![at('value_date_local')]).toBe('2026-10-01');
    // The text keeps the service's spelling; `,` inside a cell needs no quotes for this reader, `;` does.
    expect(rows[1]![at('value_date')]).toBe('2026-10-01T00:30:00+02:00');
    expect(file).toContain(`"Plain; and, calm"`);
    expect(formulaCells(rows)).toEqual([]);
    expect(file).toContain(`"Rent;'=HYPERLINK(""http://evil"",""x"")"`);

    const taxReports = parseSpreadsheetCsv((await text(CSV_OF('run-1', 'tax_reports'))).slice(1), ';');
    const taxAt = (name: string) => taxReports[0]!.indexOf(name);
    expect(taxReports.slice(1).map((r) => [r[taxAt('amount_due')], r[taxAt('amount_due_minor')], r[taxAt('created_at_utc')]])).toEqual([
      ['-10,05', '-1005', '2026-11-02 09:00:00,123'],
      ['1234,56', '123456', '2026-11-02 09:00:00,123'],
    ]);
  });

  it('DuckDB reading it with delim ";" and decimal_separator "," gets every amount exactly, and sums equal to the manifest', async () => {
    await exporter('run-1').run(request());
    const manifest = (await readManifest(dir, MANIFEST))!;
    const db = await DuckDb.open();
    try {
      const source = `read_csv('${join(root, CSV_OF('run-1'))}', delim = ';', quote = '"', escape = '"', header = true, decimal_separator = ',', types = {'amount': 'DECIMAL(18,4)', 'amount_minor': 'HUGEINT'})`;
      const rows = await db.rows(`SELECT public_id, amount, amount_minor FROM ${source} ORDER BY public_id`);
      expect(rows).toHaveLength(TRANSACTIONS.length);
      expect(rows.slice(0, 5).map((r) => [r.amount, r.amount_minor])).toEqual(
        EXPECTED.map((e) => [atScale4(e.amount.replace(',', '.')), e.minor]),
      );
      const sums = await db.rows(
        `SELECT currency, cashflow_type, count(*)::INTEGER AS n, sum(amount) AS amount, sum(amount_minor) AS minor FROM ${source} GROUP BY ALL ORDER BY ALL`,
      );
      const totals = manifest.datasets.transactions!.totals;
      expect(new Set(totals.map((t) => t.currency))).toEqual(new Set(['EUR', 'JPY', 'KWD']));
      expect(sums).toEqual(
        [...totals]
          .sort((a, b) => `${a.currency}${a.cashflowType}`.localeCompare(`${b.currency}${b.cashflowType}`))
          .map((t) => ({
            currency: t.currency,
            cashflow_type: t.cashflowType,
            n: t.records,
            amount: atScale4(t.amount),
            minor: t.amountMinor,
          })),
      );
    } finally {
      db.close();
    }
  });

  it('says the dialect of each CSV in the manifest, and a re-export in another dialect replaces the CSV', async () => {
    await exporter('run-1').run(request());
    const dialects = (m: Manifest) => m.objects.map((o) => [o.dataset, o.format, o.csvDialect]);
    const first = (await readManifest(dir, MANIFEST))!;
    expect(dialects(first).filter(([, format]) => format === 'csv')).toEqual([
      ['categories', 'csv', 'excel-de'],
      ['tax_reports', 'csv', 'excel-de'],
      ['transactions', 'csv', 'excel-de'],
    ]);
    // Only a CSV has a dialect.
    expect(first.objects.filter((o) => o.format !== 'csv' && o.csvDialect !== undefined)).toEqual([]);

    // No --replace-formats needed: the same formats, the CSV spelt the other way.
    await exporter('run-2').run(request({ csvDialect: 'standard' }));
    const second = (await readManifest(dir, MANIFEST))!;
    expect(second.objects.filter((o) => o.format === 'csv').map((o) => [o.key, o.csvDialect])).toEqual([
      [CSV_OF('run-2', 'categories'), 'standard'],
      [CSV_OF('run-2', 'tax_reports'), 'standard'],
      [CSV_OF('run-2', 'transactions'), 'standard'],
    ]);
    const keys = await listKeys(dir);
    expect(keys).not.toContain(CSV_OF('run-1'));
    expect((await text(CSV_OF('run-2'))).split('\r\n')[1]).toContain(',-10.03,-1003,EUR,');
  });

  it('writes the standard CSV byte for byte the same whether the dialect is left out or named', async () => {
    await exporter('run-1').run(request({ csvDialect: undefined, formats: ['csv'] }));
    const omitted = await text(CSV_OF('run-1'));
    await exporter('run-2').run(request({ csvDialect: 'standard', formats: ['csv'] }));
    expect(await text(CSV_OF('run-2'))).toBe(omitted);
    expect(omitted.split('\r\n')[1]).toContain(',2026-09-30T22:30:00.000Z,120,-10.03,-1003,EUR,');
  });

  it('refuses excel-de for an s3:// store before anything is read or written', async () => {
    const s3Like: ObjectStore = {
      putStream: (k, b, o) => dir.putStream(k, b, o),
      putObject: (k, b, o) => dir.putObject(k, b, o),
      get: (k) => dir.get(k),
      head: (k) => dir.head(k),
      list: (p) => dir.list(p),
      delete: (k) => dir.delete(k),
      url: (k) => `s3://bucket/${k}`,
    };
    const unread = {
      [Symbol.asyncIterator](): AsyncIterator<(typeof TRANSACTIONS)[number]> {
        throw new Error('read although the request is refused');
      },
    };
    const failure = await exporter('run-1', s3Like)
      .run(request({ sources: { ...request().sources, transactions: unread } }))
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ValidationError);
    expect((failure as ValidationError).issues).toEqual([
      { path: 'csvDialect', message: expect.stringMatching(/^excel-de is written only to a local directory, never to S3/) as string },
    ]);
    expect(failure).not.toBeInstanceOf(PeriodExportError);
    expect(await listKeys(dir)).toEqual([]);
    // The standard dialect goes there as ever.
    await exporter('run-2', s3Like).run(request({ csvDialect: 'standard', formats: ['csv'] }));
    expect((await listKeys(dir)).filter((k) => k.endsWith('.csv'))).toHaveLength(3);
  });
});

describe('TimestampFormatter, spreadsheet style', () => {
  /** The ISO text rewritten by hand: what a German Excel or LibreOffice reads as a date-time. */
  const expected = (ms: number) => {
    const iso = new Date(ms).toISOString();
    const millis = iso.slice(20, 23);
    return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${millis === '000' ? '' : `,${millis}`}`;
  };

  it('writes each instant in UTC as YYYY-MM-DD HH:MM:SS, with ",mmm" only when it has milliseconds, across days and out of order', () => {
    const formatter = new TimestampFormatter('spreadsheet');
    const day = Date.UTC(2026, 9, 31);
    const instants = [
      day,
      day + 1,
      day + 86_399_999,
      day + 86_400_000,
      day - 1,
      day + 12 * 3_600_000 + 34 * 60_000 + 56_000,
      Date.UTC(2024, 1, 29, 23, 59, 59, 500),
      Date.UTC(1970, 0, 1),
      Date.UTC(1899, 11, 31, 6),
    ];
    expect(instants.map((ms) => formatter.format(ms))).toEqual(instants.map(expected));
    expect(formatter.format(day + 45_296_000)).toBe('2026-10-31 12:34:56');
  });

  it('leaves the ISO style as it was', () => {
    const ms = Date.UTC(2026, 8, 30, 22, 30, 0, 5);
    expect(new TimestampFormatter().format(ms)).toBe(new Date(ms).toISOString());
    expect(new TimestampFormatter('iso').format(ms)).toBe('2026-09-30T22:30:00.005Z');
  });
});
