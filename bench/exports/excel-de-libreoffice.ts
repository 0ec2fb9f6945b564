/**
 * A manual check, not part of `npm test` or `npm run bench` (CI has no LibreOffice): exports a month
 * of EUR, JPY and KWD transactions and tax reports in the `excel-de` CSV dialect, has LibreOffice Calc import each
 * file as a German spreadsheet does (`;`, `"`, UTF-8, language German), and checks what it got:
 * `amount`/`amount_due` and their `_minor` columns are numbers whose sums equal the manifest's
 * totals exactly, and `value_date_utc`, `created_at_utc` and `value_date_local` are dates. The standard CSV imported the same way
 * (German language, `,` separator: docs/exports.md's old advice) is shown beside it, where amounts
 * are text or 1000 times too large (review-accountant, finding 3).
 *
 *   npx tsx bench/exports/excel-de-libreoffice.ts          # needs `soffice` (apt-get install libreoffice-calc-nogui)
 *
 * Exit 0 when every check holds, 1 when one fails, 3 when soffice is not installed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import { taxReportSchema, transactionSchema } from '../../src/core/accounting-api';
import { minorUnitDigits } from '../../src/core/exports/formats/currency';
import type { CsvDialect, DatasetName, ExportTaxReport, ExportTransaction } from '../../src/core/exports/formats/datasets';
import { manifestKey } from '../../src/core/exports/formats/layout';
import { readManifest } from '../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../src/core/exports/formats/period';
import { PeriodExporter } from '../../src/core/exports/formats/period-exporter';
import { ManualClock } from '../../src/core/shared/clock';
import { MemoryLogger } from '../../src/core/shared/logger';

const PERIOD = parsePeriod('2026-10');
const COMPANIES: Record<string, string> = {
  EUR: '00000000-0000-4000-8000-000000000001',
  JPY: '00000000-0000-4000-8000-000000000002',
  KWD: '00000000-0000-4000-8000-000000000003',
};
/** LibreOffice's CSV filter options: separator, quote, charset 76 (UTF-8), first line 1, column formats (none), language. */
const GERMAN = 1031;

/** 60 transactions of one currency: the review's cases first, then amounts of every size a spreadsheet holds exactly (15 digits). */
function transactionsOf(currency: string): ExportTransaction[] {
  const items: ExportTransaction[] = [];
  const edge = [-1003, -1008, 999, 0, -5, 123456789, -50];
  for (let i = 0; i < 60; i++) {
    const amount = i < edge.length ? edge[i]! : (i % 2 === 0 ? -1 : 1) * (((i * 7919) % 100_000) + i);
    const day = String((i % 31) + 1).padStart(2, '0');
    // Some with milliseconds, some in offsets that move the UTC date to the previous day.
    const time = i % 5 === 0 ? `00:${String(i % 60).padStart(2, '0')}:07.250+02:00` : `${String(i % 24).padStart(2, '0')}:15:00+01:00`;
    const raw = {
      publicId: `7e57da7a-0000-4000-8000-${String(i).padStart(12, '0')}`,
      amount,
      currency,
      cashflowType: amount < 0 ? 'EXPENSE' : 'INCOME',
      valueDate: `2026-10-${day}T${time}`,
      description: i === 3 ? 'Miete; Oktober, =1+1' : `Buchung ${i} äöü €`,
      category: null,
      bankAccount: 'b0b0b0b0-0000-4000-8000-000000000001',
    };
    items.push({ raw, parsed: transactionSchema.parse(raw) });
  }
  return items;
}

/** Three tax reports of one currency, created at instants with and without milliseconds. */
function taxReportsOf(currency: string): ExportTaxReport[] {
  return [-1003, 123456, 7].map((amountDue, i) => {
    const raw = {
      pk: `3a3a3a3a-0000-4000-8000-${String(i).padStart(12, '0')}`,
      type: 'VAT_RETURN',
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31',
      status: 'submitted',
      amountDue,
      currency,
      createdAt: i === 0 ? '2026-10-31T23:30:00.500-01:00' : `2026-10-${20 + i}T10:00:00+01:00`,
    };
    return { raw, parsed: taxReportSchema.parse(raw) };
  });
}

/** Per dataset: its id column, amount column, instant column and the source's instant of each id. */
const DATASET_CHECKS: Record<'transactions' | 'tax_reports', { id: string; amount: string; instant: string; date?: string }> = {
  transactions: { id: 'public_id', amount: 'amount', instant: 'value_date_utc', date: 'value_date_local' },
  tax_reports: { id: 'pk', amount: 'amount_due', instant: 'created_at_utc' },
};

function instantsOf(currency: string, dataset: keyof typeof DATASET_CHECKS): Map<string, number> {
  return dataset === 'transactions'
    ? new Map(transactionsOf(currency).map((t) => [t.parsed.publicId, Date.parse(t.parsed.valueDate)]))
    : new Map(taxReportsOf(currency).map((r) => [r.parsed.pk, Date.parse(r.parsed.createdAt!)]));
}

async function exportOne(root: string, currency: string, dialect: CsvDialect) {
  const store = new DirObjectStore(root);
  const company = COMPANIES[currency]!;
  const summary = await new PeriodExporter({
    store,
    clock: new ManualClock(Date.UTC(2026, 10, 1, 2, 0)),
    logger: new MemoryLogger(),
    toolVersion: 'manual-check',
  }).run({
    company,
    period: PERIOD,
    sources: { transactions: transactionsOf(currency), taxReports: taxReportsOf(currency) },
    datasets: ['transactions', 'tax_reports'],
    formats: ['csv'],
    csvDialect: dialect,
    sourceBaseUrl: 'https://api.example.test/api/v1',
  });
  const manifest = (await readManifest(store, manifestKey(company, PERIOD)))!;
  const file = (dataset: DatasetName) => join(root, summary.manifest.objects.find((o) => o.format === 'csv' && o.dataset === dataset)!.key);
  return { file, manifest };
}

interface Cell {
  type: string;
  value: string;
}

/** The rows of the first sheet of a flat ODF file, each cell's value type and value. */
function fodsRows(path: string): Cell[][] {
  const xml = readFileSync(path, 'utf8');
  const rows: Cell[][] = [];
  for (const [, body] of xml.matchAll(/<table:table-row[^>]*>([\s\S]*?)<\/table:table-row>/g)) {
    const cells: Cell[] = [];
    for (const [, attrs, inner] of body!.matchAll(/<table:table-cell([^>]*?)(?:\/>|>([\s\S]*?)<\/table:table-cell>)/g)) {
      const repeat = Number(/number-columns-repeated="(\d+)"/.exec(attrs!)?.[1] ?? 1);
      const type = /office:value-type="(\w+)"/.exec(attrs!)?.[1] ?? 'empty';
      const value = /office:(?:date-)?value="([^"]*)"/.exec(attrs!)?.[1] ?? (inner ?? '').replace(/<[^>]+>/g, '').trim();
      for (let r = 0; r < Math.min(repeat, 64); r++) cells.push({ type, value });
    }
    rows.push(cells);
  }
  return rows;
}

/** An exact decimal text (`-10.03`, `1E-3` never occurs in ODF values) as minor units of `digits`. */
function minorOf(value: string, digits: number): bigint {
  const negative = value.startsWith('-');
  const [whole, fraction = ''] = value.replace('-', '').split('.');
  if (fraction.length > digits) throw new Error(`${value} has more than ${digits} fraction digits`);
  const minor = BigInt(`${whole}${fraction.padEnd(digits, '0')}`);
  return negative ? -minor : minor;
}

function importWithLibreOffice(csv: string, separator: number, work: string): Cell[][] {
  execFileSync(
    'soffice',
    [
      `-env:UserInstallation=file://${join(work, 'profile')}`,
      '--headless',
      `--infilter=CSV:${separator},34,76,1,,${GERMAN}`,
      '--convert-to',
      'fods',
      '--outdir',
      work,
      csv,
    ],
    { stdio: 'ignore', timeout: 120_000 },
  );
  return fodsRows(
    join(
      work,
      csv
        .split('/')
        .pop()!
        .replace(/\.csv$/, '.fods'),
    ),
  );
}

async function main(): Promise<number> {
  try {
    execFileSync('soffice', ['--version'], { stdio: 'ignore' });
  } catch {
    console.error('soffice (LibreOffice) is not installed: apt-get install libreoffice-calc-nogui');
    return 3;
  }
  const work = mkdtempSync(join(tmpdir(), 'acctops-excel-de-'));
  let failures = 0;
  const check = (ok: boolean, text: string) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${text}`);
    if (!ok) failures += 1;
  };
  try {
    for (const currency of Object.keys(COMPANIES)) {
      const digits = minorUnitDigits(currency);
      for (const dialect of ['excel-de', 'standard'] as const) {
        const dir = join(work, `${currency}-${dialect}`);
        const { file, manifest } = await exportOne(dir, currency, dialect);
        for (const dataset of ['transactions', 'tax_reports'] as const) {
          const columns = DATASET_CHECKS[dataset];
          const copy = join(work, `${currency}-${dialect}-${dataset}.csv`);
          writeFileSync(copy, readFileSync(file(dataset)));
          const [header, ...rows] = importWithLibreOffice(copy, dialect === 'excel-de' ? 59 : 44, work);
          const at = (name: string) => header!.findIndex((c) => c.value === name);
          const data = rows.filter((r) => r[at(columns.id)]?.type === 'string' && r[at(columns.id)]!.value !== '');
          const types = (name: string) => [...new Set(data.map((r) => r[at(name)]?.type))].join(',');
          const summary = manifest.datasets[dataset]!;
          const expected = summary.totals.reduce((sum, t) => sum + BigInt(t.amountMinor), 0n);
          const label = `${currency} ${dialect.padEnd(8)} ${dataset.padEnd(12)}`;
          if (dialect === 'standard') {
            // Shown, not judged: what docs/exports.md used to advise under a German locale.
            const sample = data[0]![at(columns.amount)]!;
            console.log(
              `info ${label} (German import, ","): ${columns.amount} cells ${types(columns.amount)} (first: ${sample.type} ${sample.value}, CSV ${firstField(
                file(dataset),
                header!.findIndex((c) => c.value === columns.amount),
              )}), ${columns.instant} ${types(columns.instant)}`,
            );
            continue;
          }
          check(data.length === summary.records, `${label} rows: ${data.length}`);
          check(types(columns.amount) === 'float', `${label} ${columns.amount} cells are numbers (${types(columns.amount)})`);
          check(
            types(`${columns.amount}_minor`) === 'float',
            `${label} ${columns.amount}_minor cells are numbers (${types(`${columns.amount}_minor`)})`,
          );
          check(types(columns.instant) === 'date', `${label} ${columns.instant} cells are date-times (${types(columns.instant)})`);
          if (columns.date) check(types(columns.date) === 'date', `${label} ${columns.date} cells are dates (${types(columns.date)})`);
          const sum = data.reduce((s, r) => s + minorOf(r[at(columns.amount)]!.value, digits), 0n);
          const sumMinor = data.reduce((s, r) => s + BigInt(r[at(`${columns.amount}_minor`)]!.value), 0n);
          check(sum === expected, `${label} SUM(${columns.amount}) ${sum} minor units = manifest ${expected}`);
          check(sumMinor === expected, `${label} SUM(${columns.amount}_minor) ${sumMinor} = manifest ${expected}`);
          // The instant to the second: LibreOffice writes a date-time's fraction to hundredths.
          const instants = instantsOf(currency, dataset);
          const wrong = data.filter(
            (r) =>
              r[at(columns.instant)]!.value.slice(0, 19) !== new Date(instants.get(r[at(columns.id)]!.value)!).toISOString().slice(0, 19),
          );
          check(wrong.length === 0, `${label} ${columns.instant} holds each instant in UTC (${wrong.length} differ)`);
          const withMillis = data.find((r) => r[at(columns.instant)]!.value.includes('.'))?.[at(columns.instant)]?.value;
          console.log(`info ${label} a date-time with milliseconds reads ${withMillis ?? '(none)'}`);
        }
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(failures === 0 ? 'every check holds' : `${failures} check(s) failed`);
  return failures === 0 ? 0 : 1;
}

/** Field `index` of the standard file's first data row, as the CSV spells it. */
function firstField(file: string, index: number): string {
  return readFileSync(file, 'utf8').split('\r\n')[1]!.split(',')[index]!;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
