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
    const { runCli } = await import('../../cli/program.ts');
    let stdout = '';
    let stderr = '';
    const code = await runCli(['export', '--base-url', sandbox.baseUrl, '--month', MONTH, '--out', 'files', ...extra], {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv({ ACCTOPS_API_KEY: key }),
      cwd: out.dir,
      clock: ManualClock.autoAdvancing(),
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
