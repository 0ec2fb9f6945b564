import * as z from 'zod';
import { amountSchema } from './money';
import { parseTimestamp, type TimestampInstant } from './timestamps';

/**
 * Response schemas. Every object is loose: fields the spec does not show pass through untouched,
 * so the service can add fields without breaking us. The fields we rely on are strict; a broken
 * one raises ResponseValidationError naming its path (never its value).
 *
 * Request schemas (`...InputSchema`) check what callers hand us, before anything is sent.
 */

// ---- scalars ----

/** Any 8-4-4-4-12 hex identifier: the service's UUIDs are not promised to be RFC 9562 versions. */
export const uuidSchema = z.guid();

/** `YYYY-MM-DD`, a real calendar date. */
export const dateSchema = z.iso.date();

/**
 * The instant of an ISO 8601 timestamp with an explicit offset, in epoch milliseconds, or
 * undefined when it is not one (no offset, impossible date or time). Computed from the fields,
 * not by Date.parse, which rolls `02-30` over into March.
 */
export function timestampMillis(timestamp: string): number | undefined {
  return parseTimestamp(timestamp)?.utcMillis;
}

/**
 * The instant and the offset (minutes east of UTC, `-02:00` is -120) of a timestamp from one
 * parse, or undefined when `timestampSchema` would refuse it. The exports need both per record.
 */
export function timestampInstant(timestamp: string): TimestampInstant | undefined {
  return parseTimestamp(timestamp);
}

/** The instant a timestamp denotes. Throws on a string that `timestampSchema` would refuse. */
export function instantOf(timestamp: string): Date {
  const millis = timestampMillis(timestamp);
  if (millis === undefined) throw new RangeError('not an ISO 8601 timestamp with an offset');
  return new Date(millis);
}

/** The same instant written in UTC: `2026-10-31T23:30:00-02:00` is `2026-11-01T01:30:00.000Z`. */
export function toUtcIso(timestamp: string): string {
  return instantOf(timestamp).toISOString();
}

/**
 * The calendar date as written, in the timestamp's own offset: what `date_from`/`date_to`
 * filter on (docs/assumptions.md). `2026-10-31T23:30:00-02:00` is in October.
 */
export function localDateOf(timestamp: string): string {
  return timestamp.slice(0, 10);
}

/** Whether `timestampSchema` accepts `text`. */
export function isTimestamp(text: string): boolean {
  return parseTimestamp(text) !== undefined;
}

/** An ISO 8601 timestamp with an offset, kept as the original string (offset included). */
export const timestampSchema = z.string().refine(isTimestamp, { message: 'expected an ISO 8601 timestamp with an offset' });

/** A field that is optional or null on the wire, always `null` when absent in the output. */
function nullish<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v) => v ?? null);
}

/**
 * An enum as responses show it: a display label (`Draft`, `Expense`, `Partially paid`) maps to
 * the request value it names, compared without case, spaces or hyphens. A value we do not know
 * is kept verbatim rather than refused: the spec does not show the complete sets.
 */
export function labelledEnum<const V extends readonly string[]>(values: V) {
  return z.string().transform(labelReader(values));
}

/** The mapping of `labelledEnum`, for code that reads a label without a schema (transaction-fast-path.ts). */
function labelReader<const V extends readonly string[]>(values: V): (label: string) => V[number] | (string & {}) {
  const key = (s: string) => s.trim().toLowerCase().replace(/[\s-]+/g, '_');
  const known = new Map(values.map((v) => [key(v), v]));
  // Labels repeat (a transaction's cashflow type is one of a handful): each spelling is worked
  // out once. Bounded, since a label we do not know is kept verbatim and could be anything.
  const seen = new Map<string, V[number] | (string & {})>();
  return (label) => {
    const cached = seen.get(label);
    if (cached !== undefined) return cached;
    const value = known.get(key(label)) ?? label;
    if (seen.size < 64) seen.set(label, value);
    return value;
  };
}

export const cashflowTypeOf = labelReader(['EXPENSE', 'INCOME']);
export const cashflowTypeSchema = z.string().transform(cashflowTypeOf);
export const vatAppliedSchema = labelledEnum(['YES', 'NO']);
export const invoiceStatusSchema = labelledEnum(['draft']);
export const clientTypeSchema = labelledEnum(['business']);
export const taxReportTypeSchema = labelledEnum(['VAT_RETURN']);
export const taxReportStatusSchema = labelledEnum(['draft', 'submitted']);

// ---- list envelope (spec §4.3) ----

export const listEnvelopeSchema = z.looseObject({
  count: z.number().int().nonnegative(),
  next: z.string().nullable(),
  previous: z.string().nullish(),
  results: z.array(z.unknown()),
});

// ---- resources ----

export const companySchema = z.looseObject({
  publicId: uuidSchema,
  name: z.string(),
  country: nullish(z.string()),
  currency: nullish(z.string()),
});
export type Company = z.output<typeof companySchema>;

export const taxReportSchema = z.looseObject({
  pk: uuidSchema,
  type: nullish(taxReportTypeSchema),
  periodStart: dateSchema,
  periodEnd: dateSchema,
  status: nullish(taxReportStatusSchema),
  amountDue: amountSchema,
  currency: nullish(z.string()),
  createdAt: nullish(timestampSchema),
});
export type TaxReport = z.output<typeof taxReportSchema>;

export const transactionSchema = z.looseObject({
  publicId: uuidSchema,
  /** Exact minor units; the wire had an integer or a two-decimal string. */
  amount: amountSchema,
  /** Null when the service sends none; exporters fall back to their configured currency. */
  currency: nullish(z.string()),
  cashflowType: cashflowTypeSchema,
  /** The original string, offset included. See `instantOf`, `toUtcIso`, `localDateOf`. */
  valueDate: timestampSchema,
  description: nullish(z.string()),
  category: nullish(uuidSchema),
  bankAccount: nullish(uuidSchema),
});
export type Transaction = z.output<typeof transactionSchema>;

/**
 * Why a category's metadata text did not become an object. The text itself stays in the raw
 * item; the client reports an `invalid_category_metadata` warning.
 */
export type MetadataIssue = 'invalid_json' | 'not_an_object';

function parseMetadata(text: string | null): { metadata: Record<string, unknown> | null; metadataIssue: MetadataIssue | null } {
  if (text === null || text.trim() === '') return { metadata: null, metadataIssue: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { metadata: null, metadataIssue: 'invalid_json' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { metadata: null, metadataIssue: 'not_an_object' };
  return { metadata: value as Record<string, unknown>, metadataIssue: null };
}

export const categorySchema = z
  .looseObject({
    publicId: uuidSchema,
    name: z.string(),
    parent: nullish(uuidSchema),
    cashflowType: nullish(cashflowTypeSchema),
    vatApplied: nullish(vatAppliedSchema),
    /** JSON text on the wire; an object (or null) in the output, with `metadataIssue`. */
    metadata: nullish(z.string()),
    description: nullish(z.string()),
    examples: nullish(z.string()),
  })
  .transform((category) => ({ ...category, ...parseMetadata(category.metadata) }));
export type Category = z.output<typeof categorySchema>;

// ---- institution operations (docs/assumptions.md, "Institution operations") ----

export const tokenPairSchema = z.looseObject({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1),
  /** Seconds; optional because expiry is read from the JWT `exp` first. */
  expiresIn: z.number().int().positive().optional(),
});
export type TokenPair = z.output<typeof tokenPairSchema>;

export const createdUserSchema = tokenPairSchema.extend({
  user: z.looseObject({ username: z.string(), email: z.string(), external_id: z.string() }),
});
export type CreatedUser = z.output<typeof createdUserSchema>;

export const tokenVerificationSchema = z.union([
  z.looseObject({ valid: z.literal(true), expiresAt: nullish(timestampSchema) }),
  z.looseObject({ valid: z.literal(false), reason: labelledEnum(['expired', 'revoked', 'invalid']) }),
]);
export type TokenVerification = z.output<typeof tokenVerificationSchema>;

export const tokenExpirySchema = z.looseObject({ expired: z.boolean() });
export type TokenExpiry = z.output<typeof tokenExpirySchema>;

// ---- API keys (docs/assumptions.md, "API-key management") ----

export const apiKeySchema = z.looseObject({
  publicId: uuidSchema,
  name: z.string(),
  /** The loggable part: service prefix, underscore, 8 characters. */
  prefix: z.string(),
  permissions: z.array(z.string()),
  lastUsedAt: nullish(timestampSchema),
  createdAt: nullish(timestampSchema),
  expiresAt: nullish(timestampSchema),
  revokedAt: nullish(timestampSchema),
});
export type ApiKey = z.output<typeof apiKeySchema>;

/** The creation response: the only time the full key is shown. */
export const createdApiKeySchema = apiKeySchema.extend({ key: z.string().min(1) });
export type CreatedApiKey = z.output<typeof createdApiKeySchema>;

// ---- request inputs ----

export const createUserInputSchema = z.object({
  username: z.string().min(1),
  email: z.email(),
  externalId: uuidSchema,
});
export type CreateUserInput = z.input<typeof createUserInputSchema>;

export const retrieveTokenInputSchema = createUserInputSchema;
export type RetrieveTokenInput = CreateUserInput;

export const createApiKeyInputSchema = z.object({
  name: z.string().min(1),
  permissions: z.array(z.string().min(1)).min(1),
  /** An ISO 8601 timestamp with an offset. */
  expiresAt: timestampSchema.optional(),
});
export type CreateApiKeyInput = z.input<typeof createApiKeyInputSchema>;

export const transactionQuerySchema = z.object({
  dateFrom: dateSchema.optional(),
  dateTo: dateSchema.optional(),
  page: z.number().int().positive().optional(),
  pageSize: z.number().int().positive().optional(),
});
export type TransactionQuery = z.input<typeof transactionQuerySchema>;

export const pageQuerySchema = z.object({
  page: z.number().int().positive().optional(),
  pageSize: z.number().int().positive().optional(),
});
export type PageQuery = z.input<typeof pageQuerySchema>;
