/**
 * The `next` of a list envelope read from the first bytes of its body, before the rest has arrived
 * or been parsed, so that a list can request the following page meanwhile (pagination.ts). Only a
 * guess: the caller compares it with the parsed envelope's `next` and drops the request it sent
 * when they differ (a later duplicate key, say, which `JSON.parse` would take instead).
 *
 * The spec shows the envelope's fields (§8) but not their order. Our sandbox's default dialect
 * sends `count`, `next`, `previous`, `results`, as Django REST framework does; its minimal dialect
 * sends `results` first, where this gives up and the list waits for the parsed page as before.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const COMMA = 0x2c;
const COLON = 0x3a;

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The top-level `next` of the object that `head` starts: its string, or null; undefined when the
 * head does not show it before a value that is not a string, number, boolean or null (such as
 * `results`), before its end, or at all. Never throws: a head it cannot read is undefined.
 */
export function envelopeNextFromHead(head: Uint8Array): string | null | undefined {
  // Past a UTF-8 byte order mark, which the body's parse ignores too (request.ts).
  let i = skipWhitespace(head, head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0);
  if (head[i] !== OPEN_BRACE) return undefined;
  i = skipWhitespace(head, i + 1);
  while (head[i] === QUOTE) {
    const keyEnd = stringEnd(head, i);
    if (keyEnd < 0) return undefined;
    const key = jsonValue(head, i, keyEnd);
    i = skipWhitespace(head, keyEnd);
    if (head[i] !== COLON) return undefined;
    i = skipWhitespace(head, i + 1);
    const valueEnd = head[i] === QUOTE ? stringEnd(head, i) : scalarEnd(head, i);
    if (valueEnd < 0) return undefined;
    if (key === 'next') {
      const next = jsonValue(head, i, valueEnd);
      return typeof next === 'string' || next === null ? next : undefined;
    }
    i = skipWhitespace(head, valueEnd);
    if (head[i] !== COMMA) return undefined;
    i = skipWhitespace(head, i + 1);
  }
  return undefined;
}

/** Just past the closing quote of the string opening at `start`, or -1 when the head ends first. */
function stringEnd(head: Uint8Array, start: number): number {
  for (let i = start + 1; i < head.length; i++) {
    const byte = head[i]!;
    if (byte === BACKSLASH) i++;
    else if (byte === QUOTE) return i + 1;
  }
  return -1;
}

/**
 * Just past a number, `true`, `false` or `null` starting at `start`; -1 for anything else (an
 * object or array) or when the head ends inside it (its last digits may still be coming).
 */
function scalarEnd(head: Uint8Array, start: number): number {
  let i = start;
  while (i < head.length && isScalarByte(head[i]!)) i++;
  return i === start || i === head.length ? -1 : i;
}

function isScalarByte(byte: number): boolean {
  // Digits, lower-case letters (true, false, null, the exponent's e), E, +, - and the decimal point.
  return (
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x45 || byte === 0x2b || byte === 0x2d || byte === 0x2e
  );
}

function skipWhitespace(head: Uint8Array, start: number): number {
  let i = start;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x09 || head[i] === 0x0a || head[i] === 0x0d)) i++;
  return i;
}

/** The JSON value of `head` from `start` to `end`, or undefined where it is not valid JSON or UTF-8. */
function jsonValue(head: Uint8Array, start: number, end: number): unknown {
  try {
    return JSON.parse(decoder.decode(head.subarray(start, end))) as unknown;
  } catch {
    return undefined;
  }
}
