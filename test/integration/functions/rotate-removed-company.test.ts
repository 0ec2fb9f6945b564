import { CreateSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { DynamoDbRegistryTable } from '../../../src/adapters/aws/dynamodb-company-registry';
import { AwsSecretStore } from '../../../src/adapters/aws/secrets-manager';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY, parseCompanyKeySecret, serializeCompanyKeySecret } from '../../../src/core/api-keys';
import { CompanyRegistry } from '../../../src/core/companies/company-registry';
import { FORMATS } from '../../../src/core/exports/formats/datasets';
import { forgetRegisteredSecrets, keyPrefix } from '../../../src/core/shared/redact';
import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { createRegistryTable } from '../../helpers/dynamodb-tables';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { captureStdout, lambdaContexts, loadHandler } from '../../helpers/lambda';
import { type RunningScheduler, startScheduler } from '../../helpers/scheduler';
import { client as secretsClient, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';

/**
 * A company removed with `acctops companies remove` whose key secret the stack imports (cdk.json
 * `existingSecretArn`): the secret is not acctops's to delete and keeps the stack's
 * RotationSchedule, which a deploy can turn on again. The real rotate-api-key handler (environment
 * read on load, the real SDK clients) against the Secrets Manager emulator, which starts the
 * rotation as its schedule does, the company registry on dynalite and the sandbox: the function
 * asks the registry in createSecret and refuses a removed company before any key is made.
 */
describe('rotate-api-key refuses to rotate the key of a removed company', () => {
  const ROTATE_ARN = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-rotate-api-key';
  const TABLE = 'acctops-test-companies';

  let sandbox: RunningSandbox;
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let dynamo: LocalDynamo;
  let scheduler: RunningScheduler;
  let registry: CompanyRegistry;
  const saved = { ...process.env };
  const stdout: string[] = [];
  let write: jest.SpyInstance;
  const context = lambdaContexts();

  /** A company with a live key, its secret imported under a name of its own (tagged by the runbook, no stage tag). */
  async function importedCompany(name: string) {
    const companyId = (await sandbox.admin.createCompany({ name })).publicId;
    const created = await sandbox.admin.createApiKey({ companyId, permissions: ['manage_api_keys', 'read_transactions'] });
    const secret = await sdk.send(
      new CreateSecretCommand({
        Name: `legacy/erp/${companyId}`,
        SecretString: serializeCompanyKeySecret({
          apiKey: created.key,
          apiKeyId: created.publicId,
          keyPrefix: keyPrefix(created.key),
          companyId,
          permissions: created.permissions,
          createdAt: created.createdAt,
        }),
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: companyId },
        ],
      }),
    );
    // The stack's RotationSchedule (RotateImmediatelyOnUpdate false): rotation on, nothing run.
    sm.admin.configureRotation(secret.ARN!, { lambdaArn: ROTATE_ARN, rules: { AutomaticallyAfterDays: 30 } });
    return { companyId, secretArn: secret.ARN!, apiKeyId: created.publicId };
  }

  /** The company's keys at the service, live or revoked (the rollback lists them with the current key, a use: no lastUsedAt). */
  const keysOf = async (companyId: string) =>
    (await sandbox.admin.listApiKeys({ companyId })).map((k) => ({ publicId: k.publicId, name: k.name, revokedAt: k.revokedAt }));
  const currentKeyId = async (secretArn: string) =>
    parseCompanyKeySecret((await new AwsSecretStore(sdk).readSecret(secretArn)).value).apiKeyId;
  const stagesOf = (secretArn: string) =>
    sm.admin
      .secret(secretArn)!
      .versions.filter((v) => v.stages.length > 0)
      .map((v) => [...v.stages].sort());

  beforeAll(async () => {
    sandbox = await startSandbox({ demo: false });
    sm = await startSecretsManager();
    sdk = secretsClient(sm);
    dynamo = await startDynamo();
    scheduler = await startScheduler();
    const dynamoClient = dynamo.client();
    await createRegistryTable(dynamoClient, TABLE);
    registry = new CompanyRegistry(new DynamoDbRegistryTable({ client: dynamoClient, tableName: TABLE }), { defaultFormats: FORMATS });
    Object.assign(process.env, {
      ACCTOPS_STAGE: 'test',
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.endpoint,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
      ACCTOPS_BASE_URL: sandbox.baseUrl,
      REVOCATION_GRACE_SECONDS: '600',
      SECRET_CACHE_TTL_SECONDS: '300',
      REVOCATION_SCHEDULE_GROUP: 'acctops-test-key-revocations',
      REVOKE_FUNCTION_ARN: 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-revoke-api-key',
      REVOCATION_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/acctops-test-revocation-scheduler',
      COMPANY_REGISTRY_TABLE_NAME: TABLE,
    });
    write = captureStdout(stdout);
  });

  afterAll(async () => {
    write.mockRestore();
    process.env = saved;
    sdk.destroy();
    await Promise.all([sandbox.stop(), sm.stop(), dynamo.stop(), scheduler.stop()]);
    forgetRegisteredSecrets();
  });

  it('createSecret fails with CompanyRemovedRotationError naming the company and the restore; no key is made, nothing stays AWSPENDING; restored, it rotates', async () => {
    const rotate = loadHandler('rotate-api-key');
    sm.admin.registerRotationHandler(ROTATE_ARN, (event) => rotate(event, context()));
    const { companyId, secretArn, apiKeyId } = await importedCompany('Removed Imports GmbH');
    await registry.add({ companyId }, Date.now());
    const { company } = await registry.remove(companyId, Date.now());
    const keysBefore = await keysOf(companyId);

    const refused = await sm.admin.rotateOnSchedule(secretArn);
    expect(refused).toMatchObject({ status: 'failed', failedStep: 'createSecret', invocations: [{ step: 'createSecret', ok: false }] });
    expect(refused!.error).toMatchObject({ name: 'CompanyRemovedRotationError', code: 'company_removed', companyId });
    const message = (refused!.error as Error).message;
    expect(message).toContain(`company ${companyId} was removed on ${company.removedAt}`);
    expect(message).toContain(`\`acctops companies restore --company ${companyId}\``);
    // No key at the service, the current one untouched, and no AWSPENDING left to block a later rotation.
    expect(await keysOf(companyId)).toEqual(keysBefore);
    expect(await currentKeyId(secretArn)).toBe(apiKeyId);
    expect(stagesOf(secretArn)).toEqual([['AWSCURRENT']]);
    // The refusal is the function's error (the rotation-failures alarm), logged with the company.
    expect(stdout.join('')).toMatch(/"error":\{[^}]*"name":"CompanyRemovedRotationError"/);

    // `companies restore` (the registry entry active again): the next scheduled rotation runs.
    await registry.add({ companyId }, Date.now());
    expect(await sm.admin.rotateOnSchedule(secretArn)).toMatchObject({ status: 'succeeded' });
    expect(await currentKeyId(secretArn)).not.toBe(apiKeyId);
  });

  it('a registry it cannot read refuses the rotation too (rolled back, retried later), rather than rotate a company it cannot tell is removed', async () => {
    process.env.COMPANY_REGISTRY_TABLE_NAME = 'acctops-test-no-such-table';
    try {
      const rotate = loadHandler('rotate-api-key');
      sm.admin.registerRotationHandler(ROTATE_ARN, (event) => rotate(event, context()));
    } finally {
      process.env.COMPANY_REGISTRY_TABLE_NAME = TABLE;
    }
    const { companyId, secretArn, apiKeyId } = await importedCompany('Unreadable Registry SARL');
    const keysBefore = await keysOf(companyId);
    expect(await sm.admin.rotateOnSchedule(secretArn)).toMatchObject({ status: 'failed', failedStep: 'createSecret' });
    expect(await keysOf(companyId)).toEqual(keysBefore);
    expect(await currentKeyId(secretArn)).toBe(apiKeyId);
    expect(stagesOf(secretArn)).toEqual([['AWSCURRENT']]);
  });
});
