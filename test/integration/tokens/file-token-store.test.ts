import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { ManualClock } from '../../../src/core/shared/clock';
import { TokenExistsError, TokenNotFoundError } from '../../../src/core/tokens/token-store';
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

/**
 * A key of mixed case (a hand-typed id, a hand-edited file): the spellings of decision 77 miss it,
 * so the file store looks through the keys it has read (decision 83). Not in the shared contract:
 * DynamoDB cannot look through its keys without a scan.
 */
describe('FileTokenStore: a record stored under a mixed-case external_id', () => {
  const clock = new ManualClock();
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await tempDir();
    path = join(dir, 'tokens.json');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const mixedCase = (id: string) => [...id].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
  const keys = async () => Object.keys((JSON.parse(await readFile(path, 'utf8')) as { records: Record<string, unknown> }).records);
  /** Moves a record under exactly `key`, as a hand edit of the file does. */
  const rekey = async (externalId: string, key: string) => {
    const file = JSON.parse(await readFile(path, 'utf8')) as { records: Record<string, Record<string, unknown>> };
    file.records[key] = { ...file.records[externalId], externalId: key };
    delete file.records[externalId];
    await writeFile(path, JSON.stringify(file));
  };
  const newToken = (externalId: string) => ({
    externalId,
    username: 'ada',
    email: 'ada@example.test',
    accessToken: `canary-access-${randomUUID()}`,
    refreshToken: `canary-refresh-${randomUUID()}`,
    accessTokenExpiresAt: clock.now() + 30 * 60_000,
  });

  // Fixed ids: a random one could have its letters only where mixedCase upper-cases them.
  const lower = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

  it('is found by the id in any case, written in place under its key, and not created twice', async () => {
    const mixed = mixedCase(lower);
    expect(mixed).not.toBe(lower);
    expect(mixed).not.toBe(lower.toUpperCase());
    const store = new FileTokenStore({ path });
    await store.create(newToken(lower), clock.now());
    await rekey(lower, mixed);

    for (const id of [lower, lower.toUpperCase(), mixed]) expect(await store.get(id)).toMatchObject({ externalId: mixed });
    await expect(store.create(newToken(lower.toUpperCase()), clock.now())).rejects.toBeInstanceOf(TokenExistsError);

    const leased = await store.acquireLease(lower, 'worker-a', clock.now() + 60_000, clock.now());
    expect(leased).toMatchObject({ externalId: mixed, leaseOwner: 'worker-a' });
    const saved = await store.saveTokens(lower.toUpperCase(), newToken(lower), { expectedVersion: 1, owner: 'worker-a', now: clock.now() });
    expect(saved).toMatchObject({ externalId: mixed, version: 2, leaseOwner: null });
    await store.acquireLease(lower, 'worker-b', clock.now() + 60_000, clock.now());
    expect(await store.markStatus(lower, { status: 'revoked' }, { expectedVersion: 2, owner: 'worker-b', now: clock.now() })).toMatchObject(
      {
        externalId: mixed,
        status: 'revoked',
      },
    );
    expect(await keys()).toEqual([mixed]);
  });

  it('another id is still not found, and two keys of one id in different mixed cases are refused, not one picked', async () => {
    const store = new FileTokenStore({ path });
    const other = randomUUID();
    await store.create(newToken(lower), clock.now());
    await store.create(newToken(other), clock.now());
    await rekey(lower, mixedCase(lower));
    await expect(store.acquireLease(randomUUID(), 'worker-a', clock.now() + 60_000, clock.now())).rejects.toBeInstanceOf(
      TokenNotFoundError,
    );

    const swapped = [...lower].map((c, i) => (i % 2 ? c : c.toUpperCase())).join('');
    const file = JSON.parse(await readFile(path, 'utf8')) as { records: Record<string, Record<string, unknown>> };
    file.records[swapped] = { ...file.records[mixedCase(lower)], externalId: swapped };
    await writeFile(path, JSON.stringify(file));
    const error = await store.get(lower).catch((e: unknown) => e as ValidationError);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).message).toContain(`external_id ${lower} is the key of 2 records`);
    expect(await store.get(other)).toMatchObject({ externalId: other });
  });
});
