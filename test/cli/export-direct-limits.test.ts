import { startSandbox, type RunningSandbox } from '../../sandbox';
import { ManualClock } from '../../src/core/shared/clock';
import { expectNoCanaries, trackSecret } from '../helpers/canary';
import { cliEnv, tempStateDir, type CliResult } from '../helpers/cli';

const TX = 'GET /accounting/transactions/';
const MONTH = '2026-10';

/**
 * `acctops export --base-url` against a service with a per-minute rate limit (Retry-After 60 s) and
 * one whose maximum page size is below 1000 and refuses a larger one. The waits are on an injected
 * clock whose sleeps advance it at once: no real time passes.
 */
describe('acctops export --base-url: long Retry-After and a refused page size', () => {
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
  afterEach(async () => {
    await sandbox.admin.faults.clear();
    await sandbox.admin.configure({ maxPageSize: 1000, pageSizeAboveMax: 'clamp' });
  });
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops export output',
    );
    await sandbox.stop();
    await out.remove();
  });

  async function exportDirect(...extra: string[]): Promise<CliResult> {
    return exportDirectWith({}, ...extra);
  }

  async function exportDirectWith(runtime: { requestTimeoutMs?: number }, ...extra: string[]): Promise<CliResult> {
    const { runCli } = await import('../../cli/program.ts');
    let stdout = '';
    let stderr = '';
    const code = await runCli(['export', '--base-url', sandbox.baseUrl, '--month', MONTH, '--out', 'files', ...extra], {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv({ ACCTOPS_API_KEY: key }),
      cwd: out.dir,
      clock: ManualClock.autoAdvancing(),
      ...runtime,
    });
    const result = { code, stdout, stderr };
    outputs.push(result);
    return result;
  }

  it('waits out a 60 s Retry-After, one stderr line a wait, and finishes (exit 0)', async () => {
    await sandbox.admin.faults.add({ route: TX, times: 2, fault: { type: 'status', status: 429, retryAfter: 60 } });
    const result = await exportDirect();
    expect(result.code).toBe(0);
    const waits = result.stderr.split('\n').filter((l) => l.includes('limits the rate'));
    expect(waits).toEqual([
      'acctops: the service limits the rate; waiting 60 s as it asked (Ctrl-C to stop)',
      'acctops: the service limits the rate; waiting 60 s as it asked (Ctrl-C to stop)',
    ]);
  });

  it('a Retry-After that asks for no wait (an HTTP date already past, or 0) is said as a retry now, not "waiting 1 s"; a sub-second one in ms', async () => {
    await sandbox.admin.faults.add({
      route: TX,
      times: 1,
      fault: { type: 'status', status: 429, retryAfter: 'Wed, 21 Oct 2015 07:28:00 GMT' },
    });
    await sandbox.admin.faults.add({ route: TX, times: 1, after: 1, fault: { type: 'status', status: 429, retryAfter: 0 } });
    await sandbox.admin.faults.add({ route: TX, times: 1, after: 2, fault: { type: 'status', status: 429, retryAfter: '0.25' } });
    const result = await exportDirect();
    expect(result.code).toBe(0);
    const waits = result.stderr.split('\n').filter((l) => l.includes('limits the rate'));
    const now =
      'acctops: the service limits the rate, but its Retry-After asks for no wait (0 s, or a date already past): sending the request again now';
    expect(waits).toEqual([
      `${now} (attempt 2 of 4; Ctrl-C to stop)`,
      `${now} (attempt 3 of 4; Ctrl-C to stop)`,
      'acctops: the service limits the rate; waiting 250 ms as it asked (Ctrl-C to stop)',
    ]);
  });

  it('a service that never answers: one stderr line per retried timeout, then the error, whose hint has no request id to give', async () => {
    // Parked for an hour: no answer ever comes; each attempt's timeout (250 ms here, 30 s by default) ends it.
    await sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'slow', delayMs: 3_600_000, realTime: true } });
    const result = await exportDirectWith({ requestTimeoutMs: 250 });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    const retry =
      /^acctops: no complete answer in 250 ms to (GET \/api\/v1\/[^?\s]*); retrying in \d+ (ms|s) \(attempt ([2-4]) of 4; Ctrl-C to stop\)$/;
    // A loaded machine may make another request miss so short a timeout once; the transactions never answer.
    const retries = lines.slice(0, -1).map((line) => retry.exec(line));
    expect(retries).not.toContain(null);
    expect(retries.filter((m) => m![1]!.endsWith('/transactions/')).map((m) => m![3])).toEqual(['2', '3', '4']);
    expect(lines.at(-1)).toMatch(
      /^acctops: error: company [0-9a-f-]{36}: request timed out .*\(the service did not answer in time \(4 attempts\): run the export again later; if it persists, tell the service's owner when it happened and which request \(no answer came, so there is no request id\)\)$/,
    );
    expect(result.stderr).not.toContain('give the service');
  });

  it('a Retry-After above --max-retry-wait fails at once, saying no retry was made and naming the flag', async () => {
    await sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'status', status: 429, retryAfter: 600 } });
    const result = await exportDirect('--max-retry-wait', '2m');
    expect(result.code).toBe(1);
    expect(result.stderr).not.toContain('waiting');
    expect(result.stderr).toMatch(
      /no further retry was made: the service asked to wait 600 s, more than --max-retry-wait allows \(120 s\)/,
    );
    expect(result.stderr).not.toMatch(/after acctops's retries/);
  });

  it('--max-retry-wait 0s: the error gives the cap as set (0 s) and the smallest value that waits (1s), not 1 s and 1m', async () => {
    await sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'status', status: 429, retryAfter: 1 } });
    const result = await exportDirect('--max-retry-wait', '0s');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'no further retry was made: the service asked to wait 1 s, more than --max-retry-wait allows (0 s); run again with --max-retry-wait 1s or more, or later',
    );
  });

  it('a service that refuses page sizes above its maximum: the export reads at its default size and completes', async () => {
    await sandbox.admin.configure({ maxPageSize: 200, pageSizeAboveMax: 'refuse' });
    const result = await exportDirect('--json');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { companies: { status: string; records: { transactions: number } }[] };
    expect(report.companies[0]!.status).toBe('completed');
    expect(report.companies[0]!.records.transactions).toBeGreaterThan(0);
    // --page-size within the maximum: no refusal at all.
    const sized = await exportDirect('--page-size', '200');
    expect(sized.code).toBe(0);
  });

  it('--page-size, --date-to and --max-retry-wait are direct-mode options: refused (exit 2) without --base-url', async () => {
    const { runCli } = await import('../../cli/program.ts');
    let stderr = '';
    const code = await runCli(['--state-dir', out.dir, 'export', '--month', MONTH, '--page-size', '200'], {
      io: { stdout: { write: () => undefined }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv(),
      cwd: out.dir,
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/--page-size is an option of the direct mode.*exports\.pageSize/);
  });
});
