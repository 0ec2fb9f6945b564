import { resolve } from 'node:path';
import * as z from 'zod';
import { type Revocation, type RevocationQueue, revocationSchema } from '../../core/api-keys';
import { parseWith } from '../../core/shared/errors';
import { readJsonFile, writePrivateJsonFile } from './private-json-file';
import { lazySchema } from '../../core/shared/lazy-schema';

const FORMAT = 'acctops.revocation-queue';

const fileSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    format: z.literal(FORMAT),
    formatVersion: z.literal(1),
    revocations: z.array(revocationSchema),
  }),
);
type QueueFile = z.output<typeof fileSchema>;

/**
 * Queue semantics shared by both local queues: one entry per key; scheduling a key again keeps
 * the later of the two times, so that a retried finishSecret cannot pull a revocation forward.
 */
abstract class LocalRevocationQueue implements RevocationQueue {
  protected abstract load(): Promise<Revocation[]>;
  protected abstract save(revocations: Revocation[]): Promise<void>;
  protected abstract exclusive<T>(task: () => Promise<T>): Promise<T>;

  async schedule(revocation: Revocation): Promise<void> {
    const entry = parseWith(revocationSchema, revocation, 'revocation');
    await this.exclusive(async () => {
      const list = await this.load();
      const existing = list.find((r) => r.apiKeyId === entry.apiKeyId);
      if (existing && existing.revokeAt >= entry.revokeAt) return;
      await this.save([...list.filter((r) => r.apiKeyId !== entry.apiKeyId), existing ? { ...existing, revokeAt: entry.revokeAt } : entry]);
    });
  }

  async *pending(): AsyncIterable<Revocation> {
    for (const revocation of await this.exclusive(() => this.load())) yield revocation;
  }

  async due(now: number): Promise<Revocation[]> {
    const list = await this.exclusive(() => this.load());
    return list.filter((r) => r.revokeAt <= now).sort((a, b) => a.revokeAt - b.revokeAt);
  }

  complete(apiKeyId: string): Promise<void> {
    return this.exclusive(async () => {
      const list = await this.load();
      if (list.some((r) => r.apiKeyId === apiKeyId)) await this.save(list.filter((r) => r.apiKeyId !== apiKeyId));
    });
  }
}

/** In memory: for tests and a demo that does not need to survive a restart. */
export class MemoryRevocationQueue extends LocalRevocationQueue {
  private revocations: Revocation[] = [];
  private tail: Promise<unknown> = Promise.resolve();

  protected load(): Promise<Revocation[]> {
    return Promise.resolve(this.revocations.map((r) => ({ ...r })));
  }

  protected save(revocations: Revocation[]): Promise<void> {
    this.revocations = revocations.map((r) => ({ ...r }));
    return Promise.resolve();
  }

  protected exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(task);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

/**
 * The local mode's durable revocation queue: one JSON file (mode 0600, directory 0700), replaced
 * atomically (temporary file, fsync, rename) on every change, so a revocation scheduled before a
 * crash or a restart of the CLI is still there. It holds key ids and prefixes, never a key.
 * Safe for one process, like the file token store.
 */
export class FileRevocationQueue extends LocalRevocationQueue {
  readonly path: string;

  constructor(options: { path: string }) {
    super();
    this.path = resolve(options.path);
  }

  protected async load(): Promise<Revocation[]> {
    return (await readJsonFile(this.path, fileSchema, `revocation queue ${this.path}`))?.revocations ?? [];
  }

  protected save(revocations: Revocation[]): Promise<void> {
    const file: QueueFile = { format: FORMAT, formatVersion: 1, revocations };
    return writePrivateJsonFile(this.path, file, { pretty: true });
  }

  protected exclusive<T>(task: () => Promise<T>): Promise<T> {
    return withLock(this.path, task);
  }
}

/** One queue per file path, shared by every FileRevocationQueue of this process. */
const locks = new Map<string, Promise<unknown>>();

async function withLock<T>(key: string, task: () => Promise<T>): Promise<T> {
  const previous = locks.get(key) ?? Promise.resolve();
  const run = previous.then(task);
  const tail = run.catch(() => undefined);
  locks.set(key, tail);
  try {
    return await run;
  } finally {
    if (locks.get(key) === tail) locks.delete(key);
  }
}
