import { recoverText } from '../../../cli/commands/users';

const USER = '0101f5ae-6225-4106-b7fe-2520511d42df';
const EXPIRES = Date.parse('2026-11-27T15:00:00.000Z');

/** `users recover` for people: "recovered (was active)" said a user was in trouble that was not (decision 103). */
describe('users recover: what it says', () => {
  it('an active user left as it is: already active, nothing changed', () => {
    const text = recoverText({
      externalId: USER,
      result: 'already_active',
      previousStatus: 'active',
      accessTokenExpiresAt: EXPIRES,
      changed: false,
    });
    expect(text).toBe(
      `User ${USER} was already active: nothing was changed (no token pair retrieved); its access token expires 2026-11-27T15:00:00Z; ` +
        `to retrieve a new pair anyway (the service refuses its tokens), run \`acctops users recover --user ${USER} --force\`.`,
    );
  });

  it('an active user with --force: a new pair, what was asked, not "recovered" nor a surprise of the deployed function', () => {
    const text = recoverText(
      { externalId: USER, result: 'recovered', previousStatus: 'active', accessTokenExpiresAt: EXPIRES, changed: true },
      true,
    );
    expect(text).toBe(`User ${USER}: new token pair retrieved (was active, --force); access token expires 2026-11-27T15:00:00Z.`);
  });

  it('a recover-user function deployed before this, which retrieved a pair for an active user: said as that, not "recovered"', () => {
    const text = recoverText({
      externalId: USER,
      result: 'recovered',
      previousStatus: 'active',
      accessTokenExpiresAt: EXPIRES,
      changed: true,
    });
    expect(text).toMatch(/^User \S+ was already active, but the deployed recover-user function retrieved a new token pair all the same; /);
    expect(text).not.toMatch(/recovered/);
  });

  it('a user in needs_attention or revoked: recovered, with the status it had', () => {
    const text = recoverText({
      externalId: USER,
      result: 'recovered',
      previousStatus: 'needs_attention',
      accessTokenExpiresAt: EXPIRES,
      changed: true,
    });
    expect(text).toBe(`User ${USER}: recovered (was needs_attention); access token expires 2026-11-27T15:00:00Z.`);
  });
});
