import type { SecretDescription } from '../ports/secrets';
import { AcctopsError } from '../shared/errors';
import { parseCompanyKeySecret, serializeCompanyKeySecret, type CompanyKeySecret } from './company-key-secret';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY, companyKeySecretName } from './key-directory';
import { secretEncryption, type SecretEncryption } from './secret-encryption';

/**
 * A company key secret's life at run time (issue 15, docs/fleet-rotation.md): `acctops keys
 * install` creates it (CreateSecret with the stack's tags and key) and turns its rotation on
 * (RotateSecret with the rotation function and the company's rotation days, not rotating now);
 * `acctops companies remove` stops its rotation and schedules its deletion with a recovery window
 * (a secret the stack imports is only stopped, never deleted); `acctops companies restore` brings
 * it back. The store calls are a port so that AWS and the local emulator share these rules.
 */
export interface SecretLifecycle {
  /** The secret's metadata, a secret scheduled for deletion included; undefined when there is none. */
  describe(secretId: string): Promise<SecretDescription | undefined>;
  /** The AWSCURRENT value. */
  readCurrent(secretId: string): Promise<string>;
  create(input: {
    name: string;
    value: string;
    description: string;
    tags: Record<string, string>;
    kmsKeyId?: string;
  }): Promise<{ arn: string }>;
  putCurrent(secretId: string, value: string): Promise<void>;
  /** RotateSecret with RotateImmediately=false: sets the schedule (AWS tests the function with testSecret) without rotating now. */
  enableRotation(secretId: string, input: { lambdaArn: string; automaticallyAfterDays: number }): Promise<void>;
  /** CancelRotateSecret: rotation off (and a rotation in progress stopped). */
  cancelRotation(secretId: string): Promise<void>;
  /** DeleteSecret with RecoveryWindowInDays; returns when the secret goes for good. */
  scheduleDeletion(secretId: string, recoveryWindowDays: number): Promise<{ deletionDate?: number }>;
  restore(secretId: string): Promise<void>;
}

export interface CompanyKeySecretTarget {
  stage: string;
  /** The rotation function (stack output RotateApiKeyFunctionArn; the local mode's registered handler). */
  rotationLambdaArn: string;
  /** The stack's secrets key; absent: Secrets Manager's default key (the local emulator). */
  kmsKeyId?: string;
  /** Tags besides purpose, company and stage (the stack's own tags). */
  extraTags?: Record<string, string>;
}

export type SecretOutcome = 'created' | 'restored' | 'replaced' | 'unchanged';
export type RotationOutcome = 'turned_on' | 'updated' | 'already_on';

export interface InstallOutcome {
  companyId: string;
  secret: string;
  secretArn: string;
  secretResult: SecretOutcome;
  rotation: RotationOutcome;
  rotationDays: number;
  /** True when nothing changed: the key was already installed and rotating as asked. */
  noop: boolean;
  /** The key that encrypts the secret (the stack's secrets key for a secret this created). */
  encryption: SecretEncryption;
  /**
   * The key the secret held before and no longer does (now its AWSPREVIOUS version), by id and
   * prefix only; null when none was replaced. Nothing schedules its revocation: the caller says so.
   */
  replacedKey: { apiKeyId: string; keyPrefix: string } | null;
}

/** Secrets Manager keeps a deleted secret restorable 7 to 30 days. */
export const RECOVERY_WINDOW_DAYS = { min: 7, max: 30, default: 30 } as const;

export class CompanyKeyProvisioningError extends AcctopsError {
  override readonly name: string = 'CompanyKeyProvisioningError';
  constructor(message: string, options: { code: string; cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Idempotent: a missing secret is created with `key`, one scheduled for deletion is restored, an
 * existing one gets `key` as its current version only if it holds another key; rotation is turned on
 * (or its days or function corrected) only if it is not on as asked. The value is never returned.
 */
export async function installCompanyKeySecret(
  store: SecretLifecycle,
  target: CompanyKeySecretTarget,
  key: CompanyKeySecret,
  rotationDays: number,
): Promise<InstallOutcome> {
  const companyId = key.companyId.toLowerCase();
  const name = companyKeySecretName(target.stage, companyId);
  let description = await store.describe(name);
  let secretOutcome: SecretOutcome;
  let replacedKey: InstallOutcome['replacedKey'] = null;
  const value = serializeCompanyKeySecret({ ...key, companyId });
  if (description === undefined) {
    const tags = {
      ...(target.extraTags ?? {}),
      [COMPANY_KEY_TAGS.purpose]: PURPOSE_COMPANY_KEY,
      [COMPANY_KEY_TAGS.company]: companyId,
      [COMPANY_KEY_TAGS.stage]: target.stage,
    };
    const { arn } = await store.create({
      name,
      value,
      description: `API key of company ${companyId} (acctops ${target.stage}; created by acctops keys install)`,
      tags,
      ...(target.kmsKeyId ? { kmsKeyId: target.kmsKeyId } : {}),
    });
    secretOutcome = 'created';
    description = await store.describe(arn);
    if (description === undefined)
      throw new CompanyKeyProvisioningError(`secret ${name} vanished right after its creation`, { code: 'secret_vanished' });
  } else {
    if (description.deletedAt !== undefined) {
      await store.restore(description.secretArn);
      secretOutcome = 'restored';
    } else {
      secretOutcome = 'unchanged';
    }
    let held: CompanyKeySecret | undefined;
    try {
      held = parseCompanyKeySecret(await store.readCurrent(description.secretArn));
    } catch {
      held = undefined; // a placeholder (a stack-created secret before its first install) or damaged
    }
    if (held?.apiKeyId !== key.apiKeyId || held.apiKey !== key.apiKey) {
      await store.putCurrent(description.secretArn, value);
      if (secretOutcome === 'unchanged') secretOutcome = 'replaced';
      if (held !== undefined && held.apiKeyId !== key.apiKeyId) replacedKey = { apiKeyId: held.apiKeyId, keyPrefix: held.keyPrefix };
    }
  }
  const rotation = description.rotation;
  let rotationOutcome: RotationOutcome;
  if (
    rotation.enabled &&
    rotation.lambdaArn === target.rotationLambdaArn &&
    rotation.automaticallyAfterDays === rotationDays &&
    secretOutcome !== 'restored'
  ) {
    rotationOutcome = 'already_on';
  } else {
    await store.enableRotation(description.secretArn, { lambdaArn: target.rotationLambdaArn, automaticallyAfterDays: rotationDays });
    rotationOutcome = rotation.enabled ? 'updated' : 'turned_on';
  }
  return {
    companyId,
    secret: description.name,
    secretArn: description.secretArn,
    secretResult: secretOutcome,
    rotation: rotationOutcome,
    rotationDays,
    noop: secretOutcome === 'unchanged' && rotationOutcome === 'already_on',
    encryption: secretEncryption(description),
    replacedKey,
  };
}

export interface RetireOutcome {
  companyId: string;
  secret: string | null;
  /**
   * What became of the secret: none found, already scheduled for deletion, now scheduled, or kept:
   * a secret under another name than acctops's (`kept_imported`: the stack imports it, cdk.json
   * `existingSecretArn`), which is not acctops's to delete; its rotation is stopped all the same.
   */
  result: 'no_secret' | 'already_scheduled' | 'scheduled' | 'kept_imported';
  rotationStopped: boolean;
  /** When the secret goes for good (DeleteSecret's DeletionDate); null when it is not known (or there is no secret). */
  deletionDate: string | null;
  /** `already_scheduled`: when its deletion was asked (DescribeSecret's DeletedDate); null otherwise. */
  scheduledAt: string | null;
  /** The recovery window of the deletion; null when it was scheduled before and not recorded then. */
  recoveryWindowDays: number | null;
}

/** What an earlier `retireCompanyKeySecret` scheduled, as the caller recorded it (the registry entry). */
export interface RecordedDeletion {
  deletionDate: string;
  recoveryWindowDays: number;
}

/**
 * How far the recorded DeletionDate minus its window may be from DescribeSecret's DeletedDate and
 * still describe the same deletion: one request's two timestamps, apart by a rounding at most.
 */
const SAME_DELETION_MS = 60_000;
const DAY_MS = 86_400_000;

export interface RetireOptions {
  /** What an earlier call scheduled, as the caller recorded it. */
  recorded?: RecordedDeletion;
  /**
   * The company's key secret found by its tags (the directory's find), for a company without one
   * under acctops's name; undefined when it has none. Absent: only acctops's name is looked at.
   */
  imported?: (companyId: string) => Promise<string | undefined>;
}

/**
 * Rotation off, then deletion scheduled with the recovery window. Idempotent. A secret already
 * scheduled keeps its own date: `recorded` (what the first call returned, kept by the caller) says
 * it, if it matches the secret's DeletedDate; else only when the deletion was asked is known.
 * A secret found only by its tags is not acctops's (the stack imports it, or someone tagged it by
 * hand): its rotation is stopped, since that is what acts on the company, and the secret is kept.
 */
export async function retireCompanyKeySecret(
  store: SecretLifecycle,
  stage: string,
  companyId: string,
  recoveryWindowDays: number,
  options: RetireOptions = {},
): Promise<RetireOutcome> {
  const { recorded } = options;
  const id = companyId.toLowerCase();
  const description = await store.describe(companyKeySecretName(stage, id));
  if (description === undefined) {
    const importedId = await options.imported?.(id);
    const imported = importedId === undefined ? undefined : await store.describe(importedId);
    if (imported !== undefined && imported.deletedAt === undefined) {
      const rotationStopped = imported.rotation.enabled;
      if (rotationStopped) await store.cancelRotation(imported.secretArn);
      return {
        companyId: id,
        secret: imported.name,
        result: 'kept_imported',
        rotationStopped,
        deletionDate: null,
        scheduledAt: null,
        recoveryWindowDays: null,
      };
    }
    return {
      companyId: id,
      secret: null,
      result: 'no_secret',
      rotationStopped: false,
      deletionDate: null,
      scheduledAt: null,
      recoveryWindowDays,
    };
  }
  if (description.deletedAt !== undefined) {
    const askedAt = description.deletedAt;
    // A record from before a restore and a deletion done outside acctops describes another deletion.
    const same =
      recorded !== undefined &&
      Math.abs(Date.parse(recorded.deletionDate) - recorded.recoveryWindowDays * DAY_MS - askedAt) <= SAME_DELETION_MS;
    return {
      companyId: id,
      secret: description.name,
      result: 'already_scheduled',
      rotationStopped: false,
      deletionDate: same ? recorded.deletionDate : null,
      scheduledAt: new Date(askedAt).toISOString(),
      recoveryWindowDays: same ? recorded.recoveryWindowDays : null,
    };
  }
  let rotationStopped = false;
  if (description.rotation.enabled) {
    await store.cancelRotation(description.secretArn);
    rotationStopped = true;
  }
  const { deletionDate } = await store.scheduleDeletion(description.secretArn, recoveryWindowDays);
  return {
    companyId: id,
    secret: description.name,
    result: 'scheduled',
    rotationStopped,
    deletionDate: deletionDate === undefined ? null : new Date(deletionDate).toISOString(),
    scheduledAt: null,
    recoveryWindowDays,
  };
}
