import { AccountingApiError, type AccountingClient } from '../../src/core/accounting-api';
import {
  companyKeySecretName,
  CompanyKeyNotFoundError,
  installCompanyKeySecret,
  listKeys,
  parseCompanyKeySecret,
  retireCompanyKeySecret,
  revokePendingKeys,
  secretEncryption,
  type RevokeNowDeps,
  type CompanyKeyDirectory,
  type CompanyKeyEntry,
  type CompanyKeySecret,
  type CompanyKeySecretTarget,
  type SecretLifecycle,
} from '../../src/core/api-keys';
import { CompanyNotRegisteredError, type CompanyRegistry, type RegisteredCompany } from '../../src/core/companies/company-registry';
import { SecretScheduledForDeletionError, SecretStage, type SecretStore } from '../../src/core/ports/secrets';
import type { Clock } from '../../src/core/shared/clock';
import { CliError, CompanyRemovedError, describeError, unknownCompany } from '../errors';
import { ExitCode } from '../exit-codes';
import type { CompanyRemoval, CompanyRestore, KeyRotationChange, KeysInstallReport, RevokedNowRow } from './operations';
import { installCompanyKey, verifyCompanyKey } from './secret-changes';
import { companyRow } from './shared';

/** What `keys install` and `companies remove|restore` need, in either mode. */
export interface CompanyKeyContext {
  lifecycle: SecretLifecycle;
  store: SecretStore;
  directory: Pick<CompanyKeyDirectory, 'find'>;
  clientFor(key: Pick<CompanyKeySecret, 'apiKey' | 'companyId'>): AccountingClient;
  clock: Clock;
  target: CompanyKeySecretTarget;
  /** The stage's apiKeys.rotationDays: for a company whose registry entry names none. */
  defaultRotationDays: number;
}

/**
 * `keys install`: the company must be registered and active, or not registered but already have a
 * key secret (a cdk.json company, the local demo companies); else exit 3 naming `companies add`,
 * or, for a removed one, whether or not its secret is still there, `companies restore`. The key is
 * checked at the service before anything is written.
 */
export async function installKey(
  ctx: CompanyKeyContext,
  registry: Pick<CompanyRegistry, 'get'>,
  companyId: string,
  apiKey: string,
): Promise<KeysInstallReport> {
  const id = companyId.toLowerCase();
  const registered = await registry.get(id);
  const conventional = await ctx.lifecycle.describe(companyKeySecretName(ctx.target.stage, id));
  const imported = conventional === undefined ? await findByTag(ctx.directory, id) : undefined;
  if (registered?.removedAt !== undefined) {
    // Installing would restore and rotate a secret, or store a key, for a company no longer served
    // (whose rotation the rotation function refuses): the restore comes first, then the install.
    const kept = imported ?? (conventional?.deletedAt === undefined ? conventional : undefined);
    throw new CompanyRemovedError(
      registered,
      ctx.clock.now(),
      kept === undefined ? undefined : { secret: kept.name, imported: imported !== undefined },
    );
  }
  if (registered === null && conventional === undefined && imported === undefined) throw unknownCompany(id, { add: true });
  const key = await verifyCompanyKey(ctx, id, apiKey);
  const described = { keyPrefix: key.keyPrefix, apiKeyId: key.apiKeyId, permissions: key.permissions };
  if (imported !== undefined) {
    // An imported secret keeps its name and its stack-owned RotationSchedule: store the key only.
    const held = await heldKey(ctx.store, imported.secretId);
    const change = await installCompanyKey({ ...ctx, directory: ctx.directory }, id, apiKey);
    const description = await ctx.lifecycle.describe(imported.secretId);
    const encryption = secretEncryption(description ?? {});
    return {
      companyId: id,
      secret: change.secret,
      secretArn: imported.secretId,
      secretResult: 'replaced',
      rotation: 'stack_managed',
      rotationDays: registered?.rotationDays ?? ctx.defaultRotationDays,
      noop: false,
      encryption: { ...encryption, stageMustNameKey: !encryption.awsManagedKey },
      ...described,
      replacedKey: await replacedKeyRow(ctx, key, held !== undefined && held.apiKeyId !== key.apiKeyId ? held : null),
    };
  }
  const outcome = await installCompanyKeySecret(ctx.lifecycle, ctx.target, key, registered?.rotationDays ?? ctx.defaultRotationDays);
  // A secret under acctops's name is created with the stack's secrets key (by the stack or by
  // CreateSecret above), which the stack grants by that name and the stage's tags.
  return {
    ...outcome,
    encryption: { ...outcome.encryption, stageMustNameKey: false },
    ...described,
    replacedKey: await replacedKeyRow(ctx, key, outcome.replacedKey),
  };
}

/** The key a secret holds now, by id and prefix; undefined when it holds none that parses (a placeholder). */
async function heldKey(store: SecretStore, secretId: string): Promise<Pick<CompanyKeySecret, 'apiKeyId' | 'keyPrefix'> | undefined> {
  try {
    const held = parseCompanyKeySecret((await store.readSecret(secretId, { stage: SecretStage.current })).value);
    return { apiKeyId: held.apiKeyId, keyPrefix: held.keyPrefix };
  } catch {
    return undefined;
  }
}

/**
 * The key an install replaced, and whether the service still lists it live (read with the key just
 * installed; null when the list cannot be read). No revocation is scheduled for it: the report
 * names it and `keys revoke-pending --prefix` revokes it now (decision 105).
 */
async function replacedKeyRow(
  ctx: CompanyKeyContext,
  installed: CompanyKeySecret,
  replaced: Pick<CompanyKeySecret, 'apiKeyId' | 'keyPrefix'> | null,
): Promise<KeysInstallReport['replacedKey']> {
  if (replaced === null) return null;
  let live: boolean | null = null;
  try {
    const listed = (await listKeys(ctx.clientFor(installed))).find((k) => k.publicId === replaced.apiKeyId);
    live = listed !== undefined && listed.revokedAt === null;
  } catch {
    live = null; // the install is done; only the wording of its line depends on this
  }
  return { apiKeyId: replaced.apiKeyId, keyPrefix: replaced.keyPrefix, live };
}

/**
 * `companies remove`: the registry marks it removed, then its key secret stops rotating and is
 * scheduled for deletion, and the registry records when it goes: nothing else can tell a second
 * `remove` (DescribeSecret says when the deletion was asked, not with which window).
 */
export async function removeCompany(
  registry: Pick<CompanyRegistry, 'get' | 'remove' | 'recordKeyDeletion' | 'recordKeysRevoked'>,
  now: number,
  secrets: () => { stage: string; lifecycle: SecretLifecycle; directory: Pick<CompanyKeyDirectory, 'find'> },
  companyId: string,
  recoveryDays: number,
  keyAccess: () => Promise<RemovalKeyAccess>,
  revokeKeys = false,
): Promise<CompanyRemoval> {
  // Read (and with --revoke-keys revoked) before anything changes: once the secret is scheduled for
  // deletion nothing can read the company's current key, the only credential that can revoke its keys.
  const keys = await keysAtRemoval(
    keyAccess,
    companyId,
    revokeKeys,
    async () => {
      const { stage, lifecycle } = secrets();
      return (await lifecycle.describe(companyKeySecretName(stage, companyId.toLowerCase())))?.deletedAt !== undefined;
    },
    async () => {
      const entry = await registry.get(companyId);
      return entry?.removedAt === undefined ? undefined : entry.keysRevoked;
    },
  );
  let removed;
  try {
    removed = await registry.remove(companyId, now);
  } catch (error) {
    if (error instanceof CompanyNotRegisteredError) throw unknownCompany(error.companyId, { withoutKey: false });
    throw error;
  }
  const { stage, lifecycle, directory } = secrets();
  const id = removed.company.companyId;
  // Before the secret goes, whose deletion makes these keys unreadable: a repeat reports them from here.
  if (removed.result === 'removed' && keys.revoked !== null && keys.current !== null) {
    const current = keys.current;
    const older = keys.revoked
      .filter((k) => k.apiKeyId !== current.apiKeyId)
      .map((k) => ({ keyPrefix: k.keyPrefix, apiKeyId: k.apiKeyId }));
    await registry.recordKeysRevoked(id, { revokedAt: new Date(now).toISOString(), current, older }, now);
  }
  const key = await retireCompanyKeySecret(lifecycle, stage, id, recoveryDays, {
    recorded: removed.company.keyDeletion,
    // A secret the stack imports (cdk.json existingSecretArn) has its own name: found by its tags.
    imported: async (companyId) => (await findByTag(directory, companyId))?.secretId,
  });
  if (key.result === 'scheduled' && key.deletionDate !== null && key.recoveryWindowDays !== null) {
    await registry.recordKeyDeletion(id, { deletionDate: key.deletionDate, recoveryWindowDays: key.recoveryWindowDays }, now);
  }
  return { result: removed.result, company: companyRow(removed.company), key, keys };
}

/** What `companies remove` needs to name and revoke the company's keys: its key secret, and the deps of a revocation. */
export interface RemovalKeyAccess {
  find(companyId: string): Promise<CompanyKeyEntry>;
  deps: RevokeNowDeps;
  /**
   * Deletes a revoked key's schedule (AWS mode). A schedule left behind fires after the secret is
   * scheduled for deletion, fails and lands in the dead-letter queue, though its key is revoked
   * (decision 107). Absent locally, where `deps.done` takes the revocation off its queue.
   */
  cancelSchedule?(apiKeyId: string): Promise<void>;
  /** The schedule a pending revocation waits in (AWS mode), named to the operator a plain remove leaves it to. */
  scheduleOf?(apiKeyId: string): { name: string; group: string };
}

/**
 * The company's keys still valid at the service when it is removed: the current key and the old
 * keys pending revocation, by prefix. With `revoke`, the pending ones are revoked now (with the
 * current key), then the current key itself, last since it is the credential; any failure stops the
 * removal (exit 5, nothing removed): a company removed with a valid key nothing names is what
 * decision 105 ends. Without `revoke`, a key secret that cannot be read only leaves `unread` set.
 */
async function keysAtRemoval(
  access: () => Promise<RemovalKeyAccess>,
  companyId: string,
  revoke: boolean,
  scheduledForDeletion: () => Promise<boolean>,
  revokedByEarlierRemoval: () => Promise<RegisteredCompany['keysRevoked']>,
): Promise<CompanyRemoval['keys']> {
  const id = companyId.toLowerCase();
  let entry: CompanyKeyEntry | undefined;
  let deps: RevokeNowDeps;
  let cancelSchedule: RemovalKeyAccess['cancelSchedule'];
  let scheduleOf: RemovalKeyAccess['scheduleOf'];
  let current: CompanyKeySecret;
  try {
    const found = await access();
    deps = found.deps;
    cancelSchedule = found.cancelSchedule?.bind(found);
    scheduleOf = found.scheduleOf?.bind(found);
    entry = await findByTag(found, id);
    if (entry === undefined) {
      // The directory lists no secret scheduled for deletion: an earlier remove's, whose keys may live on.
      if (await scheduledForDeletion()) throw new SecretScheduledForDeletionError('scheduled for deletion', { secretId: id });
      return { current: null, pending: [], revoked: null, unread: null };
    }
    current = parseCompanyKeySecret((await deps.store.readSecret(entry.secretId, { stage: SecretStage.current })).value);
  } catch (error) {
    if (error instanceof SecretScheduledForDeletionError) {
      // A repeat after a `remove --revoke-keys` that completed (a script's retry): nothing is left to revoke.
      const earlier = await revokedByEarlierRemoval();
      if (earlier !== undefined) {
        const row = (k: { keyPrefix: string; apiKeyId: string }): RevokedNowRow => ({
          ...k,
          outcome: 'already_revoked',
          error: null,
          scheduleError: null,
        });
        return { current: earlier.current, pending: [], revoked: [...earlier.older.map(row), row(earlier.current)], unread: null };
      }
    }
    const reason =
      error instanceof SecretScheduledForDeletionError
        ? 'its key secret is scheduled for deletion already (an earlier remove), so its keys cannot be read'
        : describeError(error).message;
    if (revoke)
      throw new CliError(`company ${id}: its keys cannot be revoked: ${reason}; nothing was removed`, {
        code: error instanceof SecretScheduledForDeletionError ? 'revocation_secret_deleted' : 'keys_unreadable',
        exitCode: error instanceof SecretScheduledForDeletionError ? ExitCode.config : ExitCode.partial,
        hint:
          error instanceof SecretScheduledForDeletionError
            ? `\`acctops companies restore --company ${id}\` (within the recovery window), then \`acctops companies remove --company ${id} --revoke-keys\``
            : `run it again; \`acctops keys status --company ${id}\` lists the keys`,
        cause: error,
      });
    return { current: null, pending: [], revoked: null, unread: reason };
  }
  const pending: CompanyRemoval['keys']['pending'] = [];
  for await (const r of deps.scheduler.pending()) {
    if (r.companyId.toLowerCase() === id && r.apiKeyId !== current.apiKeyId)
      pending.push({
        keyPrefix: r.keyPrefix,
        apiKeyId: r.apiKeyId,
        revokeAt: new Date(r.revokeAt).toISOString(),
        schedule: scheduleOf?.(r.apiKeyId) ?? null,
        revokedAt: null,
      });
  }
  const currentRow = { keyPrefix: current.keyPrefix, apiKeyId: current.apiKeyId };
  if (!revoke) {
    if (pending.length > 0) await markRevoked(deps, current, pending);
    return { current: currentRow, pending, revoked: null, unread: null };
  }
  const result = await revokePendingKeys(deps, { secretId: entry.secretId, companyId: id });
  const revoked: RevokedNowRow[] = result.keys.map((k) => ({
    keyPrefix: k.keyPrefix,
    apiKeyId: k.apiKeyId,
    outcome: k.outcome,
    error: null,
    // The schedules are deleted below, all or nothing removed: no row carries a schedule error.
    scheduleError: null,
  }));
  const failed = result.keys.filter((k) => k.outcome === 'failed');
  if (failed.length > 0) {
    const cause = describeError(failed[0]!.error).message;
    throw new CliError(
      `company ${id}: old key(s) ${failed.map((k) => `${k.keyPrefix}…`).join(', ')} could not be revoked (${cause}); nothing was removed, and the current key ${current.keyPrefix}… was not revoked`,
      {
        code: 'revocation_failed',
        exitCode: ExitCode.partial,
        hint: `run \`acctops companies remove --company ${id} --revoke-keys\` again`,
      },
    );
  }
  // Before the current key goes: a rerun after a failure here finds the old keys revoked and the
  // current key still able to read the key list, and deletes what is left.
  if (cancelSchedule !== undefined) {
    try {
      for (const k of result.keys) await cancelSchedule(k.apiKeyId);
    } catch (error) {
      throw new CliError(
        `company ${id}: the old keys pending revocation were revoked, but their revocation schedules could not all be deleted (${describeError(error).message}); nothing was removed, and the current key ${current.keyPrefix}… was not revoked`,
        {
          code: 'schedule_delete_failed',
          exitCode: ExitCode.partial,
          hint: `run \`acctops companies remove --company ${id} --revoke-keys\` again (it needs scheduler:DeleteSchedule on the stack's KeyRevocationScheduleGroup); a schedule left behind fails into the dead-letter queue once the company's key secret is scheduled for deletion`,
          cause: error,
        },
      );
    }
  }
  try {
    // The current key revokes itself: the service lets a key manage its company's keys, itself included.
    await deps.clientFor(current).apiKeys.revoke(current.apiKeyId);
  } catch (error) {
    throw new CliError(
      `company ${id}: the current key ${current.keyPrefix}… could not be revoked (${describeError(error).message}); nothing was removed${revoked.length > 0 ? `; the old keys pending revocation were revoked` : ''}`,
      {
        code: 'revocation_failed',
        exitCode: ExitCode.partial,
        hint: refusedForGood(error)
          ? `the service refuses this revocation, so running it again will not help: revoke the key at the service another way (another key of the company that may manage keys, or the service's own tools), then run \`acctops companies remove --company ${id}\` without --revoke-keys`
          : `run \`acctops companies remove --company ${id} --revoke-keys\` again`,
        cause: error,
      },
    );
  }
  revoked.push({ ...currentRow, outcome: 'revoked', error: null, scheduleError: null });
  return { current: currentRow, pending, revoked, unread: null };
}

/**
 * Sets `revokedAt` of the pending revocations whose key the service lists revoked already: a key a
 * command revoked but whose schedule it could not delete is no key left valid, only a schedule left
 * to fail (decision 113). The list is read with the current key while the secret can still be
 * read; a list that cannot be read leaves every one as valid, which is the safe thing to say.
 */
async function markRevoked(deps: RevokeNowDeps, current: CompanyKeySecret, pending: CompanyRemoval['keys']['pending']): Promise<void> {
  let listed;
  try {
    listed = await listKeys(deps.clientFor(current));
  } catch (error) {
    deps.logger.warn('the key list could not be read; every pending revocation is named as a valid key', { error });
    return;
  }
  for (const row of pending) row.revokedAt = listed.find((k) => k.publicId === row.apiKeyId)?.revokedAt ?? null;
}

/**
 * `companies restore`: the registry entry active again, its key secret restored (within the
 * recovery window) and rotating. A secret the stack imports, which `remove` kept, gets the rotation
 * `remove` stopped back as it was (the function and days still on the secret), not acctops's own.
 */
export async function restoreCompany(
  registry: Pick<CompanyRegistry, 'get' | 'add'>,
  now: number,
  ctx: () => Promise<CompanyKeyContext>,
  companyId: string,
): Promise<CompanyRestore> {
  const existing = await registry.get(companyId);
  if (!existing) throw unknownCompany(companyId.toLowerCase(), { withoutKey: false });
  const added = await registry.add({ companyId: existing.companyId }, now);
  const c = await ctx();
  let rotationDays = added.company.rotationDays ?? c.defaultRotationDays;
  const description = await c.lifecycle.describe(companyKeySecretName(c.target.stage, existing.companyId));
  let key: CompanyRestore['key'] = 'no_secret';
  let secret: string | null = description?.name ?? null;
  if (description?.deletedAt !== undefined) {
    await c.lifecycle.restore(description.secretArn);
    key = 'restored';
  } else if (description) key = 'not_deleted';
  if (description) {
    await c.lifecycle.enableRotation(description.secretArn, {
      lambdaArn: c.target.rotationLambdaArn,
      automaticallyAfterDays: rotationDays,
    });
  } else {
    const found = await findByTag(c.directory, existing.companyId);
    const imported = found === undefined ? undefined : await c.lifecycle.describe(found.secretId);
    if (imported !== undefined) {
      key = 'kept_imported';
      secret = imported.name;
      rotationDays = imported.rotation.automaticallyAfterDays ?? rotationDays;
      if (!imported.rotation.enabled) {
        await c.lifecycle.enableRotation(imported.secretArn, {
          lambdaArn: imported.rotation.lambdaArn ?? c.target.rotationLambdaArn,
          automaticallyAfterDays: rotationDays,
        });
      }
    }
  }
  return { result: added.result, company: companyRow(added.company), key, secret, rotationDays };
}

/**
 * `companies add --rotation-days`: the company's key secret rotates on the registry's days from now
 * on, as `keys install` would set them; without this the new days waited for the next install. Only
 * a secret that rotates is touched, and never rotated now (RotateImmediately false): a removed
 * company's secret comes back with `companies restore`, a key not installed yet takes the days then.
 */
export async function applyRotationDays(ctx: CompanyKeyContext, company: RegisteredCompany): Promise<KeyRotationChange> {
  const id = company.companyId.toLowerCase();
  const rotationDays = company.rotationDays ?? ctx.defaultRotationDays;
  let description = await ctx.lifecycle.describe(companyKeySecretName(ctx.target.stage, id));
  if (description === undefined) {
    const imported = await findByTag(ctx.directory, id);
    if (imported) description = await ctx.lifecycle.describe(imported.secretId);
  }
  if (description === undefined || description.deletedAt !== undefined) return { result: 'no_secret', rotationDays };
  const rotation = description.rotation;
  if (!rotation.enabled) return { result: 'not_rotating', rotationDays };
  if (rotation.automaticallyAfterDays === rotationDays) return { result: 'unchanged', rotationDays };
  await ctx.lifecycle.enableRotation(description.secretArn, {
    lambdaArn: rotation.lambdaArn ?? ctx.target.rotationLambdaArn,
    automaticallyAfterDays: rotationDays,
  });
  return { result: 'updated', rotationDays };
}

/** A company key secret found by its tags rather than its name (one imported past the stack), or undefined. */
async function findByTag(directory: Pick<CompanyKeyDirectory, 'find'>, companyId: string): Promise<CompanyKeyEntry | undefined> {
  try {
    return await directory.find(companyId);
  } catch (error) {
    if (!(error instanceof CompanyKeyNotFoundError) || error.code !== 'company_key_not_found') throw error;
    return undefined;
  }
}

/**
 * Whether the service answered a request with a refusal that a repeat meets again: a 4xx other than
 * a timeout or a rate limit (a service that lets no key revoke itself, say). Anything else (a 5xx,
 * no answer, a 429) may pass on the next try.
 */
function refusedForGood(error: unknown): boolean {
  const status = error instanceof AccountingApiError ? error.status : undefined;
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}
