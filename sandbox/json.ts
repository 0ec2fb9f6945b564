/**
 * JSON.stringify that writes a bigint as bare digits, so an integer amount beyond 2^53 goes out
 * exactly as the service would send it (and a client must parse it losslessly to keep it).
 */
const MARK = '__sandbox_bigint__';
const MARKED = new RegExp(`"${MARK}(-?\\d+)"`, 'g');

export function stringifyJson(value: unknown): string {
  let sawBigint = false;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    sawBigint = true;
    return `${MARK}${v.toString()}`;
  });
  return sawBigint ? text.replace(MARKED, '$1') : text;
}
