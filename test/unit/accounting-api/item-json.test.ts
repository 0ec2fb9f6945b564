import { isAscii } from 'node:buffer';
import fc from 'fast-check';
import { listItemJson, type JsonText } from '../../../src/core/accounting-api';

const text = (t: JsonText) => Buffer.from(t.bytes.subarray(t.start, t.end)).toString('utf8');
/**
 * The items cut from the bytes alone and from the bytes with their text (which an ASCII body's scan
 * searches instead of its bytes): both ways must agree, whatever the body.
 */
const items = (body: string | Buffer, expected: number) => {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const fromBytes = listItemJson(bytes, expected)?.map(text);
  const withText = listItemJson(bytes, expected, bytes.toString('utf8'))?.map(text);
  expect(withText).toEqual(fromBytes);
  return fromBytes;
};

describe('listItemJson: each item of a list page as the JSON text the service sent', () => {
  it('cuts each element of `results` out of a compact page, in order and verbatim', () => {
    const body = '{"count":2,"next":null,"previous":null,"results":[{"a":1,"b":"x"},{"a":2.50,"big":9007199254740993}]}';
    // Number spellings (2.50) and literals beyond 2^53 stay as written: nothing is re-serialised.
    expect(items(body, 2)).toEqual(['{"a":1,"b":"x"}', '{"a":2.50,"big":9007199254740993}']);
  });

  it('follows strings: quotes, backslashes, brackets, commas and the word results inside them do not count', () => {
    const tricky = [
      { d: 'a "quoted" }, { word' },
      { d: 'ends with a backslash \\' },
      { d: '"results":[{"x":1}]', e: '\\"' },
      { d: '\u00fc\u20ac\ud83d\ude00 \u2028', nested: { results: [{ deep: true }] }, list: [[1], { k: [] }] },
    ];
    const body = JSON.stringify({ count: 4, results: tricky });
    expect(items(body, 4)).toEqual(tricky.map((t) => JSON.stringify(t)));
  });

  it('removes the whitespace between tokens, so a pretty-printed item is still one line; strings keep theirs', () => {
    const body = '{\r\n  "results" : [\n    {\n      "a" : [ 1 , 2 ],\n      "s": "two  spaces\\n"\n    } ,\t{ "b": null }\n  ]\n}';
    expect(items(body, 2)).toEqual(['{"a":[1,2],"s":"two  spaces\\n"}', '{"b":null}']);
  });

  it('takes the last `results` key, as JSON.parse does, and ignores a nested one', () => {
    const body = '{"results":[{"first":1}],"meta":{"results":[{"nested":1},{"n":2}]},"results":[{"last":1}]}';
    expect((JSON.parse(body) as { results: unknown[] }).results).toEqual([{ last: 1 }]);
    expect(items(body, 1)).toEqual(['{"last":1}']);
  });

  it.each([
    ['a bare array (the companies answer may be one)', '[{"a":1}]', 1],
    ['an object without results', '{"publicId":"c1","name":"Acme"}', 1],
    ['results that is not an array', '{"results":{"a":1}}', 1],
    ['string items', '{"results":["a","b"]}', 2],
    ['number items', '{"results":[1,2]}', 2],
    ['a count other than the parsed one', '{"results":[{"a":1},{"a":2}]}', 3],
  ])('is undefined for %s, so the caller serialises the parsed items instead', (_name, body, expected) => {
    expect(items(body, expected)).toBeUndefined();
  });

  it('is an empty list for an empty results array', () => {
    expect(items('{"count":0,"results":[]}', 0)).toEqual([]);
  });

  it('agrees with JSON.parse for any page of objects, however it is indented (property)', () => {
    const item = fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 6 });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 8 }), fc.constantFrom(undefined, 0, 1, 2, '\t', ' \r\n '), (results, indent) => {
        const body = JSON.stringify({ count: results.length, next: null, results }, null, indent as string | number | undefined);
        const parsed = (JSON.parse(body) as { results: unknown[] }).results;
        const cut = items(body, parsed.length);
        expect(cut).toBeDefined();
        // Each cut text parses to the same value as JSON.parse's item, and is one line.
        expect(cut!.map((t) => JSON.parse(t) as unknown)).toEqual(parsed);
        expect(cut!.every((t) => !/[\r\n]/.test(t))).toBe(true);
        if (indent === undefined) expect(cut).toEqual(parsed.map((p) => JSON.stringify(p)));
      }),
      { numRuns: 300 },
    );
  });
});

describe('listItemJson: an ASCII body, whose strings are searched in its text', () => {
  it('finds the closing quote after escaped quotes and backslash runs of any length', () => {
    const tricky = [{ d: 'a\\"b' }, { d: '\\\\' }, { d: '\\"}]' }, { d: '"' }, { e: '' }].map((t) => JSON.stringify(t));
    // A non-ASCII character escaped in the JSON text keeps the body ASCII.
    const lines = [...tricky, '{"u":"\\u00fc"}'];
    const body = `{"count":${lines.length},"results":[${lines.join(',')}]}`;
    expect(isAscii(Buffer.from(body))).toBe(true);
    expect(items(body, lines.length)).toEqual(lines);
  });

  it('uses the text only when it is the bytes: a text that differs (not the body) changes nothing', () => {
    const body = Buffer.from('{"results":[{"a":"x"}]}');
    expect(listItemJson(body, 1, '{"results":[{"a":"y"}]}  ')?.map(text)).toEqual(['{"a":"x"}']);
  });

  it('agrees with the byte scan for any ASCII page (property)', () => {
    const ascii = fc.string({ unit: fc.constantFrom('a', '"', '\\', '{', '}', '[', ']', ',', ':', ' ', 'r', 'e', 's', 'u', 'l', 't') });
    const item = fc.dictionary(ascii, fc.oneof(ascii, fc.integer(), fc.constant(null), fc.array(ascii, { maxLength: 3 })), { maxKeys: 5 });
    fc.assert(
      fc.property(fc.array(item, { maxLength: 6 }), fc.constantFrom(undefined, 0, 2), (results, indent) => {
        const body = JSON.stringify({ count: results.length, results }, null, indent);
        const parsed = (JSON.parse(body) as { results: unknown[] }).results;
        const cut = items(body, parsed.length);
        expect(cut!.map((t) => JSON.parse(t) as unknown)).toEqual(parsed);
      }),
      { numRuns: 500 },
    );
  });
});

describe('listItemJson: where JSON.parse would read another array, or other text', () => {
  it('reads an escaped key as the key it spells, and follows the last results key, as JSON.parse does', () => {
    expect(items('{"res\\u0075lts":[{"a":1}]}', 1)).toEqual(['{"a":1}']);
    const body = '{"results":[{"id":1}],"re\\u0073ults":[{"id":2}]}';
    expect((JSON.parse(body) as { results: unknown }).results).toEqual([{ id: 2 }]);
    expect(items(body, 1)).toEqual(['{"id":2}']);
  });

  it.each([
    ['a later results key holding an object', '{"results":[{"id":1}],"results":{"id":2}}'],
    ['a later results key holding a string', '{"results":[{"id":1}],"results":"x"}'],
    ['a later results key holding a number', '{"results":[{"id":1}],"results":1}'],
    ['a later escaped results key holding null', '{"results":[{"id":1}],"r\\u0065sults":null}'],
  ])('is undefined for %s: the array it saw first is not what JSON.parse keeps', (_name, body) => {
    expect(items(body, 1)).toBeUndefined();
  });

  it('treats a value spelt results as a value, not a key', () => {
    const body = '{"next":"results","previous":"results","results":[{"id":1}],"meta":"results"}';
    expect(items(body, 1)).toEqual(['{"id":1}']);
  });

  it('is undefined for a body that is not valid UTF-8: the parsed text has U+FFFD where the bytes do not', () => {
    const body = Buffer.concat([Buffer.from('{"results":[{"a":"'), Buffer.from([0xe9]), Buffer.from('"}]}')]);
    expect((JSON.parse(body.toString('utf8')) as { results: { a: string }[] }).results[0]!.a).toBe('\ufffd');
    expect(items(body, 1)).toBeUndefined();
  });

  it('agrees with JSON.parse when keys are escaped, repeated or nested (property)', () => {
    const key = fc.constantFrom('results', 're\\u0073ults', 'next', 'count', 'x');
    const value = fc.oneof(fc.constantFrom('[{"a":1}]', '[{"b":2},{"c":[3]}]', '[]', '{"r":1}', '"results"', '1', 'null', '[1]'));
    fc.assert(
      fc.property(fc.array(fc.tuple(key, value), { minLength: 1, maxLength: 5 }), (members) => {
        const body = `{${members.map(([k, v]) => `"${k}":${v}`).join(',')}}`;
        const parsed = (JSON.parse(body) as { results?: unknown }).results;
        const records = Array.isArray(parsed) && parsed.every((r) => r !== null && typeof r === 'object') ? parsed : undefined;
        const cut = items(body, records?.length ?? 1);
        if (cut === undefined) return;
        // Whatever is returned is exactly JSON.parse's results.
        expect(records).toBeDefined();
        expect(cut.map((t) => JSON.parse(t) as unknown)).toEqual(records);
      }),
      { numRuns: 2000 },
    );
  });
});
