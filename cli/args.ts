import { InvalidArgumentError, type Command, type Option } from 'commander';
import { EARLIEST_PERIOD, parsePeriod } from '../src/core/exports/formats/period';
import { CURRENCY_CODE_EXPECTED, isoCurrencyCode } from '../contract/currency';
import { baseUrlProblem, insecureHttp } from '../contract/setting-rules';
import { CSV_DIALECTS, FORMATS, type CsvDialect, type ExportFormat } from '../src/core/exports/formats/datasets';
import { parseTaxReportFieldList, TAX_REPORT_FIELDS, type TaxReportFieldNames } from '../src/core/exports/formats/tax-report-fields';
import { ValidationError } from '../src/core/shared/errors';
import { onboardInputSchema } from '../src/core/tokens/onboard-input';
import { foldUuid } from '../src/core/shared/uuid';
import { CliConfigError, optionName, UsageError } from './errors';

/**
 * Argument parsers. A refusal says what is expected and never repeats the value (commander's own
 * message is stripped of it in `describeError`), since a mistyped secret must not be echoed.
 */

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function guid(raw: string): string {
  if (!GUID.test(raw)) throw new InvalidArgumentError('expected a UUID such as 6f1c2a3b-0000-4000-8000-000000000000');
  return foldUuid(raw);
}

/** A key prefix as `keys status` prints it (`sbx_AbCd1234`, a trailing `…` allowed); never a whole key, which the message does not repeat. */
export function keyPrefixArg(raw: string): string {
  const prefix = raw.replace(/(…|\.\.\.)$/, '');
  // keyPrefix counts its 8 characters from the first underscore: a service prefix with one of its
  // own (`sk_live_…`) leaves an underscore among them.
  if (!/^[A-Za-z0-9]+_[A-Za-z0-9_]{1,8}$/.test(prefix)) {
    throw new InvalidArgumentError('expected a key prefix as `acctops keys status` shows it, e.g. sbx_AbCd1234 (never the whole key)');
  }
  return prefix;
}

export function month(raw: string): string {
  // Spaces around it (a pasted value) are dropped, as the other parsers here drop them: kept, they
  // were refused as "(02 is no month)" of a month that is one.
  const value = raw.trim();
  const earliest = () =>
    new InvalidArgumentError(`expected a month from ${EARLIEST_PERIOD} on, as YYYY-MM, e.g. 2026-10 (an earlier year is taken for a typo)`);
  let text: string;
  try {
    text = parsePeriod(value).text;
  } catch {
    const shape = /^\d{4}-(\d{2})$/.exec(value);
    if (!shape) throw new InvalidArgumentError('expected a month as YYYY-MM, e.g. 2026-10');
    const monthNumber = Number(shape[1]);
    // The right shape with a month outside 01-12 (2026-13, 2026-00) is said as such: the shape alone
    // reads as if the format were wrong. With a good month it is the year that failed (0000).
    if (monthNumber < 1 || monthNumber > 12)
      throw new InvalidArgumentError(`expected a month as YYYY-MM with the month 01 to 12, e.g. 2026-10 (${shape[1]} is no month)`);
    throw earliest();
  }
  // The pipeline's lower bound (refuseEarlyPeriod), here so that every mode refuses it before anything runs.
  if (text < EARLIEST_PERIOD) throw earliest();
  return text;
}

/**
 * Onboarding's own rule, so that every address it would refuse is refused here, naming --email
 * (exit 2), rather than after the state is opened as a failed use case (exit 1).
 */
export function email(raw: string): string {
  if (!onboardInputSchema.shape.email.safeParse(raw).success) {
    throw new InvalidArgumentError(
      "expected an address such as name@example.com: ASCII only, letters, digits and . _ ' + - before the @, a domain name after it (no IP address, no trailing dot)",
    );
  }
  return raw;
}

export function nonEmpty(raw: string): string {
  if (raw.trim() === '' || raw.length > 512) throw new InvalidArgumentError('expected a non-empty value of at most 512 characters');
  return raw.trim();
}

/**
 * `--stack` and `--region` name where a command acts: given empty or blank, they are refused (exit 2)
 * rather than read as left out. Left out, the stack falls back to ACCTOPS_STACK or the local mode,
 * and the region to AWS_REGION or the profile's, where the command succeeds: `--stack "$STACK"`
 * with STACK unset rotated the local sandbox's key and reported it done. A malformed one is refused
 * too, before any AWS call: a stack name the SDK sends anyway only fails as unreachable or refused
 * credentials (exit 4), and a region it cannot sign for was reported as no region at all.
 */
function targetName(option: string, hint: string, rule: NameRule): (raw: string) => string {
  return (raw) => {
    if (raw.trim() === '') throw new UsageError(`${option} is empty`, hint);
    const name = raw.trim();
    if (!rule.pattern.test(name)) throw new UsageError(`${option} is malformed: ${rule.expected}`, hint);
    return name;
  };
}

interface NameRule {
  readonly pattern: RegExp;
  /** What the refusal says is expected; the value itself is never repeated. */
  readonly expected: string;
}

/** CloudFormation's rule for a stack name (a name, never an ARN: acctops reads the stack's outputs by name). */
export const STACK_NAME: NameRule = {
  pattern: /^[A-Za-z][A-Za-z0-9-]{0,127}$/,
  expected: 'expected a stack name (a letter, then letters, digits or hyphens, at most 128 characters), e.g. acctops-production',
};

/**
 * An AWS region's shape: a partition and area of two to four letters, words of letters, a number
 * (`eu-central-1`, `us-gov-west-1`, `cn-northwest-1`, `us-isob-east-1`, `eusc-de-east-1`). A shape,
 * not a list, so that a region AWS opens later is not refused; one that does not exist fails at
 * the first call, naming the endpoint.
 */
export const REGION_NAME: NameRule = {
  pattern: /^[a-z]{2,4}(?:-[a-z]+)+-\d{1,2}$/,
  expected: 'expected a region name such as eu-central-1 (lower-case words and a number, joined by hyphens)',
};

export const stackName = targetName(
  '--stack',
  'nothing was run: name the stack, e.g. --stack acctops-production; for the local mode leave out --stack and unset ACCTOPS_STACK',
  STACK_NAME,
);

export const regionName = targetName(
  '--region',
  "nothing was run: name the region, e.g. --region eu-central-1, or leave out --region for AWS_REGION or the profile's",
  REGION_NAME,
);

/**
 * The region a command's AWS clients are given: `--region` (parsed already), else the variable
 * `names` lists first that is set and not empty (an empty one is left to the SDK, which reports no
 * region; a blank one is malformed). A malformed variable is configuration (exit 3) naming it, before any AWS call.
 */
export function awsRegion(
  flags: { readonly region?: string },
  env: NodeJS.ProcessEnv,
  names: readonly ('AWS_REGION' | 'AWS_DEFAULT_REGION')[] = ['AWS_REGION'],
): string | undefined {
  if (flags.region !== undefined) return flags.region;
  for (const name of names) {
    const raw = env[name];
    if (raw === undefined) continue;
    // Only an empty one: a blank one reached the SDK, which reported a malformed region of the AWS
    // profile; spaces are no region, so it is malformed here, naming the variable.
    if (raw === '') return raw;
    if (!REGION_NAME.pattern.test(raw.trim())) {
      throw new CliConfigError(
        `${name} is malformed: ${REGION_NAME.expected}`,
        `nothing was run: set ${name} to the region, e.g. eu-central-1, or unset it for the profile's (--region wins over it)`,
      );
    }
    return raw.trim();
  }
  return undefined;
}

/** Where the direct mode's base URL came from, as messages name it. */
export type BaseUrlSource = '--base-url' | 'ACCTOPS_BASE_URL (environment)';

/**
 * ACCTOPS_BASE_URL: undefined when unset; a blank one is refused (exit 3) rather than read as unset,
 * as ACCTOPS_STACK and ACCTOPS_STATE_DIR are (docs/cli.md, "Modes"): unset, `export` falls back
 * to the local mode, whose sandbox data would go to the operator's `--out`, and reports success.
 */
export function baseUrlFromEnv(env: NodeJS.ProcessEnv, hint: string, options: InsecureHttpOption = {}): string | undefined {
  const raw = env.ACCTOPS_BASE_URL;
  if (raw === undefined) return undefined;
  if (raw.trim() === '') throw new CliConfigError('ACCTOPS_BASE_URL is empty', hint);
  return configuredUrl(raw.trim(), 'ACCTOPS_BASE_URL', hint, options);
}

/** A file to create; kept as typed (a name may begin or end with a space), only an empty one refused. */
export function filePath(raw: string): string {
  if (raw.trim() === '') throw new InvalidArgumentError('expected a file path, e.g. ./key.txt');
  // `s3://bucket/key` would be a local file `s3:/bucket/key`: a key written somewhere the user did not
  // mean, perhaps into a synced folder. A local name like that stays reachable as `./s3:…`.
  if (/^[a-z][a-z0-9+.-]+:\//i.test(raw))
    throw new InvalidArgumentError('expected a local file path, not a URL (the key is written to a file only), e.g. ./key.txt');
  return raw;
}

export function formats(raw: string): ExportFormat[] {
  const list = raw
    .split(',')
    .map((f) => f.trim().toLowerCase())
    .filter((f) => f !== '');
  const unknown = list.filter((f) => !(FORMATS as readonly string[]).includes(f));
  if (list.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`expected a comma-separated list of ${FORMATS.join(', ')}`);
  return [...new Set(list)] as ExportFormat[];
}

/** `standard` or `excel-de` (`EXCEL-DE` read as `excel-de`): how the CSV is spelt. */
export function csvDialect(raw: string): CsvDialect {
  const value = raw.trim().toLowerCase();
  if (!(CSV_DIALECTS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected ${CSV_DIALECTS.join(' or ')}`);
  return value as CsvDialect;
}

/** `periodEnd=endDate,periodStart=startDate`: the service's names of our tax-report fields. */
export function taxReportFields(raw: string): TaxReportFieldNames {
  try {
    return parseTaxReportFieldList(raw);
  } catch (error) {
    const issue = error instanceof ValidationError ? error.issues[0] : undefined;
    throw new InvalidArgumentError(
      `${issue ? `${issue.path || '(the list)'}: ${issue.message}` : 'malformed'}; our fields are ${TAX_REPORT_FIELDS.join(', ')}`,
    );
  }
}

/** An ISO 4217 code the runtime's Intl lists (`gbp` is read as GBP): the rule of src/core/exports/formats/currency.ts. */
export function currencyCode(raw: string): string {
  const code = isoCurrencyCode(raw);
  if (code === undefined) throw new InvalidArgumentError(CURRENCY_CODE_EXPECTED);
  return code;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--page-size`: 1 to the spec's usual maximum, 1000 (§8). */
export function pageSize(raw: string): number {
  const value = /^\d{1,4}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!(value >= 1 && value <= 1000)) throw new InvalidArgumentError('expected a whole number from 1 to 1000');
  return value;
}

/** `--date-to`: how the service reads `date_to` (src/core/exports/pipeline/date-to.ts). */
export function dateToMode(raw: string): 'detect' | 'inclusive' | 'exclusive' {
  const value = raw.trim();
  if (value !== 'detect' && value !== 'inclusive' && value !== 'exclusive')
    throw new InvalidArgumentError('expected detect, inclusive or exclusive');
  return value;
}

/** `90s`, `31m`, `2h`, `1d`; `0s` too, where none is a setting (`--max-retry-wait 0s`: never wait). */
export function duration(raw: string): number {
  const match = /^(\d{1,7})([smhd])$/.exec(raw.trim());
  if (!match) throw new InvalidArgumentError('expected a duration such as 31m, 2h or 1d');
  return Number(match[1]) * UNITS[match[2]!]!;
}

/**
 * A duration that must move something (`local advance-clock --by`): `0m` was taken, did nothing
 * and reported the clock "now" where it was, as if a step had been rehearsed.
 */
export function positiveDuration(raw: string): number {
  let value: number | undefined;
  try {
    value = duration(raw);
  } catch {
    // The one message for every refusal, so that a zero and a typo are told the same form.
  }
  if (value === undefined || value <= 0) throw new InvalidArgumentError('expected a duration above zero such as 31m, 2h or 1d');
  return value;
}

const BASE_URL_EXPECTED = 'expected an http(s) URL ending in /api/v1';

/** Whether plain http is let through: refused unless the command was given `--allow-insecure-http` (decision 92). */
export interface InsecureHttpOption {
  allowInsecureHttp?: boolean;
}

/**
 * Plain http to a host that is not loopback, in the CLI's words: the company key would go out in
 * clear. Names neither the URL nor its host (a key may have been pasted anywhere in it).
 */
export const INSECURE_HTTP_REFUSED =
  'plain http is accepted only to a loopback host (localhost, 127.0.0.0/8, [::1]): the company key would cross the network in clear';

/**
 * The service's base URL, `/api/v1` included: the spec's paths are relative to `{base_url}/api/v1`
 * (and the version is that path, §9), so a URL without it reaches the service's other routes
 * (`GET //companies/`, a 404 far from its cause) or another version. A trailing slash is dropped.
 */
export function httpUrl(raw: string, options: InsecureHttpOption = {}): string {
  // The rule the stage's baseUrl and the functions' ACCTOPS_BASE_URL are held to (contract/setting-rules.ts),
  // in the CLI's words, which say where the key goes instead.
  switch (baseUrlProblem(raw, { allowInsecureHttp: options.allowInsecureHttp })) {
    case 'not_a_url':
    case 'scheme':
      throw new InvalidArgumentError(BASE_URL_EXPECTED);
    case 'insecure_http':
      throw new InvalidArgumentError(INSECURE_HTTP_REFUSED);
    case 'user_info':
      throw new InvalidArgumentError('credentials do not belong in the URL; use ACCTOPS_API_KEY');
    case 'query_or_fragment':
      // The client refuses them too, but only once the export has started, as a failed company. A query
      // is where a key is pasted (`?apikey=…`), so it is refused here, before anything runs, unechoed.
      throw new InvalidArgumentError(
        'a query or fragment does not belong in the URL; expected an http(s) URL ending in /api/v1 (the key goes in ACCTOPS_API_KEY)',
      );
    case 'version_path': {
      // Only a bare host is completed: a path of its own may be a proxy's prefix, or a key pasted there, and is not repeated.
      const url = new URL(raw);
      const bare = url.pathname === '/';
      throw new InvalidArgumentError(
        `${BASE_URL_EXPECTED} (the version path of the service's API)${bare ? `; did you mean ${url.origin}/api/v1?` : ''}`,
      );
    }
    case undefined:
      return raw.replace(/\/+$/, '');
  }
}

/**
 * `--base-url` as commander reads it: every rule but plain http's, which waits for the command's
 * action, where `--allow-insecure-http` is known whichever order the two were given in (a parser
 * sees only its own option). The action refuses it there, before anything runs (exit 2).
 */
export function baseUrlArgument(raw: string): string {
  return httpUrl(raw, { allowInsecureHttp: true });
}

/** Plain http to a host that is not loopback (contract/setting-rules.ts); `raw` already passed httpUrl. */
export function isInsecureHttp(raw: string): boolean {
  return insecureHttp(new URL(raw));
}

/**
 * httpUrl for a URL the operator did not type as an argument (a variable, a stack output): a bad one
 * is configuration (exit 3) naming where it came from, not usage (exit 2). The parser's reason
 * (user info, a query) is kept; the value never is, since a key may have been pasted into it.
 */
export function configuredUrl(raw: string, source: string, hint: string, options: InsecureHttpOption = {}): string {
  try {
    return httpUrl(raw, options);
  } catch (error) {
    const reason = error instanceof InvalidArgumentError ? `: ${error.message}` : '';
    throw new CliConfigError(`${source} is not usable${reason}`, hint);
  }
}

export type ExportTarget = { kind: 'dir'; path: string } | { kind: 's3'; bucket: string; prefix: string };

const EXPORT_TARGET_FORMS = 'expected s3://bucket[/prefix] or a directory';

/**
 * `s3://bucket[/prefix]` or a directory. Anything else that starts like a URL (`word:`) is refused
 * rather than taken for a directory: `s3:/bucket` or `s3:bucket` would otherwise write the export
 * into a local directory named `s3:` and report success. A directory whose name has such a start is
 * still reachable as `./s3:x`.
 */
export function exportTarget(raw: string): ExportTarget {
  if (raw.startsWith('s3://')) {
    const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw);
    if (!match) throw new InvalidArgumentError(EXPORT_TARGET_FORMS);
    return { kind: 's3', bucket: match[1]!, prefix: (match[2] ?? '').replace(/^\/+|\/+$/g, '') };
  }
  if (raw.trim() === '') throw new InvalidArgumentError(EXPORT_TARGET_FORMS);
  // Two characters at least: `C:\exports` is a Windows drive, not a scheme.
  if (/^[a-z][a-z0-9+.-]+:/i.test(raw)) {
    throw new InvalidArgumentError(
      `${EXPORT_TARGET_FORMS}; a value that starts like a URL (word:) is not taken for a directory: write ./<name> for a directory so named`,
    );
  }
  return { kind: 'dir', path: raw };
}

/** Options that collect one value per occurrence (`--output`), which may therefore be given again. */
const REPEATABLE = new WeakSet<Option>();

/** Marks an option as collecting its occurrences, so that `rejectRepeatedOptions` lets it repeat. */
export function repeatable(option: Option): Option {
  REPEATABLE.add(option);
  return option;
}

/**
 * Refuses a value-taking option given twice (exit 2), in `command` and every subcommand below it.
 * Commander keeps the last value silently, so `keys rotate --company A --company B` would rotate B
 * alone and say nothing of A. Counted from commander's own `option:<name>` events, one per
 * occurrence in any spelling (`--company x`, `--company=x`, `-cx`), so a value that looks like an
 * option is never miscounted; parsing stops at the second, before any action runs. Boolean flags may
 * repeat (`--json --json` means the same); variadic and `repeatable` options collect their values.
 */
export function rejectRepeatedOptions(command: Command): void {
  for (const option of command.options) {
    if (!(option.required || option.optional) || option.variadic || REPEATABLE.has(option)) continue;
    let seen = 0;
    command.on(`option:${option.name()}`, () => {
      seen += 1;
      if (seen > 1) {
        const name = option.long ?? option.short ?? option.name();
        throw new UsageError(`option ${name} given more than once; give it once`, 'nothing was run; each option takes one value');
      }
    });
  }
  for (const sub of command.commands) rejectRepeatedOptions(sub);
}

/**
 * Commander checks a command's required options before it looks for unknown ones, so a misspelt
 * required option (`keys rotate --compnay <id>`) was reported as the missing `--company`, not as
 * the typo with its "Did you mean --company?". Here the required options are checked after the
 * unknown ones: no longer mandatory to commander, they are checked in the command's preAction hook
 * (which runs after that look), with commander's own error and words.
 */
export function checkRequiredOptionsLast(command: Command): void {
  const required = command.options.filter((option) => option.mandatory);
  if (required.length > 0) {
    for (const option of required) option.makeOptionMandatory(false);
    command.hook('preAction', () => {
      const missing = required.find((option) => command.getOptionValue(option.attributeName()) === undefined);
      // Commander's own words and code for it (its missingMandatoryOptionValue, which its types do not export).
      if (missing)
        command.error(`error: required option '${missing.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
    });
  }
  for (const sub of command.commands) checkRequiredOptionsLast(sub);
}

/** What each option of the AWS mode does there, said when another mode refuses it. */
const AWS_MODE_OPTIONS = {
  '--output': 'it names an output of the stack',
  '--region': "it names the stack's region (and, in any mode, the region of an export --out s3://… bucket)",
  '--no-wait': 'it returns before the deployed functions have finished',
} as const;

/**
 * The AWS mode's options in the local or direct mode: refused (exit 2) before anything runs, not
 * ignored. Nothing there reads them, and they are what an operator who forgot --stack types: the
 * command would act on the local state and report success. `regionUsed`: the command has an S3
 * client that reads --region (export --out s3://…).
 */
export function rejectAwsModeOptions(
  flags: { readonly region?: string; readonly output?: readonly string[] },
  mode: 'local' | 'direct',
  options: { regionUsed?: boolean; noWait?: boolean; directBy?: BaseUrlSource } = {},
): void {
  const option =
    (flags.output?.length ?? 0) > 0
      ? '--output'
      : flags.region !== undefined && options.regionUsed !== true
        ? '--region'
        : options.noWait === true
          ? '--no-wait'
          : undefined;
  if (option === undefined) return;
  throw new UsageError(
    `${option} is an option of the AWS mode (--stack or ACCTOPS_STACK): ${AWS_MODE_OPTIONS[option]}; this is the ${mode === 'local' ? 'local mode (no stack named)' : `direct mode, picked by ${options.directBy ?? '--base-url or ACCTOPS_BASE_URL'}`}`,
    mode === 'local'
      ? `nothing was run: name the stack (acctops --stack acctops-<stage> …), or drop ${option}`
      : `nothing was run: drop ${option}`,
  );
}

/** `Key=Value` naming a stack output. */
export function outputPair(raw: string, previous: string[] = []): string[] {
  if (!/^[A-Za-z][A-Za-z0-9]*=\S+$/.test(raw))
    throw new InvalidArgumentError('expected OutputKey=value, e.g. OnboardUserFunctionName=acctops-prod-onboard');
  return [...previous, raw];
}

/**
 * Credentials never come from a flag: a flag's value stays in the shell history and shows in
 * `ps`. Such flags are refused before anything is parsed, and the refusal does not repeat them.
 * A flag is refused by its words (split at `-` and `_`), not by a list of whole names, so that
 * `--bearer-token` or `--session-token` is refused like `--token` rather than reported as an
 * unknown option, which would invite trying another spelling. No option of ours has such a word
 * (`--show-credentials` of `acctops sandbox` is not `--credentials`).
 */
const SECRET_WORDS = new Set(['token', 'tokens', 'secret', 'secrets', 'password', 'passwd', 'passphrase', 'pwd', 'bearer', 'apikey']);
const SECRET_NAMES = new Set(['pass', 'auth', 'authorization', 'institution', 'credential', 'credentials', 'institution-credential']);
/** `--key`, and a key whose first word says it is a secret one (`--api-key`, `--private-key`). */
const SECRET_KEY_KINDS = new Set(['api', 'private', 'secret', 'access', 'signing', 'client', 'institution', 'company']);

export function isCredentialFlag(arg: string): boolean {
  const match = /^--?([A-Za-z0-9][A-Za-z0-9_-]*)(=|$)/.exec(arg);
  if (!match) return false;
  const words = match[1]!
    .toLowerCase()
    .split(/[-_]+/)
    .filter((w) => w !== '');
  if (SECRET_NAMES.has(words.join('-')) || words.some((w) => SECRET_WORDS.has(w))) return true;
  return words.at(-1) === 'key' && (words.length === 1 || SECRET_KEY_KINDS.has(words.at(-2)!));
}

export function rejectCredentialFlags(argv: readonly string[]): void {
  for (const arg of argv) {
    if (arg === '--') return;
    if (isCredentialFlag(arg)) {
      // Quoted, as commander quotes an option: unquoted, `--bearer is refused` reads to the
      // redactor as an Authorization header, which blanked the word after it.
      throw new UsageError(
        `option '${optionName(arg)}' is refused: acctops never takes a credential from a flag (it would stay in shell history)`,
        'set ACCTOPS_API_KEY or ACCTOPS_INSTITUTION in the environment, or keep it in the secret store (README, "Credentials")',
      );
    }
  }
}
