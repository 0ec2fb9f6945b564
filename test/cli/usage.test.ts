import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { runCli } from '../../cli/program';
import { cliEnv, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';

/**
 * The command line itself: help at every level, exit codes, one-line errors that name the argument
 * and say what to do, and credentials refused as flags. None of these needs a state directory (the
 * ones that would fail before creating it). The bulk runs `runCli` in process (the same function
 * the binary calls, with captured streams); a sample of each kind also runs the real binary.
 */
describe('acctops CLI: help, usage errors and exit codes', () => {
  const outputs: CliResult[] = [];
  let state: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops output',
    );
    await state.remove();
  });

  /** The real binary. */
  const run = async (args: string[], env?: Record<string, string>) => {
    const result = await runAcctops(['--state-dir', `${state.dir}/never-created`, ...args], { env });
    outputs.push(result);
    return result;
  };
  /** runCli in process, with captured streams: what the binary runs, minus Node's start-up. */
  const inProcess = async (args: string[], env: Record<string, string> = {}): Promise<CliResult> => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['--state-dir', `${state.dir}/never-created`, ...args], {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      env: cliEnv(env),
      cwd: state.dir,
    });
    const result = { code, stdout, stderr };
    outputs.push(result);
    return result;
  };
  const all = (list: string[][]) => Promise.all(list.map((args) => inProcess(args)));

  /** One line on stderr, naming what was wrong and (in parentheses) what to do. */
  const oneLine = (result: CliResult) => {
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^acctops: error: .+ \(.+\)$/);
    return lines[0]!;
  };

  it('--help works at every level and lists what is below it; --version prints the version', async () => {
    const levels: [string[], RegExp[]][] = [
      [
        ['--help'],
        [
          /sandbox/,
          /users/,
          /tokens/,
          /keys/,
          /export/,
          /doctor/,
          /institution/,
          /local/,
          /Exit codes:/,
          /130, 143 +stopped by Ctrl\+C/,
          /never from a flag/,
        ],
      ],
      [
        ['users', '--help'],
        [/onboard/, /list/, /revoke/, /recover/],
      ],
      [
        ['users', 'onboard', '--help'],
        [/--external-id <uuid>/, /--username/, /--email/],
      ],
      [['users', 'list', '--help'], [/--status/]],
      [['users', 'revoke', '--help'], [/--user <externalId>/]],
      [
        ['users', 'recover', '--help'],
        [/--reactivate/, /--force/],
      ],
      [['tokens', '--help'], [/refresh/]],
      [
        ['tokens', 'refresh', '--help'],
        [/--all/, /--user/],
      ],
      [
        ['keys', '--help'],
        [/rotate/, /status/, /install/],
      ],
      [
        ['keys', 'install', '--help'],
        [/ACCTOPS_API_KEY/, /--company <id>/],
      ],
      [['institution', '--help'], [/set-secret/]],
      [
        ['institution', 'set-secret', '--help'],
        [/ACCTOPS_INSTITUTION/, /--rollback/],
      ],
      [['keys', 'rotate', '--help'], [/--company <id>/]],
      [['keys', 'status', '--help'], [/--company/]],
      [
        ['export', '--help'],
        [/--month <YYYY-MM>/, /--out/, /<dir>\/exports\/company=<id>\/period=<YYYY-MM>\//, /--format/, /--base-url/],
      ],
      [['doctor', '--help'], [/--repair/]],
      [
        ['local', '--help'],
        [/status/, /advance-clock/, /issue-key/, /reset/],
      ],
      // What it runs is the due revocations only, not refreshes or rotations.
      [
        ['local', 'advance-clock', '--help'],
        [/--by <duration>/, /revoke the old keys whose grace period ended/],
      ],
      [
        ['local', 'issue-key', '--help'],
        [/--company <id>/, /--out <file>/, /0600/],
      ],
      [
        ['sandbox', '--help'],
        [/--port/, /--seed/],
      ],
      [['help', 'keys'], [/rotate/]],
    ];
    const results = await all(levels.map(([args]) => args));
    results.forEach((result, i) => {
      expect({ args: levels[i]![0], code: result.code }).toEqual({ args: levels[i]![0], code: 0 });
      for (const pattern of levels[i]![1]) expect(result.stdout).toMatch(pattern);
    });
    // The real binary: the root help and a subcommand's.
    const [root, sub] = await Promise.all([run(['--help']), run(['keys', 'rotate', '--help'])]);
    expect(root.code).toBe(0);
    expect(root.stdout).toBe(results[0]!.stdout);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toMatch(/Usage: acctops keys rotate/);
    const version = await run(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it("help <command> shows that command's help; help of a word that is no command is the unknown-command usage error (exit 2), a pasted value shown by its glimpse", async () => {
    const [keys, rotate, nested] = await all([
      ['help', 'keys'],
      ['help', 'keys', 'rotate'],
      ['keys', 'help', 'rotate'],
    ]);
    expect(keys).toMatchObject({ code: 0, stderr: '' });
    expect(keys!.stdout).toMatch(/^Usage: acctops keys /);
    for (const r of [rotate, nested]) {
      expect(r).toMatchObject({ code: 0, stderr: '' });
      expect(r!.stdout).toMatch(/^Usage: acctops keys rotate /);
    }

    const pasted = `sbx_${randomBytes(12).toString('hex')}`;
    const [bogus, deeper, inGroup, key, json] = await all([
      ['help', 'bogus'],
      ['help', 'keys', 'bogus'],
      ['keys', 'help', 'bogus'],
      ['help', pasted],
      ['--json', 'help', 'bogus'],
    ]);
    for (const r of [bogus, deeper, inGroup]) {
      expect({ code: r!.code, stdout: r!.stdout }).toEqual({ code: 2, stdout: '' });
      expect(oneLine(r!)).toBe("acctops: error: unknown command 'bogus' (run `acctops --help` for the commands)");
    }
    expect(key!.code).toBe(2);
    expect(oneLine(key!)).toBe("acctops: error: unknown command 'sbx_…' (run `acctops --help` for the commands)");
    expect(key!.stderr).not.toContain(pasted.slice(4, 12));
    expect({ code: json!.code, stdout: json!.stdout }).toEqual({ code: 2, stdout: '' });
    expect(JSON.parse(json!.stderr)).toEqual({
      error: { exitCode: 2, code: 'usage', message: "unknown command 'bogus'", hint: 'run `acctops --help` for the commands' },
    });
    // The real binary, the same.
    const binary = await run(['help', 'bogus']);
    expect({ code: binary.code, stdout: binary.stdout, stderr: binary.stderr }).toEqual({
      code: 2,
      stdout: '',
      stderr: bogus!.stderr,
    });
  });

  it('`help <typo>` suggests the command it most likely meant, as `acctops <typo>` does', async () => {
    const [typo, sameTypo, nested] = await all([['help', 'usrs'], ['usrs'], ['help', 'keys', 'rotat']]);
    expect(typo!.code).toBe(2);
    expect(oneLine(typo!)).toBe("acctops: error: unknown command 'usrs' (Did you mean users?) (run `acctops --help` for the commands)");
    expect(oneLine(sameTypo!)).toBe(oneLine(typo!));
    expect(oneLine(nested!)).toBe("acctops: error: unknown command 'rotat' (Did you mean rotate?) (run `acctops --help` for the commands)");
  });

  it('an unknown command that cannot be a secret is shown whole, with the command or subcommand it most likely meant, in a group too', async () => {
    const [exprot, nosuch, advance, clock, issue, pasted, capital] = await all([
      ['exprot'],
      ['help', 'nosuch'],
      ['local', 'advance'],
      ['local', 'clock'],
      ['local', 'issue'],
      ['local', 'sbx_AbCd1234efgh'],
      ['local', 'Advance'],
    ]);
    for (const r of [exprot, nosuch, advance, clock, issue, pasted, capital])
      expect({ code: r!.code, stdout: r!.stdout }).toEqual({ code: 2, stdout: '' });
    expect(oneLine(exprot!)).toBe(
      "acctops: error: unknown command 'exprot' (Did you mean export?) (run `acctops --help` for the commands)",
    );
    expect(oneLine(nosuch!)).toBe("acctops: error: unknown command 'nosuch' (run `acctops --help` for the commands)");
    expect(oneLine(advance!)).toBe(
      "acctops: error: unknown command 'advance' (Did you mean advance-clock?) (run `acctops --help` for the commands)",
    );
    expect(oneLine(clock!)).toMatch(/^acctops: error: unknown command 'clock' \(Did you mean advance-clock or reset-clock\?\)/);
    expect(oneLine(issue!)).toMatch(/^acctops: error: unknown command 'issue' \(Did you mean issue-key\?\)/);
    // Digits, capitals or an underscore: it may be a value pasted in the wrong place, so only its glimpse.
    expect(oneLine(pasted!)).toMatch(/^acctops: error: unknown command 'sbx_…' /);
    expect(oneLine(capital!)).toMatch(/^acctops: error: unknown command 'Adva…' /);
    // The real binary, the same.
    expect((await run(['local', 'advance'])).stderr).toBe(advance!.stderr);
  });

  it('a misspelt required option is the unknown option it is, with its suggestion, not the required one "not specified"', async () => {
    const company = '6f1c2a3b-0000-4000-8000-000000000000';
    const [rotate, onboard, missing, both] = await all([
      ['keys', 'rotate', '--compnay', company],
      ['users', 'onboard', '--externalid', company, '--username', 'x', '--email', 'x@example.com'],
      ['users', 'onboard', '--external-id', company, '--username', 'x'],
      ['keys', 'status', '--compnay', company],
    ]);
    for (const r of [rotate, onboard, missing, both]) expect({ code: r!.code, stdout: r!.stdout }).toEqual({ code: 2, stdout: '' });
    expect(oneLine(rotate!)).toBe(
      "acctops: error: unknown option '--compnay' (Did you mean --company?) (run the command with --help for its options)",
    );
    expect(oneLine(onboard!)).toMatch(/^acctops: error: unknown option '--externalid' \(Did you mean --external-id\?\)/);
    // Without a typo, a required option left out is still named as such.
    expect(oneLine(missing!)).toMatch(/^acctops: error: required option '--email <email>' not specified/);
    // An optional option misspelt was already the unknown option: unchanged.
    expect(oneLine(both!)).toMatch(/^acctops: error: unknown option '--compnay' \(Did you mean --company\?\)/);
  });

  it('usage errors exit 2 with one line naming the argument, never repeating its value', async () => {
    const [unknownCommand, unknownOption, missing, badMonth, badUuid, noChoice, badFormat, badDuration, groupOnly, badOut] = await all([
      ['frobnicate'],
      ['users', 'list', '--colour', 'red'],
      ['keys', 'rotate'],
      ['export', '--month', '2026-13'],
      ['users', 'revoke', '--user', 'not-a-uuid-c4n4ry'],
      ['tokens', 'refresh'],
      ['export', '--format', 'xlsx'],
      ['local', 'advance-clock', '--by', 'soon'],
      ['users'],
      ['export', '--out', 'ftp://x/y'],
    ]);
    for (const r of [unknownCommand, unknownOption, missing, badMonth, badUuid, noChoice, badFormat, badDuration, badOut]) {
      expect(r!.code).toBe(2);
      oneLine(r!);
    }
    expect(oneLine(unknownCommand!)).toMatch(/unknown command 'frobnicate'.*acctops --help/);
    expect(oneLine(unknownOption!)).toMatch(/unknown option '--colour'/);
    expect(oneLine(missing!)).toMatch(/required option '--company <id>' not specified/);
    expect(oneLine(badMonth!)).toMatch(/option '--month <YYYY-MM>' is invalid: expected a month as YYYY-MM/);
    expect(badMonth!.stderr).not.toContain('2026-13');
    // The right shape with no such month says which part is wrong.
    expect(oneLine(badMonth!)).toMatch(/with the month 01 to 12, e\.g\. 2026-10 \(13 is no month\)/);
    expect(oneLine(badUuid!)).toMatch(/--user <externalId>.*expected a UUID/);
    expect(oneLine(noChoice!)).toMatch(/exactly one of --all and --user/);
    expect(oneLine(badFormat!)).toMatch(/--format <list>.*jsonl, csv, parquet/);
    expect(oneLine(badDuration!)).toMatch(/--by <duration>.*31m/);
    expect(oneLine(badOut!)).toMatch(/--out .*s3:\/\/bucket/);
    // Said once: what is wrong with the pair, then which fields are ours.
    const [pair, field] = await all([
      ['export', '--tax-report-fields', 'periodEnd'],
      ['export', '--tax-report-fields', 'periodFinish=endDate'],
    ]);
    expect(oneLine(pair!)).toMatch(
      /'--tax-report-fields <ours=theirs,…>' is invalid: pair 1: expected ours=theirs, e\.g\. periodEnd=endDate; our fields are type, periodStart, periodEnd,/,
    );
    expect(oneLine(field!)).toMatch(/is invalid: periodFinish: not a tax-report field of ours; our fields are type, /);
    for (const r of [pair, field]) expect(r!.stderr).not.toContain('expected ours=theirs pairs');
    // A group without its subcommand: its help on stderr, then the one-line error.
    expect(groupOnly!.code).toBe(2);
    expect(groupOnly!.stderr).toMatch(/Usage: acctops users/);
    expect(groupOnly!.stderr.trim().split('\n').pop()).toMatch(/^acctops: error: a subcommand is missing/);

    // The real binary gives the same line and exit code.
    const binary = await run(['export', '--month', '2026-13']);
    expect(binary.code).toBe(2);
    expect(binary.stderr).toBe(badMonth!.stderr);
  });

  it('local advance-clock --by refuses a zero, negative or empty duration (exit 2, one line naming --by and the form), before the state is made', async () => {
    // A zero moved nothing and reported the clock "now" where it was, as if a step had been rehearsed.
    const values = ['0m', '0s', '0h', '0d', '00m', '-5m', '-0m', '', ' '];
    const results = [
      ...(await all(values.map((value) => ['local', 'advance-clock', '--by', value]))),
      await inProcess(['local', 'advance-clock', '--by=0m', '--force']),
      await run(['local', 'advance-clock', '--by', '0m']),
    ];
    for (const result of results) {
      expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: '' });
      expect(oneLine(result)).toBe(
        "acctops: error: option '--by <duration>' is invalid: expected a duration above zero such as 31m, 2h or 1d (run the command with --help for the expected form)",
      );
    }
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
    // The help says so too. (`--max-retry-wait 0s`, "never wait", keeps its zero: export-direct-limits.test.ts.)
    expect((await inProcess(['local', 'advance-clock', '--help'])).stdout).toMatch(/--by <duration> +how far, more than zero/);
  });

  it('a --month before 2000-01 (a mistyped year) is exit 2 naming --month in every mode, before anything runs or is written', async () => {
    const out = `${state.dir}/early-out`;
    const modes: [string[], Record<string, string>][] = [
      [['export', '--month', '0226-10', '--format', 'csv', '--out', out], {}],
      [['export', '--month', '0001-01', '--base-url', 'http://127.0.0.1:9/api/v1', '--out', out], { ACCTOPS_API_KEY: 'sbx_AbCd1234rest' }],
      [['--stack', 'acctops-production', '--region', 'eu-central-1', 'export', '--month', '1999-12'], {}],
    ];
    for (const [args, env] of modes) {
      const result = await inProcess(args, env);
      expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: '' });
      expect(oneLine(result)).toMatch(
        /^acctops: error: option '--month <YYYY-MM>' is invalid: expected a month from 2000-01 on, as YYYY-MM, e\.g\. 2026-10 \(an earlier year is taken for a typo\)/,
      );
    }
    // The binary, the same; the earliest month itself is not refused by the rule (it goes on to the missing key).
    expect((await run(modes[0]![0])).code).toBe(2);
    const earliest = await inProcess(['export', '--month', '2000-01', '--base-url', 'http://127.0.0.1:9/api/v1']);
    expect(earliest.code).toBe(3);
    expect(oneLine(earliest)).toMatch(/ACCTOPS_API_KEY/);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
  });

  it('never echoes a stray word: an unknown command, an excess argument or an odd option shows at most 4 characters', async () => {
    // Not a canary: the redactor knows nothing of these, so only the refusal itself can keep them out.
    const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const key = `sbx_${Array.from(randomBytes(32), (b) => base62[b % 62]).join('')}`;
    const word = `w${randomBytes(8).toString('hex')}`;
    const attempts = [
      [key],
      ['keys', key],
      ['users', key],
      [word],
      ['users', 'list', key],
      ['users', 'list', 'extra-arg', word],
      ['doctor', key],
      ['users', 'list', `--${key}`],
      ['users', 'list', `-${key}=${word}`],
      ['sandbox', key],
    ];
    const binary = await Promise.all([run([key]), run(['users', 'list', word])]);
    const results = [...(await all(attempts)), ...binary];
    for (const result of results) {
      expect(result.code).toBe(2);
      const line = oneLine(result);
      expect(`${result.stdout}${result.stderr}`).not.toContain(key);
      expect(`${result.stdout}${result.stderr}`).not.toContain(word);
      expect(`${result.stdout}${result.stderr}`).not.toContain(key.slice(0, 12));
      expect(line).toMatch(/unknown command|too many arguments|unknown option/);
    }
    expect(oneLine(results[0]!)).toMatch(/^acctops: error: unknown command 'sbx_…' \(run `acctops --help` for the commands\)$/);
    expect(oneLine(results[3]!)).toContain(`unknown command '${word.slice(0, 4)}…'`);
    expect(oneLine(results[7]!)).toContain("unknown option '--sb…'");
    expect(oneLine(results[8]!)).toContain("unknown option '-sbx…=…'");
    // The first 4 characters are shown, as escapes where a terminal would act on them.
    const escape = await inProcess(['\u001b[2Jwipe']);
    expect(escape.stderr).not.toContain('\u001b');
    expect(oneLine(escape)).toContain("unknown command '\\x1b[2J…'");
  });

  it('--email is checked with the onboarding rule: an address it would refuse is exit 2 naming --email, before the state is opened', async () => {
    const onboard = (address: string) => [
      'users',
      'onboard',
      '--external-id',
      '91111111-2222-4333-8444-555555555555',
      '--username',
      'idn',
      '--email',
      address,
    ];
    const addresses = ['ü@exämple.de', 'a@example.com.', '"q"@example.com', 'a@[127.0.0.1]', 'a@b', 'a..b@example.com'];
    const results = [...(await all(addresses.map(onboard))), await run(onboard(addresses[0]!))];
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(oneLine(result)).toMatch(
        /^acctops: error: option '--email <email>' is invalid: expected an address such as name@example.com.* \(run the command with --help/,
      );
      expect(result.stdout).toBe('');
    }
    results.forEach((result, i) => expect(result.stderr).not.toContain(addresses[i % addresses.length]!));
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
  });

  it('refuses credentials given as flags (exit 2), whatever the command, without echoing them', async () => {
    const attempts = [
      ['export', '--api-key', CANARY.apiKey],
      ['export', `--api-key=${CANARY.apiKey}`],
      ['users', 'list', '--token', CANARY.accessToken],
      ['doctor', `--institution=${CANARY.institutionId}:${CANARY.institutionSecret}`],
      ['keys', 'status', '--secret', CANARY.institutionSecret],
      ['--password', 'x', 'users', 'list'],
      ['users', 'list', `--bearer=${CANARY.accessToken}`],
      ['users', 'list', `--bearer-token=${CANARY.accessToken}`],
      ['users', 'list', '--session-token', CANARY.accessToken],
      ['keys', 'status', `--private-key=${CANARY.apiKey}`],
      ['doctor', `--pass=${CANARY.institutionSecret}`],
    ];
    const binary = await Promise.all([run(attempts[0]!), run(attempts[6]!)]);
    for (const result of [...(await all(attempts)), ...binary]) {
      expect(result.code).toBe(2);
      expect(oneLine(result)).toMatch(
        /^acctops: error: option '--[a-z-]+' is refused: acctops never takes a credential from a flag.*ACCTOPS_API_KEY or ACCTOPS_INSTITUTION/,
      );
      expect(result.stderr).not.toContain('[REDACTED]');
      expect(result.stdout).toBe('');
    }
    expect(oneLine(binary[1]!)).toMatch(/^acctops: error: option '--bearer' is refused: acctops never/);
  });

  it('an option that takes a value, given twice in any spelling, is exit 2 naming it, before anything runs; a repeated flag or --output is not', async () => {
    const a = '6f1c2a3b-0000-4000-8000-000000000000';
    const b = '7f1c2a3b-0000-4000-8000-000000000000';
    const attempts: [string[], string][] = [
      [['keys', 'rotate', '--company', a, '--company', b], '--company'],
      [['export', '--company', a, `--company=${b}`], '--company'],
      [['companies', 'remove', `--company=${a}`, `--company=${b}`], '--company'],
      [['export', '--format', 'csv', '--format', 'parquet'], '--format'],
      [['export', '--out', 'x', '--month', '2026-01', '--out', 'y'], '--out'],
      [['users', 'revoke', '--user', a, '--user', a], '--user'],
      [['local', 'advance-clock', '--by', '1m', '--by', '2m'], '--by'],
      [['--state-dir', `${state.dir}/never-created`, 'users', 'list'], '--state-dir'],
      [['users', 'list', '--status', 'active', '--status', 'revoked'], '--status'],
      [['sandbox', '--port', '0', '--port', '0'], '--port'],
    ];
    const binary = await Promise.all([run(attempts[0]![0]), run(['--json', ...attempts[3]![0]])]);
    const results = await all(attempts.map(([args]) => args));
    results.forEach((result, i) => {
      expect(result.code).toBe(2);
      expect(oneLine(result)).toBe(
        `acctops: error: option ${attempts[i]![1]} given more than once; give it once (nothing was run; each option takes one value)`,
      );
      expect(result.stdout).toBe('');
    });
    expect(binary[0]!.code).toBe(2);
    expect(binary[0]!.stderr).toBe(results[0]!.stderr);
    expect(binary[1]!.code).toBe(2);
    expect(JSON.parse(binary[1]!.stderr)).toEqual({
      error: { exitCode: 2, code: 'usage', message: 'option --format given more than once; give it once', hint: expect.any(String) },
    });
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);

    // Repeating a flag changes nothing, and --output collects one stack output per occurrence: not refused as repeated.
    const harmless = await all([
      ['--json', '--json', 'users', 'list', '--bogus'],
      ['--output', 'A=b', '--output', 'C=d', 'users', 'list', '--bogus'],
      ['keys', 'rotate', '--no-wait', '--no-wait'],
    ]);
    for (const result of harmless) {
      expect(result.code).toBe(2);
      expect(result.stderr).not.toContain('more than once');
    }
  });

  it('--base-url with a query or fragment is refused at parse (exit 2, naming --base-url, the query never echoed), as one with user info is', async () => {
    const secret = `q${randomBytes(8).toString('hex')}`;
    const env = { ACCTOPS_API_KEY: CANARY.apiKey };
    const urls = [
      `http://127.0.0.1:9/api/v1?apikey=${secret}`,
      `http://127.0.0.1:9/api/v1/?apikey=${secret}`,
      `http://127.0.0.1:9/api/v1#${secret}`,
      `http://user:${secret}@127.0.0.1:9/api/v1`,
    ];
    const results = [
      ...(await Promise.all(urls.map((url) => inProcess(['export', '--base-url', url, '--month', '2026-01'], env)))),
      await run(['export', `--base-url=${urls[0]!}`, '--month', '2026-01'], env),
    ];
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(oneLine(result)).toMatch(
        /^acctops: error: option '--base-url <url>' is invalid: .*(query or fragment|credentials) do(es)? not belong in the URL/,
      );
      expect(result.stdout).toBe('');
      expect(result.stderr).not.toContain(secret);
    }
    // From the environment it is the setting that is wrong: exit 3 naming ACCTOPS_BASE_URL, nothing exported.
    const fromEnv = await inProcess(['export', '--month', '2026-01'], { ...env, ACCTOPS_BASE_URL: urls[0]! });
    expect(fromEnv.code).toBe(3);
    expect(oneLine(fromEnv)).toMatch(/^acctops: error: ACCTOPS_BASE_URL is not usable: a query or fragment does not belong in the URL/);
    expect(fromEnv.stdout).toBe('');
    expect(fromEnv.stderr).not.toContain(secret);
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
  });

  it('--base-url whose path does not end in /api/v1 is refused at parse (exit 2, one line); a bare host gets the corrected URL', async () => {
    const env = { ACCTOPS_API_KEY: CANARY.apiKey };
    const bare = ['http://127.0.0.1:4711', 'http://127.0.0.1:4711/'];
    const other = ['http://127.0.0.1:4711/api/v2', 'http://127.0.0.1:4711/api', 'http://127.0.0.1:4711/API/V1', 'https://example.com/v1'];
    const results = await Promise.all(
      [...bare, ...other].map((url) => inProcess(['export', '--base-url', url, '--month', '2026-01'], env)),
    );
    results.push(await run(['export', '--base-url', bare[0]!, '--month', '2026-01'], env));
    for (const [i, result] of results.entries()) {
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      const line = oneLine(result);
      expect(line).toMatch(/^acctops: error: option '--base-url <url>' is invalid: expected an http\(s\) URL ending in \/api\/v1/);
      const isBare = i < bare.length || i === results.length - 1;
      if (isBare) expect(line).toContain('did you mean http://127.0.0.1:4711/api/v1? (');
      else expect(line).not.toMatch(/did you mean|4711/);
    }
    // Still accepted: a trailing slash, and a proxy's prefix before /api/v1.
    for (const url of ['http://127.0.0.1:9/api/v1/', 'http://127.0.0.1:9/prefix/api/v1']) {
      const result = await inProcess(['export', '--base-url', url, '--month', '2026-01', '--json'], {});
      expect(JSON.parse(result.stderr)).toMatchObject({ error: { exitCode: 3, message: expect.stringMatching(/ACCTOPS_API_KEY/) } });
    }
    // From the environment: configuration (exit 3) naming ACCTOPS_BASE_URL, with the same suggestion.
    const fromEnv = await inProcess(['export', '--month', '2026-01'], { ...env, ACCTOPS_BASE_URL: 'http://127.0.0.1:4711' });
    expect(fromEnv.code).toBe(3);
    expect(oneLine(fromEnv)).toMatch(
      /^acctops: error: ACCTOPS_BASE_URL is not usable: expected an http\(s\) URL ending in \/api\/v1 .*did you mean http:\/\/127\.0\.0\.1:4711\/api\/v1\? \(/,
    );
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
  });

  it("the AWS mode's options (--output, --region, --no-wait) without a stack are refused (exit 2, naming the mode), before the state is made", async () => {
    const company = '6f1c2a3b-0000-4000-8000-000000000000';
    const local = [
      [['--region', 'eu-central-1', 'users', 'list'], '--region'],
      [['--output', 'TokenTableName=t', 'doctor'], '--output'],
      [['keys', 'rotate', '--company', company, '--no-wait'], '--no-wait'],
      [['export', '--month', '2026-01', '--no-wait'], '--no-wait'],
      // --region names the S3 bucket's region only with --out s3://…
      [['--region', 'eu-central-1', 'export', '--month', '2026-01', '--out', 'files'], '--region'],
    ] as const;
    const results = await Promise.all(local.map(([args]) => inProcess([...args])));
    results.push(await run([...local[0][0]]));
    for (const [i, result] of results.entries()) {
      const option = local[i]?.[1] ?? local[0][1];
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(oneLine(result)).toMatch(
        new RegExp(
          `^acctops: error: ${option} is an option of the AWS mode \\(--stack or ACCTOPS_STACK\\): .*; this is the local mode \\(no stack named\\) \\(nothing was run: name the stack`,
        ),
      );
    }
    // Direct mode: the same options, refused naming it, before the service is asked.
    const env = { ACCTOPS_API_KEY: CANARY.apiKey };
    const direct = [
      [['export', '--base-url', 'http://127.0.0.1:9/api/v1', '--month', '2026-01', '--no-wait'], '--no-wait'],
      [['--output', 'A=b', 'export', '--base-url', 'http://127.0.0.1:9/api/v1', '--month', '2026-01'], '--output'],
      [['--region', 'eu-central-1', 'export', '--base-url', 'http://127.0.0.1:9/api/v1', '--month', '2026-01'], '--region'],
    ] as const;
    for (const [args, option] of direct) {
      const result = await inProcess([...args], env);
      expect(result.code).toBe(2);
      expect(oneLine(result)).toMatch(
        new RegExp(
          `^acctops: error: ${option} is an option of the AWS mode .*; this is the direct mode, picked by --base-url \\(nothing was run: drop ${option}\\)$`,
        ),
      );
    }
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
  });

  it('--out that starts like a URL but is not s3://bucket[/prefix] is exit 2 naming --out and the accepted forms, nothing written', async () => {
    const targets = ['s3:/bucket', 's3:bucket', 'S3://bucket', 'file:///tmp/x', 'gs://bucket/x', 'https://example.com/x'];
    const results = [
      ...(await all(targets.map((out) => ['export', '--month', '2026-01', '--out', out]))),
      await run(['export', '--month', '2026-01', '--out', 's3:/bucket']),
    ];
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(oneLine(result)).toMatch(
        /^acctops: error: option '--out <dir\|s3:\/\/bucket\/prefix>' is invalid: expected s3:\/\/bucket\[\/prefix\] or a directory/,
      );
      expect(result.stdout).toBe('');
    }
    expect(existsSync(`${state.dir}/never-created`)).toBe(false);
    expect(existsSync(`${state.dir}/s3:`)).toBe(false);
  });

  it('--json errors are one JSON object on stderr with the exit code', async () => {
    const result = await run(['--json', 'keys', 'rotate']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stderr)).toEqual({
      error: { exitCode: 2, code: 'usage', message: expect.stringMatching(/--company/), hint: expect.any(String) },
    });
    expect(result.stdout).toBe('');
  });

  it('direct-mode export without ACCTOPS_API_KEY is a configuration error (exit 3) saying where the key goes', async () => {
    const result = await run(['export', '--base-url', 'http://127.0.0.1:9/api/v1', '--month', '2026-10']);
    expect(result.code).toBe(3);
    expect(oneLine(result)).toMatch(/ACCTOPS_API_KEY.*never a flag/);
    // The hint's way in is the one that keeps the key out of the shell history, as README's.
    expect(oneLine(result)).toContain('read -rs ACCTOPS_API_KEY && export ACCTOPS_API_KEY');
    expect(oneLine(result)).not.toMatch(/export ACCTOPS_API_KEY=/);
    const badUrl = await inProcess(['export', '--month', '2026-10'], { ACCTOPS_BASE_URL: 'not a url' });
    expect(badUrl.code).toBe(3);
    expect(oneLine(badUrl)).toMatch(/ACCTOPS_BASE_URL/);
  });

  it('AWS mode: --out is refused for export (the pipeline writes to its bucket); a stack that cannot be described is one line', async () => {
    const env = {
      AWS_REGION: 'eu-central-1',
      AWS_ACCESS_KEY_ID: 'AKIAFAKE0000',
      AWS_SECRET_ACCESS_KEY: 'fake',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      AWS_MAX_ATTEMPTS: '1',
    };
    const withOut = await inProcess(['--stack', 'acctops-test', 'export', '--month', '2026-10', '--out', './here'], env);
    expect(withOut.code).toBe(2);
    expect(oneLine(withOut)).toMatch(/--out is for the local and direct modes.*direct mode/);
    const unreachable = await run(
      [
        '--stack',
        'acctops-test',
        'users',
        'onboard',
        '--external-id',
        '6f1c2a3b-0000-4000-8000-000000000000',
        '--username',
        'x',
        '--email',
        'x@example.test',
      ],
      env,
    );
    expect(unreachable.code).toBe(1);
    // The endpoint is out of reach: the line says so and points at the network, not at the stack's name.
    expect(oneLine(unreachable)).toMatch(
      /^acctops: error: could not describe stack acctops-test: a connection failed \(connect\): .*127\.0\.0\.1:9.* \(check the network, the AWS region and any AWS_ENDPOINT_URL\* setting/,
    );
  });
});
