import { createServer, type AddressInfo } from 'node:net';
import { startSandbox, type FaultRule, type RunningSandbox } from '../../sandbox';
import { expectNoCanaries, trackSecret } from '../helpers/canary';
import { runAcctops, tempStateDir, type CliResult } from '../helpers/cli';

const TX = 'GET /accounting/transactions/';
const MONTH = '2026-10';

/**
 * `acctops export --base-url` when the service fails (README, "Exit codes"; cli/errors.ts): the
 * export only reads, so no hint says the service may have acted; `acctops doctor` checks the local
 * state, not the operator's URL, so no hint names it; a connection failure names the endpoint and
 * its cause.
 */
describe('acctops export --base-url: what a failing service gets as a hint', () => {
  let sandbox: RunningSandbox;
  let out: { dir: string; remove(): Promise<void> };
  let key: string;
  const outputs: CliResult[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    out = await tempStateDir();
    key = sandbox.demo!.companies[0]!.apiKeys[0]!.key;
    trackSecret(key);
  });
  afterEach(() => sandbox.admin.faults.clear());
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops export output',
    );
    await sandbox.stop();
    await out.remove();
  });

  /** The line before a retry of a request that failed (not a rate limit's wait). */
  const RETRY_LINE = /^acctops: .*; retrying in \d+ (ms|s) \(attempt [2-4] of 4; Ctrl-C to stop\)$/;

  async function exportFrom(baseUrl: string): Promise<{ code: number; line: string; retries: string[] }> {
    const result = await runAcctops(['export', '--base-url', baseUrl, '--month', MONTH, '--out', 'files'], {
      env: { ACCTOPS_API_KEY: key },
      cwd: out.dir,
    });
    outputs.push(result);
    // Each wait before a retry is one line before the error: a rate-limited service's
    // (export-direct-limits.test.ts), and those of a failure retried (retries).
    const all = result.stderr.trim().split('\n');
    const retries = all.filter((l) => RETRY_LINE.test(l));
    const lines = all.filter((l) => !/^acctops: the service limits the rate; waiting \d+ s as it asked/.test(l) && !RETRY_LINE.test(l));
    expect(lines).toHaveLength(1);
    return { code: result.code, line: lines[0]!, retries };
  }

  async function withFault(fault: FaultRule['fault']): Promise<{ code: number; line: string; retries: string[] }> {
    await sandbox.admin.faults.add({ route: TX, times: 'always', fault });
    return exportFrom(sandbox.baseUrl);
  }

  /** The line each retry of these faults gets (attempt n of 4); the others are not retried, or are 429 waits. */
  const RETRIED: Record<string, ((attempt: number) => RegExp) | undefined> = {
    'a 503': (n) =>
      new RegExp(
        `^acctops: the service answered 503 to GET /api/v1/\\S*transactions/; retrying in \\d+ (ms|s) \\(attempt ${n} of 4; Ctrl-C to stop\\)$`,
      ),
    'a connection reset': (n) =>
      new RegExp(
        `^acctops: GET /api/v1/\\S*transactions/ failed: .*127\\.0\\.0\\.1:\\d+: .*; retrying in \\d+ (ms|s) \\(attempt ${n} of 4; Ctrl-C to stop\\)$`,
      ),
  };

  it.each<[string, FaultRule['fault'], RegExp]>([
    ['a 503', { type: 'status', status: 503 }, /\(run the export again later; if it persists, give the service's owner the request id\)$/],
    ['a connection reset', { type: 'reset' }, /: 127\.0\.0\.1:\d+: .*; the request may have been processed \(run the export again later/],
    [
      'a dropped field',
      { type: 'drop_field', field: 'amount' },
      /results\[0\]\.amount: .*\(the service sent a response acctops cannot read/,
    ],
    [
      'a 429',
      { type: 'status', status: 429 },
      /\(the service still limited the rate after 3 retries by acctops: run again later \(its last Retry-After asked for 1 s\)/,
    ],
    ['a next_loop', { type: 'next_loop' }, /next_loop: .*\(the service's `next` links are wrong.*report it to the service's owner/],
    ['a foreign_next', { type: 'foreign_next' }, /foreign_next: .*\(the service's `next` link leaves the base URL/],
    [
      'a count_mismatch',
      { type: 'count_mismatch' },
      /pages announced \d+ items, \d+ were read \(the list changed at the service while it was read.*run the export again\)$/,
    ],
  ])('%s: a read, so never "may have acted", and never `acctops doctor`', async (label, fault, hint) => {
    const retryLine = RETRIED[label];
    const { code, line, retries } = await withFault(fault);
    expect(code).toBe(1);
    expect(line).toMatch(/^acctops: error: company [0-9a-f-]{36}: /);
    // A failure the client retries is said once a retry, naming the request by method and path only.
    if (retryLine !== undefined) expect(retries).toEqual([2, 3, 4].map((n) => expect.stringMatching(retryLine(n))));
    else expect(retries).toEqual([]);
    for (const retry of retries) expect(retry).not.toContain('?');
    expect(line).toMatch(hint);
    expect(line).not.toMatch(/may have acted|acctops doctor/);
  });

  it('a closed port: the host, the port and ECONNREFUSED, with what to check', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const { code, line } = await exportFrom(`http://127.0.0.1:${port}/api/v1`);
    expect(code).toBe(1);
    expect(line).toContain(`127.0.0.1:${port}: connection refused (ECONNREFUSED)`);
    expect(line).toMatch(/not sent \(check the host, the port and the scheme \(http or https\) of --base-url/);
  });

  it('https:// against an http server: a failed TLS handshake, named, nothing sent', async () => {
    const url = new URL(sandbox.baseUrl);
    url.protocol = 'https:';
    const { code, line } = await exportFrom(url.href);
    expect(code).toBe(1);
    expect(line).toContain(`${url.host}: TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER)`);
    expect(line).not.toMatch(/may have been processed|may have acted/);
  });
});
