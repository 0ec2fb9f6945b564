import * as z from 'zod';
import { DEFAULT_DUE_AFTER_HOURS } from '../../../contract/exports';
import { DEFAULT_MAX_TRANSACTIONS_PER_PART } from '../../core/exports/pipeline/split-export';
import { DATE_TO_MODES, type DateToMode } from '../../core/exports/pipeline/date-to';
import { FORMATS } from '../../core/exports/formats/datasets';
import { taxReportFieldsSchema, type TaxReportFieldNames } from '../../core/exports/formats/tax-report-fields';
import { systemClock, type Clock } from '../../core/shared/clock';
import { envBaseUrl, envInt, envMs, envString, envTimeZone, envUrl, readEnvOf } from '../../core/shared/env';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { lazySchema } from '../../core/shared/lazy-schema';

const taxReportFieldsEnv = /* @__PURE__ */ lazySchema(() =>
  z
    .string()
    .default('{}')
    .transform((text, ctx): unknown => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'expected a JSON object, e.g. {"periodEnd":"endDate"}' });
        return z.NEVER;
      }
    })
    .pipe(taxReportFieldsSchema),
);

const formatList = /* @__PURE__ */ lazySchema(() =>
  z
    .string()
    .default(FORMATS.join(','))
    .transform((text) =>
      text
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(FORMATS)).min(1)),
);

/**
 * The environment of the export functions, as lib/constructs/exports/ sets it. Each handler
 * names the variables it needs (exportRuntimeFromEnv), so a function is given (and granted) only
 * what it uses. Names, ARNs, URLs, numbers and ids only: never a secret.
 */
export const exportEnv = {
  ACCTOPS_BASE_URL: envBaseUrl,
  /** acctops's version (package.json at synth), recorded in every manifest. */
  ACCTOPS_TOOL_VERSION: envString,
  EXPORT_BUCKET_NAME: envString,
  EXPORT_QUEUE_URL: envUrl,
  EXPORT_EVENT_BUS_NAME: envString,
  EXPORT_RUNS_TABLE_NAME: envString,
  TOKEN_TABLE_NAME: envString,
  /**
   * The company registry (issue 15): the planner reads the API-key companies from it a page at a
   * time. It replaced EXPORT_COMPANY_IDS, a list in the environment that Lambda's 4 KB capped at
   * about 90 companies.
   */
  COMPANY_REGISTRY_TABLE_NAME: envString,
  /** Formats of the monthly exports. */
  EXPORT_FORMATS: formatList,
  /** IANA zone of the monthly schedule: which month is "the previous one". */
  EXPORT_TIME_ZONE: envTimeZone.default('Europe/Berlin'),
  /** Hours after midnight on the 1st (local) by which last month's exports are due. */
  EXPORT_DUE_AFTER_HOURS: envInt(1, 24 * 27).default(DEFAULT_DUE_AFTER_HOURS),
  /** The export queue's maxReceiveCount: the worker's last delivery before the DLQ. */
  EXPORT_MAX_RECEIVE_COUNT: envInt(1, 1000).default(3),
  SECRET_CACHE_TTL_SECONDS: envInt(0, 3600).default(300),
  /**
   * A month with more transactions than this is exported in parts of at most this many
   * (docs/fleet-exports.md); the stage's `exports.maxTransactionsPerPart`.
   */
  EXPORT_MAX_TRANSACTIONS_PER_PART: envInt(1000, 100_000_000).default(DEFAULT_MAX_TRANSACTIONS_PER_PART),
  /**
   * The service's names of our tax-report fields, as a JSON object (the stage's
   * `exports.taxReportFields`); unset: our names.
   */
  EXPORT_TAX_REPORT_FIELDS: taxReportFieldsEnv,
  /** Records per page asked of the service (the stage's `exports.pageSize`); unset: EXPORT_PAGE_SIZE. */
  EXPORT_PAGE_SIZE: envInt(1, 1000).optional(),
  /** How the service reads `date_to` (the stage's `exports.dateTo`); unset: detect. */
  EXPORT_DATE_TO: z.enum(DATE_TO_MODES).optional(),
  WEBHOOK_SECRET_ARN: envString,
  WEBHOOK_REPLAY_TABLE_NAME: envString,
  WEBHOOK_MAX_BODY_BYTES: envInt(256, 1024 * 1024).default(64 * 1024),
};

export type ExportEnvName = keyof typeof exportEnv;

/**
 * An export function's composition root, from its environment: reads `names` once with readEnv
 * (at module load of the handler, so a missing or malformed one fails the cold start with its
 * name) and makes the runtime of them. A variable not named stays unset, and an accessor that
 * needs it fails with its name. Returns the values too, for the handler's own settings.
 * `Runtime` is AwsExportRuntime or the subclass of the worker, the webhook or the planner, each in
 * a module of its own so that no other bundle carries its adapters.
 */
export function exportRuntimeFromEnv<R extends AwsExportRuntime, K extends ExportEnvName>(
  Runtime: new (config: AwsExportRuntimeConfig) => R,
  names: readonly K[],
  processEnv: NodeJS.ProcessEnv = process.env,
): { env: z.output<z.ZodObject<Pick<typeof exportEnv, K>>>; runtime: R } {
  const env = readEnvOf(exportEnv, names, processEnv);
  const e: Partial<z.output<z.ZodObject<typeof exportEnv>>> = env;
  const runtime = new Runtime({
    clock: systemClock,
    baseUrl: e.ACCTOPS_BASE_URL,
    toolVersion: e.ACCTOPS_TOOL_VERSION,
    bucketName: e.EXPORT_BUCKET_NAME,
    queueUrl: e.EXPORT_QUEUE_URL,
    eventBusName: e.EXPORT_EVENT_BUS_NAME,
    runsTableName: e.EXPORT_RUNS_TABLE_NAME,
    tokenTableName: e.TOKEN_TABLE_NAME,
    registryTableName: e.COMPANY_REGISTRY_TABLE_NAME,
    // Every function has ACCTOPS_STAGE (AcctopsFunction): key lookups see this stage's secrets only.
    stage: processEnv.ACCTOPS_STAGE,
    webhookSecretArn: e.WEBHOOK_SECRET_ARN,
    replayTableName: e.WEBHOOK_REPLAY_TABLE_NAME,
    secretCacheTtlMs: envMs(e.SECRET_CACHE_TTL_SECONDS),
    maxReceiveCount: e.EXPORT_MAX_RECEIVE_COUNT,
    maxTransactionsPerPart: e.EXPORT_MAX_TRANSACTIONS_PER_PART,
    taxReportFields: e.EXPORT_TAX_REPORT_FIELDS,
    pageSize: e.EXPORT_PAGE_SIZE,
    dateTo: e.EXPORT_DATE_TO,
    webhookMaxBodyBytes: e.WEBHOOK_MAX_BODY_BYTES,
  });
  return { env, runtime };
}

export interface AwsExportRuntimeConfig {
  clock: Clock;
  baseUrl?: string;
  /** acctops's version, recorded in every manifest. */
  toolVersion?: string;
  bucketName?: string;
  queueUrl?: string;
  eventBusName?: string;
  runsTableName?: string;
  tokenTableName?: string;
  registryTableName?: string;
  /** The stage whose company key secrets the worker looks up (the `acctops:stage` tag). */
  stage?: string;
  webhookSecretArn?: string;
  replayTableName?: string;
  secretCacheTtlMs?: number;
  /** The export queue's maxReceiveCount (the worker's last delivery before the DLQ). */
  maxReceiveCount?: number;
  /** A month with more transactions than this is exported in parts (EXPORT_MAX_TRANSACTIONS_PER_PART). */
  maxTransactionsPerPart?: number;
  /** The service's names of our tax-report fields (EXPORT_TAX_REPORT_FIELDS). */
  taxReportFields?: TaxReportFieldNames;
  /** EXPORT_PAGE_SIZE. */
  pageSize?: number;
  /** EXPORT_DATE_TO. */
  dateTo?: DateToMode;
  webhookMaxBodyBytes?: number;
  /**
   * Per attempt and in all, for every call to the service: a page of 1000 transactions can take a
   * while; a stalled one is retried well inside the worker's 15 minutes.
   * @default 60 s per attempt, 5 attempts within 5 minutes
   */
  api?: { timeoutMs: number; maxAttempts: number; maxElapsedMs: number };
}

/**
 * The base of the export functions' composition roots, made once per execution environment
 * (module scope), so the SDK clients, the cached key secrets and the webhook secret survive between
 * invocations (docs/conventions.md, "Composition roots"). It holds the config and the cache only:
 * each function's root (export-*-runtime.ts) extends it with the adapters it uses, as methods that
 * call the accessors of export-runtime-<package>.ts, and each use case's deps come from its
 * `…Deps(scope)`. That keeps a function's bundle, and its init, to the SDK clients it uses: esbuild
 * keeps every `require()` of an external package a bundled module makes, used or not. Each
 * accessor needs only its own setting, so a function configured (and granted) for less fails with
 * the variable's name only if it reaches for more.
 *
 * Endpoints come from the SDK's own configuration (`AWS_ENDPOINT_URL_S3`, `_SQS`, `_DYNAMODB`,
 * `_EVENTBRIDGE`, `_SECRETS_MANAGER`): that is how the handler tests reach s3rver, dynalite, the
 * Secrets Manager emulator and the recorder.
 */
export class AwsExportRuntime {
  private readonly cache = new Map<string, unknown>();

  constructor(readonly config: AwsExportRuntimeConfig) {}

  /** `make()` once per key and execution environment (the accessors' memo). */
  once<T>(key: string, make: () => T): T {
    if (!this.cache.has(key)) this.cache.set(key, make());
    return this.cache.get(key) as T;
  }
}

/** An invocation's logger and metrics (createHandler's Invocation). */
export interface Scope {
  logger: Logger;
  metrics: Metrics;
}
