import { spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ownIdentity, startOf } from '../../src/adapters/local/process-identity';
import { ACCTOPS_BIN, cliEnv, parseJson, useCliState, type CliResult } from '../helpers/cli';

/** Makes the binary signal itself at a named point of its run (the lock taken, a file read or saved). */
const SIGNAL_AT = resolve(__dirname, '..', 'helpers', 'signal-at-preload.cjs');

interface Signalled extends CliResult {
  /** The signal that ended the process, when Node's default did (no handler): what must not happen. */
  killedBy: NodeJS.Signals | null;
  pid: number;
}

/**
 * Ctrl-C or SIGTERM at any moment a local command holds the state lock releases it (README, "Exit
 * codes": "the local state is saved and released"). The lock used to be taken before anything
 * answered a signal: one in the first half second (the world still opening) ended the process by
 * Node's default, without a word and with `lock` and its temporary file left behind; one while the
 * world saved at the end did the same, its handler gone by then. The signal here is sent by the
 * process itself at the named point (SIGNAL_AT), so where it lands is known, not timed.
 */
describe('acctops: a signal while the state lock is held releases it', () => {
  const state = useCliState();
  const { acctops, outputs } = state;
  let companyId: string;

  function signalledAt(at: string, signal: NodeJS.Signals, args: string[], second?: NodeJS.Signals): Promise<Signalled> {
    return new Promise((resolvePromise, reject) => {
      const child = spawn(process.execPath, [ACCTOPS_BIN, '--state-dir', state.dir, ...args], {
        env: cliEnv({ NODE_OPTIONS: `--require ${SIGNAL_AT}`, ACCTOPS_TEST_SIGNAL_AT: JSON.stringify({ at, signal, second }) }),
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code, killedBy) => {
        const result = { code: code ?? -1, killedBy, stdout, stderr, pid: child.pid! };
        outputs.push(result);
        resolvePromise(result);
      });
    });
  }

  /** What a command left of the lock: the lock itself and the temporary file it is linked from. */
  const lockFiles = async () => (await readdir(state.dir)).filter((name) => name === 'lock' || name.startsWith('lock.'));
  const temporaries = async () => (await readdir(state.dir)).filter((name) => name.endsWith('.tmp'));

  beforeAll(async () => {
    const status = await acctops('--json', 'keys', 'status');
    companyId = parseJson<{ companies: { companyId: string }[] }>(status).companies[0]!.companyId;
  });

  const refreshLine = (signal: string) =>
    new RegExp(`^acctops: error: interrupted \\(${signal}\\) before the refresh started: no user was refreshed \\(.*\\)\\n$`);
  const rotateLine = (signal: string, what: string) =>
    new RegExp(`^acctops: error: interrupted \\(${signal}\\) ${what.replace('COMPANY', '[0-9a-f-]{36}')}.*\\n$`);

  it.each([
    // The lock just taken: nothing answered a signal yet but the binary's early line, which left the lock.
    ['lock', 'SIGINT', 130, ['tokens', 'refresh', '--all'], refreshLine('SIGINT')],
    ['lock', 'SIGTERM', 143, ['users', 'list'], /^$/],
    [
      'lock',
      'SIGINT',
      130,
      ['keys', 'rotate', '--company', 'COMPANY'],
      rotateLine('SIGINT', 'before the rotation of company COMPANY started; nothing changed'),
    ],
    [
      'lock',
      'SIGTERM',
      143,
      ['export', '--month', '2026-10'],
      /^acctops: error: interrupted \(SIGTERM\): the export was stopped .*; nothing was published/,
    ],
    // The world still opening (its state files read, its peers not started).
    ['read:secrets.json', 'SIGTERM', 143, ['tokens', 'refresh', '--all'], refreshLine('SIGTERM')],
    ['read:secrets.json', 'SIGINT', 130, ['users', 'list'], /^$/],
  ] as const)('at %s, %s: exit %i, the lock released, the command line said (%j)', async (at, signal, code, args, line) => {
    const run = await signalledAt(
      at,
      signal,
      args.map((a) => (a === 'COMPANY' ? companyId : a)),
    );
    expect(run.killedBy).toBeNull();
    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(line);
    expect(await lockFiles()).toEqual([]);
    expect(await temporaries()).toEqual([]);
  });

  it('while the world saves at the end: every file saved before the lock goes, one line, and the state is consistent', async () => {
    type KeyStatus = { companies: { companyId: string; keyPrefix: string; error: unknown; rotationInProgress: boolean }[] };
    const before = parseJson<KeyStatus>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!.keyPrefix;
    // sandbox.json is the first file the close writes; secrets.json (the new key) comes after it.
    const run = await signalledAt('saved:sandbox.json', 'SIGINT', ['keys', 'rotate', '--company', companyId]);
    expect(run.killedBy).toBeNull();
    expect(run.code).toBe(130);
    expect(run.stderr).toMatch(
      new RegExp(`^acctops: error: interrupted \\(SIGINT\\) after the rotation of company ${companyId} completed: the new key is current`),
    );
    expect(await lockFiles()).toEqual([]);
    expect(await temporaries()).toEqual([]);

    // secrets.json holds the new key, and the service (sandbox.json) knows it: the check uses it.
    const after = parseJson<KeyStatus>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies;
    expect(after).toEqual([expect.objectContaining({ companyId, error: null, rotationInProgress: false })]);
    expect(after[0]!.keyPrefix).not.toBe(before);
    const doctor = parseJson<{ rotations: { findings: unknown[] }; companySecrets: { ok: boolean }[] }>(await acctops('--json', 'doctor'));
    expect(doctor.rotations.findings).toEqual([]);
    expect(doctor.companySecrets.every((c) => c.ok)).toBe(true);
  });

  it('a second signal while a state file is being written: the lock is left (the line says so), and the next command takes it over and completes the save', async () => {
    type KeyStatus = { companies: { companyId: string; keyPrefix: string; error: unknown; rotationInProgress: boolean }[] };
    const before = parseJson<KeyStatus>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!.keyPrefix;
    // saving.json is in place; the write of sandbox.json, the first file after it, is under way when SIGTERM follows the SIGINT.
    const run = await signalledAt('open:sandbox.json', 'SIGINT', ['keys', 'rotate', '--company', companyId], 'SIGTERM');
    expect(run.killedBy).toBeNull();
    expect(run.code).toBe(143);
    const lines = run.stderr.trim().split('\n');
    // The first signal's line, if its steps got that far before the second landed.
    for (const line of lines.slice(0, -1)) expect(line).toMatch(/^acctops: error: interrupted \(SIGINT\) after the rotation of company /);
    expect(lines.at(-1)).toBe(
      'acctops: error: stopped at once by a second signal (SIGTERM after SIGINT), before the clean-up after the first had finished: its save was cut short after saving.json was written: the next command completes it; the state lock is left, as a state file was being written: the next command takes it over',
    );
    expect(await lockFiles()).toEqual(['lock']);
    expect(await readdir(state.dir)).toContain('saving.json');
    expect(await temporaries()).toEqual([]);

    const next = await acctops('--json', 'keys', 'status', '--company', companyId);
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(
      new RegExp(
        `^acctops: note: took over the state lock left by acctops process ${run.pid}, which no longer runs \\(killed, or crashed\\): the save it had begun was completed now \\(sandbox\\.json, secrets\\.json(, state\\.json)?\\); `,
      ),
    );
    const after = parseJson<KeyStatus>(next).companies;
    expect(after).toEqual([expect.objectContaining({ companyId, error: null, rotationInProgress: false })]);
    expect(after[0]!.keyPrefix).not.toBe(before);
    expect(await lockFiles()).toEqual([]);
    expect(await readdir(state.dir)).not.toContain('saving.json');
  });

  it('kill -9 with the lock held and no save begun: the next command takes the lock over with one note on stderr (what was not saved is lost), --json stdout clean; said once', async () => {
    const run = await signalledAt('read:secrets.json', 'SIGKILL', ['users', 'list']);
    expect(run.killedBy).toBe('SIGKILL');
    expect(await lockFiles()).toEqual(['lock']);

    const next = await acctops('--json', 'users', 'list');
    expect(next.code).toBe(0);
    expect(next.stderr).toBe(
      `acctops: note: took over the state lock left by acctops process ${run.pid}, which no longer runs (killed, or crashed): what it had not saved when it stopped is lost (the service, the keys and the clock are as its last save left them); \`acctops doctor\` checks what it may have left half done\n`,
    );
    expect(parseJson<{ users: unknown[] }>(next).users).toEqual(expect.any(Array));
    expect(await lockFiles()).toEqual([]);
    expect((await acctops('users', 'list')).stderr).toBe('');
  });

  it('kill -9 between two files of the final save: the next command completes the save (saving.json), so the stored key is the live one', async () => {
    type KeyStatus = { companies: { companyId: string; keyPrefix: string; error: unknown; rotationInProgress: boolean }[] };
    const before = parseJson<KeyStatus>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!.keyPrefix;
    // sandbox.json (the old key revoked at once) is written, secrets.json (the new key) is not.
    const run = await signalledAt('saved:sandbox.json', 'SIGKILL', ['keys', 'rotate', '--company', companyId, '--revoke-previous-now']);
    expect(run.killedBy).toBe('SIGKILL');
    expect(await readdir(state.dir)).toContain('saving.json');

    // The killed process's lock is taken over, said in one note on stderr; stdout stays the JSON document.
    const next = await acctops('--json', 'keys', 'status', '--company', companyId);
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(
      new RegExp(
        `^acctops: note: took over the state lock left by acctops process ${run.pid}, which no longer runs \\(killed, or crashed\\): the save it had begun was completed now \\((sandbox|secrets|state)\\.json(, (sandbox|secrets|state)\\.json)+\\); \`acctops doctor\` checks what it may have left half done\\n$`,
      ),
    );
    const after = parseJson<KeyStatus>(next).companies;
    expect(after).toEqual([expect.objectContaining({ companyId, error: null, rotationInProgress: false })]);
    expect(after[0]!.keyPrefix).not.toBe(before);
    expect(await readdir(state.dir)).not.toContain('saving.json');
    expect(await temporaries()).toEqual([]);
    const doctor = parseJson<{ rotations: { findings: unknown[] }; companySecrets: { ok: boolean }[] }>(await acctops('--json', 'doctor'));
    expect(doctor.rotations.findings).toEqual([]);
    expect(doctor.companySecrets.every((c) => c.ok)).toBe(true);
  });

  it('a signal while the command is being refused the lock leaves the running holder’s lock in place', async () => {
    // A live process that is not this suite: the holder a running command would be.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      const lock = join(state.dir, 'lock');
      const held = JSON.stringify({ pid: holder.pid, start: startOf(holder.pid!) ?? null, boot: ownIdentity().boot ?? null });
      await writeFile(lock, held);
      const run = await signalledAt('lock-refused', 'SIGINT', ['users', 'list']);
      expect(run.killedBy).toBeNull();
      expect(run.code).toBe(130);
      expect(await readFile(lock, 'utf8')).toBe(held);
      // Nor its own temporary lock file.
      expect(await lockFiles()).toEqual(['lock']);
      expect(await temporaries()).toEqual([]);
    } finally {
      holder.kill();
      await rm(join(state.dir, 'lock'), { force: true });
    }
  });

  // Last: the reset deletes the suite's state.
  it('kill -9, then `local repair` and `local reset` take the lock over with the same note as the other commands (repair: its stdout the report)', async () => {
    const killed = await signalledAt('read:secrets.json', 'SIGKILL', ['users', 'list']);
    expect(killed.killedBy).toBe('SIGKILL');
    expect(await lockFiles()).toEqual(['lock']);
    const repair = await acctops('--json', 'local', 'repair');
    expect(repair.code).toBe(0);
    expect(repair.stderr).toBe(
      `acctops: note: took over the state lock left by acctops process ${killed.pid}, which no longer runs (killed, or crashed): what it had not saved when it stopped is lost (the service, the keys and the clock are as its last save left them); \`acctops doctor\` checks what it may have left half done\n`,
    );
    expect(parseJson<{ repaired: unknown[] }>(repair).repaired).toEqual([]);
    expect(await lockFiles()).toEqual([]);

    const again = await signalledAt('read:secrets.json', 'SIGKILL', ['users', 'list']);
    expect(again.killedBy).toBe('SIGKILL');
    const reset = await acctops('local', 'reset', '--yes');
    expect(reset.code).toBe(0);
    expect(reset.stderr).toBe(
      `acctops: note: took over the state lock left by acctops process ${again.pid}, which no longer runs (killed, or crashed): what it left, saved or not, is deleted with the rest of the state\n`,
    );
    expect(reset.stdout).toBe(`Deleted the local state in ${state.dir}.\n`);
  });
});
