/**
 * JSON.stringify that writes a bigint as bare digits, so an integer amount beyond 2^53 goes out
 * exactly as the service would send it (and a client must parse it losslessly to keep it).
 */
const MARK = '__sandbox_bigint__';
const MARKED = new RegExp(`"${MARK}(-?\\d+)"`, 'g');

export function stringifyJson(value: unknown): string {
  try {
    // Fast path: without a replacer; JSON.stringify throws on the first bigint.
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${MARK}${v.toString()}` : v));
  return text.replace(MARKED, '$1');
}

/**
 * The same JSON with the separators Python's `json.dumps` writes by default (`", "` and `": "`):
 * the minimal dialect's spelling, so that a client meets a body that is not compact, as a service
 * not written to it may send (docs/assumptions.md, "The minimal dialect").
 */
export function spacedJson(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i++;
      while (i < text.length && text.charCodeAt(i) !== QUOTE) i += text.charCodeAt(i) === BACKSLASH ? 2 : 1;
    } else if (c === COMMA || c === COLON) {
      out += `${text.slice(from, i + 1)} `;
      from = i + 1;
    }
  }
  return out + text.slice(from);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
