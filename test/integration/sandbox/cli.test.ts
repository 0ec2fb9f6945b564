import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { runSandboxCli, SandboxCliUsageError } from '../../../sandbox/cli';
import { npmScriptCommand } from '../../helpers/cli';
import { call } from './support';

describe('sandbox command line', () => {
  it('shows the demo credentials by prefix only unless --show-credentials, and says how to see them', async () => {
    const lines: string[] = [];
    const run = await runSandboxCli(
      ['--port', '0', '--seed', '9'],
      { out: (l) => lines.push(l) },
      { handleSignals: false, showCommand: 'npm run sandbox -- --show-credentials' },
    );
    try {
      const output = lines.join('\n');
      expect(output).not.toMatch(/sbx_[0-9A-Za-z]{32}/);
      expect(output).toMatch(/sbx_[0-9A-Za-z]+…/);
      expect(output).toContain('Institution: inst_demo:<secret hidden');
      expect(output).not.toContain(run.sandbox.demo!.institution.header);
      expect(output).toContain('Full demo credentials (sandbox only): npm run sandbox -- --show-credentials');
    } finally {
      await run.stop();
    }
  });

  it('--dialect minimal starts the minimal dialect; an unknown dialect is a usage error', async () => {
    const run = await runSandboxCli(['--port', '0', '--dialect', 'minimal'], { out: () => undefined }, { handleSignals: false });
    try {
      expect(run.sandbox.dialect).toBe('minimal');
      const key = run.sandbox.demo!.companies[0]!.apiKeys[0]!.key;
      expect((await call(run.sandbox.baseUrl, '/companies/', { bearer: key })).body).toHaveProperty('companyName');
    } finally {
      await run.stop();
    }
    await expect(
      runSandboxCli(['--port', '0', '--dialect', 'drf'], { out: () => undefined }, { handleSignals: false }),
    ).rejects.toBeInstanceOf(SandboxCliUsageError);
  });

  it('starts on the given port, prints the base URL and labelled demo credentials that work, and stops', async () => {
    const lines: string[] = [];
    const run = await runSandboxCli(
      ['--port', '0', '--seed', '9', '--show-credentials'],
      { out: (l) => lines.push(l) },
      { handleSignals: false },
    );
    try {
      const output = lines.join('\n');
      expect(output).toContain(`base URL   ${run.sandbox.baseUrl}`);
      expect(output).toMatch(/SANDBOX ONLY/);
      expect(output).toContain('Institution: inst_demo:');
      const key = /(sbx_[0-9A-Za-z]{32}) {2}\[full_access\]/.exec(output)?.[1];
      expect(key).toBeDefined();
      expect((await call(run.sandbox.baseUrl, '/companies/', { bearer: key! })).status).toBe(200);
    } finally {
      await run.stop();
    }
    await run.done;
    expect(lines.at(-1)).toBe('sandbox stopped');
  });

  it('passes options through and refuses bad flags with a usage error', async () => {
    const run = await runSandboxCli(
      ['--port', '0', '--no-demo', '--amount-encoding', 'string', '--rate-limit', '5'],
      { out: () => undefined },
      { handleSignals: false },
    );
    try {
      expect(run.sandbox.demo).toBeNull();
      expect(await run.sandbox.admin.configure({})).toMatchObject({ amountEncoding: 'string', rateLimit: { requestsPerSecond: 5 } });
    } finally {
      await run.stop();
    }
    await expect(runSandboxCli(['--port', 'abc'], { out: () => undefined }, { handleSignals: false })).rejects.toBeInstanceOf(
      SandboxCliUsageError,
    );
    // A usage error like --port's, naming the flag and the choices (acctops sandbox: exit 2).
    const encoding = runSandboxCli(['--port', '0', '--amount-encoding', 'floats'], { out: () => undefined }, { handleSignals: false });
    await expect(encoding).rejects.toBeInstanceOf(SandboxCliUsageError);
    await expect(encoding).rejects.toThrow(/--amount-encoding.*expected one of integer, string, mixed/);
  });

  /** `npm run sandbox -- …args` as a process: its exit code and what it printed. */
  async function npmRunSandbox(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const sandbox = npmScriptCommand('sandbox');
    const child = spawn(sandbox.file, [...sandbox.args, ...args], {
      cwd: sandbox.cwd,
      env: { ...process.env, ...sandbox.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    return { code, stdout, stderr };
  }

  it('npm run sandbox: a --port in use is exit 3 and one line naming the port and the host, as acctops sandbox says it', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const result = await npmRunSandbox(['--port', String(port)]);
      expect(result).toEqual({
        code: 3,
        stdout: '',
        stderr: `acctops: error: port ${port} on 127.0.0.1 is in use (another process listens there: pass another --port, or 0 for any free one)\n`,
      });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('npm run sandbox: a bad flag is exit 2, as in acctops sandbox, in one line with the one prefix; --help is 0', async () => {
    const bad = await npmRunSandbox(['--port', 'x']);
    expect(bad).toEqual({
      code: 2,
      stdout: '',
      stderr: "acctops: error: option '--port <port>' is invalid: expected an integer from 0 to 65535 (run `npm run sandbox -- --help`)\n",
    });
    // The suggestion is part of the one line, not a second one.
    const typo = await npmRunSandbox(['--prot', '4010']);
    expect(typo).toEqual({
      code: 2,
      stdout: '',
      stderr: "acctops: error: unknown option '--prot' (Did you mean --port?) (run `npm run sandbox -- --help`)\n",
    });
    const help = await npmRunSandbox(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run sandbox -- \[options\]/);
  });

  it('npm run sandbox -- --json: one JSON object on stdout, as acctops --json sandbox prints, naming how to show the credentials', async () => {
    const sandbox = npmScriptCommand('sandbox');
    const child = spawn(sandbox.file, [...sandbox.args, '--json', '--port', '0'], {
      cwd: sandbox.cwd,
      env: { ...process.env, ...sandbox.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const described = await new Promise<{ baseUrl: string; showCredentialsCommand: string }>((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`exited early with ${code}: ${stdout}${stderr}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        try {
          resolve(JSON.parse(stdout) as { baseUrl: string; showCredentialsCommand: string });
        } catch {
          // Not all of it yet.
        }
      });
    });
    expect(described.showCredentialsCommand).toBe('npm run sandbox -- --show-credentials');
    expect((await call(described.baseUrl, '/companies/')).status).toBe(401);
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    // A server stopped on request has done its job: 0, by SIGINT as by SIGTERM (decision 87).
    expect(await exit).toBe(0);
    expect(stderr).toContain('sandbox stopped');
  });

  it('npm run sandbox: a real process that stops cleanly on SIGTERM', async () => {
    const sandbox = npmScriptCommand('sandbox');
    const child = spawn(sandbox.file, [...sandbox.args, '--port', '0'], {
      cwd: sandbox.cwd,
      env: { ...process.env, ...sandbox.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const baseUrl = await new Promise<string>((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`exited early with ${code}: ${output}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /base URL\s+(\S+)/.exec(output);
        if (match && output.includes('Press Ctrl+C')) resolve(match[1]!);
      });
    });
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    expect((await call(baseUrl, '/companies/')).status).toBe(401);
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(output).toContain('sandbox stopped');
  });
});
