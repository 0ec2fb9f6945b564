import { mapWithConcurrency } from '../../../src/core/shared/concurrency';

/** A task whose completion the test controls, so concurrency is observed, not timed. */
function gated() {
  let running = 0;
  let peak = 0;
  const gates: (() => void)[] = [];
  const task = async (item: number) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise<void>((resolve) => gates.push(resolve));
    running--;
    return item * 2;
  };
  const releaseAll = async () => {
    while (gates.length > 0 || running > 0) {
      gates.splice(0).forEach((open) => open());
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { task, releaseAll, peak: () => peak, running: () => running };
}

describe('mapWithConcurrency', () => {
  it('never runs more than the limit at once and keeps the input order', async () => {
    const g = gated();
    const done = mapWithConcurrency([1, 2, 3, 4, 5, 6, 7], 3, g.task);
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.running()).toBe(3);
    await g.releaseAll();
    await expect(done).resolves.toEqual([2, 4, 6, 8, 10, 12, 14]);
    expect(g.peak()).toBe(3);
  });

  it('stops starting tasks after a failure and rejects once the started ones settle', async () => {
    const started: number[] = [];
    const result = mapWithConcurrency([1, 2, 3, 4, 5], 2, async (item) => {
      started.push(item);
      if (item === 2) throw new Error('boom');
      return item;
    });
    await expect(result).rejects.toThrow('boom');
    expect(started).not.toContain(4);
    expect(started).not.toContain(5);
  });

  it('refuses a limit below one', async () => {
    await expect(mapWithConcurrency([1], 0, async (x) => x)).rejects.toBeInstanceOf(RangeError);
  });
});
