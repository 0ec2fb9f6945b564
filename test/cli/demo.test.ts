import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDemo, type DemoReport } from '../../cli/demo';
import { shellQuote } from '../../cli/format';
import type { SandboxStateSnapshot } from '../../sandbox';
import { expectNoCanaries } from '../helpers/canary';
import { cliEnv, npmScriptCommand, runAcctops, tempStateDir, trackStateSecrets } from '../helpers/cli';
import { TEST_DIALECTS } from '../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  interface Manifest {
    period: string;
    objects: { key: string; dataset: string; format: string; sha256: string }[];
  }

  /**
   * `npm start`, end to end: the demo in process (the same runDemo that bin/demo.ts calls) twice on
   * one state directory, then once through `npm start` itself, and the CLI reading what it left.
   */
  describe('npm start: the embedded demo', () => {
    let state: { dir: string; remove(): Promise<void> };
    const printed: string[] = [];
    const io = { stdout: { write: (t: string) => printed.push(t) }, stderr: { write: (t: string) => printed.push(t) } };
    const demo = (reset = false) => runDemo({ stateDir: state.dir, reset, io, env: cliEnv(), dialect });
    let first: DemoReport;
    let second: DemoReport;

    beforeAll(async () => {
      state = await tempStateDir();
      first = await demo();
      second = await demo();
    });
    afterAll(async () => {
      await trackStateSecrets(state.dir);
      expectNoCanaries(printed.join(''), 'demo output');
      await state.remove();
    });

    const manifests = async (report: DemoReport) =>
      Promise.all(report.exports.companies.map(async (c) => JSON.parse(await readFile(fileURLToPath(c.manifestUrl!), 'utf8')) as Manifest));
    const sandbox = async () => JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as SandboxStateSnapshot;

    it('runs every step for real: users onboarded, tokens refreshed, a key rotated and revoked after its grace period, every company exported', async () => {
      expect(first.created).toBe(true);
      expect(first.onboarded.map((u) => u.result)).toEqual(['retrieved', 'retrieved', 'retrieved']);
      expect(first.refresh.counts).toEqual({ refreshed: 3 });
      expect(first.rotation.state).toBe('completed');
      expect(first.rotation.keyPrefix).not.toBe(first.rotation.previousKeyPrefix);
      expect(first.keyChecks).toEqual([
        {
          keyPrefix: first.rotation.previousKeyPrefix,
          role: 'previous',
          duringGrace: 'works',
          afterGrace: dialect === 'default' ? 'refused (key_revoked)' : 'refused (authentication_failed)',
        },
        { keyPrefix: first.rotation.keyPrefix, role: 'current', duringGrace: 'works', afterGrace: 'works' },
      ]);
      expect(first.exports.companies).toHaveLength(3);
      // Each dialect's tax reports are read under its own names (the minimal dialect's by default: decision 88),
      // so every report has the period that puts it in its month, and none is kept in every month.
      for (const c of first.exports.companies) expect(c.undatedTaxReports).toBe(0);
      for (const manifest of await manifests(first)) {
        expect(manifest.period).toBe(first.exports.month);
        expect(new Set(manifest.objects.map((o) => o.format))).toEqual(new Set(['jsonl', 'csv', 'parquet']));
      }
      const text = printed.join('');
      expect(text).toMatch(/1\. Onboard the demo users/);
      expect(text).toMatch(/4\. Export last month for every company/);
      expect(text).toContain(first.exportsDir);
      // 20 minutes of refreshes and the grace period plus a minute, in 5-minute ticks: said at the end, with the way back.
      expect(first.clockAheadMs).toBeGreaterThanOrEqual(20 * 60_000);
      const minutes = Math.round(first.clockAheadMs / 60_000);
      expect(text).toContain(
        `  clock         the local clock is ${minutes} min ahead of the system clock (the demo moved it instead of waiting), so later commands show times in the future; \`npx acctops --state-dir ${shellQuote(state.dir)} local reset-clock\` puts it back`,
      );
      // A second run moves it further: the line counts every move, not this run's alone.
      expect(second.clockAheadMs).toBeGreaterThan(first.clockAheadMs);
      expect(text).toContain(`the local clock is ${Math.round(second.clockAheadMs / 60_000)} min ahead`);
    });

    it('a second run is idempotent: no duplicate users, one live rotated key per company, exports with the same checksums', async () => {
      expect(second.created).toBe(false);
      expect(second.onboarded.map((u) => u.result)).toEqual(['already_onboarded', 'already_onboarded', 'already_onboarded']);
      expect(second.exports.month).toBe(first.exports.month);
      const checksums = (list: Manifest[]) => list.map((m) => m.objects.map((o) => `${o.dataset}/${o.format}:${o.sha256}`).sort());
      expect(checksums(await manifests(second))).toEqual(checksums(await manifests(first)));

      // The rotated company holds exactly two live keys: the current one and the seed's read-only export key.
      const snapshot = await sandbox();
      const bakery = snapshot.demo!.companies[0]!.publicId;
      const live = snapshot.apiKeys.filter((k) => k.companyId === bakery && k.revokedAt === null);
      expect(live.map((k) => k.prefix).sort()).toEqual(
        [second.rotation.keyPrefix, snapshot.demo!.companies[0]!.apiKeys[1]!.key.slice(0, 12)].sort(),
      );
      expect(second.rotation.previousKeyPrefix).toBe(first.rotation.keyPrefix);

      // The CLI reads the same state: three users, healthy.
      const users = await runAcctops(['--state-dir', state.dir, '--json', 'users', 'list']);
      expect((JSON.parse(users.stdout) as { users: unknown[] }).users).toHaveLength(3);
      const doctor = await runAcctops(['--state-dir', state.dir, '--json', 'doctor']);
      expect(JSON.parse(doctor.stdout)).toMatchObject({ findings: [] });
      expect(doctor.code).toBe(0);
      printed.push(users.stdout, users.stderr, doctor.stdout, doctor.stderr);
    });

    it('keeps the dialect in state.json for later commands, and refuses another --dialect on the same state', async () => {
      expect(JSON.parse(await readFile(join(state.dir, 'state.json'), 'utf8'))).toMatchObject({ dialect });
      const other = dialect === 'default' ? 'minimal' : 'default';
      await expect(runDemo({ stateDir: state.dir, reset: false, io, env: cliEnv(), dialect: other })).rejects.toThrow(
        new RegExp(`runs the ${dialect} dialect, not ${other}`),
      );
    });

    it('`npm start -- --reset` starts from scratch and prints the tables and where the files are', async () => {
      const start = npmScriptCommand('start');
      const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((done, fail) =>
        execFile(
          start.file,
          [...start.args, '--reset', '--dialect', dialect, '--state-dir', state.dir],
          { env: cliEnv(start.env), cwd: start.cwd, timeout: 60_000 },
          (error, out, err) =>
            error && typeof error.code !== 'number'
              ? fail(error)
              : done({ code: typeof error?.code === 'number' ? error.code : 0, stdout: out, stderr: err }),
        ),
      );
      printed.push(stdout, stderr);
      expect(code).toBe(0);
      expect(stdout).toMatch(/Deleted the previous demo state/);
      expect(stdout).toMatch(/state +.* \(created now\)/);
      expect(stdout).toContain(`${dialect} dialect`);
      expect(stdout).toMatch(/RESULT +STATUS/);
      expect(stdout).toMatch(/Done\. Where things are:/);
      // Not the directory the CLI looks in by default: the suggested commands name it.
      expect(stdout).toContain(`next          npx acctops --state-dir ${shellQuote(state.dir)} users list | `);
      expect(stdout).toMatch(/Finished in \d+\.\d s\./);
      expect(stdout).toMatch(
        /the local clock is \d+ min ahead of the system clock .*`npx acctops --state-dir .* local reset-clock` puts it back/,
      );
      // Notes only: they go to stderr, as every note; none about tax reports, which each dialect's names date.
      expect(stderr.split('\n').filter((line) => line !== '' && !line.startsWith('acctops: note: '))).toEqual([]);
      expect(stderr).not.toContain('tax report(s)');
    });
  });
});

describe("shellQuote (the demo's suggested commands)", () => {
  it('leaves a plain path alone and single-quotes one a shell would split or expand', () => {
    expect(shellQuote('/tmp/state-1/.acctops')).toBe('/tmp/state-1/.acctops');
    expect(shellQuote('/tmp/my state')).toBe("'/tmp/my state'");
    expect(shellQuote("/tmp/it's $HOME")).toBe("'/tmp/it'\\''s $HOME'");
  });
});
