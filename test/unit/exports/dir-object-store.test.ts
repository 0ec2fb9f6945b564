import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { abandonLocalWrites, DirObjectStore, onLocalCommit, STALE_STAGING_MS } from '../../../src/adapters/local/dir-object-store';
import { ownIdentity, startOf } from '../../../src/adapters/local/process-identity';
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
    // No temporary file, and no staging directory left empty.
    expect(await readdir(root)).toEqual(['a']);
    expect(await listKeys(store)).toEqual(['a/old.txt']);
  });

  it('leaves no staging directory behind once its writes are done', async () => {
    await store.putObject('p/one.json', '1');
    expect(await readdir(root)).toEqual(['p']);
    await store.putStream('p/two.txt', Readable.from([Buffer.from('two')]));
    await Promise.all([store.putObject('p/three.json', '3'), store.putStream('p/four.txt', Readable.from([Buffer.from('4')]))]);
    expect((await readdir(root)).sort()).toEqual(['p']);
    expect(await listKeys(store)).toEqual(['p/four.txt', 'p/one.json', 'p/three.json', 'p/two.txt']);
  });

  it('a writer of another process finishing meanwhile does not take the staging directory from a write under way', async () => {
    // Two stores on one directory: two `acctops export --out` runs, which nothing serialises.
    const other = new DirObjectStore(root);
    const body = new PassThrough();
    const slow = store.putStream('a/slow.txt', body);
    body.write('first half, ');
    await new Promise((resolve) => setImmediate(resolve));
    await other.putObject('b/quick.json', 'done');
    expect(await readdir(join(root, '.acctops-tmp'))).toHaveLength(1);
    body.end('second half');
    await slow;
    expect(Buffer.from((await store.get('a/slow.txt'))!).toString()).toBe('first half, second half');
    expect((await readdir(root)).sort()).toEqual(['a', 'b']);
  });

  it('stores of four processes writing to one directory all succeed, and the staging directory goes at the end', async () => {
    // Each store removes the staging directory when its own write ends and it is empty, while the
    // others make it again and stage in it: a removal between their mkdir and their temporary file
    // is retried, never a failed write.
    const writer = async (name: string) => {
      const other = new DirObjectStore(root);
      for (let i = 0; i < 100; i++) {
        if (i % 2) await other.putObject(`${name}/${i}.json`, String(i));
        else await other.putStream(`${name}/${i}.txt`, Readable.from([Buffer.from(String(i))]));
      }
    };
    const results = await Promise.allSettled(['a', 'b', 'c', 'd'].map(writer));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect((await readdir(root)).sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(await listKeys(store)).toHaveLength(400);
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

  describe('staged files of other processes', () => {
    const tempDir = () => join(root, '.acctops-tmp');
    const staged = async (name: string, ageMs = 0) => {
      await mkdir(tempDir(), { recursive: true });
      await writeFile(join(tempDir(), name), 'partial');
      if (ageMs > 0) {
        const then = new Date(Date.now() - ageMs);
        await utimes(join(tempDir(), name), then, then);
      }
      return name;
    };
    const hex = 'a'.repeat(16);

    it("removes a dead writer's file and one of another process that has the pid now, at the next write", async () => {
      const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
      const deadPid = child.pid!;
      await new Promise((resolve) => child.once('exit', resolve));
      await staged(`${deadPid}-0-${hex}.part`);
      // This very process, but with another start time: the pid was reused (a container restart).
      await staged(`${process.pid}-1-${hex}.part`);
      await store.putObject('p/one.json', '1');
      expect(await readdir(root)).toEqual(['p']);
    });

    it("keeps a live writer's file (another acctops exporting into the same directory)", async () => {
      const writer = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
      try {
        const start = startOf(writer.pid!);
        const name = await staged(`${writer.pid}-${start ?? 0}-${hex}.part`, start === undefined ? 0 : STALE_STAGING_MS * 2);
        await store.putObject('p/one.json', '1');
        expect(await readdir(tempDir())).toEqual([name]);
      } finally {
        writer.kill();
      }
    });

    it('removes a file an older acctops named (no pid) once it is older than the bound, and keeps a recent one', async () => {
      await staged(`${'b'.repeat(16)}.part`, STALE_STAGING_MS + 60_000);
      const recent = await staged(`${'c'.repeat(16)}.part`);
      await store.putObject('p/one.json', '1');
      expect(await readdir(tempDir())).toEqual([recent]);
    });

    it('names its own staged files after its pid and start time', async () => {
      const body = new PassThrough();
      const put = store.putStream('s.txt', body);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const { pid, start = '0' } = ownIdentity();
      expect(await readdir(tempDir())).toEqual([expect.stringMatching(new RegExp(`^${pid}-${start}-[0-9a-f]{16}\\.part$`))]);
      body.end('x');
      await put;
    });
  });

  describe('abandonLocalWrites (a signal ends the process)', () => {
    it('removes what is staged, refuses to put it into place afterwards, and reports only what was put before', async () => {
      const committed: string[] = [];
      const stop = onLocalCommit((_store, key) => committed.push(key));
      try {
        await store.putObject('p/_manifest.json', '{}');
        const body = new PassThrough();
        const put = store.putStream('p/run=1/part-00000.csv', body);
        body.write('half of it');
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(await readdir(join(root, '.acctops-tmp'))).toHaveLength(1);

        expect(await abandonLocalWrites()).toBe(1);
        expect((await readdir(root)).sort()).toEqual(['p']);
        body.end('the rest');
        await expect(put).rejects.toBeInstanceOf(ObjectStoreError);
        await expect(store.putObject('p/later.json', '1')).rejects.toBeInstanceOf(ObjectStoreError);
        expect(await listKeys(store)).toEqual(['p/_manifest.json']);
        expect(committed).toEqual(['p/_manifest.json']);
        expect((await readdir(root)).sort()).toEqual(['p']);
      } finally {
        stop();
      }
    });
  });
});
