import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { ListMultipartUploadsCommand, type S3Client } from '@aws-sdk/client-s3';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { abandonS3Uploads } from '../../../src/adapters/aws/s3-uploads-in-flight';
import { ObjectStoreError } from '../../../src/core/exports/formats/period-errors';
import { instrumentS3, startS3, type AnsweredRequest, type LocalS3 } from '../../helpers/s3rver';

const BUCKET = 'acctops-exports';
const MiB = 1024 * 1024;

/**
 * A process about to exit (the CLI's Ctrl-C and SIGTERM step) abandons its uploads: the real SDK
 * client against s3rver, with the ListMultipartUploads and AbortMultipartUpload that s3rver lacks
 * added by the helper (`multipartUploads`), so what is left in the bucket is listed, not inferred.
 */
describe('S3ObjectStore.abandonUploads against s3rver', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startS3([BUCKET], { multipartUploads: true });
  });
  afterAll(() => s3.stop());

  const uploadsLeft = async (client: S3Client, prefix: string): Promise<string[]> =>
    ((await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads ?? [])
      .map((u) => u.Key!)
      .filter((k) => k.startsWith(prefix))
      .sort();

  /** A body that gives `bytes` as it is read and then stays open, as an export waiting on the service's next page. */
  function openBody(bytes: number): PassThrough {
    const body = new PassThrough();
    const data = randomBytes(bytes);
    void (async () => {
      for (let offset = 0; offset < data.length && !body.destroyed; offset += 256 * 1024) {
        if (!body.write(data.subarray(offset, offset + 256 * 1024)))
          await new Promise((resolve) => {
            body.once('drain', resolve);
            body.once('close', resolve);
          });
      }
    })();
    return body;
  }

  const partStored =
    (key: string, part = 1) =>
    (r: AnsweredRequest) =>
      r.method === 'PUT' && r.path === `/${BUCKET}/${key}` && r.query.partNumber === String(part) && r.status === 200;

  it('aborts every multipart upload in flight (a part still on its way too): none is left, the streams fail, none begins after', async () => {
    const client = s3.client();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const held = new Promise<void>((resolve) => (reached = resolve));
    // Holds b.bin's second part before it leaves, until abandonUploads has begun: a part in flight at the signal.
    const { commands } = instrumentS3(client);
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: string; PartNumber?: number };
        if (context.commandName === 'UploadPartCommand' && input.Key === 'abandon/b.bin' && input.PartNumber === 2) {
          reached();
          await gate;
        }
        return next(args);
      },
      { step: 'initialize', name: 'holdPartTwo' },
    );
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB, queueSize: 1 });
    const puts = [
      store.putStream('abandon/a.bin', openBody(6 * MiB)),
      store.putStream('abandon/b.bin', openBody(11 * MiB)),
      // Under one part: no multipart upload begun, nothing to abort.
      store.putStream('abandon/small.bin', openBody(1024)),
    ];
    const settled = Promise.allSettled(puts);
    await Promise.all([s3.answered(partStored('abandon/a.bin')), s3.answered(partStored('abandon/b.bin')), held]);
    expect(await uploadsLeft(client, 'abandon/')).toEqual(['abandon/a.bin', 'abandon/b.bin']);

    const abandoning = store.abandonUploads();
    release();
    expect(await abandoning).toEqual({ aborted: 2, failed: 0 });

    for (const result of await settled) expect(result).toMatchObject({ status: 'rejected', reason: expect.any(ObjectStoreError) });
    expect(await uploadsLeft(client, 'abandon/')).toEqual([]);
    expect(commands.get('AbortMultipartUploadCommand')).toBe(2);
    expect(commands.get('CompleteMultipartUploadCommand')).toBeUndefined();
    for (const key of ['abandon/a.bin', 'abandon/b.bin', 'abandon/small.bin']) expect(await store.head(key)).toBeUndefined();

    // The store is done for: a new stream fails before anything is sent.
    const created = commands.get('CreateMultipartUploadCommand');
    await expect(store.putStream('abandon/late.bin', openBody(6 * MiB))).rejects.toThrow(/upload abandoned/);
    expect(commands.get('CreateMultipartUploadCommand')).toBe(created);
  });

  it('says so when S3 refuses the abort: counted as failed, and the upload is indeed still there', async () => {
    const client = s3.client();
    instrumentS3(client, ({ command }) => command === 'AbortMultipartUploadCommand');
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB });
    const put = store.putStream('refused/a.bin', openBody(6 * MiB)).catch((e: unknown) => e);
    await s3.answered(partStored('refused/a.bin'));

    expect(await store.abandonUploads()).toEqual({ aborted: 0, failed: 1 });
    expect(await put).toBeInstanceOf(ObjectStoreError);
    expect(await uploadsLeft(client, 'refused/')).toEqual(['refused/a.bin']);
  });

  it('returns by its deadline when the abort gets no answer (a dead network), counting it failed', async () => {
    const client = s3.client();
    client.middlewareStack.add(
      (next, context) => (args) =>
        context.commandName === 'AbortMultipartUploadCommand' ? new Promise<never>(() => undefined) : next(args),
      { step: 'initialize', name: 'neverAnswerAbort' },
    );
    const store = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB });
    const put = store.putStream('silent/a.bin', openBody(6 * MiB)).catch((e: unknown) => e);
    await s3.answered(partStored('silent/a.bin'));

    const started = Date.now();
    expect(await store.abandonUploads(300)).toEqual({ aborted: 0, failed: 1 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await put).toBeInstanceOf(ObjectStoreError);
  });

  // Last: it closes uploads for the rest of this module's process, as on an exit.
  it('abandonS3Uploads abandons the uploads of every store of the process and refuses new ones in any store', async () => {
    const client = s3.client();
    const stores = [1, 2].map(() => new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB }));
    const idle = new S3ObjectStore({ client, bucket: BUCKET, partSize: 5 * MiB });
    const bodies = [openBody(6 * MiB), openBody(6 * MiB)];
    const puts = stores.map((store, i) => store.putStream(`process/${i}.bin`, bodies[i]!).catch((e: unknown) => e));
    await Promise.all([s3.answered(partStored('process/0.bin')), s3.answered(partStored('process/1.bin'))]);

    expect(await abandonS3Uploads()).toEqual({ aborted: 2, failed: 0 });
    expect(await Promise.all(puts)).toEqual([expect.any(ObjectStoreError), expect.any(ObjectStoreError)]);
    expect(await uploadsLeft(client, 'process/')).toEqual([]);
    await expect(idle.putStream('process/late.bin', openBody(10))).rejects.toThrow(/upload abandoned/);
  });
});
