import { randomUUID } from 'node:crypto';
import { PermissionDeniedError, type AccountingClient } from '../../src/core/accounting-api';
import {
  type CompanyKeyDirectory,
  type CompanyKeySecret,
  listKeys,
  matchListedKey,
  MIN_LISTED_PREFIX_CHARS,
  serializeCompanyKeySecret,
  shownPrefix,
} from '../../src/core/api-keys';
import { parseInstitutionCredential } from '../../src/core/credentials/institution-credential';
import type { ProbeResult } from '../../src/core/health/check-health';
import { type SecretStore, SecretStage, versionWithStage } from '../../src/core/ports/secrets';
import { keyPrefix } from '../../src/core/shared/redact';
import { CliError } from '../errors';
import { ExitCode } from '../exit-codes';
import type { InstitutionSecretReport, KeyInstallReport, SecretChange } from './operations';
import { probeRow } from './shared';

/**
 * Putting credentials into the secret store (the emulator's or Secrets Manager), for both modes:
 * the runbooks "Change the institution secret" and "Install a company API key" (docs/runbooks.md).
 * Each new value becomes a new AWSCURRENT version; the one it replaces stays as AWSPREVIOUS, which
 * is what a rollback restores.
 */

/**
 * A custom staging label on the version the last rollback moved AWSCURRENT away from. After a
 * rollback AWSPREVIOUS is that version, the refused value: without a mark a repeated rollback (an
 * on-call unsure whether the first ran) would put it back. Stored with the secret, it holds across
 * processes and for the CLI in both modes; Secrets Manager keeps any labelled version.
 */
export const ROLLED_BACK_STAGE = 'ACCTOPS_ROLLED_BACK';

type Store = Pick<SecretStore, 'putSecretValue' | 'describeSecret' | 'moveStage'>;

async function putCurrent(store: Store, secretId: string, value: string): Promise<SecretChange> {
  const before = await store.describeSecret(secretId);
  const previousVersionId = versionWithStage(before, SecretStage.current);
  const { versionId } = await store.putSecretValue(secretId, { value, clientRequestToken: randomUUID() });
  return { secret: before.name, versionId, previousVersionId: previousVersionId ?? null };
}

interface RollBack extends SecretChange {
  /** The rollback had already been done: nothing moved, `versionId` is the version it restored. */
  alreadyRolledBack: boolean;
}

/**
 * Moves AWSCURRENT back to the AWSPREVIOUS version, unless AWSPREVIOUS is what the last rollback
 * rolled away from: then it is done already, and a repeat changes nothing.
 */
async function rollBack(store: Store, secretId: string): Promise<RollBack> {
  const description = await store.describeSecret(secretId);
  const current = versionWithStage(description, SecretStage.current);
  const previous = versionWithStage(description, SecretStage.previous);
  if (!current || !previous)
    // The secret's versions, not an operation that failed: a value never changed, or its previous
    // version removed by hand. Nothing to roll back to; storing the right value is the way.
    throw new CliError(`secret ${description.name} has no AWSPREVIOUS version to go back to`, {
      code: 'no_previous_version',
      exitCode: ExitCode.config,
      hint: 'nothing earlier is kept to go back to: put the right value in ACCTOPS_INSTITUTION and store it with `acctops institution set-secret`; see docs/runbooks.md, "Change the institution secret"',
    });
  const rolledBackFrom = versionWithStage(description, ROLLED_BACK_STAGE);
  if (rolledBackFrom === previous)
    return { secret: description.name, versionId: current, previousVersionId: previous, alreadyRolledBack: true };
  // The mark first: if the move then fails, AWSPREVIOUS is still unmarked and a retry rolls back.
  if (rolledBackFrom !== current)
    await store.moveStage(secretId, { stage: ROLLED_BACK_STAGE, toVersionId: current, fromVersionId: rolledBackFrom });
  await store.moveStage(secretId, { stage: SecretStage.current, toVersionId: previous, fromVersionId: current });
  return { secret: description.name, versionId: previous, previousVersionId: current, alreadyRolledBack: false };
}

export interface InstitutionTarget {
  store: Store;
  secretId: string;
  /** Runs the health probes against the stored value (the check-health function in AWS). */
  verify(): Promise<readonly ProbeResult[]>;
}

export async function setInstitutionSecret(target: InstitutionTarget, value: string | undefined): Promise<InstitutionSecretReport> {
  const change =
    value === undefined
      ? await rollBack(target.store, target.secretId)
      : { ...(await putCurrent(target.store, target.secretId, value)), alreadyRolledBack: false };
  const probes = (await target.verify()).map(probeRow);
  return {
    ...change,
    institutionId: value === undefined ? null : parseInstitutionCredential(value).institutionId,
    probes,
    verified: probes.every((p) => p.ok),
    rolledBack: value === undefined,
  };
}

export interface CompanyKeyTarget {
  store: Store;
  directory: Pick<CompanyKeyDirectory, 'find'>;
  clientFor(key: Pick<CompanyKeySecret, 'apiKey' | 'companyId'>): AccountingClient;
  clock: { now(): number };
}

/** Checks the key at the service (its company, its id and permissions), then stores it as the company's current key. */
export async function installCompanyKey(target: CompanyKeyTarget, companyId: string, apiKey: string): Promise<KeyInstallReport> {
  const entry = await target.directory.find(companyId);
  const secret = await verifyCompanyKey(target, entry.companyId, apiKey);
  const change = await putCurrent(target.store, entry.secretId, serializeCompanyKeySecret(secret));
  return { ...change, companyId: entry.companyId, keyPrefix: secret.keyPrefix, apiKeyId: secret.apiKeyId, permissions: secret.permissions };
}

/**
 * The key, checked at the service: it acts for `companyId` (lower case) alone, is listed live, and
 * may manage API keys (rotation creates its replacement). Returns what the secret will hold.
 */
export async function verifyCompanyKey(
  target: Pick<CompanyKeyTarget, 'clientFor' | 'clock'>,
  companyId: string,
  apiKey: string,
): Promise<CompanyKeySecret> {
  const client = target.clientFor({ apiKey, companyId });
  const companies = (await client.companies.list().all()).map((c) => c.parsed.publicId.toLowerCase());
  if (companies.length !== 1 || companies[0] !== companyId) {
    throw new CliError(`the key in ACCTOPS_API_KEY does not act for company ${companyId}`, {
      code: 'wrong_company',
      exitCode: ExitCode.config,
      hint: 'use a key of that company',
    });
  }
  const prefix = keyPrefix(apiKey);
  const cannotRotate = (cause?: unknown) =>
    new CliError(`key ${prefix}… lacks manage_api_keys, which rotation needs to create its replacement`, {
      code: 'key_cannot_rotate',
      exitCode: ExitCode.config,
      hint: 'create the key with manage_api_keys (or full_access) and the permissions the exports need',
      cause,
    });
  let keys;
  try {
    keys = await listKeys(client);
  } catch (error) {
    // Listing keys is itself a manage_api_keys operation (docs/assumptions.md).
    if (error instanceof PermissionDeniedError) throw cannotRotate(error);
    throw error;
  }
  const match = matchListedKey(keys, apiKey);
  if (match.kind === 'ambiguous') {
    const listedAs = match.keys.map((k) => `${shownPrefix(k.prefix)}… (${k.publicId})`).join(', ');
    throw new CliError(`the service lists ${match.keys.length} live keys whose prefix begins key ${prefix}…: ${listedAs}`, {
      code: 'key_ambiguous',
      exitCode: ExitCode.config,
      hint: 'revoke the keys of that company you do not use, or install another key; acctops does not guess which key is this one',
    });
  }
  if (match.kind === 'none') {
    const short = match.tooShort.map((k) => `${k.prefix}…`).join(', ');
    throw new CliError(
      match.tooShort.length > 0
        ? `the service lists key prefixes too short to tell this key ${prefix}… from another (${short}; at least ${MIN_LISTED_PREFIX_CHARS} characters after the underscore are needed)`
        : `the service does not list a live key ${prefix}… for the company`,
      { code: 'key_not_listed', exitCode: ExitCode.config },
    );
  }
  const listed = match.key;
  if (!listed.permissions.some((p) => p === 'manage_api_keys' || p === 'full_access')) throw cannotRotate();
  return {
    apiKey,
    apiKeyId: listed.publicId,
    keyPrefix: prefix,
    companyId,
    permissions: [...listed.permissions],
    createdAt: listed.createdAt ?? new Date(target.clock.now()).toISOString(),
  };
}
