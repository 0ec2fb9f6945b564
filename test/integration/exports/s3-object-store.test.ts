import { createHash, randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { ObjectStoreError } from '../../../src/core/exports/formats/period-errors';
import { listKeys } from '../../helpers/export-fixtures';
import { instrumentS3, startS3, type LocalS3 } from '../../helpers/s3rver';

const BUCKET = 'acctops-exports';
const MiB = 1024 * 1024;

describe('S3ObjectStore against s3rver', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startS3([BUCKET]);
  });
  afterAll(() => s3.stop());

  it('puts, gets, heads, lists by prefix and deletes under its key prefix', async () => {
    const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET, prefix: '/tenant-a/' });
    await store.putObject('p/period=2026-10/a.txt', 'A', { contentType: 'text/plain' });
    await store.putObject('p/period=2026-1/b.txt', Buffer.from('BB'));
    await store.putStream('p/period=2026-11/c.txt', Readable.from([Buffer.from('C1'), Buffer.from('C2')]));

    expect(Buffer.from((await store.get('p/period=2026-11/c.txt'))!).toString()).toBe('C1C2');
    expect(await store.get('p/absent')).toBeUndefined();
    expect(await store.head('p/absent')).toBeUndefined();
    expect((await store.head('p/period=2026-1/b.txt'))?.size).toBe(2);
    expect(await listKeys(store, 'p/period=2026-1')).toEqual(['p/period=2026-1/b.txt', 'p/period=2026-10/a.txt', 'p/period=2026-11/c.txt']);
    expect(store.url('p/x')).toBe(`s3://${BUCKET}/tenant-a/p/x`);

    // Seen from the bucket root, everything lives under the store's prefix.
    const root = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
    expect(await listKeys(root, 'tenant-a/p/')).toHaveLength(3);

    await store.delete(['p/period=2026-1/b.txt', 'p/period=2026-10/a.txt', 'p/never-existed']);
    expect(await listKeys(store, 'p/')).toEqual(['p/period=2026-11/c.txt']);
  });

  it('streams a large object as a multipart upload and stores it byte for byte', async () => {
    const client = s3.client();
    const { commands: counts } = instrumentS3(client);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 2 });
    const data = randomBytes(11 * MiB + 123);
    const body = new PassThrough();
    const put = store.putStream('big/object.bin', body);
    for (let offset = 0; offset < data.length; offset += 256 * 1024) {
      if (!body.write(data.subarray(offset, offset + 256 * 1024))) await new Promise((resolve) => body.once('drain', resolve));
    }
    body.end();
    await put;

    expect(counts.get('CreateMultipartUploadCommand')).toBe(1);
    expect(counts.get('UploadPartCommand')).toBe(3);
    expect(counts.get('CompleteMultipartUploadCommand')).toBe(1);
    const stored = Buffer.from((await store.get('big/object.bin'))!);
    expect(createHash('sha256').update(stored).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
  });

  it('leaves nothing visible when a part fails mid-upload', async () => {
    const client = s3.client();
    instrumentS3(client, ({ command, count }) => command === 'UploadPartCommand' && count === 2);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 1 });
    const error = await store.putStream('failed/part.bin', Readable.from([randomBytes(12 * MiB)])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect(await store.head('failed/part.bin')).toBeUndefined();
    expect(await listKeys(store, 'failed/')).toEqual([]);
  });

  it('leaves nothing visible when the body fails, even after whole parts went up', async () => {
    const client = s3.client();
    const { commands: counts } = instrumentS3(client);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB });
    const body = new PassThrough();
    const put = store.putStream('failed/body.bin', body);
    body.write(randomBytes(6 * MiB));
    while ((counts.get('UploadPartCommand') ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    body.destroy(new Error('the exporter gave up'));
    await expect(put).rejects.toBeInstanceOf(ObjectStoreError);
    expect(await store.head('failed/body.bin')).toBeUndefined();
  });

  it("stores an empty stream, and a stream of exactly one part, byte for byte; refuses parts below S3's minimum", async () => {
    const client = s3.client();
    const { commands: counts } = instrumentS3(client);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB });
    await store.putStream('edge/empty.bin', Readable.from([]));
    const exact = randomBytes(5 * MiB);
    // Odd chunk sizes, so that part boundaries fall inside chunks.
    const chunks = [];
    for (let offset = 0; offset < exact.length; offset += 333_333) chunks.push(exact.subarray(offset, offset + 333_333));
    await store.putStream('edge/exact.bin', Readable.from(chunks));

    expect((await store.get('edge/empty.bin'))?.byteLength).toBe(0);
    expect(Buffer.from((await store.get('edge/exact.bin'))!).equals(exact)).toBe(true);
    expect(counts.get('UploadPartCommand')).toBe(1);
    expect(() => new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB - 1 })).toThrow(/partSize/);
  });

  it('refuses unsafe keys before sending anything', async () => {
    const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
    await expect(store.putObject('../x', 'x')).rejects.toMatchObject({ code: 'object_key_invalid' });
  });
});
