import { fetchTransport, type Transport, type TransportRequest } from '../../src/core/accounting-api';
import type { Clock, ManualClock } from '../../src/core/shared/clock';
import type { RunningSandbox } from '../../sandbox';

/**
 * The client's clock in the fault matrix: `now` is the world's ManualClock, and each sleep (a
 * retry's backoff or a `Retry-After`) is recorded and moves that clock forward at once, so a test
 * asserts the exact wait without waiting.
 */
export interface SleepingClock extends Clock {
  readonly sleeps: number[];
}

export function sleepingClock(clock: ManualClock): SleepingClock {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => clock.now(),
    sleep: (ms) => {
      sleeps.push(ms);
      clock.advance(Math.max(0, ms));
      return Promise.resolve();
    },
  };
}

/** The error a promise rejects with (the test fails if it resolves). */
export async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** How many requests of `route` the sandbox has answered with `status` so far. */
export async function answered(sandbox: RunningSandbox, route: string, status: number): Promise<number> {
  return (await sandbox.admin.stats()).byRouteAndStatus[route]?.[String(status)] ?? 0;
}

/** A client timeout for cells where the sandbox holds a request on its (manual) clock: it never answers in time. */
export const SHORT_TIMEOUT_MS = 250;

/**
 * The real transport, with the short timeout on the first request `matches` (the one the sandbox
 * holds) only: every other request keeps the client's own timeout, so a loaded machine cannot turn
 * an ordinary request into a second, unplanned timeout.
 */
export function firstRequestTimesOut(matches: (request: TransportRequest) => boolean, transport: Transport = fetchTransport()): Transport {
  let fired = false;
  return (request) => {
    if (fired || !matches(request)) return transport(request);
    fired = true;
    return transport({ ...request, timeoutMs: SHORT_TIMEOUT_MS });
  };
}
