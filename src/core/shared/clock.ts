/**
 * Time is a port so that token expiry, grace periods and retry backoff are tested with a
 * controllable clock instead of sleeps.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
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

  sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => this.sleepers.push({ until: this.current + ms, resolve }));
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
