import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import {
  AccountingClient,
  ResponseValidationError,
  apiKeyAuth,
  parseJsonLossless,
  transactionSchema,
} from '../../../src/core/accounting-api';
import { isGuid, transactionFastPath } from '../../../src/core/accounting-api/transaction-fast-path';
import { uuidSchema } from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { BASE_URL, fakeTransport, json, transaction } from './fake-transport';

const SEED = 20261121;
const UUIDS = ['00000000-0000-4000-8000-000000000001', 'ABCDEF01-2345-6789-ABCD-EF0123456789', '00000000-0000-0000-0000-000000000000'];

/** Valid values of a field, and values that are almost valid or plainly wrong. */
const guid = fc.oneof(fc.uuid(), fc.constantFrom(...UUIDS));
const notGuid = fc.oneof(
  fc.constantFrom('', 'not-a-uuid', '00000000-0000-4000-8000-00000000000', `${UUIDS[0]} `, `{${UUIDS[0]}}`),
  fc.string(),
  fc.integer(),
);
const timestamp = fc.oneof(
  fc.date({ min: new Date(Date.UTC(1, 0, 1)), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2026-10-31T23:30:00-02:00', '2026-10-31T23:30:00.123456789+0530', '2024-02-29T00:00Z', '0099-12-31T23:59:59+14:00'),
);
const notTimestamp = fc.oneof(
  fc.constantFrom(
    '2026-10-31T23:30:00',
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-10-31T24:00:00Z',
    '2026-10-31T23:30:00+24:00',
    '2026-10-31',
    '',
  ),
  fc.string(),
  fc.integer(),
);
const amount = fc.oneof(
  fc.integer(),
  fc.maxSafeInteger(),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
  fc
    .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 20n }), fc.integer({ min: 0, max: 99 }))
    .map(([neg, whole, cents]) => `${neg ? '-' : ''}${whole}.${String(cents).padStart(2, '0')}`),
  // Digit strings as lossless JSON makes them: only for integers beyond 2^53.
  fc.bigInt({ min: 2n ** 53n, max: 10n ** 30n }).chain((n) => fc.constantFrom(String(n), `-${n}`)),
);
const notAmount = fc.oneof(
  fc.double(),
  fc.constantFrom(
    Number.MAX_SAFE_INTEGER + 2,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    '49.9',
    '49.999',
    '-50',
    '4999',
    '1e5',
    '',
    ' 12',
    '+12',
    '-',
  ),
  fc.string(),
  fc.boolean(),
);
const text = fc.oneof(fc.string(), fc.constantFrom('EUR', 'usd', 'EXPENSE', 'Expense', ' income ', 'Partially-paid', 'INCOME'));
const absent = fc.constantFrom(undefined, null, ABSENT());
const junk = fc.oneof(fc.integer(), fc.boolean(), fc.constant([]), fc.constant({}), fc.bigInt());

function ABSENT(): symbol {
  return Symbol.for('absent');
}

const field = <A, B>(good: fc.Arbitrary<A>, bad: fc.Arbitrary<B>) =>
  fc.oneof({ arbitrary: good, weight: 4 }, { arbitrary: bad, weight: 1 });

/** Extra keys, some of them awkward: the object's own __proto__, prototype names, array indices, a field's name. */
const extraKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', '10', 'extra', 'amount', 'valueDate'),
  fc.string(),
);
const extraValue = fc.oneof(fc.jsonValue(), fc.constant(undefined), fc.bigInt());

/** An item as lossless JSON parsing could hand it over (own enumerable keys, any order), or close to it. */
const item = fc
  .record({
    publicId: field(guid, notGuid),
    amount: field(amount, notAmount),
    currency: field(fc.oneof(text, absent), junk),
    cashflowType: field(text, fc.oneof(absent, junk)),
    valueDate: field(timestamp, fc.oneof(notTimestamp, absent)),
    description: field(fc.oneof(text, absent), junk),
    category: field(fc.oneof(guid, absent), notGuid),
    bankAccount: field(fc.oneof(guid, absent), notGuid),
  })
  .chain((fields) => {
    const entries: [string, unknown][] = Object.entries(fields).filter(([, v]) => v !== ABSENT());
    return fc.tuple(
      fc.shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length }),
      fc.array(fc.tuple(extraKey, extraValue), { maxLength: 4 }),
    );
  })
  .map(([fields, extras]) => {
    const object: Record<string, unknown> = {};
    // defineProperty, as JSON.parse does: an own "__proto__" key, not a new prototype.
    for (const [key, value] of [...extras, ...fields])
      Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
    return object;
  });

const notAnObject = fc.oneof(
  fc.constant(null),
  fc.string(),
  fc.array(fc.jsonValue(), { maxLength: 3 }),
  fc.constant(Object.assign(Object.create(null) as object, transaction(1))),
);

/** Equal values, with the same own keys in the same order (zod's output order included). */
function same(a: unknown, b: unknown): boolean {
  const keys = (v: unknown) => (typeof v === 'object' && v !== null ? Reflect.ownKeys(v) : []);
  return isDeepStrictEqual(a, b) && isDeepStrictEqual(keys(a), keys(b)) && Object.getPrototypeOf(a) === Object.getPrototypeOf(b);
}

describe('transactionFastPath', () => {
  it('returns exactly what transactionSchema returns, or defers to it (arbitrary items, fixed seed)', () => {
    let answered = 0;
    fc.assert(
      fc.property(fc.oneof({ arbitrary: item, weight: 9 }, { arbitrary: notAnObject, weight: 1 }), (input) => {
        const fast = transactionFastPath(input);
        if (fast === undefined) return; // the schema decides, as it did before the fast path
        answered += 1;
        const zod = transactionSchema.safeParse(input);
        expect(zod.success).toBe(true);
        expect(same(fast, zod.data)).toBe(true);
      }),
      { seed: SEED, numRuns: 5000 },
    );
    // The property says nothing if the fast path always defers.
    expect(answered).toBeGreaterThan(500);
  });

  it('answers for every well-formed item, so that the schema is the exception on the export path', () => {
    fc.assert(
      fc.property(
        fc.record({
          publicId: guid,
          amount,
          currency: fc.oneof(text, absent),
          // Absent or null too: optional, as the schema reads it (docs/assumptions.md).
          cashflowType: fc.oneof(text, absent),
          valueDate: timestamp,
          description: fc.oneof(text, absent),
          category: fc.oneof(guid, absent),
          bankAccount: fc.oneof(guid, absent),
        }),
        (fields) => {
          const input = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== ABSENT()));
          const fast = transactionFastPath(input);
          expect(fast).toBeDefined();
          expect(same(fast, transactionSchema.parse(input))).toBe(true);
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it('agrees with the schema on items as the lossless JSON parser produces them', () => {
    const body =
      '{"publicId":"00000000-0000-4000-8000-000000000001","amount":123456789012345678901,"valueDate":"2026-10-31T23:30:00-02:00","cashflowType":"Expense","__proto__":{"x":1},"note":"kept"}';
    const input = parseJsonLossless(body);
    expect(transactionFastPath(input)).toBeUndefined(); // an own __proto__ is zod's business
    const plain = parseJsonLossless(body.replace('"__proto__"', '"proto"'));
    expect(same(transactionFastPath(plain), transactionSchema.parse(plain))).toBe(true);
    expect(transactionFastPath(plain)).toMatchObject({
      amount: 123456789012345678901n,
      cashflowType: 'EXPENSE',
      currency: null,
      proto: { x: 1 },
      note: 'kept',
    });
  });

  it('leaves a bad item to the schema, whose message and path the client reports', async () => {
    const bad = transaction(3, { valueDate: '2026-02-30T10:00:00Z' });
    const fake = fakeTransport(() => json(200, { count: 2, next: null, previous: null, results: [transaction(2), bad] }));
    const client = new AccountingClient({
      baseUrl: BASE_URL,
      credentials: apiKeyAuth('sbx_FastPathKey0123456789abcdefghijklm'),
      transport: fake.transport,
      clock: ManualClock.autoAdvancing(),
    });
    const error = await client.transactions
      .list()
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    const expected = transactionSchema.safeParse(bad);
    expect(expected.success).toBe(false);
    expect((error as ResponseValidationError).issues).toEqual([
      { path: 'results[1].valueDate', message: expected.error!.issues[0]!.message },
    ]);
  });
});

describe('isGuid', () => {
  it("accepts exactly what uuidSchema (zod's guid) accepts", () => {
    const nearGuid = fc
      .tuple(guid, fc.nat(), fc.constantFrom('', '-', 'g', 'G', '0', 'F', ' ', 'é', '٣', '\u0000'))
      .map(([id, at, char]) => {
        const i = at % (id.length + 1);
        return id.slice(0, i) + char + id.slice(i + 1);
      });
    fc.assert(
      fc.property(fc.oneof(guid, nearGuid, fc.string()), (text) => {
        expect(isGuid(text)).toBe(uuidSchema.safeParse(text).success);
      }),
      { seed: SEED, numRuns: 20_000 },
    );
  });
});
