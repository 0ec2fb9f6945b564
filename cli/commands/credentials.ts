import { randomUUID } from 'node:crypto';
import { Command } from 'commander';
import { PermissionDeniedError, type AccountingClient } from '../../src/core/accounting-api';
import { type CompanyKeyDirectory, type CompanyKeySecret, listKeys, serializeCompanyKeySecret } from '../../src/core/api-keys';
import { parseInstitutionCredential } from '../../src/core/credentials/institution-credential';
import type { ProbeResult } from '../../src/core/health/check-health';
import { type SecretStore, SecretStage, versionWithStage } from '../../src/core/ports/secrets';
import { keyPrefix } from '../../src/core/shared/redact';
import { CliConfigError, CliError } from '../errors';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';
import type { CommandHost } from './host';

/**
 * Putting credentials into the secret store, from the environment only: the runbooks "Change the
 * institution secret" and "Install a company API key" (docs/runbooks.md). Each new value becomes a new
 * AWSCURRENT version; the one it replaces stays as AWSPREVIOUS, which is what --rollback restores.
 */

export interface SecretChange {
  secret: string;
  versionId: string;
  previousVersionId?: string;
}

export interface InstitutionSecretReport extends SecretChange {
  institutionId?: string;
  /** The health probes run against the stored value after the change. */
  probes: readonly ProbeResult[];
  verified: boolean;
  rolledBack?: boolean;
}

type Store = Pick<SecretStore, 'putSecretValue' | 'describeSecret' | 'moveStage'>;

async function putCurrent(store: Store, secretId: string, value: string): Promise<SecretChange> {
  const before = await store.describeSecret(secretId);
  const previousVersionId = versionWithStage(before, SecretStage.current);
  const { versionId } = await store.putSecretValue(secretId, { value, clientRequestToken: randomUUID() });
  return { secret: before.name, versionId, ...(previousVersionId ? { previousVersionId } : {}) };
}

/** Moves AWSCURRENT back to the AWSPREVIOUS version. */
async function rollBack(store: Store, secretId: string): Promise<SecretChange> {
  const description = await store.describeSecret(secretId);
  const current = versionWithStage(description, SecretStage.current);
  const previous = versionWithStage(description, SecretStage.previous);
  if (!current || !previous) throw new CliError(`secret ${description.name} has no AWSPREVIOUS version to go back to`, { code: 'no_previous_version', exitCode: ExitCode.failure });
  await store.moveStage(secretId, { stage: SecretStage.current, toVersionId: previous, fromVersionId: current });
  return { secret: description.name, versionId: previous, previousVersionId: current };
}

export function required(session: Session, name: 'ACCTOPS_INSTITUTION' | 'ACCTOPS_API_KEY', what: string): string {
  const value = session.env[name]?.trim();
  if (!value) throw new CliConfigError(`${what} is read from ${name}, which is not set`, `read -rs ${name} && export ${name}   (never a flag: it would stay in shell history)`);
  return value;
}

export interface InstitutionTarget {
  store: Store;
  secretId: string;
  /** Runs the health probes against the stored value (the check-health function in AWS). */
  verify(): Promise<readonly ProbeResult[]>;
}

export async function setInstitutionSecret(target: InstitutionTarget, value: string | undefined): Promise<InstitutionSecretReport> {
  const change = value === undefined ? await rollBack(target.store, target.secretId) : await putCurrent(target.store, target.secretId, value);
  const probes = await target.verify();
  return {
    ...change,
    ...(value === undefined ? { rolledBack: true } : { institutionId: parseInstitutionCredential(value).institutionId }),
    probes,
    verified: probes.every((p) => p.ok),
  };
}

export interface CompanyKeyTarget {
  store: Store;
  directory: Pick<CompanyKeyDirectory, 'find'>;
  clientFor(key: Pick<CompanyKeySecret, 'apiKey' | 'companyId'>): AccountingClient;
  clock: { now(): number };
}

export interface KeyInstallReport extends SecretChange {
  companyId: string;
  keyPrefix: string;
  apiKeyId: string;
  permissions: string[];
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
export async function verifyCompanyKey(target: Pick<CompanyKeyTarget, 'clientFor' | 'clock'>, companyId: string, apiKey: string): Promise<CompanyKeySecret> {
  const client = target.clientFor({ apiKey, companyId });
  const companies = (await client.companies.list().all()).map((c) => c.parsed.publicId.toLowerCase());
  if (companies.length !== 1 || companies[0] !== companyId) {
    throw new CliError(`the key in ACCTOPS_API_KEY does not act for company ${companyId}`, { code: 'wrong_company', exitCode: ExitCode.config, hint: 'use a key of that company' });
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
  const listed = keys.find((k) => k.prefix === prefix && k.revokedAt === null);
  if (!listed) throw new CliError(`the service does not list a live key ${prefix}… for the company`, { code: 'key_not_listed', exitCode: ExitCode.config });
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

/** The client's 401 and 403 classes, as a failed probe names them. */
const REFUSED = /^(Authentication|PermissionDenied|KeyExpired|KeyRevoked|CreatorDisabled|CompanyAccessRemoved)Error$/;

export function institutionCommand(host: CommandHost): Command {
  const institution = new Command('institution').description('The institution credential in the secret store.');
  institution
    .command('set-secret')
    .description('Store the institution credential from ACCTOPS_INSTITUTION (<id>:<secret> or JSON) as the new current version, then check it.')
    .option('--rollback', 'instead, make the previous version current again')
    .action(
      host.run(async (session, opts: { rollback?: boolean }) => {
        const value = opts.rollback ? undefined : required(session, 'ACCTOPS_INSTITUTION', 'the institution credential');
        if (value !== undefined) {
          try {
            parseInstitutionCredential(value);
          } catch (error) {
            const detail = error instanceof Error ? error.message : 'malformed';
            throw new CliConfigError(`ACCTOPS_INSTITUTION is not an institution credential (${detail})`, 'set it to <institution_id>:<secret_key> or {"institutionId": …, "secretKey": …}');
          }
        }
        const report =
          session.mode === 'aws'
            ? await (await host.aws(session)).setInstitutionSecret(value)
            : await session.local((world) =>
                setInstitutionSecret(
                  {
                    store: world.secrets,
                    secretId: world.state.institutionSecret,
                    verify: async () => (await world.checkStoredInstitution()).probes,
                  },
                  value,
                ),
              );
        session.out.result(report, () => {
          session.out.line(`${report.rolledBack ? 'Rolled back' : 'Stored'} ${report.secret}: version ${report.versionId} is current${report.previousVersionId ? ` (was ${report.previousVersionId})` : ''}.`);
          for (const p of report.probes) session.out.line(`  ${p.ok ? 'ok  ' : 'FAIL'} ${p.name}${p.error ? `: ${p.error.message}` : ''}`);
        });
        if (!report.verified) {
          // The service refusing the credential (401/403) is exit 4 like any refused credential;
          // an unreachable service or an unreadable secret stays a failure.
          const refused = report.probes.some((p) => !p.ok && REFUSED.test(p.error?.name ?? ''));
          throw new CliError(refused ? 'the service refused the stored institution credential' : 'the stored institution credential does not work', {
            code: 'institution_check_failed',
            exitCode: refused ? ExitCode.auth : ExitCode.failure,
            hint: report.rolledBack ? 'the previous value fails too; check with the service owner' : 'go back with `acctops institution set-secret --rollback`',
          });
        }
      }),
    );
  return institution;
}

