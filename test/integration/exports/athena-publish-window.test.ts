import { deployedPublishes, exportHealth } from '../../../cli/operations/export-run';
import type { DoctorReport, ExportHealth } from '../../../cli/operations/operations';
import { findingsOf } from '../../../cli/operations/shared';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { manifestKey, symlinkKey } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import type { ObjectStore } from '../../../src/core/exports/formats/object-store';
import { PeriodExporter, type PeriodExportRequest } from '../../../src/core/exports/formats/period-exporter';
import { SYMLINK_PUBLISH_WINDOW_MS } from '../../../src/core/exports/formats/symlinks';
import { DEFAULT_EXPORT_DEADLINE, dueExportPeriod } from '../../../src/core/exports/pipeline/export-deadline';
import { ManualClock } from '../../../src/core/shared/clock';
import { silentLogger } from '../../../src/core/shared/logger';
import { asAsync, CATEGORIES, COMPANY, taxReport, transactions } from '../../helpers/export-fixtures';
import { instrumentS3, startS3, type LocalS3 } from '../../helpers/s3rver';

const BUCKET = 'acctops-exports';

/**
 * The AWS doctor reads the stack's bucket while its functions may be publishing: between a
 * manifest's commit and its symlinks' writes (a few requests) the symlinks differ from it. Such a
 * moment is `publishing`, not a finding; symlinks still behind a manifest older than the window
 * (SYMLINK_PUBLISH_WINDOW_MS) are the finding they always were (docs/exports.md, "Overdue exports").
 * s3rver gives the manifest its last modification; the doctor's clock is a ManualClock.
 */
describe('doctor: Athena symlinks behind a manifest, on S3 (s3rver)', () => {
  let s3: LocalS3;
  const period = dueExportPeriod(Date.now(), DEFAULT_EXPORT_DEADLINE.timeZone, DEFAULT_EXPORT_DEADLINE.dueAfterHours);
  let runs = 0;

  beforeAll(async () => {
    s3 = await startS3([BUCKET]);
  });
  afterAll(() => s3.stop());

  const storeOf = (client = s3.client()) => new S3ObjectStore({ client, bucket: BUCKET });
  const request = (company: string): PeriodExportRequest => ({
    company,
    period: period.text,
    sources: { categories: asAsync(CATEGORIES), taxReports: asAsync([taxReport(0)]), transactions: asAsync(transactions(50)) },
    formats: ['parquet', 'csv'],
    sourceBaseUrl: 'https://api.example.test/api/v1',
  });
  const exportWith = (store: ObjectStore, company: string) =>
    new PeriodExporter({
      store,
      clock: new ManualClock(Date.now()),
      logger: silentLogger,
      toolVersion: '0.1.0',
      runIds: () => `run-${(runs += 1)}`,
    }).run(request(company));
  /** The AWS doctor's export section with its clock at `at`, and the local mode's (no publish can run). */
  const health = (company: string, at?: number) =>
    exportHealth(
      storeOf(),
      [company],
      Date.now(),
      DEFAULT_EXPORT_DEADLINE,
      at === undefined ? undefined : deployedPublishes(new ManualClock(at)),
    );
  const findings = (exports: ExportHealth) =>
    findingsOf({
      mode: 'aws',
      checkedAt: new Date().toISOString(),
      health: { probes: [] },
      companySecrets: null,
      tokens: { skipped: 'not here' },
      rotations: { skipped: 'not here' },
      exports,
      registry: { skipped: 'not here' },
      revokedKeys: null,
      damagedStateFiles: null,
    } satisfies Omit<DoctorReport, 'findings'>).filter((f) => !f.includes('not here'));

  it('a publish held between its manifest and its symlinks is publishing, no finding; in line once they are written', async () => {
    const company = COMPANY;
    await exportWith(storeOf(), company);
    // The next publish, its symlink writes held back until the doctor has looked.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let arrived!: () => void;
    const symlinksReached = new Promise<void>((resolve) => (arrived = resolve));
    const real = storeOf();
    const holding: ObjectStore = {
      putStream: (key, body, options) => real.putStream(key, body, options),
      putObject: async (key, body, options) => {
        if (key.endsWith('/_symlink/symlink.txt')) {
          arrived();
          await released;
        }
        return real.putObject(key, body, options);
      },
      get: (key) => real.get(key),
      head: (key) => real.head(key),
      list: (prefix) => real.list(prefix),
      delete: (keys) => real.delete(keys),
      url: (key) => real.url(key),
    };
    const publishing = exportWith(holding, company);
    try {
      await symlinksReached;
      const manifest = (await readManifest(real, manifestKey(company, period)))!;
      const datasets = manifest.symlinks.map((s) => s.dataset);
      expect(datasets).toContain('transactions');
      const committedAt = (await real.head(manifestKey(company, period)))!.lastModified;

      const during = await health(company, Date.now());
      expect(during.companies[0]).toMatchObject({
        lastPeriod: period.text,
        staleSymlinks: [],
        publishing: [{ period: period.text, datasets, committedAt: new Date(committedAt).toISOString() }],
      });
      expect(findings(during)).toEqual([]);
      // The local mode's doctor holds the state lock, under which every local export runs: behind is behind.
      expect((await health(company)).companies[0]).toMatchObject({ staleSymlinks: [{ period: period.text, datasets }], publishing: [] });
    } finally {
      release();
      await publishing;
    }
    expect((await health(company, Date.now())).companies[0]).toMatchObject({ staleSymlinks: [], publishing: [] });
  });

  it('a symlink whose write failed: publishing within the window of its commit, then the same finding as without the window', async () => {
    const company = '5e0c2a3b-0000-4000-8000-00000000000f';
    const link = symlinkKey(company, period, 'transactions');
    await exportWith(storeOf(), company);
    const client = s3.client();
    instrumentS3(client, ({ command, key }) => command === 'PutObjectCommand' && key === link);
    expect((await exportWith(storeOf(client), company)).staleSymlinks).toEqual(['transactions']);
    const committedAt = (await storeOf().head(manifestKey(company, period)))!.lastModified;

    const within = await health(company, committedAt + SYMLINK_PUBLISH_WINDOW_MS - 1);
    expect(within.companies[0]).toMatchObject({
      staleSymlinks: [],
      publishing: [{ period: period.text, datasets: ['transactions'], committedAt: new Date(committedAt).toISOString() }],
    });
    expect(findings(within)).toEqual([]);

    const today = await health(company);
    expect(today.companies[0]!.staleSymlinks).toEqual([{ period: period.text, datasets: ['transactions'] }]);
    // Once the manifest is as old as the window (or a clock that far behind S3's): exactly what the doctor reported before.
    for (const at of [committedAt + SYMLINK_PUBLISH_WINDOW_MS, committedAt + 3_600_000, committedAt - SYMLINK_PUBLISH_WINDOW_MS]) {
      const late = await health(company, at);
      expect(late).toEqual(today);
      expect(findings(late)).toEqual([
        `company ${company}: Athena shows an earlier export of transactions of ${period.text} than its manifest (their symlinks differ from the ones it records): \`acctops export --month ${period.text} --company ${company}\` rewrites them`,
      ]);
    }
  });
});
