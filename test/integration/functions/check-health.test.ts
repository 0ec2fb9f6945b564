import { CreateSecretCommand, PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { HealthReport } from '../../../src/core/health/check-health';
import { PROBES } from '../../../src/core/health/check-health';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { client, startSecretsManager, type RunningSecretsManager } from '../../helpers/secrets-manager';
import { canarySecret } from '../../helpers/canary';
import { captureStdout, lambdaContexts, loadHandler, type LambdaHandler } from '../../helpers/lambda';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // check-health end to end: the real handler module (env read at load, the real AwsSecretStore
  // and accounting client) against the Secrets Manager emulator and the sandbox.

  const CANARY = canarySecret('wrong-institution-secret');

  describe('check-health handler', () => {
    let sm: RunningSecretsManager;
    let sandbox: RunningSandbox;
    let sdk: SecretsManagerClient;
    let secretArn: string;
    let handler: LambdaHandler<HealthReport>;
    const saved = { ...process.env };
    const stdout: string[] = [];
    let write: jest.SpyInstance;

    beforeAll(async () => {
      sm = await startSecretsManager();
      sandbox = await startSandbox({ dialect });
      sdk = client(sm);
      const { id: institutionId, secret } = sandbox.demo!.institution;
      const created = await sdk.send(
        new CreateSecretCommand({ Name: 'acctops/test/institution-credential', SecretString: `${institutionId}:${secret}` }),
      );
      secretArn = created.ARN!;
      Object.assign(process.env, {
        ACCTOPS_STAGE: 'test',
        LOG_LEVEL: 'info',
        INSTITUTION_SECRET_ARN: secretArn,
        ACCTOPS_BASE_URL: sandbox.baseUrl,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.endpoint,
        AWS_REGION: LOCAL_REGION,
        AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
      });
      write = captureStdout(stdout);
      handler = loadHandler('check-health');
    });

    afterAll(async () => {
      write.mockRestore();
      process.env = saved;
      sdk.destroy();
      await sandbox.stop();
      await sm.stop();
      forgetRegisteredSecrets();
    });

    const context = lambdaContexts();
    const invoke = (event: unknown = {}) => handler(event, context());
    const probe = (report: HealthReport, name: string) => report.probes.find((p) => p.name === name)!;

    it('is healthy when the credential reads and the sandbox answers', async () => {
      const report = await invoke();
      expect(report.ok).toBe(true);
      expect(report.probes.map((p) => [p.name, p.ok])).toEqual([
        [PROBES.institutionCredential, true],
        [PROBES.service, true],
      ]);
      expect(probe(report, PROBES.institutionCredential).detail).toBe(`institution ${sandbox.demo!.institution.id}`);
    });

    it('runs only the probes asked for, and refuses an unknown one naming the field', async () => {
      const report = await invoke({ probes: [PROBES.institutionCredential] });
      expect(report.probes.map((p) => p.name)).toEqual([PROBES.institutionCredential]);
      await expect(invoke({ probes: ['disk-space'] })).rejects.toMatchObject({ name: 'ValidationError', field: 'probes[0]' });
    });

    it('reports a credential the service refuses, and picks up the repaired one without a redeploy', async () => {
      const { id: institutionId, secret } = sandbox.demo!.institution;
      await sdk.send(new PutSecretValueCommand({ SecretId: secretArn, SecretString: `${institutionId}:${CANARY}` }));
      const refused = await invoke();
      expect(refused.ok).toBe(false);
      expect(probe(refused, PROBES.institutionCredential).ok).toBe(true);
      expect(probe(refused, PROBES.service).error).toMatchObject({ name: expect.stringMatching(/Authentication|Institution/) });

      await sdk.send(
        new PutSecretValueCommand({ SecretId: secretArn, SecretString: JSON.stringify({ institutionId, secretKey: secret }) }),
      );
      expect((await invoke()).ok).toBe(true);
    });

    it('reports a malformed secret by field, never its value', async () => {
      await sdk.send(new PutSecretValueCommand({ SecretId: secretArn, SecretString: `no-colon-${CANARY}` }));
      const report = await invoke();
      expect(probe(report, PROBES.institutionCredential)).toMatchObject({ ok: false, error: { name: 'ValidationError' } });
      expect(JSON.stringify(report)).not.toContain(CANARY);
    });

    it('never writes a secret to its logs or metrics', () => {
      const out = stdout.join('');
      expect(out).toContain('"message":"health checked"');
      expect(out).toContain('"_aws"');
      expect(out).not.toContain(CANARY);
      expect(out).not.toContain(sandbox.demo!.institution.secret);
    });
  });
});
