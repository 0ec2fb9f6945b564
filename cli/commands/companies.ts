import { Command, InvalidArgumentError } from 'commander';
import { RECOVERY_WINDOW_DAYS } from '../../src/core/api-keys';
import { ROTATION_DAYS } from '../../src/core/companies/company-registry';
import { DEFAULT_CURRENCY } from '../../src/core/exports/formats/currency';
import { FORMATS, type ExportFormat } from '../../src/core/exports/formats/datasets';
import { currencyCode, formats, guid } from '../args';
import type { CompanyRemoval, KeyRotationChange } from '../operations/operations';
import { damagedEntryRepair } from '../errors';
import type { CommandHost } from './host';
import { issuesText } from '../../src/core/shared/errors';

const ROTATION_CHANGE: Record<KeyRotationChange['result'], (days: number) => string> = {
  updated: (days) => `the key secret now rotates every ${days} days (no rotation now)`,
  unchanged: (days) => `the key secret already rotates every ${days} days`,
  not_rotating: (days) => `the key secret's rotation is off, left so (\`acctops keys install\` turns it on, every ${days} days)`,
  no_secret: (days) => `no key secret yet; \`acctops keys install\` sets its rotation to every ${days} days`,
};

export function rotationDays(raw: string): number {
  const days = Number(raw);
  if (!/^\d{1,4}$/.test(raw.trim()) || days < ROTATION_DAYS.min || days > ROTATION_DAYS.max) {
    throw new InvalidArgumentError(`expected whole days from ${ROTATION_DAYS.min} to ${ROTATION_DAYS.max}`);
  }
  return days;
}

export function recoveryDays(raw: string): number {
  const days = Number(raw);
  if (!/^\d{1,2}$/.test(raw.trim()) || days < RECOVERY_WINDOW_DAYS.min || days > RECOVERY_WINDOW_DAYS.max) {
    throw new InvalidArgumentError(`expected whole days from ${RECOVERY_WINDOW_DAYS.min} to ${RECOVERY_WINDOW_DAYS.max}`);
  }
  return days;
}

export function companiesCommand(host: CommandHost): Command {
  const companies = new Command('companies').description(
    'The company registry: which companies the stage exports (added and removed at run time, no deploy).',
  );

  companies
    .command('add')
    .description('Register a company (idempotent): the monthly export includes it from the next run on.')
    .requiredOption('--company <uuid>', "the company's publicId at the service", guid)
    .option('--formats <list>', `export formats, comma-separated (${FORMATS.join(', ')}); default: all, or the registered ones`, formats)
    .option('--rotation-days <n>', "days between the company key's rotations (default: the stage's apiKeys.rotationDays)", rotationDays)
    .option(
      '--default-currency <ISO code>',
      'the currency of transactions the service sends without one, for every export of the company (default: EUR, or the registered one)',
      currencyCode,
    )
    .action(
      host.run(async (session, opts: { company: string; formats?: ExportFormat[]; rotationDays?: number; defaultCurrency?: string }) => {
        const operations = await session.operations();
        const { result, company, keyRotation } = await operations.addCompany({
          companyId: opts.company,
          ...(opts.formats ? { formats: opts.formats } : {}),
          ...(opts.rotationDays !== undefined ? { rotationDays: opts.rotationDays } : {}),
          ...(opts.defaultCurrency !== undefined ? { defaultCurrency: opts.defaultCurrency } : {}),
        });
        session.out.result({ result, company, keyRotation }, () => {
          session.out.line(
            `Company ${company.companyId}: ${result.replace('_', ' ')} (formats ${company.formats.join(', ')}; default currency ${company.defaultCurrency ?? `${DEFAULT_CURRENCY}, the default`}).`,
          );
          if (keyRotation !== null) session.out.line(`  Key rotation: ${ROTATION_CHANGE[keyRotation.result](keyRotation.rotationDays)}.`);
          session.out.line('  The monthly export plans it from the next run on; `acctops keys install` stores its API key.');
        });
      }),
    );

  companies
    .command('list')
    .description('List the registered companies, a page at a time (removed ones too). Exit 5 if an entry is unreadable.')
    .option('--active', 'only companies that are not removed')
    .action(
      host.run(async (session, opts: { active?: boolean }) => {
        const { mode, companies: rows, skipped } = await (await session.operations()).listCompanies({ active: opts.active === true });
        if (skipped.length > 0) session.partial();
        session.out.result({ companies: rows, skipped }, () => {
          session.out.table(rows, [
            { header: 'COMPANY', value: (r) => r.companyId },
            { header: 'STATUS', value: (r) => r.status },
            { header: 'FORMATS', value: (r) => r.formats.join(',') },
            { header: 'ROTATION DAYS', value: (r) => r.rotationDays ?? 'stage', align: 'right' },
            { header: 'DEFAULT CURRENCY', value: (r) => r.defaultCurrency ?? `${DEFAULT_CURRENCY} (default)` },
            { header: 'ADDED', value: (r) => r.addedAt ?? (r.seededFrom ? `(${r.seededFrom})` : null) },
            { header: 'REMOVED', value: (r) => r.removedAt },
          ]);
          session.out.line(`${rows.length} company(ies).`);
          for (const f of skipped) {
            session.out.line(
              `  skipped an unreadable entry ${f.key}: ${issuesText(f.issues)}; the monthly export skips it too: ${damagedEntryRepair(mode)}`,
            );
          }
        });
      }),
    );

  companies
    .command('remove')
    .description(
      'Stop exporting a company and rotating its key: the registry marks it removed, its key secret stops rotating and is scheduled for deletion ' +
        'with a recovery window (one the stack imports is kept) (undo: `companies restore`). ' +
        'Its current key and old keys pending revocation stay valid at the service unless --revoke-keys revokes them first.',
    )
    .requiredOption('--company <uuid>', "the company's publicId", guid)
    .option(
      '--recovery-days <n>',
      `days the key secret stays restorable (${RECOVERY_WINDOW_DAYS.min}-${RECOVERY_WINDOW_DAYS.max})`,
      recoveryDays,
      RECOVERY_WINDOW_DAYS.default,
    )
    .option(
      '--revoke-keys',
      'first revoke at the service the old keys pending revocation, delete their revocation schedules (AWS mode), then revoke the current key; if one fails, nothing is removed (exit 5). ' +
        'The company then holds no valid key acctops gave out or knows of',
    )
    .action(
      host.run(async (session, opts: { company: string; recoveryDays: number; revokeKeys?: boolean }) => {
        // An unknown company is exit 3 (UnknownNameError), as in every command that names one.
        const { result, company, key, keys } = await (
          await session.operations()
        ).removeCompany(opts.company, { recoveryDays: opts.recoveryDays, revokeKeys: opts.revokeKeys === true });
        const undo = `acctops companies restore --company ${company.companyId}`;
        for (const line of leftScheduleWarnings(company.companyId, keys)) session.out.note(line);
        session.out.result({ result, company, key, keys, undo }, () => {
          session.out.line(
            `Company ${company.companyId}: ${result.replace('_', ' ')}; the monthly export leaves it out from the next run on.`,
          );
          if (key.result === 'no_secret') session.out.line('  It has no key secret of this stage.');
          else if (key.result === 'kept_imported') {
            session.out.line(
              `  Key secret ${key.secret} is imported by the stack (cdk.json existingSecretArn), not acctops's to delete: kept; ` +
                `its rotation ${key.rotationStopped ? 'stopped' : 'was off already'}.`,
            );
            // CloudFormation updates a resource only when its template changes: the stack's RotationSchedule stays as it is until then.
            session.out.line(
              "  The stack still holds its RotationSchedule: the next `cdk deploy` leaves rotation off unless the schedule itself changes (the stage's " +
                'apiKeys.rotationDays, the rotation function), which turns it on again; the rotation function then refuses the company. ' +
                'To end it, drop the company from the stage\'s `companies` in cdk.json and deploy (docs/runbooks.md, "Add or remove a company"): ' +
                "the schedule and the functions' grants on the secret go, the secret stays.",
            );
          } else if (key.result === 'already_scheduled')
            session.out.line(
              key.deletionDate !== null
                ? `  Its key secret ${key.secret} was already scheduled for deletion on ${key.scheduledAt ?? 'an earlier remove'}: deleted for good on ${key.deletionDate} (recovery window ${key.recoveryWindowDays} days) unless restored.`
                : `  Its key secret ${key.secret} was already scheduled for deletion on ${key.scheduledAt ?? 'a date not known'}, with a recovery window acctops did not record: deleted for good ${RECOVERY_WINDOW_DAYS.min} to ${RECOVERY_WINDOW_DAYS.max} days after that unless restored.`,
            );
          else {
            session.out.line(
              `  Key secret ${key.secret}: rotation ${key.rotationStopped ? 'stopped' : 'was off'}; deleted for good on ${key.deletionDate ?? `in ${key.recoveryWindowDays} days`} unless restored.`,
            );
          }
          for (const line of removedKeysLines(company.companyId, keys)) session.out.line(line);
          // One undo for both modes: restore brings back the registry entry, the secret and its rotation together.
          session.out.line(
            key.result === 'kept_imported'
              ? `  Undo: \`${undo}\` (registry entry and the key secret's rotation).`
              : key.result === 'no_secret'
                ? `  Undo: \`${undo}\` (the registry entry).`
                : `  Undo: \`${undo}\` (registry entry, key secret and its rotation, within the recovery window).`,
          );
        });
      }),
    );

  companies
    .command('restore')
    .description(
      'Undo `companies remove`: the registry entry is active again, its key secret restored and rotating (within the recovery window).',
    )
    .requiredOption('--company <uuid>', "the company's publicId", guid)
    .action(
      host.run(async (session, opts: { company: string }) => {
        const outcome = await (await session.operations()).restoreCompany(opts.company);
        session.out.result(outcome, () => {
          const id = outcome.company.companyId;
          // `result` is the registry's (readded, unchanged): said for people as what restore did.
          session.out.line(`Company ${id}: ${outcome.result === 'readded' ? 'restored (active again)' : 'already active'}.`);
          if (outcome.key === 'no_secret')
            session.out.line(`  It has no key secret: \`acctops keys install --company ${id}\` creates one.`);
          else if (outcome.key === 'kept_imported')
            session.out.line(
              `  Key secret ${outcome.secret} (imported by the stack) was kept; rotation on, every ${outcome.rotationDays} days.`,
            );
          else
            session.out.line(
              `  Key secret ${outcome.key === 'restored' ? 'restored' : 'was not deleted'}; rotation on, every ${outcome.rotationDays} days.`,
            );
        });
      }),
    );

  return companies;
}

/**
 * The company's keys at its removal (decision 105): revoked by --revoke-keys, or named with the way
 * to revoke them, since once the secret is deleted nothing holds a key that can.
 */
export function removedKeysLines(companyId: string, keys: CompanyRemoval['keys']): string[] {
  if (keys.revoked !== null) {
    // `already_revoked` throughout: a repeat, whose keys the earlier remove revoked (its registry record).
    return keys.revoked.map((k) =>
      k.keyPrefix === keys.current?.keyPrefix && k.apiKeyId === keys.current.apiKeyId
        ? `  Current key ${k.keyPrefix}… ${k.outcome === 'already_revoked' ? 'already revoked at the service, by the earlier remove' : 'revoked at the service'}.`
        : `  Old key ${k.keyPrefix}…, pending revocation: ${k.outcome === 'already_revoked' ? 'already revoked, by the earlier remove' : k.outcome}.`,
    );
  }
  const way =
    `revoke them before the secret is deleted: \`acctops companies restore --company ${companyId}\`, ` +
    `then \`acctops companies remove --company ${companyId} --revoke-keys\``;
  if (keys.unread !== null) return [`  Its keys could not be read (${keys.unread}): any it has stay valid at the service; ${way}.`];
  if (keys.current === null) return [];
  const pending = keys.pending.filter((k) => k.revokedAt === null).map((k) => `${k.keyPrefix}… (revocation due ${k.revokeAt})`);
  return [
    `  Its current key ${keys.current.keyPrefix}…${pending.length > 0 ? ` and the old key(s) pending revocation ${pending.join(', ')}` : ''} ` +
      `stay valid at the service${pending.length > 0 ? ' (the pending revocations fail while the secret is scheduled for deletion)' : ''}; ${way}.`,
    ...keys.pending
      .filter((k) => k.revokedAt !== null)
      .map(
        (k) =>
          `  Old key ${k.keyPrefix}… is revoked at the service already (${k.revokedAt}); its revocation is still pending, and fails when due.`,
      ),
  ];
}

/**
 * A plain `companies remove` in AWS mode leaves each pending revocation's one-time schedule in the
 * stack's group (decision 113): it fires at its time, cannot read the company's key secret, which is
 * scheduled for deletion, and its invocation ends in the dead-letter queue, whose alarm pages. One
 * warning a schedule, on stderr (also with --json), naming it and the way to end it before it fires:
 * for a key still valid, the restore and `--revoke-keys` (which revokes it and deletes the schedule);
 * for a key revoked already, deleting the schedule is all that is left.
 */
export function leftScheduleWarnings(companyId: string, keys: CompanyRemoval['keys']): string[] {
  if (keys.revoked !== null) return [];
  return keys.pending.flatMap((k) => {
    if (k.schedule === null) return [];
    const { name, group } = k.schedule;
    const fails =
      `fires at ${k.revokeAt} and fails (the company's key secret is scheduled for deletion), ` +
      'and its invocation lands in the dead-letter queue (the FailedInvocations alarm)';
    return k.revokedAt === null
      ? [
          `acctops: warning: company ${companyId}: revocation schedule ${name} in ${group} (old key ${k.keyPrefix}…, still valid) ${fails}; ` +
            `the key stays valid: before it fires, \`acctops companies restore --company ${companyId}\`, then ` +
            `\`acctops companies remove --company ${companyId} --revoke-keys\` (revokes the key, deletes the schedule)`,
        ]
      : [
          `acctops: warning: company ${companyId}: revocation schedule ${name} in ${group} (old key ${k.keyPrefix}…, revoked already) ${fails}; ` +
            `delete it before then: \`aws scheduler delete-schedule --group-name ${group} --name ${name}\` (scheduler:DeleteSchedule)`,
        ];
  });
}
