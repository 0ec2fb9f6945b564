import * as z from 'zod';
import { AcctopsError } from '../shared/errors';
import { lazySchema } from '../shared/lazy-schema';
import { isShortIdentifier } from '../shared/redact';
import { foldUuid } from '../shared/uuid';

/**
 * The user-token store: one record per institution user, keyed by the service's `external_id`.
 *
 * The port is shaped for the single-flight refresh flow:
 *   acquireLease -> (refresh or retrieve at the service) -> saveTokens | markStatus | releaseLease
 * Every change to an existing record happens under the caller's lease and is a compare-and-swap on
 * `version`; saveTokens and markStatus end the lease in the same write, so a record is never left
 * leased after a successful outcome. Expected contention (someone else holds the lease) is a return
 * value; a write that lost its race is an error, because the caller may be holding freshly rotated
 * tokens that can no longer be stored.
 *
 * Times are epoch milliseconds passed in by the caller (from the `Clock` port), never read by the
 * store, so that tests drive expiry and leases with a ManualClock.
 */

export const TOKEN_STATUSES = ['active', 'needs_attention', 'revoked'] as const;
export type TokenStatus = (typeof TOKEN_STATUSES)[number];

/**
 * Keep-alive: a token is refreshed at the latest this long after its last refresh, so that the
 * service never drops an idle refresh token. Part of the stored `dueAt`, so a change applies to
 * each record at its next write.
 */
export const KEEP_ALIVE_MS = 24 * 60 * 60 * 1000;

/** Largest page `list` and `queryDue` return. */
export const MAX_PAGE_SIZE = 1000;

export interface TokenRecord {
  /**
   * The service's `external_id` (a UUID): the record's key, and the spelling the service is sent.
   * Lower case, except in a record stored as typed before decision 77 (see `storedKeySpellings`).
   */
  externalId: string;
  username: string;
  email: string;
  accessToken: string;
  refreshToken: string;
  /** When the access token expires (epoch ms). */
  accessTokenExpiresAt: number;
  /** When the current pair was obtained (create, refresh or retrieve). */
  refreshedAt: number;
  /** Starts at 1; every change except taking or releasing a lease adds 1. */
  version: number;
  /** Who holds the lease, if anyone; a lease whose `leaseUntil` has passed is free to take. */
  leaseOwner: string | null;
  leaseUntil: number | null;
  status: TokenStatus;
  /** Failures since the last successful save of a pair; reset by saveTokens. */
  consecutiveFailures: number;
  /** Class of the error markStatus recorded; cleared by saveTokens, so it is never a stale one. */
  lastErrorClass: string | null;
  /**
   * Its code: the service's (`user_disabled`) where it gave one, else ours (`not_found`); null when
   * none was recorded (and for items stored before codes were).
   */
  lastErrorCode: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What `list` returns: a record without its tokens, so that a CLI listing cannot print them. */
export type TokenSummary = Omit<TokenRecord, 'accessToken' | 'refreshToken'>;

/** A newly onboarded user and the pair the service issued for it. */
export interface NewToken {
  externalId: string;
  username: string;
  email: string;
  accessToken: string;
  refreshToken: string;
  accessTokenExpiresAt: number;
}

/** A pair from refresh or retrieve. */
export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  accessTokenExpiresAt: number;
}

/**
 * A failure that needs a human (`errorClass` is a class name such as `InvalidGrantError`, `errorCode`
 * its code, see `isStorableErrorCode`), or a revocation.
 */
export type StatusChange = { status: 'needs_attention'; errorClass: string; errorCode?: string } | { status: 'revoked' };

/**
 * A code the store keeps: a short identifier (`user_disabled`, `token_not_valid`). The service's code
 * is its text, so anything else (a long alphanumeric run or a key's shape could be a pasted key) is
 * not stored. The rule is the one the client holds the service's error codes to (`isShortIdentifier`).
 */
export function isStorableErrorCode(code: string): boolean {
  return isShortIdentifier(code);
}

/** The compare-and-swap guard of a write under a lease. */
export interface WriteGuard {
  /** The `version` of the record as returned by acquireLease. */
  expectedVersion: number;
  /** The lease owner that acquireLease was called with. */
  owner: string;
  now: number;
}

export interface PageRequest {
  /** 1 to MAX_PAGE_SIZE. */
  limit: number;
  /** `nextCursor` of the previous page; absent or null for the first page. */
  cursor?: string | null;
}

export interface DueQuery extends PageRequest {
  now: number;
  /** Refresh this long before a deadline (the access token's expiry or the keep-alive). */
  marginMs: number;
}

export interface Page<T> {
  items: T[];
  /** Null when there is nothing after this page. */
  nextCursor: string | null;
}

/** An entry of the due index: enough for the planner to enqueue, no tokens. */
export interface DueToken {
  externalId: string;
  /** The record's refresh deadline (see `refreshDeadline`). */
  dueAt: number;
}

/**
 * The keys a record of `externalId` may be stored under, in the order a store looks them up: the
 * lower-case key every record is created under since decision 77, then the upper-case one of a
 * record the older code stored as an operator typed it, then `externalId` as given (the key a
 * listing or the due index handed out, whatever its case). A lookup by an id in another case
 * misses only a record stored in mixed case, which nothing but a hand-typed id of mixed case made;
 * the file store then looks through the keys it has read (decision 83), DynamoDB does not.
 */
export function storedKeySpellings(externalId: string): string[] {
  return [...new Set([foldUuid(externalId), externalId.toUpperCase(), externalId])];
}

/**
 * Every method that takes an `externalId` finds the record whatever the case of the id (see
 * `storedKeySpellings`); `create` stores it under the lower-case key.
 */
export interface TokenStore {
  /** The record, read strongly consistently; null when absent. */
  get(externalId: string): Promise<TokenRecord | null>;

  /** Every record without its tokens, page by page, in no particular order. */
  list(page: PageRequest): Promise<Page<TokenSummary>>;

  /** Stores a new user at version 1, `active`. Throws TokenExistsError when the key is taken. */
  create(token: NewToken, now: number): Promise<TokenRecord>;

  /**
   * Takes the lease with a conditional write that succeeds only when nobody holds an unexpired
   * lease (whatever the status), and returns the record as it is under the lease. Returns null
   * when another lease is live (including one of the same owner: leases are not re-entrant).
   * Throws TokenNotFoundError when there is no record.
   */
  acquireLease(externalId: string, owner: string, leaseUntil: number, now: number): Promise<TokenRecord | null>;

  /**
   * Stores a new pair: `refreshedAt = now`, status `active`, failure count 0, last error class and
   * code removed, version + 1, lease released. Succeeds only if the record is still at `expectedVersion` and `owner` still holds the
   * lease (even if its time ran out: nobody else took it, so the pair is still the newest);
   * otherwise VersionConflictError.
   */
  saveTokens(externalId: string, tokens: IssuedTokens, guard: WriteGuard): Promise<TokenRecord>;

  /**
   * Moves the record out of the refresh schedule: `needs_attention` (failure count + 1, error class
   * and code recorded; no code removes an earlier one) or `revoked`. Version + 1 and lease released; same guard as saveTokens.
   */
  markStatus(externalId: string, change: StatusChange, guard: WriteGuard): Promise<TokenRecord>;

  /** Ends `owner`'s lease without other changes. False when `owner` did not hold it. */
  releaseLease(externalId: string, owner: string): Promise<boolean>;

  /**
   * Active records whose deadline minus `marginMs` is at or before `now`, most urgent first
   * (ascending `dueAt`; the order of equal `dueAt` is the adapter's). Each due record appears once
   * across the pages of one walk; a record that changes during the walk may be skipped until the
   * next walk. Served by an index: cost follows the due records, not the table.
   */
  queryDue(query: DueQuery): Promise<Page<DueToken>>;
}

/**
 * The moment a token must be refreshed by: its access token's expiry, or the keep-alive deadline,
 * whichever comes first. Stored as `dueAt` at write time; the margin is applied at query time, so
 * a margin change takes effect on the next query without rewriting any record.
 */
export function refreshDeadline(token: Pick<TokenRecord, 'accessTokenExpiresAt' | 'refreshedAt'>): number {
  return Math.min(token.accessTokenExpiresAt, token.refreshedAt + KEEP_ALIVE_MS);
}

/**
 * The one definition of "due", the same one queryDue serves: the refresh flow re-checks it on the
 * record it read under the lease, and skips the user when someone else has just refreshed it.
 */
export function isDue(token: Pick<TokenRecord, 'status' | 'accessTokenExpiresAt' | 'refreshedAt'>, now: number, marginMs: number): boolean {
  return token.status === 'active' && refreshDeadline(token) - marginMs <= now;
}

const epochMs = /* @__PURE__ */ lazySchema(() => z.int().min(0));

/**
 * The stored shape, shared by both adapters. Absent attributes stand for "none" (DynamoDB has no
 * use for nulls), and `dueAt` exists only while the record is active: that makes the due index
 * sparse, so revoked and needs_attention records are not in it and are never refreshed.
 */
export const storedTokenItemSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    externalId: z.guid(),
    username: z.string().min(1),
    email: z.string().min(1),
    accessToken: z.string().min(1),
    refreshToken: z.string().min(1),
    accessTokenExpiresAt: epochMs,
    refreshedAt: epochMs,
    version: z.int().min(1),
    status: z.enum(TOKEN_STATUSES),
    consecutiveFailures: z.int().min(0),
    lastErrorClass: z.string().min(1).optional(),
    // Absent in items written before it existed: they read as no code.
    lastErrorCode: z.string().min(1).optional(),
    leaseOwner: z.string().min(1).optional(),
    leaseUntil: epochMs.optional(),
    dueAt: epochMs.optional(),
    createdAt: epochMs,
    updatedAt: epochMs,
  }),
);
export type StoredTokenItem = z.output<typeof storedTokenItemSchema>;

/** Base of the store's own errors. */
export class TokenStoreError extends AcctopsError {
  override readonly name: string = 'TokenStoreError';
  readonly externalId: string;

  constructor(message: string, options: { code: string; externalId: string; cause?: unknown }) {
    super(message, options);
    this.externalId = options.externalId;
  }
}

export class TokenNotFoundError extends TokenStoreError {
  override readonly name: string = 'TokenNotFoundError';
  constructor(externalId: string, cause?: unknown) {
    super(`no token record for external_id ${externalId}`, { code: 'token_not_found', externalId, cause });
  }
}

export class TokenExistsError extends TokenStoreError {
  override readonly name: string = 'TokenExistsError';
  constructor(externalId: string, cause?: unknown) {
    super(`a token record for external_id ${externalId} already exists`, { code: 'token_exists', externalId, cause });
  }
}

/**
 * A guarded write lost its race: the record moved past `expectedVersion` (`version_changed`), or
 * the lease is no longer the caller's (`lease_not_held`: it expired and another owner took it, or
 * it was never taken). Nothing was written.
 */
export class VersionConflictError extends TokenStoreError {
  override readonly name: string = 'VersionConflictError';
  readonly reason: 'version_changed' | 'lease_not_held';
  readonly expectedVersion: number;

  constructor(externalId: string, details: { reason: 'version_changed' | 'lease_not_held'; expectedVersion: number }, cause?: unknown) {
    super(
      `token record ${externalId} was not written: ${details.reason === 'version_changed' ? `it is no longer at version ${details.expectedVersion}` : 'the lease is not held by this owner'}`,
      { code: 'version_conflict', externalId, cause },
    );
    this.reason = details.reason;
    this.expectedVersion = details.expectedVersion;
  }
}
