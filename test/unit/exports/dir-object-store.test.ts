import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { ObjectStoreError, PreconditionFailedError } from '../../../src/core/exports/formats/period-errors';
import { listKeys } from '../../helpers/export-fixtures';

describe('DirObjectStore', () => {
  let root: string;
  let store: DirObjectStore;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-dir-store-'));
    store = new DirObjectStore(root);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('streams an object into place and reads it back byte for byte', async () => {
    const chunks = [Buffer.from('alpha\n'), Buffer.from('beta\n')];
    await store.putStream('a/b/c.txt', Readable.from(chunks));
    expect(Buffer.from((await store.get('a/b/c.txt'))!).toString()).toBe('alpha\nbeta\n');
    expect((await store.head('a/b/c.txt'))?.size).toBe(11);
    expect(store.url('a/b/c.txt')).toBe(`file://${join(root, 'a/b/c.txt')}`);
  });

  it('leaves nothing at the key, and no temp file, when the stream fails midway', async () => {
    await store.putObject('a/old.txt', 'previous');
    const body = new PassThrough();
    const put = store.putStream('a/old.txt', body);
    body.write('partial data that must never be visible');
    await new Promise((resolve) => setImmediate(resolve));
    body.destroy(new Error('upstream died'));
    await expect(put).rejects.toBeInstanceOf(ObjectStoreError);
    expect(Buffer.from((await store.get('a/old.txt'))!).toString()).toBe('previous');
    expect(await readdir(join(root, '.acctops-tmp'))).toEqual([]);
    expect(await listKeys(store)).toEqual(['a/old.txt']);
  });

  it('treats a body destroyed without an error as a failure, not as the end of the object', async () => {
    const body = new PassThrough();
    const put = store.putStream('x.txt', body);
    body.write('half');
    await new Promise((resolve) => setImmediate(resolve));
    body.destroy();
    await expect(put).rejects.toBeInstanceOf(ObjectStoreError);
    expect(await store.head('x.txt')).toBeUndefined();
  });

  it('honours ifNoneMatch and ifMatch, and each put changes the ETag', async () => {
    await store.putObject('m.json', '1', { ifNoneMatch: '*' });
    await expect(store.putObject('m.json', '2', { ifNoneMatch: '*' })).rejects.toBeInstanceOf(PreconditionFailedError);
    const first = await store.head('m.json');
    await store.putObject('m.json', '2', { ifMatch: first!.etag });
    const second = await store.head('m.json');
    expect(second!.etag).not.toBe(first!.etag);
    await expect(store.putObject('m.json', '3', { ifMatch: first!.etag })).rejects.toBeInstanceOf(PreconditionFailedError);
    expect(Buffer.from((await store.get('m.json'))!).toString()).toBe('2');
  });

  it('serialises concurrent conditional puts: exactly one of two racing writers wins', async () => {
    await store.putObject('m.json', '0');
    const etag = (await store.head('m.json'))!.etag;
    const results = await Promise.allSettled([
      store.putObject('m.json', 'a', { ifMatch: etag }),
      store.putObject('m.json', 'b', { ifMatch: etag }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof PreconditionFailedError)).toHaveLength(1);
  });

  it('lists by string prefix in key order and skips its staging area', async () => {
    for (const key of ['p/period=2026-10/x', 'p/period=2026-1/y', 'p/period=2026-11/z', 'q/other']) await store.putObject(key, key);
    expect(await listKeys(store, 'p/period=2026-1')).toEqual(['p/period=2026-1/y', 'p/period=2026-10/x', 'p/period=2026-11/z']);
    expect(await listKeys(store, 'p/period=2026-10/')).toEqual(['p/period=2026-10/x']);
    expect(await listKeys(store, 'nothing/')).toEqual([]);
    expect(await listKeys(store)).toEqual(['p/period=2026-1/y', 'p/period=2026-10/x', 'p/period=2026-11/z', 'q/other']);
  });

  it('deletes idempotently and prunes the emptied folders', async () => {
    await store.putObject('d/run=1/part', 'x');
    await store.delete(['d/run=1/part', 'd/run=1/absent']);
    await store.delete(['d/run=1/part']);
    expect(await store.head('d/run=1/part')).toBeUndefined();
    await expect(stat(join(root, 'd'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(root)).resolves.toBeDefined();
  });

  it('refuses keys that could escape the root or hit the staging area', async () => {
    for (const key of ['../evil', 'a/../../evil', '/abs', 'a//b', 'a\\b', '.acctops-tmp/x', '']) {
      await expect(store.putObject(key, 'x')).rejects.toMatchObject({ code: 'object_key_invalid' });
    }
  });
});
