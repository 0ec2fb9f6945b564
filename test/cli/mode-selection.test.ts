import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CANARY } from '../helpers/canary';
import { closeCliState, runAcctops, tempStateDir, trackStateSecrets, type CliResult } from '../helpers/cli';
import { startRecordingServer, type RecordingServer } from '../helpers/recording-server';

/**
 * Which mode a command runs in, through the real binary: it comes from one place, and a value given
 * empty never picks another mode. An empty `--stack` used to be read as "no stack" and the command
 * ran on the local state (`ACCTOPS_STACK=acctops-production acctops --stack "" keys rotate …` rotated
 * the sandbox's key, exit 0), and with a stack named a leftover ACCTOPS_BASE_URL turned `export` into
 * a direct export into the working directory. No command here reaches AWS: the environment has no
 * region or credentials (cliEnv), so an AWS-mode command stops at that check, before any call; the
 * AWS-mode export that goes through is in aws-mode.test.ts, against local fakes.
 */
describe('acctops CLI: the mode comes from one place, and an empty value never picks another', () => {
  const outputs: CliResult[] = [];
  let state: { dir: string; remove(): Promise<void> };
  /** A local state, as an operator's working copy has one: what a wrong local run would change. */
  let stateDir: string;
  /** The working directory: a direct export writes its files here. */
  let work: string;
  /** Stands in for the service at ACCTOPS_BASE_URL / --base-url: a direct export would ask it first. */
  let service: RecordingServer;
  let baseUrl: string;
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
    service = await startRecordingServer();
    baseUrl = `${service.origin}/api/v1`;
    expect((await run(['users', 'list'])).code).toBe(0);
    const sandbox = JSON.parse(await readFile(join(stateDir, 'sandbox.json'), 'utf8')) as { demo: { companies: { publicId: string }[] } };
    company = sandbox.demo.companies[0]!.publicId;
  });
  afterAll(async () => {
    await service.stop();
    // The state lives one level down (beside the working directory): its secrets are registered
    // from there, or closeCliState would scan the outputs for none of them.
    await trackStateSecrets(stateDir);
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

  it('a malformed stack or region is refused before any AWS call: exit 2 naming the flag, exit 3 naming the variable, never echoed', async () => {
    const before = await fingerprint();
    // With credentials in the environment a well-formed stack and region would reach the network
    // (exit 4, or 1 unreachable): the refusals below come before that.
    const aws = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'not-a-real-secret', AWS_ENDPOINT_URL: 'http://127.0.0.1:9' };
    const badStacks = [
      'acctops;rm',
      `a${'b'.repeat(199)}`,
      'arn:aws:cloudformation:eu-central-1:123456789012:stack/acctops-production/x',
      '1acctops',
    ];
    for (const stack of badStacks) {
      const line = refused(await run(['--stack', stack, '--region', 'eu-central-1', 'users', 'list'], aws), 2);
      expect(line).toMatch(
        /^acctops: error: --stack is malformed: expected a stack name \(a letter, then letters, digits or hyphens, at most 128 characters\)/,
      );
      expect(line).not.toContain(stack.slice(0, 12));
      const fromEnv = refused(await run(['users', 'list'], { ...aws, AWS_REGION: 'eu-central-1', ACCTOPS_STACK: stack }), 3);
      expect(fromEnv).toMatch(
        /^acctops: error: ACCTOPS_STACK is malformed: expected a stack name .*\(nothing was run: set it to the stack/,
      );
      expect(fromEnv).not.toContain(stack.slice(0, 12));
    }
    // At most 128 characters: the longest name is a name.
    const longest = await run(['--stack', `a${'b'.repeat(127)}`, 'users', 'list']);
    expect(refused(longest, 3)).toMatch(/^acctops: error: no AWS region is set/);
    for (const region of ['eu central 1', 'EU-CENTRAL-1', 'eu-central', 'https://eu-central-1']) {
      const flag = refused(await run(['--stack', 'acctops-production', '--region', region, 'users', 'list'], aws), 2);
      expect(flag).toMatch(/^acctops: error: --region is malformed: expected a region name such as eu-central-1 /);
      const variable = refused(await run(['--stack', 'acctops-production', 'users', 'list'], { ...aws, AWS_REGION: region }), 3);
      expect(variable).toMatch(
        /^acctops: error: AWS_REGION is malformed: expected a region name such as eu-central-1 .*\(nothing was run: set AWS_REGION/,
      );
      // The S3 target of a local export reads AWS_REGION too.
      const s3 = refused(await run(['export', '--month', '2026-10', '--out', 's3://acctops-exports/x'], { ...aws, AWS_REGION: region }), 3);
      expect(s3).toMatch(/^acctops: error: AWS_REGION is malformed/);
    }
    // Blank is no region either: it reached the SDK and was blamed on the AWS profile.
    for (const region of ['   ', '\t']) {
      const variable = refused(await run(['--stack', 'acctops-production', 'users', 'list'], { ...aws, AWS_REGION: region }), 3);
      expect(variable).toMatch(/^acctops: error: AWS_REGION is malformed: .*\(nothing was run: set AWS_REGION/);
      expect(variable).not.toMatch(/profile \(aws configure/);
    }
    // Regions of every partition keep their shape (the stop for want of credentials comes later: exit 4).
    for (const region of ['us-gov-west-1', 'cn-northwest-1', 'us-isob-east-1', 'eusc-de-east-1', 'ap-southeast-5']) {
      const result = await run(['--stack', 'acctops-production', '--region', region, 'users', 'list']);
      expect(result.stderr).not.toMatch(/malformed/);
      expect(result.code).toBe(4);
    }
    expect(await fingerprint()).toEqual(before);
  });

  it('with a stack named, a leftover ACCTOPS_BASE_URL does not make export direct: the AWS mode runs, and a note says the variable is not read', async () => {
    const before = await fingerprint();
    const cases: { args: string[]; env: Record<string, string>; by: string; leave: string }[] = [
      { args: [], env: { ACCTOPS_STACK: 'acctops-production' }, by: 'ACCTOPS_STACK \\(environment\\)', leave: 'unset ACCTOPS_STACK' },
      { args: ['--stack', 'acctops-production'], env: {}, by: '--stack', leave: 'drop --stack' },
    ];
    for (const { args, env, by, leave } of cases) {
      // With the key (a direct export would have run, exit 0) and without it (it would have asked for the key).
      for (const key of [{ ACCTOPS_API_KEY: CANARY.apiKey }, {}] as Record<string, string>[]) {
        const result = await run([...args, 'export', '--month', '2026-10', '--company', company], {
          ...env,
          ...key,
          ACCTOPS_BASE_URL: baseUrl,
        });
        expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 3, stdout: '' });
        expect(result.stderr.trim().split('\n')).toEqual([
          expect.stringMatching(
            new RegExp(
              `^acctops: note: ACCTOPS_BASE_URL \\(environment\\) is not used by export in AWS mode, which ${by} picks: the export is requested from the pipeline of acctops-production, which reads the stage's baseUrl; for a direct export from that URL, ${leave}`,
            ),
          ),
          // The AWS mode's own check, made before any AWS call.
          expect.stringMatching(/^acctops: error: no AWS region is set/),
        ]);
        expect(result.stderr).not.toMatch(/direct mode|ACCTOPS_API_KEY/);
      }
    }
    // --json prints no note; the error is the AWS mode's all the same.
    const json = await run(['--json', 'export', '--month', '2026-10'], { ACCTOPS_STACK: 'acctops-production', ACCTOPS_BASE_URL: baseUrl });
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { exitCode: 3, message: expect.stringMatching(/^no AWS region is set/) } });
    expect(service.requests).toEqual([]);
    expect(await readdir(work)).toEqual([]);
    expect(await fingerprint()).toEqual(before);
  });

  it('--base-url with a stack named is exit 2 naming both and where the stack came from; nothing is asked of the service', async () => {
    const key = { ACCTOPS_API_KEY: CANARY.apiKey };
    const fromFlag = await run(['--stack', 'acctops-production', 'export', '--base-url', baseUrl, '--month', '2026-10'], key);
    expect(refused(fromFlag, 2)).toMatch(
      /^acctops: error: --base-url picks the direct mode, but --stack names the stack acctops-production, the AWS mode: .* \(nothing was run: to request it from the stack, drop --base-url; to export from the service, drop --stack\)$/,
    );
    const fromEnv = await run(['export', `--base-url=${baseUrl}`, '--month', '2026-10'], { ...key, ACCTOPS_STACK: 'acctops-production' });
    expect(refused(fromEnv, 2)).toMatch(
      /^acctops: error: --base-url picks the direct mode, but ACCTOPS_STACK \(environment\) names the stack acctops-production, the AWS mode: .*to export from the service, unset ACCTOPS_STACK: `env -u ACCTOPS_STACK acctops …`\)$/,
    );
    // A direct-mode option with a stack named is refused naming the AWS mode and what picked it, not the base URL.
    const paged = await run(['export', '--month', '2026-10', '--page-size', '200'], {
      ...key,
      ACCTOPS_STACK: 'acctops-production',
      ACCTOPS_BASE_URL: baseUrl,
    });
    expect(refused(paged, 2)).toMatch(
      /^acctops: error: --page-size is an option of the direct mode \(--base-url, no stack named\): .*; this is the AWS mode, which ACCTOPS_STACK \(environment\) picks \(nothing was run: drop --page-size\)$/,
    );
    expect(service.requests).toEqual([]);
    expect(await readdir(work)).toEqual([]);
  });

  it('without a stack, the direct mode names what picked it; an empty ACCTOPS_BASE_URL is exit 3, not the local mode', async () => {
    const before = await fingerprint();
    const fromEnv = await run(['export', '--month', '2026-10'], { ACCTOPS_BASE_URL: baseUrl });
    expect(refused(fromEnv, 3)).toMatch(
      /^acctops: error: the direct mode, picked by ACCTOPS_BASE_URL \(environment\), needs the company API key in ACCTOPS_API_KEY \(.*, or unset ACCTOPS_BASE_URL to use the local mode\)$/,
    );
    const fromFlag = await run(['export', '--base-url', baseUrl, '--month', '2026-10']);
    expect(refused(fromFlag, 3)).toMatch(
      /^acctops: error: the direct mode, picked by --base-url, needs the company API key in ACCTOPS_API_KEY \(.*, or drop --base-url to use the local mode\)$/,
    );
    const region = await run(['--region', 'eu-central-1', 'export', '--month', '2026-10'], {
      ACCTOPS_BASE_URL: baseUrl,
      ACCTOPS_API_KEY: CANARY.apiKey,
    });
    expect(refused(region, 2)).toMatch(
      /; this is the direct mode, picked by ACCTOPS_BASE_URL \(environment\) \(nothing was run: drop --region\)$/,
    );
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
    expect(service.requests).toEqual([]);
    expect(await readdir(work)).toEqual([]);
    expect(await fingerprint()).toEqual(before);
  });
});
