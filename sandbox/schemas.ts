import * as z from 'zod';

/**
 * The wire format the sandbox serves: every request body it accepts and every response body it
 * sends. The server validates requests with these, the OpenAPI document is generated from them
 * (`npm run openapi`), and the tests check real responses against them. Response objects are
 * strict here so that a test notices when the sandbox sends a field this file does not describe;
 * the generated document leaves them open, because clients must tolerate unknown fields.
 */

export const wireRegistry = z.registry<{ id: string; description?: string }>();

function component<S extends z.ZodType>(id: string, schema: S, description?: string): S {
  wireRegistry.add(schema, description === undefined ? { id } : { id, description });
  return schema;
}

/**
 * Permission names (spec §5.1.5 names six; the complete list is "not shown"). The read_* names
 * for transactions, categories, tax reports, clients and documents and `manage_api_keys` are our
 * assumption, recorded in docs/assumptions.md.
 */
export const PERMISSIONS = [
  'read_invoices',
  'write_invoices',
  'read_clients',
  'write_clients',
  'read_documents',
  'write_documents',
  'read_transactions',
  'write_transactions',
  'read_categories',
  'read_tax_reports',
  'manage_api_keys',
  'full_access',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const permissionSchema = component('Permission', z.enum(PERMISSIONS));

const uuid = z.uuid();
const timestamp = z.iso.datetime({ offset: true });
const date = z.iso.date();

export const amountSchema = component(
  'Amount',
  z.union([z.int(), z.string().regex(/^-?\d+\.\d{2}$/)]),
  'Money in minor units: an integer (4999) or a decimal string with two fraction digits ("49.99"); both mean the same amount. An integer may exceed 2^53.',
);

export const cashflowTypeSchema = component(
  'CashflowType',
  z.enum(['EXPENSE', 'INCOME', 'Expense', 'Income']),
  'EXPENSE (negative amount) or INCOME (positive amount); may be sent as a display label.',
);

// ---------------------------------------------------------------- resources

export const companySchema = component(
  'Company',
  z.strictObject({ publicId: uuid, name: z.string(), country: z.string().length(2), currency: z.string().length(3) }),
);

export const transactionSchema = component(
  'Transaction',
  z.strictObject({
    publicId: uuid,
    amount: amountSchema,
    currency: z.string().length(3),
    cashflowType: cashflowTypeSchema,
    valueDate: timestamp.meta({ description: 'ISO 8601 timestamp with its own offset; date filters use its local date.' }),
    description: z.string(),
    category: uuid.nullable(),
    bankAccount: uuid,
  }),
);

export const categorySchema = component(
  'Category',
  z.strictObject({
    publicId: uuid,
    name: z.string(),
    parent: uuid.nullable(),
    cashflowType: cashflowTypeSchema,
    vatApplied: z.enum(['YES', 'NO']),
    metadata: z.string().meta({ description: 'A JSON object serialised as text; not always valid JSON.' }),
    description: z.string(),
    examples: z.string(),
  }),
);

export const taxReportSchema = component(
  'TaxReport',
  z.strictObject({
    pk: uuid,
    type: z.literal('VAT_RETURN'),
    periodStart: date,
    periodEnd: date,
    status: z.enum(['draft', 'submitted', 'Draft', 'Submitted']),
    amountDue: amountSchema,
    currency: z.string().length(3),
    createdAt: timestamp,
  }),
);

export const apiKeySchema = component(
  'ApiKey',
  z.strictObject({
    publicId: uuid,
    name: z.string(),
    prefix: z.string().meta({ description: 'Service prefix, underscore and the first 8 characters: the only loggable part.' }),
    permissions: z.array(permissionSchema),
    lastUsedAt: timestamp.nullable(),
    createdAt: timestamp,
    expiresAt: timestamp.nullable(),
    revokedAt: timestamp.nullable(),
  }),
);

export const apiKeyCreatedSchema = component(
  'ApiKeyCreated',
  apiKeySchema.extend({ key: z.string().meta({ description: 'The full key, shown only in this response.' }) }),
);

// ---------------------------------------------------------------- lists

function listOf<S extends z.ZodType>(id: string, item: S) {
  return component(
    id,
    z.strictObject({
      count: z.int().nonnegative(),
      next: z.url().nullable(),
      previous: z.url().nullable(),
      results: z.array(item),
    }),
  );
}

export const companyListSchema = listOf('CompanyList', companySchema);
export const transactionListSchema = listOf('TransactionList', transactionSchema);
export const categoryListSchema = listOf('CategoryList', categorySchema);
export const taxReportListSchema = listOf('TaxReportList', taxReportSchema);
export const apiKeyListSchema = listOf('ApiKeyList', apiKeySchema);

// ---------------------------------------------------------------- institution operations

const username = z.string().min(1).max(150);
const email = z.email();
const externalId = z.uuid();

export const userIdentitySchema = component('UserIdentity', z.strictObject({ username, email, external_id: externalId }));
export const createUserBodySchema = component('CreateUserRequest', z.object({ username, email, external_id: externalId }));
export const retrieveBodySchema = component('RetrieveTokensRequest', z.object({ username, external_id: externalId, email }));
export const refreshBodySchema = component('RefreshRequest', z.object({ refresh: z.string().min(1) }));
export const verifyBodySchema = component('VerifyRequest', z.object({ token: z.string().min(1) }));
export const expireBodySchema = component('ExpireRequest', z.object({ refresh: z.string().min(1) }));

const tokenFields = {
  accessToken: z.string().meta({ description: 'A JWT; its `exp` claim is the expiry.' }),
  refreshToken: z.string().meta({ description: 'A JWT; it rotates: dead once used.' }),
  expiresIn: z.int().positive().meta({ description: 'Seconds until the access token expires.' }),
};

export const tokenPairSchema = component('TokenPair', z.strictObject(tokenFields));
export const createUserResponseSchema = component('CreateUserResponse', z.strictObject({ user: userIdentitySchema, ...tokenFields }));
export const verifyResponseSchema = component(
  'VerifyResponse',
  z.union([
    z.strictObject({ valid: z.literal(true), expiresAt: timestamp }),
    z.strictObject({ valid: z.literal(false), reason: z.enum(['expired', 'revoked', 'invalid']) }),
  ]),
);
export const expireResponseSchema = component('ExpireResponse', z.strictObject({ expired: z.literal(true) }));

// ---------------------------------------------------------------- API-key management

export const createApiKeyBodySchema = component(
  'CreateApiKeyRequest',
  z.object({
    name: z.string().min(1).max(200),
    permissions: z.array(permissionSchema).min(1),
    expiresAt: timestamp.optional(),
    companyId: z.string().optional().meta({ description: "Optional; must equal the credential's company." }),
    company: z.string().optional().meta({ description: "Optional; must equal the credential's company." }),
  }),
);

// ---------------------------------------------------------------- errors

export const errorEnvelopeSchema = component(
  'Error',
  z.strictObject({
    error: z.strictObject({
      type: z.string(),
      code: z.string(),
      message: z.string(),
      param: z.string().nullable(),
      permission: z.string().nullable(),
      requestId: z.string().regex(/^req_[0-9a-f]+$/),
    }),
  }),
);
