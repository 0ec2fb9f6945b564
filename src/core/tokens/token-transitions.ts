import * as z from 'zod';
import { ValidationError, parseWith } from '../shared/errors';
import {
  MAX_PAGE_SIZE,
  TokenNotFoundError,
  VersionConflictError,
  isStorableErrorCode,
  refreshDeadline,
  type IssuedTokens,
  type NewToken,
  type PageRequest,
  type StatusChange,
  type StoredTokenItem,
  type WriteGuard,
} from './token-store';
import { lazySchema } from '../shared/lazy-schema';
import { caseFoldedUuid } from '../shared/uuid';

/**
 * The store's semantics, written once as data so that both adapters apply the same rules: each
 * operation is a condition on the current item plus a patch. The file adapter evaluates them in
 * memory; the DynamoDB adapter turns them into a ConditionExpression and an UpdateExpression, and
 * uses `conditionFailure` to explain a ConditionalCheckFailedException. The shared contract test
 * holds the two together.
 */

export type RemovableAttribute = 'leaseOwner' | 'leaseUntil' | 'dueAt' | 'lastErrorClass' | 'lastErrorCode';
export type CountingAttribute = 'version' | 'consecutiveFailures';

export interface TokenPatch {
  set: Partial<Omit<StoredTokenItem, 'externalId' | 'version'>>;
  remove: RemovableAttribute[];
  /** Attributes that grow by one. */
  increment: CountingAttribute[];
}

export type WriteCondition =
  | { kind: 'absent' }
  /** The record exists and nobody holds an unexpired lease at `now`. */
  | { kind: 'lease_free'; now: number }
  | { kind: 'lease_holder'; owner: string }
  | { kind: 'holder_at_version'; owner: string; version: number };

export type ConditionFailure = 'exists' | 'not_found' | 'lease_held' | 'lease_not_held' | 'version_changed';

const LEASE_ATTRIBUTES: RemovableAttribute[] = ['leaseOwner', 'leaseUntil'];

const epochMs = /* @__PURE__ */ lazySchema(() => z.int().min(0));
const token = /* @__PURE__ */ lazySchema(() => z.string().min(1).max(8192));
const owner = /* @__PURE__ */ lazySchema(() => z.string().min(1).max(256));
/** A class name, not a message: a message could quote a token. */
const ERROR_CLASS = /^[A-Za-z][A-Za-z0-9_.:-]{0,127}$/;

const newTokenSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    // Every record is created under the lower-case key (decision 77).
    externalId: caseFoldedUuid,
    username: z.string().min(1).max(512),
    email: z.string().min(1).max(512),
    accessToken: token,
    refreshToken: token,
    accessTokenExpiresAt: epochMs,
  }),
);
const issuedTokensSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({ accessToken: token, refreshToken: token, accessTokenExpiresAt: epochMs }),
);
const statusChangeSchema = /* @__PURE__ */ lazySchema(() =>
  z.discriminatedUnion('status', [
    z.object({ status: z.literal('needs_attention'), errorClass: z.string(), errorCode: z.string().optional() }),
    z.object({ status: z.literal('revoked') }),
  ]),
);
const guardSchema = /* @__PURE__ */ lazySchema(() => z.object({ expectedVersion: z.int().min(1), owner, now: epochMs }));
const leaseSchema = /* @__PURE__ */ lazySchema(() => z.object({ owner, leaseUntil: epochMs, now: epochMs }));
const pageRequestSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    limit: z.int().min(1).max(MAX_PAGE_SIZE),
    cursor: z.string().min(1).max(16384).nullish(),
  }),
);
const dueQuerySchema = /* @__PURE__ */ lazySchema(() => pageRequestSchema.extend({ now: epochMs, marginMs: z.int().min(0) }));

export function newItem(input: NewToken, now: number): StoredTokenItem {
  const fields = parseWith(newTokenSchema, input, 'new token record');
  const at = parseWith(epochMs, now, 'now');
  const item: StoredTokenItem = {
    ...fields,
    refreshedAt: at,
    version: 1,
    status: 'active',
    consecutiveFailures: 0,
    createdAt: at,
    updatedAt: at,
  };
  return { ...item, dueAt: refreshDeadline(item) };
}

export function leasePatch(owner: string, leaseUntil: number, now: number): TokenPatch {
  const lease = parseWith(leaseSchema, { owner, leaseUntil, now }, 'lease request');
  if (lease.leaseUntil <= lease.now) {
    throw new ValidationError('lease request', [{ path: 'leaseUntil', message: 'must be after now' }]);
  }
  return { set: { leaseOwner: lease.owner, leaseUntil: lease.leaseUntil }, remove: [], increment: [] };
}

export const releasePatch: TokenPatch = { set: {}, remove: LEASE_ATTRIBUTES, increment: [] };

/** `now` comes from a guard already validated by `guardCondition`. */
export function tokensPatch(tokens: IssuedTokens, now: number): TokenPatch {
  const pair = parseWith(issuedTokensSchema, tokens, 'issued tokens');
  return {
    set: {
      ...pair,
      refreshedAt: now,
      updatedAt: now,
      status: 'active',
      consecutiveFailures: 0,
      dueAt: refreshDeadline({ accessTokenExpiresAt: pair.accessTokenExpiresAt, refreshedAt: now }),
    },
    // A stored pair ends the failure the last error described: kept, it would read as current.
    remove: [...LEASE_ATTRIBUTES, 'lastErrorClass', 'lastErrorCode'],
    increment: ['version'],
  };
}

/** `now` comes from a guard already validated by `guardCondition`. */
export function statusPatch(change: StatusChange, now: number): TokenPatch {
  const parsed = parseWith(statusChangeSchema, change, 'status change');
  if (parsed.status === 'needs_attention' && !ERROR_CLASS.test(parsed.errorClass)) {
    throw new ValidationError('status change', [{ path: 'errorClass', message: 'expected an error class name such as InvalidGrantError' }]);
  }
  if (parsed.status === 'needs_attention' && parsed.errorCode !== undefined && !isStorableErrorCode(parsed.errorCode)) {
    throw new ValidationError('status change', [{ path: 'errorCode', message: 'expected an error code such as user_disabled' }]);
  }
  // Dropping dueAt takes the record out of the sparse due index.
  const remove: RemovableAttribute[] = [...LEASE_ATTRIBUTES, 'dueAt'];
  if (parsed.status === 'needs_attention') {
    const { errorCode } = parsed;
    return {
      set: {
        status: parsed.status,
        lastErrorClass: parsed.errorClass,
        ...(errorCode === undefined ? {} : { lastErrorCode: errorCode }),
        updatedAt: now,
      },
      remove: errorCode === undefined ? [...remove, 'lastErrorCode'] : remove,
      increment: ['version', 'consecutiveFailures'],
    };
  }
  return { set: { status: parsed.status, updatedAt: now }, remove, increment: ['version'] };
}

/** The condition of a write under a lease, validated. */
export function guardCondition(guard: WriteGuard): WriteCondition {
  const parsed = parseWith(guardSchema, guard, 'write guard');
  return { kind: 'holder_at_version', owner: parsed.owner, version: parsed.expectedVersion };
}

export function applyPatch(item: StoredTokenItem, patch: TokenPatch): StoredTokenItem {
  const next: StoredTokenItem = { ...item, ...patch.set };
  for (const name of patch.remove) delete next[name];
  for (const name of patch.increment) next[name] += 1;
  return next;
}

/** Why `condition` does not hold for `item` (null: the record is absent), or null when it holds. */
export function conditionFailure(item: StoredTokenItem | null, condition: WriteCondition): ConditionFailure | null {
  if (condition.kind === 'absent') return item ? 'exists' : null;
  if (!item) return 'not_found';
  switch (condition.kind) {
    case 'lease_free':
      return item.leaseUntil !== undefined && item.leaseUntil > condition.now ? 'lease_held' : null;
    case 'lease_holder':
      return item.leaseOwner === condition.owner ? null : 'lease_not_held';
    case 'holder_at_version':
      if (item.version !== condition.version) return 'version_changed';
      return item.leaseOwner === condition.owner ? null : 'lease_not_held';
  }
}

/**
 * The typed error for a failed guarded write (saveTokens, markStatus). When the DynamoDB adapter
 * explains a failure after the fact and finds the condition holding again, only a version that
 * moved (the lease cannot come back to its owner on its own) can have broken it.
 */
export function guardedWriteError(
  externalId: string,
  failure: ConditionFailure | null,
  expectedVersion: number,
  cause?: unknown,
): TokenNotFoundError | VersionConflictError {
  if (failure === 'not_found') return new TokenNotFoundError(externalId, cause);
  const reason = failure === 'lease_not_held' ? 'lease_not_held' : 'version_changed';
  return new VersionConflictError(externalId, { reason, expectedVersion }, cause);
}

export function parsePageRequest(request: PageRequest): { limit: number; cursor: string | null } {
  const parsed = parseWith(pageRequestSchema, request, 'page request');
  return { limit: parsed.limit, cursor: parsed.cursor ?? null };
}

export function parseDueQuery(query: PageRequest & { now: number; marginMs: number }) {
  const parsed = parseWith(dueQuerySchema, query, 'due query');
  return { ...parsed, cursor: parsed.cursor ?? null, until: parsed.now + parsed.marginMs };
}

/** Cursors are opaque to callers: base64url JSON of an adapter's position. */
export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
}

export function decodeCursor<S extends z.ZodType>(schema: S, cursor: string): z.output<S> {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (error) {
    throw new ValidationError('page request', [{ path: 'cursor', message: 'not a cursor of this store' }], error);
  }
  const result = schema.safeParse(decoded);
  if (!result.success) {
    throw new ValidationError('page request', [{ path: 'cursor', message: 'not a cursor of this store' }]);
  }
  return result.data;
}
