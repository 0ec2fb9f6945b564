/**
 * A manual check, not part of `npm test` or `npm run bench` (CI has no LibreOffice): exports a month
 * of EUR, JPY and KWD transactions in the `excel-de` CSV dialect, has LibreOffice Calc import each
 * file as a German spreadsheet does (`;`, `"`, UTF-8, language German), and checks what it got:
 * `amount` and `amount_minor` are numbers whose sums equal the manifest's totals exactly, and
 * `value_date_utc` and `value_date_local` are dates. The standard CSV imported the same way
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
import { transactionSchema } from '../../src/core/accounting-api';
import { minorUnitDigits } from '../../src/core/exports/formats/currency';
import type { CsvDialect, ExportTransaction } from '../../src/core/exports/formats/datasets';
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
    sources: { transactions: transactionsOf(currency) },
    datasets: ['transactions'],
    formats: ['csv'],
    csvDialect: dialect,
    sourceBaseUrl: 'https://api.example.test/api/v1',
  });
  const manifest = (await readManifest(store, manifestKey(company, PERIOD)))!;
  const csv = summary.manifest.objects.find((o) => o.format === 'csv')!;
  return { file: join(root, csv.key), manifest };
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
        const copy = join(work, `${currency}-${dialect}.csv`);
        writeFileSync(copy, readFileSync(file));
        const [header, ...rows] = importWithLibreOffice(copy, dialect === 'excel-de' ? 59 : 44, work);
        const at = (name: string) => header!.findIndex((c) => c.value === name);
        const data = rows.filter((r) => r[at('public_id')]?.type === 'string' && r[at('public_id')]!.value !== '');
        const types = (name: string) => [...new Set(data.map((r) => r[at(name)]?.type))].join(',');
        const totals = manifest.datasets.transactions!.totals;
        const expected = totals.reduce((sum, t) => sum + BigInt(t.amountMinor), 0n);
        const label = `${currency} ${dialect.padEnd(8)}`;
        if (dialect === 'standard') {
          // Shown, not judged: what docs/exports.md used to advise under a German locale.
          const sample = data[0]![at('amount')]!;
          console.log(
            `info ${label} (German import, ","): amount cells ${types('amount')} (first: ${sample.type} ${sample.value}, CSV ${manifestFirstAmount(file)}), value_date_utc ${types('value_date_utc')}`,
          );
          continue;
        }
        check(data.length === manifest.datasets.transactions!.records, `${label} rows: ${data.length}`);
        check(types('amount') === 'float', `${label} amount cells are numbers (${types('amount')})`);
        check(types('amount_minor') === 'float', `${label} amount_minor cells are numbers (${types('amount_minor')})`);
        check(types('value_date_utc') === 'date', `${label} value_date_utc cells are date-times (${types('value_date_utc')})`);
        check(types('value_date_local') === 'date', `${label} value_date_local cells are dates (${types('value_date_local')})`);
        const sum = data.reduce((s, r) => s + minorOf(r[at('amount')]!.value, digits), 0n);
        const sumMinor = data.reduce((s, r) => s + BigInt(r[at('amount_minor')]!.value), 0n);
        check(sum === expected, `${label} SUM(amount) ${sum} minor units = manifest ${expected}`);
        check(sumMinor === expected, `${label} SUM(amount_minor) ${sumMinor} = manifest ${expected}`);
        // The instant to the second: LibreOffice writes a date-time's fraction to hundredths.
        const instants = new Map(transactionsOf(currency).map((t) => [t.parsed.publicId, Date.parse(t.parsed.valueDate)]));
        const wrongInstants = data.filter(
          (r) =>
            r[at('value_date_utc')]!.value.slice(0, 19) !== new Date(instants.get(r[at('public_id')]!.value)!).toISOString().slice(0, 19),
        );
        check(wrongInstants.length === 0, `${label} value_date_utc holds each instant in UTC (${wrongInstants.length} differ)`);
        const firstUtc = data.find((r) => r[at('value_date_utc')]!.value.includes('.'))?.[at('value_date_utc')]?.value;
        console.log(`info ${label} a date-time with milliseconds reads ${firstUtc ?? '(none)'}`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  console.log(failures === 0 ? 'every check holds' : `${failures} check(s) failed`);
  return failures === 0 ? 0 : 1;
}

/** The first data row's `amount` as the CSV spells it (the 6th field of the standard file's second line). */
function manifestFirstAmount(file: string): string {
  return readFileSync(file, 'utf8').split('\r\n')[1]!.split(',')[5]!;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
