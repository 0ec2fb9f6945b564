import { Command, Option } from 'commander';
import { TOKEN_STATUSES, isDue, type TokenStatus, type TokenStore, type TokenSummary } from '../../src/core/tokens/token-store';
import type { OnboardResult, RecoverResult, RevokeResult } from '../../src/core/tokens/token-lifecycle';
import { email, guid, nonEmpty } from '../args';
import { iso, relative } from '../format';
import type { CommandHost } from './host';

/** The refresh margin of the schedule (TokenLifecycle's default): "due" in listings means the same as for the planner. */
export const REFRESH_MARGIN_MS = 15 * 60_000;

export interface UserRow {
  externalId: string;
  username: string;
  email: string;
  status: TokenStatus;
  accessTokenExpiresAt: string;
  refreshedAt: string;
  due: boolean;
  consecutiveFailures: number;
  lastErrorClass: string | null;
}

export function userRow(record: TokenSummary, now: number): UserRow {
  return {
    externalId: record.externalId,
    username: record.username,
    email: record.email,
    status: record.status,
    accessTokenExpiresAt: iso(record.accessTokenExpiresAt)!,
    refreshedAt: iso(record.refreshedAt)!,
    due: isDue(record, now, REFRESH_MARGIN_MS),
    consecutiveFailures: record.consecutiveFailures,
    lastErrorClass: record.lastErrorClass,
  };
}

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
        const result: OnboardResult =
          session.mode === 'aws'
            ? await (await host.aws(session)).onboardUser(input)
            : await session.local((world) => world.lifecycle().onboard(input));
        session.out.result(result, () => {
          session.out.line(`User ${result.externalId}: ${result.result.replace('_', ' ')} (status ${result.status})`);
          session.out.line(`  access token expires ${iso(result.accessTokenExpiresAt)}; it is refreshed on schedule from now on.`);
        });
      }),
    );

  users
    .command('list')
    .description('List the users acctops holds tokens for (never the tokens).')
    .addOption(new Option('--status <status>', 'only users in this status').choices([...TOKEN_STATUSES]))
    .action(
      host.run(async (session, opts: { status?: TokenStatus }) => {
        const { rows, now } =
          session.mode === 'aws' ? await (await host.aws(session)).listUsers() : await session.local(async (world) => listLocal(world.tokens, world.clock.now()));
        const shown = opts.status ? rows.filter((r) => r.status === opts.status) : rows;
        session.out.result({ users: shown }, () => {
          session.out.table(shown, [
            { header: 'EXTERNAL ID', value: (r) => r.externalId },
            { header: 'USERNAME', value: (r) => r.username },
            { header: 'STATUS', value: (r) => r.status },
            { header: 'ACCESS TOKEN EXPIRES', value: (r) => `${r.accessTokenExpiresAt} (${relative(Date.parse(r.accessTokenExpiresAt), now)})` },
            { header: 'DUE', value: (r) => (r.due ? 'yes' : 'no') },
            { header: 'FAILURES', value: (r) => r.consecutiveFailures, align: 'right' },
            { header: 'LAST ERROR', value: (r) => r.lastErrorClass },
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
        const result: RevokeResult =
          session.mode === 'aws'
            ? await (await host.aws(session)).revokeUser(opts.user)
            : await session.local((world) => world.lifecycle().revoke(opts.user));
        session.out.result(result, () => session.out.line(`User ${result.externalId}: ${result.result.replace('_', ' ')}.`));
      }),
    );

  users
    .command('recover')
    .description('Retrieve a new token pair for a user in needs_attention (or, with --reactivate, a revoked one).')
    .requiredOption('--user <externalId>', "the user's external_id", guid)
    .option('--reactivate', 'also bring back a revoked user')
    .action(
      host.run(async (session, opts: { user: string; reactivate?: boolean }) => {
        const options = { reactivate: opts.reactivate === true };
        const result: RecoverResult =
          session.mode === 'aws'
            ? await (await host.aws(session)).recoverUser(opts.user, options)
            : await session.local((world) => world.lifecycle().recover(opts.user, options));
        session.out.result(result, () => {
          session.out.line(`User ${result.externalId}: recovered (was ${result.previousStatus}); access token expires ${iso(result.accessTokenExpiresAt)}.`);
        });
      }),
    );

  return users;
}

/** Every record of a TokenStore, page by page. */
export async function listLocal(store: Pick<TokenStore, 'list'>, now: number): Promise<{ rows: UserRow[]; now: number }> {
  const rows: UserRow[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.list({ limit: 1000, cursor });
    rows.push(...page.items.map((r) => userRow(r, now)));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { rows, now };
}
