import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { runDemo } from '../../cli/demo';
import { cliEnv, npmScriptCommand, parseJson, useCliState } from '../helpers/cli';

/** Keeps the demo's event loop busy for a moment once it has printed a given text. */
const BUSY_AFTER = resolve(__dirname, '..', 'helpers', 'busy-after-preload.cjs');
/** Sends the process a signal as bin/demo.cjs starts loading the demo's modules. */
const SIGNAL_ON_LOAD = resolve(__dirname, '..', 'helpers', 'signal-on-load-preload.cjs');

interface KeyStatus {
  companies: { companyId: string; error: unknown; rotationInProgress: boolean }[];
}
interface Doctor {
  rotations: { findings: unknown[] };
  companySecrets: { ok: boolean }[];
  tokens: { expired: unknown[]; needsAttention: unknown[] };
}

/**
 * Ctrl+C on `npm start`: the terminal signals the whole process group. The script used to be
 * `tsx bin/demo.ts`, whose CLI relays a signal to the node process it starts and kills it (SIGKILL)
 * when it has not answered within about 30 ms: a demo whose event loop was busy for a moment died
 * with no clean-up (the lock left, sandbox.json and secrets.json from different moments) or got
 * the signal twice, and the second one exits at once. The script now runs node itself
 * (`node bin/demo.cjs`, which loads the sources through tsx): one process, one signal, the world's
 * own steps.
 */
describe('npm start: Ctrl+C mid-run', () => {
  const state = useCliState();
  const { acctops, outputs } = state;

  /**
   * The modules take a second or more to load through tsx, before the demo prints anything: a
   * signal then used to end the process without a word (Node's default). bin/demo.cjs holds it
   * until the demo has loaded, which then says it stopped before its first step.
   */
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s while the modules load: exit %i, the one line, nothing created', async (signal, code) => {
    const start = npmScriptCommand('start');
    const dir = join(state.dir, 'early');
    const { exitCode, killedBy, stdout, stderr } = await new Promise<{
      exitCode: number | null;
      killedBy: NodeJS.Signals | null;
      stdout: string;
      stderr: string;
    }>((done, fail) => {
      const child = spawn(start.file, start.args, {
        cwd: start.cwd,
        env: cliEnv({
          ...start.env,
          ACCTOPS_STATE_DIR: dir,
          NODE_OPTIONS: `--require ${SIGNAL_ON_LOAD}`,
          ACCTOPS_TEST_SIGNAL_ON_LOAD: signal,
        }),
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      child.once('error', fail);
      child.once('close', (c, s) => done({ exitCode: c, killedBy: s, stdout: out, stderr: err }));
    });
    outputs.push({ code: exitCode ?? -1, stdout, stderr });
    expect(killedBy).toBeNull();
    expect(exitCode).toBe(code);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `acctops: error: interrupted (${signal}): the demo was stopped before its first step; nothing was changed (run \`npm start\` again)\n`,
    );
    await expect(readdir(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a SIGINT to the process group while the key rotates: exit 130, one line, no lock, a consistent state', async () => {
    const start = npmScriptCommand('start');
    const mark = '3. Rotate the API key';
    // Its own process group, as a terminal's foreground job: the group is what Ctrl+C signals.
    const child = spawn(start.file, start.args, {
      cwd: start.cwd,
      detached: true,
      env: cliEnv({
        ...start.env,
        ACCTOPS_STATE_DIR: state.dir,
        NODE_OPTIONS: `--require ${BUSY_AFTER}`,
        ACCTOPS_TEST_BUSY_AFTER: JSON.stringify({ text: mark, ms: 300 }),
      }),
    });
    let stdout = '';
    let stderr = '';
    let signalled = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      // Mid-run, as its output shows: users onboarded and refreshed, the rotation starting.
      if (!signalled && stdout.includes(mark)) {
        signalled = true;
        process.kill(-child.pid!, 'SIGINT');
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code, killedBy] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
      child.once('close', (c, s) => done([c, s])),
    );
    outputs.push({ code: code ?? -1, stdout, stderr });

    expect(signalled).toBe(true);
    expect(killedBy).toBeNull();
    expect(code).toBe(130);
    // The steps still under way print nothing of their own (a rotation refused, a secret not found).
    expect(stderr).toMatch(
      /^acctops: error: interrupted \(SIGINT\): the demo was stopped(; the key rotation under way was rolled back)?; the local state is saved \(.*\)\n$/,
    );
    expect(stdout).not.toMatch(/Finished in|failed/);
    expect((await readdir(state.dir)).filter((name) => name === 'lock' || name.startsWith('lock.') || name.endsWith('.tmp'))).toEqual([]);

    // Consistent: every stored key works at the service, no rotation left half done, every user's tokens good.
    const keys = parseJson<KeyStatus>(await acctops('--json', 'keys', 'status'));
    expect(keys.companies.length).toBeGreaterThan(0);
    for (const company of keys.companies) expect(company).toEqual(expect.objectContaining({ error: null, rotationInProgress: false }));
    const doctor = parseJson<Doctor>(await acctops('--json', 'doctor'));
    expect(doctor.rotations.findings).toEqual([]);
    expect(doctor.companySecrets.every((c) => c.ok)).toBe(true);
    expect(doctor.tokens.expired).toEqual([]);
    expect(doctor.tokens.needsAttention).toEqual([]);

    // And the demo goes on from it.
    const printed: string[] = [];
    const write = (t: string) => printed.push(t);
    const again = await runDemo({ stateDir: state.dir, reset: false, io: { stdout: { write }, stderr: { write } }, env: cliEnv() });
    outputs.push({ code: 0, stdout: printed.join(''), stderr: '' });
    expect(again.created).toBe(false);
    expect(again.rotation.state).toBe('completed');
    expect(again.keyChecks.map((k) => k.duringGrace)).toEqual(['works', 'works']);
  });
});
