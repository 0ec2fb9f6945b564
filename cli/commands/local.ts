import { Command } from 'commander';
import { duration, filePath, guid, positiveDuration } from '../args';
import { UsageError } from '../errors';
import { ExitCode } from '../exit-codes';
import { sentence, shellQuote } from '../format';
import { DEFAULT_STATE_DIR, resetStateDir, resolveStateDir, takenOverLockNote } from '../local/state-dir';
import type { CommandHost } from './host';
import { issuesText } from '../../src/core/shared/errors';

/** `advance-clock` moves at most this far without --force: a rotation period (30 days) and a day. */
export const MAX_CLOCK_JUMP_DAYS = 31;

export function localCommand(host: CommandHost): Command {
  const local = new Command('local').description(
    'The local embedded mode: its state directory, its clock, and company keys to rehearse with.',
  );

  local
    .command('status')
    .description('Where the local state is, what it holds, and what time its clock says.')
    .action(
      host.run(async (session) => {
        const status = await (await session.operations()).localStatus();
        session.out.result(status, () => {
          session.out.line(`Local state   ${status.stateDir} (created ${status.createdAt})`);
          session.out.line(`Service       embedded sandbox, ${status.dialect} dialect (fixed when the state was created)`);
          session.out.line(
            `Clock         ${status.now} (system clock ${status.clockOffsetMs >= 0 ? '+' : ''}${Math.round(status.clockOffsetMs / 60_000)} min)`,
          );
          session.out.line(
            `Companies     ${status.companies} with a key secret (rotation every ${status.rotationDays} days, grace ${status.revocationGraceMinutes} min)`,
          );
          session.out.line(
            `Users         ${status.users} held (an access token the service states no expiry of lives ${status.accessTokenLifetimeSeconds} s)`,
          );
          session.out.line(
            `Revocations   ${status.pendingRevocations} pending` +
              (status.currentKeyRevocations > 0
                ? `; ${status.currentKeyRevocations} more queued of a current key, which revoke nothing (\`acctops keys status\` names them)`
                : ''),
          );
          session.out.line(`Exports       ${status.exportsDir}`);
        });
      }),
    );

  local
    .command('set')
    .description(
      "Change a setting of the local state, kept for every later command (as a stage's setting in cdk.json is for a deployment).",
    )
    .requiredOption(
      '--access-lifetime <duration>',
      'lifetime of an access token whose expiry the service does not state (no JWT exp, no expiry field), 1m to 1d, e.g. 10m; new states: 30m',
      duration,
    )
    .action(
      host.run(async (session, opts: { accessLifetime: number }) => {
        const seconds = opts.accessLifetime / 1000;
        if (seconds < 60 || seconds > 86_400)
          throw new UsageError('--access-lifetime must be between 1m and 1d', 'e.g. --access-lifetime 10m');
        const status = await (await session.operations()).setLocal({ accessTokenLifetimeSeconds: seconds });
        session.out.result(status, () =>
          session.out.line(
            `Access tokens whose expiry the service does not state now count as living ${status.accessTokenLifetimeSeconds} s (from the next token issued).`,
          ),
        );
      }),
    );

  local
    .command('advance-clock')
    .description(
      "Move the local clock forward (rehearse a grace period or a token's expiry), then revoke the old keys whose grace period ended.",
    )
    .requiredOption(
      '--by <duration>',
      `how far, more than zero, e.g. 31m, 2h, 1d (at most ${MAX_CLOCK_JUMP_DAYS}d without --force)`,
      positiveDuration,
    )
    .option('--force', `allow a jump of more than ${MAX_CLOCK_JUMP_DAYS} days`)
    .action(
      host.run(async (session, opts: { by: number; force?: boolean }) => {
        if (opts.by > MAX_CLOCK_JUMP_DAYS * 86_400_000 && opts.force !== true) {
          throw new UsageError(
            `--by is more than ${MAX_CLOCK_JUMP_DAYS} days: tokens, keys and rotations would all jump that far, and the service's data stays behind`,
            `add --force if that is what you mean; \`acctops local reset-clock\` brings the clock back`,
          );
        }
        const result = await (await session.operations()).advanceClock(opts.by);
        // A revocation that failed leaves an old key valid past its grace period: partly done.
        if (result.revoked.some((r) => r.error !== null)) session.partial();
        session.out.result(result, () => {
          session.out.line(`Local clock is now ${result.now}.`);
          for (const r of result.revoked)
            session.out.line(sentence(`Old key ${r.keyPrefix}… past its grace period: ${r.outcome}${r.error ? `: ${r.error}` : ''}`));
        });
      }),
    );

  local
    .command('issue-key')
    .description(
      'Create in the local sandbox an API key of the company with the permissions `keys install` and the exports need, and write it to a new file (mode 0600): the local stand-in for the key a company gives you (docs/runbooks.md, "Install a company API key"). Local mode only; the key is never printed, only its prefix.',
    )
    .requiredOption('--company <id>', "the company's publicId (`acctops companies list`)", guid)
    .requiredOption('--out <file>', 'the file to write the key to; created new with mode 0600, never overwritten', filePath)
    .action(
      host.run(async (session, opts: { company: string; out: string }) => {
        const issued = await (await session.operations()).issueLocalKey(opts.company, opts.out);
        // The install must reach this state: pasted without its --state-dir, it would open .acctops.
        const stateDir = session.stateDir;
        const where = stateDir === resolveStateDir(DEFAULT_STATE_DIR, session.runtime.cwd) ? '' : ` --state-dir ${shellQuote(stateDir)}`;
        session.out.result(issued, () => {
          session.out.line(`Issued key ${issued.keyPrefix}… for company ${issued.companyId}, written to ${issued.out} (mode 0600).`);
          session.out.line(
            `Install it with ACCTOPS_API_KEY="$(cat ${shellQuote(issued.out)})" acctops${where} keys install --company ${issued.companyId}, then delete the file.`,
          );
        });
      }),
    );

  local
    .command('reset-clock')
    .description('Put the local clock back on the system clock (undo advance-clock).')
    .action(
      host.run(async (session) => {
        const result = await (await session.operations()).resetClock();
        session.out.result(result, () => {
          session.out.line(
            `Local clock is back on the system clock: ${result.now} (moved ${Math.round(result.undoneMs / 60_000)} min back).`,
          );
          if (result.undoneMs > 0)
            session.out.line(
              'Tokens issued and rotations done while it was ahead keep their later times: they look newer than they are until the clock catches up.',
            );
        });
      }),
    );

  local
    .command('repair')
    .description(
      'Set aside the damaged state files that can be rebuilt (state.json, tokens.json, revocations.json, companies.json) and rebuild them, ' +
        'and the company registry entries that fail their schema (then `companies add` registers such a company again).',
    )
    .action(
      host.run(async (session) => {
        // The state directory's files, not a world (which would refuse them), in any mode; a world only
        // afterwards, to seed a companies.json it set aside.
        const report = await (
          await import('../local/local-world.ts')
        ).repairStateDir(session.stateDir, session.runtime.env, session.out.logger(), {
          onTakeOver: (lock) => session.out.note(takenOverLockNote(lock)),
        });
        // What is left is the state directory's problem, as when a command meets it: configuration.
        if (report.unrepairable.length > 0) session.exitCode = ExitCode.config;
        session.out.result(report, () => {
          if (report.repaired.length === 0 && report.unrepairable.length === 0 && report.entriesSetAside.length === 0)
            session.out.line(`No damaged state file or registry entry in ${session.stateDir}.`);
          for (const r of report.repaired) session.out.line(`Rebuilt ${r.file} (${r.rebuiltAs}); the damaged file is kept as ${r.keptAs}.`);
          for (const u of report.unrepairable) session.out.line(`Cannot rebuild ${u.file}: ${u.remedy}`);
          for (const e of report.entriesSetAside) {
            session.out.line(
              `Set aside the damaged registry entry ${e.companyId === null ? 'whose key is no company id' : `of company ${e.companyId}`} (${issuesText(e.issues)}${e.removed ? '; it was removed' : ''}) into ${e.keptAs}.`,
            );
            if (e.next !== null) session.out.line(`  Register it again: ${e.next}.`);
          }
        });
      }),
    );

  local
    .command('reset')
    .description('Delete the local state (embedded service, secrets, tokens, exports): the next command starts from scratch.')
    .option('--yes', 'confirm: the state directory is deleted (files acctops did not create are kept)')
    .action(
      host.run(async (session, opts: { yes?: boolean }) => {
        if (opts.yes !== true)
          throw new UsageError(
            'local reset deletes the state directory and needs --yes',
            `acctops local reset --yes   (state directory: ${session.stateDir})`,
          );
        const { removed, kept } = await resetStateDir(session.stateDir, {
          onTakeOver: (lock) => session.out.note(takenOverLockNote({ ...lock, completedSave: [] }, { deleting: true })),
        });
        session.out.result({ stateDir: session.stateDir, removed, kept }, () => {
          session.out.line(
            removed ? `Deleted the local state in ${session.stateDir}.` : `No local state in ${session.stateDir}; nothing to delete.`,
          );
          if (kept.length > 0) session.out.line(`Kept what acctops did not create there (so the directory stays): ${kept.join(', ')}.`);
        });
      }),
    );
  return local;
}
