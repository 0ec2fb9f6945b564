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
