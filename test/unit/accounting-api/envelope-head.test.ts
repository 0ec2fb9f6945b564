import fc from 'fast-check';
import { envelopeNextFromHead } from '../../../src/core/accounting-api/envelope-head';

const head = (text: string) => envelopeNextFromHead(Buffer.from(text, 'utf8'));
const NEXT = 'https://api.test/api/v1/accounting/transactions/?date_from=2026-10-01&page=3&page_size=1000';

describe("envelopeNextFromHead: a list page's next, from its first bytes", () => {
  it('reads next from an envelope in the order Django REST framework writes it, before results arrive', () => {
    const body = JSON.stringify({ count: 3000, next: NEXT, previous: null, results: [{ a: 1 }] });
    expect(head(body)).toBe(NEXT);
    expect(head(body.slice(0, body.indexOf('"results"') + 4))).toBe(NEXT);
    expect(head('{"count":3000,"next":null,"previous":"x"')).toBeNull();
  });

  it('reads past a UTF-8 byte order mark, as the parse of the whole body does', () => {
    expect(head(`\uFEFF${JSON.stringify({ count: 3000, next: NEXT, previous: null, results: [] })}`)).toBe(NEXT);
    expect(head('\uFEFF {"next":null,')).toBeNull();
    // Only at the start, and only the whole mark.
    expect(head(' \uFEFF{"next":"n","results":[]}')).toBeUndefined();
    expect(envelopeNextFromHead(Uint8Array.of(0xef, 0xbb, 0x7b, 0x7d))).toBeUndefined();
  });

  it('decodes the string as JSON.parse does: escapes in the key and the value, whitespace between tokens', () => {
    expect(head('{ "count" : 1.5e3 ,\n\t"ne\\u0078t" : "https:\\/\\/api.test\\/?q=\\"\\u00fc\\"" , "results": []}')).toBe(
      'https://api.test/?q="ü"',
    );
    expect(head('{"previous":null,"flag":true,"other":false,"neg":-1,"next":"n"}')).toBe('n');
  });

  it('gives up (undefined) where the head does not show next before anything but a scalar', () => {
    // The minimal dialect's order: results first.
    expect(head(JSON.stringify({ results: [{ next: 'inside an item' }], count: 1, next: NEXT }))).toBeUndefined();
    expect(head('{"meta":{"next":"nested"},"next":"n"}')).toBeUndefined();
    expect(head('{"list":[1],"next":"n"}')).toBeUndefined();
    expect(head('[{"next":"n"}]')).toBeUndefined();
    expect(head('')).toBeUndefined();
  });

  it('gives up where the head ends first: inside the string, inside a number that may go on, or before next', () => {
    expect(head(`{"count":3,"next":"${NEXT.slice(0, 20)}`)).toBeUndefined();
    expect(head('{"count":30')).toBeUndefined();
    expect(head('{"count":30,')).toBeUndefined();
    expect(head('{"count":30,"ne')).toBeUndefined();
  });

  it('gives up on a next that is not a JSON string or null; reads past other values without checking them', () => {
    expect(head('{"next":42,"results":[]}')).toBeUndefined();
    expect(head('{"next":"bad \\x escape","results":[]}')).toBeUndefined();
    expect(head('{"count":01,"next":"n"}')).toBe('n');
    expect(envelopeNextFromHead(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x2c, ...Buffer.from('"next":"n"}')]))).toBe('n');
    expect(envelopeNextFromHead(Buffer.from([...Buffer.from('{"next":"'), 0xc3, 0x28, 0x22, 0x7d]))).toBeUndefined();
  });

  it('at any cut of any envelope, answers either undefined or the first next JSON.parse sees at the top level', () => {
    const envelope = fc.record(
      {
        count: fc.nat(),
        next: fc.oneof(fc.constant(null), fc.webUrl({ withQueryParameters: true }), fc.string()),
        previous: fc.oneof(fc.constant(null), fc.string()),
        results: fc.array(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }), { maxLength: 3 }),
      },
      { requiredKeys: ['results'] },
    );
    const order = fc.shuffledSubarray(['count', 'next', 'previous', 'results'] as const, { minLength: 4 });
    fc.assert(
      fc.property(
        envelope,
        order,
        fc.constantFrom(undefined, 1, '\t'),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (value, keys, indent, cut) => {
          const ordered = Object.fromEntries(keys.filter((k) => k in value).map((k) => [k, value[k]]));
          const bytes = Buffer.from(JSON.stringify(ordered, null, indent), 'utf8');
          const answer = envelopeNextFromHead(bytes.subarray(0, Math.floor(bytes.length * cut)));
          if (answer !== undefined) expect(answer).toBe(value.next);
          // With the whole body and next before results, it always answers.
          if ('next' in value && keys.indexOf('next') < keys.indexOf('results')) expect(envelopeNextFromHead(bytes)).toBe(value.next);
        },
      ),
      { numRuns: 500 },
    );
  });
});
