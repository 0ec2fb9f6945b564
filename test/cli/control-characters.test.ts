import { onboardArgs, parseJson, useCliState } from '../helpers/cli';

/** What a terminal would act on rather than show (output.ts, UNSHOWABLE); a line's own end aside. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSHOWABLE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * A username is any string (the spec says no more), so onboarding keeps it as given; what acctops
 * prints for people shows its control characters as escapes, and --json carries it exactly.
 */
describe('acctops CLI: control characters in user-supplied text, the real binary', () => {
  const state = useCliState();
  const { acctops } = state;
  const users = [
    { externalId: '51111111-2222-4333-8444-555555555555', username: 'evil\u001b[31mRED\u001b[0m', email: 'ev@example.com' },
    { externalId: '61111111-2222-4333-8444-555555555555', username: 'two\nlines\r\u009b2J\u202eright', email: 'tw@example.com' },
    { externalId: '71111111-2222-4333-8444-555555555555', username: '名前テスト', email: 'jp@example.com' },
  ];

  it('users onboard keeps the username as given; users list escapes it, one row a user, columns aligned; --json is exact', async () => {
    for (const user of users) {
      const onboarded = await acctops(...onboardArgs(user));
      expect(onboarded.code).toBe(0);
    }
    const list = await acctops('users', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).not.toMatch(UNSHOWABLE);
    const lines = list.stdout.trimEnd().split('\n');
    // Header, rule, three users, the count.
    expect(lines).toHaveLength(6);
    expect(lines[2]).toContain('evil\\x1b[31mRED\\x1b[0m');
    expect(lines[3]).toContain('two\\nlines\\r\\x9b2J\\u202eright');
    // The status column starts at the same terminal column in every row: CJK characters take two.
    const statusColumn = (line: string) => {
      const at = line.indexOf('active');
      return [...line.slice(0, at)].reduce((width, char) => width + (/[\u3000-\u9fff]/.test(char) ? 2 : 1), 0);
    };
    expect(new Set(lines.slice(2, 5).map(statusColumn)).size).toBe(1);

    const json = await acctops('--json', 'users', 'list');
    expect(json.stdout).not.toMatch(UNSHOWABLE);
    const body = parseJson<{ users: { externalId: string; username: string }[] }>(json);
    expect(body.users.map((u) => [u.externalId, u.username]).sort()).toEqual(users.map((u) => [u.externalId, u.username]).sort());
  });
});
