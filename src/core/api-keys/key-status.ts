import { type AccountingClient } from '../accounting-api';
import { type SecretStore, SecretStage, versionWithStage } from '../ports/secrets';
import { type Logger, silentLogger } from '../shared/logger';
import { redactString } from '../shared/redact';
import { type CompanyKeySecret, parseCompanyKeySecret } from './company-key-secret';
import type { CompanyKeyDirectory } from './key-directory';
import type { RevocationScheduler } from './revocation';
import { listKeys } from './rotation';

/** One company's row of `acctops keys status`: prefixes and ids, never a key. */
export interface KeyStatus {
  companyId: string;
  /** The secret's name. */
  secret: string;
  keyPrefix?: string;
  apiKeyId?: string;
  permissions?: string[];
  /** ISO 8601, from the service's key list; null when never used. */
  lastUsedAt?: string | null;
  expiresAt?: string | null;
  rotationEnabled: boolean;
  rotationDays?: number;
  /** Epoch ms. */
  lastRotatedAt?: number;
  nextRotationAt?: number;
  /** A version is AWSPENDING that is not AWSCURRENT: a rotation is running (or stuck; see the doctor). */
  rotationInProgress: boolean;
  pendingRevocations: { apiKeyId: string; keyPrefix: string; revokeAt: number }[];
  /** Set when part of the row could not be read; the rest is still shown. */
  error?: string;
}

export interface KeyStatusDeps {
  store: Pick<SecretStore, 'describeSecret' | 'readSecret'>;
  directory: Pick<CompanyKeyDirectory, 'list'>;
  scheduler: Pick<RevocationScheduler, 'pending'>;
  clientFor(key: CompanyKeySecret): AccountingClient;
}

/** For `acctops keys status`: every company key secret, with the service's view of its key. */
export async function keyStatus(deps: KeyStatusDeps): Promise<KeyStatus[]> {
  const revocations: (KeyStatus['pendingRevocations'][number] & { companyId: string })[] = [];
  for await (const r of deps.scheduler.pending()) {
    revocations.push({ companyId: r.companyId.toLowerCase(), apiKeyId: r.apiKeyId, keyPrefix: r.keyPrefix, revokeAt: r.revokeAt });
  }
  const rows: KeyStatus[] = [];
  for await (const entry of deps.directory.list()) {
    const description = await deps.store.describeSecret(entry.secretId);
    const pendingVersion = versionWithStage(description, SecretStage.pending);
    const row: KeyStatus = {
      companyId: entry.companyId,
      secret: entry.name,
      rotationEnabled: description.rotation.enabled,
      rotationDays: description.rotation.automaticallyAfterDays,
      lastRotatedAt: description.rotation.lastRotatedAt,
      nextRotationAt: description.rotation.nextRotationAt,
      rotationInProgress: pendingVersion !== undefined && !(description.versionStages[pendingVersion] ?? []).includes(SecretStage.current),
      pendingRevocations: revocations
        .filter((r) => r.companyId === entry.companyId)
        .map(({ apiKeyId, keyPrefix, revokeAt }) => ({ apiKeyId, keyPrefix, revokeAt }))
        .sort((a, b) => a.revokeAt - b.revokeAt),
    };
    try {
      const current = parseCompanyKeySecret((await deps.store.readSecret(entry.secretId, { stage: SecretStage.current })).value);
      Object.assign(row, { keyPrefix: current.keyPrefix, apiKeyId: current.apiKeyId, permissions: current.permissions });
      const listed = (await listKeys(deps.clientFor(current))).find((k) => k.publicId === current.apiKeyId);
      if (!listed) throw new Error('the current key is not in its company key list');
      Object.assign(row, { permissions: listed.permissions, lastUsedAt: listed.lastUsedAt, expiresAt: listed.expiresAt });
    } catch (error) {
      row.error = redactString(error instanceof Error ? error.message : 'unknown error');
    }
    rows.push(row);
  }
  return rows;
}

export interface RotateNowResult {
  companyId: string;
  secret: string;
  /** The version the rotation brings in. */
  versionId: string;
  /**
   * `completed`: the version is AWSCURRENT already (the local emulator runs the steps before
   * answering); `in_progress`: AWS runs the steps after answering, follow it with `keyStatus`;
   * `failed`: the rotation was rolled back (see the rotation function's logs).
   */
  state: 'completed' | 'in_progress' | 'failed';
}

export interface RotateNowDeps {
  /** RotateSecret in AWS; locally, the emulator, which runs our rotation handler against the sandbox. */
  store: Pick<SecretStore, 'startRotation' | 'describeSecret'>;
  directory: Pick<CompanyKeyDirectory, 'find'>;
  logger?: Logger;
}

/** For `acctops keys rotate --company <id>`: starts the company key's rotation now. */
export async function rotateNow(companyId: string, deps: RotateNowDeps): Promise<RotateNowResult> {
  const entry = await deps.directory.find(companyId);
  const { versionId } = await deps.store.startRotation(entry.secretId);
  const stages = (await deps.store.describeSecret(entry.secretId)).versionStages[versionId] ?? [];
  const state = stages.includes(SecretStage.current) ? 'completed' : stages.includes(SecretStage.pending) ? 'in_progress' : 'failed';
  (deps.logger ?? silentLogger).info('rotation started', { companyId: entry.companyId, secret: entry.name, versionId, state });
  return { companyId: entry.companyId, secret: entry.name, versionId, state };
}
