import { Command } from 'commander';
import type { RefreshResult } from '../../src/core/tokens/token-lifecycle';
import { guid } from '../args';
import { UsageError } from '../errors';
import { ExitCode } from '../exit-codes';
import { errorLabel } from '../format';
import { interruptExitCode, speak } from '../interrupt';
import type { InterruptedWork, OnInterrupted, RefreshReport } from '../operations/operations';
import type { Output } from '../output';
import type { CommandHost } from './host';

/** Results that need someone: a refresh deferred or a user out of the schedule (`busy` is said per user, below). */
const TROUBLE: readonly RefreshResult[] = ['failed', 'needs_attention'];

export function tokensCommand(host: CommandHost): Command {
  const tokens = new Command('tokens').description('User token refresh, as the schedule runs it.');

  tokens
    .command('refresh')
    .description('Refresh the due users now (--all) or one user (--user), with the same single-flight rules as the schedule.')
    .option('--all', 'every user whose token is due (access token expiring within 15 minutes, or 24 h since the last refresh)')
    .option('--user <externalId>', 'only this user (refreshed if due, else reported not_due)', guid)
    .action(
      host.run(async (session, opts: { all?: boolean; user?: string }) => {
        if ((opts.all === true) === (opts.user !== undefined))
          throw new UsageError('give exactly one of --all and --user <externalId>', 'run `acctops tokens refresh --help`');
        const operations = await session.operations();
        // What was done before the signal is the command's report (stdout; --json's document), then the line.
        const onInterrupted: OnInterrupted = (signal, undone) =>
          speak(() => {
            const done = undone.refresh;
            if (done !== null) session.out.result(done, () => renderRefresh(session.out, done));
            session.out.error(refreshInterruptedLine(signal, undone));
          });
        const report =
          opts.user !== undefined
            ? await operations.refreshUser(opts.user, { onInterrupted })
            : await operations.refreshDue({ onInterrupted });
        if (report.outcomes.some((o) => TROUBLE.includes(o.result))) session.partial();
        const refused = report.outcomes.filter((o) => o.credentialRefused === true);
        if (refused.length > 0) {
          // Every user deferred for our credential is one fault, the credential's: exit 4, as a single refresh would.
          session.exitCode = ExitCode.auth;
          session.out.error({
            exitCode: ExitCode.auth,
            code: 'institution_refused',
            message: `the service refused the institution credential; ${refused.length} due user(s) deferred, none changed`,
            hint: 'check ACCTOPS_INSTITUTION or the stored institution secret (docs/runbooks.md, "Change the institution secret"); then run `acctops tokens refresh --all` again',
          });
        }
        // A busy user was due and is not refreshed: this run did not do what was asked for it (exit 5, README "Exit codes").
        for (const o of report.outcomes.filter((row) => row.result === 'busy')) {
          session.partial();
          session.out.error(
            {
              exitCode: ExitCode.partial,
              code: 'user_busy',
              message: `not refreshed: another run holds its lease${o.leaseUntil ? ` until ${o.leaseUntil}` : ''}`,
              hint: 'held by a refresh worker refreshing it now, or left by a command killed with kill -9; `acctops tokens refresh --all` refreshes it once the lease has run out',
            },
            { text: `user ${o.externalId}`, fields: { externalId: o.externalId } },
          );
        }
        session.out.result(report, () => renderRefresh(session.out, report));
      }),
    );
  return tokens;
}

export function renderRefresh(out: Output, report: RefreshReport): void {
  if (report.mode === 'enqueued') {
    out.line(`Enqueued ${report.planned} due user(s) for the deployed refresh workers; follow them with \`acctops users list\`.`);
    return;
  }
  out.table(
    report.outcomes,
    [
      { header: 'EXTERNAL ID', value: (o) => o.externalId },
      { header: 'RESULT', value: (o) => o.result },
      { header: 'ERROR', value: (o) => errorLabel(o.errorClass, o.errorCode) },
    ],
    // An interrupted refresh may have handled none of the users it found due.
    report.planned > 0 ? 'none handled' : 'no user was due',
  );
  const summary = Object.entries(report.counts)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  out.line(`${report.outcomes.length} user(s) handled${summary ? `: ${summary}` : ''}.`);
  if (report.outcomes.some((o) => o.result === 'not_due')) {
    out.line(
      // A revoked or needs_attention user named by --user is the command's error (refreshOfRevokedUser,
      // refreshOfUserNeedingAttention), not a row, and --all plans active users only.
      'not_due: nothing to do, because the token was refreshed within 24 h and expires in more than 15 minutes.',
    );
  }
  if (report.outcomes.some((o) => o.result === 'needs_attention')) {
    out.line('Users in needs_attention are out of the schedule: see docs/runbooks.md, "Recover a user".');
  }
}

/**
 * The one line an interrupted `tokens refresh` prints: how many of its users it handled before it
 * stopped (no user starts after the signal; those under way end), how many are still due, and the
 * leases it released of refreshes that had not ended, so that those users are not `busy` to the
 * next run.
 */
export function refreshInterruptedLine(signal: NodeJS.Signals, undone: InterruptedWork) {
  const released = undone.releasedLeases;
  const leases =
    released.length === 0
      ? ''
      : `; the lease(s) it held on ${released.length} user(s) whose refresh had not ended were released: ${released.join(', ')}`;
  const done = undone.refresh;
  if (done === null) {
    return {
      exitCode: interruptExitCode(signal),
      code: 'interrupted',
      message: `interrupted (${signal}) before the refresh started: no user was refreshed${leases}`,
      hint: '`acctops tokens refresh --all` refreshes the users due now',
    };
  }
  const handled = done.outcomes.length;
  const left = Math.max(0, done.planned - handled);
  const summary = Object.entries(done.counts)
    .map(([result, count]) => `${result} ${count}`)
    .join(', ');
  return {
    exitCode: interruptExitCode(signal),
    code: 'interrupted',
    message: `interrupted (${signal}) after ${handled} of ${done.planned} user(s) were handled${handled > 0 ? ` (${summary})` : ''}; ${left === 0 ? 'none is left' : `the other ${left} ${left === 1 ? 'is' : 'are'} not refreshed and still due`}${leases}`,
    hint: left === 0 ? '`acctops users list` shows where each user stands' : '`acctops tokens refresh --all` refreshes the users still due',
  };
}
