import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
  type NativeAttributeValue,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { parseWith } from '../../core/shared/errors';
import { TOKEN_TABLE, dueShardOf } from '../../core/tokens/token-table';
import { DynamoDbTokenReader } from './dynamodb-token-reader';
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
import { lazySchema } from '../../core/shared/lazy-schema';

const KEY = TOKEN_TABLE.partitionKey.name;
const SHARD = TOKEN_TABLE.dueIndex.partitionKey.name;
const DUE_AT = TOKEN_TABLE.dueIndex.sortKey.name;

/** Every attribute but the tokens: what a listing reads. */
const SUMMARY_ATTRIBUTES = [
  'externalId',
  'username',
  'email',
  'accessTokenExpiresAt',
  'refreshedAt',
  'version',
  'status',
  'consecutiveFailures',
  'lastErrorClass',
  'lastErrorCode',
  'leaseOwner',
  'leaseUntil',
  'createdAt',
  'updatedAt',
] as const;

const dueEntrySchema = /* @__PURE__ */ lazySchema(() => z.object({ externalId: z.string().min(1), dueAt: z.int().min(0) }));
/** Per shard: null before its first query, 'done' when exhausted, else the last entry handed out. */
const dueCursorSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    shards: z.array(z.union([z.null(), z.literal('done'), z.tuple([z.int().min(0), z.string().min(1)])])).length(TOKEN_TABLE.dueShardCount),
  }),
);
type ShardPosition = z.output<typeof dueCursorSchema>['shards'][number];
const listCursorSchema = /* @__PURE__ */ lazySchema(() => z.object({ after: z.string().min(1) }));

export interface DynamoDbTokenStoreOptions {
  client: DynamoDBClient;
  tableName: string;
}

/**
 * The token store on DynamoDB. Each operation is one conditional UpdateItem or PutItem (no
 * transactions: one item holds the whole state), plus a consistent GetItem only after a failed
 * condition, to tell the caller why.
 */
export class DynamoDbTokenStore implements TokenStore {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;

  private readonly reader: DynamoDbTokenReader;

  constructor(options: DynamoDbTokenStoreOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client);
    this.tableName = options.tableName;
    this.reader = new DynamoDbTokenReader(options);
  }

  async get(externalId: string): Promise<TokenRecord | null> {
    const item = await this.readItem(externalId);
    return item ? toRecord(item) : null;
  }

  async list(request: PageRequest): Promise<Page<TokenSummary>> {
    const { limit, cursor } = parsePageRequest(request);
    const after = cursor ? decodeCursor(listCursorSchema, cursor).after : null;
    const names = Object.fromEntries(SUMMARY_ATTRIBUTES.map((name, i) => [`#a${i}`, name]));
    const out = await this.doc.send(
      new ScanCommand({
        TableName: this.tableName,
        Limit: limit,
        ProjectionExpression: Object.keys(names).join(', '),
        ExpressionAttributeNames: names,
        ExclusiveStartKey: after ? { [KEY]: after } : undefined,
      }),
    );
    const items = (out.Items ?? []).map((raw) => parseStoredSummary(raw, idOf(raw)));
    const last = out.LastEvaluatedKey?.[KEY];
    return { items, nextCursor: typeof last === 'string' ? encodeCursor({ after: last }) : null };
  }

  async create(token: NewToken, now: number): Promise<TokenRecord> {
    const item = newItem(token, now);
    // The condition below guards the lower-case key; a record the older code stored in upper case is looked for first.
    for (const key of storedKeySpellings(item.externalId).slice(1)) {
      if (await this.reader.getExact(key)) throw new TokenExistsError(item.externalId);
    }
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: withShard(item),
          ...conditionExpression({ kind: 'absent' }),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new TokenExistsError(item.externalId, error);
      throw error;
    }
    return toRecord(item);
  }

  async acquireLease(externalId: string, owner: string, leaseUntil: number, now: number): Promise<TokenRecord | null> {
    const patch = leasePatch(owner, leaseUntil, now);
    const condition: WriteCondition = { kind: 'lease_free', now };
    const result = await this.update(externalId, patch, condition);
    if (result.ok) return toRecord(result.item);
    if (result.failure === 'not_found') throw new TokenNotFoundError(externalId, result.cause);
    return null;
  }

  async saveTokens(externalId: string, tokens: IssuedTokens, guard: WriteGuard): Promise<TokenRecord> {
    const condition = guardCondition(guard);
    const result = await this.update(externalId, tokensPatch(tokens, guard.now), condition);
    if (result.ok) return toRecord(result.item);
    throw guardedWriteError(externalId, result.failure, guard.expectedVersion, result.cause);
  }

  async markStatus(externalId: string, change: StatusChange, guard: WriteGuard): Promise<TokenRecord> {
    const condition = guardCondition(guard);
    const result = await this.update(externalId, statusPatch(change, guard.now), condition);
    if (result.ok) return toRecord(result.item);
    throw guardedWriteError(externalId, result.failure, guard.expectedVersion, result.cause);
  }

  async releaseLease(externalId: string, owner: string): Promise<boolean> {
    const result = await this.update(externalId, releasePatch, { kind: 'lease_holder', owner });
    return result.ok;
  }

  /**
   * Walks the shards of the due index together: each page queries every unfinished shard from its
   * own position (limit + 1 entries, so that a shard's end is known without an extra empty page),
   * merges by dueAt and hands out the first `limit`. The cursor keeps one position per shard.
   */
  async queryDue(query: DueQuery): Promise<Page<DueToken>> {
    const { limit, cursor, until } = parseDueQuery(query);
    const positions: ShardPosition[] = cursor
      ? decodeCursor(dueCursorSchema, cursor).shards
      : Array.from({ length: TOKEN_TABLE.dueShardCount }, () => null);

    const fetched = await Promise.all(positions.map((position, shard) => this.queryShard(shard, position, until, limit + 1)));
    // Array.prototype.sort is stable: equal dueAt keep shard order, then index order within a shard.
    const merged = fetched
      .flatMap((result, shard) => result.entries.map((entry) => ({ shard, entry })))
      .sort((a, b) => a.entry.dueAt - b.entry.dueAt)
      .slice(0, limit);

    const next = positions.map((position, shard): ShardPosition => {
      const taken = merged.filter((m) => m.shard === shard);
      const result = fetched[shard]!;
      if (position === 'done' || (!result.more && taken.length === result.entries.length)) return 'done';
      const last = taken.at(-1);
      return last ? [last.entry.dueAt, last.entry.externalId] : position;
    });
    return {
      items: merged.map((m) => m.entry),
      nextCursor: next.every((p) => p === 'done') ? null : encodeCursor({ shards: next }),
    };
  }

  private async queryShard(
    shard: number,
    position: ShardPosition,
    until: number,
    limit: number,
  ): Promise<{ entries: DueToken[]; more: boolean }> {
    // A position beyond `until` (a cursor reused with an earlier `now`) has nothing left to give.
    if (position === 'done' || (position !== null && position[0] > until)) return { entries: [], more: false };
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: TOKEN_TABLE.dueIndex.name,
        KeyConditionExpression: '#shard = :shard AND #dueAt <= :until',
        ExpressionAttributeNames: { '#shard': SHARD, '#dueAt': DUE_AT },
        ExpressionAttributeValues: { ':shard': shard, ':until': until },
        ExclusiveStartKey: position ? { [SHARD]: shard, [DUE_AT]: position[0], [KEY]: position[1] } : undefined,
        Limit: limit,
      }),
    );
    const entries = (out.Items ?? []).map((raw) => {
      const entry = parseWith(dueEntrySchema, raw, 'due index entry');
      return { externalId: entry.externalId, dueAt: entry.dueAt };
    });
    return { entries, more: out.LastEvaluatedKey !== undefined };
  }

  private readItem(externalId: string): Promise<StoredTokenItem | null> {
    return this.reader.getItem(externalId);
  }

  /** The update under the first of the id's spellings that holds a record (see `storedKeySpellings`). */
  private async update(externalId: string, patch: TokenPatch, condition: WriteCondition): Promise<UpdateResult> {
    const keys = storedKeySpellings(externalId);
    let result: UpdateResult | undefined;
    for (const key of keys) {
      result = await this.updateExact(key, patch, condition);
      if (result.ok || result.failure !== 'not_found') return result;
    }
    return result!;
  }

  private async updateExact(externalId: string, patch: TokenPatch, condition: WriteCondition): Promise<UpdateResult> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [KEY]: externalId },
          ...updateExpression(withShardPatch(patch, externalId), condition),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { ok: true, item: parseStoredItem(out.Attributes, externalId) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return { ok: false, failure: conditionFailure(await this.reader.getExact(externalId), condition), cause: error };
    }
  }
}

type UpdateResult = { ok: true; item: StoredTokenItem } | { ok: false; failure: ConditionFailure | null; cause: unknown };

/** The shard travels with dueAt: set together, removed together. */
function withShard(item: StoredTokenItem): Record<string, NativeAttributeValue> {
  return item.dueAt === undefined ? item : { ...item, [SHARD]: dueShardOf(item.externalId) };
}

function withShardPatch(patch: TokenPatch, externalId: string) {
  return {
    set: patch.set.dueAt === undefined ? patch.set : { ...patch.set, [SHARD]: dueShardOf(externalId) },
    remove: patch.remove.includes('dueAt') ? [...patch.remove, SHARD] : patch.remove,
    increment: patch.increment,
  };
}

function updateExpression(patch: { set: Record<string, unknown>; remove: string[]; increment: string[] }, condition: WriteCondition) {
  const names: Record<string, string> = {};
  const values: Record<string, NativeAttributeValue> = {};
  const name = (attribute: string) => {
    names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  };
  const sets = Object.entries(patch.set).map(([attribute, value]) => {
    values[`:${attribute}`] = value;
    return `${name(attribute)} = :${attribute}`;
  });
  if (patch.increment.length > 0) values[':one'] = 1;
  for (const attribute of patch.increment) sets.push(`${name(attribute)} = ${name(attribute)} + :one`);
  const removes = patch.remove.map(name);
  const cond = conditionExpression(condition);
  const allValues = { ...values, ...cond.ExpressionAttributeValues };
  return {
    UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : '']
      .filter(Boolean)
      .join(' '),
    ConditionExpression: cond.ConditionExpression,
    ExpressionAttributeNames: { ...names, ...cond.ExpressionAttributeNames },
    // DynamoDB refuses an empty map here.
    ExpressionAttributeValues: Object.keys(allValues).length ? allValues : undefined,
  };
}

/** The DynamoDB form of a WriteCondition; `conditionFailure` is its in-memory twin. */
function conditionExpression(condition: WriteCondition): {
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues?: Record<string, NativeAttributeValue>;
} {
  switch (condition.kind) {
    case 'absent':
      return { ConditionExpression: 'attribute_not_exists(#key)', ExpressionAttributeNames: { '#key': KEY } };
    case 'lease_free':
      return {
        ConditionExpression: 'attribute_exists(#key) AND (attribute_not_exists(#leaseUntil) OR #leaseUntil <= :condNow)',
        ExpressionAttributeNames: { '#key': KEY, '#leaseUntil': 'leaseUntil' },
        ExpressionAttributeValues: { ':condNow': condition.now },
      };
    case 'lease_holder':
      return {
        ConditionExpression: '#leaseOwner = :condOwner',
        ExpressionAttributeNames: { '#leaseOwner': 'leaseOwner' },
        ExpressionAttributeValues: { ':condOwner': condition.owner },
      };
    case 'holder_at_version':
      return {
        ConditionExpression: '#version = :condVersion AND #leaseOwner = :condOwner',
        ExpressionAttributeNames: { '#version': 'version', '#leaseOwner': 'leaseOwner' },
        ExpressionAttributeValues: { ':condVersion': condition.version, ':condOwner': condition.owner },
      };
  }
}

/** The key of a raw item, for naming it in an error; a damaged key is not echoed. */
function idOf(raw: Record<string, unknown>): string {
  const id = raw[KEY];
  return typeof id === 'string' && /^[0-9a-fA-F-]{36}$/.test(id) ? id : '(unreadable key)';
}
