import { ManualClock } from '../../../src/core/shared/clock';
import { silentLogger } from '../../../src/core/shared/logger';
import { noMetrics } from '../../../src/core/shared/metrics';
import { TokenLifecycle, type RefreshOutcome, type TokenLifecycleDeps } from '../../../src/core/tokens/token-lifecycle';

/**
 * `refreshBatch` with a `signal`: a caller that is stopping (the CLI's Ctrl-C during `tokens refresh
 * --all`) starts no further user once it is aborted; the users under way end and are the result,
 * and `onOutcome` is told of each as it ends. The CLI's line used to say "stopped" of a batch that
 * went on to refresh every user. Each user's refresh is stood in for: what is tested is which
 * users are started.
 */
describe('TokenLifecycle.refreshBatch: stopping between users', () => {
  function lifecycle(concurrency: number) {
    // The refresh itself is replaced below; the batch reads nothing else of these.
    const deps = {
      clock: new ManualClock(0),
      logger: silentLogger,
      metrics: noMetrics,
      settings: { concurrency },
    } as unknown as TokenLifecycleDeps;
    return new TokenLifecycle(deps);
  }

  it.each([
    [1, ['a']],
    [2, ['a', 'b']],
  ])(
    'concurrency %i, aborted while the first user is refreshed: only the users already started are refreshed and reported (%j)',
    async (concurrency, started) => {
      const batch = lifecycle(concurrency);
      const stop = new AbortController();
      const refresh = jest.spyOn(batch, 'refresh').mockImplementation(async (externalId) => {
        // The signal lands while the first user's refresh is under way (each worker has started one by then).
        await Promise.resolve();
        if (externalId === 'a') stop.abort();
        await Promise.resolve();
        return { externalId, result: 'refreshed' };
      });
      const told: string[] = [];
      const outcomes = await batch.refreshBatch(['a', 'b', 'c', 'd'], { signal: stop.signal, onOutcome: (o) => told.push(o.externalId) });
      expect(refresh.mock.calls.map(([id]) => id)).toEqual(started);
      expect(outcomes).toEqual(started.map((externalId): RefreshOutcome => ({ externalId, result: 'refreshed' })));
      expect(told.sort()).toEqual(started);
    },
  );

  it('a signal aborted before the batch starts none; without a signal every user is refreshed, in the order asked', async () => {
    const batch = lifecycle(10);
    const refresh = jest
      .spyOn(batch, 'refresh')
      .mockImplementation((externalId) => Promise.resolve<RefreshOutcome>({ externalId, result: 'refreshed' }));
    expect(await batch.refreshBatch(['a', 'b'], { signal: AbortSignal.abort() })).toEqual([]);
    expect(refresh).not.toHaveBeenCalled();
    expect((await batch.refreshBatch(['b', 'a', 'b'])).map((o) => o.externalId)).toEqual(['b', 'a', 'b']);
  });
});
