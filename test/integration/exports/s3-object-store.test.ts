import { createHash, randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
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

  it('shares one budget of part buffers between the objects streaming through a store', async () => {
    const client = s3.client();
    const gate = holdParts(client);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 1 });
    const data = ['a', 'b', 'c'].map(() => randomBytes(15 * MiB + 1));
    const bodies = data.map(() => new PassThrough({ highWaterMark: MiB }));
    const puts = bodies.map((body, i) => store.putStream(`pool/${i}.bin`, body));
    const feed = (i: number) => {
      for (let offset = 0; offset < data[i]!.length; offset += MiB) bodies[i]!.write(data[i]!.subarray(offset, offset + MiB));
      bodies[i]!.end();
    };

    // With every part held at the gate: a and b each fill two buffers and send both (queueSize 1
    // lets an object hold two), which spends the budget of 3 objects + 1; c then waits.
    feed(0);
    await until(() => gate.held() === 2);
    feed(1);
    await until(() => gate.held() === 4);
    feed(2);
    await until(() => bodies[2]!.readableLength < data[2]!.length - MiB);
    for (let turn = 0; turn < 20; turn++) await new Promise(setImmediate);
    expect(store.partBuffers).toEqual({ allocated: 4, peak: 4, uploading: 4 });

    gate.open();
    await Promise.all(puts);
    for (const [i, bytes] of data.entries()) expect(sha256(Buffer.from((await store.get(`pool/${i}.bin`))!))).toBe(sha256(bytes));
    expect(store.partBuffers.peak).toBe(4);
    expect(store.partBuffers.uploading).toBe(0);
  });

  it('completes many objects fed by one producer with a budget smaller than their number (no deadlock)', async () => {
    const client = s3.client();
    const { commands: counts } = instrumentS3(client);
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, maxPartBuffers: 2 });
    const data = Array.from({ length: 5 }, () => randomBytes(11 * MiB + 7));
    const bodies = data.map(() => new PassThrough());
    const puts = bodies.map((body, i) => store.putStream(`many/${i}.bin`, body));
    // The exporter's shape: one loop writes each record to every format's stream in turn, so an
    // object that waits for a buffer stalls the others' filling too.
    for (let offset = 0; offset < data[0]!.length; offset += 700_000) {
      for (const [i, body] of bodies.entries()) {
        if (!body.write(data[i]!.subarray(offset, offset + 700_000))) await new Promise((resolve) => body.once('drain', resolve));
      }
    }
    for (const body of bodies) body.end();
    await Promise.all(puts);

    expect(counts.get('CompleteMultipartUploadCommand')).toBe(5);
    for (const [i, bytes] of data.entries()) expect(sha256(Buffer.from((await store.get(`many/${i}.bin`))!))).toBe(sha256(bytes));
    // Beyond the budget only while no part uploads: at most one filling buffer per object.
    expect(store.partBuffers.peak).toBeLessThanOrEqual(5);
    expect(store.partBuffers).toMatchObject({ allocated: 2, uploading: 0 });
  });

  it('aborts the object whose part failed, frees its buffers and lets the others finish', async () => {
    const client = s3.client();
    const { commands: counts } = instrumentS3(
      client,
      ({ command, key, part }) => command === 'UploadPartCommand' && key === 'mixed/bad.bin' && part === 2,
    );
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 1 });
    const good = randomBytes(16 * MiB);
    const [bad, ok] = await Promise.allSettled([
      store.putStream('mixed/bad.bin', Readable.from([randomBytes(16 * MiB)])),
      store.putStream('mixed/good.bin', Readable.from([good])),
    ]);

    expect(bad).toMatchObject({ status: 'rejected', reason: expect.any(ObjectStoreError) });
    expect(ok.status).toBe('fulfilled');
    expect(counts.get('AbortMultipartUploadCommand')).toBe(1);
    expect(await store.head('mixed/bad.bin')).toBeUndefined();
    expect(sha256(Buffer.from((await store.get('mixed/good.bin'))!))).toBe(sha256(good));
    // The failed part's buffer left the pool; the rest went back to it, trimmed to the idle budget.
    expect(store.partBuffers).toMatchObject({ allocated: 1, uploading: 0 });
    expect(store.partBuffers.peak).toBeLessThanOrEqual(3);
  });

  it('refuses unsafe keys before sending anything', async () => {
    const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
    await expect(store.putObject('../x', 'x')).rejects.toMatchObject({ code: 'object_key_invalid' });
  });
});

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Polls on the event loop until `done` holds (the s3rver round trips take real time). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Holds every UploadPart the client sends until `open()`: parts that stay in flight. */
function holdParts(client: S3Client): { held(): number; open(): void } {
  let held = 0;
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UploadPartCommand') {
        held += 1;
        await opened;
      }
      return next(args);
    },
    { step: 'initialize', name: 'acctopsHoldParts' },
  );
  return { held: () => held, open: () => release() };
}
