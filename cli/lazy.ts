/**
 * A module loaded on first use. `export` and `doctor` need the Parquet writer and the S3 client,
 * about half a second of start-up that `users list` or `keys rotate` should not pay; a static
 * import would load them for every command. (A dynamic `import()` would go through Node's ESM
 * loader, which tsx's CommonJS hook in bin/acctops.cjs does not cover.)
 */
export function lazy<T>(load: () => T): () => T {
  let loaded: { value: T } | undefined;
  return () => (loaded ??= { value: load() }).value;
}
