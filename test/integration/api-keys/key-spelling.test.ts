import { apiKeyAuth, createAccountingClient, type AccountingClient } from '../../../src/core/accounting-api';
import { keyPrefix, forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { verifyCompanyKey } from '../../../cli/operations/secret-changes';
import { startSandbox, type SandboxOptions } from '../../../sandbox';
import { RotationWorld } from './support';

/**
 * Key operations against services that spell keys and company ids otherwise than our sandbox's
 * default: a listed prefix of another length, a service prefix holding an underscore (spec §5.1
 * fixes neither), company publicIds in upper case compared exactly (spec §4.2 rule 1).
 */
const SPELLINGS: [string, Pick<SandboxOptions, 'companyIdCase' | 'apiKeys'>][] = [
  ['a listed prefix of 6 characters', { apiKeys: { listedChars: 6 } }],
  ['a listed prefix of 20 characters', { apiKeys: { listedChars: 20 } }],
  ['a service prefix with an underscore (sk_live_…)', { apiKeys: { servicePrefix: 'sk_live', listedChars: 6 } }],
  ['company publicIds in upper case', { companyIdCase: 'upper' }],
];

describe.each(SPELLINGS)('keys install and rotation with %s', (_, spelling) => {
  afterEach(() => forgetRegisteredSecrets());

  it('keys install finds the key in the list (its company in lower case, our short prefix), and never shows the key', async () => {
    const logger = new MemoryLogger();
    const sandbox = await startSandbox({ demo: false, ...spelling });
    try {
      const company = (await sandbox.admin.createCompany()).publicId;
      await sandbox.admin.createApiKey({ companyId: company, permissions: ['read_transactions'] });
      const created = await sandbox.admin.createApiKey({ companyId: company, permissions: ['full_access'] });
      await sandbox.admin.createApiKey({ companyId: company, permissions: ['read_transactions'] });
      const clientFor = (key: { apiKey: string; companyId: string }): AccountingClient =>
        createAccountingClient({ baseUrl: sandbox.baseUrl, credentials: apiKeyAuth(key.apiKey, { companyId: key.companyId }), logger });
      const secret = await verifyCompanyKey({ clientFor, clock: { now: () => Date.now() } }, company.toLowerCase(), created.key);
      expect(secret).toMatchObject({ apiKeyId: created.publicId, keyPrefix: keyPrefix(created.key), companyId: company.toLowerCase() });
      expect(secret.keyPrefix.length).toBeLessThan(created.key.length);
      expect(logger.lines.join('\n')).not.toContain(created.key);
    } finally {
      await sandbox.stop();
    }
  });

  it('a rotation replaces the key, and the new one works at once', async () => {
    const world = await RotationWorld.start(undefined, 'default', spelling);
    try {
      const old = world.initialKey;
      const { versionId } = await world.startRotation();
      expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded' });
      const current = await world.current();
      expect(current.versionId).toBe(versionId);
      expect(current.apiKey).not.toBe(old.apiKey);
      expect(current.companyId).toBe(world.companyId.toLowerCase());
      expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
      const lines = world.logger.lines.join('\n');
      for (const key of world.fullKeys()) expect(lines).not.toContain(key);
    } finally {
      await world.stop();
    }
  });
});

describe('keys install refuses what it cannot tell apart', () => {
  const KEY = 'sbx_AbCdEfGh1234567890abcdefghijklmnop';
  const company = '6f1c2a3b-0000-4000-8000-000000000001';
  /** A stand-in for the service: one company, and the key list given. */
  const listing = (prefixes: string[]) => ({
    clientFor: () =>
      ({
        companies: { list: () => ({ all: () => Promise.resolve([{ parsed: { publicId: company } }]) }) },
        apiKeys: {
          list: () => ({
            all: () =>
              Promise.resolve(
                prefixes.map((prefix, i) => ({
                  parsed: {
                    publicId: `00000000-0000-4000-8000-00000000000${i}`,
                    name: 'k',
                    prefix,
                    permissions: ['full_access'],
                    revokedAt: null,
                  },
                })),
              ),
          }),
        },
      }) as unknown as AccountingClient,
    clock: { now: () => 0 },
  });

  it('two live keys whose listed prefixes begin the key: an ambiguity naming both prefixes, never the key', async () => {
    const error = await verifyCompanyKey(listing(['sbx_AbCd', 'sbx_AbCdEf', 'sbx_Zz00']), company, KEY).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'CliError', code: 'key_ambiguous', exitCode: 3 });
    const text = `${(error as Error).message} ${(error as { hint: string }).hint}`;
    expect(text).toContain('sbx_AbCd… (00000000-0000-4000-8000-000000000000)');
    expect(text).toContain('sbx_AbCdEf… (00000000-0000-4000-8000-000000000001)');
    expect(text).not.toContain('sbx_Zz00');
    expect(text).not.toContain(KEY);
  });

  it('a listed prefix too short to name a key: exit 3 saying so', async () => {
    const error = await verifyCompanyKey(listing(['sbx_AbC']), company, KEY).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'CliError', code: 'key_not_listed', exitCode: 3 });
    expect((error as Error).message).toMatch(/too short .*sbx_AbC….*at least 4 characters after the underscore/);
    expect((error as Error).message).not.toContain(KEY);
  });
});
