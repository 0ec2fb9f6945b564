import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import { tokenStoreContract } from './token-store-contract';

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'acctops-tokens-'));
}

tokenStoreContract('FileTokenStore', async () => {
  const dir = await tempDir();
  const path = join(dir, 'state', 'tokens.json');
  return {
    store: new FileTokenStore({ path }),
    corrupt: async (externalId, attribute, value) => {
      const file = JSON.parse(await readFile(path, 'utf8')) as { records: Record<string, Record<string, unknown>> };
      file.records[externalId]![attribute] = value;
      await writeFile(path, JSON.stringify(file));
    },
    rekey: async (externalId, key) => {
      const file = JSON.parse(await readFile(path, 'utf8')) as { records: Record<string, Record<string, unknown>> };
      file.records[key] = { ...file.records[externalId], externalId: key };
      delete file.records[externalId];
      await writeFile(path, JSON.stringify(file));
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('FileTokenStore: the file', () => {
  const clock = new ManualClock();
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const newToken = () => ({
    externalId: randomUUID(),
    username: 'ada',
    email: 'ada@example.test',
    accessToken: `canary-access-${randomUUID()}`,
    refreshToken: `canary-refresh-${randomUUID()}`,
    accessTokenExpiresAt: clock.now() + 30 * 60_000,
  });

  it('is created with mode 0600 in a directory created with mode 0700, and stays 0600 after rewrites', async () => {
    const path = join(dir, 'nested', 'tokens.json');
    const store = new FileTokenStore({ path });
    const { externalId } = await store.create(newToken(), clock.now());
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'nested'))).mode & 0o777).toBe(0o700);
    await store.acquireLease(externalId, 'worker-a', clock.now() + 60_000, clock.now());
    await store.releaseLease(externalId, 'worker-a');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('replaces the file atomically and leaves no temporary files behind', async () => {
    const path = join(dir, 'tokens.json');
    const store = new FileTokenStore({ path });
    await Promise.all(Array.from({ length: 10 }, () => store.create(newToken(), clock.now())));
    expect(await readdir(dir)).toEqual(['tokens.json']);
    const file = JSON.parse(await readFile(path, 'utf8')) as { records: Record<string, unknown> };
    expect(Object.keys(file.records)).toHaveLength(10);
  });

  it('keeps single-flight across two instances on the same file in one process', async () => {
    const path = join(dir, 'tokens.json');
    const a = new FileTokenStore({ path });
    const b = new FileTokenStore({ path: join(dir, '.', 'tokens.json') });
    const { externalId } = await a.create(newToken(), clock.now());
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).acquireLease(externalId, `worker-${i}`, clock.now() + 60_000, clock.now())),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });

  it('reads a missing file as an empty store without creating it', async () => {
    const path = join(dir, 'absent', 'tokens.json');
    const store = new FileTokenStore({ path });
    expect(await store.list({ limit: 10 })).toEqual({ items: [], nextCursor: null });
    expect(await store.get(randomUUID())).toBeNull();
    expect(await readdir(dir)).toEqual([]);
  });

  it('refuses a file that is not JSON without quoting it', async () => {
    const path = join(dir, 'tokens.json');
    const canary = `canary-refresh-${randomUUID()}`;
    await writeFile(path, `{"records": {"x": {"refreshToken": "${canary}"`, { mode: 0o600 });
    const store = new FileTokenStore({ path });
    const error = await store.get(randomUUID()).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain('not valid JSON');
    expect((error as Error).message).not.toContain(canary);
    expect((error as ValidationError).cause).toBeUndefined();
  });

  it('refuses a JSON file of another shape, naming the field', async () => {
    const path = join(dir, 'tokens.json');
    await writeFile(path, JSON.stringify({ format: 'acctops.token-store', formatVersion: 2, records: {} }), { mode: 0o600 });
    const error = await new FileTokenStore({ path }).list({ limit: 1 }).catch((e: unknown) => e as ValidationError);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('formatVersion');
  });
});
