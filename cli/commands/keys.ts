import { Command } from 'commander';
import {
  type CompanyKeyDirectory,
  type CompanyKeySecret,
  type CompanyKeySecretTarget,
  companyKeySecretName,
  CompanyKeyNotFoundError,
  type InstallOutcome,
  installCompanyKeySecret,
  type SecretLifecycle,
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
import { installCompanyKey, required, verifyCompanyKey } from './credentials';
import type { AccountingClient } from '../../src/core/accounting-api';
import type { Clock } from '../../src/core/shared/clock';
import type { CompanyRegistry } from '../../src/core/companies/company-registry';
import { awsCompanyRegistry, localRegistry } from './companies';
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
  keys
    .command('install')
    .description(
      "Store the key in ACCTOPS_API_KEY as the company's key, after checking it at the service: creates the company's secret (tagged with the stage) " +
        "if it has none and turns its rotation on (the registry's rotation days). Idempotent; the key is never printed.",
    )
    .requiredOption('--company <id>', "the company's publicId (a registered company, or one with a key secret)", guid)
    .action(
      host.run(async (session, opts: { company: string }) => {
        const apiKey = required(session, 'ACCTOPS_API_KEY', 'the company key');
        const report =
          session.mode === 'aws'
            ? await installKey(await (await host.aws(session)).companyKeyContext(), await awsCompanyRegistry(session), opts.company, apiKey)
            : await session.local((world) => installKey(localKeyContext(world), localRegistry(world.stateDir), opts.company, apiKey));
        session.out.result(report, () => renderInstall(session.out, report));
      }),
    );
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

export function localKeyContext(world: LocalWorld): CompanyKeyContext {
  return {
    lifecycle: world.secretLifecycle(),
    store: world.secrets,
    directory: world.directory,
    clientFor: (key) => world.clientForKey(key),
    clock: world.clock,
    // The local mode is one stage, `local`: its secrets are named acctops/local/company/<id>/api-key.
    target: { stage: 'local', rotationLambdaArn: world.rotationLambdaArn },
    defaultRotationDays: world.state.rotationDays,
  };
}

export interface KeysInstallReport extends Omit<InstallOutcome, 'rotation'> {
  /** `stack_managed`: an imported secret (cdk.json existingSecretArn), whose rotation the stack's RotationSchedule owns. */
  rotation: InstallOutcome['rotation'] | 'stack_managed';
  keyPrefix: string;
  apiKeyId: string;
  permissions: string[];
}

/**
 * `keys install`: the company must be registered and active, or already have a key secret (a
 * cdk.json company, the local demo companies); else exit 3 naming `companies add`. The key is
 * checked at the service before anything is written.
 */
export async function installKey(ctx: CompanyKeyContext, registry: Pick<CompanyRegistry, 'get'>, companyId: string, apiKey: string): Promise<KeysInstallReport> {
  const id = companyId.toLowerCase();
  const registered = await registry.get(id);
  const conventional = await ctx.lifecycle.describe(companyKeySecretName(ctx.target.stage, id));
  let imported: { secretId: string } | undefined;
  if (conventional === undefined) {
    try {
      imported = await ctx.directory.find(id);
    } catch (error) {
      if (!(error instanceof CompanyKeyNotFoundError) || error.code !== 'company_key_not_found') throw error;
    }
  }
  const active = registered !== null && registered.removedAt === undefined;
  if (!active && conventional === undefined && imported === undefined) {
    throw new CliError(`company ${id} is ${registered ? 'removed from' : 'not in'} the registry and has no key secret`, {
      code: 'company_not_registered',
      exitCode: ExitCode.config,
      hint: registered ? '`acctops companies restore --company <id>` (or `companies add`) first' : '`acctops companies add --company <id>` first',
    });
  }
  const key = await verifyCompanyKey(ctx, id, apiKey);
  const described = { keyPrefix: key.keyPrefix, apiKeyId: key.apiKeyId, permissions: key.permissions };
  if (imported !== undefined) {
    // An imported secret keeps its name and its stack-owned RotationSchedule: store the key only.
    const change = await installCompanyKey({ ...ctx, directory: ctx.directory }, id, apiKey);
    return {
      companyId: id,
      secret: change.secret,
      secretArn: imported.secretId,
      secretResult: 'replaced',
      rotation: 'stack_managed',
      rotationDays: registered?.rotationDays ?? ctx.defaultRotationDays,
      noop: false,
      ...described,
    };
  }
  const outcome = await installCompanyKeySecret(ctx.lifecycle, ctx.target, key, registered?.rotationDays ?? ctx.defaultRotationDays);
  return { ...outcome, ...described };
}

export function renderInstall(out: Output, report: KeysInstallReport): void {
  if (report.noop) {
    out.line(`Company ${report.companyId}: key ${report.keyPrefix}… is already installed in ${report.secret} and rotates every ${report.rotationDays} days; nothing changed.`);
    return;
  }
  const what = { created: 'created', restored: 'restored (it was scheduled for deletion) and updated', replaced: 'updated with this key', unchanged: 'already holds this key' }[report.secretResult];
  out.line(`Company ${report.companyId}: secret ${report.secret} ${what}; key ${report.keyPrefix}… (${report.permissions.join(', ')}).`);
  const rotation = {
    turned_on: `rotation turned on, every ${report.rotationDays} days (the first one on schedule, not now)`,
    updated: `rotation set to every ${report.rotationDays} days with the stack's rotation function`,
    already_on: `rotation already on, every ${report.rotationDays} days`,
    stack_managed: "rotation stays with the stack's RotationSchedule (an imported secret)",
  }[report.rotation];
  out.line(`  ${rotation}; the previous key, if any, stays valid at the service until it is revoked.`);
}
