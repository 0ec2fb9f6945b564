import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetStateDir, StateLockedError } from '../../../cli/local/state-dir';

type Report = { held: { from: number; to: number } } | { refused: string };

describe('lockStateDir: one process at a time, even when two start together', () => {
  let dir: string;
  let children: ChildProcess[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-lock-'));
    children = [0, 1].map(() => fork(join(__dirname, '..', '..', 'helpers', 'state-lock-child.ts'), [], { execArgv: ['--import', 'tsx'] }));
  });
  afterAll(async () => {
    for (const child of children) if (child.connected) child.send('exit');
    await rm(dir, { recursive: true, force: true });
  });

  const round = (child: ChildProcess, startAt: number) =>
    new Promise<Report>((resolve, reject) => {
      child.once('error', reject);
      child.once('message', (m) => {
        child.off('error', reject);
        resolve(m as Report);
      });
      child.send({ dir, startAt, holdMs: 30 });
    });

  it('never lets both hold the lock, over 30 simultaneous starts', async () => {
    const held: { from: number; to: number }[][] = [];
    for (let i = 0; i < 30; i++) {
      // The first round leaves time for tsx to load the children.
      const startAt = Date.now() + (i === 0 ? 3000 : 50);
      const reports = await Promise.all(children.map((c) => round(c, startAt)));
      held.push(reports.flatMap((r) => ('held' in r ? [r.held] : [])));
      for (const r of reports) if ('refused' in r) expect(r.refused).toBe('StateLockedError');
    }
    // Both may hold it in one round only one after the other (a child that started late).
    for (const spans of held) {
      expect(spans.length).toBeGreaterThan(0);
      if (spans.length === 2) {
        const [a, b] = spans.sort((x, y) => x.from - y.from) as [{ from: number; to: number }, { from: number; to: number }];
        expect(b.from).toBeGreaterThanOrEqual(a.to);
      }
    }
  });
});

describe('resetStateDir: takes the lock like any command', () => {
  it('is refused while another live process holds the lock, and deletes nothing; deletes all once it is free', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acctops-reset-'));
    // A live process that is not this one: the pid a running command would have left in the lock.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      await writeFile(join(dir, 'state.json'), '{}');
      await writeFile(join(dir, 'tokens.json'), '{}');
      await writeFile(join(dir, 'lock'), String(holder.pid));
      await expect(resetStateDir(dir)).rejects.toBeInstanceOf(StateLockedError);
      expect((await readdir(dir)).sort()).toEqual(['lock', 'state.json', 'tokens.json']);

      holder.kill();
      await new Promise((resolve) => holder.once('exit', resolve));
      // The holder is gone: its lock is stale, taken over, and the whole directory goes.
      await expect(resetStateDir(dir)).resolves.toEqual({ removed: true, kept: [] });
      await expect(readdir(dir)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      holder.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
