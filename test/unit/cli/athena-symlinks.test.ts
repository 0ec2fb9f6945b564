import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderDoctor } from '../../../cli/commands/doctor';
import { athenaBehind } from '../../../cli/commands/export';
import type { DoctorReport } from '../../../cli/operations/operations';
import { findingsOf } from '../../../cli/operations/shared';
import type { Output } from '../../../cli/output';
import { exportHealth } from '../../../cli/operations/export-run';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { manifestKey, symlinkKey } from '../../../src/core/exports/formats/layout';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { PeriodExporter, type PeriodExportRequest } from '../../../src/core/exports/formats/period-exporter';
import { DEFAULT_EXPORT_DEADLINE } from '../../../src/core/exports/pipeline/export-deadline';
import { ManualClock } from '../../../src/core/shared/clock';
import { silentLogger } from '../../../src/core/shared/logger';
import { asAsync, CATEGORIES, COMPANY, transactions } from '../../helpers/export-fixtures';

/**
 * What the CLI says about Athena's symlinks once they may lag the manifest (docs/exports.md,
 * "Atomic periods"): the doctor compares them for the months it inspects, and the interrupt line
 * names the published periods whose symlinks were not rewritten.
 */
describe("the CLI's view of Athena's symlinks", () => {
  // The doctor's expected month on this day is October (Europe/Berlin, 12 h after the 1st).
  const NOW = Date.parse('2026-11-05T12:00:00Z');
  let root: string;
  let store: DirObjectStore;
  let runs = 0;

  const request = (period: string, formats: PeriodExportRequest['formats'] = ['csv', 'parquet']): PeriodExportRequest => ({
    company: COMPANY,
    period,
    sources: { categories: asAsync(CATEGORIES), taxReports: asAsync([]), transactions: asAsync(transactions(20)) },
    formats,
    sourceBaseUrl: 'https://api.example.test/api/v1',
  });
  const exporter = () =>
    new PeriodExporter({
      store,
      clock: new ManualClock(NOW),
      logger: silentLogger,
      toolVersion: '0.1.0',
      runIds: () => `run-${(runs += 1)}`,
    });
  /** A re-export with --replace-formats that drops the Parquet: the symlinks stay, emptied. */
  const exportCsvOnly = (period: string) => exporter().run({ ...request(period, ['csv']), replaceFormats: true });
  const exportMonth = (period: string) => exporter().run(request(period));
  /** The symlink as an interrupted publish leaves it: another run's view than the manifest records. */
  const makeStale = async (period: string) => {
    const key = symlinkKey(COMPANY, parsePeriod(period), 'transactions');
    const body = Buffer.from((await store.get(key))!).toString();
    await store.putObject(key, body.replace(/run=[^/]+/, 'run=earlier'));
  };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-athena-'));
    store = new DirObjectStore(root);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('doctor: the last period, when it is the expected one, is compared; an export of it brings it back in line', async () => {
    await exportMonth('2026-10');
    const healthy = await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE);
    expect(healthy.companies[0]).toMatchObject({ lastPeriod: '2026-10', overdue: false, staleSymlinks: [] });

    await makeStale('2026-10');
    const behind = await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE);
    expect(behind.expectedPeriod).toBe('2026-10');
    expect(behind.companies[0]!.staleSymlinks).toEqual([{ period: '2026-10', datasets: ['transactions'] }]);

    await exportMonth('2026-10');
    expect((await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE)).companies[0]!.staleSymlinks).toEqual([]);
  });

  it('doctor: a later last period and the expected one are each compared, and named apart', async () => {
    await exportMonth('2026-10');
    await exportMonth('2026-11');
    await makeStale('2026-11');
    const one = await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE);
    expect(one.companies[0]).toMatchObject({ lastPeriod: '2026-11', staleSymlinks: [{ period: '2026-11', datasets: ['transactions'] }] });
    await makeStale('2026-10');
    const both = await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE);
    expect(both.companies[0]!.staleSymlinks).toEqual([
      { period: '2026-11', datasets: ['transactions'] },
      { period: '2026-10', datasets: ['transactions'] },
    ]);
  });

  it('doctor: a period whose symlinks list no Parquet is reported as showing Athena no rows, and an export with Parquet clears it', async () => {
    await exportMonth('2026-10');
    await exportMonth('2026-11');
    await exportCsvOnly('2026-11');
    await exportCsvOnly('2026-10');
    const empty = await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE);
    // In line with their manifests (not stale), yet empty: the last period and the expected one, named apart.
    expect(empty.companies[0]).toMatchObject({
      lastPeriod: '2026-11',
      staleSymlinks: [],
      athenaEmpty: [
        { period: '2026-11', datasets: ['categories', 'tax_reports', 'transactions'] },
        { period: '2026-10', datasets: ['categories', 'tax_reports', 'transactions'] },
      ],
    });
    const skipped = { skipped: 'not part of this check' };
    const report = {
      mode: 'local',
      checkedAt: '2026-11-05T12:00:00.000Z',
      health: { probes: [] },
      tokens: skipped,
      rotations: skipped,
      registry: skipped,
      exports: { expectedPeriod: '2026-10', companies: empty.companies },
    } as unknown as DoctorReport;
    expect(findingsOf(report)).toEqual([
      `company ${COMPANY}: Athena shows no rows of categories, tax_reports, transactions of 2026-11: its export has no Parquet of them (a re-export with --replace-formats dropped it), so their symlinks list nothing: \`acctops export --month 2026-11 --company ${COMPANY}\` (every format, Parquet included) fills them`,
      `company ${COMPANY}: Athena shows no rows of categories, tax_reports, transactions of 2026-10: its export has no Parquet of them (a re-export with --replace-formats dropped it), so their symlinks list nothing: \`acctops export --month 2026-10 --company ${COMPANY}\` (every format, Parquet included) fills them`,
    ]);
    const lines: string[] = [];
    const output = {
      line: (l: string) => lines.push(l),
      table: (rows: unknown[], columns: { header: string; value: (row: unknown) => unknown }[]) => {
        for (const row of rows) lines.push(columns.map((c) => `${c.header}=${String(c.value(row))}`).join(' '));
      },
    };
    renderDoctor(output as unknown as Output, { ...report, findings: findingsOf(report) });
    expect(lines).toContainEqual(expect.stringContaining('ATHENA=no rows (2026-11, 2026-10)'));

    await exportMonth('2026-11');
    await exportMonth('2026-10');
    expect((await exportHealth(store, [COMPANY], NOW, DEFAULT_EXPORT_DEADLINE)).companies[0]!.athenaEmpty).toEqual([]);
  });

  it("interrupt line: names the published periods whose symlinks are not the manifest's, and only those", async () => {
    await exportMonth('2026-10');
    await exportMonth('2026-09');
    const published = ['2026-10', '2026-09'].map((p) => ({ store, key: manifestKey(COMPANY, parsePeriod(p)) }));
    expect(await athenaBehind(published)).toEqual([]);

    await makeStale('2026-09');
    // October, untouched, is in line.
    // As a path a person pastes (the store's address is a file:// URL).
    expect(await athenaBehind(published)).toEqual([
      `transactions of ${fileURLToPath(store.url(manifestKey(COMPANY, parsePeriod('2026-09'))))}`,
    ]);
  });
});
