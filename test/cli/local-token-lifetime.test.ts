import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from '../../cli/program';
import { cliEnv, onboardArgs, tempStateDir, type CliResult } from '../helpers/cli';
import { expectNoCanaries } from '../helpers/canary';
import { TEST_DIALECTS } from '../helpers/dialects';

/**
 * The local mode's fallback lifetime of an access token the service states nothing about (the
 * minimal dialect: opaque tokens, no expiresIn), as a stage's `accessTokenLifetimeSeconds` is for
 * a deployment: a state setting, changed by `acctops local set` and kept for later commands.
 */
describe.each(TEST_DIALECTS)('local set --access-lifetime (%s dialect)', (dialect) => {
  let state: { dir: string; remove(): Promise<void> };
  const outputs: CliResult[] = [];

  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops output',
    );
    await state.remove();
  });

  async function acctops(...args: string[]): Promise<CliResult> {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['--state-dir', state.dir, ...args], {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv({ ACCTOPS_DIALECT: dialect }),
      cwd: state.dir,
    });
    const result = { code, stdout, stderr };
    outputs.push(result);
    return result;
  }
  const json = async <T>(...args: string[]) => {
    const result = await acctops('--json', ...args);
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as T;
  };
  const newUser = () => {
    const id = randomUUID();
    return { externalId: id, username: `life-${id.slice(0, 8)}`, email: `life-${id.slice(0, 8)}@example.test` };
  };
  const millis = (value: unknown) => (typeof value === 'number' ? value : Date.parse(String(value)));

  it('is 30 minutes in a new state, and what `local set` makes it for every later command', async () => {
    expect(await json('local', 'status')).toMatchObject({ accessTokenLifetimeSeconds: 1800 });
    expect(await json('local', 'set', '--access-lifetime', '10m')).toMatchObject({ accessTokenLifetimeSeconds: 600 });
    expect(JSON.parse(await readFile(join(state.dir, 'state.json'), 'utf8'))).toMatchObject({ accessTokenLifetimeSeconds: 600 });

    const { now } = await json<{ now: string }>('local', 'status');
    const onboarded = await json<{ accessTokenExpiresAt: unknown }>(...onboardArgs(newUser()));
    const lifetime = millis(onboarded.accessTokenExpiresAt) - Date.parse(now);
    // The default dialect's JWT states 30 minutes itself; the minimal dialect's opaque token states nothing.
    const expected = dialect === 'default' ? 30 * 60_000 : 10 * 60_000;
    expect(lifetime).toBeGreaterThan(expected - 60_000);
    expect(lifetime).toBeLessThanOrEqual(expected + 60_000);
  });

  it('refuses a lifetime outside 1m to 1d as a usage error, changing nothing', async () => {
    const result = await acctops('local', 'set', '--access-lifetime', '30s');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--access-lifetime');
    expect(await json('local', 'status')).toMatchObject({ accessTokenLifetimeSeconds: 600 });
  });
});
