import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { ObjectStoreError, PeriodExportError } from '../../../src/core/exports/formats/period-errors';
import { manifestKey, periodPrefix, symlinkKey } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import { staleSymlinks } from '../../../src/core/exports/formats/symlinks';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { PeriodExporter, type PeriodExportRequest } from '../../../src/core/exports/formats/period-exporter';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { asAsync, CATEGORIES, COMPANY, listKeys, sha256Of, snapshot, taxReport, transactions } from '../../helpers/export-fixtures';
import { instrumentS3, startS3, type LocalS3, type S3Call } from '../../helpers/s3rver';

const BUCKET = 'acctops-exports';
const MiB = 1024 * 1024;
// Long descriptions make the transactions CSV about 7 MiB: more than one 5 MiB part.
const ROWS = 16_000;
const LONG = (i: number) => ({ description: `Invoice ${i} ${'line item detail '.repeat(20)}` });

function request(period: string): PeriodExportRequest {
  return {
    company: COMPANY,
    period,
    sources: {
      categories: asAsync(CATEGORIES),
      taxReports: asAsync([taxReport(0)]),
      transactions: asAsync(transactions(ROWS, LONG)),
    },
    formats: ['jsonl', 'csv', 'parquet'],
    sourceBaseUrl: 'http://127.0.0.1:1/api/v1',
  };
}

describe('period export to S3 (s3rver)', () => {
  let s3: LocalS3;
  const clock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0));
  beforeAll(async () => {
    s3 = await startS3([BUCKET]);
  });
  afterAll(() => s3.stop());

  const setup = (fail?: (call: S3Call) => boolean) => {
    const client = s3.client();
    const { parts } = instrumentS3(client, fail);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 2 });
    const exporter = (runId: string) =>
      new PeriodExporter({ store, clock, logger: new MemoryLogger(), toolVersion: '0.1.0', runIds: () => runId });
    return { store, parts, exporter };
  };

  it('publishes through multipart uploads; S3 holds exactly the bytes the manifest describes; a re-run gives equal checksums', async () => {
    const period = parsePeriod('2026-10');
    const { store, parts, exporter } = setup();
    const first = await exporter('run-1').run(request(period.text));

    const csvKey = `${periodPrefix(COMPANY, period)}transactions/run=run-1/part-00000.csv`;
    expect(parts.get(csvKey)).toBeGreaterThanOrEqual(2);
    const manifest = (await readManifest(store, manifestKey(COMPANY, period)))!;
    expect(manifest.datasets.transactions?.records).toBe(ROWS);
    for (const object of manifest.objects) expect(await sha256Of(store, object.key)).toBe(object.sha256);
    expect(Buffer.from((await store.get(symlinkKey(COMPANY, period, 'transactions')))!).toString()).toBe(
      `s3://${BUCKET}/${periodPrefix(COMPANY, period)}transactions/run=run-1/part-00000.parquet\n`,
    );
    expect(first.manifestUrl).toBe(`s3://${BUCKET}/${manifestKey(COMPANY, period)}`);

    const second = await exporter('run-2').run(request(period.text));
    expect(second.manifest.objects.map((o) => o.sha256)).toEqual(first.manifest.objects.map((o) => o.sha256));
    expect((await listKeys(store, periodPrefix(COMPANY, period))).filter((k) => k.includes('run=run-1'))).toEqual([]);
    for (const object of second.manifest.objects) expect(await sha256Of(store, object.key)).toBe(object.sha256);
  });

  it('an S3 failure in the middle of a multipart upload leaves the previous complete period intact and nothing of the failed run', async () => {
    const period = parsePeriod('2026-09');
    await setup().exporter('run-1').run(request(period.text));
    const before = await snapshot(setup().store, periodPrefix(COMPANY, period));

    const { store, parts, exporter } = setup(({ key, part }) => part === 2 && key.endsWith('run=run-2/part-00000.csv'));
    const error = await exporter('run-2')
      .run(request(period.text))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PeriodExportError);
    expect((error as PeriodExportError).cause).toBeInstanceOf(ObjectStoreError);
    expect(parts.get(`${periodPrefix(COMPANY, period)}transactions/run=run-2/part-00000.csv`)).toBeGreaterThanOrEqual(2);

    expect(await snapshot(store, periodPrefix(COMPANY, period))).toEqual(before);
    expect((await listKeys(store, periodPrefix(COMPANY, period))).filter((k) => k.includes('run=run-2'))).toEqual([]);
    expect((await readManifest(store, manifestKey(COMPANY, period)))!.runId).toBe('run-1');
  });

  it('a symlink PutObject refused after the manifest: published and reported stale, the Parquet Athena still reads kept; the next export rewrites it', async () => {
    const period = parsePeriod('2026-08');
    const prefix = periodPrefix(COMPANY, period);
    const link = symlinkKey(COMPANY, period, 'transactions');
    await setup().exporter('run-1').run(request(period.text));

    const calls: string[] = [];
    const { store, exporter } = setup(({ command, key }) => {
      // Small data objects go up in one PutObject too; the publish's are outside any run= folder.
      if (command === 'PutObjectCommand' && !key.includes('/run=')) calls.push(key);
      return command === 'PutObjectCommand' && key === link;
    });
    const summary = await exporter('run-2').run(request(period.text));
    expect(summary.staleSymlinks).toEqual(['transactions']);
    const manifest = (await readManifest(store, manifestKey(COMPANY, period)))!;
    expect(manifest.runId).toBe('run-2');
    // The manifest went first, then the symlinks: Athena never ran ahead of it.
    expect(calls[0]).toBe(manifestKey(COMPANY, period));
    expect(calls.slice(1).sort()).toEqual(manifest.symlinks.map((l) => l.key).sort());
    const oldParquet = `${prefix}transactions/run=run-1/part-00000.parquet`;
    expect(Buffer.from((await store.get(link))!).toString()).toBe(`s3://${BUCKET}/${oldParquet}\n`);
    expect(await staleSymlinks(store, manifest)).toEqual(['transactions']);
    expect((await listKeys(store, prefix)).filter((k) => k.includes('run=run-1'))).toEqual([oldParquet]);

    const repaired = await setup().exporter('run-3').run(request(period.text));
    expect(repaired.staleSymlinks).toEqual([]);
    expect(await staleSymlinks(store, (await readManifest(store, manifestKey(COMPANY, period)))!)).toEqual([]);
    expect(Buffer.from((await store.get(link))!).toString()).toBe(`s3://${BUCKET}/${prefix}transactions/run=run-3/part-00000.parquet\n`);
  });
});
