import { once } from 'node:events';
import { expectNoCanaries } from '../helpers/canary';
import { runAcctops, spawnAcctops } from '../helpers/cli';
import { DEMO_INSTITUTION_SECRET } from '../../sandbox/seed';

describe('acctops sandbox: the real binary', () => {
  it('serves the sandbox on the port asked for (0: any), shows demo keys by prefix only, and stops on SIGTERM with exit 0', async () => {
    const child = spawnAcctops(['sandbox', '--port', '0', '--seed', '3']);
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const ready = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /base URL +(http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(stdout);
        if (match && /--show-credentials/.test(stdout)) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${stdout}${stderr}`)));
    });
    const baseUrl = await ready;
    const response = await fetch(`${baseUrl}/companies/`);
    expect(response.status).toBe(401);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);

    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    expect(stdout).toMatch(/sandbox stopped/);
    expect(stdout).toMatch(/SANDBOX ONLY/);
    expect(stdout).toMatch(/demo full access +sbx_[A-Za-z0-9]{8}…/);
    expect(stdout).toContain('inst_demo:<secret hidden; --show-credentials prints it>');
    expect(stdout).not.toContain(DEMO_INSTITUTION_SECRET);
    expectNoCanaries(`${stdout}\n${stderr}`, 'acctops sandbox output');
  });

  it('a bad sandbox flag is a usage error (exit 2) in one line', async () => {
    const child = spawnAcctops(['sandbox', '--port', 'x']);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(stderr.trim().split('\n').pop()).toMatch(/^acctops: error: .*--port.*acctops sandbox --help/);
  });

  it('a refused sandbox flag value is not repeated, and nothing reaches stdout (with --json, one JSON document on stderr)', async () => {
    const leaky = await runAcctops(['sandbox', '--dialect', 'sbx_LEAKY_VALUE']);
    expect(leaky.code).toBe(2);
    expect(leaky.stdout).toBe('');
    expect(leaky.stderr.trim().split('\n')).toHaveLength(1);
    expect(leaky.stderr).toMatch(/^acctops: error: .*--dialect/);
    expect(leaky.stderr).not.toContain('LEAKY');

    const json = await runAcctops(['--json', 'sandbox', '--port', 'abc']);
    expect(json.code).toBe(2);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'usage', exitCode: 2 } });
    expect(json.stderr).not.toContain('abc');
  });
});
