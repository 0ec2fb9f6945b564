import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
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

  it('a --port another process listens on is one line naming the port and the host, exit 3 (with --json, one JSON object)', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const text = await runAcctops(['sandbox', '--port', String(port)]);
      expect({ code: text.code, stdout: text.stdout }).toEqual({ code: 3, stdout: '' });
      expect(text.stderr).toBe(
        `acctops: error: port ${port} on 127.0.0.1 is in use (another process listens there: pass another --port, or 0 for any free one)\n`,
      );
      const json = await runAcctops(['--json', 'sandbox', '--port', String(port)]);
      expect({ code: json.code, stdout: json.stdout }).toEqual({ code: 3, stdout: '' });
      expect(JSON.parse(json.stderr)).toEqual({
        error: {
          exitCode: 3,
          code: 'port_in_use',
          message: `port ${port} on 127.0.0.1 is in use`,
          hint: 'another process listens there: pass another --port, or 0 for any free one',
        },
      });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('with --json, stdout is one JSON object (base URL, admin URL, dialect, the demo credentials by prefix); what follows goes to stderr', async () => {
    const child = spawnAcctops(['--json', 'sandbox', '--port', '0', '--seed', '3']);
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const ready = new Promise<{ baseUrl: string }>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        try {
          resolve(JSON.parse(stdout) as { baseUrl: string });
        } catch {
          // Not all of it yet.
        }
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${stdout}${stderr}`)));
    });
    const described = await ready;
    expect((await fetch(`${described.baseUrl}/companies/`)).status).toBe(401);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);

    const body = JSON.parse(stdout) as {
      demo: { institution: { secret: string | null }; companies: { apiKeys: { keyPrefix: string; key: string | null }[] }[] };
    };
    expect(body).toEqual({
      baseUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/),
      adminUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/__sandbox\/$/),
      port: expect.any(Number),
      dialect: 'default',
      demo: {
        notice: expect.stringMatching(/SANDBOX ONLY/),
        institution: { id: 'inst_demo', secret: null },
        companies: expect.any(Array),
        users: expect.any(Array),
      },
      showCredentialsCommand: 'acctops sandbox --show-credentials',
    });
    const keys = body.demo.companies.flatMap((c) => c.apiKeys);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatchObject({ keyPrefix: expect.stringMatching(/^sbx_[A-Za-z0-9]{8}$/), key: null });
    expect(stdout).not.toContain(DEMO_INSTITUTION_SECRET);
    expect(stdout).not.toMatch(/Press Ctrl\+C|sandbox stopped/);
    expect(stderr).toMatch(/sandbox stopped/);
    expectNoCanaries(`${stdout}\n${stderr}`, 'acctops --json sandbox output');
  });

  it.each([
    ['--verbose after the command', ['sandbox', '--port', '0', '--verbose'], 'stdout'],
    ['-v after the command', ['sandbox', '--port', '0', '-v'], 'stdout'],
    ['-v before the command', ['-v', 'sandbox', '--port', '0'], 'stdout'],
    ['--verbose with --json', ['--json', 'sandbox', '--port', '0', '--verbose'], 'stderr'],
  ] as const)('%s logs one JSON line per request, as npm run sandbox does (--json: on stderr)', async (_label, args, stream) => {
    const child = spawnAcctops([...args]);
    const text = { stdout: '', stderr: '' };
    child.stderr.on('data', (chunk: Buffer) => (text.stderr += chunk.toString()));
    const ready = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        text.stdout += chunk.toString();
        const match = /(http:\/\/127\.0\.0\.1:\d+\/api\/v1)/.exec(text.stdout);
        if (match) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${text.stdout}${text.stderr}`)));
    });
    const baseUrl = await ready;
    expect((await fetch(`${baseUrl}/companies/`)).status).toBe(401);
    const logged = new Promise<void>((resolve) => {
      const check = () => /"message":"sandbox request"/.test(text[stream]) && resolve();
      child.stdout.on('data', check);
      child.stderr.on('data', check);
      check();
    });
    await logged;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    const line = text[stream].split('\n').find((l) => l.includes('"sandbox request"'))!;
    expect(JSON.parse(line)).toMatchObject({ level: 'debug', route: 'GET /companies/', status: 401 });
    expectNoCanaries(`${text.stdout}\n${text.stderr}`, 'acctops sandbox --verbose output');
  });

  it('help sandbox and sandbox --help both list the sandbox flags under `acctops sandbox`, and start nothing', async () => {
    for (const args of [
      ['help', 'sandbox'],
      ['sandbox', '--help'],
    ]) {
      const { code, stdout } = await runAcctops(args);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^Usage: acctops sandbox \[options\]/);
      for (const flag of ['--port', '--seed', '--no-demo', '--amount-encoding', '--dialect', '--show-credentials', '--verbose'])
        expect(stdout).toContain(flag);
      expect(stdout).not.toMatch(/listening|Press Ctrl\+C/);
    }
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

    // An empty argument is a usage error (README, "Exit codes"), not a seed nobody asked for.
    for (const empty of ['', ' ']) {
      const seed = await runAcctops(['sandbox', '--port', '0', '--seed', empty]);
      expect({ code: seed.code, stdout: seed.stdout }).toEqual({ code: 2, stdout: '' });
      expect(seed.stderr).toMatch(
        /^acctops: error: option '--seed <seed>' is invalid: expected a non-empty seed, e\.g\. 1 \(run `acctops sandbox --help`\)\n$/,
      );
    }

    const json = await runAcctops(['--json', 'sandbox', '--port', 'abc']);
    expect(json.code).toBe(2);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'usage', exitCode: 2 } });
    expect(json.stderr).not.toContain('abc');
  });
});
