import * as z from 'zod';
import { type AccountingClient, type ApiKey, timestampMillis } from '../accounting-api';
import { type SecretDescription, type SecretStore, SecretNotFoundError, SecretStage, versionWithStage } from '../ports/secrets';
import { type Clock } from '../shared/clock';
import { AcctopsError, ConfigError } from '../shared/errors';
import { type Logger } from '../shared/logger';
import { type Metrics } from '../shared/metrics';
import { keyPrefix } from '../shared/redact';
import { shownPrefix } from './listed-key';
import { COMPANY_KEY_TAGS } from './key-directory';
import {
  type CompanyKeySecret,
  describeKey,
  parseCompanyKeySecret,
  samePermissions,
  serializeCompanyKeySecret,
} from './company-key-secret';
import { type RevocationScheduler } from './revocation';
import { lazySchema } from '../shared/lazy-schema';

/**
 * Rotation of a company API key through Secrets Manager's four-step protocol (docs/key-rotation.md,
 * "The four steps"). Every step is safe to run again: Secrets Manager retries, and a crashed run
 * continues from where it stopped.
 */

export const ROTATION_STEPS = ['createSecret', 'setSecret', 'testSecret', 'finishSecret'] as const;
export type RotationStep = (typeof ROTATION_STEPS)[number];

/** The event Secrets Manager sends the rotation function. */
export const rotationEventSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    SecretId: z.string().min(1).max(2048),
    /** The id of the version being rotated in; AWS sends a UUID, the API allows 32 to 64 characters. */
    ClientRequestToken: z.string().min(32).max(64),
    Step: z.enum(ROTATION_STEPS),
  }),
);
export type RotationEvent = z.output<typeof rotationEventSchema>;

/** Replacement keys are named after their rotation, so that a retried step finds its key. */
const ROTATION_KEY_NAME = 'acctops-rotation-';

export function rotationKeyName(token: string): string {
  return `${ROTATION_KEY_NAME}${token}`;
}

/**
 * The rotation token a key was created for, or undefined for a key that rotation did not create
 * or that the service lists without a name (then nothing proves the key is ours).
 */
export function rotationTokenOf(key: Pick<ApiKey, 'name'>): string | undefined {
  const name = key.name;
  return name?.startsWith(ROTATION_KEY_NAME) ? name.slice(ROTATION_KEY_NAME.length) : undefined;
}

export const DEFAULT_GRACE_MS = 30 * 60_000;

export interface RotationSettings {
  /** How long the old key keeps working after the promotion. Default 30 minutes. */
  graceMs: number;
  /**
   * The longest time any consumer serves a cached key (CachedSecret's TTL). The grace period must
   * be longer, or a consumer could still hold the old key when it is revoked.
   */
  consumerCacheTtlMs: number;
}

/** Validated settings; a grace period that does not outlast the consumers' cache is a ConfigError. */
export function rotationSettings(input: Partial<RotationSettings> & Pick<RotationSettings, 'consumerCacheTtlMs'>): RotationSettings {
  const graceMs = input.graceMs ?? DEFAULT_GRACE_MS;
  if (!Number.isInteger(graceMs) || graceMs <= 0) throw new ConfigError([{ path: 'graceMs', message: 'must be a positive integer' }]);
  if (graceMs <= input.consumerCacheTtlMs) {
    throw new ConfigError([
      {
        path: 'graceMs',
        message: `must be longer than the consumers' cache TTL (${input.consumerCacheTtlMs} ms), or they could still hold the revoked key`,
      },
    ]);
  }
  return { graceMs, consumerCacheTtlMs: input.consumerCacheTtlMs };
}

/** A rotation step refused or failed; `code` says why, `step` where. Never holds a key. */
export class KeyRotationError extends AcctopsError {
  override readonly name: string = 'KeyRotationError';
  readonly step: RotationStep | undefined;

  constructor(message: string, options: { code: string; step?: RotationStep; cause?: unknown }) {
    super(message, { code: options.code, cause: options.cause });
    this.step = options.step;
  }
}

/** The event does not name a rotation this function may act on (the AWS template's guards). */
export class RotationGuardError extends KeyRotationError {
  override readonly name: string = 'RotationGuardError';
}

/**
 * createSecret refused: the company registry says the company was removed (`acctops companies
 * remove`). Its key secret may still rotate on a schedule acctops does not own (an imported one
 * keeps the stack's RotationSchedule, which a deploy can turn on again); a new key at the service
 * for a company that is no longer served is what must not happen. No key was created.
 */
export class CompanyRemovedRotationError extends KeyRotationError {
  override readonly name: string = 'CompanyRemovedRotationError';
  readonly companyId: string;
  readonly removedAt: string;

  constructor(companyId: string, removedAt: string, secretName: string) {
    super(
      `company ${companyId} was removed on ${removedAt}: no key is created for it and the rotation of ${secretName} is refused ` +
        `(\`acctops companies restore --company ${companyId}\` brings the company back; if it stays removed, \`acctops companies remove ` +
        `--company ${companyId}\` turns this rotation off, and a secret the stack imports needs the company dropped from cdk.json)`,
      { code: 'company_removed', step: 'createSecret' },
    );
    this.companyId = companyId;
    this.removedAt = removedAt;
  }
}

/**
 * The secret is acctops's for one company (its `acctops:company` tag, else its name
 * `acctops/<stage>/company/<id>/api-key`) but holds another company's key (a copy-paste at
 * install, a secret restored from the wrong backup). Rotating it would mint a key for the company
 * whose key it holds and store it where the other company's consumers read it, so nothing is asked
 * of the service. Names the two companies, never a key.
 */
export class SecretCompanyMismatchError extends KeyRotationError {
  override readonly name: string = 'SecretCompanyMismatchError';
  /** The company the secret is for. */
  readonly secretCompanyId: string;
  /** The company of the key it holds. */
  readonly keyCompanyId: string;

  constructor(secretName: string, secretCompanyId: string, keyCompanyId: string, step?: RotationStep) {
    super(
      `secret ${secretName} is for company ${secretCompanyId} but holds a key of company ${keyCompanyId}: no rotation makes a ` +
        `key from it (install company ${secretCompanyId}'s own key: \`acctops keys install --company ${secretCompanyId}\`, ` +
        `docs/runbooks.md, "Install a company API key")`,
      { code: 'secret_company_mismatch', ...(step !== undefined ? { step } : {}) },
    );
    this.secretCompanyId = secretCompanyId;
    this.keyCompanyId = keyCompanyId;
  }
}

const ACCTOPS_SECRET_NAME = /^acctops\/[^/]+\/company\/([^/]+)\/api-key$/;

/** The company a key secret is for: its company tag, else the id in acctops's own name; undefined when neither says. */
export function secretCompanyOf(description: Pick<SecretDescription, 'name' | 'tags'>): string | undefined {
  const tagged = description.tags[COMPANY_KEY_TAGS.company];
  if (tagged) return tagged.toLowerCase();
  return ACCTOPS_SECRET_NAME.exec(description.name)?.[1]?.toLowerCase();
}

/** Throws SecretCompanyMismatchError when the secret is known to be for another company than the key's. */
export function assertSecretHoldsOwnCompany(
  description: Pick<SecretDescription, 'name' | 'tags'>,
  key: Pick<CompanyKeySecret, 'companyId'>,
  step?: RotationStep,
): void {
  const owner = secretCompanyOf(description);
  if (owner !== undefined && owner !== key.companyId.toLowerCase()) {
    throw new SecretCompanyMismatchError(description.name, owner, key.companyId.toLowerCase(), step);
  }
}

export interface KeyRotationDeps {
  store: Pick<SecretStore, 'describeSecret' | 'readSecret' | 'putSecretValue' | 'moveStage'>;
  /**
   * The company registry's `removedAt` of a company (registryRemovedAt, src/core/companies/company-removal.ts):
   * createSecret refuses a removed company, and fails when the registry cannot be read. Absent: no
   * registry to ask (a caller without one), every company rotates.
   */
  companyRemovedAt?: (companyId: string) => Promise<string | undefined>;
  /** A client acting with `key`; a company's key manages its company's keys (`manage_api_keys`). */
  clientFor(key: CompanyKeySecret): AccountingClient;
  scheduler: RevocationScheduler;
  settings: RotationSettings;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

/** What one invocation of a step did that its rollback must know. */
interface StepAttempt {
  /** createSecret sent the request that creates the replacement key. */
  keyRequested: boolean;
}

/**
 * What `KeyRotation.rollBack` did: `rolled_back` (the keys of the rotation revoked, AWSPENDING
 * removed if it was there; `not_listed`: the keys could not be listed and the rotation had stored
 * none) or `already_current` (the version was promoted: nothing to undo).
 */
export interface RollBackResult {
  result: 'rolled_back' | 'already_current';
  revokedKeys: { apiKeyId: string; keyPrefix: string }[] | 'not_listed';
}

export type StepOutcome =
  /** The version is AWSCURRENT already: the rotation is over, nothing to do. */
  'already_current' | 'done';

export class KeyRotation {
  constructor(private readonly deps: KeyRotationDeps) {}

  /**
   * Runs one step. On any failure after the guards, the rotation is rolled back (`abandon`) and
   * the error rethrown, so that Secrets Manager records the failure.
   */
  async runStep(event: RotationEvent): Promise<StepOutcome> {
    const { SecretId: secretId, ClientRequestToken: token, Step: step } = event;
    const description = await this.deps.store.describeSecret(secretId);
    // The ClientRequestToken is the new version's id, not a credential: logged as what it is. The
    // company, when the secret says which, is what "A key rotation failed" starts from.
    const companyId = secretCompanyOf(description);
    const log = this.deps.logger.child({ secretId, versionId: token, step, ...(companyId === undefined ? {} : { companyId }) });
    const attempt: StepAttempt = { keyRequested: false };
    if (this.guard(description, token, step) === 'already_current') {
      log.info('version is already AWSCURRENT; nothing to do');
      return 'already_current';
    }
    try {
      switch (step) {
        case 'createSecret':
          await this.createSecret(description, token, log, attempt);
          break;
        case 'setSecret':
          await this.setSecret(description, token, log);
          break;
        case 'testSecret':
          await this.testSecret(description, token, log);
          break;
        case 'finishSecret':
          await this.finishSecret(description, token, log);
          break;
      }
    } catch (error) {
      this.deps.metrics.add('RotationStepsFailed', 1);
      log.error('rotation step failed; rolling the rotation back', { error });
      await this.abandon(description.secretArn, token, log, attempt);
      throw error;
    }
    return 'done';
  }

  private guard(description: SecretDescription, token: string, step: RotationStep): 'already_current' | 'pending' {
    const name = description.name;
    if (!description.rotation.enabled) {
      throw new RotationGuardError(`secret ${name} is not enabled for rotation`, { code: 'rotation_not_enabled', step });
    }
    const stages = description.versionStages[token];
    if (!stages) {
      throw new RotationGuardError(`version ${token} has no stage for rotation of secret ${name}`, { code: 'version_not_found', step });
    }
    if (stages.includes(SecretStage.current)) return 'already_current';
    if (!stages.includes(SecretStage.pending)) {
      throw new RotationGuardError(`version ${token} of secret ${name} is not AWSPENDING`, { code: 'version_not_pending', step });
    }
    return 'pending';
  }

  /**
   * Creates the replacement key, at most once per rotation: a key named after the token, with
   * exactly the current key's permissions (and lifetime), stored as the AWSPENDING version.
   * The service shows a full key only in its creation response, so a key of this rotation found
   * at the service without a stored version (a crash between the two calls) can never be used:
   * it is revoked and the rotation fails, rather than a second key being created for it.
   */
  private async createSecret(description: SecretDescription, token: string, log: Logger, attempt: StepAttempt): Promise<void> {
    const secretId = description.secretArn;
    const current = await this.readCurrent(secretId);
    // First of all: a key of another company must not be used to mint anything, nor its company
    // asked about in the registry.
    assertSecretHoldsOwnCompany(description, current, 'createSecret');
    // Before anything is asked of the service, and also when a retry finds a pending value stored:
    // the rollback then revokes that key, so a removed company is left with its current key alone.
    // A registry that cannot be read fails the step too: the current key keeps working, Secrets
    // Manager retries later, and nobody gets a key for a company that may have been removed.
    const removedAt = await this.deps.companyRemovedAt?.(current.companyId.toLowerCase());
    if (removedAt !== undefined) throw new CompanyRemovedRotationError(current.companyId.toLowerCase(), removedAt, description.name);
    const pending = await this.readPending(secretId, token);
    if (pending) {
      log.info('replacement key already stored', describeKey(pending));
      return;
    }
    const client = this.deps.clientFor(current);
    const keys = await listKeys(client);
    const listed = keys.find((k) => k.publicId === current.apiKeyId);
    if (!listed || listed.revokedAt !== null) {
      throw new KeyRotationError(`the current key ${current.keyPrefix} of ${description.name} is not a live key of its company`, {
        code: 'current_key_unknown',
        step: 'createSecret',
      });
    }
    const name = rotationKeyName(token);
    if (keys.some((k) => k.name === name)) {
      throw new KeyRotationError(
        `rotation ${token} created its key earlier but never stored it; the key is revoked and the rotation fails`,
        {
          code: 'replacement_key_lost',
          step: 'createSecret',
        },
      );
    }
    const now = this.deps.clock.now();
    // From here on the service may hold a key of this rotation, whatever the request answers.
    attempt.keyRequested = true;
    const created = await client.apiKeys.create({ name, permissions: listed.permissions, expiresAt: sameLifetime(listed, now) });
    const replacement: CompanyKeySecret = {
      apiKey: created.key,
      apiKeyId: created.publicId,
      keyPrefix: keyPrefix(created.key),
      companyId: current.companyId,
      permissions: [...listed.permissions],
      createdAt: created.createdAt ?? new Date(now).toISOString(),
    };
    await this.deps.store.putSecretValue(secretId, {
      value: serializeCompanyKeySecret(replacement),
      clientRequestToken: token,
      stages: [SecretStage.pending],
    });
    this.deps.metrics.add('ReplacementKeysCreated', 1);
    log.info('replacement key created and stored as AWSPENDING', { ...describeKey(replacement), replaces: current.keyPrefix });
  }

  /** The service made the key active when it created it: nothing to push, only confirm it exists. */
  private async setSecret(description: SecretDescription, token: string, log: Logger): Promise<void> {
    const pending = await this.requirePending(description, token, 'setSecret');
    const current = await this.readCurrent(description.secretArn);
    const listed = (await listKeys(this.deps.clientFor(current))).find((k) => k.publicId === pending.apiKeyId);
    if (!listed || listed.revokedAt !== null) {
      throw new KeyRotationError(`the pending key ${pending.keyPrefix} is not a live key of company ${pending.companyId}`, {
        code: 'pending_key_missing',
        step: 'setSecret',
      });
    }
    log.info('pending key exists at the service', describeKey(pending));
  }

  /**
   * Proves the pending key before promotion, with the pending key itself: it authenticates, acts
   * for the secret's company, and holds exactly the expected permissions.
   */
  private async testSecret(description: SecretDescription, token: string, log: Logger): Promise<void> {
    const pending = await this.readPending(description.secretArn, token);
    if (!pending) {
      // RotateSecret with RotateImmediately false (a deploy of the RotationSchedule) checks the
      // configuration by running testSecret alone on an empty AWSPENDING version: reaching this
      // point (invoked, secret described) is the check. A real rotation always has a value here,
      // and finishSecret refuses a version without one.
      log.info('configuration test: no pending value to test');
      return;
    }
    const current = await this.readCurrent(description.secretArn);
    assertSecretHoldsOwnCompany(description, pending, 'testSecret');
    if (pending.companyId.toLowerCase() !== current.companyId.toLowerCase()) {
      throw new KeyRotationError(`the pending version names another company than the current one`, {
        code: 'wrong_company',
        step: 'testSecret',
      });
    }
    const client = this.deps.clientFor(pending);
    const companies = await client.companies.list().all();
    const company = companies.length === 1 ? companies[0]!.parsed.publicId.toLowerCase() : undefined;
    if (company !== pending.companyId.toLowerCase()) {
      throw new KeyRotationError(`the pending key ${pending.keyPrefix} does not act for company ${pending.companyId}`, {
        code: 'wrong_company',
        step: 'testSecret',
      });
    }
    const listed = (await listKeys(client)).find((k) => k.publicId === pending.apiKeyId);
    if (!listed || !samePermissions(listed.permissions, pending.permissions)) {
      throw new KeyRotationError(`the pending key ${pending.keyPrefix} does not hold exactly the expected permissions`, {
        code: 'permissions_differ',
        step: 'testSecret',
      });
    }
    log.info('pending key works for its company with the expected permissions', describeKey(pending));
  }

  /**
   * Schedules the old key's revocation, then promotes. In that order: a failure between the two
   * leaves a revocation whose key is still current, which `revokeApiKey` refuses to carry out;
   * the other order could leave a promoted rotation whose old key is never revoked.
   */
  private async finishSecret(description: SecretDescription, token: string, log: Logger): Promise<void> {
    const secretId = description.secretArn;
    const pending = await this.requirePending(description, token, 'finishSecret');
    const currentVersion = versionWithStage(description, SecretStage.current);
    const previousVersion = versionWithStage(description, SecretStage.previous);
    const old = await this.readCurrent(secretId);
    if (old.apiKeyId !== pending.apiKeyId) {
      await this.deps.scheduler.schedule({
        secretId,
        companyId: old.companyId,
        apiKeyId: old.apiKeyId,
        keyPrefix: old.keyPrefix,
        revokeAt: this.deps.clock.now() + this.deps.settings.graceMs,
        rotationToken: token,
      });
    }
    await this.deps.store.moveStage(secretId, { stage: SecretStage.current, toVersionId: token, fromVersionId: currentVersion });
    await this.releasePending(description, token, { currentVersion, previousVersion }, log);
    this.deps.metrics.add('RotationsCompleted', 1);
    log.info('rotation promoted; old key revocation scheduled', {
      ...describeKey(pending),
      oldKeyPrefix: old.keyPrefix,
      graceMs: this.deps.settings.graceMs,
    });
  }

  /**
   * Removes AWSPENDING from the promoted version, unless the label left it meanwhile. The rotation
   * doctor gives a stuck rotation up by removing the same label, then revokes its key as an orphan;
   * Secrets Manager retries a rotation with the same token as late as it likes, so that removal can
   * land after this step's guard and before the promotion. Both sides read the labels after their
   * own move (the doctor lists the versions after removing the label), so at least one sees the
   * other's: a label found gone here means the doctor may be revoking this key, and the promotion is
   * undone (docs/key-rotation.md, "finishSecret and the doctor"). The label is read before the
   * removal and again if the removal fails, so the outcome does not hang on how Secrets Manager
   * answers a RemoveFromVersionId that no longer holds the label.
   */
  private async releasePending(
    description: SecretDescription,
    token: string,
    before: { currentVersion: string | undefined; previousVersion: string | undefined },
    log: Logger,
  ): Promise<void> {
    const secretId = description.secretArn;
    if (await this.labelled(secretId, token, SecretStage.pending)) {
      try {
        await this.deps.store.moveStage(secretId, { stage: SecretStage.pending, fromVersionId: token });
        return;
      } catch (error) {
        // Still labelled: the call failed for another reason. AWSCURRENT and AWSPENDING on one
        // version is a finished rotation to Secrets Manager, and its retry stops at the guard.
        if (await this.labelled(secretId, token, SecretStage.pending)) throw error;
      }
    }
    log.warn('AWSPENDING left the version while it was promoted (the rotation doctor gave the rotation up); undoing the promotion');
    try {
      // Only if AWSCURRENT is still where this step put it (RemoveFromVersionId).
      await this.deps.store.moveStage(secretId, { stage: SecretStage.current, toVersionId: before.currentVersion, fromVersionId: token });
    } catch (error) {
      this.deps.metrics.add('RotationRollbacksFailed', 1);
      log.error('undoing the promotion failed: AWSCURRENT may hold a key the rotation doctor revoked', { error });
      throw error;
    }
    try {
      // Moving AWSCURRENT back put AWSPREVIOUS on this version; it belongs where it was.
      await this.deps.store.moveStage(secretId, { stage: SecretStage.previous, toVersionId: before.previousVersion, fromVersionId: token });
    } catch (error) {
      // Cosmetic: the doctor finds a previous key by the versions that held it, labelled or not.
      log.warn('AWSPREVIOUS not moved back after undoing the promotion', { error });
    }
    throw new KeyRotationError(
      `AWSPENDING left version ${token} of ${description.name} while finishSecret promoted it; the promotion is undone`,
      { code: 'pending_label_lost', step: 'finishSecret' },
    );
  }

  private async labelled(secretId: string, versionId: string, stage: string): Promise<boolean> {
    return ((await this.deps.store.describeSecret(secretId)).versionStages[versionId] ?? []).includes(stage);
  }

  /**
   * Rolls back a rotation that failed: unless its version was promoted, every key created for it
   * is revoked and AWSPENDING is removed, so AWSCURRENT is what it was and nothing stays pending.
   * When the keys cannot be listed (the service is down, or the current key was revoked there), the
   * label still goes if the rotation cannot have made a key: no value stored, and this attempt never
   * asked for one. Left on, it would block every rotation until the doctor gives it up an hour later,
   * and a key an earlier, crashed attempt made is named after the token, which the doctor revokes as
   * an orphan. A failure here is logged, not thrown (the step's own error is the one to report); the
   * doctor repairs what is left.
   */
  private async abandon(secretId: string, token: string, log: Logger, attempt: StepAttempt): Promise<void> {
    try {
      const undone = await this.undo(secretId, token, log, attempt);
      if (undone.result === 'already_current') return;
      this.deps.metrics.add('RotationsRolledBack', 1);
      log.warn('rotation rolled back; AWSCURRENT unchanged', { revokedKeys: keysCount(undone.revokedKeys) });
    } catch (error) {
      this.deps.metrics.add('RotationRollbacksFailed', 1);
      log.error('rolling the rotation back failed; the rotation doctor will repair it', { error });
    }
  }

  /**
   * Rolls back, on request, a rotation that nothing runs any more: the one an interrupted local
   * command left (its steps run in that command's process, which the state lock proves gone or
   * stopped). As a failed step's rollback, but a failure is thrown, for the caller to report the
   * rotation as still pending. Whether the interrupted attempt asked the service for a key is not
   * known, so keys that cannot be listed leave the label on. Never for a rotation another process
   * may still run (AWS: Secrets Manager retries a rotation when it likes; the doctor gives those up).
   */
  async rollBack(secretId: string, token: string): Promise<RollBackResult> {
    const log = this.deps.logger.child({ secretId, versionId: token });
    const undone = await this.undo(secretId, token, log, { keyRequested: true });
    if (undone.result === 'rolled_back') {
      this.deps.metrics.add('RotationsRolledBack', 1);
      log.warn('pending rotation rolled back on request; AWSCURRENT unchanged', { revokedKeys: keysCount(undone.revokedKeys) });
    }
    return undone;
  }

  private async undo(secretId: string, token: string, log: Logger, attempt: StepAttempt): Promise<RollBackResult> {
    const description = await this.deps.store.describeSecret(secretId);
    const stages = description.versionStages[token] ?? [];
    if (stages.includes(SecretStage.current)) return { result: 'already_current', revokedKeys: [] };
    // `unreadable` is not "no value": the version may hold a key that must be revoked first.
    const pending = await this.readPending(secretId, token).catch(() => 'unreadable' as const);
    let revoked: RollBackResult['revokedKeys'];
    try {
      revoked = await this.revokeKeysOf(secretId, token, pending === 'unreadable' ? undefined : pending, log);
    } catch (error) {
      if (pending !== undefined || attempt.keyRequested) throw error;
      log.warn('the keys could not be listed, but the rotation stored no key and asked for none; removing AWSPENDING', { error });
      revoked = 'not_listed';
    }
    if (stages.includes(SecretStage.pending)) {
      await this.deps.store.moveStage(secretId, { stage: SecretStage.pending, fromVersionId: token });
    }
    return { result: 'rolled_back', revokedKeys: revoked };
  }

  /** Revokes every live key of the rotation (named after its token, or the pending value's); returns them. */
  private async revokeKeysOf(
    secretId: string,
    token: string,
    pending: CompanyKeySecret | undefined,
    log: Logger,
  ): Promise<{ apiKeyId: string; keyPrefix: string }[]> {
    const current = await this.readCurrent(secretId);
    const client = this.deps.clientFor(current);
    const name = rotationKeyName(token);
    const doomed = (await listKeys(client)).filter(
      (k) => k.revokedAt === null && k.publicId !== current.apiKeyId && (k.name === name || k.publicId === pending?.apiKeyId),
    );
    for (const key of doomed) {
      await client.apiKeys.revoke(key.publicId);
      log.warn('key of the failed rotation revoked', { apiKeyId: key.publicId, keyPrefix: shownPrefix(key.prefix) });
    }
    return doomed.map((k) => ({ apiKeyId: k.publicId, keyPrefix: shownPrefix(k.prefix) }));
  }

  private async readCurrent(secretId: string): Promise<CompanyKeySecret> {
    return parseCompanyKeySecret((await this.deps.store.readSecret(secretId, { stage: SecretStage.current })).value);
  }

  /** The value stored for the rotation's version, or undefined while createSecret has not stored it. */
  private async readPending(secretId: string, token: string): Promise<CompanyKeySecret | undefined> {
    try {
      return parseCompanyKeySecret((await this.deps.store.readSecret(secretId, { versionId: token, stage: SecretStage.pending })).value);
    } catch (error) {
      if (error instanceof SecretNotFoundError) return undefined;
      throw error;
    }
  }

  private async requirePending(description: SecretDescription, token: string, step: RotationStep): Promise<CompanyKeySecret> {
    const pending = await this.readPending(description.secretArn, token);
    if (!pending) {
      throw new KeyRotationError(`version ${token} of ${description.name} has no value: createSecret has not run`, {
        code: 'pending_value_missing',
        step,
      });
    }
    return pending;
  }
}

function keysCount(keys: RollBackResult['revokedKeys']): number | 'not_listed' {
  return keys === 'not_listed' ? keys : keys.length;
}

/** Every key of the client's company (a short list; the service pages it). */
export async function listKeys(client: AccountingClient): Promise<ApiKey[]> {
  return (await client.apiKeys.list().all()).map((item) => item.parsed);
}

/** A key that expires gets a replacement with the same lifetime; one that does not, none. */
function sameLifetime(key: ApiKey, now: number): string | undefined {
  const expires = key.expiresAt === null ? undefined : timestampMillis(key.expiresAt);
  const created = key.createdAt === null ? undefined : timestampMillis(key.createdAt);
  if (expires === undefined || created === undefined || expires <= created) return undefined;
  return new Date(now + (expires - created)).toISOString();
}
