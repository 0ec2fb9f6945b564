import {
  CreateSecretCommand,
  DeleteSecretCommand,
  DescribeSecretCommand,
  type SecretsManagerClient,
  TagResourceCommand,
} from '@aws-sdk/client-secrets-manager';
import {
  COMPANY_KEY_TAGS,
  companyKeySecretName,
  describeByNameOrTag,
  PURPOSE_COMPANY_KEY,
  registeredKeyDirectory,
  taggedKeyDirectory,
} from '../../../src/core/api-keys';
import { SecretAccessDeniedError } from '../../../src/core/ports/secrets';
import { ManualClock } from '../../../src/core/shared/clock';
import { client, secretStore, startSecretsManager, type RunningSecretsManager } from '../../helpers/secrets-manager';

const STAGE = 'production';
const CREATED = '6f1c2a3b-0000-4000-8000-0000000000e1';
const IMPORTED = '6f1c2a3b-0000-4000-8000-0000000000e2';
const WITHOUT_SECRET = '6f1c2a3b-0000-4000-8000-0000000000e3';

/**
 * The check-key-rotations function's grant on company secrets, as KeyRotation writes it
 * (grantCompanyKeysByTag): DescribeSecret and the other actions on `acctops/<stage>/company/*`, only if
 * the secret carries the stage and purpose tags. Imported secrets have per-ARN grants outside that
 * prefix, which the emulator's default (allowed) stands for.
 */
const DOCTOR_GRANT = {
  operations: ['DescribeSecret', 'GetSecretValue', 'ListSecretVersionIds', 'UpdateSecretVersionStage'] as const,
  namePrefix: `acctops/${STAGE}/company/`,
  resourceTags: { [COMPANY_KEY_TAGS.stage]: STAGE, [COMPANY_KEY_TAGS.purpose]: PURPOSE_COMPANY_KEY },
};

describe('describeByNameOrTag under the tag-conditioned grant (the rotation sweep, keys status)', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  const arns: Record<string, string> = {};

  const create = async (name: string, companyId: string) => {
    const out = await sdk.send(
      new CreateSecretCommand({
        Name: name,
        SecretString: '{}',
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: companyId },
          { Key: COMPANY_KEY_TAGS.stage, Value: STAGE },
        ],
      }),
    );
    arns[companyId] = out.ARN!;
  };

  beforeAll(async () => {
    sm = await startSecretsManager({ port: 0, clock: new ManualClock() });
    sdk = client(sm);
    await create(companyKeySecretName(STAGE, CREATED), CREATED);
    // cdk.json existingSecretArn: its own name, tagged by the runbook.
    await create('imported/acme-api-key', IMPORTED);
    sm.admin.setTagConditionedGrants([{ ...DOCTOR_GRANT, operations: [...DOCTOR_GRANT.operations] }]);
  });
  afterEach(() => sm.admin.clearFaults());
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  const describeCompanySecret = () => {
    const store = secretStore(sm);
    return describeByNameOrTag({
      store,
      directory: taggedKeyDirectory(store, { stage: STAGE }),
      nameOf: (companyId) => companyKeySecretName(STAGE, companyId),
    });
  };

  it('the emulator answers the by-name DescribeSecret of a name without a secret as AWS does: AccessDeniedException, as it does a secret without the tags', async () => {
    await expect(sdk.send(new DescribeSecretCommand({ SecretId: companyKeySecretName(STAGE, IMPORTED) }))).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
    await expect(secretStore(sm).describeSecret(companyKeySecretName(STAGE, WITHOUT_SECRET))).rejects.toBeInstanceOf(
      SecretAccessDeniedError,
    );
    // An existing secret under the prefix without the tags is refused too; other operations are served.
    const untagged = `acctops/${STAGE}/company/untagged/api-key`;
    await sdk.send(new CreateSecretCommand({ Name: untagged, SecretString: '{}' }));
    await expect(sdk.send(new DescribeSecretCommand({ SecretId: untagged }))).rejects.toMatchObject({ name: 'AccessDeniedException' });
    await sdk.send(new TagResourceCommand({ SecretId: untagged, Tags: [{ Key: COMPANY_KEY_TAGS.stage, Value: STAGE }] }));
    await sdk.send(new TagResourceCommand({ SecretId: untagged, Tags: [{ Key: COMPANY_KEY_TAGS.purpose, Value: 'other' }] }));
    await expect(sdk.send(new DescribeSecretCommand({ SecretId: untagged }))).rejects.toMatchObject({ name: 'AccessDeniedException' });
    await sdk.send(new DeleteSecretCommand({ SecretId: untagged, ForceDeleteWithoutRecovery: true }));
  });

  it('finds a created secret by its name, an imported one by tag, and none for a company without a secret', async () => {
    const describe = describeCompanySecret();
    expect((await describe(CREATED))?.entry).toEqual({
      companyId: CREATED,
      secretId: arns[CREATED],
      name: companyKeySecretName(STAGE, CREATED),
    });
    expect((await describe(IMPORTED))?.entry).toEqual({ companyId: IMPORTED, secretId: arns[IMPORTED], name: 'imported/acme-api-key' });
    await expect(describe(WITHOUT_SECRET)).resolves.toBeUndefined();
  });

  it('keys status lists the imported company with the others', async () => {
    const directory = registeredKeyDirectory({
      pages: async function* () {
        yield [{ companyId: CREATED }, { companyId: IMPORTED }, { companyId: WITHOUT_SECRET }];
      },
      describeCompanySecret: describeCompanySecret(),
    });
    const listed: string[] = [];
    for await (const entry of directory.list()) listed.push(entry.name);
    expect(listed).toEqual([companyKeySecretName(STAGE, CREATED), 'imported/acme-api-key']);
  });

  it('a real permission problem still fails: the tag lookup refused, or the secret it found refused', async () => {
    sm.admin.injectFault({ operation: 'ListSecrets', type: 'AccessDeniedException', message: 'not authorized to perform: ListSecrets' });
    await expect(describeCompanySecret()(IMPORTED)).rejects.toBeInstanceOf(SecretAccessDeniedError);

    // The imported secret's per-ARN grant missing: DescribeSecret of the ARN the tag lookup found.
    sm.admin.setTagConditionedGrants([
      { ...DOCTOR_GRANT, operations: [...DOCTOR_GRANT.operations] },
      { operations: ['DescribeSecret'], namePrefix: 'imported/', resourceTags: { 'not-granted': 'x' } },
    ]);
    try {
      await expect(describeCompanySecret()(IMPORTED)).rejects.toMatchObject({
        name: 'SecretAccessDeniedError',
        secretId: arns[IMPORTED],
      });
    } finally {
      sm.admin.setTagConditionedGrants([{ ...DOCTOR_GRANT, operations: [...DOCTOR_GRANT.operations] }]);
    }
  });
});
