import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockStateDir, resetStateDir, StateLockedError } from '../../../cli/local/state-dir';
import { ownIdentity, pidAlive, processState, startOf } from '../../../src/adapters/local/process-identity';

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

describe('lockStateDir: a lock whose pid is now another process is stale', () => {
  let dir: string;
  let other: ChildProcess;
  beforeAll(() => {
    // A live process that is not an acctops command holding this lock.
    other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-lock-pid-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));
  afterAll(() => other.kill());

  const lockFile = () => join(dir, 'lock');
  const takesIt = async () => {
    const unlock = await lockStateDir(dir);
    const held = JSON.parse(await readFile(lockFile(), 'utf8')) as { pid: number; start: string | null };
    await unlock();
    return held;
  };
  const linux = startOf(process.pid) !== undefined;

  it('records the pid, the start time and the boot, and reads them back as its own', async () => {
    const held = await takesIt();
    expect(held).toMatchObject({ pid: process.pid, start: ownIdentity().start ?? null, boot: ownIdentity().boot ?? null });
  });

  (linux ? it : it.skip)('takes over a lock naming a live pid whose start time is not the recorded one', async () => {
    await writeFile(lockFile(), JSON.stringify({ pid: other.pid, start: '1', boot: ownIdentity().boot }));
    expect((await takesIt()).pid).toBe(process.pid);
  });

  (linux ? it : it.skip)('takes over a lock of another boot', async () => {
    await writeFile(lockFile(), JSON.stringify({ pid: other.pid, start: startOf(other.pid!), boot: 'another-boot' }));
    expect((await takesIt()).pid).toBe(process.pid);
  });

  it('refuses while the recorded process itself is running, and names the lock to delete in the hint', async () => {
    await writeFile(lockFile(), JSON.stringify({ pid: other.pid, start: startOf(other.pid!) ?? null, boot: ownIdentity().boot ?? null }));
    const refused = await lockStateDir(dir).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StateLockedError);
    expect((refused as StateLockedError).hint).toContain(`delete ${lockFile()}`);
  });

  (linux ? it : it.skip)(
    'an old bare-pid lock: taken over from a process that is no node (pid 1), or started after the lock was written',
    async () => {
      await writeFile(lockFile(), '1');
      expect((await takesIt()).pid).toBe(process.pid);

      await writeFile(lockFile(), String(other.pid));
      const before = new Date(Date.now() - 3_600_000);
      await utimes(lockFile(), before, before);
      expect((await takesIt()).pid).toBe(process.pid);
    },
  );

  it('a live pid recorded without a start time (written where /proc could not be read) still holds', async () => {
    await writeFile(lockFile(), JSON.stringify({ pid: other.pid, start: null, boot: null }));
    await expect(lockStateDir(dir)).rejects.toBeInstanceOf(StateLockedError);
  });

  it('a lock naming this very process (its pid reused after a restart, no start time to tell) is taken over', async () => {
    await writeFile(lockFile(), JSON.stringify({ pid: process.pid, start: null, boot: null }));
    expect((await takesIt()).pid).toBe(process.pid);
  });

  it('an old bare-pid lock of a live node process written after it started still holds', async () => {
    await writeFile(lockFile(), String(other.pid));
    await expect(lockStateDir(dir)).rejects.toBeInstanceOf(StateLockedError);
  });
});

/**
 * A killed command that its parent has not reaped yet is a zombie: its pid still answers a signal 0
 * and its start time is still the recorded one, so its lock used to hold until the parent waited
 * for it (a supervisor that kills a hung run and retries at once). A zombie holds nothing.
 */
(process.platform === 'linux' ? describe : describe.skip)('lockStateDir: the lock of a killed process not yet reaped is stale', () => {
  let dir: string;
  let parent: ChildProcess | undefined;
  afterAll(async () => {
    parent?.kill('SIGKILL');
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const procState = async (pid: number) =>
    readFile(`/proc/${pid}/stat`, 'utf8').then(
      (stat) => stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0],
      () => undefined,
    );

  it('is taken over while the holder is a zombie', async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-lock-zombie-'));
    // The holder is the shell's child; the shell then becomes `sleep`, which never waits for it, so
    // once killed it stays a zombie (this test's process would reap a child of its own on its own).
    const holder = join(__dirname, '..', '..', 'helpers', 'lock-holder-child.ts');
    parent = spawn('/bin/sh', ['-c', '"$1" --import tsx "$2" "$3" & echo "$!"; exec sleep 600', 'sh', process.execPath, holder, dir], {
      cwd: join(__dirname, '..', '..', '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      parent!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (/^\d+\n[\s\S]*held\n/.test(out)) resolve();
      });
      parent!.once('exit', () => reject(new Error(`the lock holder ended first: ${out}`)));
    });
    const pid = Number(out.split('\n')[0]);
    const record = JSON.parse(await readFile(join(dir, 'lock'), 'utf8')) as { pid: number; start: string; boot: string };
    expect(record.pid).toBe(pid);
    // Alive, it holds the lock.
    await expect(lockStateDir(dir)).rejects.toBeInstanceOf(StateLockedError);

    process.kill(pid, 'SIGKILL');
    // Not a wait for time: the kernel makes it a zombie as the kill is delivered.
    while ((await procState(pid)) !== 'Z') await new Promise((resolve) => setImmediate(resolve));
    expect(startOf(pid)).toBe(record.start);
    expect(pidAlive(pid)).toBe(false);
    expect(processState(record)).toBe('gone');

    const unlock = await lockStateDir(dir);
    expect(JSON.parse(await readFile(join(dir, 'lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await unlock();
    // Still a zombie: what was judged is the zombie, not a reaped pid.
    expect(await procState(pid)).toBe('Z');
  });
});
