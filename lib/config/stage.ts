import * as z from 'zod';
import { CURRENCY_CODE_EXPECTED, isoCurrencyCode } from '../../contract/currency';
import { taxReportFieldNameIssues, type TaxReportFieldNames } from '../../contract/exports';
import { BASE_URL_PROBLEMS, baseUrlProblem, isTimeZone, TIME_ZONE_EXPECTED } from '../../contract/setting-rules';
import { cronExpressionIssue } from './cron-expression';

/**
 * Typed stage settings. `cdk.json` holds one entry per stage under the context key `stages`; the
 * context key `stage` picks one (`npx cdk deploy -c stage=production`). Everything is validated
 * here, at synth, so that a typo fails before CloudFormation sees it, with the field's path.
 *
 * This module imports neither aws-cdk-lib nor src/: the CLI can read a stage's settings without
 * loading CDK, and lib stays independent of the domain code (docs/architecture.md, decision 4).
 */

/** Retention periods CloudWatch Logs accepts, in days (PutRetentionPolicy). */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;
export type LogRetentionDays = (typeof LOG_RETENTION_DAYS)[number];

const RATE = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/;

/** An EventBridge Scheduler `rate(...)` expression; AWS wants `rate(1 hour)` but `rate(2 hours)`. */
const rateExpression = z.string().refine((value) => {
  const match = RATE.exec(value);
  if (!match) return false;
  const amount = Number(match[1]);
  return amount >= 1 && (amount === 1) === !match[2]!.endsWith('s');
}, 'expected rate(<n> <unit>), e.g. rate(5 minutes) or rate(1 hour)');
/** An EventBridge Scheduler `cron(...)` expression, each field checked (cron-expression.ts). */
const cronExpression = z.string().check((ctx) => {
  const issue = cronExpressionIssue(ctx.value);
  if (issue !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: issue });
});
// Not a union: a union reports only "no alternative fits", and a cron(...) with one bad field
// deserves that field's message.
const scheduleExpression = z.string().check((ctx) => {
  const issue = ctx.value.startsWith('rate(')
    ? rateExpression.safeParse(ctx.value).error?.issues[0]?.message
    : ctx.value.startsWith('cron(')
      ? cronExpressionIssue(ctx.value)
      : 'expected rate(...) or cron(...)';
  if (issue !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: issue });
});

// The functions' EXPORT_TIME_ZONE is held to the same rule at cold start (contract/setting-rules.ts).
const timeZone = z.string().refine(isTimeZone, TIME_ZONE_EXPECTED);

/** The base URL's problems as the synth words them: user info would also land in the template. */
const STAGE_BASE_URL_PROBLEMS = {
  ...BASE_URL_PROBLEMS,
  user_info:
    "must not carry user info (user:password@ before the host): every function's client refuses it, and it would be written in clear into the template (ServiceBaseUrl, each function's environment)",
};

const PARTITION = 'aws(?:-[a-z]+)*';
const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;
const ACCOUNT = /^\d{12}$/;

/**
 * A complete secret ARN, `arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<6 characters>`:
 * Secrets Manager appends a hyphen and six random characters to the name (CreateSecret's `ARN`),
 * and CDK's Secret.fromSecretCompleteArn refuses an ARN without them (with a stack trace that names
 * no field). Name characters: the ones CreateSecret allows (letters, digits, /_+=.@-).
 */
const SECRET_ARN = new RegExp(`^arn:(${PARTITION}):secretsmanager:([^:]+):([^:]+):secret:([A-Za-z0-9/_+=.@-]+)-([A-Za-z0-9]{6})$`);
const SECRET_ARN_SHAPE = 'arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<6 characters>';

/** The account and region of a complete secret ARN (validated by `secretArn`). */
export function secretArnParts(arn: string): { partition: string; region: string; account: string } | undefined {
  const match = SECRET_ARN.exec(arn);
  return match ? { partition: match[1]!, region: match[2]!, account: match[3]! } : undefined;
}

/** What is wrong with a secret ARN, in words an operator can act on; undefined when complete. */
function secretArnIssue(value: string): string | undefined {
  const parts = value.split(':');
  if (parts[0] !== 'arn' || parts.length < 6 || !new RegExp(`^${PARTITION}$`).test(parts[1]!)) {
    return `expected a complete secret ARN, ${SECRET_ARN_SHAPE}`;
  }
  if (parts[2] !== 'secretsmanager')
    return `expected a Secrets Manager ARN (service secretsmanager), not ${parts[2] || 'an empty service'}`;
  if (!REGION.test(parts[3]!)) return 'expected a region like eu-central-1 after secretsmanager:';
  if (!ACCOUNT.test(parts[4]!)) return 'expected a 12-digit account id after the region';
  if (parts[5] !== 'secret' || parts.length < 7) return `expected secret:<name>-<6 characters> after the account id, ${SECRET_ARN_SHAPE}`;
  // A partial ARN whose name ends in a hyphen and 6 letters or digits (`my-secret`) passes: AWS
  // reads such an ARN as complete too, and recommends against such names.
  if (SECRET_ARN.test(value)) return undefined;
  if (/^[A-Za-z0-9/_+=.@-]+$/.test(parts.slice(6).join(':'))) {
    return (
      'a partial ARN: the hyphen and 6 characters Secrets Manager appends to the name are missing; ' +
      'copy the whole ARN (aws secretsmanager describe-secret --secret-id <name> --query ARN)'
    );
  }
  return 'the secret name may hold only letters, digits and /_+=.@-';
}

const secretArn = z.string().check((ctx) => {
  const issue = secretArnIssue(ctx.value);
  if (issue !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: issue });
});

/** An SNS topic ARN, `arn:<partition>:sns:<region>:<account>:<topic name>` (names: letters, digits, - and _, .fifo). */
const SNS_TOPIC_ARN = new RegExp(`^arn:(${PARTITION}):sns:([a-z]{2}(?:-[a-z]+)+-\\d):(\\d{12}):[A-Za-z0-9_-]{1,256}(\\.fifo)?$`);
const snsTopicArn = z.string().regex(SNS_TOPIC_ARN, 'expected an SNS topic ARN, arn:<partition>:sns:<region>:<account>:<topic name>');

/**
 * A KMS key ARN, `arn:<partition>:kms:<region>:<account>:key/<key id>`: a key id is a UUID, or
 * `mrk-` and 32 hex digits for a multi-Region key. Only the key's own ARN will do: IAM grants
 * name the key by it (an alias ARN in a policy's Resource authorizes nothing), and a bare key id or
 * alias would be resolved in whichever account deploys.
 */
const KMS_KEY_ARN = new RegExp(
  `^arn:(${PARTITION}):kms:([a-z]{2}(?:-[a-z]+)+-\\d):(\\d{12}):key/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$`,
);
const KMS_KEY_ARN_SHAPE = 'arn:<partition>:kms:<region>:<account>:key/<key id>';

/** The account and region of a KMS key ARN (validated by `kmsKeyArn`). */
export function kmsKeyArnParts(arn: string): { partition: string; region: string; account: string } | undefined {
  const match = KMS_KEY_ARN.exec(arn);
  return match ? { partition: match[1]!, region: match[2]!, account: match[3]! } : undefined;
}

/** What is wrong with a KMS key ARN, in words an operator can act on; undefined when it is one. */
function kmsKeyArnIssue(value: string): string | undefined {
  if (KMS_KEY_ARN.test(value)) return undefined;
  const parts = value.split(':');
  if (parts[0] !== 'arn' || parts.length < 6 || !new RegExp(`^${PARTITION}$`).test(parts[1]!)) {
    return `expected a KMS key ARN, ${KMS_KEY_ARN_SHAPE} (a key id or alias alone would be looked up in the deploying account)`;
  }
  if (parts[2] !== 'kms') return `expected a KMS key ARN (service kms), not ${parts[2] || 'an empty service'}`;
  if (!REGION.test(parts[3]!)) return 'expected a region like eu-central-1 after kms:';
  if (!ACCOUNT.test(parts[4]!)) return 'expected a 12-digit account id after the region';
  const resource = parts.slice(5).join(':');
  if (resource.startsWith('alias/')) {
    return (
      "an alias ARN: IAM grants name a key by the key's own ARN; " +
      'copy it with aws kms describe-key --key-id <alias ARN> --query KeyMetadata.Arn'
    );
  }
  return `expected key/<key id> after the account id (a UUID, or mrk-<32 hex digits> for a multi-Region key), ${KMS_KEY_ARN_SHAPE}`;
}

const kmsKeyArn = z.string().check((ctx) => {
  const issue = kmsKeyArnIssue(ctx.value);
  if (issue !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: issue });
});

/**
 * What `existingSecretKmsKeyArn` says of a secret under the AWS managed key: that key needs no
 * grant, and saying so silences the synth warning an imported secret without a key gets
 * (lib/constructs/stage-checks.ts). Its name as Secrets Manager's console and docs write it.
 */
export const AWS_MANAGED_SECRETS_KEY = 'aws/secretsmanager';

/** A key ARN, or `aws/secretsmanager` for the AWS managed key (which has no ARN to grant on). */
const secretKmsKey = z.string().check((ctx) => {
  if (ctx.value === AWS_MANAGED_SECRETS_KEY) return;
  const issue = kmsKeyArnIssue(ctx.value);
  if (issue !== undefined) {
    ctx.issues.push({
      code: 'custom',
      input: ctx.value,
      message: `${issue}; or '${AWS_MANAGED_SECRETS_KEY}' for a secret under the AWS managed key`,
    });
  }
});

/** A path relative to `baseUrl`, with the trailing slash the service's paths keep. */
const apiPath = z.string().regex(/^\/[A-Za-z0-9_\-/{}]*\/$/, 'expected a path like /api-keys/');

const schedulesSchema = z.strictObject({
  /**
   * When the token refresh planner runs.
   * @default 'rate(5 minutes)'
   */
  tokenRefresh: scheduleExpression.default('rate(5 minutes)'),
  /**
   * When the monthly export runs, read in `timeZone`; it exports the previous month.
   * @default 'cron(0 3 1 * ? *)' (03:00 on the 1st)
   */
  monthlyExport: cronExpression.default('cron(0 3 1 * ? *)'),
  /**
   * Time zone of the cron schedules and of the export's month boundaries.
   * @default 'Europe/Berlin'
   */
  timeZone: timeZone.default('Europe/Berlin'),
});

const companySchema = z.strictObject({
  /** The company's `publicId` at the service. */
  companyId: z.guid(),
  /**
   * An existing Secrets Manager secret holding this company's API key, imported instead of created.
   * @default - the stack creates the company's secret
   */
  existingSecretArn: secretArn.optional(),
  /**
   * The customer-managed KMS key (its key ARN) that encrypts the secret `existingSecretArn` names,
   * in that secret's region (Secrets Manager encrypts only with a key of its own region); it may
   * belong to another account. Every function that reads or writes company keys gets that key's
   * actions through Secrets Manager, for that secret only. Only with `existingSecretArn`: the stack
   * encrypts the secrets it creates itself. `aws secretsmanager describe-secret --secret-id <ARN>
   * --query KmsKeyId` names it (nothing: the AWS managed key). `'aws/secretsmanager'` says the
   * secret is under the AWS managed key: no grant, and no synth warning.
   * @default - no KMS grant (right for the AWS managed key aws/secretsmanager only), and a synth
   * warning that a customer-managed key must be named here
   */
  existingSecretKmsKeyArn: secretKmsKey.optional(),
  /**
   * ISO 4217 code of the transactions the company's service sends without a currency, upper-cased
   * (`gbp` is GBP) and written into the company's registry entry when the stack seeds it. Seeding
   * happens once, on the deploy that first sees the company: a change here later does nothing.
   * `acctops companies add --company <id> --default-currency <code>` changes it (docs/fleet.md).
   * @default - none: EUR, unless `acctops companies add --default-currency` sets one
   */
  defaultCurrency: z
    .string()
    // The rule of `companies add --default-currency`: what synthesizes, the registry would accept.
    .transform((value, ctx) => {
      const code = isoCurrencyCode(value);
      if (code === undefined) ctx.addIssue({ code: 'custom', message: CURRENCY_CODE_EXPECTED });
      return code ?? z.NEVER;
    })
    .optional(),
});

const apiKeysSchema = z
  .strictObject({
    /**
     * Days between automatic rotations of each company's API key.
     * @default 30
     */
    rotationDays: z.number().int().min(1).max(365).default(30),
    /**
     * Minutes the old key keeps working after a rotation is promoted; it must outlast every
     * consumer's cache of the secret (`secretCacheTtlSeconds`).
     * @default 30
     */
    revocationGraceMinutes: z
      .number()
      .int()
      .min(1)
      .max(24 * 60)
      .default(30),
    /**
     * Overrides of the API-key management paths, whose defaults are in docs/assumptions.md.
     * `revoke` must contain `{publicId}`.
     * @default - the client's defaults
     */
    paths: z
      .strictObject({
        list: apiPath.optional(),
        create: apiPath.optional(),
        revoke: apiPath.refine((p) => p.includes('{publicId}'), 'must contain {publicId}').optional(),
      })
      .optional(),
  })
  .prefault({});

// Not 0 for "none": Lambda reads a reservation of 0 as "throttle every invocation".
const WEBHOOK_CONCURRENCY_EXPECTED =
  'expected an integer of at least 1, or null for no reservation (a reservation of 0 would make Lambda refuse every request)';

/** Export settings of the stage (docs/fleet-exports.md). */
const exportsSchema = z
  .strictObject({
    /**
     * A company-month with more transactions than this is exported in parts (by date range) of at
     * most this many, in parallel by the export workers, with one manifest. 500,000 is about half
     * of what one 15-minute worker invocation holds at the service's slowest documented pace
     * (1,000 a page, up to 1 s a page: BENCHMARKS.md, "Exports at fleet scale").
     * @default 500000
     */
    maxTransactionsPerPart: z.number().int().min(1000).max(10_000_000).default(500_000),
    /**
     * Records per page the export asks of the service: its configured maximum where that is below
     * 1,000 (spec §8). A refused size is retried once without one, with a warning naming this setting.
     * @default - 1000 (EXPORT_PAGE_SIZE)
     */
    pageSize: z.number().int().min(1).max(1000).optional(),
    /**
     * Whether the service's `date_to` includes its day (spec §4.2 does not say): `detect` probes once
     * per export; `exclusive` reads each range's last day on its own (docs/exports.md, "The last day of a range").
     * @default - detect
     */
    dateTo: z.enum(['detect', 'inclusive', 'exclusive']).optional(),
    /**
     * Concurrent executions reserved for (and capping) the export webhook, whose Function URL any
     * caller reaches: its floods then throttle it, not the account's other functions. `null`
     * reserves none (the webhook then shares the account's pool, uncapped). Lambda refuses a
     * reservation that leaves the account fewer than 100 unreserved executions, so an account
     * whose concurrency quota is low (new accounts: 10) needs `null` or a raised quota
     * (docs/infrastructure.md, "Stage configuration"; runbook "A deploy fails on the webhook's
     * reserved concurrency").
     * @default 10
     */
    webhookReservedConcurrency: z
      .number()
      .int()
      .check((ctx) => {
        if (ctx.value < 1) ctx.issues.push({ code: 'custom', input: ctx.value, message: WEBHOOK_CONCURRENCY_EXPECTED });
      })
      .nullable()
      .default(10),
    /**
     * The service's names of our tax-report fields where it spells them otherwise, e.g.
     * `{ "periodEnd": "endDate", "periodStart": "startDate", "createdAt": "created" }`: the spec names
     * only `pk`, and a report whose period the export cannot read is kept in every month
     * (docs/exports.md, "Tax reports of a period"). Keys: type, periodStart, periodEnd, status,
     * amountDue, currency, createdAt.
     * @default {} (our sandbox's names: periodStart, periodEnd, createdAt, …)
     */
    taxReportFields: z
      .unknown()
      .default({})
      // The worker's environment schema runs the same check: what synthesizes also starts.
      .transform((value, ctx): TaxReportFieldNames => {
        for (const { field, message } of taxReportFieldNameIssues(value))
          ctx.addIssue({ code: 'custom', path: field ? [field] : [], message });
        return value as TaxReportFieldNames;
      }),
  })
  .prefault({});

export const stageSettingsSchema = z
  .strictObject({
    /** The service's base URL, `/api/v1` included (docs/assumptions.md, Transport). */
    baseUrl: z
      .url({
        protocol: /^https$/,
        // A missing field is `required` (parseStageSettings), not a wrong one.
        error: (issue) => (issue.input === undefined ? undefined : 'expected an https URL'),
        abort: true,
      })
      // The URL lands in every function's environment and in the ServiceBaseUrl output, and the
      // client refuses user info, a query and a fragment (client.ts, parseBaseUrl): fail the
      // synth, not every function at run time. The functions' ACCTOPS_BASE_URL is held to the same
      // rule at cold start (contract/setting-rules.ts). No message quotes the URL: it may hold a password.
      .superRefine((u, ctx) => {
        const problem = baseUrlProblem(u, { schemes: ['https'] });
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: STAGE_BASE_URL_PROBLEMS[problem] });
      })
      .transform((u) => u.replace(/\/+$/, '')),
    /**
     * AWS account to deploy to; with `region`, makes the stack environment-specific.
     * @default - environment-agnostic (the CLI's credentials decide)
     */
    account: z
      .string()
      .regex(/^\d{12}$/, 'expected a 12-digit account id')
      .optional(),
    /**
     * AWS region to deploy to.
     * @default - environment-agnostic
     */
    region: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'expected a region like eu-central-1')
      .optional(),
    /**
     * Keep data (secrets, keys, log groups) when the stack is deleted. Turn off only for
     * throw-away stages.
     * @default true
     */
    retainData: z.boolean().default(true),
    /**
     * Application log level of every function.
     * @default 'info'
     */
    logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
    /**
     * Days each function's log group keeps its events.
     * @default 30
     */
    logRetentionDays: z
      .number()
      .refine((d) => (LOG_RETENTION_DAYS as readonly number[]).includes(d), {
        error: `expected one of ${LOG_RETENTION_DAYS.join(', ')}`,
      })
      .default(30)
      .transform((d) => d as LogRetentionDays),
    /**
     * How long functions cache a secret's value before reading it again.
     * @default 300
     */
    secretCacheTtlSeconds: z.number().int().min(0).max(3600).default(300),
    /**
     * Lifetime of a user's access token when the service states none (no JWT `exp`, no expiry
     * field in the reply; docs/tokens.md, "Expiry and due"): the spec's "usually 30 minutes".
     * Set it to the service's real lifetime when its tokens are opaque and live shorter.
     * @default 1800
     */
    accessTokenLifetimeSeconds: z.number().int().min(60).max(86_400).default(1800),
    /**
     * E-mail addresses subscribed to the alarm topic (each confirms by mail).
     * @default []
     */
    alarmEmails: z.array(z.email()).default([]),
    /**
     * An existing SNS topic, such as an organisation-wide ops topic, that every alarm also notifies,
     * when it fires and when it clears, next to the stack's own topic. It must be in the stage's
     * region, and its topic policy (and its KMS key's policy, if encrypted) must let
     * cloudwatch.amazonaws.com publish from this account (docs/monitoring.md, "Notifications").
     * @default - only the stack's own topic
     */
    opsTopicArn: snsTopicArn.optional(),
    /**
     * An existing customer-managed KMS key (its key ARN) that encrypts everything the stack would
     * otherwise encrypt with keys of its own: the secrets, the DynamoDB tables, the SQS queues, the
     * exports bucket and the alarm topic. The stack then creates no key and cannot change this one's
     * policy: its owner must allow what docs/infrastructure.md, "Bring your own key", lists. A
     * symmetric encryption key of the stage's region; it may belong to another account.
     * @default - the stack creates its own keys, one per purpose (docs/infrastructure.md, "Encryption keys")
     */
    kmsKeyArn: kmsKeyArn.optional(),
    schedules: schedulesSchema.prefault({}),
    /**
     * Companies whose API keys acctops holds and rotates.
     * @default []
     */
    companies: z
      .array(companySchema)
      .default([])
      .refine((list) => new Set(list.map((c) => c.companyId.toLowerCase())).size === list.length, {
        error: 'each companyId may appear only once',
      }),
    apiKeys: apiKeysSchema,
    exports: exportsSchema,
  })
  .refine((s) => (s.account === undefined) === (s.region === undefined), {
    error: 'set account and region together, or neither',
    path: ['account'],
  })
  .superRefine((s, ctx) => {
    // Rotation of an imported secret needs it in the stack's account and region: Secrets Manager
    // invokes the rotation function in its own region, the function's permission names this account
    // (SourceAccount), and the stack's secrets key cannot encrypt another account's secret. Without
    // a pinned environment, lib/constructs/stage-checks.ts warns at synth instead.
    const imported = s.companies.flatMap((c, i) => {
      const parts = c.existingSecretArn === undefined ? undefined : secretArnParts(c.existingSecretArn);
      return parts ? [{ i, ...parts }] : [];
    });
    const target = s.account !== undefined && s.region !== undefined ? { account: s.account, region: s.region } : imported[0];
    for (const { i, account, region } of imported) {
      if (target === undefined || (account === target.account && region === target.region)) continue;
      ctx.addIssue({
        code: 'custom',
        path: ['companies', i, 'existingSecretArn'],
        message:
          s.account !== undefined
            ? `is in account ${account}, region ${region}; the stage deploys to account ${target.account}, region ${target.region}, and rotation works only on a secret of the stack's own account and region`
            : `is in account ${account}, region ${region}, another than companies[${imported[0]!.i}].existingSecretArn (${target.account}, ${target.region}): one stack rotates secrets of its own account and region only`,
      });
    }
    s.companies.forEach((c, i) => {
      if (c.existingSecretKmsKeyArn === undefined) return;
      const path = ['companies', i, 'existingSecretKmsKeyArn'];
      if (c.existingSecretArn === undefined) {
        ctx.addIssue({
          code: 'custom',
          path,
          message:
            'is set without existingSecretArn: it names the key of an imported secret; the stack encrypts the secrets it creates with its own key (or kmsKeyArn)',
        });
        return;
      }
      const secretParts = secretArnParts(c.existingSecretArn);
      const keyParts = kmsKeyArnParts(c.existingSecretKmsKeyArn);
      if (secretParts === undefined || keyParts === undefined) return;
      if (keyParts.partition !== secretParts.partition || keyParts.region !== secretParts.region) {
        ctx.addIssue({
          code: 'custom',
          path,
          message: `is in ${keyParts.partition} region ${keyParts.region}; the secret (existingSecretArn) is in ${secretParts.partition} region ${secretParts.region}, and Secrets Manager encrypts a secret only with a key of its own region`,
        });
      }
    });
    // Every service that encrypts with the key calls KMS in its own region.
    const key = s.kmsKeyArn === undefined ? undefined : kmsKeyArnParts(s.kmsKeyArn);
    if (key !== undefined && s.region !== undefined && key.region !== s.region) {
      ctx.addIssue({
        code: 'custom',
        path: ['kmsKeyArn'],
        message: `is in region ${key.region}; the stage deploys to ${s.region}, and Secrets Manager, DynamoDB, SQS, S3 and SNS encrypt only with a key of their own region`,
      });
    }
    if (s.opsTopicArn !== undefined && s.region !== undefined) {
      const topicRegion = s.opsTopicArn.split(':')[3];
      if (topicRegion !== s.region) {
        ctx.addIssue({
          code: 'custom',
          path: ['opsTopicArn'],
          message: `is in region ${topicRegion}; the stage deploys to ${s.region}, and a CloudWatch alarm notifies a topic of its own region only`,
        });
      }
    }
  })
  .refine((s) => s.apiKeys.revocationGraceMinutes * 60 > s.secretCacheTtlSeconds, {
    error: 'must be longer than secretCacheTtlSeconds, or consumers could still hold the revoked key',
    path: ['apiKeys', 'revocationGraceMinutes'],
  });

export type StageSettings = z.output<typeof stageSettingsSchema>;

/** One stage's settings plus its name. */
export interface StageConfig extends StageSettings {
  /** The key under `stages`; part of the stack name and of every resource name. */
  readonly name: string;
}

export interface StageIssue {
  /** Dotted path in cdk.json's context, e.g. `stages.production.schedules.timeZone`. */
  readonly path: string;
  readonly message: string;
}

/**
 * A stage setting is missing or malformed. lib may not import src/core/shared/errors.ts
 * (ConfigError), so this is its infrastructure-side twin: same idea, message names each field.
 */
export class StageConfigError extends Error {
  readonly issues: readonly StageIssue[];

  constructor(issues: StageIssue[], cause?: unknown) {
    super(`invalid stage configuration: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { cause });
    this.name = 'StageConfigError';
    this.issues = issues;
  }

  /** The first offending field's path. */
  get field(): string {
    return this.issues[0]?.path ?? '';
  }
}

const STAGE_NAME = /^[a-z][a-z0-9-]{0,19}$/;

/** Reads a context value; `ConstructNode.tryGetContext` fits, so does a plain lookup in tests. */
export type ContextReader = (key: string) => unknown;

/**
 * Selects and validates the stage named by the context key `stage` from the context key `stages`.
 * Throws StageConfigError naming the field.
 */
export function loadStageConfig(context: ContextReader): StageConfig {
  const stage = context('stage');
  const stages = context('stages');
  if (typeof stage !== 'string' || !STAGE_NAME.test(stage)) {
    throw new StageConfigError([
      { path: 'stage', message: 'expected a stage name (lowercase letters, digits, dashes), e.g. -c stage=sandbox' },
    ]);
  }
  if (stages === null || typeof stages !== 'object' || Array.isArray(stages)) {
    throw new StageConfigError([{ path: 'stages', message: 'expected an object of stage settings in cdk.json' }]);
  }
  if (!Object.hasOwn(stages, stage)) {
    const known = Object.keys(stages).join(', ') || 'none';
    throw new StageConfigError([{ path: 'stage', message: `unknown stage "${stage}" (known: ${known})` }]);
  }
  return { name: stage, ...parseStageSettings((stages as Record<string, unknown>)[stage], `stages.${stage}`) };
}

/** Validates one stage's settings; `prefix` is prepended to each field path in errors. */
export function parseStageSettings(input: unknown, prefix: string): StageSettings {
  // Lower precedence than a field's own error: a field without a value is `required`, whatever the
  // field's message for a wrong value (e.g. baseUrl's "expected an https URL").
  const result = stageSettingsSchema.safeParse(input, {
    error: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'required' : undefined),
  });
  if (result.success) return result.data;
  throw new StageConfigError(
    result.error.issues.flatMap((issue) =>
      // Name each unknown key itself: a typo'd field is then reported where it is.
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => ({ path: formatPath(prefix, [...issue.path, key]), message: 'unknown field' }))
        : [{ path: formatPath(prefix, issue.path), message: issue.message }],
    ),
    result.error,
  );
}

function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : `.${String(part)}`;
  return out;
}
