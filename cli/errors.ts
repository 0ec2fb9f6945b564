import { CommanderError } from 'commander';
import {
  AccountingApiError,
  ApiValidationError,
  AuthenticationError,
  certificateRefused,
  CompanyMismatchError,
  ConnectionError,
  isWellFormedApiKey,
  NotFoundError,
  PaginationError,
  PermissionDeniedError,
  RateLimitError,
  refusesUser,
  ResponseValidationError,
  retryRecordOf,
  TimeoutError,
  TransportFailure,
} from '../src/core/accounting-api';
import { CompanyKeyNotFoundError } from '../src/core/api-keys';
import { isBeyondParquet } from '../src/core/exports/formats/parquet-limit';
import { ExportCountMismatchError } from '../src/core/exports/pipeline/pipeline-errors';
import { SecretNotFoundError } from '../src/core/ports/secrets';
import { AcctopsError, ConfigError, issuesText, ValidationError, type FieldIssue } from '../src/core/shared/errors';
import { redactString } from '../src/core/shared/redact';
import { OnboardConflictError, TokenBusyError, UserRevokedError } from '../src/core/tokens/errors';
import { TokenNotFoundError } from '../src/core/tokens/token-store';
import { ExitCode, type ExitCodeValue } from './exit-codes';
import { fsCauseText, isFsError, isSocketError, shortPath, socketCauseText } from './fs-failure';

/** An error of the command line itself, with its exit code and what to do about it. */
export class CliError extends AcctopsError {
  override readonly name: string = 'CliError';
  readonly exitCode: ExitCodeValue;
  readonly hint: string | undefined;

  constructor(message: string, options: { code: string; exitCode: ExitCodeValue; hint?: string; cause?: unknown }) {
    super(message, { code: options.code, cause: options.cause });
    this.exitCode = options.exitCode;
    this.hint = options.hint;
  }
}

/** A bad argument: names it, never echoes its value. */
export class UsageError extends CliError {
  override readonly name: string = 'UsageError';
  constructor(message: string, hint?: string) {
    super(message, { code: 'usage', exitCode: ExitCode.usage, hint });
  }
}

/** Configuration the command needs is missing (an environment variable, the state directory, a stack output). */
export class CliConfigError extends CliError {
  override readonly name: string = 'CliConfigError';
  constructor(message: string, hint?: string, cause?: unknown) {
    super(message, { code: 'config_missing', exitCode: ExitCode.config, hint, cause });
  }
}

/**
 * A user or company a command names (`--user`, `--company`) that the deployment does not know: exit 3
 * in every command and both modes (README, "Exit codes"), naming the option and the id, with how to
 * list the known ones. The id is shown: it is what the operator typed and the option's parser took
 * as a UUID, not a secret (and the error line escapes any control character anyway).
 */
export class UnknownNameError extends CliError {
  override readonly name: string = 'UnknownNameError';
  readonly option: '--user' | '--company';
  readonly id: string;

  /** `message` replaces the usual "no such … in this deployment" where that would not be true. */
  constructor(option: '--user' | '--company', id: string, detail: string, hint: string, message?: string) {
    const kind = option === '--user' ? 'user' : 'company';
    super(message ?? `${option} ${id}: no such ${kind} in this deployment (${detail})`, {
      code: `unknown_${kind}`,
      exitCode: ExitCode.config,
      hint,
    });
    this.option = option;
    this.id = id;
  }
}

/** The runbook "Recover a user", step 2: only the service owner can enable a disabled user. */
const USER_DISABLED_HINT =
  'the service disabled the user: ask the service owner (docs/runbooks.md, "Recover a user"), then `acctops users recover` it';

/**
 * The service refused the user (401 `user_disabled`, DRF `user_inactive`), not the credential that
 * asked: the operation failed (exit 1), and no credential of ours needs checking (exit 4 would say so).
 */
export function userDisabled(message: string, cause?: unknown): CliError {
  return new CliError(message, { code: 'user_disabled', exitCode: ExitCode.failure, hint: USER_DISABLED_HINT, cause });
}

/**
 * `tokens refresh --user` of a revoked user: said as its status, not `not_due` (which reads like
 * "later"), with the one way back. Exit 1, as `users recover` without --reactivate refuses it
 * (`user_revoked`): the user is known, so not exit 3, and nothing was refreshed, so not partly done.
 */
export function refreshOfRevokedUser(externalId: string): CliError {
  return new CliError(`--user ${externalId}: the user is revoked; nothing was refreshed`, {
    code: 'user_revoked',
    exitCode: ExitCode.failure,
    hint: `a revoked user comes back only on purpose: \`acctops users recover --user ${externalId} --reactivate\` retrieves a new token pair (docs/runbooks.md, "Recover a user")`,
  });
}

/**
 * `tokens refresh --user` of a user in `needs_attention`: said as its status, not `not_due`, since
 * no refresh picks it up again; the runbook's way back is `users recover` once the cause is fixed,
 * or `users onboard` for a user the service no longer knows (docs/runbooks.md, "Recover a user").
 * Exit 1 for the reasons of refreshOfRevokedUser: the user is known, and nothing was refreshed.
 */
export function refreshOfUserNeedingAttention(externalId: string): CliError {
  return new CliError(`--user ${externalId}: the user needs attention (its refresh and retrieve were refused); nothing was refreshed`, {
    code: 'user_needs_attention',
    exitCode: ExitCode.failure,
    hint:
      `\`acctops users list --status needs_attention\` shows its last error; once its cause is fixed, \`acctops users recover --user ${externalId}\` retrieves a new token pair, ` +
      `and \`acctops users onboard --external-id ${externalId} --username <name> --email <email>\` registers it again if the service no longer knows it (docs/runbooks.md, "Recover a user")`,
  });
}

/** Onboarding's fields as the service names them (spec §4.1), and the `users onboard` options they come from. */
const ONBOARD_FIELD_OPTIONS: Readonly<Record<string, string>> = {
  username: '--username',
  email: '--email',
  external_id: '--external-id',
};

/**
 * The service's 400 to onboarding (`ApiValidationError`, in AWS mode the onboard-user function's),
 * said as the option the refused field came from, or as the three options when it names none. The
 * spec gives `username` no length or character rule (nor `email` one beyond its format), so acctops
 * refuses no such value first (docs/assumptions.md, "Onboarding fields"); the service's own words,
 * which name the field, are kept. The hint used to be "check the service (`acctops doctor`)",
 * which sent the operator to a service that was working. Nothing was registered: exit 1, as every
 * refusal of the service (the value was a well-formed argument, so not 2). `field` undefined: none named.
 */
export function onboardInputRefused(field: string | undefined, message: string, cause?: unknown): CliError {
  const option = field === undefined ? undefined : ONBOARD_FIELD_OPTIONS[field];
  const rule =
    option === '--username'
      ? 'the API spec sets no length or character rule for a username, so acctops checks only that it is not blank and at most 512 characters; '
      : '';
  return new CliError(
    option === undefined ? `the service refused the user's details: ${message}` : `${option}: the service refused it: ${message}`,
    {
      code: 'invalid_request',
      exitCode: ExitCode.failure,
      hint:
        option === undefined
          ? 'nothing was registered: check --username, --email and --external-id against what the service accepts, then onboard again'
          : `nothing was registered: ${rule}onboard again with a ${option} the service accepts`,
      cause,
    },
  );
}

/**
 * `users recover` of a user the service answers 404 for: it no longer knows that username, email
 * and external id together, so only onboarding registers it again (docs/runbooks.md, "Recover a user").
 */
export function userGoneAtService(externalId: string, detail: string, cause?: unknown): CliError {
  return new CliError(`--user ${externalId}: the service no longer knows this user (${detail})`, {
    code: 'user_not_at_service',
    exitCode: ExitCode.failure,
    hint: `onboard it again: \`acctops users onboard --external-id ${externalId} --username <name> --email <email>\` (\`acctops users list\` shows them)`,
    cause,
  });
}

/** `--user <id>` that the token store holds no record of (never onboarded here). */
export function unknownUser(externalId: string): UnknownNameError {
  return new UnknownNameError(
    '--user',
    externalId,
    'acctops holds no token record for it',
    '`acctops users list` lists the known users; `acctops users onboard` adds one',
  );
}

/**
 * `--company <id>` that the registry does not hold; `withoutKey` when no key secret holds its key
 * either (the commands that act on the key: such a company is known to nothing). `add`: the hint
 * also says how to register it (`keys install` needs that first).
 */
export function unknownCompany(companyId: string, options: { withoutKey?: boolean; add?: boolean } = {}): UnknownNameError {
  return new UnknownNameError(
    '--company',
    companyId,
    options.withoutKey === false ? 'not in the company registry' : 'not in the company registry, and no key secret holds its key',
    `\`acctops companies list\` lists the known companies${options.add ? `; \`acctops companies add --company ${companyId}\` registers a new one` : ''}`,
  );
}

/**
 * A company `companies remove` took out, named by a command that needs its key (`keys rotate`,
 * `keys status --company`, `keys revoke-pending`, `keys install`, `export --company`): said as
 * such, from the registry entry (`removedAt`, `keyDeletion`), with the way back, instead of "no key
 * secret", and also when a key secret is still found (an imported one is kept), since a removed
 * company is not acted on. Exit 3, like an unknown company.
 */
export class CompanyRemovedError extends CliError {
  override readonly name: string = 'CompanyRemovedError';
  readonly companyId: string;

  /**
   * `kept`: a key secret still found for the company. `imported`: not under acctops's name, so not
   * acctops's to delete (the stack imports it, cdk.json `existingSecretArn`): `companies remove`
   * stops its rotation and keeps it.
   */
  constructor(
    company: { companyId: string; removedAt?: string; keyDeletion?: { deletionDate: string } },
    now: number,
    kept?: { secret: string; imported: boolean },
  ) {
    const id = company.companyId;
    const deletion = company.keyDeletion?.deletionDate;
    const gone = deletion !== undefined && Date.parse(deletion) <= now;
    const keptSecret = kept?.secret;
    const key =
      kept !== undefined
        ? kept.imported
          ? `its key secret ${kept.secret} stays, imported by the stack (not acctops's to delete)`
          : `its key secret ${kept.secret} is still there (not scheduled for deletion)`
        : deletion === undefined
          ? 'its key secret is scheduled for deletion (or it had none)'
          : gone
            ? `its key secret was deleted for good on ${deletion}`
            : `its key secret is deleted for good on ${deletion} unless the company is restored`;
    super(`--company ${id}: the company was removed${company.removedAt ? ` on ${company.removedAt}` : ''}; ${key}`, {
      code: 'company_removed',
      exitCode: ExitCode.config,
      hint:
        keptSecret !== undefined
          ? `\`acctops companies restore --company ${id}\` brings it back and turns its key secret's rotation on again`
          : gone
            ? `\`acctops companies restore --company ${id}\` registers it again, then \`acctops keys install --company ${id}\` stores a new key`
            : `\`acctops companies restore --company ${id}\` brings it back with its key secret and rotation, within the recovery window`,
    });
    this.companyId = id;
  }
}

/**
 * A company a command names (`--company`) whose registry entry fails its schema (written past the
 * CLI). The monthly export skips such an entry, so no command acts on the company either, whether or
 * not its key secret is found: what the entry says (removed, its rotation days, its currency) cannot
 * be read. Exit 3 like an unknown or removed company, naming the fields (never their values) and the
 * repair of the mode: local `local repair` sets the entry aside, AWS the runbook deletes the item;
 * then `companies add` registers the company again.
 */
export class CompanyEntryDamagedError extends CliError {
  override readonly name: string = 'CompanyEntryDamagedError';
  readonly companyId: string;
  readonly issues: FieldIssue[];

  constructor(companyId: string, issues: FieldIssue[], mode: 'local' | 'aws') {
    const add = `\`acctops companies add --company ${companyId}\` registers the company again`;
    super(`--company ${companyId}: its company registry entry is damaged (${issuesText(issues)}); nothing was done`, {
      code: 'company_entry_damaged',
      exitCode: ExitCode.config,
      hint:
        mode === 'local'
          ? `\`acctops local repair\` sets the entry aside into a file of its own, then ${add} (README, "Local mode")`
          : `delete the company's item from the table of the stack output CompanyRegistryTableName, then ${add} (docs/runbooks.md, "Add or remove a company")`,
    });
    this.companyId = companyId;
    this.issues = issues;
  }
}

/**
 * The repair of a registry entry that fails its schema, for lines that report it without a company
 * id they could trust (`export` and `companies list` skip it; decision 86): the same steps
 * CompanyEntryDamagedError names, so every command that meets the entry points the same way.
 */
export function damagedEntryRepair(mode: 'local' | 'direct' | 'aws'): string {
  return mode === 'local'
    ? '`acctops local repair` sets the entry aside, then `acctops companies add --company <id>` registers the company again'
    : 'delete the item, then `acctops companies add --company <id>` registers the company again (docs/runbooks.md, "Add or remove a company")';
}

/**
 * How a credential gets into the environment without echo or shell history (README, "Credentials"),
 * the one form every hint gives: `export NAME=<value>` would leave the value in the history.
 */
export function readSecretCommand(name: 'ACCTOPS_API_KEY' | 'ACCTOPS_INSTITUTION'): string {
  return `read -rs ${name} && export ${name}`;
}

/**
 * ACCTOPS_API_KEY is not shaped like a key: the setting is wrong (exit 3), not the service; named,
 * never echoed. Checked where the variable is read, since the client's MalformedApiKeyError cannot
 * tell it from a malformed stored key.
 */
export class MalformedApiKeyEnvError extends CliError {
  override readonly name: string = 'MalformedApiKeyEnvError';
  constructor(cause?: unknown) {
    super('ACCTOPS_API_KEY is not an API key (expected <prefix>_<rest>, printable ASCII); nothing was sent', {
      code: 'api_key_env_malformed',
      exitCode: ExitCode.config,
      hint: `set ACCTOPS_API_KEY to the company's whole key as the service issued it: ${readSecretCommand('ACCTOPS_API_KEY')}`,
      cause,
    });
  }
}

/** The company key from ACCTOPS_API_KEY, refused when it cannot be a key (undefined when unset or blank). */
export function apiKeyFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.ACCTOPS_API_KEY?.trim();
  if (!value) return undefined;
  if (!isWellFormedApiKey(value)) throw new MalformedApiKeyEnvError();
  return value;
}

export interface ErrorReport {
  exitCode: ExitCodeValue;
  code: string;
  message: string;
  /** What to do about it; part of the one line printed. */
  hint?: string;
}

const SAFE_COMMANDER = new Map<string, string>([
  ['commander.unknownCommand', 'run `acctops --help` for the commands'],
  ['commander.unknownOption', 'run the command with --help for its options'],
  ['commander.missingMandatoryOptionValue', 'run the command with --help for its options'],
  ['commander.optionMissingArgument', 'run the command with --help for its options'],
  ['commander.missingArgument', 'run the command with --help for its arguments'],
  ['commander.excessArguments', 'run the command with --help for its arguments'],
  ['commander.invalidArgument', 'run the command with --help for the expected form'],
  ['commander.conflictingOption', 'use one of them'],
]);

/**
 * The start of a word acctops refused, never all of it: an unknown command is as often a value pasted
 * in the wrong place (a key, a token) as a typo. Four characters are less than a key's loggable
 * prefix (`sbx_AbCdEf12…`, keyPrefix), and enough to find the word on the command line.
 */
export function glimpse(word: string): string {
  const chars = [...word];
  return chars.length <= 4 ? word : `${chars.slice(0, 4).join('')}…`;
}

/**
 * A word that cannot be a secret: short, lower-case letters and hyphens only. Keys and tokens carry
 * digits, capitals, underscores or dots, and are longer; such a word is a mistyped command
 * (`exprot`, `advance`), shown whole so that it can be found and fixed.
 */
const PLAIN_WORD = /^[a-z][a-z-]{0,23}$/;

/** An unknown command as it is shown: whole when it cannot be a secret, else its glimpse. */
export function commandWord(word: string): string {
  return PLAIN_WORD.test(word) ? word : glimpse(word);
}

/**
 * How an option is spelt; an unknown option that is not spelt so may be a pasted value. Keys and
 * tokens carry an underscore (`sbx_…`, `tok_…`) or dots (a JWT), which no option name of ours has.
 */
const OPTION_NAME = /^--?[a-z][a-z0-9-]*$/i;
/**
 * A name in snake case (`--api_key`, `--API_KEY`), as people type it from other tools: words of
 * letters only. A key's random part has digits or runs past 32 characters, so it is not taken for
 * one; a word with a digit next to an underscore (`--sbx_AbC1…`) is still shown by its glimpse.
 */
const SNAKE_OPTION_NAME = /^--?[a-z]+(?:[-_][a-z]+)*$/i;

/** An option's name as typed (without `=value`), or its glimpse when it may carry a pasted value. */
export function optionName(flag: string): string {
  const equals = flag.indexOf('=');
  const name = equals < 0 ? flag : flag.slice(0, equals);
  return (OPTION_NAME.test(name) || SNAKE_OPTION_NAME.test(name)) && name.length <= 32 ? name : glimpse(name);
}

function unknownOption(flag: string): string {
  return `unknown option '${optionName(flag)}${flag.includes('=') ? '=…' : ''}'`;
}

/** Commander quotes the values it refuses; a mistyped secret must not come back on the screen. */
export function withoutValues(message: string): string {
  return (
    message
      .replace(/^error: /, '')
      // Commander's quoted word runs to the last quote before its suggestion (or the end), so a quote
      // inside the word does not end it early.
      .replace(/unknown command '([^]*)'(?=\n\(Did you mean|$)/, (_m, word: string) => `unknown command '${commandWord(word)}'`)
      .replace(/unknown option '([^]*)'(?=\n\(Did you mean|$)/, (_m, flag: string) => unknownOption(flag))
      .replace(/ argument '[^]*?' is invalid\./, ' is invalid:')
      .replace(/value '[^]*?' (from env '[^']*' )?is invalid/, 'value is invalid')
      .replace(/'(--?[A-Za-z0-9-]+)=[^']*'/g, "'$1=…'")
      .trim()
  );
}

const AWS_AUTH = new Set([
  'CredentialsProviderError',
  'ExpiredTokenException',
  'ExpiredToken',
  'UnrecognizedClientException',
  'InvalidClientTokenId',
  'AccessDeniedException',
  'AccessDenied',
  'SignatureDoesNotMatch',
]);

/**
 * What the error's hint may assume. `direct`: the service is the one the operator named (`export
 * --base-url`, ACCTOPS_BASE_URL without a stack): `acctops doctor` knows nothing of it, so a hint
 * about the service points at the URL or at the service's owner instead.
 */
export interface DescribeContext {
  direct?: boolean;
}

/** Maps any error to its exit code and one line that says what happened and what to do. */
export function describeError(error: unknown, context: DescribeContext = {}): ErrorReport {
  const report = classify(error, context);
  return { ...report, message: oneLine(report.message), ...(report.hint ? { hint: oneLine(report.hint) } : {}) };
}

function classify(error: unknown, context: DescribeContext): ErrorReport {
  if (error instanceof CommanderError) {
    return {
      exitCode: ExitCode.usage,
      code: 'usage',
      message: withoutValues(error.message),
      hint: SAFE_COMMANDER.get(error.code) ?? 'run `acctops --help`',
    };
  }
  if (error instanceof CliError) return { exitCode: error.exitCode, code: error.code, message: error.message, hint: error.hint };
  if (error instanceof ConfigError) {
    return { exitCode: ExitCode.config, code: error.code, message: error.message, hint: 'fix the named setting (README, "Configuration")' };
  }
  if (error instanceof AccountingApiError && refusesUser(error)) {
    const { exitCode, code, hint } = userDisabled(error.message);
    return { exitCode, code, message: error.message, hint };
  }
  if (error instanceof AuthenticationError || error instanceof PermissionDeniedError) {
    return {
      exitCode: ExitCode.auth,
      code: error.code,
      message: error.message,
      hint:
        error instanceof PermissionDeniedError
          ? 'the credential lacks a permission; use a key or user with it'
          : context.direct
            ? // Direct mode has one credential, the company key, and no stored one for `doctor` to check.
              'check ACCTOPS_API_KEY: the service at --base-url refused it (expired, revoked, or a key of another service or company)'
            : 'check the credential (ACCTOPS_API_KEY, ACCTOPS_INSTITUTION or the stored secret); `acctops doctor` checks the stored ones',
    };
  }
  if (error instanceof CompanyMismatchError) {
    // The service's 403 (or our check before sending): the credential acts for another company.
    return {
      exitCode: ExitCode.auth,
      code: error.code,
      message: error.message,
      hint: context.direct
        ? // Direct mode: the one key is ACCTOPS_API_KEY; `keys status` lists the stored keys, not this one.
          "a company API key acts only for its own company: set ACCTOPS_API_KEY to the key of the company --company names, or leave out --company to export the key's own company"
        : "a company API key acts only for its own company; use that company's key (`acctops keys status` lists them)",
    };
  }
  if (error instanceof AccountingApiError) {
    return { exitCode: ExitCode.failure, code: error.code, message: error.message, hint: serviceHint(error, context) };
  }
  if (error instanceof ExportCountMismatchError) {
    return {
      exitCode: ExitCode.failure,
      code: error.code,
      message: error.message,
      hint: 'the list changed at the service while it was read (items added or removed); this run published nothing for the company: run the export again',
    };
  }
  if (error instanceof CompanyKeyNotFoundError) {
    return {
      exitCode: ExitCode.config,
      code: error.code,
      message: error.message,
      hint:
        error.code === 'company_key_not_found'
          ? `\`acctops keys install --company ${error.companyId}\` stores its key; \`acctops keys status\` lists the companies acctops holds keys for`
          : '`acctops keys status` lists the companies acctops holds keys for',
    };
  }
  if (error instanceof TokenNotFoundError) {
    return {
      exitCode: ExitCode.failure,
      code: error.code,
      message: error.message,
      hint: '`acctops users list` shows the users acctops holds',
    };
  }
  if (error instanceof TokenBusyError) return { exitCode: ExitCode.failure, code: error.code, message: error.message };
  if (error instanceof UserRevokedError) {
    // The use case's message names its `reactivate` input; the flag is the hint's.
    return {
      exitCode: ExitCode.failure,
      code: error.code,
      message: `user ${error.externalId} is revoked`,
      hint: 'a revoked user comes back only on purpose: add --reactivate',
    };
  }
  if (error instanceof OnboardConflictError) {
    return {
      exitCode: ExitCode.failure,
      code: error.code,
      message: error.message,
      hint: 'check the username, email and external id against the service',
    };
  }
  if (error instanceof AcctopsError && /previous rotation isn't complete/i.test(error.message)) {
    return {
      exitCode: ExitCode.failure,
      code: error.code,
      message: error.message,
      hint: 'a rotation is still pending on this secret: see docs/runbooks.md, "A rotation stuck in AWSPENDING"',
    };
  }
  if (error instanceof SecretNotFoundError) {
    return {
      exitCode: ExitCode.config,
      code: error.code,
      message: error.message,
      hint: 'create the secret or name the right one (docs/runbooks.md)',
    };
  }
  if (error instanceof ValidationError) {
    return { exitCode: ExitCode.failure, code: error.code, message: error.message, hint: validationHint(error) };
  }
  // The AWS adapters' errors, known by code so that a local command does not load the AWS SDK clients.
  if (error instanceof AcctopsError && error.code === 'aws_region_missing') {
    return {
      exitCode: ExitCode.config,
      code: error.code,
      message: error.message,
      hint: 'pass --region, set AWS_REGION, or give the profile a region',
    };
  }
  if (error instanceof AcctopsError && error.code === 'aws_region_malformed') {
    return {
      exitCode: ExitCode.config,
      code: error.code,
      message: error.message,
      hint: 'fix the region in the AWS profile (aws configure get region), or pass --region',
    };
  }
  if (error instanceof AcctopsError && error.code === 'aws_credentials_missing') {
    return {
      exitCode: ExitCode.auth,
      code: error.code,
      message: error.message,
      hint: 'sign in (`aws sso login`, AWS_PROFILE) and check with `aws sts get-caller-identity`',
    };
  }
  const awsAuth = causes(error).find((e) => AWS_AUTH.has(e.name));
  if (awsAuth) {
    return {
      exitCode: ExitCode.auth,
      code: awsAuth.name,
      message: error instanceof AcctopsError ? error.message : `AWS refused the request: ${awsAuth.message}`,
      hint: 'check the AWS credentials (AWS_PROFILE, `aws sts get-caller-identity`) and their permissions',
    };
  }
  // The AWS adapters' errors, known by code so that a local command does not load the AWS SDK clients.
  if (error instanceof AcctopsError && (error.code === 'stack_not_found' || error.code === 'stack_lookup_failed')) {
    const stackName = (error as AcctopsError & { stackName?: string }).stackName ?? '<stack>';
    // CloudFormation out of reach says nothing about the stack's name: the network is what to check.
    const socket = causes(error).find(isSocketError);
    if (socket)
      return {
        exitCode: ExitCode.failure,
        code: 'connection_failed',
        message: `could not describe stack ${stackName}: a connection failed (${socket.syscall}): ${socketCauseText(socket)}`,
        hint: 'check the network, the AWS region and any AWS_ENDPOINT_URL* setting, then run the command again',
      };
    return {
      exitCode: error.code === 'stack_not_found' ? ExitCode.config : ExitCode.failure,
      code: error.code,
      message: error.message,
      hint: `check --stack and --region (aws cloudformation describe-stacks --stack-name ${stackName}), or name the outputs with --output`,
    };
  }
  if (error instanceof AcctopsError && error.code === 'function_failed') {
    const { functionName = '<function>', logGroup } = error as AcctopsError & { functionName?: string; logGroup?: string };
    return { exitCode: ExitCode.failure, code: error.code, message: error.message, hint: functionLogsHint(functionName, logGroup) };
  }
  if (error instanceof AcctopsError) return { exitCode: ExitCode.failure, code: error.code, message: error.message };
  if (error instanceof Error && AWS_AUTH.has(error.name)) {
    return {
      exitCode: ExitCode.auth,
      code: error.name,
      message: `AWS refused the request: ${error.message}`,
      hint: 'check the AWS credentials (AWS_PROFILE, `aws sts get-caller-identity`) and their permissions',
    };
  }
  if (isSocketError(error)) {
    // An AWS endpoint (or another peer) the process could not reach: the service's own connection
    // errors are the client's ConnectionError, described above.
    return {
      exitCode: ExitCode.failure,
      code: 'connection_failed',
      message: `a connection failed (${error.syscall}): ${socketCauseText(error)}`,
      hint: 'check the network, the AWS region and any AWS_ENDPOINT_URL* setting, then run the command again',
    };
  }
  if (isFsError(error)) {
    // One a command did not foresee (a full disk under a state file written as it changes): still
    // the path and the cause in words, not Node's message with the path twice.
    const where = typeof error.path === 'string' ? ` on ${shortPath(error.path)}` : '';
    return {
      exitCode: ExitCode.failure,
      code: 'file_system',
      message: `a file operation (${error.syscall})${where} failed: ${fsCauseText(error)}`,
      hint: 'fix the cause, then run acctops doctor to see what the command left',
    };
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { exitCode: ExitCode.failure, code: 'unexpected', message, hint: 'run again with --verbose for the log lines' };
}

/** Methods that change nothing at the service: whatever became of one, repeating it is safe. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * What to do about a failed request to the service. Only a request that changes something (POST,
 * PUT, PATCH, DELETE) and may have reached the service can have half-happened and needs checking
 * before a repeat; a read that failed changed nothing. The method is the first word of the error's
 * `request` (`GET /api/v1/accounting/transactions/…`); without one the error is taken at its word.
 */
function serviceHint(error: AccountingApiError, context: DescribeContext): string {
  const method = error.request?.split(' ', 1)[0];
  if (error.ambiguous && !(method !== undefined && READ_METHODS.has(method))) {
    return 'the service may have acted; check with a read command before repeating';
  }
  if (error instanceof RateLimitError) return rateLimitHint(error, context);
  if (error instanceof PaginationError) {
    if (error.reason === 'foreign_next') {
      return "the service's `next` link leaves the base URL's path, or carries a user name: if that is the service under another path (a proxy's prefix), use that address as the base URL; otherwise report it to the service's owner";
    }
    return "the service's `next` links are wrong (acctops stopped rather than read a page twice or forever); nothing here can fix that: report it to the service's owner with the request id";
  }
  if (error instanceof ResponseValidationError) {
    return "the service sent a response acctops cannot read (the field it names); run again later, and if it persists report it to the service's owner with the request id";
  }
  if (error instanceof ConnectionError && error.cause instanceof TransportFailure && certificateRefused(error.cause)) {
    // Not the URL: the host answered, in TLS, with a certificate this process does not accept.
    return "the service's TLS certificate was refused (the code says why): if it is the service's own certificate, its owner must renew or fix it; if your organisation's CA issued it, run acctops with NODE_EXTRA_CA_CERTS set to that CA's PEM file";
  }
  if (error instanceof ConnectionError && !error.ambiguous) {
    return context.direct
      ? 'check the host, the port and the scheme (http or https) of --base-url or ACCTOPS_BASE_URL, and that the service is up there'
      : 'check that the service is up at that address (`acctops doctor`)';
  }
  if (error instanceof ApiValidationError && /[?&](page_size|pageSize)=/.test(error.request ?? '')) {
    // Spec §8: the maximum page size is "configured"; a service set below ours refuses every export the same way.
    return "the service refused a request that carried a page size (its configured maximum may be lower): export again with --page-size set to the service's maximum (the deployed pipeline: the stage's exports.pageSize)";
  }
  if (!context.direct) return 'check the service (`acctops doctor`) and try again';
  if (error instanceof NotFoundError) {
    return "check the base URL (the service's address, ending in /api/v1) and --company, if given";
  }
  // acctops follows no redirect (it would carry the credential along): the base URL must be the one the service answers at.
  if (error.status !== undefined && error.status >= 300 && error.status < 400) {
    return 'the service redirects elsewhere (http to https, another host?): use the address it answers at as the base URL';
  }
  // A request that got no answer (a timeout, a lost connection) has no request id to give.
  if (error.requestId === undefined) {
    const attempts = (retryRecordOf(error)?.retries ?? 0) + 1;
    const lead =
      error instanceof TimeoutError ? `the service did not answer in time${attempts > 1 ? ` (${attempts} attempts)` : ''}: ` : '';
    const why =
      error instanceof TimeoutError || error instanceof ConnectionError
        ? 'no answer came, so there is no request id'
        : 'the service sent no request id';
    return `${lead}run the export again later; if it persists, tell the service's owner when it happened and which request (${why})`;
  }
  return "run the export again later; if it persists, give the service's owner the request id";
}

/**
 * What the client did about a 429 (retryRecordOf), said as it happened: how many retries, or that
 * none was made because the wait the service asked for was beyond the cap or the time budget.
 */
function rateLimitHint(error: RateLimitError, context: DescribeContext): string {
  const seconds = (ms: number | undefined) => (ms === undefined ? undefined : Math.max(1, Math.ceil(ms / 1000)));
  const asked = seconds(error.retryAfterMs);
  const askedText = asked === undefined ? '' : ` (its last Retry-After asked for ${asked} s)`;
  const record = retryRecordOf(error);
  if (record?.gaveUp === 'retry_after_cap') {
    // The cap as it was set (`--max-retry-wait 0s` is 0 s), not rounded up to the second the asked
    // wait is: "asked 1 s, more than allows (1 s)" contradicted itself.
    const cap = (record.maxRetryAfterMs ?? 0) / 1000;
    const flag = context.direct ? '--max-retry-wait' : "the client's longest wait";
    const retried = record.retries > 0 ? `after ${record.retries} ${record.retries === 1 ? 'retry' : 'retries'}, ` : '';
    const rerun = asked === undefined ? 'run again later' : `run again with --max-retry-wait ${durationText(asked)} or more, or later`;
    return `${retried}no further retry was made: the service asked to wait ${asked ?? '?'} s, more than ${flag} allows (${cap} s); ${context.direct ? rerun : 'run again later'}`;
  }
  if (record !== undefined && record.retries === 0) {
    return `no retry was made: the wait the service asked for${asked === undefined ? '' : ` (${asked} s)`} did not fit in acctops's time budget; run again later; if it persists, ask the service's owner about the rate limit`;
  }
  const after = record === undefined ? '' : ` after ${record.retries} ${record.retries === 1 ? 'retry' : 'retries'} by acctops`;
  return `the service still limited the rate${after}: run again later${askedText}; if it persists, ask the service's owner about the rate limit`;
}

/**
 * The smallest `--max-retry-wait` that allows `seconds`, in the largest unit that spells it
 * exactly (cli/args.ts `duration`): 600 s is `10m`, 61 s `61s`.
 */
function durationText(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/** The options a command's input is read from, by the field a use case names. */
const INPUT_OPTIONS: Record<string, { command: string; options: Record<string, string> }> = {
  'onboard input': { command: 'users onboard', options: { externalId: '--external-id', username: '--username', email: '--email' } },
  'companies add': { command: 'companies add', options: { companyId: '--company', formats: '--formats', rotationDays: '--rotation-days' } },
  'company id': { command: 'companies', options: { '': '--company' } },
  'direct export': { command: 'export', options: { companyId: '--company' } },
};

/**
 * What to do about a malformed value depends on where it was read: a command's argument is fixed on
 * the command line, a stored secret in the secret store, a service's record in how it is mapped.
 * Arguments are mostly refused by cli/args.ts first; these are what a use case's own check finds.
 */
export function validationHint(error: ValidationError): string {
  const input = INPUT_OPTIONS[error.source];
  if (input) {
    const option = input.options[error.field] ?? 'the arguments';
    return `check ${option}: \`acctops ${input.command} --help\` shows the accepted form`;
  }
  if (error.source === 'institution credential secret') {
    return 'store a well-formed one with `acctops institution set-secret` (docs/runbooks.md, "Change the institution secret"), or go back with --rollback';
  }
  if (error.source === 'company API key secret') {
    return 'store the company\'s key again with `acctops keys install --company <id>` (docs/runbooks.md, "Install a company API key")';
  }
  if (error.issues.some(isBeyondParquet)) {
    return 'Parquet cannot hold this amount; CSV and JSONL can: export this company and month with --format csv,jsonl (docs/exports.md, "Parquet")';
  }
  if (error.source.startsWith('tax report ')) {
    return "the service's tax report has no readable value there: check --tax-report-fields (AWS mode: the stage's exports.taxReportFields) against the service's field names (docs/exports.md, \"Tax reports of a period\")";
  }
  return `the ${error.source} is not an argument of this command: run again with --verbose to see where it was read; \`acctops doctor\` checks the stores`;
}

/**
 * Where a deployed function's failure is explained: its log group when known (FunctionInvocationError
 * reads it from the function's configuration), else how to find it.
 */
export function functionLogsHint(functionName: string, logGroup: string | undefined): string {
  return logGroup === undefined
    ? `its log group: aws lambda get-function-configuration --function-name ${functionName} --query LoggingConfig.LogGroup`
    : `see its logs: aws logs tail ${logGroup} --since 1h`;
}

/** The error and its causes, outermost first (the SDK's own error is usually a cause of ours). */
function causes(error: unknown): Error[] {
  const out: Error[] = [];
  for (let e: unknown = error; e instanceof Error && out.length < 10; e = e.cause) out.push(e);
  return out;
}

function oneLine(text: string): string {
  return redactString(text)
    .replace(/\s*\n\s*/g, ' ')
    .trim();
}
