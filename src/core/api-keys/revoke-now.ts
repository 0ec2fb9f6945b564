import { type ApiKey } from '../accounting-api';
import { SecretNotFoundError, SecretStage } from '../ports/secrets';
import { type CompanyKeySecret, parseCompanyKeySecret } from './company-key-secret';
import { namesAKey } from './listed-key';
import { type Revocation, type RevocationOutcome, type RevocationScheduler, type RevokeDeps, revokeApiKey } from './revocation';
import { listKeys } from './rotation';

export interface RevokeNowDeps extends RevokeDeps {
  scheduler: Pick<RevocationScheduler, 'pending'>;
  /**
   * Takes a revocation carried out now off its queue (the local mode's). A failure here fails the
   * key's row: the queue is the local revocation itself.
   */
  done?(apiKeyId: string): Promise<void>;
  /**
   * Deletes the one-time schedule of a revocation carried out now (AWS mode). A schedule left
   * behind fires into a secret scheduled for deletion once the company is removed, lands in the
   * dead-letter queue, and the doctor names the revoked key as blocked meanwhile (decision 107).
   * Its failure is the row's `scheduleError`, not a failed revocation: the key is revoked.
   */
  cancel?(apiKeyId: string): Promise<void>;
}

/** `already_revoked`: the service lists the key as revoked, so nothing was asked of it. */
export type RevokeNowOutcome = RevocationOutcome | 'already_revoked';

export interface RevokedNowKey {
  apiKeyId: string;
  keyPrefix: string;
  outcome: RevokeNowOutcome | 'failed';
  /** Why it failed (the key stays valid until its schedule or a retry revokes it); null unless `failed`. */
  error: unknown;
  /** The key is revoked, but its schedule could not be deleted (`deps.cancel`); null otherwise. */
  scheduleError: unknown;
}

export interface RevokeNowResult {
  keys: RevokedNowKey[];
  /**
   * Only with a prefix that no pending revocation has: true when no key of the company the service
   * lists has that prefix and is revoked, so there is nothing to report as done (a typo, or the
   * prefix of a live key that is not pending: the current key, or one only the doctor finds).
   */
  unmatched: boolean;
}

/**
 * Revokes now, without waiting for its time, every old key of a company whose revocation is
 * pending (or the one of `prefix`): a leaked key. The same `revokeApiKey` the schedule runs, so the
 * current key is never revoked (`kept_current`). A key the service already lists as revoked is
 * `already_revoked`, which makes a repeat (the runbook says to repeat until `revoked`) succeed
 * rather than fail on a revocation that is no longer pending: locally a revocation carried out
 * leaves the queue, and a prefix no pending revocation has is looked up among the company's keys
 * the service lists. A failure of one key does not stop the others.
 */
export async function revokePendingKeys(
  deps: RevokeNowDeps,
  input: {
    secretId: string;
    companyId: string;
    prefix?: string;
    /** Keys already dealt with by the caller (the AWSPREVIOUS key `--revoke-previous-now` revoked first). */
    skip?: readonly string[];
  },
): Promise<RevokeNowResult> {
  const company = input.companyId.toLowerCase();
  const skip = new Set(input.skip ?? []);
  const pending: Revocation[] = [];
  for await (const r of deps.scheduler.pending()) {
    if (r.companyId.toLowerCase() !== company || skip.has(r.apiKeyId)) continue;
    if (input.prefix === undefined || r.keyPrefix === input.prefix) pending.push(r);
  }
  pending.sort((a, b) => a.revokeAt - b.revokeAt);
  const listed = await listedKeys(deps, input.secretId, pending.length > 0 ? 'tolerate' : input.prefix !== undefined ? 'throw' : 'skip');
  if (pending.length === 0) {
    if (input.prefix === undefined || listed === undefined) return { keys: [], unmatched: input.prefix !== undefined };
    const prefix = input.prefix;
    const named = namesAKey(prefix) ? listed.filter((k) => namesAKey(k.prefix) && samePrefix(k.prefix, prefix)) : [];
    if (named.length === 0) return { keys: [], unmatched: true };
    const live = named.filter((k) => k.revokedAt === null);
    if (live.length > 0) {
      // The secret's previous key, live with no revocation pending: the key `keys install` replaced
      // (nothing schedules its revocation) or one whose schedule was lost. It is on its way out, and
      // the operator named it. Any other live key (the current one, one only the doctor can judge)
      // is not revoked, and saying `already_revoked` would hide it.
      const previous = live.length === 1 ? await previousKey(deps, input.secretId) : undefined;
      if (previous === undefined || previous.apiKeyId !== live[0]!.publicId) return { keys: [], unmatched: true };
      return { keys: [await revokePrevious(deps, input, previous)], unmatched: false };
    }
    return {
      keys: named.map((k) => ({ apiKeyId: k.publicId, keyPrefix: prefix, outcome: 'already_revoked', error: null, scheduleError: null })),
      unmatched: false,
    };
  }
  const keys: RevokedNowKey[] = [];
  for (const revocation of pending) {
    const { apiKeyId, keyPrefix } = revocation;
    try {
      const revokedAt = listed?.find((k) => k.publicId === apiKeyId)?.revokedAt;
      const outcome: RevokeNowOutcome = revokedAt != null ? 'already_revoked' : await revokeApiKey(deps, revocation);
      await deps.done?.(apiKeyId);
      keys.push({ apiKeyId, keyPrefix, outcome, error: null, scheduleError: await cancelled(deps, apiKeyId, keyPrefix) });
    } catch (error) {
      deps.logger.error('revoking a pending old key now failed; its revocation stays pending', { apiKeyId, keyPrefix, error });
      keys.push({ apiKeyId, keyPrefix, outcome: 'failed', error, scheduleError: null });
    }
  }
  return { keys, unmatched: false };
}

/** Deletes a revoked key's schedule through `deps.cancel`; its error, or null (none to delete, or deleted). */
async function cancelled(deps: RevokeNowDeps, apiKeyId: string, keyPrefix: string): Promise<unknown> {
  try {
    await deps.cancel?.(apiKeyId);
    return null;
  } catch (error) {
    deps.logger.error('the key was revoked now, but its revocation schedule could not be deleted', { apiKeyId, keyPrefix, error });
    return error;
  }
}

/** The key of the secret's AWSPREVIOUS version; undefined when there is none or it does not parse. */
async function previousKey(deps: RevokeDeps, secretId: string): Promise<CompanyKeySecret | undefined> {
  try {
    return parseCompanyKeySecret((await deps.store.readSecret(secretId, { stage: SecretStage.previous })).value);
  } catch (error) {
    if (error instanceof SecretNotFoundError) return undefined;
    throw error;
  }
}

/**
 * Revokes the previous key now through `revokeApiKey`, so the current key is still never revoked
 * (`kept_current`). There is no queue entry to complete: none was ever made for it.
 */
async function revokePrevious(
  deps: RevokeDeps,
  input: { secretId: string; companyId: string },
  previous: CompanyKeySecret,
): Promise<RevokedNowKey> {
  const { apiKeyId, keyPrefix } = previous;
  const revocation: Revocation = {
    secretId: input.secretId,
    companyId: input.companyId,
    apiKeyId,
    keyPrefix,
    revokeAt: deps.clock.now(),
    rotationToken: 'previous-version',
  };
  try {
    return { apiKeyId, keyPrefix, outcome: await revokeApiKey(deps, revocation), error: null, scheduleError: null };
  } catch (error) {
    deps.logger.error('revoking the previous key now failed; it stays valid', { apiKeyId, keyPrefix, error });
    return { apiKeyId, keyPrefix, outcome: 'failed', error, scheduleError: null };
  }
}

/**
 * The company's keys as the service lists them, read with its current key. Only to tell a revoked
 * key from a live one: when pending revocations are carried out anyway (`tolerate`), a list that
 * cannot be read leaves each to revokeApiKey, which is idempotent.
 */
async function listedKeys(deps: RevokeDeps, secretId: string, mode: 'tolerate' | 'throw' | 'skip'): Promise<ApiKey[] | undefined> {
  if (mode === 'skip') return undefined;
  try {
    const current = parseCompanyKeySecret((await deps.store.readSecret(secretId, { stage: SecretStage.current })).value);
    return await listKeys(deps.clientFor(current));
  } catch (error) {
    if (mode === 'throw') throw error;
    deps.logger.warn('the key list could not be read; every pending revocation is carried out', { error });
    return undefined;
  }
}

/**
 * Whether a listed prefix and ours (the service prefix and 8 characters) name the same key: the
 * service may list fewer characters or more (spec §5.1), so either begins the other.
 */
function samePrefix(listed: string, ours: string): boolean {
  return listed.startsWith(ours) || ours.startsWith(listed);
}
