import type * as SandboxModule from '../../sandbox';
import type { RunningSandbox } from '../../sandbox';
import { nextRebasedLine } from '../../cli/operations/export-run';
import { expectNoCanaries } from '../helpers/canary';
import { parseJson, runCliInProcess, tempStateDir, trackStateSecrets, type CliResult } from '../helpers/cli';
import { startRecordingServer, type RecordingServer } from '../helpers/recording-server';

type FaultRule = Parameters<RunningSandbox['admin']['faults']['add']>[0];

/** Faults the embedded sandbox of the next command starts with (a command's world lives in this process). */
const mockFaults: FaultRule[] = [];
/** The embedded sandbox's origin, as the command's client saw it (a port of its own each command). */
const mockOrigins: string[] = [];

jest.mock('../../sandbox', () => {
  const actual = jest.requireActual<typeof SandboxModule>('../../sandbox');
  return {
    ...actual,
    startSandbox: async (...args: Parameters<typeof actual.startSandbox>) => {
      const sandbox = await actual.startSandbox(...args);
      // Pages of 5 (the service clamps the export's 1000, as DRF's max_page_size does), so that every list has a `next` to follow.
      await sandbox.admin.configure({ maxPageSize: 5 });
      for (const rule of mockFaults) await sandbox.admin.faults.add(rule);
      mockOrigins.push(new URL(sandbox.baseUrl).origin);
      return sandbox;
    },
  };
});

const MONTH = '2026-10';
const LISTS = ['GET /accounting/transactions/', 'GET /accounting/categories/'] as const;

interface ExportBody {
  mode: string;
  companies: { companyId: string; status: string; records: Record<string, number>; totals: unknown }[];
}

/**
 * `acctops export` in the local mode against an embedded service whose `next` links name another
 * origin under the base path (decision 108, the sandbox's `foreign_next` fault with `origin`): the
 * pages are read from the base URL, the other origin is never contacted, and stderr carries the
 * direct mode's warning line, once a run however many companies and lists said it. Through runCli in
 * process, so that the embedded sandbox can be given the fault.
 */
describe('acctops export (local mode): next links on another origin', () => {
  let state: { dir: string; remove(): Promise<void> };
  let foreign: RecordingServer;
  const outputs: CliResult[] = [];
  const acctops = (...args: string[]): Promise<CliResult> => runCliInProcess(state.dir, args, outputs);
  const warningLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('acctops: warning:'));

  beforeAll(async () => {
    foreign = await startRecordingServer();
    state = await tempStateDir();
  });
  afterEach(() => {
    mockFaults.length = 0;
    mockOrigins.length = 0;
  });
  afterAll(async () => {
    await trackStateSecrets(state.dir);
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops export output',
    );
    await foreign.stop();
    await state.remove();
  });

  it("reads every page from the embedded service, contacts no other host, and prints the direct mode's warning once a run", async () => {
    const clean = await acctops('--json', 'export', '--month', MONTH, '--out', 'clean');
    expect(clean.code).toBe(0);
    expect(warningLines(clean.stderr)).toEqual([]);

    for (const route of LISTS) mockFaults.push({ route, times: 'always', fault: { type: 'foreign_next', origin: foreign.origin } });
    mockOrigins.length = 0;
    const rebased = await acctops('--json', 'export', '--month', MONTH, '--out', 'rebased');
    expect(rebased.code).toBe(0);
    const [baseOrigin] = mockOrigins;
    // The direct mode's own line (cli/operations/export-run.ts), word for word: origins only.
    const line = nextRebasedLine({ type: 'next_rebased', request: '', nextOrigin: foreign.origin, baseOrigin: baseOrigin! });
    expect(line).toMatch(/^acctops: warning: the service's next links name http:\/\/127\.0\.0\.1:\d+, not http:\/\/127\.0\.0\.1:\d+: /);
    expect(warningLines(rebased.stderr)).toEqual([line]);
    expect(foreign.requests).toEqual([]);

    // stdout is the report it always is: every company (each with its own lists), the same records and totals, read past page 1.
    const [before, after] = [parseJson<ExportBody>(clean), parseJson<ExportBody>(rebased)];
    expect(after.mode).toBe('local');
    expect(after.companies.length).toBeGreaterThan(1);
    expect(after.companies.map((c) => c.status)).toEqual(after.companies.map(() => 'completed'));
    expect(after.companies.map((c) => [c.companyId, c.records, c.totals])).toEqual(
      before.companies.map((c) => [c.companyId, c.records, c.totals]),
    );
    expect(Math.max(...after.companies.map((c) => c.records.transactions!))).toBeGreaterThan(5);
    expect(rebased.stdout).not.toContain(foreign.origin);
  });

  it('says the same in text mode, on stderr, not in the report', async () => {
    mockFaults.push({ route: LISTS[0], times: 'always', fault: { type: 'foreign_next', origin: 'http://web:8000' } });
    const result = await acctops('export', '--month', MONTH, '--out', 'text');
    expect(result.code).toBe(0);
    expect(warningLines(result.stderr)).toEqual([
      nextRebasedLine({ type: 'next_rebased', request: '', nextOrigin: 'http://web:8000', baseOrigin: mockOrigins[0]! }),
    ]);
    expect(result.stdout).not.toContain('web:8000');
  });
});
