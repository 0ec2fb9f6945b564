import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockStateDir, StateLockedError } from '../../../cli/local/state-dir';
import { ownIdentity, startOf } from '../../../src/adapters/local/process-identity';

/**
 * The one interleaving the 30-start test cannot force: between this process reading a stale lock and
 * moving it aside, another command takes the stale lock over and links its own. The file moved aside
 * is then that command's live lock, which must be put back, and this process refused.
 */
const hook: { beforeRename?: () => Promise<void> } = {};
jest.mock('node:fs/promises', () => {
  const actual = jest.requireActual<typeof fs>('node:fs/promises');
  return {
    ...actual,
    rename: async (from: string, to: string) => {
      const run = hook.beforeRename;
      hook.beforeRename = undefined;
      await run?.();
      return actual.rename(from, to);
    },
  };
});

(startOf(process.pid) !== undefined ? describe : describe.skip)(
  'lockStateDir: a stale lock taken over by another command meanwhile',
  () => {
    let dir: string;
    let other: ChildProcess;
    beforeAll(() => {
      other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    });
    afterAll(() => other.kill());
    beforeEach(async () => {
      dir = await fs.mkdtemp(join(tmpdir(), 'acctops-lock-race-'));
    });
    afterEach(() => fs.rm(dir, { recursive: true, force: true }));

    it('puts the other command’s live lock back and refuses, naming that command', async () => {
      const lock = join(dir, 'lock');
      // Stale: a pid no process has.
      await fs.writeFile(lock, JSON.stringify({ pid: 2 ** 22 + 7, start: '1', boot: ownIdentity().boot ?? null }));
      const live = JSON.stringify({ pid: other.pid, start: startOf(other.pid!), boot: ownIdentity().boot ?? null });
      hook.beforeRename = async () => {
        await fs.rm(lock);
        await fs.writeFile(lock, live);
      };
      const refused = await lockStateDir(dir).catch((e: unknown) => e);
      expect(hook.beforeRename).toBeUndefined();
      expect(refused).toBeInstanceOf(StateLockedError);
      expect((refused as StateLockedError).message).toContain(`pid ${other.pid}`);
      expect(await fs.readFile(lock, 'utf8')).toBe(live);
      // Nothing of this process is left behind: no temporary lock, no file moved aside.
      expect(await fs.readdir(dir)).toEqual(['lock']);
    });
  },
);
