import { createHash, randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { ListMultipartUploadsCommand, type S3Client } from '@aws-sdk/client-s3';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { ConcurrentExportError, ObjectStoreError, type PeriodExportError } from '../../../src/core/exports/formats/period-errors';
import { manifestKey, periodPrefix, symlinkKey } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { PeriodExporter } from '../../../src/core/exports/formats/period-exporter';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { asAsync, CATEGORIES, COMPANY, listKeys, sha256Of, taxReport, transactions } from '../../helpers/export-fixtures';
import { motoServer, startMoto, type MotoS3 } from '../../helpers/moto';

/**
 * The S3 side of the exports judged by moto, an S3 of other authors than s3rver (whose multipart
 * abort and listing the s3rver helper supplies itself) and with the SDK's default checksums, which
 * s3rver cannot take (the deployed export function keeps them; test/helpers/moto.ts). Where
 * moto_server is not on the PATH these are reported skipped (`ACCTOPS_REQUIRE_MOTO=1` fails instead).
 */
const BUCKET = 'acctops-exports';
const MiB = 1024 * 1024;
const withMoto = motoServer() === undefined ? describe.skip : describe;

withMoto('S3ObjectStore and the period export against moto (the SDK’s default checksums)', () => {
  let moto: MotoS3;
  let client: S3Client;
  beforeAll(async () => {
    moto = await startMoto([BUCKET]);
    client = moto.client();
  }, 60_000);
  afterAll(async () => {
    client?.destroy();
    await moto?.stop();
  });

  const uploadsLeft = async (prefix: string): Promise<string[]> =>
    ((await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: prefix }))).Uploads ?? []).map((u) => u.Key!).sort();
  const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

  it('puts, gets, heads, lists by prefix and deletes under its key prefix', async () => {
    const store = new S3ObjectStore({ client, bucket: BUCKET, prefix: 'tenant-a/' });
    await store.putObject('p/period=2026-10/a.txt', 'A', { contentType: 'text/plain' });
    await store.putStream('p/period=2026-11/c.txt', Readable.from([Buffer.from('C1'), Buffer.from('C2')]));
    expect(Buffer.from((await store.get('p/period=2026-11/c.txt'))!).toString()).toBe('C1C2');
    expect((await store.head('p/period=2026-10/a.txt'))?.size).toBe(1);
    expect(await store.get('p/absent')).toBeUndefined();
    expect(await listKeys(store, 'p/')).toEqual(['p/period=2026-10/a.txt', 'p/period=2026-11/c.txt']);
    await store.delete(['p/period=2026-10/a.txt', 'p/never-existed']);
    expect(await listKeys(store, 'p/')).toEqual(['p/period=2026-11/c.txt']);
  });

  it('streams a large object in parts that moto accepts (5 MiB at least but the last) and stores it byte for byte', async () => {
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 2 });
    const data = randomBytes(11 * MiB + 123);
    await store.putStream('big/object.bin', Readable.from([data.subarray(0, 3 * MiB), data.subarray(3 * MiB)]));
    expect(sha(Buffer.from((await store.get('big/object.bin'))!))).toBe(sha(data));
    expect(await uploadsLeft('big/')).toEqual([]);
  });

  it('aborts the upload when the body fails after a part went up: no object, and moto lists no upload left', async () => {
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB });
    const body = new PassThrough();
    const put = store.putStream('failed/body.bin', body);
    body.write(randomBytes(6 * MiB));
    // Until the upload exists at moto: then a part is on its way or stored.
    while ((await uploadsLeft('failed/')).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    body.destroy(new Error('the exporter gave up'));
    await expect(put).rejects.toBeInstanceOf(ObjectStoreError);
    expect(await store.head('failed/body.bin')).toBeUndefined();
    expect(await uploadsLeft('failed/')).toEqual([]);
  });

  it('abandonUploads aborts every multipart upload in flight: moto lists none after', async () => {
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 1 });
    const bodies = [new PassThrough(), new PassThrough()];
    const puts = bodies.map((body, i) => store.putStream(`abandon/${i}.bin`, body));
    for (const body of bodies) body.write(randomBytes(6 * MiB));
    while ((await uploadsLeft('abandon/')).length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.abandonUploads()).toEqual({ aborted: 2, failed: 0 });
    for (const result of await Promise.allSettled(puts)) expect(result.status).toBe('rejected');
    expect(await uploadsLeft('abandon/')).toEqual([]);
    expect(await listKeys(store, 'abandon/')).toEqual([]);
  });

  const clock = new ManualClock(Date.UTC(2026, 10, 1, 2, 0));
  const period = parsePeriod('2026-10');
  /** A run of the period through `store`; long descriptions make the transactions CSV more than one part. */
  const exportRun = (store: S3ObjectStore, runId: string) =>
    new PeriodExporter({ store, clock, logger: new MemoryLogger(), toolVersion: '0.1.0', runIds: () => runId }).run({
      company: COMPANY,
      period: period.text,
      sources: {
        categories: asAsync(CATEGORIES),
        taxReports: asAsync([taxReport(0)]),
        transactions: asAsync(transactions(16_000, (i) => ({ description: `Invoice ${i} ${'line item detail '.repeat(20)}` }))),
      },
      formats: ['jsonl', 'csv', 'parquet'],
      sourceBaseUrl: 'http://127.0.0.1:1/api/v1',
    });

  it('publishes a period in every format; moto holds exactly the bytes the manifest describes', async () => {
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 2 });
    const first = await exportRun(store, 'run-1');
    const manifest = (await readManifest(store, manifestKey(COMPANY, period)))!;
    expect(manifest.datasets.transactions?.records).toBe(16_000);
    expect(manifest.objects.length).toBe(9);
    for (const object of manifest.objects) expect(await sha256Of(store, object.key)).toBe(object.sha256);
    expect(Buffer.from((await store.get(symlinkKey(COMPANY, period, 'transactions')))!).toString()).toBe(
      `s3://${BUCKET}/${periodPrefix(COMPANY, period)}transactions/run=run-1/part-00000.parquet\n`,
    );

    const second = await exportRun(store, 'run-2');
    expect(second.manifest.objects.map((o) => o.sha256)).toEqual(first.manifest.objects.map((o) => o.sha256));
    expect((await listKeys(store, periodPrefix(COMPANY, period))).filter((k) => k.includes('run=run-1'))).toEqual([]);
    expect(await uploadsLeft('')).toEqual([]);
  }, 60_000);

  it("loses a race for the manifest to moto's conditional write (412): the other run's export stands", async () => {
    // Run B publishes between run A's last look at the manifest and A's conditional write of it:
    // only S3's If-Match / If-None-Match can tell A, and s3rver ignores both.
    const racing = moto.client();
    let rival: Promise<unknown> | undefined;
    racing.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: string; IfMatch?: string; IfNoneMatch?: string };
        if (context.commandName === 'PutObjectCommand' && input.Key === manifestKey(COMPANY, period) && rival === undefined) {
          rival = exportRun(new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB }), 'run-b');
          await rival;
        }
        return next(args);
      },
      { step: 'initialize', name: 'rivalPublishesFirst' },
    );
    const error = await exportRun(new S3ObjectStore({ client: racing, bucket: BUCKET, partSize: 5 * MiB }), 'run-a').catch(
      (e: unknown) => e,
    );
    racing.destroy();
    expect(rival).toBeDefined();
    expect((error as PeriodExportError).cause).toBeInstanceOf(ConcurrentExportError);
    const store = new S3ObjectStore({ client, bucket: BUCKET });
    expect((await readManifest(store, manifestKey(COMPANY, period)))!.runId).toBe('run-b');
    expect((await listKeys(store, periodPrefix(COMPANY, period))).filter((k) => k.includes('run=run-a'))).toEqual([]);
    expect(Buffer.from((await store.get(symlinkKey(COMPANY, period, 'transactions')))!).toString()).toContain('run=run-b');
  }, 60_000);
});
