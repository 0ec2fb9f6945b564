import * as z from 'zod';
import { amountSchema } from './money';
import { localDateOf as writtenDateOf, parseTimestamp, recalledTimestamp, timestampProblem, type TimestampInstant } from './timestamps';

/**
 * Response schemas: a tolerant reader (docs/assumptions.md, "What a response must carry"). Only
 * a field the spec names is required; a missing or wrong one raises ResponseValidationError
 * naming its path (never its value). Every other field is optional and typed when present: a
 * present value of the wrong type becomes null in the parsed form and is reported
 * (`ignoredFieldsOf`, the `ignored_field` warning); its value stays in the raw object. Every
 * object is loose: fields we do not know pass through untouched.
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
 * parse, or undefined when `timestampSchema` would refuse it. The exports need both per record,
 * right after the validation parsed the same string, which is recalled rather than parsed again.
 */
export function timestampInstant(timestamp: string): TimestampInstant | undefined {
  return recalledTimestamp(timestamp);
}

/** The instant a timestamp denotes. Throws on a string that `timestampSchema` would refuse. */
export function instantOf(timestamp: string): Date {
  const millis = timestampMillis(timestamp);
  if (millis === undefined) throw new RangeError(timestampProblem(timestamp));
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
  return writtenDateOf(timestamp);
}

/** Whether `timestampSchema` accepts `text`. */
export function isTimestamp(text: string): boolean {
  return parseTimestamp(text) !== undefined;
}

/**
 * An ISO 8601 timestamp with an offset, kept as the original string (offset included). A refusal
 * names the part that is wrong (`timestampProblem`), not the text.
 */
export const timestampSchema = z.string().refine(isTimestamp, { error: (issue) => timestampProblem(String(issue.input)) });

/** A field that is optional or null on the wire, always `null` when absent in the output. */
function nullish<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v) => v ?? null);
}

/** Marks an optional field whose value had the wrong type; `tolerantObject` turns it into null. */
const IGNORED: unique symbol = Symbol('ignored field');

/** The optional fields whose values were ignored, per parsed object (a side table: outputs stay plain). */
const ignoredFields = new WeakMap<object, readonly string[]>();

/** Names of the optional fields of `parsed` whose present value had the wrong type (and became null). */
export function ignoredFieldsOf(parsed: unknown): readonly string[] {
  return parsed !== null && typeof parsed === 'object' ? (ignoredFields.get(parsed) ?? []) : [];
}

/**
 * An optional response field: null when absent or null, typed when present. A value the schema
 * refuses is not an error (the spec does not name the field, so it promised nothing about it):
 * it is read as absent and `tolerantObject` records its name.
 */
export function optionalField<T extends z.ZodType>(schema: T): z.ZodType<z.output<T> | null> {
  return z
    .unknown()
    .optional()
    .transform((value): z.output<T> | null => {
      if (value === undefined || value === null) return null;
      const result = schema.safeParse(value);
      return result.success ? result.data : (IGNORED as never);
    }) as unknown as z.ZodType<z.output<T> | null>;
}

/** A loose object whose `optionalField`s that held a wrong type are null and listed in `ignoredFieldsOf`. */
export function tolerantObject<S extends z.core.$ZodLooseShape>(shape: S) {
  return z.looseObject(shape).transform((object) => {
    let ignored: string[] | undefined;
    const record = object as Record<string, unknown>;
    for (const key of Object.keys(shape)) {
      if (record[key] === IGNORED) {
        record[key] = null;
        (ignored ??= []).push(key);
      }
    }
    if (ignored) ignoredFields.set(object, ignored);
    return object;
  });
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
  const key = (s: string) =>
    s
      .trim()
      .toLowerCase()
      .replace(/[\s-]+/g, '_');
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

// ---- resources (spec §2 names the required fields) ----

export const companySchema = tolerantObject({
  /** Spec §2, §4.2: the `{company_pk}` of every company path. */
  publicId: uuidSchema,
  name: optionalField(z.string()),
  country: optionalField(z.string()),
  currency: optionalField(z.string()),
});
export type Company = z.output<typeof companySchema>;

export const taxReportSchema = tolerantObject({
  /** Spec §2: tax reports are identified by `pk`. Everything else is our sandbox's. */
  pk: uuidSchema,
  type: optionalField(taxReportTypeSchema),
  periodStart: optionalField(dateSchema),
  periodEnd: optionalField(dateSchema),
  status: optionalField(taxReportStatusSchema),
  amountDue: optionalField(amountSchema),
  currency: optionalField(z.string()),
  createdAt: optionalField(timestampSchema),
});
export type TaxReport = z.output<typeof taxReportSchema>;

export const transactionSchema = tolerantObject({
  publicId: uuidSchema,
  /** Spec §2. Exact minor units; the wire had an integer or a two-decimal string. */
  amount: amountSchema,
  /** Null when the service sends none; exporters fall back to their configured currency. */
  currency: optionalField(z.string()),
  /** Named by the spec but only as "EXPENSE for expenses"; not required to read an amount. */
  cashflowType: optionalField(cashflowTypeSchema),
  /** Spec §2. The original string, offset included. See `instantOf`, `toUtcIso`, `localDateOf`. */
  valueDate: timestampSchema,
  description: optionalField(z.string()),
  category: optionalField(uuidSchema),
  bankAccount: optionalField(uuidSchema),
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

export const categorySchema = tolerantObject({
  /** Spec §2: `publicId` and `name`. */
  publicId: uuidSchema,
  name: z.string(),
  parent: optionalField(uuidSchema),
  cashflowType: optionalField(cashflowTypeSchema),
  vatApplied: optionalField(vatAppliedSchema),
  /** JSON text on the wire; an object (or null) in the output, with `metadataIssue`. */
  metadata: optionalField(z.string()),
  description: optionalField(z.string()),
  examples: optionalField(z.string()),
}).transform((category) => {
  // Spread copies: carry the ignored fields over to the new object.
  const out = { ...category, ...parseMetadata(category.metadata) };
  const ignored = ignoredFieldsOf(category);
  if (ignored.length) ignoredFields.set(out, ignored);
  return out;
});
export type Category = z.output<typeof categorySchema>;

// ---- institution operations (spec §4.1: bodies "not shown" beyond the tokens) ----

/**
 * Any token reply. Spec §4.1 and §5.2 name `accessToken` only as required; `refreshToken` may
 * be absent (a refresh that does not rotate, a create that returns the access token alone).
 */
export const tokenReplySchema = tolerantObject({
  accessToken: z.string().min(1),
  refreshToken: optionalField(z.string().min(1)),
  /** Seconds; optional because expiry is read from the JWT `exp` first. */
  expiresIn: optionalField(z.number().positive()),
});
export type TokenReply = z.output<typeof tokenReplySchema>;

/**
 * A pair the caller can store: the result of retrieve (spec §4.1: it "generates a new accessToken
 * and refreshToken", so both are required) and of refresh (whose client method keeps the refresh
 * token in use when the reply has none).
 */
export const tokenPairSchema = tolerantObject({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1),
  expiresIn: optionalField(z.number().positive()),
});
export type TokenPair = z.output<typeof tokenPairSchema>;

/** What create answers: an access token (spec §4.1), the rest when the service sends it. */
export const createdUserSchema = tolerantObject({
  accessToken: z.string().min(1),
  refreshToken: optionalField(z.string().min(1)),
  expiresIn: optionalField(z.number().positive()),
  user: optionalField(z.looseObject({ username: z.string(), email: z.string(), external_id: z.string() })),
});
export type CreatedUser = z.output<typeof createdUserSchema>;

/**
 * The verdict of verify. Spec §4.1 shows no body: a 2xx means "valid" unless the body carries a
 * negative marker (`valid: false`, RFC 7662's `active: false`, `"status": "INVALID"`…:
 * token-verdicts.ts); a refusal that concerns the token (401 or 400) means "invalid"
 * (resources/institution.ts).
 */
export type TokenVerification =
  | { valid: true; expiresAt: string | null; [key: string]: unknown }
  | { valid: false; reason: 'expired' | 'revoked' | 'invalid' | (string & {}); [key: string]: unknown };

export const verificationReasonSchema = labelledEnum(['expired', 'revoked', 'invalid']);

/**
 * The outcome of expire; any 2xx body (empty, `{}`, anything) means done unless it says it was not
 * (`expired: false`, `success: false`, `"status": "FAILED"`: token-verdicts.ts).
 */
export interface TokenExpiry {
  expired: boolean;
  [key: string]: unknown;
}

// ---- API keys (docs/assumptions.md, "API-key management") ----

/**
 * The spellings of a listed key's prefix (spec §5.1.2: "the key prefix", its field not shown),
 * as the reader of expiry fields takes several (docs/assumptions.md, "API-key management").
 */
const API_KEY_PREFIX_SPELLINGS = ['prefix', 'keyPrefix', 'key_prefix'] as const;

/**
 * Reads the prefix from the first spelling present as `prefix`, on a copy: the raw item stays as
 * received. With none present the object is left as it is, so the refusal names `prefix`.
 */
function withPrefix(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  const spelling = API_KEY_PREFIX_SPELLINGS.find((field) => record[field] !== undefined && record[field] !== null);
  return spelling === undefined || spelling === 'prefix' ? value : { ...record, prefix: record[spelling] };
}

const apiKeyShape = {
  publicId: uuidSchema,
  /**
   * Not named by the spec (§5.1.2 names the prefix, permissions and last use): null when the
   * service keeps no name, and rotation then cannot recognise its keys by name (docs/key-rotation.md).
   */
  name: optionalField(z.string()),
  /** The start of the key, of a length the service picks (spec §5.1): matched by `matchListedKey`. */
  prefix: z.string(),
  permissions: z.array(z.string()),
  lastUsedAt: nullish(timestampSchema),
  createdAt: nullish(timestampSchema),
  expiresAt: nullish(timestampSchema),
  revokedAt: nullish(timestampSchema),
};

export const apiKeySchema = z.preprocess(withPrefix, tolerantObject(apiKeyShape));
export type ApiKey = z.output<typeof apiKeySchema>;

/** The creation response: the only time the full key is shown. */
export const createdApiKeySchema = z.preprocess(withPrefix, tolerantObject({ ...apiKeyShape, key: z.string().min(1) }));
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
