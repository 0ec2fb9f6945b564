import * as z from 'zod';
import { AccountingApiError, type AccountingClient, NotFoundError, uuidSchema } from '../accounting-api';
import { SecretNotFoundError, SecretScheduledForDeletionError, type SecretStore, SecretStage } from '../ports/secrets';
import { type Clock } from '../shared/clock';
import { AcctopsError } from '../shared/errors';
import { type Logger } from '../shared/logger';
import { type Metrics } from '../shared/metrics';
import { type CompanyKeySecret, parseCompanyKeySecret } from './company-key-secret';
import { lazySchema } from '../shared/lazy-schema';
import { keyPrefix } from '../shared/redact';

/**
 * The revocation of an old key, due once the grace period after its replacement's promotion is
 * over. It names the key by id and prefix only: a revocation never carries the key itself.
 */
export const revocationSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    /** The company key secret the key was in (its ARN). */
    secretId: z.string().min(1).max(2048),
    companyId: uuidSchema,
    apiKeyId: uuidSchema,
    /**
     * What keyPrefix() makes of the key, and so unchanged by it: a whole key (pasted into a
     * hand-written invocation) was taken as a prefix and the revocation went ahead with it.
     */
    keyPrefix: z
      .string()
      .min(1)
      .max(64)
      .refine(
        (value) => keyPrefix(value) === value,
        'expected a key prefix (the service prefix, _ and at most 8 characters), never a whole key',
      ),
    /** Epoch ms: not before then. */
    revokeAt: z.number().int().nonnegative(),
    /** The rotation (ClientRequestToken) that replaced the key. */
    rotationToken: z.string().min(1).max(64),
  }),
);
export type Revocation = z.output<typeof revocationSchema>;

/**
 * Where a revocation waits for its time: a one-time EventBridge Scheduler schedule in AWS, a
 * durable queue driven by the clock locally. It must survive restarts, since a grace period
 * outlives any single invocation.
 */
export interface RevocationScheduler {
  /** Idempotent per key: scheduling the same key again is a no-op, whatever the time asked. */
  schedule(revocation: Revocation): Promise<void>;
  /** Revocations not yet carried out (for `acctops keys status` and the doctor). */
  pending(): AsyncIterable<Revocation>;
}

/** A schedule (or queue entry) could not be written or read. */
export class RevocationSchedulerError extends AcctopsError {
  override readonly name: string = 'RevocationSchedulerError';
  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, { code: options.code ?? 'revocation_scheduler_failed', cause: options.cause });
  }
}

/**
 * The old key cannot be revoked because its company's key secret is scheduled for deletion (the
 * company was removed): a revocation acts with the company's current key, which only that secret
 * holds, and Secrets Manager refuses to read a secret marked for deletion. Nothing else holds a
 * credential of the company, so the key stays valid until the secret is restored and the
 * revocation runs again.
 */
export class RevocationBlockedError extends AcctopsError {
  override readonly name: string = 'RevocationBlockedError';
  readonly companyId: string;
  readonly keyPrefix: string;
  constructor(revocation: Pick<Revocation, 'companyId' | 'keyPrefix'>, cause: unknown) {
    super(
      `old key ${revocation.keyPrefix}… of company ${revocation.companyId} cannot be revoked: the company's key secret is scheduled for deletion (the company was removed), and the revocation needs the company's current key, which only that secret holds`,
      { code: 'revocation_secret_deleted', cause },
    );
    this.companyId = revocation.companyId;
    this.keyPrefix = revocation.keyPrefix;
  }
}

/** A pending revocation that will fail when it comes due, and the error it will fail with. */
export interface BlockedRevocation {
  revocation: Revocation;
  error: RevocationBlockedError;
}

/**
 * The pending revocations whose company key secret is scheduled for deletion: each fails with
 * `RevocationBlockedError` when it comes due, and its key stays valid at the service. Read without
 * running anything, for a doctor that cannot run revocations itself (AWS mode, where a schedule
 * that fires and fails leaves only a dead-letter message). A secret gone for good is left out: its
 * revocation fails otherwise, and no restore can help it.
 */
export async function blockedRevocations(deps: {
  scheduler: Pick<RevocationScheduler, 'pending'>;
  store: Pick<SecretStore, 'describeSecret'>;
}): Promise<BlockedRevocation[]> {
  const deleted = new Map<string, boolean>();
  const blocked: BlockedRevocation[] = [];
  for await (const revocation of deps.scheduler.pending()) {
    let isDeleted = deleted.get(revocation.secretId);
    if (isDeleted === undefined) {
      try {
        isDeleted = (await deps.store.describeSecret(revocation.secretId)).deletedAt !== undefined;
      } catch (error) {
        if (!(error instanceof SecretNotFoundError)) throw error;
        isDeleted = false;
      }
      deleted.set(revocation.secretId, isDeleted);
    }
    if (!isDeleted) continue;
    const cause = new SecretScheduledForDeletionError('the secret is scheduled for deletion', { secretId: revocation.secretId });
    blocked.push({ revocation, error: new RevocationBlockedError(revocation, cause) });
  }
  return blocked.sort((a, b) => a.revocation.revokeAt - b.revocation.revokeAt);
}

/**
 * `kept_current`: the key is still the secret's AWSCURRENT key, so it was left alone (see
 * `revokeApiKey`).
 */
export type RevocationOutcome = 'revoked' | 'already_gone' | 'kept_current';

export interface RevokeDeps {
  store: Pick<SecretStore, 'readSecret'>;
  /** A client acting with `key` (the company's current key manages its company's keys). */
  clientFor(key: CompanyKeySecret): AccountingClient;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

/**
 * Revokes the old key of a finished rotation. Idempotent: revoking a revoked key succeeds at the
 * service, and a key that is gone (404) counts as done.
 *
 * It never revokes the secret's AWSCURRENT key: a revocation is scheduled just before the
 * promotion it follows, and if that promotion never happened (the rotation failed and was rolled
 * back, which raised its own alarm) the old key is still the one every consumer uses.
 */
export async function revokeApiKey(deps: RevokeDeps, revocation: Revocation): Promise<RevocationOutcome> {
  const log = deps.logger.child({ companyId: revocation.companyId, apiKeyId: revocation.apiKeyId, keyPrefix: revocation.keyPrefix });
  let current: CompanyKeySecret;
  try {
    current = parseCompanyKeySecret((await deps.store.readSecret(revocation.secretId, { stage: SecretStage.current })).value);
  } catch (error) {
    if (error instanceof SecretScheduledForDeletionError) throw new RevocationBlockedError(revocation, error);
    throw error;
  }
  if (current.apiKeyId === revocation.apiKeyId) {
    deps.metrics.add('KeyRevocationsSkipped', 1);
    log.warn('revocation skipped: the key is still the current key (its rotation was not promoted)', { secretId: revocation.secretId });
    return 'kept_current';
  }
  let outcome: RevocationOutcome = 'revoked';
  try {
    await deps.clientFor(current).apiKeys.revoke(revocation.apiKeyId);
  } catch (error) {
    // 404 and 410 Gone both say the key is no longer there to revoke: the revocation's goal holds,
    // and retrying it forever would keep a finding open that no one can act on.
    const gone = error instanceof NotFoundError || (error instanceof AccountingApiError && error.status === 410);
    if (!gone) throw error;
    outcome = 'already_gone';
  }
  deps.metrics.add('KeysRevoked', 1);
  log.info(outcome === 'revoked' ? 'old API key revoked' : 'old API key was already gone', {
    lateByMs: Math.max(0, deps.clock.now() - revocation.revokeAt),
  });
  return outcome;
}

/**
 * The local stand-in for EventBridge Scheduler: revocations wait in a durable queue, and whoever
 * drives the local mode (the CLI, the demo, a test) runs the due ones with `runDueRevocations`.
 */
export interface RevocationQueue extends RevocationScheduler {
  /** Revocations whose time has come (`revokeAt <= now`), oldest first. */
  due(now: number): Promise<Revocation[]>;
  /** Removes the revocation of `apiKeyId`: it has been carried out. */
  complete(apiKeyId: string): Promise<void>;
}

export interface DueRevocationsResult {
  outcomes: { apiKeyId: string; keyPrefix: string; outcome: RevocationOutcome }[];
  /** Revocations that failed; they stay queued for the next run. */
  failed: { apiKeyId: string; keyPrefix: string; error: unknown }[];
}

export interface DueRevocationsDeps extends RevokeDeps {
  queue: RevocationQueue;
}

/** Carries out every due revocation of `queue`, as the one-time schedules do in AWS. */
export async function runDueRevocations(deps: DueRevocationsDeps): Promise<DueRevocationsResult> {
  const { queue } = deps;
  const result: DueRevocationsResult = { outcomes: [], failed: [] };
  for (const revocation of await queue.due(deps.clock.now())) {
    try {
      const outcome = await revokeApiKey(deps, revocation);
      await queue.complete(revocation.apiKeyId);
      result.outcomes.push({ apiKeyId: revocation.apiKeyId, keyPrefix: revocation.keyPrefix, outcome });
    } catch (error) {
      deps.logger.error('scheduled revocation failed; it stays queued', {
        apiKeyId: revocation.apiKeyId,
        keyPrefix: revocation.keyPrefix,
        error,
      });
      result.failed.push({ apiKeyId: revocation.apiKeyId, keyPrefix: revocation.keyPrefix, error });
    }
  }
  return result;
}
