/** The median; for an even count, the mean of the two middle values. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of nothing');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function max(values: readonly number[]): number {
  return values.reduce((a, b) => Math.max(a, b), -Infinity);
}

export function min(values: readonly number[]): number {
  return values.reduce((a, b) => Math.min(a, b), Infinity);
}

export const MB = 1024 * 1024;

/** `12.3` for bytes in MiB, one decimal. */
export function mib(bytes: number): string {
  return (bytes / MB).toFixed(1);
}

/** Kilobytes of 1,000 bytes, the unit of the 280 KB bundle target. */
export function kb(bytes: number): string {
  return (bytes / 1000).toFixed(1);
}
