import { Command } from 'commander';
import {
  keyStatus,
  parseCompanyKeySecret,
  revokeApiKey,
  rotateNow,
  type DueRevocationsResult,
  type KeyStatus,
  type RevocationOutcome,
  type RevokeDeps,
  type RotateNowResult,
} from '../../src/core/api-keys';
import { SecretNotFoundError, SecretStage, type SecretStore } from '../../src/core/ports/secrets';
import { guid } from '../args';
import { CliError, UsageError } from '../errors';
import { ExitCode } from '../exit-codes';
import { iso, relative } from '../format';
import type { LocalWorld } from '../local/local-world';
import type { CommandHost } from './host';
import { installKeyCommand } from './credentials';
import type { Output } from '../output';

export interface RotateReport extends RotateNowResult {
  previousKeyPrefix?: string;
  keyPrefix?: string;
  /** When the previous key stops working (its revocation is scheduled for then). */
  previousKeyRevokeAt?: string;
  /** Old keys whose grace period had ended, revoked before this rotation (local mode). */
  revokedBefore?: RevokedKey[];
  /** With --revoke-previous-now: what became of the previous key. */
  previousKeyRevoked?: RevocationOutcome;
}

/**
 * Revokes the secret's AWSPREVIOUS key now instead of after the grace period (a leaked key): the
 * same `revokeApiKey` the scheduled revocation runs, so it never revokes the current key and a key
 * already gone is fine. Our own consumers holding the old key get a 401, read the secret again and
 * retry with the new key; the schedule, when it fires later, finds the key revoked.
 */
export async function revokePreviousNow(
  secretId: string,
  deps: RevokeDeps,
): Promise<{ outcome: RevocationOutcome; apiKeyId: string; keyPrefix: string } | undefined> {
  const store = deps.store as Pick<SecretStore, 'readSecret'>;
  const current = await store.readSecret(secretId, { stage: SecretStage.current });
  let previous;
  try {
    previous = parseCompanyKeySecret((await store.readSecret(secretId, { stage: SecretStage.previous })).value);
  } catch (error) {
    if (error instanceof SecretNotFoundError) return undefined;
    throw error;
  }
  const outcome = await revokeApiKey(
    deps,
    {
      secretId,
      companyId: previous.companyId,
      apiKeyId: previous.apiKeyId,
      keyPrefix: previous.keyPrefix,
      revokeAt: deps.clock.now(),
      rotationToken: current.versionId,
    },
  );
  return { outcome, apiKeyId: previous.apiKeyId, keyPrefix: previous.keyPrefix };
}

export interface RevokedKey {
  keyPrefix: string;
  outcome: string;
}

export interface KeyStatusReport {
  now: string;
  companies: KeyStatus[];
  revokedBefore?: RevokedKey[];
}

export function revokedKeys(result: DueRevocationsResult): RevokedKey[] {
  return [
    ...result.outcomes.map((o) => ({ keyPrefix: o.keyPrefix, outcome: o.outcome })),
    ...result.failed.map((f) => ({ keyPrefix: f.keyPrefix, outcome: 'failed (stays queued)' })),
  ];
}

/** `keys rotate` in the local mode: the real protocol, run by the emulator against the embedded service. */
export async function rotateLocal(world: LocalWorld, companyId: string, options: { revokePreviousNow?: boolean } = {}): Promise<RotateReport> {
  const revokedBefore = revokedKeys(await world.runDueRevocations());
  const entry = await world.directory.find(companyId);
  const before = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
  const result = await rotateNow({ store: world.secrets, directory: world.directory, logger: world.logger }, companyId);
  const after = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
  let previousKeyRevoked: RevocationOutcome | undefined;
  if (options.revokePreviousNow && result.state === 'completed') {
    const revoked = await revokePreviousNow(entry.secretId, world.revokeDeps());
    if (revoked) {
      previousKeyRevoked = revoked.outcome;
      await world.revocations.complete(revoked.apiKeyId);
    }
  }
  let revokeAt: number | undefined;
  for await (const r of world.revocations.pending()) if (r.apiKeyId === before.apiKeyId) revokeAt = r.revokeAt;
  return {
    ...(previousKeyRevoked ? { previousKeyRevoked } : {}),
    ...result,
    previousKeyPrefix: before.keyPrefix,
    keyPrefix: after.keyPrefix,
    ...(revokeAt === undefined ? {} : { previousKeyRevokeAt: iso(revokeAt) }),
    revokedBefore,
  };
}

export async function keyStatusLocal(world: LocalWorld): Promise<KeyStatusReport> {
  const revokedBefore = revokedKeys(await world.runDueRevocations());
  const companies = await keyStatus({ store: world.secrets, directory: world.directory, scheduler: world.revocations, clientFor: (key) => world.clientForKey(key), clock: world.clock });
  return { now: iso(world.clock.now())!, companies, revokedBefore };
}

export function keysCommand(host: CommandHost): Command {
  const keys = new Command('keys').description("Company API keys held in the secret store: rotate one now, show every company's key, install one.");

  keys
    .command('rotate')
    .description("Rotate a company's API key now: Secrets Manager's four steps, the old key revoked after the grace period.")
    .requiredOption('--company <id>', "the company's publicId", guid)
    .option('--no-wait', 'AWS mode: return once the rotation has started instead of waiting for it')
    .option('--revoke-previous-now', 'revoke the previous key as soon as the rotation completes, without the grace period (a leaked key)')
    .action(
      host.run(async (session, opts: { company: string; wait: boolean; revokePreviousNow?: boolean }) => {
        const revokeNow = opts.revokePreviousNow === true;
        if (revokeNow && !opts.wait) throw new UsageError('--revoke-previous-now waits for the rotation; drop --no-wait', 'run `acctops keys rotate --help`');
        const report =
          session.mode === 'aws'
            ? await (await host.aws(session)).rotateKey(opts.company, { wait: opts.wait, revokePreviousNow: revokeNow })
            : await session.local((world) => rotateLocal(world, opts.company, { revokePreviousNow: revokeNow }));
        session.out.result(report, () => renderRotate(session.out, report));
        if (report.state === 'failed') {
          throw new CliError(`the rotation of ${report.secret} failed and was rolled back; AWSCURRENT is unchanged`, {
            code: 'rotation_failed',
            exitCode: ExitCode.failure,
            hint: 'the rotation function\'s logs name the failed step (AWS: /acctops/<stage>/rotate-api-key; locally: --verbose); see docs/runbooks.md, "A key rotation failed"',
          });
        }
      }),
    );

  keys
    .command('status')
    .description('For each company: key prefix, permissions, last use, last and next rotation, pending revocations.')
    .option('--company <id>', 'only this company', guid)
    .action(
      host.run(async (session, opts: { company?: string }) => {
        const report = session.mode === 'aws' ? await (await host.aws(session)).keyStatus() : await session.local((world) => keyStatusLocal(world));
        const companies = opts.company ? report.companies.filter((c) => c.companyId === opts.company) : report.companies;
        if (companies.some((c) => c.error !== undefined)) session.partial();
        session.out.result({ ...report, companies }, () => renderStatus(session.out, { ...report, companies }));
      }),
    );
  keys.addCommand(installKeyCommand(host));
  return keys;
}

export function renderRotate(out: Output, report: RotateReport): void {
  for (const r of report.revokedBefore ?? []) out.line(`Old key ${r.keyPrefix}… past its grace period: ${r.outcome}.`);
  out.line(`Rotation of ${report.secret} (company ${report.companyId}): ${report.state}`);
  if (report.previousKeyPrefix && report.keyPrefix && report.previousKeyPrefix !== report.keyPrefix) {
    out.line(`  key ${report.previousKeyPrefix}… -> ${report.keyPrefix}…`);
  }
  if (report.previousKeyRevoked) out.line(`  the previous key ${report.previousKeyPrefix}… was revoked now: ${report.previousKeyRevoked}`);
  else if (report.previousKeyRevokeAt) out.line(`  the previous key keeps working until ${report.previousKeyRevokeAt}, then it is revoked`);
  if (report.state === 'in_progress') out.line('  Secrets Manager runs the steps now; follow with `acctops keys status`.');
}

export function renderStatus(out: Output, report: KeyStatusReport): void {
  const now = Date.parse(report.now);
  for (const r of report.revokedBefore ?? []) out.line(`Old key ${r.keyPrefix}… past its grace period: ${r.outcome}.`);
  out.table(report.companies, [
    { header: 'COMPANY', value: (c) => c.companyId },
    { header: 'KEY', value: (c) => (c.keyPrefix ? `${c.keyPrefix}…` : undefined) },
    { header: 'PERMISSIONS', value: (c) => c.permissions?.join(',') },
    // The check lists the keys with the current key, which the service counts as a use.
    { header: 'LAST USED', value: (c) => (c.lastUsedByThisCheck ? 'this check' : c.lastUsedAt ? relative(Date.parse(c.lastUsedAt), now) : 'never') },
    { header: 'LAST ROTATION', value: (c) => relative(c.lastRotatedAt, now) ?? 'never' },
    { header: 'NEXT ROTATION', value: (c) => (c.rotationEnabled ? relative(c.nextRotationAt, now) : 'disabled') },
    { header: 'ROTATING', value: (c) => (c.rotationInProgress ? 'yes' : 'no') },
    {
      header: 'PENDING REVOCATIONS',
      value: (c) =>
        c.pendingRevocations.map((r) => `${r.keyPrefix}… ${relative(r.revokeAt, now)} (last used ${r.lastUsedAt ? relative(Date.parse(r.lastUsedAt), now) : 'never'})`).join('; '),
    },
  ], 'no company key secrets');
  for (const c of report.companies) if (c.error) out.line(`! ${c.companyId}: ${c.error}`);
}
