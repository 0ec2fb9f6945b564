import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { onboardArgs, parseJson, useCliState } from '../helpers/cli';

interface SandboxFile {
  users: { externalId: string | null }[];
  demo: { users: { username: string; email: string; externalId: string }[] };
}

interface TokenFile {
  records: Record<string, Record<string, unknown>>;
}

/**
 * A user whose record is stored under a mixed-case external_id (typed by hand into tokens.json, or
 * written by an older acctops that kept an id as typed), and whom the service knows by that
 * spelling: every command that names a user by `--user` or `--external-id` finds it whatever the
 * case it is given, and leaves it under its key (decision 83). Decision 77's spellings (lower,
 * upper, as given) missed it: `users revoke` and `users recover` were exit 3, unknown user.
 */
describe('acctops users: a record stored under a mixed-case external_id (local mode)', () => {
  const state = useCliState();
  const { acctops } = state;
  const path = (name: string) => join(state.dir, name);
  const tokenKeys = async () => Object.keys((JSON.parse(await readFile(path('tokens.json'), 'utf8')) as TokenFile).records);
  const stored = async (key: string) => (JSON.parse(await readFile(path('tokens.json'), 'utf8')) as TokenFile).records[key];

  let user: SandboxFile['demo']['users'][number];
  let lower: string;
  let mixed: string;

  beforeAll(async () => {
    await acctops('local', 'status');
    user = (JSON.parse(await readFile(path('sandbox.json'), 'utf8')) as SandboxFile).demo.users[0]!;
    expect((await acctops(...onboardArgs(user))).code).toBe(0);
    lower = user.externalId;
    // Every letter in upper case except the first: neither the lower- nor the upper-case spelling.
    let seen = false;
    mixed = [...lower].map((c) => (/[a-f]/.test(c) ? (seen ? c.toUpperCase() : ((seen = true), c)) : c)).join('');
    expect(mixed).not.toBe(lower);
    expect(mixed).not.toBe(lower.toUpperCase());
    // As an older acctops left it: the record's key and the service's id both spelled as typed.
    const tokens = JSON.parse(await readFile(path('tokens.json'), 'utf8')) as TokenFile;
    tokens.records[mixed] = { ...tokens.records[lower], externalId: mixed };
    delete tokens.records[lower];
    await writeFile(path('tokens.json'), JSON.stringify(tokens));
    const sandbox = JSON.parse(await readFile(path('sandbox.json'), 'utf8')) as SandboxFile;
    for (const u of sandbox.users) if (u.externalId === lower) u.externalId = mixed;
    await writeFile(path('sandbox.json'), JSON.stringify(sandbox));
  });

  it('users revoke finds it by the lower-case id, and the record stays under its key', async () => {
    const revoked = await acctops('--json', 'users', 'revoke', '--user', lower);
    expect(revoked.code).toBe(0);
    expect(parseJson(revoked)).toMatchObject({ result: 'revoked' });
    expect(await tokenKeys()).toEqual([mixed]);
    expect(await stored(mixed)).toMatchObject({ externalId: mixed, status: 'revoked' });
  });

  it('users recover --reactivate finds it by the upper-case id, and the service is sent the spelling it knows', async () => {
    const recovered = await acctops('--json', 'users', 'recover', '--user', lower.toUpperCase(), '--reactivate');
    expect(recovered.code).toBe(0);
    expect(parseJson(recovered)).toMatchObject({ result: 'recovered', previousStatus: 'revoked' });
    expect(await tokenKeys()).toEqual([mixed]);
    expect(await stored(mixed)).toMatchObject({ externalId: mixed, status: 'active', version: 3 });
  });

  it('tokens refresh --user and users onboard find it too: no second record', async () => {
    const refreshed = await acctops('--json', 'tokens', 'refresh', '--user', lower);
    expect(refreshed.code).toBe(0);
    expect(parseJson<{ outcomes: { result: string }[] }>(refreshed).outcomes.map((o) => o.result)).toEqual(['not_due']);
    const onboarded = await acctops('--json', ...onboardArgs(user));
    expect(onboarded.code).toBe(0);
    expect(parseJson(onboarded)).toMatchObject({ status: 'active' });
    expect(await tokenKeys()).toEqual([mixed]);
  });
});
