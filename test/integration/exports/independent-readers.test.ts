import { tableFromIPC, type Table as ArrowTable } from 'apache-arrow';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readParquet } from 'parquet-wasm/node';
import { GLUE_COLUMNS } from '../../../contract/exports';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { categorySchema } from '../../../src/core/accounting-api';
import { parseMinorUnits } from '../../../src/core/accounting-api/money';
import type { Manifest } from '../../../src/core/exports/formats/manifest';
import { PeriodExporter } from '../../../src/core/exports/formats/period-exporter';
import { DATASETS, type DatasetName, type ExportTaxReport } from '../../../src/core/exports/formats/datasets';
import { ManualClock } from '../../../src/core/shared/clock';
import { silentLogger } from '../../../src/core/shared/logger';
import { CATEGORIES, COMPANY, transaction } from '../../helpers/export-fixtures';
import { DuckDb } from '../../helpers/duckdb';

/**
 * The exports as two engines outside our code read them: DuckDB (its own C++ Parquet, CSV and JSON
 * readers) and arrow-rs (compiled to WebAssembly as parquet-wasm). Our other tests read Parquet
 * with hyparquet, from the writer's own family, which agreed with the writer's footer bug.
 *
 * Two periods of one company are exported in every format; every dataset and format is then read
 * across the Hive layout (`company=…/period=…/`), and the counts, exact amount sums and schemas
 * must equal the manifests and the Glue tables.
 */

const NOW = Date.parse('2026-11-02T08:00:00Z');
/** A second company with a month of nothing: every dataset of its export has no rows. */
const EMPTY_COMPANY = '0e0e0e0e-0000-4000-8000-000000000000';
const EMPTY_PERIOD = '2020-01';

/** Amounts in both API encodings, three currencies with 2, 0 and 3 fraction digits, hostile descriptions. */
function monthTransactions(month: '09' | '10', count: number) {
  const currencies = ['EUR', 'EUR', 'JPY', 'KWD'];
  return Array.from({ length: count }, (_, i) => {
    const currency = currencies[i % currencies.length]!;
    const amount =
      currency === 'EUR' && i % 3 === 0
        ? `${i % 2 === 0 ? '-' : ''}${10 + i}.${String(i % 100).padStart(2, '0')}`
        : (i % 2 === 0 ? -1 : 1) * (1000 + i * 37);
    return transaction(i + (month === '09' ? 1000 : 0), {
      publicId: `7e57da7a-0000-4000-8${month}0-${String(i).padStart(12, '0')}`,
      amount,
      currency,
      valueDate: `2026-${month}-${String((i % 28) + 1).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:15:00+02:00`,
      description: i % 5 === 0 ? `Rent;=HYPERLINK("http://evil",${i})` : i % 7 === 0 ? '=1+1' : `Payment ${i}, net`,
    });
  });
}

/**
 * Parsed by hand as the spec-tolerant client will (issue 13): every field but `pk` may be absent
 * (today's client schema still requires the period and the amount).
 */
function report(i: number, fields: Record<string, unknown>): ExportTaxReport {
  const raw: Record<string, unknown> = { pk: `3a3a3a3a-0000-4000-8000-${String(i).padStart(12, '0')}`, ...fields };
  const text = (key: string) => (typeof raw[key] === 'string' ? (raw[key] as string) : null);
  return {
    raw,
    parsed: {
      pk: raw.pk as string,
      type: text('type'),
      periodStart: text('periodStart'),
      periodEnd: text('periodEnd'),
      status: text('status'),
      amountDue: raw.amountDue === undefined ? null : parseMinorUnits(raw.amountDue as string | number),
      currency: text('currency'),
      createdAt: text('createdAt'),
    },
  };
}

const TAX_REPORTS = [
  report(1, {
    type: 'VAT_RETURN',
    periodStart: '2026-10-01',
    periodEnd: '2026-10-31',
    status: 'submitted',
    amountDue: 123456,
    currency: 'EUR',
    createdAt: '2026-11-02T10:00:00.123+01:00',
    filingRef: 'ELSTER-1',
    lines: [1, 2],
  }),
  report(2, {
    type: 'VAT_RETURN',
    periodStart: '2026-07-01',
    periodEnd: '2026-09-30',
    status: 'draft',
    amountDue: '99.95',
    currency: 'EUR',
    createdAt: '2026-10-01T09:00:00+02:00',
  }),
  report(3, { type: 'VAT_RETURN', periodStart: '2026-10-01', periodEnd: '2026-10-31', amountDue: 500, currency: 'JPY' }),
  report(4, {}),
];

/** The type each engine reports for a Glue column type. */
const DUCKDB_TYPE: Record<string, string> = {
  string: 'VARCHAR',
  date: 'DATE',
  timestamp: 'TIMESTAMP WITH TIME ZONE',
  bigint: 'BIGINT',
  'decimal(18,4)': 'DECIMAL(18,4)',
};
const ARROW_TYPE: Record<string, string> = {
  string: 'Utf8',
  date: 'Date32<DAY>',
  timestamp: 'Timestamp<MILLISECOND, UTC>',
  bigint: 'Int64',
  'decimal(18,4)': 'Decimal[18e+4]',
};

const AMOUNT: Record<DatasetName, { minor: string; decimal: string } | undefined> = {
  transactions: { minor: 'amount_minor', decimal: 'amount' },
  tax_reports: { minor: 'amount_due_minor', decimal: 'amount_due' },
  categories: undefined,
};

/** Per currency, as the manifest states them: records, exact decimal text, minor units. */
function manifestTotals(manifest: Manifest, dataset: DatasetName): Record<string, { records: number; amount: string; minor: string }> {
  const out: Record<string, { records: number; amount: string; minor: bigint }> = {};
  for (const t of manifest.datasets[dataset]?.totals ?? []) {
    const sum = (out[t.currency] ??= { records: 0, amount: '', minor: 0n });
    sum.records += t.records;
    sum.minor += BigInt(t.amountMinor);
  }
  // The decimal text of the per-currency sum, with the currency's digits (the manifest's own form).
  const digits: Record<string, number> = { EUR: 2, JPY: 0, KWD: 3 };
  return Object.fromEntries(
    Object.entries(out).map(([currency, s]) => {
      const d = digits[currency]!;
      const abs = (s.minor < 0n ? -s.minor : s.minor).toString().padStart(d + 1, '0');
      const text = d === 0 ? abs : `${abs.slice(0, abs.length - d)}.${abs.slice(abs.length - d)}`;
      return [currency, { records: s.records, amount: `${s.minor < 0n ? '-' : ''}${text}`, minor: s.minor.toString() }];
    }),
  );
}

describe('exports read by independent engines (DuckDB, arrow-rs)', () => {
  let dir: string;
  let duck: DuckDb;
  const manifests: Record<string, Manifest> = {};
  let emptyManifest: Manifest;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-judges-'));
    const store = new DirObjectStore(dir);
    const clock = new ManualClock(NOW);
    const exporter = new PeriodExporter({ store, clock, logger: silentLogger, toolVersion: 'test' });
    for (const month of ['09', '10'] as const) {
      const summary = await exporter.run({
        company: COMPANY,
        period: `2026-${month}`,
        sources: { transactions: monthTransactions(month, month === '10' ? 120 : 40), taxReports: TAX_REPORTS, categories: CATEGORIES },
        formats: ['jsonl', 'csv', 'parquet'],
        sourceBaseUrl: 'http://127.0.0.1:1/api/v1',
      });
      manifests[`2026-${month}`] = summary.manifest;
    }
    const empty = await exporter.run({
      company: EMPTY_COMPANY,
      period: EMPTY_PERIOD,
      sources: { transactions: [], taxReports: [], categories: [] },
      formats: ['jsonl', 'csv', 'parquet'],
      sourceBaseUrl: 'http://127.0.0.1:1/api/v1',
    });
    emptyManifest = empty.manifest;
    duck = await DuckDb.open();
  });

  afterAll(async () => {
    duck?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const glob = (dataset: DatasetName, ext: string) => `'${dir}/exports/company=*/period=*/${dataset}/run=*/part-*.${ext}'`;
  const FROM = {
    parquet: (d: DatasetName) => `read_parquet(${glob(d, 'parquet')}, hive_partitioning = true)`,
    // all_varchar: the CSV's text is checked as text; the sums cast explicitly.
    csv: (d: DatasetName) =>
      `read_csv(${glob(d, 'csv')}, hive_partitioning = true, header = true, delim = ',', quote = '"', escape = '"', all_varchar = true)`,
  };

  const rows = (sql: string) => duck.rows(sql);

  describe.each(DATASETS)('%s', (dataset) => {
    it.each(['parquet', 'csv'] as const)('%s: DuckDB counts and sums every period exactly as its manifest states', async (format) => {
      const amount = AMOUNT[dataset];
      const select = amount
        ? `period, currency, count(*)::VARCHAR AS records, sum(${amount.minor}::HUGEINT)::VARCHAR AS minor, sum(${amount.decimal}::DECIMAL(38,4))::VARCHAR AS amount`
        : 'period, count(*)::VARCHAR AS records';
      const got = await rows(`SELECT ${select} FROM ${FROM[format](dataset)} WHERE company = '${COMPANY}' GROUP BY ALL ORDER BY ALL`);
      for (const [period, manifest] of Object.entries(manifests)) {
        const mine = got.filter((r) => r.period === period);
        expect(mine.reduce((n, r) => n + Number(r.records), 0)).toBe(manifest.datasets[dataset]!.records);
        if (!amount) continue;
        const expected = manifestTotals(manifest, dataset);
        const seen = Object.fromEntries(
          mine
            .filter((r) => r.currency !== null && r.minor !== null)
            .map((r) => [
              r.currency!,
              { records: Number(r.records), amount: r.amount!.replace(/0+$/, '').replace(/\.$/, ''), minor: r.minor! },
            ]),
        );
        const trimmed = Object.fromEntries(
          Object.entries(expected).map(([c, e]) => [
            c,
            { ...e, amount: e.amount.includes('.') ? e.amount.replace(/0+$/, '').replace(/\.$/, '') : e.amount },
          ]),
        );
        expect(seen).toEqual(trimmed);
      }
    });

    it('jsonl: DuckDB reads every record the manifest counts, with the same ids as the Parquet', async () => {
      const id = dataset === 'tax_reports' ? 'pk' : 'publicId';
      const idColumn = dataset === 'tax_reports' ? 'pk' : 'public_id';
      const jsonl = await rows(
        `SELECT period, count(*)::VARCHAR AS records, string_agg(json->>'${id}', ',' ORDER BY json->>'${id}') AS ids FROM read_ndjson_objects(${glob(dataset, 'jsonl.gz')}, compression = 'gzip', hive_partitioning = true) GROUP BY period ORDER BY period`,
      );
      const parquet = await rows(
        `SELECT period, string_agg(${idColumn}, ',' ORDER BY ${idColumn}) AS ids FROM ${FROM.parquet(dataset)} GROUP BY period ORDER BY period`,
      );
      expect(jsonl.map((r) => [r.period, Number(r.records)])).toEqual(
        Object.entries(manifests).map(([p, m]) => [p, m.datasets[dataset]!.records]),
      );
      expect(jsonl.map((r) => r.ids)).toEqual(parquet.map((r) => r.ids));
    });

    it('parquet: DuckDB sees the Glue table columns with the matching types (plus the Hive partitions)', async () => {
      const described = await rows(`DESCRIBE SELECT * FROM ${FROM.parquet(dataset)}`);
      expect(described.map((r) => [r.column_name, r.column_type])).toEqual([
        ...GLUE_COLUMNS[dataset].map(([name, type]) => [name, DUCKDB_TYPE[type]]),
        ['company', 'VARCHAR'],
        ['period', 'VARCHAR'],
        ['run', 'VARCHAR'],
      ]);
    });

    it('parquet: arrow-rs opens every file with the Glue columns and types, and its exact sums equal the manifest', async () => {
      for (const [period, manifest] of Object.entries(manifests)) {
        const objects = manifest.objects.filter((o) => o.dataset === dataset && o.format === 'parquet');
        expect(objects).toHaveLength(1);
        const table: ArrowTable = tableFromIPC(readParquet(await readFile(join(dir, objects[0]!.key))).intoIPCStream());
        expect(table.schema.fields.map((f) => [f.name, String(f.type)])).toEqual(
          GLUE_COLUMNS[dataset].map(([name, type]) => [name, ARROW_TYPE[type]]),
        );
        expect(table.numRows).toBe(manifest.datasets[dataset]!.records);
        const amount = AMOUNT[dataset];
        if (!amount) continue;
        const sums: Record<string, { records: number; minor: bigint; unscaled: bigint }> = {};
        const currency = table.getChild('currency')!;
        const minor = table.getChild(amount.minor)!;
        const decimal = table.getChild(amount.decimal)!;
        for (let i = 0; i < table.numRows; i++) {
          const m = minor.get(i) as bigint | null;
          if (m === null) continue;
          const sum = (sums[currency.get(i) as string] ??= { records: 0, minor: 0n, unscaled: 0n });
          sum.records += 1;
          sum.minor += m;
          sum.unscaled += decimalValue(decimal.get(i));
        }
        const expected = manifestTotals(manifest, dataset);
        const factor: Record<string, bigint> = { EUR: 100n, JPY: 10_000n, KWD: 10n };
        expect(
          Object.fromEntries(
            Object.entries(sums).map(([c, s]) => [c, { records: s.records, minor: s.minor.toString(), unscaled: s.unscaled.toString() }]),
          ),
        ).toEqual(
          Object.fromEntries(
            Object.entries(expected).map(([c, e]) => [
              c,
              { records: e.records, minor: e.minor, unscaled: (BigInt(e.minor) * factor[c]!).toString() },
            ]),
          ),
        );
        expect(period).toMatch(/^2026-(09|10)$/);
      }
    });
  });

  describe('a month with no transactions, no tax reports and no categories', () => {
    /** The Parquet files under the Hive layout of the empty company, found on disk, not through the manifest. */
    async function hiveParquetFiles(dataset: DatasetName): Promise<string[]> {
      const root = join(dir, 'exports', `company=${EMPTY_COMPANY}`, `period=${EMPTY_PERIOD}`, dataset);
      const runs = (await readdir(root)).filter((name) => name.startsWith('run='));
      const files = await Promise.all(runs.map(async (run) => (await readdir(join(root, run))).map((f) => join(root, run, f))));
      return files.flat().filter((f) => f.endsWith('.parquet'));
    }

    it.each(DATASETS)('%s: the manifest lists one Parquet object of 0 records', (dataset) => {
      expect(emptyManifest.datasets[dataset]!.records).toBe(0);
      expect(emptyManifest.objects.filter((o) => o.dataset === dataset && o.format === 'parquet').map((o) => o.records)).toEqual([0]);
    });

    it.each(DATASETS)('%s: DuckDB reads it across the Hive layout: the Glue columns, the partitions and 0 rows', async (dataset) => {
      const files = `'${dir}/exports/company=${EMPTY_COMPANY}/period=*/${dataset}/run=*/part-*.parquet'`;
      const from = `read_parquet(${files}, hive_partitioning = true)`;
      const described = await rows(`DESCRIBE SELECT * FROM ${from}`);
      expect(described.map((r) => [r.column_name, r.column_type])).toEqual([
        ...GLUE_COLUMNS[dataset].map(([name, type]) => [name, DUCKDB_TYPE[type]]),
        ['company', 'VARCHAR'],
        ['period', 'VARCHAR'],
        ['run', 'VARCHAR'],
      ]);
      const [count] = await rows(`SELECT count(*)::VARCHAR AS records FROM ${from} WHERE period = '${EMPTY_PERIOD}'`);
      expect(Number(count!.records)).toBe(emptyManifest.datasets[dataset]!.records);
      const metadata = await rows(
        `SELECT num_rows::VARCHAR AS num_rows, num_row_groups::VARCHAR AS groups FROM parquet_file_metadata(${files})`,
      );
      expect(metadata).toEqual([{ num_rows: '0', groups: '0' }]);
    });

    it.each(DATASETS)('%s: arrow-rs opens the file with the Glue columns and types, and 0 rows', async (dataset) => {
      const files = await hiveParquetFiles(dataset);
      const listed = emptyManifest.objects.filter((o) => o.dataset === dataset && o.format === 'parquet').map((o) => join(dir, o.key));
      expect(files).toEqual(listed);
      const table: ArrowTable = tableFromIPC(readParquet(await readFile(files[0]!)).intoIPCStream());
      expect(table.schema.fields.map((f) => [f.name, String(f.type)])).toEqual(
        GLUE_COLUMNS[dataset].map(([name, type]) => [name, ARROW_TYPE[type]]),
      );
      expect(table.numRows).toBe(emptyManifest.datasets[dataset]!.records);
    });
  });

  it('keeps every tax-report field the service sent: the unknown ones in the extra column, JSONL verbatim', async () => {
    const extra = await rows(`SELECT pk, extra FROM ${FROM.parquet('tax_reports')} WHERE period = '2026-10' AND extra IS NOT NULL`);
    expect(extra).toEqual([{ pk: '3a3a3a3a-0000-4000-8000-000000000001', extra: '{"filingRef":"ELSTER-1","lines":[1,2]}' }]);
    const csv = await rows(`SELECT extra FROM ${FROM.csv('tax_reports')} WHERE period = '2026-10' AND extra IS NOT NULL`);
    expect(csv.map((r) => r.extra)).toEqual(['{"filingRef":"ELSTER-1","lines":[1,2]}']);
    const jsonl = await rows(
      `SELECT json FROM read_ndjson_objects(${glob('tax_reports', 'jsonl.gz')}, compression = 'gzip', hive_partitioning = true) WHERE period = '2026-10' AND json_extract_string(json, '$.pk') LIKE '%1'`,
    );
    expect(JSON.parse(jsonl[0]!.json!)).toEqual(TAX_REPORTS[0]!.raw);
  });

  it("puts a tax report in the month its period ends: Q3 in September, not in October's total", async () => {
    const byPeriod = await rows(
      `SELECT period, string_agg(right(pk, 1), ',' ORDER BY pk) AS reports FROM ${FROM.parquet('tax_reports')} GROUP BY period ORDER BY period`,
    );
    // Report 4 has no date at all: it cannot be placed and is kept in both.
    expect(byPeriod).toEqual([
      { period: '2026-09', reports: '2,4' },
      { period: '2026-10', reports: '1,3,4' },
    ]);
    expect(manifests['2026-10']!.datasets.tax_reports!.totals.map((t) => [t.currency, t.amount])).toEqual([
      ['EUR', '1234.56'],
      ['JPY', '500'],
    ]);
  });
});

describe('JSON text columns read by independent engines: exact in Parquet and JSONL, defused in CSV', () => {
  /** A number after `,` and a formula after `;`: what a `;`-splitting spreadsheet would run. */
  const JSON_TEXT = '{"n":[1,-2],"k":"a;=b"}';
  const DEFUSED = `{"n":[1,'-2],"k":"a;'=b"}`;
  let dir: string;
  let duck: DuckDb;
  let manifest: Manifest;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-json-columns-'));
    const exporter = new PeriodExporter({
      store: new DirObjectStore(dir),
      clock: new ManualClock(NOW),
      logger: silentLogger,
      toolVersion: 'test',
    });
    const categoryRaw = { ...(CATEGORIES[0]!.raw as Record<string, unknown>), metadata: JSON_TEXT };
    const summary = await exporter.run({
      company: COMPANY,
      period: '2026-10',
      sources: {
        transactions: [],
        taxReports: [report(9, { periodEnd: '2026-10-31', n: [1, -2], k: 'a;=b' })],
        categories: [{ raw: categoryRaw, parsed: categorySchema.parse(categoryRaw) }],
      },
      formats: ['jsonl', 'csv', 'parquet'],
      sourceBaseUrl: 'http://127.0.0.1:1/api/v1',
    });
    manifest = summary.manifest;
    duck = await DuckDb.open();
  });

  afterAll(async () => {
    duck?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const file = (dataset: DatasetName, format: 'csv' | 'jsonl' | 'parquet') =>
    join(dir, manifest.objects.find((o) => o.dataset === dataset && o.format === format)!.key);
  const COLUMN = { categories: 'metadata', tax_reports: 'extra' } as const;

  it.each(['categories', 'tax_reports'] as const)('%s: DuckDB and arrow-rs read the exact JSON from the Parquet', async (dataset) => {
    const column = COLUMN[dataset];
    const duckdb = (
      await duck.connection.runAndReadAll(`SELECT ${column} FROM read_parquet('${file(dataset, 'parquet')}')`)
    ).getRowObjectsJson();
    expect(duckdb).toEqual([{ [column]: JSON_TEXT }]);
    const arrow: ArrowTable = tableFromIPC(readParquet(await readFile(file(dataset, 'parquet'))).intoIPCStream());
    expect(arrow.getChild(column)!.toArray()).toEqual([JSON_TEXT]);
  });

  it.each(['categories', 'tax_reports'] as const)('%s: the JSONL line holds the JSON as the service sent it', async (dataset) => {
    const lines = (
      await duck.connection.runAndReadAll(
        `SELECT json::VARCHAR AS line FROM read_ndjson_objects('${file(dataset, 'jsonl')}', compression = 'gzip')`,
      )
    ).getRowObjectsJson() as { line: string }[];
    expect(lines).toHaveLength(1);
    // A category's metadata is a JSON string field; a tax report's extra fields are the record's own.
    if (dataset === 'categories') expect((JSON.parse(lines[0]!.line) as { metadata: unknown }).metadata).toBe(JSON_TEXT);
    else expect(lines[0]!.line).toContain(JSON_TEXT.slice(1, -1));
  });

  it.each(['categories', 'tax_reports'] as const)('%s: the CSV copy is defused like every text cell', async (dataset) => {
    const column = COLUMN[dataset];
    const csv = (
      await duck.connection.runAndReadAll(
        `SELECT ${column} FROM read_csv('${file(dataset, 'csv')}', header = true, delim = ',', quote = '"', escape = '"', all_varchar = true)`,
      )
    ).getRowObjectsJson();
    expect(csv).toEqual([{ [column]: DEFUSED }]);
  });
});

/** An arrow Decimal128 value (four little-endian 32-bit words) as a bigint of unscaled units. */
function decimalValue(value: unknown): bigint {
  const words = value as Uint32Array;
  let out = 0n;
  for (let w = words.length - 1; w >= 0; w--) out = (out << 32n) | BigInt(words[w]!);
  return BigInt.asIntN(words.length * 32, out);
}
