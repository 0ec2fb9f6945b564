/**
 * Each item of a list page as the JSON text the service sent, cut from the body's bytes, so that
 * an export keeps a record verbatim (its raw JSONL) without serialising the parsed object again.
 * In the export's profile (2026-11-25) `JSON.stringify`, joining the lines and encoding them as
 * UTF-8 took ~1.4 µs a record and left strings for the collector; this scan takes ~0.9 µs
 * (BENCHMARKS.md, "Exports").
 *
 * Only called on a body that `JSON.parse` has accepted, so the grammar is known to be valid; the
 * scan only has to follow strings and nesting. Anything it does not recognise as a list envelope
 * (`{"results": [ {…}, … ]}` with objects or arrays as items) is `undefined`, and the caller
 * serialises the parsed items instead.
 */

import { isAscii, isUtf8 } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
/** `results` */
const RESULTS = [0x72, 0x65, 0x73, 0x75, 0x6c, 0x74, 0x73] as const;

/**
 * Where one item's JSON text is: `bytes` from `start` to `end` (exclusive), UTF-8, one line. A
 * plain object rather than a view per item: views cost the collector more (measured).
 */
export interface JsonText {
  readonly bytes: Uint8Array;
  readonly start: number;
  readonly end: number;
}

/**
 * The JSON text of every element of the top-level object's `results` array, in order: in `bytes`
 * when the element holds no whitespace between its tokens, else in a copy without it (so an item
 * is always one line, whatever the service's formatting). `undefined` when the body is not
 * such an envelope, an element is not an object or array, or the count differs from `expected`
 * (the items `JSON.parse` found): a slice that could disagree with the parsed items is never used.
 * With duplicate `results` keys (however spelt) the last one counts, as for `JSON.parse`.
 */
export function listItemJson(bytes: Uint8Array, expected: number, text?: string): JsonText[] | undefined {
  // An ASCII body's text has one character per byte, so a string's closing quote can be found with
  // `String.prototype.indexOf` (memchr) instead of a loop over its bytes: the scan takes half the
  // time on a page of transactions (2026-11-26: 0.4-0.5 against 0.95-1.0 ms a page of 1,000).
  const ascii = text !== undefined && text.length === bytes.length && isAscii(bytes) ? text : undefined;
  // A body that is not valid UTF-8 was read with U+FFFD in place of the bad bytes: its text would not
  // be the parsed values, nor UTF-8.
  if (ascii === undefined && !isUtf8(bytes)) return undefined;
  const n = bytes.length;
  let i = 0;
  while (i < n && isWhitespace(bytes[i]!)) i++;
  if (bytes[i] !== OPEN_BRACE) return undefined;

  let depth = 0;
  /** At depth 1: whether the next string is a key (after `{` or `,`) rather than a value (after `:`). */
  let expectKey = false;
  /** The last key at depth 1 was `results`, and its value has not started yet. */
  let resultsKey = false;
  let inResults = false;
  /** start, end, whitespace flag of each element of the `results` array being read */
  let spans: number[] = [];
  let found: number[] | undefined;
  let start = 0;
  let spaced = false;
  for (; i < n; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const open = i;
      if (ascii !== undefined) {
        i = closingQuote(ascii, i + 1);
        if (i < 0) return undefined;
      } else {
        i++;
        while (i < n && bytes[i] !== QUOTE) i += bytes[i] === BACKSLASH ? 2 : 1;
        if (i >= n) return undefined;
      }
      if (depth === 1) {
        if (expectKey) resultsKey = isResultsKey(bytes, open, i);
        else if (resultsKey) found = undefined;
      } else if (depth === 2 && inResults) {
        // A string item (`results: ["a"]`) is not a record.
        return undefined;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 0) expectKey = true;
      else if (depth === 1 && resultsKey) {
        if (c === OPEN_BRACKET) {
          inResults = true;
          spans = [];
        } else {
          found = undefined;
        }
        resultsKey = false;
      } else if (depth === 2 && inResults) {
        start = i;
        spaced = false;
      }
      depth++;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 2 && inResults) spans.push(start, i + 1, spaced ? 1 : 0);
      else if (depth === 1 && inResults) {
        inResults = false;
        found = spans;
      }
    } else if (c === COMMA) {
      if (depth === 1) expectKey = true;
    } else if (c === COLON) {
      if (depth === 1) expectKey = false;
    } else if (c === SPACE || c === LF || c === CR || c === TAB) {
      if (depth > 2 && inResults) spaced = true;
    } else if (depth === 2 && inResults) {
      // A number or literal item is not a record either.
      return undefined;
    } else if (depth === 1 && resultsKey) {
      // `results` followed by a number or literal: a later key replaced the array JSON.parse keeps.
      found = undefined;
    }
  }
  if (found === undefined || found.length !== expected * 3) return undefined;
  const items = new Array<JsonText>(expected);
  for (let k = 0; k < expected; k++) {
    const start = found[3 * k]!;
    const end = found[3 * k + 1]!;
    if (found[3 * k + 2] === 1) {
      const compact = withoutWhitespace(bytes, start, end);
      items[k] = { bytes: compact, start: 0, end: compact.length };
    } else {
      items[k] = { bytes, start, end };
    }
  }
  return items;
}

/** The index of the quote that closes the string whose contents start at `from`, or -1. */
function closingQuote(text: string, from: number): number {
  for (let at = from; ;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return -1;
    // Escaped when an odd number of backslashes stands right before it.
    let before = quote - 1;
    while (before >= from && text.charCodeAt(before) === BACKSLASH) before--;
    if ((quote - 1 - before) % 2 === 0) return quote;
    at = quote + 1;
  }
}

function isWhitespace(c: number): boolean {
  return c === SPACE || c === LF || c === CR || c === TAB;
}

/** Whether the string token from `open` to `close` (its quotes) reads `results`, escapes decoded. */
function isResultsKey(bytes: Uint8Array, open: number, close: number): boolean {
  if (bytes.subarray(open + 1, close).includes(BACKSLASH)) {
    // `"re\u0073ults"` is the same key to JSON.parse: rare, so decoded the slow way.
    return JSON.parse(Buffer.from(bytes.subarray(open, close + 1)).toString('utf8')) === 'results';
  }
  if (close - open !== RESULTS.length + 1) return false;
  for (let k = 0; k < RESULTS.length; k++) if (bytes[open + 1 + k] !== RESULTS[k]) return false;
  return true;
}

/** A copy of the value from `from` to `to` without the whitespace between its tokens. */
function withoutWhitespace(bytes: Uint8Array, from: number, to: number): Uint8Array {
  const out = new Uint8Array(to - from);
  let length = 0;
  for (let i = from; i < to; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const open = i;
      i++;
      while (bytes[i] !== QUOTE) i += bytes[i] === BACKSLASH ? 2 : 1;
      out.set(bytes.subarray(open, i + 1), length);
      length += i + 1 - open;
    } else if (!isWhitespace(c)) {
      out[length++] = c;
    }
  }
  return out.subarray(0, length);
}
