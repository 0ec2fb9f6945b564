import { resolve } from 'node:path';
import * as z from 'zod';
import {
  TokenExistsError,
  TokenNotFoundError,
  storedKeySpellings,
  type DueQuery,
  type DueToken,
  type IssuedTokens,
  type NewToken,
  type Page,
  type PageRequest,
  type StatusChange,
  type StoredTokenItem,
  type TokenRecord,
  type TokenStore,
  type TokenSummary,
  type WriteGuard,
} from '../../core/tokens/token-store';
import {
  applyPatch,
  conditionFailure,
  decodeCursor,
  encodeCursor,
  guardCondition,
  guardedWriteError,
  leasePatch,
  newItem,
  parseDueQuery,
  parsePageRequest,
  releasePatch,
  statusPatch,
  tokensPatch,
  type ConditionFailure,
  type TokenPatch,
  type WriteCondition,
} from '../../core/tokens/token-transitions';
import { parseStoredItem, parseStoredSummary, toRecord } from '../../core/tokens/token-item';
import { readJsonFile, writePrivateJsonFile } from './private-json-file';
import { lazySchema } from '../../core/shared/lazy-schema';
import { ValidationError } from '../../core/shared/errors';
import { foldUuid } from '../../core/shared/uuid';

const FORMAT = 'acctops.token-store';

const fileSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    format: z.literal(FORMAT),
    formatVersion: z.literal(1),
    records: z.record(z.string(), z.unknown()),
  }),
);
type TokenFile = z.output<typeof fileSchema>;

/** What the due index holds: only items that carry a valid dueAt, as DynamoDB's sparse index. */
const dueEntrySchema = /* @__PURE__ */ lazySchema(() => z.object({ dueAt: z.int().min(0) }));
const dueCursorSchema = /* @__PURE__ */ lazySchema(() => z.object({ after: z.tuple([z.int().min(0), z.string().min(1)]) }));
const listCursorSchema = /* @__PURE__ */ lazySchema(() => z.object({ after: z.string().min(1) }));

export interface FileTokenStoreOptions {
  /** The JSON file. A missing directory is created with mode 0700; an existing one is left as it is. */
  path: string;
}

/**
 * The token store of the local embedded mode: every record in one JSON file, mode 0600.
 *
 * Same semantics as the DynamoDB store (the shared contract test proves it), and one more: a record
 * stored under a mixed-case id is found by the id in any case (`storedKeyOf`), which DynamoDB could
 * do only with a scan. The conditions and patches of token-transitions are evaluated in memory. Each change reads the file, applies one
 * patch and replaces the file atomically (temporary file, fsync, rename), under a mutex per file
 * path that every instance in this process shares.
 *
 * Safe for ONE process: two processes writing the same file can lose each other's changes and
 * break single-flight. Run one CLI, demo or embedded worker per file.
 */
export class FileTokenStore implements TokenStore {
  readonly path: string;

  constructor(options: FileTokenStoreOptions) {
    this.path = resolve(options.path);
  }

  async get(externalId: string): Promise<TokenRecord | null> {
    const { records } = await this.load();
    const key = storedKeyOf(records, externalId, this.path);
    return key === undefined ? null : toRecord(parseStoredItem(records[key], key));
  }

  async list(request: PageRequest): Promise<Page<TokenSummary>> {
    const { limit, cursor } = parsePageRequest(request);
    const after = cursor ? decodeCursor(listCursorSchema, cursor).after : null;
    const { records } = await this.load();
    const ids = Object.keys(records)
      .sort()
      .filter((id) => after === null || id > after);
    const page = ids.slice(0, limit);
    return {
      items: page.map((id) => parseStoredSummary(records[id], id)),
      nextCursor: ids.length > limit ? encodeCursor({ after: page.at(-1) }) : null,
    };
  }

  async create(token: NewToken, now: number): Promise<TokenRecord> {
    const item = newItem(token, now);
    return this.withFile(async (file) => {
      if (storedKeyOf(file.records, item.externalId, this.path) !== undefined) throw new TokenExistsError(item.externalId);
      file.records[item.externalId] = item;
      await this.save(file);
      return toRecord(item);
    });
  }

  async acquireLease(externalId: string, owner: string, leaseUntil: number, now: number): Promise<TokenRecord | null> {
    const result = await this.update(externalId, leasePatch(owner, leaseUntil, now), { kind: 'lease_free', now });
    if (result.ok) return toRecord(result.item);
    if (result.failure === 'not_found') throw new TokenNotFoundError(externalId);
    return null;
  }

  async saveTokens(externalId: string, tokens: IssuedTokens, guard: WriteGuard): Promise<TokenRecord> {
    const condition = guardCondition(guard);
    const result = await this.update(externalId, tokensPatch(tokens, guard.now), condition);
    if (result.ok) return toRecord(result.item);
    throw guardedWriteError(externalId, result.failure, guard.expectedVersion);
  }

  async markStatus(externalId: string, change: StatusChange, guard: WriteGuard): Promise<TokenRecord> {
    const condition = guardCondition(guard);
    const result = await this.update(externalId, statusPatch(change, guard.now), condition);
    if (result.ok) return toRecord(result.item);
    throw guardedWriteError(externalId, result.failure, guard.expectedVersion);
  }

  async releaseLease(externalId: string, owner: string): Promise<boolean> {
    return (await this.update(externalId, releasePatch, { kind: 'lease_holder', owner })).ok;
  }

  async queryDue(query: DueQuery): Promise<Page<DueToken>> {
    const { limit, cursor, until } = parseDueQuery(query);
    const after = cursor ? decodeCursor(dueCursorSchema, cursor).after : null;
    const due: DueToken[] = [];
    for (const [externalId, raw] of Object.entries((await this.load()).records)) {
      const entry = dueEntrySchema.safeParse(raw);
      if (entry.success && entry.data.dueAt <= until) due.push({ externalId, dueAt: entry.data.dueAt });
    }
    const remaining = due
      .sort((a, b) => a.dueAt - b.dueAt || compare(a.externalId, b.externalId))
      .filter((d) => after === null || d.dueAt > after[0] || (d.dueAt === after[0] && d.externalId > after[1]));
    const items = remaining.slice(0, limit);
    const last = items.at(-1);
    return {
      items,
      nextCursor: remaining.length > limit && last ? encodeCursor({ after: [last.dueAt, last.externalId] }) : null,
    };
  }

  private update(
    externalId: string,
    patch: TokenPatch,
    condition: WriteCondition,
  ): Promise<{ ok: true; item: StoredTokenItem } | { ok: false; failure: ConditionFailure }> {
    return this.withFile(async (file) => {
      const key = storedKeyOf(file.records, externalId, this.path);
      const item = key === undefined ? null : parseStoredItem(file.records[key], key);
      const failure = conditionFailure(item, condition);
      if (failure || !item || key === undefined) return { ok: false, failure: failure ?? 'not_found' };
      const next = applyPatch(item, patch);
      file.records[key] = next;
      await this.save(file);
      return { ok: true, item: next };
    });
  }

  /** Runs `change` on a fresh read of the file, holding this file's mutex. */
  private withFile<T>(change: (file: TokenFile) => Promise<T>): Promise<T> {
    return withLock(this.path, async () => change(await this.load()));
  }

  private async load(): Promise<TokenFile> {
    return (await readJsonFile(this.path, fileSchema, `token file ${this.path}`)) ?? { format: FORMAT, formatVersion: 1, records: {} };
  }

  private save(file: TokenFile): Promise<void> {
    return writePrivateJsonFile(this.path, file, { pretty: true });
  }
}

/**
 * The key of the record of `externalId`, or undefined: the first of the id's spellings that holds
 * one (see `storedKeySpellings`), else the one key that is the id in another case. That last look
 * finds a key of mixed case, which a hand-typed id or a hand-edited file made and which the
 * spellings miss (decision 83). It runs only on a miss, over records already read, so it costs no
 * read; the key is kept as it is, since the service may know the user only by that spelling. Two
 * such keys for one id are refused: acting on either would leave the other behind unseen.
 */
function storedKeyOf(records: TokenFile['records'], externalId: string, path: string): string | undefined {
  const spelled = storedKeySpellings(externalId).find((key) => Object.hasOwn(records, key));
  if (spelled !== undefined) return spelled;
  const folded = foldUuid(externalId);
  const matches = Object.keys(records).filter((key) => foldUuid(key) === folded);
  if (matches.length > 1) {
    throw new ValidationError(`token file ${path}`, [
      {
        path: `records.${matches[0]}`,
        message: `external_id ${folded} is the key of ${matches.length} records, spelled ${matches.join(', ')}; keep one of them`,
      },
    ]);
  }
  return matches[0];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One queue per file path, shared by every FileTokenStore of this process. */
const queues = new Map<string, Promise<unknown>>();

async function withLock<T>(key: string, task: () => Promise<T>): Promise<T> {
  const previous = queues.get(key) ?? Promise.resolve();
  const run = previous.then(task);
  const tail = run.catch(() => undefined);
  queues.set(key, tail);
  try {
    return await run;
  } finally {
    if (queues.get(key) === tail) queues.delete(key);
  }
}
