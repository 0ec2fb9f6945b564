import fc from 'fast-check';
import {
  AccountingClient,
  type AccountingApiWarning,
  ResponseValidationError,
  apiKeyAuth,
  categorySchema,
  ignoredFieldsOf,
  clientTypeSchema,
  instantOf,
  invoiceStatusSchema,
  localDateOf,
  parseJsonLossless,
  taxReportSchema,
  timestampMillis,
  toUtcIso,
  transactionSchema,
} from '../../../src/core/accounting-api';
import { hasSixteenDigitRun, hasSixteenDigitRunIn, quoteUnsafeIntegers } from '../../../src/core/accounting-api/lossless-json';
import { ManualClock } from '../../../src/core/shared/clock';
import { BASE_URL, type Handler, category, fakeTransport, json, listHandler, transaction } from './fake-transport';

function setup(handler: Handler) {
  const fake = fakeTransport(handler);
  const warnings: AccountingApiWarning[] = [];
  const client = new AccountingClient({
    baseUrl: BASE_URL,
    credentials: apiKeyAuth('sbx_SchemaKey0123456789abcdefghijklmn'),
    transport: fake.transport,
    clock: ManualClock.autoAdvancing(),
    onWarning: (w) => warnings.push(w),
  });
  return { client, fake, warnings };
}

describe('schema drift', () => {
  it('names the path of a missing field, not its value', async () => {
    const items = [transaction(0), transaction(1), transaction(2), transaction(3)];
    delete items[3]!.amount;
    const { client } = setup(listHandler('/accounting/transactions/', items));
    const error = await client.transactions
      .list()
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as ResponseValidationError).field).toBe('results[3].amount');
    expect((error as ResponseValidationError).message).toContain('results[3].amount: expected number or string or bigint');
    expect((error as ResponseValidationError).requestId).toBe('req_0123abcd');
  });

  it('names a bad value by path without quoting it', async () => {
    const { client } = setup(
      listHandler('/accounting/transactions/', [
        transaction(0, { amount: '123.4567' }),
        transaction(1, { valueDate: '2026-10-31T23:30:00' }),
      ]),
    );
    const error = (await client.transactions
      .list()
      .all()
      .catch((e: unknown) => e)) as ResponseValidationError;
    expect(error.field).toBe('results[0].amount');
    expect(error.message).not.toContain('123.4567');
  });

  it('names a broken envelope', async () => {
    const { client } = setup(() => json(200, { count: '3', next: null, results: [] }));
    await expect(client.companies.list().all()).rejects.toMatchObject({ issues: [{ path: 'count' }] });
    const notJson = setup(() => ({ status: 200, headers: {}, body: '{"count": 1, "results": [' }));
    await expect(notJson.client.companies.list().all()).rejects.toBeInstanceOf(ResponseValidationError);
  });

  it('tolerates unknown fields and keeps them', () => {
    const parsed = transactionSchema.parse(transaction(1, { futureField: { x: 1 }, tags: ['a'] }));
    expect(parsed.futureField).toEqual({ x: 1 });
    expect(parsed.tags).toEqual(['a']);
  });

  it('records a missing currency as null', () => {
    const t = transaction(1);
    delete t.currency;
    expect(transactionSchema.parse(t).currency).toBeNull();
  });
});

describe('enums', () => {
  it('normalises display labels to request values', () => {
    expect(transactionSchema.parse(transaction(1, { cashflowType: 'Expense' })).cashflowType).toBe('EXPENSE');
    expect(transactionSchema.parse(transaction(1, { cashflowType: 'income' })).cashflowType).toBe('INCOME');
    expect(invoiceStatusSchema.parse('Draft')).toBe('draft');
    expect(clientTypeSchema.parse('Business')).toBe('business');
    expect(categorySchema.parse(category(1, { vatApplied: 'Yes' })).vatApplied).toBe('YES');
  });

  it('keeps unknown values verbatim instead of refusing them', () => {
    expect(transactionSchema.parse(transaction(1, { cashflowType: 'Internal Transfer' })).cashflowType).toBe('Internal Transfer');
    expect(invoiceStatusSchema.parse('Partially Paid')).toBe('Partially Paid');
  });
});

describe('timestamps and dates', () => {
  it('keeps valueDate as written and converts on request', () => {
    const parsed = transactionSchema.parse(transaction(1, { valueDate: '2026-10-31T23:30:00-02:00' }));
    expect(parsed.valueDate).toBe('2026-10-31T23:30:00-02:00');
    expect(localDateOf(parsed.valueDate)).toBe('2026-10-31');
    expect(toUtcIso(parsed.valueDate)).toBe('2026-11-01T01:30:00.000Z');
    expect(instantOf('2026-03-29T02:30:00.123456+05:30').toISOString()).toBe('2026-03-28T21:00:00.123Z');
  });

  it('agrees with Date for every valid timestamp with an offset', () => {
    const stamp = fc
      .record({
        ms: fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2100, 0, 1) }),
        offset: fc.integer({ min: -12 * 60, max: 14 * 60 }),
      })
      .map(({ ms, offset }) => {
        const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
        const abs = Math.abs(offset);
        const sign = offset < 0 ? '-' : '+';
        return { ms, text: `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}` };
      });
    fc.assert(fc.property(stamp, ({ ms, text }) => expect(timestampMillis(text)).toBe(ms)));
  });

  it('refuses a timestamp without an offset or on an impossible day', () => {
    for (const bad of ['2026-10-31T23:30:00', '2026-10-31', '2026-02-30T00:00:00Z', '2026-10-31T24:00:00Z', '2026-10-31T23:30:00+25:00']) {
      expect(transactionSchema.safeParse(transaction(1, { valueDate: bad })).success).toBe(false);
    }
  });

  it('reads the other ISO 8601 forms as written, and a refusal names the wrong part, not the text', () => {
    for (const [text, local, utc] of [
      ['2026-10-20T10:00:00,5+02:00', '2026-10-20', '2026-10-20T08:00:00.500Z'],
      ['20261020T100000+0200', '2026-10-20', '2026-10-20T08:00:00.000Z'],
      ['2026-10-20T10:00:00+02', '2026-10-20', '2026-10-20T08:00:00.000Z'],
    ] as const) {
      const parsed = transactionSchema.parse(transaction(1, { valueDate: text }));
      expect(parsed.valueDate).toBe(text);
      expect(localDateOf(text)).toBe(local);
      expect(toUtcIso(text)).toBe(utc);
    }
    const refused = transactionSchema.safeParse(transaction(1, { valueDate: '2026-10-20T10:00:00' }));
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({ path: ['valueDate'], message: expect.stringMatching(/^no offset after the time/) }),
    ]);
    expect(() => instantOf('2026-13-20T10:00:00Z')).toThrow('the month of the date is out of range (01-12)');
  });

  it('validates YYYY-MM-DD dates', () => {
    const report = {
      pk: '7c0e8a9b-1d2e-4f3a-8b4c-5d6e7f8a9b0c',
      type: 'VAT_RETURN',
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31',
      status: 'submitted',
      amountDue: '1234.56',
      currency: 'EUR',
      createdAt: '2026-11-02T08:00:00Z',
    };
    expect(taxReportSchema.parse(report).amountDue).toBe(123456n);
    // Not named by the spec: an impossible or misspelt date is read as absent and reported, not refused.
    const leap = taxReportSchema.parse({ ...report, periodEnd: '2026-02-29' });
    expect(leap.periodEnd).toBeNull();
    expect(ignoredFieldsOf(leap)).toEqual(['periodEnd']);
    const slashed = taxReportSchema.parse({ ...report, periodStart: '2026/10/01' });
    expect([slashed.periodStart, ignoredFieldsOf(slashed)]).toEqual([null, ['periodStart']]);
  });
});

describe('category metadata', () => {
  it('parses the JSON text into an object', () => {
    const parsed = categorySchema.parse(category(1, { metadata: '{"code": 42, "tags": ["a"]}' }));
    expect(parsed.metadata).toEqual({ code: 42, tags: ['a'] });
    expect(parsed.metadataIssue).toBeNull();
    expect(categorySchema.parse(category(1, { metadata: '' })).metadata).toBeNull();
  });

  it('keeps invalid JSON raw and warns with a typed warning naming the item', async () => {
    const items = [category(1), category(2, { metadata: '{not json' }), category(3, { metadata: '[1,2]' })];
    const { client, warnings } = setup(listHandler('/accounting/categories/', items, { sizeParam: 'pageSize' }));
    const read = await client.categories.list().all();
    expect(read[1]!.parsed.metadata).toBeNull();
    expect(read[1]!.parsed.metadataIssue).toBe('invalid_json');
    expect(read[1]!.raw.metadata).toBe('{not json');
    expect(warnings).toEqual([
      {
        type: 'invalid_category_metadata',
        request: 'GET /api/v1/accounting/categories/?pageSize=1000',
        path: 'results[1]',
        publicId: items[1]!.publicId,
        issue: 'invalid_json',
      },
      {
        type: 'invalid_category_metadata',
        request: 'GET /api/v1/accounting/categories/?pageSize=1000',
        path: 'results[2]',
        publicId: items[2]!.publicId,
        issue: 'not_an_object',
      },
    ]);
  });
});

describe('lossless JSON', () => {
  it('keeps integers beyond 2^53 exact, in raw and parsed', async () => {
    const big = '-123456789012345678901';
    const body = `{"count":1,"next":null,"previous":null,"results":[${JSON.stringify(transaction(1)).replace('"amount":-1001', `"amount":${big}`)}]}`;
    const { client } = setup(() => ({ status: 200, headers: {}, body }));
    const [item] = await client.transactions.list().all();
    expect(item!.parsed.amount).toBe(BigInt(big));
    expect(item!.raw.amount).toBe(big);
    // With the body's bytes, as the default transport hands them over, the look for long integers reads those.
    const withBytes = setup(() => ({ status: 200, headers: {}, body, bytes: Buffer.from(body) })).client;
    const [fromBytes] = await withBytes.transactions.list().all();
    expect(fromBytes!.parsed.amount).toBe(BigInt(big));
    expect(fromBytes!.raw.amount).toBe(big);
  });

  it('leaves long digit runs inside strings alone, escapes included', () => {
    const text = '{"d":"IBAN DE89370400440532013000 \\"12345678901234567890\\"","n":12345678901234567890,"f":1.5e300,"s":9007199254740991}';
    expect(parseJsonLossless(text)).toEqual({
      d: 'IBAN DE89370400440532013000 "12345678901234567890"',
      n: '12345678901234567890',
      f: 1.5e300,
      s: 9007199254740991,
    });
  });

  it('turns exactly the unsafe integers into digit strings', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), { maxLength: 20 }), fc.string(), (numbers, text) => {
        const parsed = parseJsonLossless(
          JSON.stringify({ text, numbers: numbers.map(String) }).replace(
            /"numbers":\[(.*)\]/,
            (_m, list: string) => `"numbers":[${list.replace(/"/g, '')}]`,
          ),
        ) as { text: string; numbers: unknown[] };
        expect(parsed.text).toBe(text);
        parsed.numbers.forEach((value, i) => {
          const n = numbers[i]!;
          const safe = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER);
          expect(value).toStrictEqual(safe ? Number(n) : n.toString());
        });
      }),
    );
  });

  it('finds a run of 16 digits exactly where /\\d{16}/ does, wherever the run starts and ends', () => {
    const digits = fc.stringMatching(/^\d{0,40}$/);
    const other = fc.stringMatching(/^[^0-9]{0,20}$/);
    const text = fc
      .array(fc.oneof(digits, other, fc.constantFrom('٣', '0x', '9.99', '"')), { maxLength: 12 })
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, (t) => {
        expect(hasSixteenDigitRun(t)).toBe(/\d{16}/.test(t));
        // The same look on the text's UTF-8 bytes (how a transport's body arrives), multi-byte characters included.
        expect(hasSixteenDigitRunIn(Buffer.from(t))).toBe(/\d{16}/.test(t));
      }),
      { seed: 20261121, numRuns: 20_000 },
    );
    expect(hasSixteenDigitRun('1234567890123456')).toBe(true);
    expect(hasSixteenDigitRun('123456789012345 1234567890123456')).toBe(true);
    expect(hasSixteenDigitRun('x123456789012345')).toBe(false);
  });

  it('returns the text untouched when nothing needs quoting', () => {
    const text = '{"a":"12345678901234567890","b":[1,2,3]}';
    expect(quoteUnsafeIntegers(text)).toBe(text);
  });
});
