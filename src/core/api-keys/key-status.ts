import { type AccountingClient } from '../accounting-api';
import { SecretNotFoundError, type SecretStore, SecretStage, versionWithStage } from '../ports/secrets';
import { type Clock, systemClock } from '../shared/clock';
import { type Logger, silentLogger } from '../shared/logger';
import { redactString } from '../shared/redact';
import { type CompanyKeySecret, parseCompanyKeySecret } from './company-key-secret';
import type { CompanyKeyDirectory } from './key-directory';
import type { RevocationScheduler } from './revocation';
import { listKeys } from './rotation';

/**
 * One company's row of `acctops keys status`: prefixes and ids, never a key. Every field is always
 * there (the CLI's --json promises a fixed key set): null when it is not known, e.g. the key's
 * fields when the current key could not be read (`error` says why).
 */
export interface KeyStatus {
  companyId: string;
  /** The secret's name. */
  secret: string;
  keyPrefix: string | null;
  apiKeyId: string | null;
  permissions: string[] | null;
  /**
   * ISO 8601, from the service's key list; null when never used (or not read). The list is read
   * with this very key and the service counts that call as a use, so this is usually the check
   * itself: see `lastUsedByThisCheck`. The previous keys' last use (pendingRevocations) is not
   * touched by it.
   */
  lastUsedAt: string | null;
  /** True when `lastUsedAt` is (within a minute of clock skew) this check's own request; null when the list was not read. */
  lastUsedByThisCheck: boolean | null;
  expiresAt: string | null;
  rotationEnabled: boolean;
  rotationDays: number | null;
  /** Epoch ms. */
  lastRotatedAt: number | null;
  nextRotationAt: number | null;
  /** A version is AWSPENDING that is not AWSCURRENT: a rotation is running (or stuck; see the doctor). */
  rotationInProgress: boolean;
  /**
   * Old keys in their grace period, each with its last use at the service (null: never, not in
   * the list, or the list was not read): whether consumers still use the old key, which the check
   * does not touch. The rotation that replaced a key used it itself (createSecret and setSecret list
   * and create keys with the current key), so its last use is that rotation's until a consumer uses
   * it again: `usedSinceRotation` tells the two apart.
   */
  pendingRevocations: {
    apiKeyId: string;
    keyPrefix: string;
    revokeAt: number;
    lastUsedAt: string | null;
    /**
     * True: used after the rotation that replaced it finished (a consumer still holds it); false:
     * not (its last use, if any, was that rotation's own); null: not known (the list was not read, or
     * the revocation is of an earlier rotation than the last, whose end the secret no longer says).
     * Null with a `lastUsedAt` is no sign of a consumer: that time may be the rotation's own use.
     */
    usedSinceRotation: boolean | null;
    /**
     * ISO 8601 when the service lists the key as revoked already though its revocation is still
     * pending: in AWS mode, revoked now by a command whose DeleteSchedule failed (decision 107), or
     * revoked at the service another way; the schedule, when it fires, finds the key revoked. Null:
     * valid (or not read).
     */
    revokedAt: string | null;
  }[];
  /**
   * Queued revocations of the key that is current now, left out of `pendingRevocations` because
   * they revoke nothing: when one is carried out it ends `kept_current` and leaves the queue. A
   * rotation that did not take effect leaves one: a local save the file system refused or a
   * `kill -9` (the queue is written as it changes, the secrets at the end: decisions 76, 82), a
   * rotation rolled back after its revocation was scheduled (decision 83). Empty when the current
   * key could not be read (such entries then stay in `pendingRevocations`, as nothing tells them apart).
   */
  currentKeyRevocations: { apiKeyId: string; keyPrefix: string; revokeAt: number }[];
  /**
   * The secret's previous key (AWSPREVIOUS) when the service lists it valid and no revocation of it
   * is pending: the key `keys install` replaced (nothing schedules its revocation), or one whose
   * schedule was lost. It works at the service until `keys revoke-pending --prefix` (or the
   * doctor, once overdue) revokes it. Prefix and id only; null when there is none, it is revoked
   * or pending, or the key list was not read.
   */
  replacedKey: { apiKeyId: string; keyPrefix: string; lastUsedAt: string | null } | null;
  /**
   * Keys an earlier, unlabelled version of the secret holds that the service lists valid and no
   * revocation of which is pending: above all the key `keys install` replaced, once a later rotation
   * took the AWSPREVIOUS label from it (nothing ever scheduled its revocation), or one whose schedule
   * was lost before a second rotation (decision 113). The rotation doctor revokes such a key as
   * `revocation_overdue` once the grace period after the last rotation is over. Versions are read
   * only when the service lists a live key that nothing else in the row explains. Empty when there
   * is none or the key list was not read.
   */
  earlierKeys: { apiKeyId: string; keyPrefix: string; lastUsedAt: string | null }[];
  /** Set when part of the row could not be read (the rest is still shown); null when all was. */
  error: string | null;
}

export interface KeyStatusDeps {
  store: Pick<SecretStore, 'describeSecret' | 'readSecret' | 'listVersions'>;
  directory: Pick<CompanyKeyDirectory, 'list'>;
  scheduler: Pick<RevocationScheduler, 'pending'>;
  clientFor(key: CompanyKeySecret): AccountingClient;
  /** The clock the service's timestamps are compared with (default: the system clock). */
  clock?: Pick<Clock, 'now'>;
}

/** A use this close before the check started is taken to be the check's own request (clock skew). */
const OWN_USE_SKEW_MS = 60_000;

/**
 * Whether a key's last use (the service's clock) is later than the rotation's end (Secrets Manager's).
 * The rotation's own last use of the old key, in setSecret, comes before its end; the end is taken
 * to the end of its second, in case a date is kept to the second. A consumer's use in that second
 * is missed, and a use after it is never hidden.
 */
function usedAfter(lastUsedAt: string | null, rotatedAt: number): boolean | null {
  if (lastUsedAt === null) return false;
  const used = Date.parse(lastUsedAt);
  return Number.isNaN(used) ? null : used >= Math.floor(rotatedAt / 1000) * 1000 + 1000;
}

/** For `acctops keys status`: every company key secret, with the service's view of its key. */
export async function keyStatus(deps: KeyStatusDeps): Promise<KeyStatus[]> {
  const revocations: (Pick<KeyStatus['pendingRevocations'][number], 'apiKeyId' | 'keyPrefix' | 'revokeAt'> & {
    companyId: string;
    rotationToken: string;
  })[] = [];
  for await (const r of deps.scheduler.pending()) {
    revocations.push({
      companyId: r.companyId.toLowerCase(),
      apiKeyId: r.apiKeyId,
      keyPrefix: r.keyPrefix,
      revokeAt: r.revokeAt,
      rotationToken: r.rotationToken,
    });
  }
  const rows: KeyStatus[] = [];
  for await (const entry of deps.directory.list()) {
    const description = await deps.store.describeSecret(entry.secretId);
    const pendingVersion = versionWithStage(description, SecretStage.pending);
    const currentVersion = versionWithStage(description, SecretStage.current);
    const lastRotatedAt = description.rotation.lastRotatedAt;
    // Every field present, unknown ones null: the CLI's --json promises a fixed key set.
    const row: KeyStatus = {
      companyId: entry.companyId,
      secret: entry.name,
      keyPrefix: null,
      apiKeyId: null,
      permissions: null,
      lastUsedAt: null,
      lastUsedByThisCheck: null,
      expiresAt: null,
      rotationEnabled: description.rotation.enabled,
      rotationDays: description.rotation.automaticallyAfterDays ?? null,
      lastRotatedAt: description.rotation.lastRotatedAt ?? null,
      nextRotationAt: description.rotation.nextRotationAt ?? null,
      rotationInProgress: pendingVersion !== undefined && !(description.versionStages[pendingVersion] ?? []).includes(SecretStage.current),
      error: null,
      pendingRevocations: revocations
        .filter((r) => r.companyId === entry.companyId)
        .map(({ apiKeyId, keyPrefix, revokeAt }) => ({
          apiKeyId,
          keyPrefix,
          revokeAt,
          lastUsedAt: null as string | null,
          usedSinceRotation: null as boolean | null,
          revokedAt: null as string | null,
        }))
        .sort((a, b) => a.revokeAt - b.revokeAt),
      currentKeyRevocations: [],
      replacedKey: null,
      earlierKeys: [],
    };
    try {
      const current = parseCompanyKeySecret((await deps.store.readSecret(entry.secretId, { stage: SecretStage.current })).value);
      Object.assign(row, { keyPrefix: current.keyPrefix, apiKeyId: current.apiKeyId, permissions: current.permissions });
      // Never pending: revokeApiKey keeps the current key, so listing it there promised a revocation that cannot happen.
      const ofCurrent = row.pendingRevocations.filter((r) => r.apiKeyId === current.apiKeyId);
      row.pendingRevocations = row.pendingRevocations.filter((r) => r.apiKeyId !== current.apiKeyId);
      row.currentKeyRevocations = ofCurrent.map(({ apiKeyId, keyPrefix, revokeAt }) => ({ apiKeyId, keyPrefix, revokeAt }));
      const checkStartedAt = (deps.clock ?? systemClock).now();
      const keys = await listKeys(deps.clientFor(current));
      const listed = keys.find((k) => k.publicId === current.apiKeyId);
      if (!listed) throw new Error('the current key is not in its company key list');
      const lastUsed = listed.lastUsedAt === null ? Number.NaN : Date.parse(listed.lastUsedAt);
      Object.assign(row, {
        permissions: listed.permissions,
        lastUsedAt: listed.lastUsedAt,
        lastUsedByThisCheck: lastUsed >= checkStartedAt - OWN_USE_SKEW_MS,
        expiresAt: listed.expiresAt,
      });
      const previous = await previousKey(deps.store, entry.secretId);
      if (previous !== undefined && previous.apiKeyId !== current.apiKeyId && !revocations.some((r) => r.apiKeyId === previous.apiKeyId)) {
        const old = keys.find((k) => k.publicId === previous.apiKeyId);
        if (old !== undefined && old.revokedAt === null)
          row.replacedKey = { apiKeyId: previous.apiKeyId, keyPrefix: previous.keyPrefix, lastUsedAt: old.lastUsedAt };
      }
      for (const pending of row.pendingRevocations) {
        const old = keys.find((k) => k.publicId === pending.apiKeyId);
        pending.lastUsedAt = old?.lastUsedAt ?? null;
        pending.revokedAt = old?.revokedAt ?? null;
        // The secret dates only its last rotation: the one whose version is AWSCURRENT now.
        const rotation = revocations.find((r) => r.apiKeyId === pending.apiKeyId)?.rotationToken;
        if (old !== undefined && rotation !== undefined && rotation === currentVersion && lastRotatedAt !== undefined) {
          pending.usedSinceRotation = usedAfter(pending.lastUsedAt, lastRotatedAt);
        }
      }
      // Live keys nothing above accounts for: another integration's, or one an earlier version holds.
      const unexplained = keys.filter(
        (k) =>
          k.revokedAt === null &&
          k.publicId !== current.apiKeyId &&
          k.publicId !== previous?.apiKeyId &&
          !revocations.some((r) => r.apiKeyId === k.publicId),
      );
      if (unexplained.length > 0) {
        const held = await earlierHeldKeys(deps.store, entry.secretId, new Set(unexplained.map((k) => k.publicId)));
        row.earlierKeys = unexplained
          .filter((k) => held.has(k.publicId))
          .map((k) => ({ apiKeyId: k.publicId, keyPrefix: held.get(k.publicId)!, lastUsedAt: k.lastUsedAt }));
      }
    } catch (error) {
      row.error = redactString(error instanceof Error ? error.message : 'unknown error');
    }
    rows.push(row);
  }
  return rows;
}

/**
 * The prefix of each of `wanted` that a version of the secret without a label holds (the doctor's
 * "older version"), by key id; read newest first, and no further once all are found. A version that
 * does not parse (a placeholder, or one Secrets Manager has dropped) holds nothing.
 */
async function earlierHeldKeys(
  store: Pick<SecretStore, 'readSecret' | 'listVersions'>,
  secretId: string,
  wanted: Set<string>,
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const versions = (await store.listVersions(secretId))
    .filter((v) => v.stages.length === 0)
    .sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0));
  for (const version of versions) {
    if (found.size === wanted.size) break;
    try {
      const held = parseCompanyKeySecret((await store.readSecret(secretId, { versionId: version.versionId })).value);
      if (wanted.has(held.apiKeyId)) found.set(held.apiKeyId, held.keyPrefix);
    } catch {
      continue;
    }
  }
  return found;
}

/** The key of the secret's AWSPREVIOUS version; undefined when there is none, or it holds none that parses (an install's placeholder). */
async function previousKey(store: Pick<SecretStore, 'readSecret'>, secretId: string): Promise<CompanyKeySecret | undefined> {
  let value: string;
  try {
    value = (await store.readSecret(secretId, { stage: SecretStage.previous })).value;
  } catch (error) {
    if (error instanceof SecretNotFoundError) return undefined;
    throw error;
  }
  try {
    return parseCompanyKeySecret(value);
  } catch {
    return undefined;
  }
}

export interface RotateNowResult {
  companyId: string;
  secret: string;
  /** The version the rotation brings in. */
  versionId: string;
  /**
   * `completed`: the version is AWSCURRENT already (the local emulator runs the steps before
   * answering); `in_progress`: AWS runs the steps after answering, follow it with `keyStatus`;
   * `failed`: a step failed (see the rotation function's logs), and `rolledBack` says what is left.
   */
  state: 'completed' | 'in_progress' | 'failed';
  /**
   * Only for `failed` (null otherwise): true when the rollback finished (AWSPENDING removed,
   * AWSCURRENT unchanged); false when the version is still AWSPENDING, which blocks the next
   * rotation until the rotation doctor gives it up and may hold a key the rotation created.
   */
  rolledBack: boolean | null;
}

export interface RotateNowDeps {
  /** RotateSecret in AWS; locally, the emulator, which runs our rotation handler against the sandbox. */
  store: Pick<SecretStore, 'startRotation' | 'describeSecret'>;
  directory: Pick<CompanyKeyDirectory, 'find'>;
  logger?: Logger;
  /**
   * The store runs the four steps before startRotation returns (the local emulator). A version
   * still AWSPENDING then is no rotation under way: nothing runs it any more, so it failed and its
   * rollback did not finish.
   */
  synchronous?: boolean;
}

/** For `acctops keys rotate --company <id>`: starts the company key's rotation now. */
export async function rotateNow(deps: RotateNowDeps, companyId: string): Promise<RotateNowResult> {
  const entry = await deps.directory.find(companyId);
  const { versionId } = await deps.store.startRotation(entry.secretId);
  const stages = (await deps.store.describeSecret(entry.secretId)).versionStages[versionId] ?? [];
  const { state, rolledBack } = rotationState(stages, deps.synchronous === true);
  (deps.logger ?? silentLogger).info('rotation started', { companyId: entry.companyId, secretName: entry.name, versionId, state });
  return { companyId: entry.companyId, secret: entry.name, versionId, state, rolledBack };
}

/** What a rotation's version labels say about it; `synchronous`: nothing runs its steps after this (RotateNowDeps). */
export function rotationState(stages: readonly string[], synchronous: boolean): Pick<RotateNowResult, 'state' | 'rolledBack'> {
  if (stages.includes(SecretStage.current)) return { state: 'completed', rolledBack: null };
  if (!stages.includes(SecretStage.pending)) return { state: 'failed', rolledBack: true };
  return synchronous ? { state: 'failed', rolledBack: false } : { state: 'in_progress', rolledBack: null };
}
