/**
 * Time is a port so that token expiry, grace periods and retry backoff are tested with a
 * controllable clock instead of sleeps.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves after `ms` of this clock's time. An aborted `signal` cancels the wait (the promise
   * rejects with the signal's reason), so a timeout that lost its race leaves no timer behind.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/**
 * A clock that only moves when told. `sleep` resolves as soon as `advance` passes its deadline,
 * so code that backs off can be driven to completion without real waiting.
 */
export class ManualClock implements Clock {
  private current: number;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(start: number | Date = Date.UTC(2026, 10, 1, 9, 0, 0)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const sleeper = { until: this.current + ms, resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Moves time forward and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.current += ms;
    const due = this.sleepers.filter((s) => s.until <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.until > this.current);
    for (const s of due) s.resolve();
  }

  set(time: number | Date): void {
    this.advance((typeof time === 'number' ? time : time.getTime()) - this.current);
  }

  /** A clock whose sleeps advance time by themselves: for tests that only care about order. */
  static autoAdvancing(start?: number | Date): ManualClock {
    const clock = new ManualClock(start);
    clock.sleep = (ms: number) => {
      clock.advance(Math.max(0, ms));
      return Promise.resolve();
    };
    return clock;
  }
}
