import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import * as z from 'zod';
import { type CompanyKeySecret, type DoctorSettings, type RevokeDeps, type RotationSettings, rotationSettings } from '../../core/api-keys';
import { type AccountingClient, type ApiKeyPaths, apiKeyAuth, createAccountingClient } from '../../core/accounting-api';
import { systemClock, type Clock } from '../../core/shared/clock';
import { envArn, envBaseUrl, envInt, envMs, envString, envUrl, readEnvOf, requiredEnv } from '../../core/shared/env';
import { ConfigError } from '../../core/shared/errors';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { AwsSecretStore } from './secrets-manager';
import { lazySchema } from '../../core/shared/lazy-schema';

/** The `source` of the events the key functions publish. */
export const KEY_EVENT_SOURCE = 'acctops.api-keys';

const apiPath = /* @__PURE__ */ lazySchema(() => z.string().regex(/^\/[A-Za-z0-9_\-/{}]*\/$/, 'expected a path like /api-keys/'));

/**
 * The environment of the key functions, as lib/constructs/key-rotation.ts sets it. Each handler
 * names what it needs (keyRotationRuntimeFromEnv). Names, ARNs, URLs and numbers only.
 */
export const keyRotationEnv = {
  ACCTOPS_BASE_URL: envBaseUrl,
  /** How long the old key keeps working after a promotion. */
  REVOCATION_GRACE_SECONDS: envInt(60, 86_400).default(1800),
  /** The longest any consumer caches a key; the grace period must exceed it. */
  SECRET_CACHE_TTL_SECONDS: envInt(0, 3600).default(300),
  REVOCATION_SCHEDULE_GROUP: envString,
  REVOKE_FUNCTION_ARN: envArn,
  REVOCATION_SCHEDULER_ROLE_ARN: envArn,
  /** Where a revocation schedule that cannot invoke its function leaves its event (the stack's FailedInvocations queue). */
  REVOCATION_DEAD_LETTER_ARN: envArn.optional(),
  KEY_EVENT_BUS_NAME: envString.optional(),
  API_KEY_PATH_LIST: apiPath.optional(),
  API_KEY_PATH_CREATE: apiPath.optional(),
  API_KEY_PATH_REVOKE: apiPath.optional(),
  STUCK_PENDING_AFTER_MINUTES: envInt(1, 7 * 24 * 60).default(60),
  EXPIRY_WARNING_DAYS: envInt(1, 365).default(14),
  /**
   * The company registry: the doctor sweeps it for due companies (lib/constructs/rotation-fanout.ts);
   * the rotation function reads a company's entry in createSecret, to refuse a removed one.
   */
  COMPANY_REGISTRY_TABLE_NAME: envString.optional(),
  /** Where the sweep sends due companies when there are more than ROTATION_INLINE_LIMIT. */
  ROTATION_CHECK_QUEUE_URL: envUrl.optional(),
  ROTATION_INLINE_LIMIT: envInt(0, 10_000).default(20),
};

export type KeyRotationEnvName = keyof typeof keyRotationEnv;

/**
 * A key function's composition root, from its environment: reads `names` once with readEnv (at
 * module load of the handler, so a missing or malformed one fails the cold start with its name)
 * and makes the runtime of them. Every key function calls the service, so the base URL, the grace
 * period and the cache TTL must be among `names`; a variable not named stays unset, and an
 * accessor that needs it fails with its name. `Runtime` is AwsKeyRotationRuntime (revoke-api-key)
 * or the rotation's or the doctor's root (key-rotate-runtime.ts, key-doctor-runtime.ts), so that a
 * function's bundle loads only the SDK clients it uses.
 */
export function keyRotationRuntimeFromEnv<R extends AwsKeyRotationRuntime, K extends KeyRotationEnvName>(
  Runtime: new (config: AwsKeyRotationRuntimeConfig) => R,
  names: readonly K[],
  processEnv: NodeJS.ProcessEnv = process.env,
): { env: z.output<z.ZodObject<Pick<typeof keyRotationEnv, K>>>; runtime: R } {
  const env = readEnvOf(keyRotationEnv, names, processEnv);
  const e: Partial<z.output<z.ZodObject<typeof keyRotationEnv>>> = env;
  const runtime = new Runtime({
    baseUrl: requiredEnv(e.ACCTOPS_BASE_URL, 'ACCTOPS_BASE_URL'),
    graceMs: requiredEnv(e.REVOCATION_GRACE_SECONDS, 'REVOCATION_GRACE_SECONDS') * 1000,
    consumerCacheTtlMs: requiredEnv(e.SECRET_CACHE_TTL_SECONDS, 'SECRET_CACHE_TTL_SECONDS') * 1000,
    scheduleGroup: e.REVOCATION_SCHEDULE_GROUP,
    revokeTarget:
      e.REVOKE_FUNCTION_ARN === undefined
        ? undefined
        : {
            functionArn: e.REVOKE_FUNCTION_ARN,
            roleArn: requiredEnv(e.REVOCATION_SCHEDULER_ROLE_ARN, 'REVOCATION_SCHEDULER_ROLE_ARN'),
            deadLetterArn: e.REVOCATION_DEAD_LETTER_ARN,
          },
    eventBusName: e.KEY_EVENT_BUS_NAME,
    apiKeyPaths: { list: e.API_KEY_PATH_LIST, create: e.API_KEY_PATH_CREATE, revoke: e.API_KEY_PATH_REVOKE },
    doctor: {
      stuckPendingAfterMs: envMs(e.STUCK_PENDING_AFTER_MINUTES, 60_000),
      expiryWarningMs: envMs(e.EXPIRY_WARNING_DAYS, 86_400_000),
    },
    sweep:
      e.COMPANY_REGISTRY_TABLE_NAME === undefined
        ? undefined
        : { registryTableName: e.COMPANY_REGISTRY_TABLE_NAME, queueUrl: e.ROTATION_CHECK_QUEUE_URL, inlineLimit: e.ROTATION_INLINE_LIMIT },
    registryTableName: e.COMPANY_REGISTRY_TABLE_NAME,
    clock: systemClock,
    // Every function has ACCTOPS_STAGE (AcctopsFunction): the doctor sees this stage's secrets only.
    stage: processEnv.ACCTOPS_STAGE,
  });
  return { env, runtime };
}

export interface AwsKeyRotationRuntimeConfig {
  baseUrl: string;
  graceMs: number;
  consumerCacheTtlMs: number;
  /** Needed by whatever schedules or lists revocations. */
  scheduleGroup?: string;
  /** Needed by the rotation function, which creates schedules. */
  revokeTarget?: { functionArn: string; roleArn: string; deadLetterArn?: string };
  eventBusName?: string;
  apiKeyPaths?: { list?: string; create?: string; revoke?: string };
  doctor?: Omit<DoctorSettings, 'graceMs'>;
  /** The registry sweep (issue 15); absent: the doctor checks every company secret it finds by tag. */
  sweep?: { registryTableName: string; queueUrl?: string; inlineLimit?: number };
  /** The company registry table, whose entries the rotation function reads (a removed company is refused); absent: none is read. */
  registryTableName?: string;
  clock: Clock;
  /** The stage whose company key secrets the doctor examines (the `acctops:stage` tag). */
  stage?: string;
  /** Per attempt and in all, for every call to the service. @default 10 s per attempt, 3 attempts within 20 s */
  api?: { timeoutMs: number; maxAttempts: number; maxElapsedMs: number };
}

/**
 * Composition root of the key functions, made once per execution environment (docs/conventions.md,
 * "Composition roots"): adapters are methods, and each use case's deps come from its
 * `…Deps(scope)`. This base holds what all three use (the secret store and the service's client)
 * and is revoke-api-key's root; rotate-api-key's (key-rotate-runtime.ts) adds the revocation
 * scheduler, check-key-rotations' (key-doctor-runtime.ts) the scheduler, the events, the registry's
 * index and the fan-out queue. Endpoints come from the SDK's own configuration
 * (`AWS_ENDPOINT_URL_SECRETS_MANAGER`, `AWS_ENDPOINT_URL_SCHEDULER`, `AWS_ENDPOINT_URL_EVENTBRIDGE`),
 * which is how the handler tests point them at the emulator and a fake scheduler.
 */
export class AwsKeyRotationRuntime {
  private readonly secretStore = new AwsSecretStore(new SecretsManagerClient({}));
  readonly settings: RotationSettings;
  private readonly apiKeyPaths: Partial<ApiKeyPaths>;

  constructor(readonly config: AwsKeyRotationRuntimeConfig) {
    // At init: a grace period that would not outlast the consumers' cache fails the cold start.
    try {
      this.settings = rotationSettings({ graceMs: config.graceMs, consumerCacheTtlMs: config.consumerCacheTtlMs });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      const message = 'must be longer than SECRET_CACHE_TTL_SECONDS, or consumers could still hold the revoked key';
      throw new ConfigError([{ path: 'REVOCATION_GRACE_SECONDS', message }], error);
    }
    this.apiKeyPaths = Object.fromEntries(Object.entries(config.apiKeyPaths ?? {}).filter(([, path]) => path !== undefined));
  }

  store(): AwsSecretStore {
    return this.secretStore;
  }

  /** revokeApiKey's deps, with this invocation's logger and metrics. */
  revokeDeps(scope: { logger: Logger; metrics: Metrics }): RevokeDeps {
    return { store: this.store(), clientFor: (key) => this.clientFor(key, scope.logger), clock: this.config.clock, ...scope };
  }

  /** The service's client acting with `key` (the company's current or pending key). */
  clientFor(key: CompanyKeySecret, logger: Logger): AccountingClient {
    const api = this.config.api ?? { timeoutMs: 10_000, maxAttempts: 3, maxElapsedMs: 20_000 };
    return createAccountingClient({
      baseUrl: this.config.baseUrl,
      credentials: apiKeyAuth(key.apiKey, { companyId: key.companyId }),
      apiKeyPaths: this.apiKeyPaths,
      clock: this.config.clock,
      logger,
      timeoutMs: api.timeoutMs,
      retry: { maxAttempts: api.maxAttempts, maxElapsedMs: api.maxElapsedMs },
    });
  }
}
