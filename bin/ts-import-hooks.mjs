// Module hooks for running the CLI from its TypeScript sources (bin/acctops.cjs, when the bundle is
// stale). The CLI loads its heavy modules with `await import('./x.ts')` (the Parquet writer, the
// SDK clients, the sandbox), and Node's ESM loader, which serves every `import()`, does not know
// `.ts`. Answering "CommonJS, no source" makes Node hand the file to the CommonJS loader, where
// tsx's hook (registered by the bin) compiles it: one instance per module, shared with `require`.
// tsx's own ESM hooks would do too, but load a second compiler in the hooks thread.
export async function load(url, context, nextLoad) {
  if (url.startsWith('file:') && url.endsWith('.ts')) return { format: 'commonjs', shortCircuit: true };
  return nextLoad(url, context);
}
