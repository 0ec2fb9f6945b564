import { readdir } from 'node:fs/promises';
import { ManualClock } from '../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { monthOf } from '../../sandbox/seed';
import { CANARY, expectNoCanaries, trackSecret } from '../helpers/canary';
import { parseJson, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';
import { nonLoopbackAddress } from '../helpers/loopback';
import { startRecordingServer, type RecordingServer } from '../helpers/recording-server';

/**
 * A direct export never sends the company key over plain http to a host that is not loopback
 * (decision 92), through the real binary. The service stands on one of this machine's own
 * addresses that is not loopback, where it answers: before the fix, `export --base-url
 * http://<that address>/api/v1` sent `Authorization: Bearer <key>` there four times. Now it is
 * refused before any connection, and only `--allow-insecure-http` lets it through, with a warning.
 */

const address = nonLoopbackAddress();
// A machine with no interface but loopback still checks the refusal, on a name nothing resolves.
const host = address ?? 'acctops-plain-http.invalid';

describe('acctops export: plain http only to loopback, unless --allow-insecure-http', () => {
  const outputs: CliResult[] = [];
  let service: RecordingServer;
  let baseUrl: string;
  let work: { dir: string; remove(): Promise<void> };

  const run = async (args: string[], env: Record<string, string> = {}): Promise<CliResult> => {
    const result = await runAcctops(args, { env: { ACCTOPS_API_KEY: CANARY.apiKey, ...env }, cwd: work.dir });
    outputs.push(result);
    return result;
  };

  beforeAll(async () => {
    service = await startRecordingServer(undefined, address);
    baseUrl = `http://${host}:${service.port}/api/v1`;
    work = await tempStateDir();
  });
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops output',
    );
    await service.stop();
    await work.remove();
  });

  it.each([
    ['--base-url <url>', (url: string) => ['--base-url', url]],
    ['--base-url=<url>', (url: string) => [`--base-url=${url}`]],
  ])('%s: exit 2 naming --base-url and why, before any connection; the URL is not echoed', async (_form, flag) => {
    const result = await run(['export', ...flag(baseUrl), '--month', '2026-10', '--out', 'files']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^acctops: error: --base-url: plain http is accepted only to a loopback host \(localhost, 127\.0\.0\.0\/8, \[::1\]\): the company key would cross the network in clear \(nothing was sent: .*add --allow-insecure-http\)\n$/,
    );
    expect(result.stderr).not.toContain(host);
    expect(result.stdout).toBe('');
    expect(service.requests).toEqual([]);
    expect(await readdir(work.dir)).toEqual([]);
  });

  it('ACCTOPS_BASE_URL: exit 3 naming the variable, in --json too, before any connection', async () => {
    const text = await run(['export', '--month', '2026-10', '--out', 'files'], { ACCTOPS_BASE_URL: baseUrl });
    expect(text.code).toBe(3);
    expect(text.stderr).toMatch(/^acctops: error: ACCTOPS_BASE_URL is not usable: plain http is accepted only to a loopback host /);
    const json = await run(['--json', 'export', '--month', '2026-10', '--out', 'files'], { ACCTOPS_BASE_URL: baseUrl });
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: { exitCode: 3, message: expect.stringContaining('ACCTOPS_BASE_URL is not usable: plain http') },
    });
    for (const result of [text, json]) expect(result.stderr).not.toContain(host);
    expect(service.requests).toEqual([]);
    expect(await readdir(work.dir)).toEqual([]);
  });

  it('--allow-insecure-http outside the direct mode: exit 2, an option of the direct mode', async () => {
    const result = await run(['--state-dir', `${work.dir}/state`, 'export', '--allow-insecure-http', '--month', '2026-10']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^acctops: error: --allow-insecure-http is an option of the direct mode/);
    expect(service.requests).toEqual([]);
  });

  (address === undefined ? describe.skip : describe)('with --allow-insecure-http, against a service on that address', () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 5, 9, 0, 0));
    let sandbox: RunningSandbox;
    let key: string;

    beforeAll(async () => {
      sandbox = await startSandbox({ port: 0, host: address, clock, seed: 5 });
      key = sandbox.demo!.companies[1]!.apiKeys.find((k) => k.name.includes('read only'))!.key;
      trackSecret(key);
      trackSecret(sandbox.demo!.institution.secret);
    });
    afterAll(async () => {
      await sandbox.stop();
    });

    it('the export runs, and a warning on stderr says the key goes out in clear (with --json too)', async () => {
      expect(new URL(sandbox.baseUrl).hostname).toBe(address);
      const month = monthOf(clock.now(), -1);
      const result = await run(
        ['--json', 'export', '--allow-insecure-http', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'opted-in'],
        { ACCTOPS_API_KEY: key },
      );
      expect(result.code).toBe(0);
      expect(parseJson<{ companies: { status: string }[] }>(result).companies).toEqual([expect.objectContaining({ status: 'completed' })]);
      expect(result.stderr).toBe(
        'acctops: warning: --allow-insecure-http: --base-url is plain http to a host that is not loopback; ACCTOPS_API_KEY is sent in clear with every request, readable by anyone on the network path\n',
      );
    });
  });
});
