import { Command, Option } from 'commander';
import type { OnboardResult, RecoverResult } from '../../src/core/tokens/token-lifecycle';
import { TOKEN_STATUSES, type TokenStatus } from '../../src/core/tokens/token-store';
import { email, guid, nonEmpty } from '../args';
import { errorLabel, iso, relative } from '../format';
import type { CommandHost } from './host';

export function usersCommand(host: CommandHost): Command {
  const users = new Command('users').description('User tokens held for the institution: onboard, list, revoke, recover.');

  users
    .command('onboard')
    .description('Register a user with the service (or retrieve its tokens if it exists) and keep its token pair.')
    .requiredOption('--external-id <uuid>', "the user's external_id (the partner-side id)", guid)
    .requiredOption('--username <name>', 'username at the service', nonEmpty)
    .requiredOption('--email <email>', 'email at the service', email)
    .action(
      host.run(async (session, opts: { externalId: string; username: string; email: string }) => {
        const input = { externalId: opts.externalId, username: opts.username, email: opts.email };
        const result = await (await session.operations()).onboardUser(input);
        session.out.result(result, () => {
          for (const line of onboardLines(result)) session.out.line(line);
        });
      }),
    );

  users
    .command('list')
    .description('List the users acctops holds tokens for (never the tokens).')
    .addOption(new Option('--status <status>', 'only users in this status').choices([...TOKEN_STATUSES]))
    .action(
      host.run(async (session, opts: { status?: TokenStatus }) => {
        const { rows, now } = await (await session.operations()).listUsers();
        const shown = opts.status ? rows.filter((r) => r.status === opts.status) : rows;
        session.out.result({ users: shown }, () => {
          session.out.table(shown, [
            { header: 'EXTERNAL ID', value: (r) => r.externalId },
            { header: 'USERNAME', value: (r) => r.username },
            { header: 'STATUS', value: (r) => r.status },
            {
              header: 'ACCESS TOKEN EXPIRES',
              // Only an active user's token is kept alive: a revoked one was expired at the service.
              value: (r) =>
                r.status === 'revoked'
                  ? '- (expired at revocation)'
                  : `${r.accessTokenExpiresAt} (${relative(Date.parse(r.accessTokenExpiresAt), now)}${r.status === 'active' ? '' : '; not refreshed'})`,
            },
            { header: 'DUE', value: (r) => (r.due ? 'yes' : 'no') },
            { header: 'FAILURES', value: (r) => r.consecutiveFailures, align: 'right' },
            { header: 'LAST ERROR', value: (r) => errorLabel(r.lastErrorClass, r.lastErrorCode) },
          ]);
          session.out.line(`${shown.length} user(s)${opts.status ? ` in status ${opts.status}` : ''}.`);
        });
      }),
    );

  users
    .command('revoke')
    .description("Expire the user's tokens at the service and stop refreshing them.")
    .requiredOption('--user <externalId>', "the user's external_id", guid)
    .action(
      host.run(async (session, opts: { user: string }) => {
        const result = await (await session.operations()).revokeUser(opts.user);
        session.out.result(result, () => session.out.line(`User ${result.externalId}: ${result.result.replace('_', ' ')}.`));
      }),
    );

  users
    .command('recover')
    .description(
      'Retrieve a new token pair for a user in needs_attention (or, with --reactivate, a revoked one; with --force, an active one).',
    )
    .requiredOption('--user <externalId>', "the user's external_id", guid)
    .option('--reactivate', 'also bring back a revoked user')
    .option('--force', 'retrieve a new pair for an active user too (the service refuses its tokens)')
    .action(
      host.run(async (session, opts: { user: string; reactivate?: boolean; force?: boolean }) => {
        const operations = await session.operations();
        const result = await operations.recoverUser(opts.user, { reactivate: opts.reactivate === true, force: opts.force === true });
        session.out.result(result, () => session.out.line(recoverText(result, opts.force === true)));
      }),
    );

  return users;
}

/**
 * What `users recover` did, for people. An active user is left as it is (`already_active`); a
 * recover-user function deployed before that retrieved a new pair for it all the same, which is
 * said too, not "recovered (was active)", as if the user had been in trouble. With `--force` a new
 * pair for an active user is what was asked, and said as that.
 */
export function recoverText(result: RecoverResult, forced = false): string {
  const expires = `access token expires ${iso(result.accessTokenExpiresAt)}`;
  if (result.result === 'already_active')
    return `User ${result.externalId} was already active: nothing was changed (no token pair retrieved); its ${expires}; to retrieve a new pair anyway (the service refuses its tokens), run \`acctops users recover --user ${result.externalId} --force\`.`;
  if (result.previousStatus === 'active' && forced)
    return `User ${result.externalId}: new token pair retrieved (was active, --force); ${expires}.`;
  if (result.previousStatus === 'active')
    return `User ${result.externalId} was already active, but the deployed recover-user function retrieved a new token pair all the same; ${expires}.`;
  return `User ${result.externalId}: recovered (was ${result.previousStatus}); ${expires}.`;
}

/**
 * What `users onboard` did, for people. Onboarding a user acctops already holds returns it as it is,
 * and only an active user is refreshed on schedule: a revoked or needs_attention one is left out of
 * the schedule until `users recover` brings it back, so the text says that instead of promising a
 * refresh that will not happen.
 */
export function onboardLines(result: Pick<OnboardResult, 'externalId' | 'result' | 'status' | 'accessTokenExpiresAt'>): string[] {
  const id = result.externalId;
  const head = `User ${id}: ${result.result.replace('_', ' ')} (status ${result.status})`;
  switch (result.status) {
    case 'active':
      return [head, `  access token expires ${iso(result.accessTokenExpiresAt)}; it is refreshed on schedule from now on.`];
    case 'revoked':
      return [
        head,
        `  the user was revoked: its tokens were expired at the service and are not refreshed; \`acctops users recover --user ${id} --reactivate\` brings it back.`,
      ];
    case 'needs_attention':
      return [
        head,
        `  the user needs attention: the service refused both its refresh and a retrieve, and it is left out of the refresh schedule (access token expires ${iso(result.accessTokenExpiresAt)}); \`acctops users recover --user ${id}\` retrieves a new pair.`,
      ];
  }
}
