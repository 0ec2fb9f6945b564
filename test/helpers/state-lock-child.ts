import { lockStateDir } from '../../cli/local/state-dir';

/**
 * A process contending for a state directory's lock (test/unit/cli/state-lock.test.ts): for each
 * round the parent sends, it spins until the shared start time, tries the lock, holds it a moment
 * and reports when it held it.
 */
interface Round {
  dir: string;
  startAt: number;
  holdMs: number;
}

process.on('message', (message: Round | 'exit') => {
  if (message === 'exit') return process.disconnect();
  void (async () => {
    while (Date.now() < message.startAt) {
      // Spinning, not a timer: both processes try within the same millisecond or so.
    }
    try {
      const unlock = await lockStateDir(message.dir);
      const from = Date.now();
      await new Promise((resolve) => setTimeout(resolve, message.holdMs));
      const to = Date.now();
      await unlock();
      process.send!({ held: { from, to } });
    } catch (error) {
      process.send!({ refused: (error as Error).name });
    }
  })();
});
