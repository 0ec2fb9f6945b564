import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../cli/program';
import { createKeyFile } from '../../cli/local/key-file';
import { CliError } from '../../cli/errors';
import { ExitCode } from '../../cli/exit-codes';
import { outputOverrides } from '../../cli/operations/aws-operations';
import { parseTaxReportFieldList } from '../../src/core/exports/formats/tax-report-fields';
import { ValidationError } from '../../src/core/shared/errors';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { cliEnv, tempStateDir } from '../helpers/cli';
import { runCliCaptured } from './support';

/**
 * Inputs found by trying acctops as the outside world would (the s25 fuzzing session): each row is
 * an exact input that once got a wrong answer (a misleading message, an input silently dropped, a
 * wrong exit code, a path echoed whole), and what it must get instead.
 */

let state: { dir: string; remove(): Promise<void> };
beforeAll(async () => {
  state = await tempStateDir();
});
afterAll(async () => {
  await state.remove();
});

async function run(args: string[]) {
  const { code, stdout, stderr, stateDir } = await runCliCaptured(state.dir, args);
  expectNoCanaries(`${stdout}\n${stderr}`, `acctops ${args.join(' ')}`);
  return { code, stdout, stderr, stateDirMade: existsSync(stateDir) };
}

describe('usage errors found by fuzzing: exit 2 naming the option, nothing written', () => {
  it.each([
    // A month with spaces around it was "(02 is no month)"; year 0000 was "(01 is no month)".
    [['export', '--month', '0000-01'], '--month', /from 2000-01 on/, /is no month/],
    [['export', '--month', '0000-13'], '--month', /\(13 is no month\)/, /from 2000-01 on/],
    [['export', '--month', '2026-13'], '--month', /\(13 is no month\)/, /from 2000-01 on/],
    [['export', '--month', '2026-2'], '--month', /expected a month as YYYY-MM, e\.g\./, /is no month/],
    [['export', '--month', '2026-02T00:00Z'], '--month', /expected a month as YYYY-MM, e\.g\./, /is no month/],
    // Accepted: `__proto__` was assigned as the object's prototype, so the list came out empty.
    [
      ['export', '--month', '2026-10', '--tax-report-fields', '__proto__=x'],
      '--tax-report-fields',
      /__proto__: not a tax-report field of ours/,
      /^$/,
    ],
    // A seed beyond 2^53 failed the sandbox's options after parsing: exit 1, "the sandbox options is not an argument".
    [
      ['sandbox', '--port', '0', '--seed', '99999999999999999999'],
      '--seed',
      /whole number up to 9007199254740991, or a word/,
      /sandbox options/,
    ],
  ])('%j', async (args, option, says, never) => {
    const { code, stdout, stderr, stateDirMade } = await run(args as string[]);
    expect(code).toBe(ExitCode.usage);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(option as string);
    expect(stderr).toMatch(says as RegExp);
    expect(stderr).not.toMatch(never as RegExp);
    expect(stateDirMade).toBe(false);
  });
});

describe('--output pairs found by fuzzing: exit 2 before any AWS call', () => {
  it.each([
    // A mistyped key was dropped without a word: the stack's own output was used instead.
    [
      ['--output', 'TokenTabelName=acctops-x-tokens'],
      /^acctops: error: --output TokenTabelName: no stack output of that name is read by acctops \(nothing was run: name one of .*TokenTableName/,
    ],
    // The same key twice kept the last value, as commander does with a repeated option.
    [
      ['--output', 'TokenTableName=a', '--output', 'TokenTableName=b'],
      /^acctops: error: --output TokenTableName given twice with different values/,
    ],
  ])('%j', async (outputs, says) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['--stack', 'acctops-fuzz', ...(outputs as string[]), 'users', 'list'], {
      io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
      // No endpoint listens there: a call that went out would fail as a connection, not as usage.
      env: cliEnv({
        AWS_REGION: 'eu-central-1',
        AWS_ACCESS_KEY_ID: 'AKIDFUZZ',
        AWS_SECRET_ACCESS_KEY: 'fuzz',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      }),
      cwd: state.dir,
    });
    expect(code).toBe(ExitCode.usage);
    expect(stdout).toBe('');
    expect(stderr).toMatch(says as RegExp);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });

  it('the same key twice with the same value is one output', () => {
    expect(outputOverrides(['TokenTableName=a', 'TokenTableName=a', 'ExportTimeZone=Europe/Berlin'])).toEqual({
      TokenTableName: 'a',
      ExportTimeZone: 'Europe/Berlin',
    });
  });
});

describe('inputs found by fuzzing that are accepted as what they mean', () => {
  it.each([' 2026-10', '2026-10 ', '\t2026-10'])('--month %j is 2026-10, as the other parsers drop spaces', async (value) => {
    // --company of a UUID no company has stops the run before anything is exported, after the month is parsed.
    const { code, stderr } = await run(['export', '--month', value, '--company', '00000000-0000-4000-8000-000000000000']);
    expect(stderr).not.toMatch(/--month/);
    expect(code).toBe(ExitCode.config);
    expect(stderr).toMatch(/no such company/);
  });

  it('a tax-report field list keeps every pair it was given, whatever its name', () => {
    for (const list of ['__proto__=x', 'periodEnd=endDate,__proto__=x', 'constructor=x', 'toString=x']) {
      let thrown: unknown;
      try {
        parseTaxReportFieldList(list);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ValidationError);
      expect((thrown as ValidationError).message).toMatch(/not a tax-report field of ours/);
    }
    expect(parseTaxReportFieldList('periodEnd=endDate')).toEqual({ periodEnd: 'endDate' });
  });
});

describe('local issue-key --out that cannot be created', () => {
  let files: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    files = await tempStateDir();
  });
  afterAll(async () => {
    await files.remove();
  });

  it('names the path shortened and the cause in words with its code, as --state-dir and export --out do', async () => {
    const path = join(files.dir, 'k'.repeat(5000));
    let thrown: unknown;
    try {
      await createKeyFile(path);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CliError);
    const error = thrown as CliError;
    expect(error.exitCode).toBe(ExitCode.config);
    expect(error.message).toMatch(/^--out .*…k+ cannot be created: the path or a name in it is too long \(ENAMETOOLONG\)$/);
    expect(error.message.length).toBeLessThan(300);
    expect(readdirSync(files.dir)).toEqual([]);
  });

  it('a file in the way is named, shortened too, and left as it was', async () => {
    const path = join(files.dir, 'd'.repeat(200));
    const first = await createKeyFile(path);
    await first.write(CANARY.apiKey);
    let thrown: unknown;
    try {
      await createKeyFile(path);
    } catch (error) {
      thrown = error;
    }
    expect((thrown as CliError).message).toMatch(/^--out .*…d+ already exists; acctops never overwrites a key file$/);
    expect((thrown as CliError).message.length).toBeLessThan(200);
    expectNoCanaries(thrown, 'key file error');
    await first.discard();
  });
});
