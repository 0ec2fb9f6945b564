import { ManualClock, systemClock } from '../../../src/core/shared/clock';

// Clock.sleep's optional signal: a timeout that lost its race is cancelled, leaving no timer.

describe('Clock.sleep with an abort signal', () => {
  it('ManualClock: an aborted sleep rejects with the reason and no longer wakes', async () => {
    const clock = new ManualClock();
    const cancel = new AbortController();
    const woke: string[] = [];
    const cancelled = clock.sleep(1000, cancel.signal).then(
      () => woke.push('cancelled one'),
      (reason: unknown) => woke.push(`rejected: ${String(reason)}`),
    );
    const other = clock.sleep(1000).then(() => woke.push('other'));
    cancel.abort('done');
    await cancelled;
    clock.advance(1000);
    await other;
    expect(woke).toEqual(['rejected: done', 'other']);
  });

  it('ManualClock and systemClock refuse to start a sleep on an aborted signal', async () => {
    const signal = AbortSignal.abort('late');
    await expect(new ManualClock().sleep(10, signal)).rejects.toBe('late');
    await expect(systemClock.sleep(10, signal)).rejects.toBe('late');
  });

  it('systemClock: aborting clears the timer, so nothing keeps the process alive', async () => {
    jest.useFakeTimers();
    try {
      const cancel = new AbortController();
      const sleeping = systemClock.sleep(60_000, cancel.signal);
      expect(jest.getTimerCount()).toBe(1);
      cancel.abort(new Error('no longer needed'));
      expect(jest.getTimerCount()).toBe(0);
      await expect(sleeping).rejects.toThrow('no longer needed');
    } finally {
      jest.useRealTimers();
    }
  });
});
