import fc from 'fast-check';
import {
  AccountingApiError,
  AccountingClient,
  ResponseValidationError,
  apiKeyAuth,
  institutionAuth,
  type TransportRequest,
  type TransportResponse,
} from '../../src/core/accounting-api';
import { ValidationError } from '../../src/core/shared/errors';
import { ManualClock } from '../../src/core/shared/clock';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { FUZZ_RUNS, FUZZ_SEED } from './support';

/**
 * What the service answers, fuzzed, through every operation of the typed client (its schemas, its
 * lossless JSON, its pagination): the call either returns parsed values or rejects with an
 * AccountingApiError (ResponseValidationError naming the field, PaginationError, the status's
 * class), never a TypeError or a RangeError from inside the client, and an error never carries
 * what the answer held (answers here carry canary secrets).
 */

const BASE_URL = 'https://api.fuzz:4010/api/v1';
const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const UUID = '7e57da7a-0000-4000-8000-000000000001';

const ITEMS = {
  companies: { publicId: COMPANY, name: 'Fuzz GmbH', country: 'DE', currency: 'EUR' },
  transactions: {
    publicId: UUID,
    amount: -4999,
    currency: 'EUR',
    cashflowType: 'EXPENSE',
    valueDate: '2026-10-31T23:30:00-02:00',
    description: 'Paper',
    category: null,
    bankAccount: UUID,
  },
  categories: {
    publicId: UUID,
    name: 'Office',
    parent: null,
    cashflowType: 'EXPENSE',
    vatApplied: 'YES',
    metadata: '{"a":1}',
    description: '',
    examples: '',
  },
  taxReports: {
    pk: UUID,
    type: 'VAT_RETURN',
    periodStart: '2026-10-01',
    periodEnd: '2026-10-31',
    status: 'Draft',
    amountDue: '1234.56',
    currency: 'EUR',
    createdAt: '2026-11-02T10:00:00+01:00',
  },
  apiKeys: {
    publicId: UUID,
    name: 'export',
    prefix: 'sbx_AbCdEfGh',
    permissions: ['read_transactions'],
    lastUsedAt: null,
    createdAt: '2026-10-01T00:00:00Z',
    expiresAt: null,
    revokedAt: null,
  },
};

const TOKENS = { accessToken: CANARY.accessToken, refreshToken: CANARY.refreshToken, expiresIn: 1800 };
const USER = { username: 'ada', email: 'ada@example.test', externalId: UUID };

type Operation = (client: AccountingClient) => Promise<unknown>;

/** Each operation, with a valid answer to mutate. */
const OPERATIONS: Record<string, { call: Operation; valid: unknown; list: boolean; auth: 'bearer' | 'institution' }> = {
  'companies.list': { call: (c) => c.companies.list().all(), valid: ITEMS.companies, list: true, auth: 'bearer' },
  'transactions.list': {
    call: (c) => c.transactions.list({ dateFrom: '2026-10-01', dateTo: '2026-10-31' }).all(),
    valid: ITEMS.transactions,
    list: true,
    auth: 'bearer',
  },
  'categories.list': { call: (c) => c.categories.list().all(), valid: ITEMS.categories, list: true, auth: 'bearer' },
  'taxReports.list': { call: (c) => c.taxReports.list(COMPANY).all(), valid: ITEMS.taxReports, list: true, auth: 'bearer' },
  'apiKeys.list': { call: (c) => c.apiKeys.list().all(), valid: ITEMS.apiKeys, list: true, auth: 'bearer' },
  'apiKeys.create': {
    call: (c) => c.apiKeys.create({ name: 'n', permissions: ['read_transactions'] }),
    valid: { ...ITEMS.apiKeys, key: CANARY.otherApiKey },
    list: false,
    auth: 'bearer',
  },
  'institution.createUser': {
    call: (c) => c.institution.createUser(USER),
    valid: { user: { ...USER, external_id: UUID }, ...TOKENS },
    list: false,
    auth: 'institution',
  },
  'institution.refreshToken': {
    call: (c) => c.institution.refreshToken(CANARY.refreshToken),
    valid: TOKENS,
    list: false,
    auth: 'institution',
  },
  'institution.retrieveToken': { call: (c) => c.institution.retrieveToken(USER), valid: TOKENS, list: false, auth: 'institution' },
  'institution.verifyToken': {
    call: (c) => c.institution.verifyToken(CANARY.accessToken),
    valid: { valid: true, expiresAt: '2026-11-01T10:00:00Z' },
    list: false,
    auth: 'institution',
  },
  'institution.expireToken': {
    call: (c) => c.institution.expireToken(CANARY.refreshToken),
    valid: { expired: true },
    list: false,
    auth: 'institution',
  },
};

/** JSON values, often holding a secret: an error must never repeat them. */
const junk = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(CANARY.accessToken, `Bearer ${CANARY.apiKey}`, { token: CANARY.refreshToken }, '12345678901234567890123', -1e308, ''),
);

/** One field of `value` replaced by junk or removed. */
function mutated(value: unknown): fc.Arbitrary<unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return junk;
  const keys = Object.keys(value);
  return fc.tuple(fc.constantFrom(...keys), fc.option(junk, { nil: undefined })).map(([key, replacement]) => {
    const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    if (replacement === undefined) delete copy[key];
    else copy[key] = replacement;
    return copy;
  });
}

const nextLink = fc.oneof(
  fc.constant(null),
  fc.constant(`${BASE_URL}/accounting/transactions/?page=2`),
  fc.constantFrom(
    'http://foreign.invalid/api/v1/companies/?page=2',
    `${BASE_URL.replace('http:', 'https:')}/companies/?page=2`,
    'http://user:pw@api.fuzz:4010/api/v1/x/?page=2',
    '/relative/?page=2',
  ),
  fc.string({ maxLength: 40 }),
  fc.integer(),
);

function answers(op: (typeof OPERATIONS)[string]): fc.Arbitrary<TransportResponse> {
  const ok = (body: unknown): TransportResponse => ({
    status: 200,
    headers: { 'content-type': 'application/json', 'x-request-id': 'req_fuzz' },
    body: JSON.stringify(body) ?? '',
  });
  const bodies: fc.Arbitrary<TransportResponse>[] = [
    junk.map(ok),
    fc.string({ maxLength: 60 }).map((body) => ({ status: 200, headers: {}, body })),
    fc
      .tuple(fc.integer({ min: 100, max: 599 }), junk)
      .map(([status, body]) => ({ status, headers: { 'retry-after': 'soon' }, body: JSON.stringify(body) ?? '' })),
  ];
  if (op.list) {
    bodies.push(
      fc
        .record({
          count: fc.oneof(fc.nat(5), junk),
          next: nextLink,
          previous: fc.constant(null),
          results: fc.array(fc.oneof(fc.constant(op.valid), mutated(op.valid)), { maxLength: 3 }),
        })
        .map(ok),
      mutated({ count: 1, next: null, previous: null, results: [op.valid] }).map(ok),
    );
  } else {
    bodies.push(mutated(op.valid).map(ok));
  }
  return fc.oneof(...bodies);
}

function client(
  auth: 'bearer' | 'institution',
  respond: (request: TransportRequest) => TransportResponse,
  sent: TransportRequest[],
): AccountingClient {
  return new AccountingClient({
    baseUrl: BASE_URL,
    credentials:
      auth === 'bearer'
        ? apiKeyAuth(CANARY.apiKey, { companyId: COMPANY })
        : institutionAuth({ institutionId: CANARY.institutionId, secretKey: CANARY.institutionSecret }),
    transport: (request) => {
      sent.push(request);
      if (sent.length > 20) throw new Error('the client kept asking');
      return Promise.resolve(respond(request));
    },
    clock: ManualClock.autoAdvancing(),
    retry: { maxAttempts: 2 },
    random: () => 0.5,
  });
}

describe('API responses (fast-check, fixed seed)', () => {
  it.each(Object.keys(OPERATIONS))(
    '%s: any answer is parsed or an AccountingApiError that names the field and holds no secret',
    async (name) => {
      const op = OPERATIONS[name]!;
      await fc.assert(
        fc.asyncProperty(answers(op), async (answer) => {
          const sent: TransportRequest[] = [];
          let error: unknown;
          try {
            await op.call(client(op.auth, () => answer, sent));
          } catch (e) {
            error = e;
          }
          expect(sent.length).toBeLessThanOrEqual(20);
          if (error === undefined) return;
          if (!(error instanceof AccountingApiError)) throw new Error(`${name}: expected an AccountingApiError, got ${String(error)}`);
          if (error instanceof ResponseValidationError) {
            expect(error.issues.length).toBeGreaterThan(0);
            expect(typeof error.field).toBe('string');
          }
          expectNoCanaries(error, `${name} error`);
          // Nothing but the service's own origin was ever asked.
          for (const request of sent) expect(new URL(request.url).origin).toBe(new URL(BASE_URL).origin);
        }),
        { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
      );
    },
  );

  it('page sizes: any requested size is sent capped at 1000, or refused as a ValidationError naming pageSize before sending', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -1, 1000, 1001, Number.MAX_SAFE_INTEGER, Number.NaN, Infinity)),
        async (size) => {
          const sent: TransportRequest[] = [];
          const list = client(
            'bearer',
            () => ({ status: 200, headers: {}, body: '{"count":0,"next":null,"previous":null,"results":[]}' }),
            sent,
          );
          let error: unknown;
          try {
            await list.transactions.list({ pageSize: size }).all();
          } catch (e) {
            error = e;
          }
          if (error === undefined) {
            expect(Number.isInteger(size) && size >= 1).toBe(true);
            expect(new URL(sent[0]!.url).searchParams.get('page_size')).toBe(String(Math.min(size, 1000)));
          } else {
            expect(error).toBeInstanceOf(ValidationError);
            expect((error as ValidationError).field).toMatch(/pageSize/);
            expect(sent).toEqual([]);
          }
          // Small sizes that make sense are never refused.
          if (Number.isInteger(size) && size >= 1 && size <= 1_000_000) expect(error).toBeUndefined();
        },
      ),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
  });
});
