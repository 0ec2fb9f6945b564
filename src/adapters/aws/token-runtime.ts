import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type * as z from 'zod';
import { systemClock, type Clock } from '../../core/shared/clock';
import { envArn, envBaseUrl, envInt, envString, envUrl, envMs, readEnvOf, requiredEnv } from '../../core/shared/env';
import { DynamoDbTokenStore } from './dynamodb-token-store';

/**
 * The environment of the token functions, as lib/constructs/token-lifecycle.ts sets it. Each
 * handler names the variables it needs (tokenRuntimeFromEnv), so a function is given, and granted,
 * only what it uses. Every value is a name, ARN, URL or number: never a secret.
 */
export const tokenEnv = {
  TOKEN_TABLE_NAME: envString,
  INSTITUTION_SECRET_ARN: envArn,
  ACCTOPS_BASE_URL: envBaseUrl,
  TOKEN_EVENT_BUS_NAME: envString,
  REFRESH_QUEUE_URL: envUrl,
  /** Refresh this long before a deadline. */
  TOKEN_REFRESH_MARGIN_SECONDS: envInt(0, 86_400).default(900),
  /** When a response gives neither a JWT `exp` nor `expiresIn`. */
  ACCESS_TOKEN_LIFETIME_SECONDS: envInt(60, 86_400).default(1800),
  /** Longer than the worker's timeout (see TokenLifecycleSettings.leaseMs). */
  TOKEN_LEASE_SECONDS: envInt(30, 3600).default(180),
  /** Users refreshed at once inside one batch. */
  REFRESH_CONCURRENCY: envInt(1, 100).default(10),
  SECRET_CACHE_TTL_SECONDS: envInt(0, 3600).default(300),
};

export type TokenEnvName = keyof typeof tokenEnv;

/**
 * A token function's composition root, from its environment: reads `names` once with readEnv (at
 * module load of the handler, so a missing or malformed one fails the cold start with its name)
 * and makes the runtime of them. A variable not named stays unset: the use case's default applies,
 * and an accessor that needs it fails with its name. Returns the values too, for the handler's own
 * settings. `Runtime` is the planner's or the lifecycle's root (token-planner-runtime.ts,
 * token-lifecycle-runtime.ts), so that neither bundle loads the other's SDK clients.
 */
export function tokenRuntimeFromEnv<R extends AwsTokenRuntime, K extends TokenEnvName>(
  Runtime: new (config: AwsTokenRuntimeConfig) => R,
  names: readonly K[],
  processEnv: NodeJS.ProcessEnv = process.env,
): { env: z.output<z.ZodObject<Pick<typeof tokenEnv, K>>>; runtime: R } {
  const env = readEnvOf(tokenEnv, names, processEnv);
  const e: Partial<z.output<z.ZodObject<typeof tokenEnv>>> = env;
  const runtime = new Runtime({
    tableName: requiredEnv(e.TOKEN_TABLE_NAME, 'TOKEN_TABLE_NAME'),
    institutionSecretArn: e.INSTITUTION_SECRET_ARN,
    baseUrl: e.ACCTOPS_BASE_URL,
    eventBusName: e.TOKEN_EVENT_BUS_NAME,
    queueUrl: e.REFRESH_QUEUE_URL,
    marginMs: envMs(e.TOKEN_REFRESH_MARGIN_SECONDS),
    accessTokenLifetimeMs: envMs(e.ACCESS_TOKEN_LIFETIME_SECONDS),
    leaseMs: envMs(e.TOKEN_LEASE_SECONDS),
    concurrency: e.REFRESH_CONCURRENCY,
    secretCacheTtlMs: envMs(e.SECRET_CACHE_TTL_SECONDS),
    clock: systemClock,
  });
  return { env, runtime };
}

export interface AwsTokenRuntimeConfig {
  tableName: string;
  /** Needed by the functions that call the service. */
  institutionSecretArn?: string;
  baseUrl?: string;
  /** Needed by the worker (TokenRefreshFailed). */
  eventBusName?: string;
  /** Needed by the planner. */
  queueUrl?: string;
  secretCacheTtlMs?: number;
  marginMs?: number;
  accessTokenLifetimeMs?: number;
  leaseMs?: number;
  concurrency?: number;
  clock: Clock;
  /**
   * Per attempt and in all, for every call to the service: bounded so that one user's refresh plus
   * its recovery fits well inside the worker's timeout, and so inside the lease.
   * @default 10 s per attempt, 3 attempts within 20 s
   */
  api?: { timeoutMs: number; maxAttempts: number; maxElapsedMs: number };
}

/**
 * The base of the token functions' composition roots (docs/conventions.md, "Composition roots"):
 * the config and the token store, which every token function uses. The planner's root adds the
 * refresh queue (token-planner-runtime.ts), the lifecycle's the institution credential, the client
 * and the events (token-lifecycle-runtime.ts): each in a module of its own, so that a function's
 * bundle loads only the SDK clients it uses. The AWS clients, the store and the cached institution
 * credential live as long as the Lambda execution environment (module scope of a handler), so the
 * secret's TTL cache and the connections survive between invocations.
 *
 * Endpoints come from the SDK's own configuration: region and credentials from the environment,
 * and `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SECRETS_MANAGER`, `AWS_ENDPOINT_URL_SQS`,
 * `AWS_ENDPOINT_URL_EVENTBRIDGE` (or `AWS_ENDPOINT_URL`), which the SDK honours natively: that is
 * how the handler tests point them at dynalite, the Secrets Manager emulator and local recorders.
 */
export class AwsTokenRuntime {
  private readonly tokenStore: DynamoDbTokenStore;

  constructor(readonly config: AwsTokenRuntimeConfig) {
    this.tokenStore = new DynamoDbTokenStore({ client: new DynamoDBClient({}), tableName: config.tableName });
  }

  store(): DynamoDbTokenStore {
    return this.tokenStore;
  }
}
