import type { Context } from 'aws-lambda';

/** A handler as Lambda calls it. */
export type LambdaHandler<R = unknown> = (event: unknown, context: Context) => Promise<R>;

/**
 * Loads `functions/<dir>/handler.ts` as Lambda would: in a fresh module registry, with its own
 * ACCTOPS_FUNCTION, reading `process.env` on load (so set the environment first). A handler that
 * is misconfigured throws here, as its cold start would.
 */
export function loadHandler<R = unknown>(dir: string): LambdaHandler<R> {
  process.env.ACCTOPS_FUNCTION = dir;
  let handler: LambdaHandler<R> | undefined;
  jest.isolateModules(() => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded after the environment is set: it reads it on load
    handler = (require(`../../functions/${dir}/handler`) as { handler: LambdaHandler<R> }).handler;
  });
  return handler!;
}

/**
 * Makes fake Lambda contexts with what handlers read: a new request id each call
 * (`<prefix>-1`, `<prefix>-2`, …) and the time left before the function's timeout (set it to the
 * function's timeout where the handler plans by it).
 */
export function lambdaContexts(options: { remainingMs?: number; prefix?: string } = {}): () => Context {
  const { remainingMs = 60_000, prefix = 'req' } = options;
  let invocations = 0;
  return () => ({ awsRequestId: `${prefix}-${++invocations}`, getRemainingTimeInMillis: () => remainingMs }) as unknown as Context;
}

/**
 * Captures what the process writes to stdout and stderr (a handler's log lines and EMF documents;
 * Powertools Logger writes warn and error lines to stderr, and Lambda files both streams in the
 * same log) into `lines` instead of printing it, until the returned spy's `mockRestore()`, which
 * restores both. The global canary hook no longer sees those writes: scan `lines` yourself.
 */
export function captureStdout(lines: string[]): jest.SpyInstance {
  const capture = (chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  };
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(capture);
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation(capture);
  const restore = stdout.mockRestore.bind(stdout);
  stdout.mockRestore = () => {
    restore();
    stderr.mockRestore();
  };
  return stdout;
}
