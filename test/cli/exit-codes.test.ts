import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, chown, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { canarySecret } from '../helpers/canary';
import { cliEnv, closeCliState, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';

const ROOT = resolve(__dirname, '..', '..');

/** The README's "Exit codes" table, as code -> meaning: what this test holds the binary to. */
async function readmeExitCodes(): Promise<Map<number, string>> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Exit codes'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| Code |')));
  const codes = new Map<number, string>();
  for (const match of table.matchAll(/^\| (\d) \| (.+) \|$/gm)) codes.set(Number(match[1]), match[2]!);
  return codes;
}

/** AWS mode with nothing configured: no profile, no variables, no instance metadata. */
const bareAws = { AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null', AWS_EC2_METADATA_DISABLED: 'true' };

interface Case {
  why: string;
  code: number;
  args: string[];
  env?: Record<string, string>;
  /** A fresh state directory, prepared by `setup` (default: the shared one). */
  setup?: (dir: string) => Promise<void>;
  stderr?: RegExp;
  /** What else the output must show (the --json document). */
  check?: (result: CliResult) => void;
}

interface DoctorJson {
  health: { probes: { name: string; ok: boolean }[] };
  tokens: { skipped?: string; total?: number };
  registry: { skipped?: string; companies?: number };
  exports: { companies: unknown[] };
  findings: string[];
}

/**
 * The README's exit-code table, row by row, through the real binary: every documented code has
 * cases, every case exits with its code, and every error is the one documented line.
 */
describe('acctops exit codes: the README table holds', () => {
  let shared: { dir: string; remove(): Promise<void> };
  const outputs: CliResult[] = [];
  const wrongInstitution = () => `inst_${randomUUID()}:${canarySecret('wrong-institution')}`;
  /** Neither onboarded nor registered anywhere. */
  const GHOST = randomUUID();
  const REVOKED_USER = randomUUID();

  const CASES: Case[] = [
    { why: '--version', code: 0, args: ['--version'] },
    { why: 'users list on a healthy state', code: 0, args: ['users', 'list'] },
    {
      why: 'recovering a revoked user without --reactivate (the use case refuses)',
      code: 1,
      args: ['users', 'recover', '--user', REVOKED_USER],
      setup: async (dir) => {
        const onboard = ['users', 'onboard', '--external-id', REVOKED_USER, '--username', 'rev', '--email', 'rev@example.test'];
        expect((await runAcctops(['--state-dir', dir, ...onboard])).code).toBe(0);
        expect((await runAcctops(['--state-dir', dir, 'users', 'revoke', '--user', REVOKED_USER])).code).toBe(0);
      },
      // The use case's `reactivate` is the flag --reactivate here, said once.
      stderr: new RegExp(
        `^acctops: error: user ${REVOKED_USER} is revoked \\(a revoked user comes back only on purpose: add --reactivate\\)\n$`,
      ),
    },
    {
      why: 'a user the deployment does not know, named by --user',
      code: 3,
      args: ['users', 'revoke', '--user', GHOST],
      stderr: new RegExp(`^acctops: error: --user ${GHOST}: no such user in this deployment .*acctops users list`),
    },
    {
      why: 'a company the deployment does not know, named by --company',
      code: 3,
      args: ['keys', 'status', '--company', GHOST],
      stderr: new RegExp(`^acctops: error: --company ${GHOST}: no such company in this deployment .*acctops companies list`),
    },
    { why: 'an unknown option', code: 2, args: ['users', 'list', '--nope'] },
    { why: 'a credential given as a flag', code: 2, args: ['export', '--api-key', 'x'] },
    { why: 'a malformed argument', code: 2, args: ['local', 'advance-clock', '--by', 'soon'] },
    { why: 'a month after the current one', code: 2, args: ['export', '--month', '2099-01'], stderr: /--month is after the current month/ },
    {
      why: 'a clock jump of more than 31 days without --force',
      code: 2,
      args: ['local', 'advance-clock', '--by', '100000d'],
      stderr: /more than 31 days.*--force.*reset-clock/,
    },
    {
      why: 'a damaged tokens.json (names the file and the remedy)',
      code: 3,
      args: ['users', 'list'],
      setup: async (dir) => writeFile(join(dir, 'tokens.json'), '{"format": "acctops.tokens", "records": '),
      // One sentence: no `(root): ` for the file as a whole.
      stderr: /tokens\.json is damaged \(not valid JSON\) \(`acctops local repair`/,
    },
    {
      why: 'a damaged companies.json (names the file and the remedy), for every command that opens the state',
      code: 3,
      args: ['export', '--month', '2026-10'],
      setup: async (dir) => writeFile(join(dir, 'companies.json'), '{bad'),
      stderr: /companies\.json is damaged.*acctops local repair/,
    },
    {
      why: 'a damaged secrets.json (names the file; only a reset helps)',
      code: 3,
      args: ['keys', 'status'],
      setup: async (dir) => writeFile(join(dir, 'secrets.json'), '[]'),
      stderr: /secrets\.json is damaged.*local reset --yes/,
    },
    {
      why: 'a malformed ACCTOPS_INSTITUTION override',
      code: 3,
      args: ['users', 'list'],
      env: { ACCTOPS_INSTITUTION: 'no-colon' },
      stderr:
        /ACCTOPS_INSTITUTION is not an institution credential \(expected "<institution_id>:<secret_key>" or a JSON object with institutionId and secretKey\) \(set it/,
    },
    {
      why: 'a malformed ACCTOPS_API_KEY for keys install (named, not echoed)',
      code: 3,
      args: ['keys', 'install', '--company', randomUUID()],
      env: { ACCTOPS_API_KEY: 'MALFORMED-KEY-VALUE' },
      stderr: /^acctops: error: ACCTOPS_API_KEY is not an API key/,
      check: (result) => expect(result.stderr).not.toContain('MALFORMED-KEY-VALUE'),
    },
    {
      why: 'a malformed ACCTOPS_API_KEY for a direct-mode export (nothing is sent)',
      code: 3,
      args: ['export', '--base-url', 'http://127.0.0.1:9/api/v1', '--month', '2026-01'],
      env: { ACCTOPS_API_KEY: 'not a key' },
      stderr: /^acctops: error: ACCTOPS_API_KEY is not an API key.*nothing was sent/,
      check: (result) => expect(result.stderr).not.toContain('not a key'),
    },
    {
      why: 'AWS mode without a region: doctor',
      code: 3,
      args: ['--stack', 'acctops-x', 'doctor'],
      env: bareAws,
      stderr: /^acctops: error: no AWS region is set \(.*--region/,
    },
    {
      why: 'AWS mode without a region: keys status',
      code: 3,
      args: ['--stack', 'acctops-x', 'keys', 'status'],
      env: bareAws,
      stderr: /no AWS region/,
    },
    {
      why: 'AWS mode without credentials',
      code: 4,
      args: ['--stack', 'acctops-x', 'doctor'],
      env: { ...bareAws, AWS_REGION: 'eu-central-1' },
      stderr: /^acctops: error: no AWS credentials/,
    },
    {
      why: 'the service refuses the ACCTOPS_INSTITUTION override',
      code: 4,
      args: ['users', 'onboard', '--external-id', randomUUID(), '--username', 'zed', '--email', 'zed@example.test'],
      env: { ACCTOPS_INSTITUTION: wrongInstitution() },
    },
    { why: 'doctor with findings (no export of last month yet)', code: 5, args: ['doctor'] },
    {
      why: 'doctor tries the ACCTOPS_INSTITUTION override and finds it refused',
      code: 5,
      args: ['--json', 'doctor'],
      env: { ACCTOPS_INSTITUTION: wrongInstitution() },
      check: (result) => {
        const report = JSON.parse(result.stdout) as DoctorJson;
        expect(report.health.probes.map((p) => [p.name, p.ok])).toEqual([
          ['institution-credential-readable', true],
          ['service-reachable', true],
          ['service-reachable (ACCTOPS_INSTITUTION)', false],
        ]);
        expect(report.findings.some((f) => /service-reachable \(ACCTOPS_INSTITUTION\) failed/.test(f))).toBe(true);
      },
    },
    {
      why: 'doctor with a damaged tokens.json reports it and checks the rest',
      code: 5,
      args: ['--json', 'doctor'],
      setup: async (dir) => writeFile(join(dir, 'tokens.json'), 'not json'),
      check: (result) => {
        const report = JSON.parse(result.stdout) as DoctorJson;
        expect(report.findings[0]).toMatch(/tokens\.json is damaged.*acctops local repair/);
        expect(report.tokens.skipped).toMatch(/tokens\.json/);
        expect(report.health.probes.every((p) => p.ok)).toBe(true);
        expect(report.exports.companies).toHaveLength(3);
      },
    },
    {
      why: 'doctor with a damaged companies.json reports it and checks the rest',
      code: 5,
      args: ['--json', 'doctor'],
      setup: async (dir) => writeFile(join(dir, 'companies.json'), '{bad'),
      check: (result) => {
        const report = JSON.parse(result.stdout) as DoctorJson;
        expect(report.findings[0]).toMatch(/companies\.json is damaged.*acctops local repair/);
        expect(report.registry.skipped).toMatch(/companies\.json/);
        expect(report.health.probes.every((p) => p.ok)).toBe(true);
        expect(report.exports.companies).toHaveLength(3);
      },
    },
  ];

  beforeAll(async () => {
    shared = await tempStateDir();
    // Creates the shared state (an embedded sandbox with demo data).
    expect((await runAcctops(['--state-dir', shared.dir, 'users', 'list'])).code).toBe(0);
  });
  afterAll(() => closeCliState(shared, outputs));

  it('every code of the README table has cases, and no case uses a code the table lacks', async () => {
    const documented = await readmeExitCodes();
    expect([...documented.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect([...new Set(CASES.map((c) => c.code))].sort()).toEqual([...documented.keys()].sort());
  });

  it.each(CASES.map((c) => [c.code, c.why, c] as const))('exit %i: %s', async (code, _why, c) => {
    let dir = shared.dir;
    let own: { dir: string; remove(): Promise<void> } | undefined;
    if (c.setup) {
      own = await tempStateDir();
      dir = own.dir;
      expect((await runAcctops(['--state-dir', dir, 'users', 'list'])).code).toBe(0);
      await c.setup(dir);
    }
    try {
      const result = await runAcctops(['--state-dir', dir, ...c.args], { env: c.env ?? {} });
      outputs.push(result);
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code, stderr: expect.anything() });
      if (code !== 0 && code !== 5) {
        // One line, in the documented form, never a stack trace.
        expect(result.stderr).toMatch(/^acctops: error: [^\n]+\n$/);
      }
      if (c.stderr) expect(result.stderr).toMatch(c.stderr);
      c.check?.(result);
    } finally {
      await own?.remove();
    }
  });

  it('local repair rebuilds a damaged tokens.json, keeps the damaged file, and the state works again', async () => {
    const own = await tempStateDir();
    try {
      expect((await runAcctops(['--state-dir', own.dir, 'users', 'list'])).code).toBe(0);
      await writeFile(join(own.dir, 'tokens.json'), 'not json');
      const repaired = await runAcctops(['--state-dir', own.dir, '--json', 'local', 'repair']);
      outputs.push(repaired);
      expect(repaired.code).toBe(0);
      const report = JSON.parse(repaired.stdout) as { repaired: { file: string; keptAs: string }[]; unrepairable: unknown[] };
      expect(report.repaired.map((r) => r.file)).toEqual([join(own.dir, 'tokens.json')]);
      expect(await readFile(report.repaired[0]!.keptAs, 'utf8')).toBe('not json');
      expect((await runAcctops(['--state-dir', own.dir, 'users', 'list'])).code).toBe(0);
      await writeFile(join(own.dir, 'sandbox.json'), '{}');
      const cannot = await runAcctops(['--state-dir', own.dir, '--json', 'local', 'repair']);
      expect(cannot.code).toBe(3);
      expect(JSON.parse(cannot.stdout)).toMatchObject({ repaired: [], unrepairable: [{ file: join(own.dir, 'sandbox.json') }] });
      // reset still recognises the directory (the kept file is acctops's).
      expect((await runAcctops(['--state-dir', own.dir, 'local', 'reset', '--yes'])).code).toBe(0);
    } finally {
      await own.remove();
    }
  });

  it('local repair sets a damaged companies.json aside and seeds it again from the key secrets, saying what was lost', async () => {
    const own = await tempStateDir();
    const added = randomUUID();
    const companies = async () =>
      (
        JSON.parse((await runAcctops(['--state-dir', own.dir, '--json', 'companies', 'list'])).stdout) as {
          companies: { companyId: string }[];
        }
      ).companies.map((c) => c.companyId);
    try {
      expect((await runAcctops(['--state-dir', own.dir, 'companies', 'add', '--company', added])).code).toBe(0);
      const demo = (await companies()).filter((id) => id !== added);
      expect(demo).toHaveLength(3);
      await writeFile(join(own.dir, 'companies.json'), '{bad');
      const repaired = await runAcctops(['--state-dir', own.dir, '--json', 'local', 'repair']);
      outputs.push(repaired);
      expect(repaired.code).toBe(0);
      const report = JSON.parse(repaired.stdout) as { repaired: { file: string; keptAs: string; rebuiltAs: string }[] };
      expect(report.repaired).toEqual([
        {
          file: join(own.dir, 'companies.json'),
          keptAs: expect.stringMatching(/companies\.json\.damaged-/) as unknown,
          rebuiltAs: expect.stringMatching(/seeded with the 3 company\(ies\) whose key secrets .*companies add\|remove.*lost/) as unknown,
        },
      ]);
      expect(await readFile(report.repaired[0]!.keptAs, 'utf8')).toBe('{bad');
      // The demo companies come back from their key secrets; the one only `companies add` knew is lost.
      expect((await companies()).sort()).toEqual([...demo].sort());
      const text = await runAcctops(['--state-dir', own.dir, 'local', 'repair']);
      expect(text.stdout).toMatch(/No damaged state file/);
    } finally {
      await own.remove();
    }
  });

  it('local repair rebuilds a damaged state.json in the dialect ACCTOPS_DIALECT names, so a minimal state keeps working', async () => {
    const own = await tempStateDir();
    const env = { ACCTOPS_DIALECT: 'minimal' };
    try {
      expect((await runAcctops(['--state-dir', own.dir, 'users', 'list'], { env })).code).toBe(0);
      await writeFile(join(own.dir, 'state.json'), '{');
      const repaired = await runAcctops(['--state-dir', own.dir, '--json', 'local', 'repair'], { env });
      outputs.push(repaired);
      expect(repaired.code).toBe(0);
      const report = JSON.parse(repaired.stdout) as { repaired: { file: string; rebuiltAs: string }[] };
      expect(report.repaired).toEqual([
        expect.objectContaining({ file: join(own.dir, 'state.json'), rebuiltAs: expect.stringContaining('the minimal dialect') }),
      ]);
      expect(JSON.parse(await readFile(join(own.dir, 'state.json'), 'utf8'))).toMatchObject({ dialect: 'minimal' });
      // The repaired state works again.
      expect((await runAcctops(['--state-dir', own.dir, 'users', 'list'], { env })).code).toBe(0);
    } finally {
      await own.remove();
    }
  });

  it('ACCTOPS_DIALECT is checked by every local command: a bogus one is exit 3 with what to do, one the state does not run is refused as --dialect is', async () => {
    const own = await tempStateDir();
    const run = async (env: Record<string, string>) => {
      const result = await runAcctops(['--state-dir', own.dir, 'users', 'list'], { env });
      outputs.push(result);
      return result;
    };
    try {
      const bogusNew = await run({ ACCTOPS_DIALECT: 'bogus' });
      expect({ code: bogusNew.code, stdout: bogusNew.stdout }).toEqual({ code: 3, stdout: '' });
      expect(bogusNew.stderr).toBe(
        'acctops: error: ACCTOPS_DIALECT must be one of default, minimal (nothing was run: set it to default or minimal, or unset it (a state keeps the dialect it was created with))\n',
      );
      expect((await run({})).code).toBe(0);
      const before = await readFile(join(own.dir, 'state.json'), 'utf8');
      // On an existing state too, where the variable used to be read by nobody and said nothing.
      const bogusExisting = await run({ ACCTOPS_DIALECT: 'bogus' });
      expect(bogusExisting.code).toBe(3);
      expect(bogusExisting.stderr).toBe(bogusNew.stderr);
      const other = await run({ ACCTOPS_DIALECT: 'minimal' });
      expect({ code: other.code, stdout: other.stdout }).toEqual({ code: 3, stdout: '' });
      expect(other.stderr).toBe(
        `acctops: error: the local state in ${own.dir} runs the default dialect, not the minimal one ACCTOPS_DIALECT names (nothing was run: unset ACCTOPS_DIALECT (the state keeps its dialect), or start a minimal state: \`acctops local reset --yes\`, then run again)\n`,
      );
      expect(await readFile(join(own.dir, 'state.json'), 'utf8')).toBe(before);
      // The state's own dialect, or an empty variable, is no mismatch.
      expect((await run({ ACCTOPS_DIALECT: 'default' })).code).toBe(0);
      expect((await run({ ACCTOPS_DIALECT: '' })).code).toBe(0);
    } finally {
      await own.remove();
    }
  });

  it('a long clock jump needs --force, and reset-clock brings the clock back', async () => {
    const own = await tempStateDir();
    try {
      const status = async () =>
        JSON.parse((await runAcctops(['--state-dir', own.dir, '--json', 'local', 'status'])).stdout) as { clockOffsetMs: number };
      expect((await runAcctops(['--state-dir', own.dir, 'local', 'advance-clock', '--by', '32d'])).code).toBe(2);
      expect((await status()).clockOffsetMs).toBe(0);
      expect((await runAcctops(['--state-dir', own.dir, 'local', 'advance-clock', '--by', '32d', '--force'])).code).toBe(0);
      expect((await status()).clockOffsetMs).toBe(32 * 86_400_000);
      const back = await runAcctops(['--state-dir', own.dir, '--json', 'local', 'reset-clock']);
      expect(back.code).toBe(0);
      expect(JSON.parse(back.stdout)).toMatchObject({ undoneMs: 32 * 86_400_000 });
      expect((await status()).clockOffsetMs).toBe(0);
    } finally {
      await own.remove();
    }
  });

  it('a state directory that is a file, or inside one, is configuration (exit 3), naming the setting and the path', async () => {
    const own = await tempStateDir();
    try {
      const file = join(own.dir, 'not-a-dir');
      await writeFile(file, 'mine\n');
      for (const [args, env, path] of [
        [['--state-dir', file, 'users', 'list'], {}, file],
        [['keys', 'status'], { ACCTOPS_STATE_DIR: join(file, 'sub') }, join(file, 'sub')],
        [['--state-dir', file, 'local', 'reset', '--yes'], {}, file],
        [['--state-dir', file, 'local', 'repair'], {}, file],
      ] as const) {
        const result = await runAcctops(args, { env });
        expect({ code: result.code, stderr: result.stderr }).toEqual({
          code: 3,
          stderr: expect.stringMatching(/^acctops: error: [^\n]+\n$/) as unknown,
        });
        expect(result.stderr).toContain(`the state directory ${path} (--state-dir or ACCTOPS_STATE_DIR) is a file`);
      }
      expect(await readFile(file, 'utf8')).toBe('mine\n');
    } finally {
      await own.remove();
    }
  });

  it('a state directory that cannot be created is configuration (exit 3) at once, even under /proc where mkdir -p never returns', async () => {
    for (const dir of ['/proc/acctops-forbidden/state', '/proc/self/acctops-state']) {
      const result = await runAcctops(['--state-dir', dir, 'users', 'list']);
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 3,
        stderr: expect.stringMatching(/^acctops: error: [^\n]+\n$/) as unknown,
      });
      expect(result.stderr).toContain(`the state directory ${dir} (--state-dir or ACCTOPS_STATE_DIR) cannot be created`);
    }
  });

  it('a state directory this user cannot write, or a state file it cannot read, is configuration (exit 3) naming it', async () => {
    const oneLine = expect.stringMatching(/^acctops: error: [^\n]+\n$/) as unknown;
    // /sys takes no new file from anyone, root included: an existing directory that refuses the lock.
    const unwritable = await runAcctops(['--state-dir', '/sys', 'users', 'list']);
    expect({ code: unwritable.code, stderr: unwritable.stderr }).toEqual({ code: 3, stderr: oneLine });
    expect(unwritable.stderr).toContain(
      'the state directory /sys (--state-dir or ACCTOPS_STATE_DIR) cannot be written: permission denied (EACCES)',
    );

    // Another user's state: its files are 0600. Root reads any file, so as root the command runs as nobody.
    const own = await tempStateDir();
    try {
      expect((await runAcctops(['--state-dir', own.dir, 'users', 'list'])).code).toBe(0);
      const asRoot = process.getuid?.() === 0;
      const nobody = { uid: 65534, gid: 65534 };
      if (asRoot) await chown(own.dir, nobody.uid, nobody.gid);
      else await chmod(join(own.dir, 'state.json'), 0o000);
      const unreadable = await runAcctops(['--state-dir', own.dir, 'users', 'list'], asRoot ? { user: nobody } : {});
      expect({ code: unreadable.code, stderr: unreadable.stderr }).toEqual({ code: 3, stderr: oneLine });
      expect(unreadable.stderr).toContain(`the local state file ${join(own.dir, 'state.json')} cannot be read: permission denied (EACCES)`);
      // Refused before anything was written: no lock left behind.
      await expect(stat(join(own.dir, 'lock'))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await own.remove();
    }
  });

  it('the demo (npm start) reports its errors in the same form', async () => {
    const result = await new Promise<{ code: number; stderr: string }>((done) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'bin', 'demo.ts'), '--nope'],
        { env: cliEnv(), cwd: ROOT },
        (error, _stdout, stderr) => done({ code: typeof error?.code === 'number' ? error.code : 0, stderr }),
      );
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^acctops: error: /);
  });
});
