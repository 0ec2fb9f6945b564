import { startSandbox, type RunningSandbox } from '../../sandbox';
import { ManualClock } from '../../src/core/shared/clock';
import { expectNoCanaries, trackSecret } from '../helpers/canary';
import { cliEnv, tempStateDir, type CliResult } from '../helpers/cli';
import { startRecordingServer, type RecordingServer } from '../helpers/recording-server';

const MONTH = '2026-10';
const LISTS = ['GET /accounting/transactions/', 'GET /accounting/categories/'] as const;

/**
 * `acctops export --base-url` against a service whose `next` links name another origin under the
 * base path, as a Django REST framework service behind a TLS-terminating proxy writes them
 * (decision 108): the export reads every page from the base URL, the other origin is never
 * contacted, and stderr says it once a run, in text and in `--json` alike; stdout is the usual report.
 */
describe('acctops export --base-url: next links on another origin', () => {
  let sandbox: RunningSandbox;
  let foreign: RecordingServer;
  let out: { dir: string; remove(): Promise<void> };
  let key: string;
  const outputs: CliResult[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    foreign = await startRecordingServer();
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
    await foreign.stop();
    await sandbox.stop();
    await out.remove();
  });

  async function exportDirect(target: string, ...extra: string[]): Promise<CliResult> {
    const { runCli } = await import('../../cli/program.ts');
    let stdout = '';
    let stderr = '';
    // A small page size, so that every list has pages to follow.
    const args = [...extra, 'export', '--base-url', sandbox.baseUrl, '--month', MONTH, '--out', target, '--page-size', '5'];
    const code = await runCli(args, {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv({ ACCTOPS_API_KEY: key }),
      cwd: out.dir,
      clock: ManualClock.autoAdvancing(),
    });
    const result = { code, stdout, stderr };
    outputs.push(result);
    return result;
  }

  const warningLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('acctops: warning:'));

  it('reads every page from the base URL, contacts no other host, and warns once on stderr', async () => {
    const clean = await exportDirect('clean', '--json');
    expect(clean.code).toBe(0);
    expect(warningLines(clean.stderr)).toEqual([]);

    for (const route of LISTS)
      await sandbox.admin.faults.add({ route, times: 'always', fault: { type: 'foreign_next', origin: foreign.origin } });
    await sandbox.admin.resetStats();
    const rebased = await exportDirect('rebased', '--json');
    expect(rebased.code).toBe(0);
    const sandboxOrigin = new URL(sandbox.baseUrl).origin;
    expect(warningLines(rebased.stderr)).toEqual([
      `acctops: warning: the service's next links name ${foreign.origin}, not ${sandboxOrigin}: the pages were requested on ${sandboxOrigin}, and the key went nowhere else (the service builds next from the request it sees behind its proxy: have the proxy pass the public scheme and host (X-Forwarded-Proto, X-Forwarded-Host) and the service trust them (Django: SECURE_PROXY_SSL_HEADER, USE_X_FORWARDED_HOST))`,
    ]);
    expect(foreign.requests).toEqual([]);
    // More than one page a list was read, each from the sandbox.
    expect((await sandbox.admin.stats()).byRoute[LISTS[0]]).toBeGreaterThan(2);

    // stdout is the report it always is, with the same records and totals.
    type Report = { companies: { records: Record<string, number>; totals: unknown }[] };
    const [before, after] = [JSON.parse(clean.stdout) as Report, JSON.parse(rebased.stdout) as Report];
    expect(after.companies.map((c) => [c.records, c.totals])).toEqual(before.companies.map((c) => [c.records, c.totals]));
    expect(after.companies[0]!.records.transactions).toBeGreaterThan(5);
  });

  it('says the same in text mode, on stderr, not in the report', async () => {
    await sandbox.admin.faults.add({ route: LISTS[0], times: 'always', fault: { type: 'foreign_next', origin: 'http://web:8000' } });
    const result = await exportDirect('text');
    expect(result.code).toBe(0);
    expect(warningLines(result.stderr)).toEqual([
      expect.stringMatching(/^acctops: warning: the service's next links name http:\/\/web:8000, not /),
    ]);
    expect(result.stdout).not.toContain('web:8000');
  });
});
