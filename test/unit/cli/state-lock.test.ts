import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
