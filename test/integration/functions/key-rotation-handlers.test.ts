import { CreateSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import {
  COMPANY_KEY_TAGS,
  type CompanyKeySecret,
  type DoctorReport,
  PURPOSE_COMPANY_KEY,
  parseCompanyKeySecret,
  rotationKeyName,
  serializeCompanyKeySecret,
} from '../../../src/core/api-keys';
import { AwsSecretStore } from '../../../src/adapters/aws/secrets-manager';
import { ManualClock } from '../../../src/core/shared/clock';
import { forgetRegisteredSecrets, keyPrefix } from '../../../src/core/shared/redact';
import { type AwsRecorder, startAwsRecorder } from '../../helpers/aws-recorder';
import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { type RunningScheduler, startScheduler } from '../../helpers/scheduler';
import { client as secretsClient, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';
import { captureStdout, lambdaContexts, loadHandler, type LambdaHandler } from '../../helpers/lambda';
import { call } from '../sandbox/support';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // The three key functions end to end: the real handler modules (environment read on load, the real
  // SDK clients) against the Secrets Manager emulator, a fake EventBridge Scheduler, an EventBridge
  // recorder and the sandbox. Secrets Manager invokes the rotation handler; the scheduler invokes
  // the revoke handler.

  const ROTATE_ARN = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-rotate-api-key';
  const REVOKE_ARN = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-revoke-api-key';
  const GRACE_SECONDS = 600;
  const BUS = 'acctops-test-events';

  let sandbox: RunningSandbox;
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let scheduler: RunningScheduler;
  let recorder: AwsRecorder;
  let companyId: string;
  let otherCompanyId: string;
  let secretArn: string;
  const fullKeys = new Set<string>();
  const saved = { ...process.env };
  const stdout: string[] = [];
  let write: jest.SpyInstance;
  const handlers = {} as {
    rotate: LambdaHandler<{ step: string; outcome: string }>;
    revoke: LambdaHandler<{ apiKeyId: string; outcome: string }>;
    doctor: LambdaHandler<DoctorReport>;
  };

  const context = lambdaContexts();
  const store = () => new AwsSecretStore(sdk);
  const current = async (): Promise<CompanyKeySecret> => {
    const key = parseCompanyKeySecret((await store().readSecret(secretArn)).value);
    fullKeys.add(key.apiKey);
    return key;
  };
  const statusWith = async (apiKey: string) => (await call(sandbox.baseUrl, '/companies/', { bearer: apiKey })).status;
  const rotate = () => store().startRotation(secretArn, { lambdaArn: ROTATE_ARN, automaticallyAfterDays: 30 });

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, demo: false });
    // The emulator's clock runs 10 minutes behind: its versions look 10 minutes old to the doctor.
    sm = await startSecretsManager({ clock: new ManualClock(Date.now() - 10 * 60_000) });
    sdk = secretsClient(sm);
    scheduler = await startScheduler();
    recorder = await startAwsRecorder();
    companyId = (await sandbox.admin.createCompany({ name: 'Handler GmbH' })).publicId;
    otherCompanyId = (await sandbox.admin.createCompany({ name: 'Other SARL' })).publicId;
    const created = await sandbox.admin.createApiKey({ companyId, permissions: ['manage_api_keys', 'read_transactions'] });
    fullKeys.add(created.key);
    const secret = await sdk.send(
      new CreateSecretCommand({
        Name: `acctops/test/company/${companyId}/api-key`,
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
    secretArn = secret.ARN!;

    Object.assign(process.env, {
      ACCTOPS_STAGE: 'test',
      LOG_LEVEL: 'debug',
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.endpoint,
      AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: recorder.endpoint,
      ACCTOPS_BASE_URL: sandbox.baseUrl,
      REVOCATION_GRACE_SECONDS: String(GRACE_SECONDS),
      SECRET_CACHE_TTL_SECONDS: '300',
      REVOCATION_SCHEDULE_GROUP: 'acctops-test-key-revocations',
      REVOKE_FUNCTION_ARN: REVOKE_ARN,
      REVOCATION_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/acctops-test-revocation-scheduler',
      KEY_EVENT_BUS_NAME: BUS,
      STUCK_PENDING_AFTER_MINUTES: '5',
    });
    write = captureStdout(stdout);
    handlers.rotate = loadHandler('rotate-api-key');
    handlers.revoke = loadHandler('revoke-api-key');
    handlers.doctor = loadHandler('check-key-rotations');
    // Secrets Manager invokes the rotation function by its ARN.
    sm.admin.registerRotationHandler(ROTATE_ARN, (event) => handlers.rotate(event, context()));
  });

  afterAll(async () => {
    write.mockRestore();
    process.env = saved;
    sdk.destroy();
    await Promise.all([sandbox.stop(), sm.stop(), scheduler.stop(), recorder.stop()]);
    forgetRegisteredSecrets();
  });

  describe('rotate-api-key and revoke-api-key', () => {
    it('rotate: four steps through Secrets Manager; the one-time schedule then revokes the old key', async () => {
      const old = await current();
      const before = Date.now();
      const { versionId } = await rotate();
      expect(sm.admin.rotation(secretArn)).toMatchObject({
        status: 'succeeded',
        invocations: [
          { step: 'createSecret', ok: true },
          { step: 'setSecret', ok: true },
          { step: 'testSecret', ok: true },
          { step: 'finishSecret', ok: true },
        ],
      });
      const rotated = await current();
      expect(rotated.apiKeyId).not.toBe(old.apiKeyId);
      expect(await statusWith(rotated.apiKey)).toBe(200);
      expect(await statusWith(old.apiKey)).toBe(200);

      const [schedule, ...others] = scheduler.schedules();
      expect(others).toEqual([]);
      expect(schedule!.Target.Arn).toBe(REVOKE_ARN);
      const revocation = JSON.parse(schedule!.Target.Input!) as { revokeAt: number; apiKeyId: string; rotationToken: string };
      expect(revocation).toMatchObject({ apiKeyId: old.apiKeyId, rotationToken: versionId });
      expect(revocation.revokeAt).toBeGreaterThanOrEqual(before + GRACE_SECONDS * 1000);

      expect(await scheduler.fireDue(Date.now(), async () => undefined)).toBe(0);
      const outcomes: unknown[] = [];
      const fired = await scheduler.fireDue(revocation.revokeAt + 1000, async (arn, input) => {
        expect(arn).toBe(REVOKE_ARN);
        outcomes.push(await handlers.revoke(input, context()));
      });
      expect(fired).toBe(1);
      expect(outcomes).toEqual([{ apiKeyId: old.apiKeyId, outcome: 'revoked' }]);
      expect(await statusWith(old.apiKey)).toBe(401);
      expect(await statusWith(rotated.apiKey)).toBe(200);
      expect(scheduler.schedules()).toEqual([]);
    });

    it('rotate: a step that fails testSecret is thrown (Secrets Manager records it) after the rollback', async () => {
      const before = await current();
      await sandbox.admin.faults.add({ route: 'GET /companies/', fault: { type: 'extra_fields', fields: { publicId: otherCompanyId } } });
      const { versionId } = await rotate();
      expect(sm.admin.rotation(secretArn)).toMatchObject({ status: 'failed', failedStep: 'testSecret' });
      expect((await current()).apiKeyId).toBe(before.apiKeyId);
      const made = (await sandbox.admin.listApiKeys({ companyId })).filter((k) => k.name === rotationKeyName(versionId));
      expect(made).toHaveLength(1);
      expect(made[0]!.revokedAt).not.toBeNull();
      expect(scheduler.schedules()).toEqual([]);
    });

    it('rotate: an event that is not a rotation step is refused naming the field, before anything runs', async () => {
      const calls = sm.admin.stats().calls.DescribeSecret ?? 0;
      await expect(
        handlers.rotate({ SecretId: secretArn, ClientRequestToken: 'a'.repeat(36), Step: 'dropSecret' }, context()),
      ).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'Step',
      });
      expect(sm.admin.stats().calls.DescribeSecret ?? 0).toBe(calls);
    });

    it('revoke: refuses a revocation without an id, and keeps the current key when one names it', async () => {
      const key = await current();
      await expect(handlers.revoke({ secretId: secretArn, companyId }, context())).rejects.toMatchObject({ name: 'ValidationError' });
      const outcome = await handlers.revoke(
        { secretId: secretArn, companyId, apiKeyId: key.apiKeyId, keyPrefix: key.keyPrefix, revokeAt: 0, rotationToken: 'b'.repeat(36) },
        context(),
      );
      expect(outcome).toEqual({ apiKeyId: key.apiKeyId, outcome: 'kept_current' });
      expect(await statusWith(key.apiKey)).toBe(200);
    });
  });

  describe('check-key-rotations', () => {
    it('repairs a stuck AWSPENDING, publishes the finding and its metric', async () => {
      sm.admin.setRotationMode('manual');
      const { versionId } = await rotate(); // never driven: the placeholder stays AWSPENDING
      sm.admin.setRotationMode('sync');
      const report = await handlers.doctor({}, context());
      expect(report.findings).toEqual([expect.objectContaining({ type: 'stuck_pending', versionId, repaired: true, companyId })]);
      // AWSPENDING gone; the doctor's own label marks when it gave the rotation up.
      expect(sm.admin.secret(secretArn)!.versions.find((v) => v.versionId === versionId)!.stages).toEqual([
        expect.stringMatching(/^ACCTOPS_GIVEN_UP_\d{8}T\d{6}Z$/),
      ]);
      expect(recorder.events).toEqual([
        expect.objectContaining({ eventBusName: BUS, source: 'acctops.api-keys', detailType: 'ApiKeyRotationFinding' }),
      ]);
      const emf = stdout.filter((line) => line.includes('"_aws"') && line.includes('UnrepairedRotationFindings'));
      expect(emf.length).toBeGreaterThan(0);

      const dry = await handlers.doctor({ repair: false }, context());
      expect(dry.findings).toEqual([]);
      // A rotation afterwards goes through.
      await rotate();
      expect(sm.admin.rotation(secretArn)).toMatchObject({ status: 'succeeded' });
    });
  });

  it("fails at load, naming the variable, when the grace period does not outlast the consumers' cache", () => {
    process.env.REVOCATION_GRACE_SECONDS = '300';
    try {
      expect(() => loadHandler('revoke-api-key')).toThrow(
        expect.objectContaining({ name: 'ConfigError', field: 'REVOCATION_GRACE_SECONDS' }),
      );
    } finally {
      process.env.REVOCATION_GRACE_SECONDS = String(GRACE_SECONDS);
    }
  });

  it('writes no full key to stdout (canary scan of every log line and metric document)', async () => {
    await current();
    const text = stdout.join('');
    expect(stdout.length).toBeGreaterThan(10);
    for (const key of fullKeys) {
      expect(text).not.toContain(key);
      expect(text).toContain(keyPrefix(key));
    }
  });
});
