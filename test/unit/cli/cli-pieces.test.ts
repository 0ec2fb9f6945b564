import { EARLIEST_TIME_ZONE, monthOpen, refuseFutureMonth } from '../../../cli/operations/shared';
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { CommanderError, InvalidArgumentError } from 'commander';
import {
  baseUrlArgument,
  baseUrlFromEnv,
  isInsecureHttp,
  duration,
  email,
  positiveDuration,
  exportTarget,
  filePath,
  formats,
  guid,
  httpUrl,
  month,
  regionName,
  rejectAwsModeOptions,
  rejectCredentialFlags,
  stackName,
} from '../../../cli/args';
import { describeError, optionName, UsageError } from '../../../cli/errors';
import { ExitCode } from '../../../cli/exit-codes';
import { onboardLines } from '../../../cli/commands/users';
import { exportDeadlineOf, refreshResultOf } from '../../../cli/operations/aws-operations';
import { displayWidth, Output } from '../../../cli/output';
import { shownLocation } from '../../../cli/format';
import { KeyRevokedError, PermissionDeniedError, ServerError } from '../../../src/core/accounting-api';
import { CompanyKeyNotFoundError } from '../../../src/core/api-keys';
import { taxReportsTable } from '../../../src/core/exports/formats/dataset-tables';
import { ConfigError, ValidationError } from '../../../src/core/shared/errors';
import { registerSecret } from '../../../src/core/shared/redact';
import { onboardInputSchema } from '../../../src/core/tokens/onboard-input';
import type { TokenRecord } from '../../../src/core/tokens/token-store';
import { CANARY, expectNoCanaries } from '../../helpers/canary';
import { taxReport } from '../../helpers/export-fixtures';

function capture(isTTY = false) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    io: { stdout: { write: (t: string) => stdout.push(t) }, stderr: { write: (t: string) => stderr.push(t), isTTY, columns: 80 } },
  };
}

describe('cli/errors: every error is an exit code and one line that says what to do', () => {
  const error = (Class: typeof KeyRevokedError) =>
    Object.assign(Object.create(Class.prototype) as KeyRevokedError, {
      message: 'GET /companies/: API key revoked',
      code: 'key_revoked',
      name: Class.name,
    });

  it.each([
    [
      'a commander usage error',
      new CommanderError(1, 'commander.missingMandatoryOptionValue', "error: required option '--company <id>' not specified"),
      ExitCode.usage,
    ],
    ['a UsageError', new UsageError('bad', 'do this'), ExitCode.usage],
    ['a ConfigError', new ConfigError([{ path: 'ACCTOPS_BASE_URL', message: 'expected a URL' }]), ExitCode.config],
    ['a refused key', error(KeyRevokedError), ExitCode.auth],
    ['a missing permission', error(PermissionDeniedError as unknown as typeof KeyRevokedError), ExitCode.auth],
    ['a 5xx', error(ServerError as unknown as typeof KeyRevokedError), ExitCode.failure],
    ['no key for the company', new CompanyKeyNotFoundError('6f1c2a3b-0000-4000-8000-000000000000', 0), ExitCode.config],
    ['a bad field', new ValidationError('input', [{ path: 'x', message: 'bad' }]), ExitCode.failure],
    [
      'an AWS credential error as a cause',
      new Error('wrapped', { cause: Object.assign(new Error('no credentials'), { name: 'CredentialsProviderError' }) }),
      ExitCode.auth,
    ],
    ['anything else', new TypeError('boom'), ExitCode.failure],
  ])('%s', (_label, thrown, exitCode) => {
    const report = describeError(thrown);
    expect(report.exitCode).toBe(exitCode);
    expect(report.message).not.toMatch(/\n/);
    expect(report.hint ?? 'x').not.toMatch(/\n/);
  });

  it("a file-system failure no command foresaw: the call, the path and the cause in words with its code, not Node's message", async () => {
    const thrown = await writeFile('/dev/full', 'x').catch((e: unknown) => e);
    const report = describeError(thrown);
    expect(report).toEqual({
      exitCode: ExitCode.failure,
      code: 'file_system',
      message: 'a file operation (write) failed: no space left on the device (ENOSPC)',
      hint: 'fix the cause, then run acctops doctor to see what the command left',
    });
    const opened = await readFile(join('/nonexistent-acctops', 'tokens.json')).catch((e: unknown) => e);
    expect(describeError(opened).message).toBe(
      'a file operation (open) on /nonexistent-acctops/tokens.json failed: no such file or directory, as for a symbolic link that points nowhere or a path under /proc (ENOENT)',
    );
  });

  it('a connection no command foresaw (an AWS endpoint out of reach) is said as one, not as a file operation', async () => {
    const refusedConnection = await new Promise<unknown>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: 1 });
      socket.on('error', resolve);
      socket.on('connect', () => {
        socket.destroy();
        resolve(undefined);
      });
    });
    expect(describeError(refusedConnection)).toEqual({
      exitCode: ExitCode.failure,
      code: 'connection_failed',
      message: 'a connection failed (connect): connection refused: nothing listens there (ECONNREFUSED) to 127.0.0.1:1',
      hint: 'check the network, the AWS region and any AWS_ENDPOINT_URL* setting, then run the command again',
    });
    // What a lookup of an unknown host throws (made here: the test needs no DNS).
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND dynamodb.eu-central-1.amazonaws.com'), {
      code: 'ENOTFOUND',
      errno: -3008,
      syscall: 'getaddrinfo',
      hostname: 'dynamodb.eu-central-1.amazonaws.com',
    });
    expect(describeError(notFound).message).toBe(
      'a connection failed (getaddrinfo): host name not found (ENOTFOUND) to dynamodb.eu-central-1.amazonaws.com',
    );
  });

  it('strips the refused value from commander messages and registered secrets from any message', () => {
    const invalid = new CommanderError(
      1,
      'commander.invalidArgument',
      `error: option '--month <YYYY-MM>' argument '${CANARY.apiKey}' is invalid. expected YYYY-MM`,
    );
    expect(describeError(invalid).message).toBe("option '--month <YYYY-MM>' is invalid: expected YYYY-MM");
    const unknown = new CommanderError(1, 'commander.unknownOption', `error: unknown option '--colour=${CANARY.institutionSecret}'`);
    expect(describeError(unknown).message).toBe("unknown option '--colour=…'");
    const command = new CommanderError(1, 'commander.unknownCommand', `error: unknown command '${CANARY.apiKey}'`);
    expect(describeError(command).message).toBe("unknown command 'sbx_…'");
    const quoted = new CommanderError(
      1,
      'commander.unknownCommand',
      `error: unknown command 'us'er${CANARY.apiKey}'\n(Did you mean users?)`,
    );
    expect(describeError(quoted).message).toBe("unknown command 'us'e…' (Did you mean users?)");
    const odd = new CommanderError(1, 'commander.unknownOption', `error: unknown option '--${CANARY.apiKey}'`);
    expect(describeError(odd).message).toBe("unknown option '--sb…'");
    registerSecret(CANARY.otherApiKey);
    expect(describeError(new Error(`upstream said ${CANARY.otherApiKey}`)).message).not.toContain(CANARY.otherApiKey);
  });
});

describe("refuseFutureMonth and monthOpen: a month is judged in the mode's time zone", () => {
  // 2026-11-30T12:00Z: December has begun in Kiritimati (UTC+14) and Auckland (UTC+13), not in Berlin.
  const now = Date.parse('2026-11-30T12:00:00Z');

  it('refuses a month Berlin has not begun by default, and lets a stage in Auckland export it, as its request-export would', () => {
    expect(() => refuseFutureMonth('2026-12', now)).toThrow(UsageError);
    expect(() => refuseFutureMonth('2026-12', now)).toThrow('--month is after the current month (2026-11)');
    expect(() => refuseFutureMonth('2026-12', now, 'Pacific/Auckland')).not.toThrow();
    expect(() => refuseFutureMonth('2027-01', now, EARLIEST_TIME_ZONE)).toThrow('(2026-12)');
    expect(monthOpen('2026-11', now)).toBe(true);
    expect(monthOpen('2026-11', now, 'Pacific/Auckland')).toBe(false);
  });
});

describe('cli/args: parsers refuse with what is expected, never the value', () => {
  it('accepts good values and normalises them', () => {
    expect(guid('6F1C2A3B-0000-4000-8000-000000000000')).toBe('6f1c2a3b-0000-4000-8000-000000000000');
    expect(month('2026-10')).toBe('2026-10');
    expect(formats('csv, PARQUET,csv')).toEqual(['csv', 'parquet']);
    expect(duration('31m')).toBe(31 * 60_000);
    expect(duration('2h')).toBe(7_200_000);
    // A zero is a setting of its own where the option means "none" (--max-retry-wait), not of --by.
    expect(duration('0s')).toBe(0);
    expect(positiveDuration('1s')).toBe(1000);
    for (const raw of ['0s', '0m', '00h', '0d', '-5m', '', 'soon'])
      expect(() => positiveDuration(raw)).toThrow('expected a duration above zero such as 31m, 2h or 1d');
    expect(exportTarget('s3://my-bucket/a/b/')).toEqual({ kind: 's3', bucket: 'my-bucket', prefix: 'a/b' });
    expect(exportTarget('./out')).toEqual({ kind: 'dir', path: './out' });
    // A directory whose name starts like a scheme is still reachable by a relative path.
    expect(exportTarget('./s3:x')).toEqual({ kind: 'dir', path: './s3:x' });
    expect(exportTarget('/tmp/s3:x')).toEqual({ kind: 'dir', path: '/tmp/s3:x' });
    expect(exportTarget('C:\\exports')).toEqual({ kind: 'dir', path: 'C:\\exports' });
    expect(httpUrl('http://127.0.0.1:4010/api/v1/')).toBe('http://127.0.0.1:4010/api/v1');
    expect(httpUrl('https://gateway.example.com/accounting/api/v1')).toBe('https://gateway.example.com/accounting/api/v1');
  });

  it('filePath: a URL is refused, not written as a local file named after its scheme; a relative name like one is kept', () => {
    for (const raw of ['s3://bucket/key.txt', 'S3://bucket', 's3:/bucket/key', 'file:///tmp/key', 'https://example.com/key'])
      expect(() => filePath(raw)).toThrow(
        new InvalidArgumentError('expected a local file path, not a URL (the key is written to a file only), e.g. ./key.txt'),
      );
    expect(filePath('./s3://x')).toBe('./s3://x');
    expect(filePath('/tmp/key.txt')).toBe('/tmp/key.txt');
    expect(filePath('C:\\keys\\key.txt')).toBe('C:\\keys\\key.txt');
    expect(filePath('C:/keys/key.txt')).toBe('C:/keys/key.txt');
    expect(() => filePath('  ')).toThrow('expected a file path');
  });

  it("refuses the AWS mode's options in the local and direct modes; --region only where no S3 client reads it", () => {
    expect(() => rejectAwsModeOptions({}, 'local', { regionUsed: false, noWait: false })).not.toThrow();
    expect(() => rejectAwsModeOptions({ output: [] }, 'local')).not.toThrow();
    expect(() => rejectAwsModeOptions({ region: 'eu-central-1' }, 'local', { regionUsed: true })).not.toThrow();
    expect(() => rejectAwsModeOptions({ region: 'eu-central-1' }, 'direct', { regionUsed: true })).not.toThrow();
    for (const [flags, options, option] of [
      [{ region: 'eu-central-1' }, {}, '--region'],
      [{ output: ['A=b'] }, { regionUsed: true }, '--output'],
      [{}, { noWait: true }, '--no-wait'],
    ] as const) {
      for (const mode of ['local', 'direct'] as const) {
        let thrown: unknown;
        try {
          rejectAwsModeOptions(flags, mode, options);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(UsageError);
        expect(describeError(thrown)).toMatchObject({
          exitCode: ExitCode.usage,
          message: expect.stringContaining(`${option} is an option of the AWS mode`),
        });
        expect((thrown as Error).message).toContain(`this is the ${mode} mode`);
      }
    }
  });

  it('--stack and --region given empty or blank are usage errors naming them, not "left out"; ACCTOPS_BASE_URL empty is configuration', () => {
    expect(stackName(' acctops-production ')).toBe('acctops-production');
    expect(regionName('eu-central-1')).toBe('eu-central-1');
    for (const [parse, option] of [
      [stackName, '--stack'],
      [regionName, '--region'],
    ] as const) {
      for (const raw of ['', ' ', '\t\n']) {
        expect(() => parse(raw)).toThrow(UsageError);
        expect(() => parse(raw)).toThrow(`${option} is empty`);
      }
    }
    const hint = 'unset it';
    expect(baseUrlFromEnv({}, hint)).toBeUndefined();
    expect(baseUrlFromEnv({ ACCTOPS_BASE_URL: ' http://127.0.0.1:9/api/v1/ ' }, hint)).toBe('http://127.0.0.1:9/api/v1');
    for (const raw of ['', '   ']) {
      let thrown: unknown;
      try {
        baseUrlFromEnv({ ACCTOPS_BASE_URL: raw }, hint);
      } catch (error) {
        thrown = error;
      }
      expect(describeError(thrown)).toMatchObject({ exitCode: ExitCode.config, message: 'ACCTOPS_BASE_URL is empty', hint });
    }
  });

  it('refuses plain http to a host that is not loopback: --base-url after its action knows the opt-in, ACCTOPS_BASE_URL (the key commands) with exit 3', () => {
    const hint = "set it to the stage's baseUrl";
    for (const raw of [
      'http://10.0.0.5/api/v1',
      'http://192.168.1.2:4010/api/v1',
      'http://127.0.0.1.nip.io/api/v1',
      `http://${CANARY.apiKey}.example/api/v1`,
    ]) {
      expect(() => httpUrl(raw)).toThrow(InvalidArgumentError);
      expect(() => httpUrl(raw)).toThrow(
        /^plain http is accepted only to a loopback host .* the company key would cross the network in clear$/,
      );
      // Commander's parser leaves it to the action, which refuses it unless --allow-insecure-http was given.
      expect(baseUrlArgument(raw)).toBe(raw);
      expect(isInsecureHttp(raw)).toBe(true);
      expect(httpUrl(raw, { allowInsecureHttp: true })).toBe(raw);
      let thrown: unknown;
      try {
        baseUrlFromEnv({ ACCTOPS_BASE_URL: raw }, hint);
      } catch (error) {
        thrown = error;
      }
      expect(describeError(thrown)).toMatchObject({
        exitCode: ExitCode.config,
        message: expect.stringMatching(/^ACCTOPS_BASE_URL is not usable: plain http is accepted only to a loopback host/),
        hint,
      });
      expectNoCanaries(describeError(thrown), 'plain http refusal');
    }
    for (const raw of [
      'http://127.0.0.1:4010/api/v1',
      'http://localhost:4010/api/v1',
      'http://[::1]:4010/api/v1',
      'https://10.0.0.5/api/v1',
    ]) {
      expect(httpUrl(raw)).toBe(raw);
      expect(isInsecureHttp(raw)).toBe(false);
    }
  });

  it('refuses a base URL whose path does not end in /api/v1, completing only a bare host', () => {
    const refusal = (raw: string) => {
      try {
        httpUrl(raw);
      } catch (error) {
        return (error as Error).message;
      }
      return undefined;
    };
    expect(refusal('http://127.0.0.1:4711')).toMatch(/ending in \/api\/v1 .*; did you mean http:\/\/127\.0\.0\.1:4711\/api\/v1\?$/);
    expect(refusal('https://example.com/')).toMatch(/; did you mean https:\/\/example\.com\/api\/v1\?$/);
    for (const raw of ['http://127.0.0.1:4711/api/v2', 'http://127.0.0.1:4711/api', `https://example.com/${CANARY.apiKey}`]) {
      expect(refusal(raw)).toMatch(/^expected an http\(s\) URL ending in \/api\/v1/);
      expect(refusal(raw)).not.toMatch(/did you mean/);
      expectNoCanaries(refusal(raw), 'base URL refusal');
    }
  });

  it.each([
    [() => guid(CANARY.apiKey)],
    [() => month('2026-13')],
    [() => formats('xlsx')],
    [() => duration('soon')],
    [() => positiveDuration('0m')],
    [() => exportTarget('s3://')],
    [() => exportTarget('s3:/bucket')],
    [() => exportTarget('s3:bucket/prefix')],
    [() => exportTarget('S3://bucket')],
    [() => exportTarget('file:///tmp/x')],
    [() => exportTarget('gs://bucket')],
    [() => exportTarget('ftp:host/x')],
    [() => httpUrl(`https://user:${CANARY.institutionSecret}@example.com/api/v1`)],
    [() => httpUrl(`https://example.com/api/v1?apikey=${CANARY.apiKey}`)],
    [() => httpUrl(`https://example.com/api/v1#${CANARY.apiKey}`)],
    [() => httpUrl('https://example.com/api/v1?')],
  ])('refuses %#', (parse) => {
    let thrown: unknown;
    try {
      parse();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError);
    expectNoCanaries(thrown, 'parser error');
  });

  it('refuses every credential-looking flag, with or without a value, but not after `--`', () => {
    for (const flag of [
      '--api-key',
      '--apikey',
      '--API_KEY=x',
      '--key',
      '--secret',
      '--secret-key',
      '--token=x',
      '--access-token',
      '--refresh-token',
      '--password',
      '--institution',
      '--institution-secret',
      '--credentials',
      '--authorization',
      '--bearer=x',
      '--bearer-token=x',
      '--session-token=x',
      '--id_token',
      '--client-secret',
      '--private-key=x',
      '--signing-key',
      '--pass=x',
      '--passphrase',
      '--pwd',
    ]) {
      expect(() => rejectCredentialFlags(['users', 'list', flag])).toThrow(UsageError);
    }
    expect(() => rejectCredentialFlags(['keys', 'status', '--company', 'x', '--json'])).not.toThrow();
    expect(() => rejectCredentialFlags(['sandbox', '--', '--token'])).not.toThrow();
    // Options of ours, and words that only look close: not credentials.
    for (const flag of [
      '--show-credentials',
      '--keys',
      '--passive',
      '--tokenize',
      '--key-id',
      '--replace-formats',
      '--revoke-previous-now',
    ]) {
      expect(() => rejectCredentialFlags(['sandbox', flag])).not.toThrow();
    }
    try {
      rejectCredentialFlags([`--api-key=${CANARY.apiKey}`]);
    } catch (error) {
      expect((error as Error).message).toMatch(/^option '--api-key' is refused/);
      expectNoCanaries(error, 'refusal');
    }
  });

  it('names a snake-case credential flag in full (`--api_key`), never its value; a pasted key after -- is still only glimpsed', () => {
    const refusal = (flag: string) => {
      try {
        rejectCredentialFlags(['export', flag]);
      } catch (error) {
        expectNoCanaries(error, 'refusal');
        return (error as Error).message;
      }
      throw new Error(`${flag} was not refused`);
    };
    expect(refusal(`--api_key=${CANARY.apiKey}`)).toMatch(/^option '--api_key' is refused/);
    expect(refusal('--API_KEY')).toMatch(/^option '--API_KEY' is refused/);
    expect(refusal(`--id_token=${CANARY.accessToken}`)).toMatch(/^option '--id_token' is refused/);
    expect(optionName('--sbx_AbCdEf12')).toBe('--sb…');
    expect(optionName(`--${CANARY.apiKey}`)).toBe(`--${CANARY.apiKey.slice(0, 2)}…`);
    expect(optionName('--sbx_abcdefghijklmnopqrstuvwxyzabcdef')).toBe('--sb…');
    expect(optionName('--replace-formats=x')).toBe('--replace-formats');
  });

  it('a refused credential flag reads whole once redacted: the flag named, its value never', () => {
    for (const [flag, name] of [
      ['--bearer=x', '--bearer'],
      ['--Bearer', '--Bearer'],
      ['--bearer-token=x', '--bearer-token'],
      [`--token_${CANARY.apiKey}=x`, '--to…'],
    ] as const) {
      let report: ReturnType<typeof describeError> | undefined;
      try {
        rejectCredentialFlags(['users', 'list', flag]);
      } catch (error) {
        report = describeError(error);
      }
      expect(report?.exitCode).toBe(ExitCode.usage);
      expect(report?.message).toBe(
        `option '${name}' is refused: acctops never takes a credential from a flag (it would stay in shell history)`,
      );
      expectNoCanaries(report, 'refusal');
    }
  });
});

describe('cli: --email and onboarding agree, and a use case refusal says what to do where the value came from', () => {
  it('email() accepts exactly what the onboarding schema accepts', () => {
    const addresses = [
      'name@example.com',
      "o'brien+tag@sub.example.co",
      'ü@exämple.de',
      'a@example.com.',
      '"q"@example.com',
      'a@[127.0.0.1]',
      'a@b',
      '.a@example.com',
      'a..b@example.com',
      'a@example.c',
      `${'a'.repeat(510)}@example.com`,
      'a b@example.com',
    ];
    const acceptedByCli = (address: string) => {
      try {
        email(address);
        return true;
      } catch {
        return false;
      }
    };
    for (const address of addresses) {
      const accepted = onboardInputSchema.shape.email.safeParse(address).success;
      expect({ address, accepted: acceptedByCli(address) }).toEqual({ address, accepted });
    }
    expect(() => email('name@example.com')).not.toThrow();
    expect(() => email('ü@exämple.de')).toThrow(InvalidArgumentError);
  });

  it.each([
    ['onboard input', 'email', /^check --email: `acctops users onboard --help` shows the accepted form$/],
    ['companies add', 'rotationDays', /^check --rotation-days: `acctops companies add --help`/],
    ['company API key secret', 'companyId', /keys install --company/],
    ['institution credential secret', 'secretKey', /institution set-secret/],
    ['tax report r1', 'endDate', /--tax-report-fields/],
    ['export job', '', /^the export job is not an argument of this command: run again with --verbose/],
  ])('a ValidationError of the %s names what to fix', (source, path, hint) => {
    const report = describeError(new ValidationError(source, [{ path, message: 'bad' }]));
    expect(report.exitCode).toBe(ExitCode.failure);
    expect(report.hint).toMatch(hint);
    expect(report.hint).not.toMatch(/the named field is wrong where it was read/);
  });
  it("a tax report or transaction refused only for Parquet's amount columns is told to export without Parquet, not to check field names", () => {
    const report = taxReport(0, '9999999999999999.99');
    let refused: unknown;
    try {
      taxReportsTable.row(report, { index: 0, defaultCurrency: 'EUR', parquet: true, categoryName: () => null });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ValidationError);
    const hint = describeError(refused).hint;
    expect(hint).toMatch(/--format csv,jsonl/);
    expect(hint).not.toMatch(/--tax-report-fields/);
    // The same message on a transaction, and a tax report malformed otherwise keeps its own hint.
    expect(describeError(new ValidationError('transaction t1', (refused as ValidationError).issues)).hint).toMatch(/--format csv,jsonl/);
    expect(describeError(new ValidationError('tax report r1', [{ path: 'endDate', message: 'expected a date YYYY-MM-DD' }])).hint).toMatch(
      /--tax-report-fields/,
    );
  });
});

describe('cli/output', () => {
  it('prints aligned tables for people, one JSON document with --json (bigints as strings), registered secrets removed', () => {
    const human = capture();
    new Output(human.io, { json: false, verbose: false }).table(
      [
        { a: 'x', n: 1 },
        { a: 'longer', n: 22 },
      ],
      [
        { header: 'NAME', value: (r) => r.a },
        { header: 'N', value: (r) => r.n, align: 'right' },
      ],
    );
    expect(human.stdout.join('')).toBe('  NAME     N\n  ------  --\n  x        1\n  longer  22\n');
    registerSecret(CANARY.accessToken);
    const json = capture();
    const out = new Output(json.io, { json: true, verbose: false });
    out.line('not printed with --json');
    out.result({ refreshed: 2, minor: 12n, leaked: CANARY.accessToken }, () => out.line('human'));
    expect(JSON.parse(json.stdout.join(''))).toEqual({ refreshed: 2, minor: '12', leaked: '[REDACTED]' });
  });

  it('shows control characters as escapes to people, and keeps --json exact with DEL, C1 and bidi formats as \\u escapes', () => {
    const hostile = 'a\u001b]0;title\u0007b\nc\td\u007fe\u009b2Jf\u202eg\u2028h';
    const human = capture();
    const out = new Output(human.io, { json: false, verbose: false });
    out.line(`User ${hostile}`);
    out.note(`note ${hostile}`);
    out.table(
      [{ name: hostile, n: 1 }],
      [
        { header: 'NAME', value: (r) => r.name },
        { header: 'N', value: (r) => r.n, align: 'right' },
      ],
    );
    const shown = 'a\\x1b]0;title\\x07b\\nc\\td\\x7fe\\x9b2Jf\\u202eg\\u2028h';
    expect(human.stdout.join('')).toBe(
      `User ${shown}\n  NAME${' '.repeat(shown.length - 4)}  N\n  ${'-'.repeat(shown.length)}  -\n  ${shown}  1\n`,
    );
    expect(human.stderr.join('')).toBe(`note ${shown}\n`);

    const json = capture();
    new Output(json.io, { json: true, verbose: false }).result({ name: hostile }, () => undefined);
    const text = json.stdout.join('');
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e\u2028]/);
    expect(JSON.parse(text)).toEqual({ name: hostile });
  });

  it('aligns table columns by terminal width: wide CJK and emoji take two columns, combining marks none', () => {
    expect(displayWidth('名前')).toBe(4);
    expect(displayWidth('e\u0301')).toBe(1);
    expect(displayWidth('ok👍')).toBe(4);
    const human = capture();
    new Output(human.io, { json: false, verbose: false }).table(
      [{ a: '名前' }, { a: 'abcde' }],
      [
        { header: 'A', value: (r) => r.a },
        { header: 'B', value: () => 'x' },
      ],
    );
    expect(human.stdout.join('')).toBe('  A      B\n  -----  -\n  名前   x\n  abcde  x\n');
  });

  it('draws a progress bar on stderr only when it is a terminal', () => {
    const tty = capture(true);
    const bar = new Output(tty.io, { json: false, verbose: false }).progress('export abc');
    bar.update(50, 200, 'transactions');
    bar.update(200, 200, 'transactions');
    bar.finish();
    expect(tty.stderr.join('')).toContain('[######..................]  25% 50/200');
    expect(tty.stderr.join('')).toContain('100% 200/200');
    expect(tty.stderr.at(-1)).toBe('\r\x1b[2K');
    const piped = capture(false);
    const none = new Output(piped.io, { json: false, verbose: false }).progress('export abc');
    none.update(1, 2);
    none.finish();
    expect(piped.stderr).toEqual([]);
  });
});

describe('refreshResultOf: what the deployed refresh worker did, read from the user before and after', () => {
  const NOW = Date.UTC(2026, 10, 25, 12, 0);
  const record = (overrides: Partial<TokenRecord> = {}): TokenRecord => ({
    externalId: '00000000-0000-4000-8000-000000000001',
    username: 'u',
    email: 'u@example.test',
    accessToken: 'a',
    refreshToken: 'r',
    accessTokenExpiresAt: NOW + 3_600_000,
    refreshedAt: NOW - 600_000,
    version: 3,
    leaseOwner: null,
    leaseUntil: null,
    status: 'active',
    consecutiveFailures: 0,
    lastErrorClass: null,
    lastErrorCode: null,
    createdAt: NOW - 86_400_000,
    updatedAt: NOW - 600_000,
    ...overrides,
  });

  it.each([
    ['a new pair', record(), record({ refreshedAt: NOW, version: 4 }), 'refreshed'],
    ['a new pair for a user out of the schedule', record({ status: 'needs_attention' }), record({ refreshedAt: NOW }), 'recovered'],
    ['a user moved out of the schedule', record(), record({ status: 'needs_attention', version: 4 }), 'needs_attention'],
    [
      'another live lease at the start',
      record({ leaseOwner: 'w', leaseUntil: NOW + 1000 }),
      record({ leaseOwner: 'w', leaseUntil: NOW + 1000 }),
      'busy',
    ],
    ['an expired lease and nothing changed', record({ leaseOwner: 'w', leaseUntil: NOW - 1 }), record(), 'not_due'],
    ['nothing changed', record(), record(), 'not_due'],
    ['the user gone meanwhile', record(), null, 'not_found'],
  ] as const)('%s is %s', (_name, before, after, result) => {
    expect(refreshResultOf(before, after, NOW)).toBe(result);
  });
});

describe('users onboard: the text says whether the user is refreshed from now on', () => {
  const id = '91111111-2222-4333-8444-555555555555';
  const expiresAt = Date.parse('2026-11-01T10:00:00Z');

  it('an active user is refreshed on schedule', () => {
    const lines = onboardLines({ externalId: id, result: 'created', status: 'active', accessTokenExpiresAt: expiresAt });
    expect(lines[1]).toMatch(/refreshed on schedule from now on/);
  });

  it('a revoked user is not refreshed, and the text names `users recover --reactivate`', () => {
    const lines = onboardLines({ externalId: id, result: 'already_onboarded', status: 'revoked', accessTokenExpiresAt: expiresAt });
    expect(lines[0]).toBe(`User ${id}: already onboarded (status revoked)`);
    expect(lines.join('\n')).not.toMatch(/refreshed on schedule from now on/);
    expect(lines[1]).toMatch(/not refreshed/);
    expect(lines[1]).toContain(`\`acctops users recover --user ${id} --reactivate\``);
  });

  it('a needs_attention user is not refreshed either; `users recover` without --reactivate brings it back', () => {
    const lines = onboardLines({ externalId: id, result: 'already_onboarded', status: 'needs_attention', accessTokenExpiresAt: expiresAt });
    expect(lines.join('\n')).not.toMatch(/refreshed on schedule from now on/);
    expect(lines[1]).toMatch(/left out of the refresh schedule/);
    expect(lines[1]).toContain(`\`acctops users recover --user ${id}\``);
    expect(lines[1]).not.toContain('--reactivate');
  });
});

describe("exportDeadlineOf: the doctor's export deadline from the stack outputs", () => {
  it('takes the outputs, and the defaults for a stack without them', () => {
    expect(exportDeadlineOf(undefined, undefined)).toEqual({ timeZone: 'Europe/Berlin', dueAfterHours: 12 });
    expect(exportDeadlineOf('America/New_York', '36')).toEqual({ timeZone: 'America/New_York', dueAfterHours: 36 });
    expect(exportDeadlineOf(undefined, '0')).toEqual({ timeZone: 'Europe/Berlin', dueAfterHours: 0 });
  });

  it('refuses an output that is no deadline as configuration (exit 3), naming the output, never its value', () => {
    const cases: [string | undefined, string | undefined, string][] = [
      ['Europe/Berlinn', undefined, 'ExportTimeZone'],
      [undefined, '', 'ExportDueAfterHours'],
      [undefined, ' 12', 'ExportDueAfterHours'],
      [undefined, '1.5', 'ExportDueAfterHours'],
      [undefined, '-1', 'ExportDueAfterHours'],
      [undefined, '649', 'ExportDueAfterHours'],
    ];
    for (const [timeZone, hours, key] of cases) {
      let caught: unknown;
      try {
        exportDeadlineOf(timeZone, hours);
      } catch (error) {
        caught = error;
      }
      const report = describeError(caught);
      expect(report).toMatchObject({ exitCode: ExitCode.config, message: expect.stringContaining(`stack output ${key} is not`) });
      const value = timeZone ?? hours ?? '';
      if (value !== '') expect(report.message).not.toContain(value);
      expect(report.hint).toContain(`--output ${key}=`);
    }
  });
});

describe('shownLocation: a location as a person copies it', () => {
  it('gives a local file as its path, decoded, and leaves other addresses as they are', () => {
    expect(shownLocation('file:///tmp/pre%20existing/st%C3%A4te/_manifest.json')).toBe('/tmp/pre existing/stäte/_manifest.json');
    expect(shownLocation('s3://bucket/exports/company=x/period=2026-10/_manifest.json')).toBe(
      's3://bucket/exports/company=x/period=2026-10/_manifest.json',
    );
    // Not a path on this system (a host): stays the URL rather than a wrong path.
    expect(shownLocation('file://server/share/x')).toBe('file://server/share/x');
  });
});
