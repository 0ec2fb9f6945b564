import { CreateSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { COMPANY_KEY_TAGS, CompanyKeyNotFoundError, PURPOSE_COMPANY_KEY, taggedKeyDirectory } from '../../../src/core/api-keys';
import { ManualClock } from '../../../src/core/shared/clock';
import { client, secretStore, startSecretsManager, type RunningSecretsManager } from '../../helpers/secrets-manager';

const COMPANY = '6f1c2a3b-0000-4000-8000-0000000000d1';
const LEGACY = '6f1c2a3b-0000-4000-8000-0000000000d2';
const ONLY_STAGING = '6f1c2a3b-0000-4000-8000-0000000000d3';

/**
 * Two stages in one account, each with a secret for the same company, as KeyRotation tags them:
 * the real SDK client against the Secrets Manager emulator.
 */
describe('company key lookups filter on the stage tag', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  const arns: Record<string, string> = {};

  const create = async (name: string, companyId: string, stage?: string) => {
    const out = await sdk.send(
      new CreateSecretCommand({
        Name: name,
        SecretString: '{}',
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: companyId },
          ...(stage ? [{ Key: COMPANY_KEY_TAGS.stage, Value: stage }] : []),
        ],
      }),
    );
    arns[name] = out.ARN!;
  };

  beforeAll(async () => {
    sm = await startSecretsManager({ port: 0, clock: new ManualClock() });
    sdk = client(sm);
    await create('acctops/production/company/d1/api-key', COMPANY, 'production');
    await create('acctops/staging/company/d1/api-key', COMPANY, 'staging');
    // Imported before the stage tag existed: still found, by either stage.
    await create('legacy/d2', LEGACY);
    await create('acctops/staging/company/d3/api-key', ONLY_STAGING, 'staging');
  });
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  it('each stage finds its own secret of a company both stages hold', async () => {
    const store = secretStore(sm);
    expect((await taggedKeyDirectory(store, { stage: 'production' }).find(COMPANY)).secretId).toBe(
      arns['acctops/production/company/d1/api-key'],
    );
    expect((await taggedKeyDirectory(store, { stage: 'staging' }).find(COMPANY)).secretId).toBe(arns['acctops/staging/company/d1/api-key']);
  });

  it('without a stage the two secrets are ambiguous (the behaviour the stage tag fixes)', async () => {
    await expect(taggedKeyDirectory(secretStore(sm)).find(COMPANY)).rejects.toMatchObject({ code: 'company_key_ambiguous' });
  });

  it("never finds another stage's secret, and still finds an untagged (legacy) one", async () => {
    const production = taggedKeyDirectory(secretStore(sm), { stage: 'production' });
    await expect(production.find(ONLY_STAGING)).rejects.toBeInstanceOf(CompanyKeyNotFoundError);
    expect((await production.find(LEGACY)).secretId).toBe(arns['legacy/d2']);
  });

  it("lists only the stage's secrets and the untagged ones", async () => {
    const listed: string[] = [];
    for await (const entry of taggedKeyDirectory(secretStore(sm), { stage: 'production' }).list()) listed.push(entry.name);
    expect(listed.sort()).toEqual(['acctops/production/company/d1/api-key', 'legacy/d2'].sort());
  });
});
