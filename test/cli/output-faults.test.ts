import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readdir, rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { ACCTOPS_BIN, cliEnv, npmScriptCommand, parseJson, runAcctops, useCliState, type CliResult } from '../helpers/cli';

/** Linux's device on which every write fails with ENOSPC: a full disk under `> result.json`. */
const FULL = '/dev/full';
const onLinux = existsSync(FULL) ? it : it.skip;

/** A Node stack trace's frame line, which no output of acctops may carry. */
const STACK_FRAME = /^\s+at .+\(?.*:\d+:\d+\)?$/m;

interface Spawned extends CliResult {
  killedBy: NodeJS.Signals | null;
}

/**
 * Runs a command with its stdout sent where a script sends it: a file on a full disk
 * (`to: 'full'`), or a pipe whose reader has gone (`to: 'closed-pipe'`: `| head -c 1` that has
 * read its byte, made certain by closing the read end before the command writes anything).
 */
async function runWithStdout(
  file: string,
  args: string[],
  to: 'full' | 'closed-pipe',
  env: NodeJS.ProcessEnv = cliEnv(),
): Promise<Spawned> {
  const device = to === 'full' ? await open(FULL, 'w') : undefined;
  try {
    return await new Promise<Spawned>((done, fail) => {
      const child = spawn(file, args, { env, stdio: ['ignore', device ? device.fd : 'pipe', 'pipe'] });
      child.stdout?.destroy();
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', fail);
      child.once('close', (code, signal) => done({ code: code ?? -1, killedBy: signal, stdout: '', stderr }));
    });
  } finally {
    await device?.close();
  }
}

/**
 * A script's stdout that cannot take the output (decision 112; README, "Exit codes"). Node's
 * default, an `error` event that throws, ended the process with a stack trace at the first line:
 * the demo died mid-run holding the state lock, and a `--json` run's stderr was no JSON object.
 */
describe('acctops: a stdout that fails', () => {
  const state = useCliState();
  const { acctops, outputs } = state;
  const run = async (args: string[], to: 'full' | 'closed-pipe') => {
    const result = await runWithStdout(process.execPath, [ACCTOPS_BIN, '--state-dir', state.dir, ...args], to);
    outputs.push(result);
    return result;
  };
  const clockOffset = async () => parseJson<{ clockOffsetMs: number }>(await acctops('--json', 'local', 'status')).clockOffsetMs;

  beforeAll(async () => {
    expect((await acctops('local', 'status')).code).toBe(0);
  });

  onLinux('on a full disk: the command runs to its end and saves, then one error line and exit 1', async () => {
    const before = await clockOffset();
    const result = await run(['local', 'advance-clock', '--by', '5m'], 'full');
    expect(result.killedBy).toBeNull();
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^acctops: error: the command's output could not be written to stdout: no space left on the device \(ENOSPC\); the command ran to its end without it \(send the output where it can be written; .*`acctops keys status`.*\)\n$/,
    );
    expect(result.stderr).not.toMatch(STACK_FRAME);
    expect(await clockOffset()).toBe(before + 5 * 60_000);
    expect(await readdir(state.dir)).not.toContain('lock');
  });

  onLinux('with --json the error is the one JSON object on stderr', async () => {
    const result = await run(['--json', 'users', 'list'], 'full');
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      error: { exitCode: 1, code: 'stdout_not_written', message: expect.stringContaining('(ENOSPC)'), hint: expect.any(String) },
    });
  });

  onLinux('a command that failed keeps its own exit code, 5 here', async () => {
    // A registered company without a key secret: `keys status` lists it and ends with 5.
    expect((await acctops('companies', 'add', '--company', randomUUID())).code).toBe(0);
    expect((await acctops('keys', 'status')).code).toBe(5);
    const result = await run(['--json', 'keys', 'status'], 'full');
    expect(result.code).toBe(5);
    expect(result.stderr).toContain('"code":"stdout_not_written"');
  });

  onLinux('a usage error writes nothing to stdout: exit 2, as it was', async () => {
    const result = await run(['keys', 'rotate', '--company', 'nope'], 'full');
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain('stdout_not_written');
  });

  it.each([
    [['--json', 'keys', 'status'], 5],
    [['--json', 'users', 'list'], 0],
    [['users', 'list'], 0],
    [['--help'], 0],
  ])('%j into a pipe whose reader has gone (`| head -c 1`): the command’s own exit %i, nothing on stderr', async (args, code) => {
    const result = await run(args, 'closed-pipe');
    expect(result.killedBy).toBeNull();
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code, stderr: '' });
  });

  onLinux('a stderr that fails changes no exit code (exit 2 of a usage error stays 2)', async () => {
    const device = await open(FULL, 'w');
    try {
      const code = await new Promise<number | null>((done, fail) => {
        const child = spawn(process.execPath, [ACCTOPS_BIN, '--state-dir', state.dir, 'keys', 'rotate', '--company', 'nope'], {
          env: cliEnv(),
          stdio: ['ignore', 'ignore', device.fd],
        });
        child.once('error', fail);
        child.once('close', done);
      });
      expect(code).toBe(2);
    } finally {
      await device.close();
    }
  });

  onLinux('npm start to a full disk: the demo runs every step and releases its lock, then one error line and exit 1', async () => {
    const start = npmScriptCommand('start');
    const dir = `${state.dir}-demo`;
    try {
      const result = await runWithStdout(start.file, [...start.args, '--state-dir', dir], 'full', cliEnv({ ...start.env }));
      outputs.push(result);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /^acctops: error: the command's output could not be written to stdout: no space left on the device \(ENOSPC\)/,
      );
      expect(result.stderr).not.toMatch(STACK_FRAME);
      expect(await readdir(dir)).not.toContain('lock');
      const users = await runAcctops(['--json', '--state-dir', dir, 'users', 'list']);
      outputs.push(users);
      // Every demo user onboarded and saved, and no lock of a dead process to take over.
      expect(parseJson<{ users: unknown[] }>(users).users).toHaveLength(3);
      expect(users.stderr).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
