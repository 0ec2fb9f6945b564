import { onboardArgs, parseJson, useCliState } from '../helpers/cli';
import { TEST_DIALECTS } from '../helpers/dialects';

interface UsersJson {
  users: { externalId: string; username: string }[];
}

/**
 * `users onboard` with a username the service refuses (the embedded sandbox's 150 characters,
 * Django's default; docs/assumptions.md, "Onboarding fields"). The spec states no limit, so acctops
 * refuses none of its own below 512 characters: the service's refusal is what the operator sees,
 * as one line naming `--username` and the field, exit 1, and nothing is kept. Both dialects: the
 * minimal one answers DRF's `{"username": ["…"]}`.
 */
describe.each(TEST_DIALECTS)('acctops users onboard: a username the service refuses (%s dialect)', (dialect) => {
  const { acctops } = useCliState({ env: { ACCTOPS_DIALECT: dialect } });
  const user = (externalId: string, username: string) => ({ externalId, username, email: `${username.length}@example.test` });
  const listed = async () => parseJson<UsersJson>(await acctops('--json', 'users', 'list')).users;

  it('one line naming --username and the service field, the limit in its words, exit 1; nothing kept', async () => {
    const long = user('91111111-2222-4333-8444-000000000151', 'u'.repeat(151));
    const refused = await acctops(...onboardArgs(long));
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' });
    const lines = refused.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('acctops: created the local state'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^acctops: error: --username: the service refused it: request refused as invalid \(400, .*on POST \/api\/v1\/institution\/users\/create\/, request id req_[0-9a-f]+\): field username: Invalid value for username: too big \(at most 150 characters\)\. /,
    );
    expect(lines[0]).toMatch(
      /\(nothing was registered: the API spec sets no length or character rule for a username, so acctops checks only that it is not blank and at most 512 characters; onboard again with a --username the service accepts\)$/,
    );
    // Not the service to check: it answered, and the value is what to change.
    expect(lines[0]).not.toContain('acctops doctor');
    expect(refused.stderr).not.toContain(long.username);

    const json = await acctops('--json', ...onboardArgs(long));
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: { code: 'invalid_request', exitCode: 1, message: expect.stringMatching(/^--username: the service refused it: /) },
    });
    expect((await listed()).map((u) => u.externalId)).not.toContain(long.externalId);
  });

  it("acctops adds no limit of its own: 150 characters onboard; above 512, acctops's own bound, is exit 2 before the service is asked", async () => {
    const longest = user('91111111-2222-4333-8444-000000000150', 'v'.repeat(150));
    expect((await acctops(...onboardArgs(longest))).code).toBe(0);
    expect((await listed()).find((u) => u.externalId === longest.externalId)?.username).toBe(longest.username);

    const beyond = await acctops(...onboardArgs(user('91111111-2222-4333-8444-000000000513', 'w'.repeat(513))));
    expect(beyond.code).toBe(2);
    expect(beyond.stderr).toMatch(
      /^acctops: error: option '--username <name>' is invalid: expected a non-empty value of at most 512 characters/,
    );
  });
});
