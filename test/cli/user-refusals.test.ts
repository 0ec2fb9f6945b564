import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { onboardArgs, parseJson, useCliState } from '../helpers/cli';

interface SandboxFile {
  users: { username: string; externalId?: string; disabled: boolean }[];
  demo: { users: { username: string; email: string; externalId: string }[] };
}

interface UsersJson {
  users: { externalId: string; status: string; lastErrorClass: string | null; lastErrorCode: string | null }[];
}

/**
 * The runbook "Recover a user" through the real binary (local mode): the LAST ERROR names the
 * service's code, a user the service disabled is not our credential (exit 1, ask the service owner),
 * a user it no longer knows is onboarded again, and a recovery clears the error.
 */
describe('acctops users: a user the service refuses or no longer knows', () => {
  const state = useCliState();
  const { acctops } = state;
  const sandboxFile = () => join(state.dir, 'sandbox.json');
  /** Changes the embedded service's users between commands (no command holds the state then). */
  const editUsers = async (change: (users: SandboxFile['users']) => SandboxFile['users']) => {
    const sandbox = JSON.parse(await readFile(sandboxFile(), 'utf8')) as SandboxFile;
    sandbox.users = change(sandbox.users);
    await writeFile(sandboxFile(), JSON.stringify(sandbox));
  };
  const listed = async (externalId: string) =>
    parseJson<UsersJson>(await acctops('--json', 'users', 'list')).users.find((u) => u.externalId === externalId)!;

  let user: SandboxFile['demo']['users'][number];

  beforeAll(async () => {
    await acctops('local', 'status');
    user = (JSON.parse(await readFile(sandboxFile(), 'utf8')) as SandboxFile).demo.users[0]!;
    const onboarded = await acctops(...onboardArgs(user));
    expect(onboarded.code).toBe(0);
  });

  it('a disabled user: LAST ERROR shows user_disabled; recover is exit 1 asking the service owner, without re-reading the secret', async () => {
    await editUsers((users) => users.map((u) => (u.externalId === user.externalId ? { ...u, disabled: true } : u)));
    expect((await acctops('local', 'advance-clock', '--by', '20m')).code).toBe(0);

    const refresh = await acctops('tokens', 'refresh', '--all');
    expect(refresh.code).toBe(5);
    expect(refresh.stdout).toMatch(new RegExp(`${user.externalId} +needs_attention +AuthenticationError \\(user_disabled\\)`));
    const list = await acctops('users', 'list');
    expect(list.stdout).toMatch(new RegExp(`${user.externalId} .*needs_attention .* AuthenticationError \\(user_disabled\\)`));
    expect(await listed(user.externalId)).toMatchObject({ lastErrorClass: 'AuthenticationError', lastErrorCode: 'user_disabled' });

    // Refreshing it alone says what it is and the runbook's way back (exit 1, as for a revoked user), never `not_due`.
    const single = await acctops('tokens', 'refresh', '--user', user.externalId);
    expect({ code: single.code, stdout: single.stdout }).toEqual({ code: 1, stdout: '' });
    expect(single.stderr).toBe(
      `acctops: error: --user ${user.externalId}: the user needs attention (its refresh and retrieve were refused); nothing was refreshed ` +
        `(\`acctops users list --status needs_attention\` shows its last error; once its cause is fixed, \`acctops users recover --user ${user.externalId}\` retrieves a new token pair, ` +
        `and \`acctops users onboard --external-id ${user.externalId} --username <name> --email <email>\` registers it again if the service no longer knows it (docs/runbooks.md, "Recover a user"))\n`,
    );
    const singleJson = await acctops('--json', 'tokens', 'refresh', '--user', user.externalId);
    expect(singleJson.code).toBe(1);
    expect(JSON.parse(singleJson.stderr)).toMatchObject({ error: { code: 'user_needs_attention', exitCode: 1 } });
    expect(await listed(user.externalId)).toMatchObject({ status: 'needs_attention' });

    const recover = await acctops('-v', 'users', 'recover', '--user', user.externalId);
    expect(recover.code).toBe(1);
    const errorLine = recover.stderr.split('\n').find((l) => l.startsWith('acctops: error:'))!;
    expect(errorLine).toMatch(/user_disabled.*ask the service owner \(docs\/runbooks\.md, "Recover a user"\)/);
    expect(errorLine).not.toMatch(/check the credential/);
    expect(recover.stderr).not.toMatch(/re-read after an authentication error/);
    const recoverJson = await acctops('--json', 'users', 'recover', '--user', user.externalId);
    expect(recoverJson.code).toBe(1);
    expect(JSON.parse(recoverJson.stderr)).toMatchObject({ error: { code: 'user_disabled' } });

    // The service owner enables the user: recover brings it back, and the error is history.
    await editUsers((users) => users.map((u) => (u.externalId === user.externalId ? { ...u, disabled: false } : u)));
    expect((await acctops('users', 'recover', '--user', user.externalId)).code).toBe(0);
    expect(await listed(user.externalId)).toMatchObject({ status: 'active', lastErrorClass: null, lastErrorCode: null });
    expect((await acctops('users', 'list')).stdout).toMatch(new RegExp(`${user.externalId} .* active .* 0  -`));
  });

  it('a user the service no longer knows: recover says to onboard it again, and onboarding does', async () => {
    await editUsers((users) => users.filter((u) => u.externalId !== user.externalId));
    expect((await acctops('local', 'advance-clock', '--by', '20m')).code).toBe(0);
    expect((await acctops('tokens', 'refresh', '--all')).code).toBe(5);
    expect(await listed(user.externalId)).toMatchObject({
      status: 'needs_attention',
      lastErrorClass: 'NotFoundError',
      lastErrorCode: 'not_found',
    });

    const recover = await acctops('users', 'recover', '--user', user.externalId);
    expect(recover.code).toBe(1);
    expect(recover.stderr).toMatch(
      new RegExp(
        `^acctops: error: --user ${user.externalId}: the service no longer knows this user \\(not found \\(404.*onboard it again: \`acctops users onboard --external-id ${user.externalId}`,
      ),
    );
    expect(recover.stderr).not.toMatch(/acctops doctor/);

    const onboard = await acctops('--json', ...onboardArgs(user));
    expect(onboard.code).toBe(0);
    expect(parseJson(onboard)).toMatchObject({ externalId: user.externalId, result: 'created', status: 'active' });
    expect(await listed(user.externalId)).toMatchObject({ status: 'active', lastErrorClass: null, lastErrorCode: null });
    expect((await acctops('tokens', 'refresh', '--user', user.externalId)).code).toBe(0);
  });
});
