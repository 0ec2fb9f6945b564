import type * as z from 'zod';
import { parseWith } from '../shared/errors';
import { storedTokenItemSchema, type StoredTokenItem, type TokenRecord, type TokenSummary } from './token-store';
import { lazySchema } from '../shared/lazy-schema';

/*
 * Reading a stored item, apart from the store's transitions (token-transitions.ts): a reader that
 * only gets records (the export worker's user-token credentials) carries this, not every write's
 * schema and condition.
 */

/**
 * Validates a stored item. A corrupt item is a ValidationError naming the bad attributes; the
 * message never holds a value, so a token in a damaged record cannot reach a log.
 */
export function parseStoredItem(raw: unknown, externalId: string): StoredTokenItem {
  return parseWith(storedTokenItemSchema, raw, `token record ${externalId}`);
}

const storedSummarySchema = /* @__PURE__ */ lazySchema(() => storedTokenItemSchema.omit({ accessToken: true, refreshToken: true }));

/** Validates a stored item read without its tokens (a listing). */
export function parseStoredSummary(raw: unknown, externalId: string): TokenSummary {
  return toSummary(parseWith(storedSummarySchema, raw, `token record ${externalId}`));
}

export function toRecord(item: StoredTokenItem): TokenRecord {
  return { ...toSummary(item), accessToken: item.accessToken, refreshToken: item.refreshToken };
}

function toSummary(item: z.output<typeof storedSummarySchema>): TokenSummary {
  return {
    externalId: item.externalId,
    username: item.username,
    email: item.email,
    accessTokenExpiresAt: item.accessTokenExpiresAt,
    refreshedAt: item.refreshedAt,
    version: item.version,
    leaseOwner: item.leaseOwner ?? null,
    leaseUntil: item.leaseUntil ?? null,
    status: item.status,
    consecutiveFailures: item.consecutiveFailures,
    lastErrorClass: item.lastErrorClass ?? null,
    lastErrorCode: item.lastErrorCode ?? null,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
}
