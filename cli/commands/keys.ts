import { Command } from 'commander';
import { AuthenticationError } from '../../src/core/accounting-api';
import { guid, keyPrefixArg } from '../args';
import { apiKeyFromEnv, CliError, UsageError } from '../errors';
import { ExitCode, type ExitCodeValue } from '../exit-codes';
import { relative, sentence } from '../format';
import { interruptExitCode, speak } from '../interrupt';
import type {
  CancelRotationReport,
  InterruptedWork,
  KeysInstallReport,
  KeyStatusReport,
  RevokePendingReport,
  RotateReport,
} from '../operations/operations';
import type { Output } from '../output';
import { required } from './credentials';
import type { CommandHost } from './host';

export function keysCommand(host: CommandHost): Command {
  const keys = new Command('keys').description(
    "Company API keys held in the secret store: rotate one now (or cancel a rotation left pending), revoke old keys still pending, show every company's key, install one.",
  );

  keys
    .command('rotate')
    .description("Rotate a company's API key now: Secrets Manager's four steps, the old key revoked after the grace period.")
    .requiredOption('--company <id>', "the company's publicId", guid)
    .option('--no-wait', 'AWS mode: return once the rotation has started instead of waiting for it')
    .option(
      '--revoke-previous-now',
      'a leaked key: once the rotation completes, revoke the previous key and every older one still pending revocation, without the grace period',
    )
    .action(
      host.run(
        async (session, opts: { company: string; wait: boolean; revokePreviousNow?: boolean }) => {
          const revokeNow = opts.revokePreviousNow === true;
          if (revokeNow && !opts.wait)
            throw new UsageError('--revoke-previous-now waits for the rotation; drop --no-wait', 'run `acctops keys rotate --help`');
          const report = await (
            await session.operations()
          ).rotateKey(opts.company, {
            wait: opts.wait,
            revokePreviousNow: revokeNow,
            onInterrupted: (signal, undone) =>
              speak(() => session.out.error(rotationInterruptedLine(signal, opts.company, undone, revokeNow))),
          });
          session.out.result(report, () => renderRotate(session.out, report));
          if (report.state === 'failed' && report.rolledBack === false) {
            throw new CliError(
              `the rotation of ${report.secret} failed and could not be rolled back: version ${report.versionId} stays AWSPENDING and may hold a key the rotation created; AWSCURRENT is unchanged`,
              {
                code: 'rotation_failed_not_rolled_back',
                exitCode: ExitCode.failure,
                hint: `every rotation of this secret is refused until this one is rolled back: locally \`acctops keys cancel-rotation --company ${report.companyId}\` does it now; in AWS the rotation doctor gives it up an hour after it started (\`acctops doctor --repair\`); see docs/runbooks.md, "A rotation stuck in AWSPENDING"`,
              },
            );
          }
          if (report.state === 'failed') {
            throw new CliError(`the rotation of ${report.secret} failed and was rolled back; AWSCURRENT is unchanged`, {
              code: 'rotation_failed',
              exitCode: ExitCode.failure,
              hint: 'the rotation function\'s logs name the failed step (AWS: /acctops/<stage>/rotate-api-key; locally: --verbose); see docs/runbooks.md, "A key rotation failed"',
            });
          }
          // The rotation completed; the previous key is still valid (README, "Exit codes": 5, partly done).
          // The key was revoked; its schedule was left (AWS mode, decision 107): partly done, said as such.
          if (report.previousKeyScheduleError) {
            session.partial();
            session.out.error(report.previousKeyScheduleError, {
              text: `company ${report.companyId}`,
              fields: { companyId: report.companyId, keyPrefix: report.previousKeyPrefix },
            });
          }
          for (const k of report.olderKeysRevoked ?? []) {
            if (k.scheduleError === null) continue;
            session.partial();
            session.out.error(k.scheduleError, {
              text: `company ${report.companyId}`,
              fields: { companyId: report.companyId, keyPrefix: k.keyPrefix },
            });
          }
          if (report.previousKeyRevokeError) {
            session.partial();
            session.out.error(report.previousKeyRevokeError, {
              text: `company ${report.companyId}`,
              fields: { companyId: report.companyId },
            });
          }
          for (const k of report.olderKeysRevoked ?? []) {
            if (k.error === null) continue;
            session.partial();
            session.out.error(k.error, {
              text: `company ${report.companyId}: key ${k.keyPrefix}…`,
              fields: { companyId: report.companyId, keyPrefix: k.keyPrefix },
            });
          }
          if (report.olderKeysRevokeError) {
            session.partial();
            session.out.error(report.olderKeysRevokeError, {
              text: `company ${report.companyId}`,
              fields: { companyId: report.companyId },
            });
          }
        },
        { beforeWorkUntilSteps: true },
      ),
    );

  keys
    .command('cancel-rotation')
    .description(
      "Roll back the company's rotation left pending (AWSPENDING) by an interrupted or failed `keys rotate`: revoke the key it created at the service, " +
        'if any, and remove AWSPENDING, so that `keys rotate` runs again at once. AWSCURRENT and the rotation schedule are unchanged. Local mode only.',
    )
    .requiredOption('--company <id>', "the company's publicId", guid)
    .action(
      host.run(async (session, opts: { company: string }) => {
        const report = await (await session.operations()).cancelRotation(opts.company);
        session.out.result(report, () => renderCancelRotation(session.out, report));
      }),
    );

  keys
    .command('revoke-pending')
    .description(
      "Revoke now the company's old keys waiting for their scheduled revocation (all, or the one of --prefix), without rotating: " +
        'a leaked key whose `keys rotate --revoke-previous-now` could not revoke it. Never the current key; a key revoked already is `already_revoked`, so it can be repeated.',
    )
    .requiredOption('--company <id>', "the company's publicId", guid)
    .option('--prefix <keyPrefix>', 'only the old key with this prefix, as `keys status` shows it (e.g. sbx_AbCd1234)', keyPrefixArg)
    .action(
      host.run(async (session, opts: { company: string; prefix?: string }) => {
        const report = await (
          await session.operations()
        ).revokePending(opts.company, opts.prefix === undefined ? {} : { prefix: opts.prefix });
        const failed = report.keys.filter((k) => k.error !== null);
        if (failed.length > 0) {
          // Nothing revoked: the first failure's cause decides; otherwise the run is partial (as `export`).
          session.exitCode = failed.length === report.keys.length ? (failed[0]!.error!.exitCode as ExitCodeValue) : ExitCode.partial;
          for (const k of failed) session.out.error(k.error!, { text: `key ${k.keyPrefix}…`, fields: { keyPrefix: k.keyPrefix } });
        }
        // Revoked, but the schedule stays (AWS mode, decision 107): exit 5, never hiding the revocation.
        for (const k of report.keys) {
          if (k.scheduleError === null) continue;
          session.partial();
          session.out.error(k.scheduleError, { text: `company ${report.companyId}`, fields: { keyPrefix: k.keyPrefix } });
        }
        session.out.result(report, () => renderRevokePending(session.out, report));
      }),
    );

  keys
    .command('status')
    .description('For each company: key prefix, permissions, last use, last and next rotation, pending revocations.')
    .option('--company <id>', 'only this company (exit 3 if it has no key secret)', guid)
    .action(
      host.run(async (session, opts: { company?: string }) => {
        // With --company, only its key: an unknown or removed company, or one without a key secret, is exit 3.
        const report = await (await session.operations()).keyStatus(opts.company === undefined ? {} : { company: opts.company });
        if (report.companies.some((c) => c.error !== null)) session.partial();
        session.out.result(report, () => renderStatus(session.out, report));
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
        const apiKey = apiKeyFromEnv(session.env) ?? required(session, 'ACCTOPS_API_KEY', 'the company key');
        let report: KeysInstallReport;
        try {
          report = await (await session.operations()).installCompanyKey(opts.company, apiKey);
        } catch (error) {
          // The key being installed is the one credential the check sends: the institution and the
          // stored secret have no part in its refusal.
          if (error instanceof AuthenticationError)
            throw new CliError(error.message, {
              code: error.code,
              exitCode: ExitCode.auth,
              hint: 'check ACCTOPS_API_KEY: the service refused the key to install (expired, revoked, or a key of another service); nothing was stored',
              cause: error,
            });
          throw error;
        }
        session.out.result(report, () => renderInstall(session.out, report));
        // On stderr, with --json too: the install succeeded, but the first rotation may not.
        if (report.encryption.stageMustNameKey) session.out.note(importedKeyNote(report));
      }),
    );
  return keys;
}

export function renderRotate(out: Output, report: RotateReport): void {
  for (const r of report.revokedBefore ?? [])
    out.line(sentence(`Old key ${r.keyPrefix}… past its grace period: ${r.outcome}${r.error ? `: ${r.error}` : ''}`));
  out.line(`Rotation of ${report.secret} (company ${report.companyId}): ${report.state}`);
  if (report.previousKeyPrefix && report.keyPrefix && report.previousKeyPrefix !== report.keyPrefix) {
    out.line(`  key ${report.previousKeyPrefix}… -> ${report.keyPrefix}…`);
  }
  if (report.previousKeyRevoked === 'failed') {
    out.line(
      `  the previous key ${report.previousKeyPrefix}… could NOT be revoked now and is still valid (the error below says how to revoke it)`,
    );
    if (report.previousKeyRevokeAt) out.line(`  otherwise its scheduled revocation revokes it at ${report.previousKeyRevokeAt}`);
  } else if (report.previousKeyRevoked)
    out.line(
      `  the previous key ${report.previousKeyPrefix}… was revoked now: ${report.previousKeyRevoked}${report.previousKeyScheduleError ? SCHEDULE_LEFT : ''}`,
    );
  else if (report.previousKeyRevokeAt) out.line(`  the previous key keeps working until ${report.previousKeyRevokeAt}, then it is revoked`);
  // The leaked key may be one an earlier rotation replaced: each old key still pending revocation is said by name.
  if (report.olderKeysRevoked?.length === 0) out.line('  no other old key of the company was pending revocation');
  for (const k of report.olderKeysRevoked ?? []) {
    out.line(
      k.outcome === 'failed'
        ? `  the older key ${k.keyPrefix}…, still pending revocation, could NOT be revoked now and is still valid (the error below says how to revoke it)`
        : `  the older key ${k.keyPrefix}…, still pending revocation, was revoked now: ${k.outcome}${k.scheduleError ? SCHEDULE_LEFT : ''}`,
    );
  }
  if (report.olderKeysRevokeError)
    out.line('  the other old keys still pending revocation could NOT be revoked now and may be valid (the error below says how)');
  if (report.state === 'in_progress') out.line('  Secrets Manager runs the steps now; follow with `acctops keys status`.');
}

export function renderCancelRotation(out: Output, report: CancelRotationReport): void {
  if (report.result === 'nothing_pending') {
    out.line(`Company ${report.companyId}: no rotation of ${report.secret} is pending; nothing changed.`);
    return;
  }
  const revoked = report.revokedKeyPrefixes.map((p) => `${p}…`).join(', ');
  out.line(
    `Rotation of ${report.secret} (company ${report.companyId}), version ${report.versionId}: rolled back; AWSCURRENT is unchanged.`,
  );
  out.line(revoked ? `  the key it had created was revoked: ${revoked}` : '  it had created no key at the service');
  out.line(`  \`acctops keys rotate --company ${report.companyId}\` rotates now.`);
}

export function renderRevokePending(out: Output, report: RevokePendingReport): void {
  if (report.keys.length === 0) {
    out.line(`Company ${report.companyId}: no old key is waiting for its revocation; nothing revoked.`);
    return;
  }
  out.line(`Company ${report.companyId} (${report.secret}): pending revocations carried out now`);
  // already_revoked: a repeat after a success, or a key whose schedule could not be deleted before (AWS mode).
  for (const k of report.keys) out.line(`  ${k.keyPrefix}…  ${k.outcome}${k.scheduleError ? SCHEDULE_LEFT : ''}`);
}

/** A key revoked now whose revocation schedule is left: the error line on stderr says why and what to do. */
const SCHEDULE_LEFT = ' (its revocation schedule could NOT be deleted: the error below says how)';

export function renderStatus(out: Output, report: KeyStatusReport): void {
  const now = Date.parse(report.now);
  for (const r of report.revokedBefore ?? [])
    out.line(sentence(`Old key ${r.keyPrefix}… past its grace period: ${r.outcome}${r.error ? `: ${r.error}` : ''}`));
  out.table(
    report.companies,
    [
      { header: 'COMPANY', value: (c) => c.companyId },
      // A registered company without a key secret has a row of its own, its `! …` line saying what to do.
      { header: 'KEY', value: (c) => (c.secret === null ? 'no key secret' : c.keyPrefix ? `${c.keyPrefix}…` : undefined) },
      { header: 'PERMISSIONS', value: (c) => c.permissions?.join(',') },
      // The check lists the keys with the current key, which the service counts as a use.
      {
        header: 'LAST USED',
        value: (c) =>
          c.secret === null
            ? undefined
            : c.lastUsedByThisCheck
              ? 'this check'
              : c.lastUsedAt
                ? relative(Date.parse(c.lastUsedAt), now)
                : 'never',
      },
      { header: 'LAST ROTATION', value: (c) => (c.secret === null ? undefined : (relative(c.lastRotatedAt, now) ?? 'never')) },
      {
        header: 'NEXT ROTATION',
        value: (c) => (c.secret === null ? undefined : c.rotationEnabled ? relative(c.nextRotationAt, now) : 'disabled'),
      },
      { header: 'ROTATING', value: (c) => (c.secret === null ? undefined : c.rotationInProgress ? 'yes' : 'no') },
      {
        header: 'PENDING REVOCATIONS',
        value: (c) => c.pendingRevocations.map((r) => `${r.keyPrefix}… ${relative(r.revokeAt, now)} (${oldKeyUse(r, now)})`).join('; '),
      },
    ],
    'no company key secrets',
  );
  for (const c of report.companies) if (c.error) out.line(`! ${c.companyId}: ${c.error}`);
  // Not under PENDING REVOCATIONS: these revoke nothing (KeyStatus.currentKeyRevocations).
  for (const c of report.companies) {
    for (const r of c.currentKeyRevocations) {
      out.line(
        `${c.companyId}: a revocation of the current key ${r.keyPrefix}… is queued (due ${relative(r.revokeAt, now)}), left by a rotation that did not take effect; it revokes nothing: when it runs, the key is kept (kept_current) and the entry leaves the queue.`,
      );
    }
  }
  // Valid at the service with nothing scheduled to revoke it: not a pending revocation, and not to be missed (decision 107).
  for (const c of report.companies) {
    const k = c.replacedKey;
    if (k === null) continue;
    out.line(
      `${c.companyId}: the previous key ${k.keyPrefix}… (the key an install replaced, or one whose revocation was lost) stays valid at the service, ${k.lastUsedAt ? `last used ${relative(Date.parse(k.lastUsedAt), now)}` : 'never used'}, and no revocation of it is pending: \`acctops keys revoke-pending --company ${c.companyId} --prefix ${k.keyPrefix}\` revokes it now.`,
    );
  }
  // Older still: an install's replaced key after a later rotation took its label (decision 113).
  for (const c of report.companies) {
    for (const k of c.earlierKeys) {
      out.line(
        `${c.companyId}: the earlier key ${k.keyPrefix}… (held by an earlier version of its key secret: the key an install replaced, or one whose revocation was lost) stays valid at the service, ${k.lastUsedAt ? `last used ${relative(Date.parse(k.lastUsedAt), now)}` : 'never used'}, and no revocation of it is pending: the rotation doctor revokes it as revocation_overdue once the grace period after the last rotation is over (\`acctops doctor --repair\`).`,
      );
    }
  }
}

/**
 * An old key's last use; the rotation's own use of it is not a consumer's (KeyStatus.pendingRevocations).
 * Only `usedSinceRotation: true` says a consumer uses it; a time whose rotation is not dated (a key
 * of an earlier rotation than the last) may be that rotation's own use, and says so.
 */
function oldKeyUse(r: KeyStatusReport['companies'][number]['pendingRevocations'][number], now: number): string {
  if (r.revokedAt) return `already revoked ${relative(Date.parse(r.revokedAt), now)}: the schedule then changes nothing`;
  if (!r.lastUsedAt) return 'never used';
  const last = relative(Date.parse(r.lastUsedAt), now);
  if (r.usedSinceRotation === false) return 'not used since the rotation';
  if (r.usedSinceRotation === true) return `used since the rotation, last ${last}`;
  return `last used ${last}, maybe by the rotation that replaced it`;
}

export function renderInstall(out: Output, report: KeysInstallReport): void {
  if (report.noop) {
    out.line(
      `Company ${report.companyId}: key ${report.keyPrefix}… is already installed in ${report.secret} and rotates every ${report.rotationDays} days; nothing changed.`,
    );
    out.line(encryptionLine(report));
    return;
  }
  const what = {
    created: 'created',
    restored: 'restored (it was scheduled for deletion) and updated',
    replaced: 'updated with this key',
    unchanged: 'already holds this key',
  }[report.secretResult];
  out.line(`Company ${report.companyId}: secret ${report.secret} ${what}; key ${report.keyPrefix}… (${report.permissions.join(', ')}).`);
  const rotation = {
    turned_on: `rotation turned on, every ${report.rotationDays} days (the first one on schedule, not now)`,
    updated: `rotation set to every ${report.rotationDays} days with the stack's rotation function`,
    already_on: `rotation already on, every ${report.rotationDays} days`,
    stack_managed: "rotation stays with the stack's RotationSchedule (an imported secret)",
  }[report.rotation];
  out.line(`  ${rotation}.`);
  const replaced = report.replacedKey;
  if (replaced !== null) out.line(replacedKeyLine(report.companyId, replaced));
  out.line(encryptionLine(report));
}

/**
 * The key an install replaced: nothing schedules its revocation, so the line names it and the
 * command that revokes it now, and says when anything else would (decision 105).
 */
function replacedKeyLine(companyId: string, replaced: NonNullable<KeysInstallReport['replacedKey']>): string {
  if (replaced.live === false) return `  the key it replaced, ${replaced.keyPrefix}…, is already revoked at the service.`;
  return (
    `  the key it replaced, ${replaced.keyPrefix}…, stays valid at the service${replaced.live === null ? ' (the key list could not be read to check)' : ''}: ` +
    `revoke it now with \`acctops keys revoke-pending --company ${companyId} --prefix ${replaced.keyPrefix}\`. ` +
    'No revocation is scheduled for it: otherwise only `acctops doctor --repair` (deployed, also the scheduled check-key-rotations) revokes it, ' +
    "as revocation_overdue, once the secret's last rotation is more than the grace period and 15 minutes' slack ago (never, if the secret has not rotated yet)."
  );
}

function encryptionLine({ encryption }: Pick<KeysInstallReport, 'encryption'>): string {
  if (!encryption.awsManagedKey) return `  encrypted with KMS key ${encryption.kmsKeyId} (customer managed).`;
  return `  encrypted with the AWS managed key aws/secretsmanager${encryption.kmsKeyId === null ? '' : ` (${encryption.kmsKeyId})`}.`;
}

/**
 * The warning for an imported secret under a customer managed key. The CLI does not read cdk.json,
 * so it cannot tell whether the stage names the key: it says what must be true.
 */
export function importedKeyNote(report: Pick<KeysInstallReport, 'companyId' | 'secret' | 'encryption'>): string {
  return (
    `acctops: warning: secret ${report.secret} is imported by the stack and encrypted with customer managed KMS key ${report.encryption.kmsKeyId}: ` +
    `the stage must name that key's ARN as the company's existingSecretKmsKeyArn in cdk.json (companies[], company ${report.companyId}) and be deployed, ` +
    'else its rotation fails with AccessDenied from KMS (docs/runbooks.md, "Install a company API key", step 2)'
  );
}

/**
 * The one line an interrupted `keys rotate` prints (cli/interrupt.ts: the rest of its output is
 * dropped): what became of the rotation, and the command that goes on from there.
 */
export function rotationInterruptedLine(signal: NodeJS.Signals, companyId: string, undone: InterruptedWork, revokePreviousNow: boolean) {
  const line = { exitCode: interruptExitCode(signal), code: 'interrupted' };
  const rotation = undone.rotations.at(-1);
  const rotateAgain = `\`acctops keys rotate --company ${companyId}\``;
  if (rotation === undefined) {
    return {
      ...line,
      message: `interrupted (${signal}) before the rotation of company ${companyId} started; nothing changed`,
      hint: `run ${rotateAgain} again`,
    };
  }
  if (rotation.state === 'rolled_back') {
    const revoked = rotation.revokedKeyPrefixes.map((p) => `${p}…`).join(', ');
    return {
      ...line,
      message: `interrupted (${signal}): the rotation of company ${companyId} was stopped and rolled back${revoked ? ` (the key it created, ${revoked}, is revoked)` : ''}; AWSCURRENT is unchanged`,
      hint: `${rotateAgain} rotates now`,
    };
  }
  if (rotation.state === 'pending') {
    return {
      ...line,
      message: `interrupted (${signal}): the rotation of company ${companyId} was stopped but could not be rolled back in time: version ${rotation.versionId} stays AWSPENDING and may hold a key it created; AWSCURRENT is unchanged`,
      hint: `\`acctops keys cancel-rotation --company ${companyId}\` rolls it back now; then ${rotateAgain}`,
    };
  }
  return {
    ...line,
    message: `interrupted (${signal}) after the rotation of company ${companyId} completed: the new key is current`,
    hint: revokePreviousNow
      ? `the previous key may not be revoked yet: \`acctops keys status --company ${companyId}\` lists it under PENDING REVOCATIONS, and \`acctops keys revoke-pending --company ${companyId}\` revokes it now`
      : `the previous key is revoked after the grace period; \`acctops keys status --company ${companyId}\``,
  };
}
