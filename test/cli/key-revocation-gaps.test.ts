import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson, useCliState, serviceKeysOf } from '../helpers/cli';

interface StatusBody {
  companies: { companyId: string; keyPrefix: string; pendingRevocations: { keyPrefix: string }[] }[];
}

/**
 * Decision 105, through the real binary (local mode): no key acctops replaced or stops serving is
 * left valid without being named and revocable. `keys install` names the key it replaced and
 * `keys revoke-pending --prefix` revokes it; `companies remove` names the keys it leaves valid and
 * `--revoke-keys` revokes them first; a revocation a removal blocks fails typed, exit 5, in
 * `advance-clock` and `doctor`.
 */
describe('acctops: keys left valid by keys install and companies remove (local mode)', () => {
  const state = useCliState();
  const acctops = (...args: string[]) => state.run(args);
  const status = async (companyId: string) =>
    parseJson<StatusBody>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!;
  const serviceKeys = (companyId: string) => serviceKeysOf(state.dir, companyId);
  const liveAtService = async (companyId: string, keyPrefix: string) => {
    const keys = (await serviceKeys(companyId)).filter((k) => k.prefix.startsWith(keyPrefix) || keyPrefix.startsWith(k.prefix));
    expect(keys).toHaveLength(1);
    return keys[0]!.revokedAt === null;
  };
  let companies: string[];
  /** The old key whose revocation the removal blocked. */
  let blockedOld: string;

  beforeAll(async () => {
    companies = parseJson<StatusBody>(await acctops('--json', 'keys', 'status')).companies.map((c) => c.companyId);
    expect(companies.length).toBeGreaterThanOrEqual(2);
  });

  it('keys install names the key it replaced by prefix, never whole, and keys revoke-pending --prefix revokes it now, idempotently', async () => {
    const company = companies[0]!;
    const replaced = (await status(company)).keyPrefix;
    const file = join(state.dir, 'new-key.txt');
    expect((await acctops('local', 'issue-key', '--company', company, '--out', file)).code).toBe(0);
    const key = (await readFile(file, 'utf8')).trim();

    const install = await state.run(['keys', 'install', '--company', company], { env: { ACCTOPS_API_KEY: key } });
    expect(install.code).toBe(0);
    const command = `acctops keys revoke-pending --company ${company} --prefix ${replaced}`;
    expect(install.stdout).toContain(`the key it replaced, ${replaced}…, stays valid at the service: revoke it now with \`${command}\`.`);
    expect(install.stdout).toContain('No revocation is scheduled for it');
    expect(install.stdout + install.stderr).not.toContain(key);
    expect(await liveAtService(company, replaced)).toBe(true);
    // keys status names it by prefix while it stays valid with nothing pending (decision 107).
    const replacedId = (await serviceKeys(company)).find((k) => k.prefix.startsWith(replaced) || replaced.startsWith(k.prefix))!.publicId;
    expect(
      parseJson<{ companies: { replacedKey: unknown }[] }>(await acctops('--json', 'keys', 'status', '--company', company)).companies[0]!
        .replacedKey,
    ).toMatchObject({
      apiKeyId: replacedId,
      keyPrefix: replaced,
    });
    const shown = await acctops('keys', 'status', '--company', company);
    expect(shown.stdout).toContain(
      `${company}: the previous key ${replaced}… (the key an install replaced, or one whose revocation was lost) stays valid at the service`,
    );
    expect(shown.stdout).toContain(`\`${command}\` revokes it now.`);
    expect(shown.stdout + shown.stderr).not.toContain(key);

    const revoked = await acctops('--json', 'keys', 'revoke-pending', '--company', company, '--prefix', replaced);
    expect(revoked.code).toBe(0);
    expect(parseJson(revoked)).toMatchObject({ keys: [{ keyPrefix: replaced, outcome: 'revoked', error: null }] });
    expect(await liveAtService(company, replaced)).toBe(false);
    const again = await acctops('--json', 'keys', 'revoke-pending', '--company', company, '--prefix', replaced);
    expect(again.code).toBe(0);
    expect(parseJson(again)).toMatchObject({ keys: [{ keyPrefix: replaced, outcome: 'already_revoked' }] });
    // Revoked, it is no longer listed as valid.
    expect(
      parseJson<{ companies: { replacedKey: unknown }[] }>(await acctops('--json', 'keys', 'status', '--company', company)).companies[0]!
        .replacedKey,
    ).toBeNull();

    // The key installed is current: --prefix never revokes it.
    const current = (await status(company)).keyPrefix;
    expect((await acctops('keys', 'revoke-pending', '--company', company, '--prefix', current)).code).toBe(3);
    expect(await liveAtService(company, current)).toBe(true);
  });

  it('keys install --json says whether the replaced key is live; installing the same key again replaces none', async () => {
    const company = companies[0]!;
    const key = (await readFile(join(state.dir, 'new-key.txt'), 'utf8')).trim();
    const again = await state.run(['--json', 'keys', 'install', '--company', company], { env: { ACCTOPS_API_KEY: key } });
    expect(again.code).toBe(0);
    expect(parseJson(again)).toMatchObject({ noop: true, replacedKey: null });
  });

  it('companies remove names the current key and the old keys pending revocation; their revocation then fails typed (exit 5) and doctor reports it', async () => {
    const company = companies[1]!;
    const old = (await status(company)).keyPrefix;
    expect((await acctops('keys', 'rotate', '--company', company)).code).toBe(0);
    const current = (await status(company)).keyPrefix;

    const removal = await acctops('--json', 'companies', 'remove', '--company', company);
    expect(removal.code).toBe(0);
    expect(parseJson(removal)).toMatchObject({
      keys: { current: { keyPrefix: current }, pending: [{ keyPrefix: old }], revoked: null, unread: null },
    });
    const text = await acctops('companies', 'remove', '--company', company);
    // A second remove cannot read the keys any more (the secret is scheduled for deletion), and says how to get at them.
    expect(text.stdout).toContain('Its keys could not be read (its key secret is scheduled for deletion already');
    expect(text.stdout).toContain(
      `\`acctops companies restore --company ${company}\`, then \`acctops companies remove --company ${company} --revoke-keys\``,
    );
    // Removed without --revoke-keys, nothing recorded them revoked: --revoke-keys now is refused, naming the way.
    const late = await acctops('--json', 'companies', 'remove', '--company', company, '--revoke-keys');
    expect(late.code).toBe(3);
    expect(late.stderr).toContain('"code":"revocation_secret_deleted"');

    const advanced = await acctops('local', 'advance-clock', '--by', '31m');
    expect(advanced.code).toBe(5);
    const line = advanced.stdout.split('\n').find((l) => l.includes(old))!;
    expect(line).toContain(`old key ${old}… of company ${company} cannot be revoked: the company's key secret is scheduled for deletion`);
    expect(line).toContain(`\`acctops companies restore --company ${company}\``);
    expect(line).not.toMatch(/\.\.|InvalidRequestException/);
    expect(await liveAtService(company, old)).toBe(true);
    blockedOld = old;

    const doctor = await acctops('doctor');
    expect(doctor.code).toBe(5);
    expect(doctor.stdout).toContain(`old key ${old}… of company ${company} cannot be revoked`);
    expect(doctor.stdout).not.toContain('..');
  });

  it('companies remove --revoke-keys (after a restore) revokes the pending old key and the current key, then removes', async () => {
    const company = companies[1]!;
    expect((await acctops('companies', 'restore', '--company', company)).code).toBe(0);
    // Restored, the revocation that was blocked is carried out by the next command that runs due ones.
    expect((await status(company)).pendingRevocations).toEqual([]);
    expect(await liveAtService(company, blockedOld)).toBe(false);
    const old = (await status(company)).keyPrefix;
    expect((await acctops('keys', 'rotate', '--company', company)).code).toBe(0);
    const { keyPrefix: current, pendingRevocations } = await status(company);
    expect(pendingRevocations.map((r) => r.keyPrefix)).toEqual([old]);

    const removal = await acctops('companies', 'remove', '--company', company, '--revoke-keys');
    expect(removal.code).toBe(0);
    expect(removal.stdout).toContain(`  Old key ${old}…, pending revocation: revoked.`);
    expect(removal.stdout).toContain(`  Current key ${current}… revoked at the service.`);
    expect(await liveAtService(company, old)).toBe(false);
    expect(await liveAtService(company, current)).toBe(false);
    // Nothing is left queued to fail.
    expect((await acctops('local', 'advance-clock', '--by', '31m')).code).toBe(0);

    // Repeated (a script's retry), the keys can no longer be read, but the removal recorded them
    // revoked: already_removed, exit 0, each key already_revoked; it used to be exit 3 naming a
    // restore, and a remove --revoke-keys after that restore failed on the key it had revoked.
    const again = await acctops('--json', 'companies', 'remove', '--company', company, '--revoke-keys');
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    const alreadyRevoked = (keyPrefix: string) => ({
      keyPrefix,
      apiKeyId: expect.any(String),
      outcome: 'already_revoked',
      error: null,
      scheduleError: null,
    });
    expect(parseJson(again)).toMatchObject({
      result: 'already_removed',
      keys: { current: { keyPrefix: current }, pending: [], revoked: [alreadyRevoked(old), alreadyRevoked(current)], unread: null },
    });
    const text = await acctops('companies', 'remove', '--company', company);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`  Old key ${old}…, pending revocation: already revoked, by the earlier remove.`);
    expect(text.stdout).toContain(`  Current key ${current}… already revoked at the service, by the earlier remove.`);
    expect(text.stdout).not.toContain('stay valid at the service');
    expect(await liveAtService(company, current)).toBe(false);
  });

  it('keys revoke-pending takes the revocation it carried out off the local queue: a plain remove after it blocks nothing (decision 107)', async () => {
    const company = companies[0]!;
    const old = (await status(company)).keyPrefix;
    expect((await acctops('keys', 'rotate', '--company', company)).code).toBe(0);
    expect((await status(company)).pendingRevocations.map((r) => r.keyPrefix)).toEqual([old]);
    const revoked = await acctops('--json', 'keys', 'revoke-pending', '--company', company);
    expect(revoked.code).toBe(0);
    expect(parseJson(revoked)).toMatchObject({ keys: [{ keyPrefix: old, outcome: 'revoked', error: null, scheduleError: null }] });
    expect((await status(company)).pendingRevocations).toEqual([]);

    expect((await acctops('companies', 'remove', '--company', company)).code).toBe(0);
    const advanced = await acctops('local', 'advance-clock', '--by', '31m');
    expect(advanced.code).toBe(0);
    expect(advanced.stdout).not.toContain(old);
    const doctor = await acctops('doctor');
    expect(doctor.stdout).not.toContain(`old key ${old}…`);
    expect(await liveAtService(company, old)).toBe(false);
  });
});

/**
 * Whether a key may revoke itself the spec does not say; the minimal dialect refuses it. Then
 * `companies remove --revoke-keys` must fail as decision 105 says: exit 5, the company not removed,
 * its current key still valid and still held, so that nothing is left that nobody can revoke.
 */
describe('acctops: companies remove --revoke-keys against a service that refuses a key revoking itself (minimal dialect)', () => {
  const state = useCliState({ env: { ACCTOPS_DIALECT: 'minimal' } });
  const acctops = (...args: string[]) => state.run(args);

  it('fails with exit 5, removes nothing and keeps the current key valid and held', async () => {
    const [company] = parseJson<StatusBody>(await acctops('--json', 'keys', 'status')).companies;
    const { companyId, keyPrefix } = company!;
    const removal = await acctops('companies', 'remove', '--company', companyId, '--revoke-keys');
    expect(removal.code).toBe(5);
    expect(`${removal.stdout}${removal.stderr}`).toContain(keyPrefix);
    // A refusal for good: the hint does not send the operator round the same loop.
    expect(removal.stderr).toContain('running it again will not help');
    expect(removal.stderr).not.toContain('--revoke-keys` again');
    const listed = parseJson<{ companies: { companyId: string; status: string }[] }>(await acctops('--json', 'companies', 'list'));
    expect(listed.companies.find((c) => c.companyId === companyId)?.status).toBe('active');
    const live = (await serviceKeysOf(state.dir, companyId)).filter((k) => k.revokedAt === null).map((k) => k.prefix);
    expect(live.some((prefix) => prefix.startsWith(keyPrefix) || keyPrefix.startsWith(prefix))).toBe(true);
    // Still held: the key works for acctops, as a rotation shows.
    expect((await acctops('keys', 'rotate', '--company', companyId)).code).toBe(0);
  });
});

/**
 * Decision 113, through the real binary (local mode): the key `keys install` replaced loses the
 * AWSPREVIOUS label at the next rotation, and with it its line in `keys status`, though it stays
 * valid at the service with nothing scheduled to revoke it. `keys status` names it from the secret's
 * earlier version until the rotation doctor revokes it.
 */
describe('acctops: the key an install replaced, after a later rotation (local mode)', () => {
  const state = useCliState();
  const acctops = (...args: string[]) => state.run(args);
  type Row = {
    companyId: string;
    keyPrefix: string;
    replacedKey: unknown;
    earlierKeys: { apiKeyId: string; keyPrefix: string; lastUsedAt: string | null }[];
    pendingRevocations: { keyPrefix: string }[];
  };
  const row = async (companyId: string) =>
    parseJson<{ companies: Row[] }>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!;

  it('keys status lists it under earlierKeys, never as pending, until doctor --repair revokes it as revocation_overdue', async () => {
    const company = parseJson<{ companies: Row[] }>(await acctops('--json', 'keys', 'status')).companies[0]!.companyId;
    const replaced = (await row(company)).keyPrefix;
    const replacedId = (await serviceKeysOf(state.dir, company)).find(
      (k) => replaced.startsWith(k.prefix) || k.prefix.startsWith(replaced),
    )!.publicId;
    const file = join(state.dir, 'installed-key.txt');
    expect((await acctops('local', 'issue-key', '--company', company, '--out', file)).code).toBe(0);
    const key = (await readFile(file, 'utf8')).trim();
    expect((await state.run(['keys', 'install', '--company', company], { env: { ACCTOPS_API_KEY: key } })).code).toBe(0);
    const installed = (await row(company)).keyPrefix;
    expect((await acctops('keys', 'rotate', '--company', company)).code).toBe(0);

    const after = await row(company);
    // The installed key is the one pending now; the replaced one is no longer AWSPREVIOUS, and was lost from view.
    expect(after.pendingRevocations.map((r) => r.keyPrefix)).toEqual([installed]);
    expect(after.replacedKey).toBeNull();
    expect(after.earlierKeys).toEqual([expect.objectContaining({ apiKeyId: replacedId, keyPrefix: replaced })]);
    const shown = await acctops('keys', 'status', '--company', company);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(
      `${company}: the earlier key ${replaced}… (held by an earlier version of its key secret: the key an install replaced, or one whose revocation was lost) stays valid at the service`,
    );
    expect(shown.stdout).toContain(
      'the rotation doctor revokes it as revocation_overdue once the grace period after the last rotation is over',
    );
    expect(shown.stdout + shown.stderr).not.toContain(key);
    expect((await serviceKeysOf(state.dir, company)).find((k) => k.publicId === replacedId)!.revokedAt).toBeNull();

    // What the line promises: past the grace period (and the doctor's slack), doctor --repair revokes it.
    expect((await acctops('local', 'advance-clock', '--by', '2h')).code).toBe(0);
    expect((await acctops('doctor', '--repair')).stdout).toContain(replaced);
    expect((await serviceKeysOf(state.dir, company)).find((k) => k.publicId === replacedId)!.revokedAt).not.toBeNull();
    expect((await row(company)).earlierKeys).toEqual([]);
  });
});
