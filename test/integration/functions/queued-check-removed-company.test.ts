import { CreateSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { DynamoDbRegistryTable } from '../../../src/adapters/aws/dynamodb-company-registry';
import { AwsSecretStore } from '../../../src/adapters/aws/secrets-manager';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY, type QueuedCheck, serializeCompanyKeySecret } from '../../../src/core/api-keys';
import { CompanyRegistry } from '../../../src/core/companies/company-registry';
import { FORMATS } from '../../../src/core/exports/formats/datasets';
import { ManualClock } from '../../../src/core/shared/clock';
import { forgetRegisteredSecrets, keyPrefix } from '../../../src/core/shared/redact';
import { type AwsRecorder, startAwsRecorder } from '../../helpers/aws-recorder';
import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { createRegistryTable } from '../../helpers/dynamodb-tables';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { captureStdout, lambdaContexts, loadHandler } from '../../helpers/lambda';
import { type RunningScheduler, startScheduler } from '../../helpers/scheduler';
import { client as secretsClient, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';

/**
 * A rotation check the sweep queued for a company just before `acctops companies remove`: the real
 * check-key-rotations handler (environment read on load, the real SDK clients) consumes the queued
 * message against the Secrets Manager emulator, the company registry on dynalite, an EventBridge
 * recorder and the sandbox. The company's rotation is stuck in AWSPENDING, which a check would
 * repair (a stage moved, a finding, an event): removed, the message ends with a log line and
 * `RotationChecksSkipped`; restored, the same message repairs.
 */
describe('check-key-rotations: a queued check of a company removed since it was queued', () => {
  const ROTATE_ARN = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-rotate-api-key';
  const TABLE = 'acctops-test-companies';
  const BUS = 'acctops-test-events';

  let sandbox: RunningSandbox;
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let dynamo: LocalDynamo;
  let scheduler: RunningScheduler;
  let recorder: AwsRecorder;
  let registry: CompanyRegistry;
  const saved = { ...process.env };
  const stdout: string[] = [];
  let write: jest.SpyInstance;
  const context = lambdaContexts();
  let fullKey: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ demo: false });
    // The emulator's clock runs 10 minutes behind: its AWSPENDING looks 10 minutes old, past STUCK_PENDING_AFTER_MINUTES.
    sm = await startSecretsManager({ clock: new ManualClock(Date.now() - 10 * 60_000) });
    sdk = secretsClient(sm);
    dynamo = await startDynamo();
    scheduler = await startScheduler();
    recorder = await startAwsRecorder();
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
      AWS_ENDPOINT_URL_EVENTBRIDGE: recorder.endpoint,
      ACCTOPS_BASE_URL: sandbox.baseUrl,
      REVOCATION_GRACE_SECONDS: '600',
      SECRET_CACHE_TTL_SECONDS: '300',
      REVOCATION_SCHEDULE_GROUP: 'acctops-test-key-revocations',
      KEY_EVENT_BUS_NAME: BUS,
      STUCK_PENDING_AFTER_MINUTES: '5',
      COMPANY_REGISTRY_TABLE_NAME: TABLE,
    });
    write = captureStdout(stdout);
  });

  afterAll(async () => {
    write.mockRestore();
    process.env = saved;
    sdk.destroy();
    await Promise.all([sandbox.stop(), sm.stop(), dynamo.stop(), scheduler.stop(), recorder.stop()]);
    forgetRegisteredSecrets();
  });

  it('removed: no repair, no finding, no event, the message succeeds with a log line and RotationChecksSkipped; restored: the same message repairs', async () => {
    const companyId = (await sandbox.admin.createCompany({ name: 'Leaving GmbH' })).publicId;
    const created = await sandbox.admin.createApiKey({ companyId, permissions: ['manage_api_keys', 'read_transactions'] });
    fullKey = created.key;
    const name = `acctops/test/company/${companyId}/api-key`;
    const secret = await sdk.send(
      new CreateSecretCommand({
        Name: name,
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
    const secretArn = secret.ARN!;
    await registry.add({ companyId }, Date.now());
    // A rotation started and never driven: AWSPENDING stays on the new version, which the sweep finds in progress and queues.
    sm.admin.registerRotationHandler(ROTATE_ARN, () => Promise.reject(new Error('not driven in this test')));
    sm.admin.setRotationMode('manual');
    const { versionId } = await new AwsSecretStore(sdk).startRotation(secretArn, { lambdaArn: ROTATE_ARN, automaticallyAfterDays: 30 });
    const queued: QueuedCheck = { companyId, secretId: secretArn, name, reason: 'in_progress' };
    const event = (messageId: string) => ({ Records: [{ messageId, body: JSON.stringify(queued), eventSource: 'aws:sqs' }] });
    const stagesOfPending = () => sm.admin.secret(secretArn)!.versions.find((v) => v.versionId === versionId)!.stages;

    // `companies remove` lands after the sweep queued the check, before the worker takes it.
    const { company } = await registry.remove(companyId, Date.now());
    const doctor = loadHandler<{ batchItemFailures: { itemIdentifier: string }[] }>('check-key-rotations');
    const before = stdout.length;
    expect(await doctor(event('m-removed'), context())).toEqual({ batchItemFailures: [] });
    expect(stagesOfPending()).toEqual(['AWSPENDING']);
    expect(recorder.events).toEqual([]);
    const lines = stdout.slice(before).join('');
    expect(lines).toContain('queued rotation check skipped: the company was removed from the registry after it was queued');
    expect(lines).toMatch(new RegExp(`"reason":"company_removed"[^\\n]*"removedAt":"${company.removedAt!.replace(/\./g, '\\.')}"`));
    expect(lines).not.toContain('rotation doctor finding');
    expect(lines).not.toMatch(/"level":"(WARN|ERROR)"/i);
    // EMF: the skip under its reason, and no unrepaired finding for the alarm.
    const emf = stdout
      .slice(before)
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.includes('"_aws"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(emf).toContainEqual(expect.objectContaining({ RotationChecksSkipped: 1, Reason: 'company_removed' }));
    expect(emf.filter((doc) => 'UnrepairedRotationFindings' in doc).map((doc) => doc.UnrepairedRotationFindings)).toEqual([0]);

    // `companies restore`: the same message is a check again, and the stuck rotation is repaired.
    await registry.add({ companyId }, Date.now());
    expect(await doctor(event('m-restored'), context())).toEqual({ batchItemFailures: [] });
    expect(stagesOfPending()).toEqual([expect.stringMatching(/^ACCTOPS_GIVEN_UP_\d{8}T\d{6}Z$/)]);
    expect(recorder.events).toEqual([expect.objectContaining({ eventBusName: BUS, detailType: 'ApiKeyRotationFinding' })]);
  });

  it('writes no full key to stdout', () => {
    expect(fullKey).toBeDefined();
    expect(stdout.join('')).not.toContain(fullKey);
  });
});
