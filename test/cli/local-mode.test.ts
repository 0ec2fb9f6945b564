import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expectNoCanaries } from '../helpers/canary';
import { onboardArgs, parseJson, runAcctops, tempStateDir, trackStateSecrets, useCliState } from '../helpers/cli';
import { TEST_DIALECTS } from '../helpers/dialects';
import { monthOf } from '../../sandbox/seed';
import { DEFAULT_TIME_ZONE, periodContaining } from '../../src/core/exports/formats/period';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  /**
   * Every local command through the real binary, in one state directory, in the order an operator
   * would use them. Each step asserts on the parsed --json output and the exit code; every output of
   * the file is scanned for credentials at the end.
   */
  describe('acctops CLI: local mode, the real binary', () => {
    const state = useCliState({ env: { ACCTOPS_DIALECT: dialect } });
    const { acctops } = state;
    let demo: { users: { username: string; email: string; externalId: string }[]; companies: { publicId: string; name: string }[] };

    const json = async <T = Record<string, unknown>>(...args: string[]) => {
      const result = await acctops('--json', ...args);
      return { result, body: parseJson<T>(result) };
    };

    it('creates the local state on first use: an embedded sandbox with demo data, mode 0600 files', async () => {
      const { result, body } = await json<{ users: unknown[] }>('users', 'list');
      expect(result.code).toBe(0);
      expect(body.users).toEqual([]);
      expect(result.stderr).toMatch(new RegExp(`created the local state .*, ${dialect} dialect\\)`));
      for (const file of ['state.json', 'sandbox.json', 'secrets.json']) {
        expect((await stat(join(state.dir, file))).mode & 0o777).toBe(0o600);
      }
      // ACCTOPS_DIALECT chose the embedded service's dialect when the state was created; it is kept there.
      expect(JSON.parse(await readFile(join(state.dir, 'state.json'), 'utf8'))).toMatchObject({ dialect });
      demo = (JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: typeof demo }).demo;
      expect(demo.users.map((u) => u.username)).toEqual(['alice', 'bob', 'carol']);
    });

    it('users onboard: retrieves a user the service knows, creates a new one, and is idempotent', async () => {
      const alice = demo.users[0]!;
      const first = await json<{ result: string; status: string }>(...onboardArgs(alice));
      expect(first.result.code).toBe(0);
      expect(first.body).toMatchObject({ externalId: alice.externalId, result: 'retrieved', status: 'active' });
      const again = await json('users', 'onboard', '--external-id', alice.externalId, '--username', alice.username, '--email', alice.email);
      expect(again.body).toMatchObject({ result: 'already_onboarded' });
      const dave = await json('users', 'onboard', '--external-id', randomUUID(), '--username', 'dave', '--email', 'dave@example.test');
      expect(dave.body).toMatchObject({ result: 'created', status: 'active' });

      const { body } = await json<{ users: { username: string; status: string; due: boolean }[] }>('users', 'list');
      expect(body.users.map((u) => u.username).sort()).toEqual(['alice', 'dave']);
      expect(body.users.every((u) => u.status === 'active' && !u.due)).toBe(true);
      // Human output: a table naming the users, never a token.
      const table = await acctops('users', 'list');
      expect(table.stdout).toMatch(/alice/);
      expect(table.stdout).toMatch(/2 user\(s\)/);
    });

    it('tokens refresh: --user when not due says not_due; after the clock passes the margin, --all refreshes everyone', async () => {
      const alice = demo.users[0]!;
      const notDue = await json<{ outcomes: { result: string }[] }>('tokens', 'refresh', '--user', alice.externalId);
      expect(notDue.result.code).toBe(0);
      expect(notDue.body.outcomes).toEqual([
        { externalId: alice.externalId, result: 'not_due', errorClass: null, errorCode: null, credentialRefused: false, leaseUntil: null },
      ]);
      // An active user's not_due has one reason; a user in needs_attention is refused (exit 1), never a not_due row.
      const human = await acctops('tokens', 'refresh', '--user', alice.externalId);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain(
        'not_due: nothing to do, because the token was refreshed within 24 h and expires in more than 15 minutes.\n',
      );
      expect(human.stdout).not.toMatch(/needs_attention/);

      const advanced = await json<{ now: string }>('local', 'advance-clock', '--by', '20m');
      expect(advanced.result.code).toBe(0);
      const all = await json<{ planned: number; outcomes: { result: string }[]; counts: Record<string, number> }>(
        'tokens',
        'refresh',
        '--all',
      );
      expect(all.result.code).toBe(0);
      expect(all.body.planned).toBe(2);
      expect(all.body.counts).toEqual({ refreshed: 2 });
    });

    it('keys status, keys rotate, and the old key revoked once the grace period is over', async () => {
      const bakery = demo.companies[0]!.publicId;
      const before = await json<{
        companies: {
          companyId: string;
          keyPrefix: string;
          rotationEnabled: boolean;
          nextRotationAt: number;
          pendingRevocations: unknown[];
        }[];
      }>('keys', 'status');
      expect(before.result.code).toBe(0);
      expect(before.body.companies).toHaveLength(3);
      const row = before.body.companies.find((c) => c.companyId === bakery)!;
      expect(row).toMatchObject({ rotationEnabled: true, pendingRevocations: [] });
      expect(row.keyPrefix).toMatch(/^sbx_[A-Za-z0-9]{8}$/);

      const rotated = await json<{ state: string; previousKeyPrefix: string; keyPrefix: string; previousKeyRevokeAt: string }>(
        'keys',
        'rotate',
        '--company',
        bakery,
      );
      expect(rotated.result.code).toBe(0);
      expect(rotated.body.state).toBe('completed');
      expect(rotated.body.previousKeyPrefix).toBe(row.keyPrefix);
      expect(rotated.body.keyPrefix).not.toBe(row.keyPrefix);
      expect(rotated.body.previousKeyRevokeAt).toMatch(/Z$/);

      const during = await json<{ companies: { companyId: string; keyPrefix: string; pendingRevocations: { keyPrefix: string }[] }[] }>(
        'keys',
        'status',
        '--company',
        bakery,
      );
      expect(during.body.companies).toHaveLength(1);
      expect(during.body.companies[0]).toMatchObject({
        keyPrefix: rotated.body.keyPrefix,
        pendingRevocations: [{ keyPrefix: row.keyPrefix }],
      });

      const later = await json<{ revoked: { keyPrefix: string; outcome: string }[] }>('local', 'advance-clock', '--by', '31m');
      expect(later.body.revoked).toEqual([{ keyPrefix: row.keyPrefix, outcome: 'revoked', error: null, code: null }]);
      const after = await json<{ companies: { companyId: string; pendingRevocations: unknown[] }[] }>(
        'keys',
        'status',
        '--company',
        bakery,
      );
      expect(after.body.companies[0]!.pendingRevocations).toEqual([]);

      const human = await acctops('keys', 'status');
      expect(human.stdout).toContain(`${rotated.body.keyPrefix}…`);

      // A leaked key: rotate and revoke the previous key at once, no grace period, nothing left pending.
      const urgent = await json<{ state: string; keyPrefix: string; previousKeyPrefix: string; previousKeyRevoked: string }>(
        'keys',
        'rotate',
        '--company',
        bakery,
        '--revoke-previous-now',
      );
      expect(urgent.result.code).toBe(0);
      expect(urgent.body).toMatchObject({ state: 'completed', previousKeyPrefix: rotated.body.keyPrefix, previousKeyRevoked: 'revoked' });
      const clean = await json<{ companies: { keyPrefix: string; pendingRevocations: unknown[] }[] }>(
        'keys',
        'status',
        '--company',
        bakery,
      );
      expect(clean.body.companies[0]).toMatchObject({ keyPrefix: urgent.body.keyPrefix, pendingRevocations: [] });
      // Nine CLI processes, each starting the embedded sandbox and emulator: minutes on a loaded machine.
    }, 240_000);

    it('users revoke and recover: a revoked user comes back only with --reactivate', async () => {
      const alice = demo.users[0]!;
      const revoked = await json('users', 'revoke', '--user', alice.externalId);
      expect(revoked.result.code).toBe(0);
      expect(revoked.body).toEqual({ externalId: alice.externalId, result: 'revoked' });
      expect((await json('users', 'revoke', '--user', alice.externalId)).body).toMatchObject({ result: 'already_revoked' });
      // Its token was expired at the service: the table does not show it as alive.
      const listed = await acctops('users', 'list', '--status', 'revoked');
      expect(listed.stdout).toMatch(new RegExp(`${alice.externalId} .* revoked +- \\(expired at revocation\\)`));

      // Refreshing a revoked user is refused as revoked (exit 1, as `users recover` without
      // --reactivate), naming the way back; never `not_due`, which reads like "later".
      const skipped = await acctops('tokens', 'refresh', '--user', alice.externalId);
      expect(skipped.code).toBe(1);
      expect(skipped.stdout).toBe('');
      expect(skipped.stderr).toBe(
        `acctops: error: --user ${alice.externalId}: the user is revoked; nothing was refreshed (a revoked user comes back only on purpose: \`acctops users recover --user ${alice.externalId} --reactivate\` retrieves a new token pair (docs/runbooks.md, "Recover a user"))\n`,
      );
      const skippedJson = await acctops('--json', 'tokens', 'refresh', '--user', alice.externalId);
      expect(skippedJson.code).toBe(1);
      expect(JSON.parse(skippedJson.stderr)).toMatchObject({ error: { code: 'user_revoked', exitCode: 1 } });
      expect((await acctops('users', 'list', '--status', 'revoked')).stdout).toContain(alice.externalId);

      // Onboarding it again changes nothing, and says it is not refreshed rather than "refreshed on schedule".
      const again = await acctops(...onboardArgs(alice));
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/already onboarded \(status revoked\)/);
      expect(again.stdout).not.toMatch(/refreshed on schedule/);
      expect(again.stdout).toContain(`acctops users recover --user ${alice.externalId} --reactivate`);

      const refused = await acctops('users', 'recover', '--user', alice.externalId);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/revoked.*--reactivate/);

      const recovered = await json('users', 'recover', '--user', alice.externalId, '--reactivate');
      expect(recovered.result.code).toBe(0);
      expect(recovered.body).toMatchObject({ externalId: alice.externalId, result: 'recovered', previousStatus: 'revoked', changed: true });

      // Active now: a recover changes nothing and says so (it used to retrieve a pair and print "recovered (was active)"),
      // naming --force, the way out when the service refuses the tokens of a user held active.
      const tokenFile = async () => JSON.parse(await readFile(join(state.dir, 'tokens.json'), 'utf8')) as unknown;
      const tokensBefore = await tokenFile();
      const active = await acctops('users', 'recover', '--user', alice.externalId);
      expect(active.code).toBe(0);
      expect(active.stdout).toMatch(
        new RegExp(
          `^User ${alice.externalId} was already active: nothing was changed \\(no token pair retrieved\\); its access token expires \\S+; ` +
            `to retrieve a new pair anyway \\(the service refuses its tokens\\), run \`acctops users recover --user ${alice.externalId} --force\`\\.\\n$`,
        ),
      );
      expect(active.stdout).not.toMatch(/recovered/);
      const activeJson = await json('users', 'recover', '--user', alice.externalId, '--reactivate');
      expect(activeJson.result.code).toBe(0);
      expect(activeJson.body).toEqual({
        externalId: alice.externalId,
        result: 'already_active',
        previousStatus: 'active',
        accessTokenExpiresAt: (recovered.body as { accessTokenExpiresAt: string }).accessTokenExpiresAt,
        changed: false,
      });
      // Nothing stored changed: every record as it was (the lease taken and given back leaves none behind).
      expect(await tokenFile()).toEqual(tokensBefore);

      // --force retrieves a new pair for it all the same: a later expiry, the stored pair replaced.
      expect((await acctops('local', 'advance-clock', '--by', '1m')).code).toBe(0);
      const forcedText = await acctops('users', 'recover', '--user', alice.externalId, '--force');
      expect(forcedText.code).toBe(0);
      expect(forcedText.stdout).toMatch(
        new RegExp(`^User ${alice.externalId}: new token pair retrieved \\(was active, --force\\); access token expires \\S+\\.\\n$`),
      );
      const tokensForced = await tokenFile();
      expect(tokensForced).not.toEqual(tokensBefore);
      const forced = await json<{ accessTokenExpiresAt: string }>('users', 'recover', '--user', alice.externalId, '--force');
      expect(forced.result.code).toBe(0);
      expect(forced.body).toEqual({
        externalId: alice.externalId,
        result: 'recovered',
        previousStatus: 'active',
        accessTokenExpiresAt: expect.any(String),
        changed: true,
      });
      expect(Date.parse(forced.body.accessTokenExpiresAt)).toBeGreaterThan(
        Date.parse((recovered.body as { accessTokenExpiresAt: string }).accessTokenExpiresAt),
      );
      expect(await tokenFile()).not.toEqual(tokensForced);

      // A user acctops does not hold is configuration (exit 3), as in every command that names one.
      const unknown = await acctops('users', 'revoke', '--user', randomUUID());
      expect(unknown.code).toBe(3);
      expect(unknown.stderr).toMatch(/^acctops: error: --user [0-9a-f-]{36}: no such user .*acctops users list/);
    });

    it('doctor reports findings with exit 5 (no export of the expected month, even with a later one; tokens expired), export fixes them, doctor then exits 0', async () => {
      const sick = await json<{ findings: string[]; exports: { expectedPeriod: string } }>('doctor');
      expect(sick.result.code).toBe(5);
      expect(sick.body.findings.some((f) => /has no export of/.test(f))).toBe(true);

      // An export of a later month (on demand) does not stand in for the one the schedule should have made.
      const expected = sick.body.exports.expectedPeriod;
      const later = monthOf(Date.parse(`${expected}-15T00:00:00Z`), 1);
      expect((await acctops('export', '--month', later, '--format', 'csv')).code).toBe(0);
      const stillSick = await json<{
        findings: string[];
        exports: { companies: { lastPeriod: string | null; overdue: boolean }[] };
      }>('doctor');
      expect(stillSick.result.code).toBe(5);
      expect(stillSick.body.exports.companies).toHaveLength(3);
      for (const c of stillSick.body.exports.companies) expect(c).toMatchObject({ lastPeriod: later, overdue: true });
      expect(stillSick.body.findings.filter((f) => f.includes(`has no export of ${expected} (last: ${later})`))).toHaveLength(3);
      expect((await acctops('doctor')).stdout).toMatch(new RegExp(`HAS ${expected}[\\s\\S]*\\bNO\\b`));

      const exported = await json<{
        month: string;
        companies: { companyId: string; status: string; manifestUrl: string; records: Record<string, number> }[];
      }>('export', '--month', sick.body.exports.expectedPeriod);
      expect(exported.result.code).toBe(0);
      expect(exported.body.companies).toHaveLength(3);
      for (const company of exported.body.companies) {
        expect(company.status).toBe('completed');
        expect(company.records.transactions).toBeGreaterThan(0);
        // The manifest exists, and every object it lists has the size and SHA-256 it records.
        const manifestPath = fileURLToPath(company.manifestUrl);
        const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as {
          period: string;
          objects: { key: string; bytes: number; sha256: string }[];
        };
        expect(manifest.period).toBe(exported.body.month);
        expect(manifest.objects.map((o) => o.key.split('.').pop())).toEqual(expect.arrayContaining(['gz', 'csv', 'parquet']));
        for (const object of manifest.objects) {
          const bytes = await readFile(join(state.dir, object.key));
          expect(bytes.length).toBe(object.bytes);
          expect(createHash('sha256').update(bytes).digest('hex')).toBe(object.sha256);
        }
      }

      await acctops('tokens', 'refresh', '--all');
      const healthy = await json<{ findings: string[]; health: { probes: { ok: boolean }[] } }>('doctor');
      expect(healthy.body.findings).toEqual([]);
      expect(healthy.body.health.probes.every((p) => p.ok)).toBe(true);
      expect(healthy.result.code).toBe(0);
      const human = await acctops('doctor');
      expect(human.stdout).toMatch(/No findings\./);
    });

    it("doctor: a symlink that differs from its manifest is a finding (Athena behind, exit 5); the company's next export of the month rewrites it", async () => {
      const bakery = demo.companies[0]!.publicId;
      const clean = await json<{ exports: { expectedPeriod: string; companies: { lastPeriod: string }[] } }>('doctor');
      expect(clean.result.code).toBe(0);
      const expected = clean.body.exports.expectedPeriod;
      // The last period (a later month, CSV only: no symlink) is not the expected one: both are compared.
      expect(clean.body.exports.companies[0]!.lastPeriod).not.toBe(expected);
      const symlinkPath = join(state.dir, 'exports', `company=${bakery}`, `period=${expected}`, 'transactions', '_symlink', 'symlink.txt');
      const current = await readFile(symlinkPath, 'utf8');
      expect(current).toMatch(/part-00000\.parquet\n$/);
      // What a publish stopped between its manifest and its symlinks leaves: the previous run's view.
      await writeFile(symlinkPath, current.replace(/run=[^/]+/, 'run=previous'));

      const behind = await json<{
        findings: string[];
        exports: { companies: { companyId: string; staleSymlinks: { period: string; datasets: string[] }[] }[] };
      }>('doctor');
      expect(behind.result.code).toBe(5);
      const rows = behind.body.exports.companies;
      expect(rows.find((c) => c.companyId === bakery)!.staleSymlinks).toEqual([{ period: expected, datasets: ['transactions'] }]);
      expect(rows.filter((c) => c.companyId !== bakery).every((c) => c.staleSymlinks.length === 0)).toBe(true);
      expect(behind.body.findings).toEqual([
        expect.stringMatching(
          new RegExp(
            `^company ${bakery}: Athena shows an earlier export of transactions of ${expected} .*acctops export --month ${expected} --company ${bakery}`,
          ),
        ),
      ]);
      expect((await acctops('doctor')).stdout).toMatch(new RegExp(`${bakery} .* behind \\(${expected}\\)`));

      expect((await acctops('export', '--month', expected, '--company', bakery)).code).toBe(0);
      const repaired = await json<{ findings: string[]; exports: { companies: { staleSymlinks: unknown[] }[] } }>('doctor');
      expect(repaired.body.findings).toEqual([]);
      expect(repaired.result.code).toBe(0);
      expect(repaired.body.exports.companies.every((c) => c.staleSymlinks.length === 0)).toBe(true);
      expect(await readFile(symlinkPath, 'utf8')).not.toContain('run=previous');
    });

    it('doctor: an unreadable manifest is a finding (exit 5), the other sections still run; an export of the running month says it is not over', async () => {
      const bakery = demo.companies[0]!.publicId;
      // The month of the local clock (the demo moved it on), in the time zone months are cut in.
      const now = Date.parse((await json<{ now: string }>('local', 'status')).body.now);
      const currentMonth = () => periodContaining(now, DEFAULT_TIME_ZONE).text;
      const running = await json<{ month: string; monthOpen: boolean }>(
        'export',
        '--company',
        bakery,
        '--month',
        currentMonth(),
        '--format',
        'csv',
      );
      expect(running.result.code).toBe(0);
      expect(running.body.monthOpen).toBe(true);
      const text = await acctops('export', '--company', bakery, '--month', currentMonth(), '--format', 'csv');
      expect(text.stderr).toMatch(new RegExp(`^acctops: note: ${currentMonth()} is not over yet`, 'm'));
      expect(text.stdout).not.toContain('note:');

      const manifestPath = join(state.dir, 'exports', `company=${bakery}`, `period=${currentMonth()}`, '_manifest.json');
      const intact = await readFile(manifestPath);
      await writeFile(manifestPath, '{"schemaVersion":1,');
      try {
        const report = await json<{
          findings: string[];
          tokens: unknown;
          exports: { companies: { companyId: string; manifestError: string | null; generatedAt: string | null }[] };
        }>('doctor');
        expect(report.result.code).toBe(5);
        expect(report.body.tokens).not.toBeNull();
        expect(report.body.exports.companies.find((c) => c.companyId === bakery)).toMatchObject({
          generatedAt: null,
          manifestError: expect.stringMatching(/_manifest\.json: not JSON$/),
        });
        expect(report.body.findings).toContainEqual(
          expect.stringMatching(
            new RegExp(
              `company ${bakery}: the manifest of ${currentMonth()} is unreadable .*acctops export --month ${currentMonth()} --company ${bakery}`,
            ),
          ),
        );
        expect((await acctops('doctor')).stdout).toMatch(new RegExp(`${bakery} +${currentMonth()} +manifest unreadable`));
      } finally {
        await writeFile(manifestPath, intact);
      }
    });

    it('export --format and --company narrow the run; the summary table names the manifest', async () => {
      const bakery = demo.companies[0]!.publicId;
      const result = await acctops('export', '--month', '2026-01', '--company', bakery, '--format', 'csv');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/Export of 2026-01 \(local mode, csv\)/);
      // As a path to paste into a shell, not the percent-encoded file:// URL the manifest and --json carry.
      expect(result.stdout).toContain(`: ${join(state.dir, 'exports', `company=${bakery}`, 'period=2026-01', '_manifest.json')}\n`);
      expect(result.stdout).not.toContain('file://');
      // Not a terminal: no progress bar on stderr; only notes.
      expect(result.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('acctops: note: '))).toEqual([]);
      expect(result.stderr).not.toContain('\r');
      // The embedded service's tax reports are read under its dialect's names: each has its period.
      expect(result.stderr).not.toContain('tax report(s) with no period');
    });

    it("export --tax-report-fields wins over the dialect's names, whole", async () => {
      const bakery = demo.companies[0]!.publicId;
      const given = await json<{ companies: { undatedTaxReports: number; records: { tax_reports: number } }[] }>(
        'export',
        '--month',
        '2026-01',
        '--company',
        bakery,
        '--format',
        'csv',
        '--tax-report-fields',
        'type=reportType',
      );
      expect(given.result.code).toBe(0);
      const [row] = given.body.companies;
      // Only `type` renamed: the minimal dialect's period and date fields are then read under our names, which it does not send.
      if (dialect === 'minimal') {
        expect(row!.records.tax_reports).toBeGreaterThan(0);
        expect(row!.undatedTaxReports).toBe(row!.records.tax_reports);
      } else expect(row!.undatedTaxReports).toBe(0);
    });

    it('local status describes the state; local reset needs --yes and then deletes it', async () => {
      const status = await json<{ stateDir: string; companies: number; users: number }>('local', 'status');
      expect(status.body).toMatchObject({ stateDir: state.dir, dialect, companies: 3, users: 2 });
      expect((await acctops('local', 'status')).stdout).toContain(`Service       embedded sandbox, ${dialect} dialect`);
      const refused = await acctops('local', 'reset');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--yes/);
      await trackStateSecrets(state.dir);
      const reset = await json('local', 'reset', '--yes');
      expect(reset.result.code).toBe(0);
      await expect(stat(state.dir)).rejects.toThrow();
    });
  });
});

describe("acctops CLI: the state directory holds the user's files too", () => {
  it('local reset --yes deletes only what acctops wrote, and keeps the directory when something else is in it', async () => {
    const state = await tempStateDir();
    try {
      await writeFile(join(state.dir, 'notes.txt'), 'mine\n');
      await mkdir(join(state.dir, 'src'));
      await writeFile(join(state.dir, 'src', 'main.ts'), 'export {};\n');
      const created = await runAcctops(['--state-dir', state.dir, 'users', 'list']);
      expect(created.code).toBe(0);
      await trackStateSecrets(state.dir);

      const reset = await runAcctops(['--state-dir', state.dir, '--json', 'local', 'reset', '--yes']);
      expect(reset.code).toBe(0);
      expect(parseJson(reset)).toMatchObject({ removed: true, kept: expect.arrayContaining(['notes.txt', 'src']) as unknown });
      expect((await readdir(state.dir)).sort()).toEqual(['notes.txt', 'src']);
      expect(await readFile(join(state.dir, 'src', 'main.ts'), 'utf8')).toBe('export {};\n');
      // Human output says what stayed.
      expect((await runAcctops(['--state-dir', state.dir, 'users', 'list'])).code).toBe(0);
      expect((await runAcctops(['--state-dir', state.dir, 'local', 'reset', '--yes'])).stdout).toMatch(/Kept .*notes\.txt, src/);
      expectNoCanaries([reset.stdout, reset.stderr], 'local reset output');
    } finally {
      await state.remove();
    }
  });

  it('an empty ACCTOPS_STATE_DIR or --state-dir is refused: nothing is written into (or deleted from) the working directory', async () => {
    const cwd = await tempStateDir();
    try {
      await writeFile(join(cwd.dir, 'notes.txt'), 'mine\n');
      const fromEnv = await runAcctops(['users', 'list'], { cwd: cwd.dir, env: { ACCTOPS_STATE_DIR: '' } });
      expect(fromEnv.code).toBe(3);
      expect(fromEnv.stderr.trim().split('\n')).toHaveLength(1);
      expect(fromEnv.stderr).toMatch(/ACCTOPS_STATE_DIR is empty/);
      const flag = await runAcctops(['--state-dir', '', 'users', 'list'], { cwd: cwd.dir });
      expect(flag.code).toBe(2);
      expect(flag.stderr).toMatch(/--state-dir is empty/);
      const reset = await runAcctops(['local', 'reset', '--yes'], { cwd: cwd.dir, env: { ACCTOPS_STATE_DIR: ' ' } });
      expect(reset.code).toBe(3);
      expect(await readdir(cwd.dir)).toEqual(['notes.txt']);
    } finally {
      await cwd.remove();
    }
  });
});
