import { parseJson, useCliState, serviceKeysOf } from '../helpers/cli';

interface RevokedNow {
  keyPrefix: string;
  apiKeyId: string;
  outcome: string;
  error: { code: string; hint: string } | null;
}
interface RotateBody {
  state: string;
  keyPrefix: string;
  previousKeyPrefix: string;
  previousKeyRevoked: string | null;
  olderKeysRevoked: RevokedNow[] | null;
  olderKeysRevokeError: unknown;
}
interface StatusBody {
  companies: {
    companyId: string;
    keyPrefix: string;
    pendingRevocations: { keyPrefix: string; usedSinceRotation: boolean | null; lastUsedAt: string | null; revokedAt: string | null }[];
  }[];
}

/**
 * The runbook's leaked-key procedure through the real binary (local mode), in the order an
 * operator may well run it: a plain `keys rotate` first, then `--revoke-previous-now`. The leaked
 * key is then not the previous key but the one before it, still pending revocation.
 */
describe('acctops keys: a leaked key after a plain rotation (local mode)', () => {
  const state = useCliState();
  const acctops = (...args: string[]) => state.run(args);
  const status = async (companyId: string) =>
    parseJson<StatusBody>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!;
  const serviceKeys = (companyId: string) => serviceKeysOf(state.dir, companyId);
  let company: string;
  let leaked: string;

  beforeAll(async () => {
    const first = parseJson<StatusBody>(await acctops('--json', 'keys', 'status')).companies[0]!;
    company = first.companyId;
    leaked = first.keyPrefix;
  });

  it('--revoke-previous-now revokes every old key still pending revocation, the leaked one included, and names each', async () => {
    const plain = parseJson<RotateBody>(await acctops('--json', 'keys', 'rotate', '--company', company));
    expect(plain).toMatchObject({ state: 'completed', previousKeyPrefix: leaked, olderKeysRevoked: null });
    const innocent = plain.keyPrefix;
    expect((await status(company)).pendingRevocations.map((r) => r.keyPrefix)).toEqual([leaked]);

    const urgent = await acctops('--json', 'keys', 'rotate', '--company', company, '--revoke-previous-now');
    expect(urgent.code).toBe(0);
    const report = parseJson<RotateBody>(urgent);
    expect(report).toMatchObject({
      state: 'completed',
      previousKeyPrefix: innocent,
      previousKeyRevoked: 'revoked',
      olderKeysRevoked: [{ keyPrefix: leaked, outcome: 'revoked', error: null }],
      olderKeysRevokeError: null,
    });
    expect(urgent.stderr).toBe('');

    // Nothing of the company is left valid but the new key: at the service, and in keys status.
    const keys = await serviceKeys(company);
    for (const prefix of [leaked, innocent]) expect(keys.find((k) => k.prefix === prefix)!.revokedAt).not.toBeNull();
    expect(keys.find((k) => k.prefix === report.keyPrefix)!.revokedAt).toBeNull();
    expect(await status(company)).toMatchObject({ keyPrefix: report.keyPrefix, pendingRevocations: [] });
  });

  it('the human form names the previous key and each older one with its outcome, or says there was none', async () => {
    const first = parseJson<RotateBody>(await acctops('--json', 'keys', 'rotate', '--company', company));
    const human = await acctops('keys', 'rotate', '--company', company, '--revoke-previous-now');
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`  the previous key ${first.keyPrefix}… was revoked now: revoked\n`);
    expect(human.stdout).toContain(`  the older key ${first.previousKeyPrefix}…, still pending revocation, was revoked now: revoked\n`);

    const alone = await acctops('keys', 'rotate', '--company', company, '--revoke-previous-now');
    expect(alone.code).toBe(0);
    expect(alone.stdout).toContain('  no other old key of the company was pending revocation\n');
    expect(alone.stdout).not.toContain('the older key');
  });

  it('keys revoke-pending --prefix is idempotent: a key revoked already is already_revoked (exit 0); a prefix of no key stays exit 3', async () => {
    const first = await acctops('--json', 'keys', 'revoke-pending', '--company', company, '--prefix', leaked);
    expect(first.code).toBe(0);
    expect(parseJson(first)).toMatchObject({ companyId: company, keys: [{ keyPrefix: leaked, outcome: 'already_revoked', error: null }] });
    const human = await acctops('keys', 'revoke-pending', '--company', company, '--prefix', `${leaked}…`);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`  ${leaked}…  already_revoked\n`);

    const typo = await acctops('keys', 'revoke-pending', '--company', company, '--prefix', 'sbx_zzzzzzzz');
    expect(typo.code).toBe(3);
    expect(typo.stderr).toMatch(
      /^acctops: error: --prefix sbx_zzzzzzzz: no old key of company \S+ with that prefix is pending revocation, revoked, or the secret.s previous key \(/,
    );
    // The current key is live and not pending: never reported as revoked.
    const current = (await status(company)).keyPrefix;
    expect((await acctops('keys', 'revoke-pending', '--company', company, '--prefix', current)).code).toBe(3);
  });

  it("keys status: an older rotation's key reads its last use as maybe the rotation's own, not a consumer's", async () => {
    await acctops('keys', 'rotate', '--company', company);
    await acctops('keys', 'rotate', '--company', company);
    const [older, last] = (await status(company)).pendingRevocations;
    // The older key's last use is the first rotation's own (it created its replacement with it), which no longer dates it.
    expect(older).toMatchObject({ usedSinceRotation: null, lastUsedAt: expect.stringMatching(/Z$/), revokedAt: null });
    expect(last).toMatchObject({ usedSinceRotation: false, revokedAt: null });
    const human = await acctops('keys', 'status', '--company', company);
    expect(human.stdout).toMatch(
      new RegExp(`${older!.keyPrefix}… in \\d+m \\(last used \\d+s ago, maybe by the rotation that replaced it\\)`),
    );
    expect(human.stdout).toContain(`${last!.keyPrefix}… in 30m (not used since the rotation)`);
  });
});
