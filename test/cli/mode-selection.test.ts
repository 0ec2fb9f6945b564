import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CANARY } from '../helpers/canary';
import { closeCliState, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';

/**
 * Which mode a command runs in, through the real binary: it comes from one place, and a value given
 * empty never picks another mode. An empty `--stack` used to be read as "no stack" and the command
 * ran on the local state (`ACCTOPS_STACK=acctops-production acctops --stack "" keys rotate …` rotated
 * the sandbox's key, exit 0). No command here reaches AWS: the environment has no region or
 * credentials (cliEnv), so an AWS-mode command stops at that check, before any call.
 */
describe('acctops CLI: the mode comes from one place, and an empty value never picks another', () => {
  const outputs: CliResult[] = [];
  let state: { dir: string; remove(): Promise<void> };
  /** A local state, as an operator's working copy has one: what a wrong local run would change. */
  let stateDir: string;
  /** The working directory: a direct export writes its files here. */
  let work: string;
  let company: string;

  const run = async (args: string[], env: Record<string, string> = {}): Promise<CliResult> => {
    const result = await runAcctops(['--state-dir', stateDir, ...args], { env, cwd: work });
    outputs.push(result);
    return result;
  };

  /** Every file of the state directory, by name and content: a rotation, an export or a lock shows. */
  const fingerprint = async (): Promise<Record<string, string>> => {
    const files: Record<string, string> = {};
    for (const entry of await readdir(stateDir, { withFileTypes: true, recursive: true })) {
      const path = join(entry.parentPath, entry.name);
      files[path.slice(stateDir.length)] = entry.isFile()
        ? createHash('sha256')
            .update(await readFile(path))
            .digest('hex')
        : 'dir';
    }
    return files;
  };

  /** One line on stderr, the error's, and nothing on stdout. */
  const refused = (result: CliResult, code: number): string => {
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code, stdout: '' });
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    return lines[0]!;
  };

  beforeAll(async () => {
    state = await tempStateDir();
    stateDir = join(state.dir, 'state');
    work = join(state.dir, 'work');
    await mkdir(work);
    expect((await run(['users', 'list'])).code).toBe(0);
    const sandbox = JSON.parse(await readFile(join(stateDir, 'sandbox.json'), 'utf8')) as { demo: { companies: { publicId: string }[] } };
    company = sandbox.demo.companies[0]!.publicId;
  });
  afterAll(async () => {
    await closeCliState(state, outputs);
  });

  it('an empty or blank --stack is exit 2 naming it, with ACCTOPS_STACK set or not; the local state is not touched', async () => {
    const before = await fingerprint();
    const spellings = [['--stack', ''], ['--stack='], ['--stack', ' '], ['--stack=\t']];
    const withStack = { ACCTOPS_STACK: 'acctops-production' };
    for (const spelling of spellings) {
      for (const [command, env] of [
        [['keys', 'rotate', '--company', company], withStack],
        [['users', 'list'], {}],
      ] as const) {
        expect(refused(await run([...spelling, ...command], env), 2)).toMatch(
          /^acctops: error: --stack is empty \(nothing was run: name the stack, e\.g\. --stack acctops-production; for the local mode leave out --stack and unset ACCTOPS_STACK\)$/,
        );
      }
      const json = await run([...spelling, '--json', 'export', '--month', '2026-10'], withStack);
      expect({ code: json.code, stdout: json.stdout }).toEqual({ code: 2, stdout: '' });
      expect(JSON.parse(json.stderr)).toEqual({
        error: { exitCode: 2, code: 'usage', message: '--stack is empty', hint: expect.stringMatching(/unset ACCTOPS_STACK/) },
      });
    }
    expect(await fingerprint()).toEqual(before);
    expect(await readdir(work)).toEqual([]);
  });

  it('an empty or blank ACCTOPS_STACK is exit 3 naming it, not the local mode; --stack, given, is read instead', async () => {
    const before = await fingerprint();
    for (const value of ['', ' ']) {
      for (const command of [
        ['keys', 'rotate', '--company', company],
        ['users', 'list'],
        ['export', '--month', '2026-10'],
      ]) {
        expect(refused(await run(command, { ACCTOPS_STACK: value }), 3)).toMatch(
          /^acctops: error: ACCTOPS_STACK is empty \(nothing was run: set it to the stack, e\.g\. acctops-production, or unset it for the local mode; an empty one is not read as unset\)$/,
        );
      }
    }
    expect(await fingerprint()).toEqual(before);
    // The flag wins over the variable, as for --state-dir: this is the AWS mode, stopped for want of a region.
    const named = await run(['--stack', 'acctops-x', 'users', 'list'], { ACCTOPS_STACK: '' });
    expect(refused(named, 3)).toMatch(/^acctops: error: no AWS region is set/);
  });

  it('an empty or blank --region is exit 2 naming it, with or without a stack, rather than the default region', async () => {
    for (const args of [
      ['--region', '', 'users', 'list'],
      ['--region=', 'export', '--month', '2026-10', '--out', 's3://acctops-exports/x'],
      ['--stack', 'acctops-x', '--region', ' ', 'keys', 'status'],
    ]) {
      expect(refused(await run(args), 2)).toMatch(
        /^acctops: error: --region is empty \(nothing was run: name the region, e\.g\. --region eu-central-1, or leave out --region for AWS_REGION or the profile's\)$/,
      );
    }
  });

  it('an empty or blank ACCTOPS_BASE_URL is exit 3, not the local mode; nothing is written', async () => {
    const before = await fingerprint();
    for (const value of ['', '  ']) {
      // With --out s3://…, the local mode would have written the sandbox's data to that bucket.
      const empty = await run(['export', '--month', '2026-10', '--out', 's3://acctops-exports/x'], {
        ACCTOPS_BASE_URL: value,
        ACCTOPS_API_KEY: CANARY.apiKey,
      });
      expect(refused(empty, 3)).toMatch(
        /^acctops: error: ACCTOPS_BASE_URL is empty \(set it to the service base URL ending in \/api\/v1, or unset it for the local mode\)$/,
      );
    }
    expect(await readdir(work)).toEqual([]);
    expect(await fingerprint()).toEqual(before);
  });
});
