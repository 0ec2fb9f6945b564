/**
 * An `@aws-sdk/*` package loaded when a rare path first needs it, not at module load.
 *
 * A function's cold start requires every SDK package its bundle imports (esbuild leaves them to
 * the runtime), about 5-15 ms each on top of the shared core. Paths most invocations never take
 * (the doctor's fan-out queue and its findings' events, the worker's queue for split months) load
 * theirs on first use instead; a package the function already loaded costs nothing here.
 */
export function sdkOnFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}
