import {
  CreateSecretCommand,
  DeleteSecretCommand,
  DescribeSecretCommand,
  RotateSecretCommand,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { AwsSecretStore } from '../../../src/adapters/aws/secrets-manager';
import {
  SecretNotFoundError,
  SecretScheduledForDeletionError,
  SecretStage,
  SecretStoreError,
  SecretVersionConflictError,
  versionWithStage,
} from '../../../src/core/ports/secrets';
import { ManualClock } from '../../../src/core/shared/clock';
import { localClientConfig } from '../../helpers/aws-credentials';
import { client, type RunningSecretsManager, secretStore, startSecretsManager } from '../../helpers/secrets-manager';
import { canarySecret } from '../../helpers/canary';

const DAY = 86_400_000;
const token = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const CANARY = canarySecret('secret-store-value');

describe('AwsSecretStore (the SecretStore port) against the emulator', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let store: AwsSecretStore;
  const clock = new ManualClock();
  let seq = 0;
  const uniqueName = () => `acctops/adapter-${++seq}`;

  beforeAll(async () => {
    sm = await startSecretsManager({ clock });
    sdk = client(sm);
    store = secretStore(sm);
  });
  afterEach(() => sm.admin.clearFaults());
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  it('reads the current version by default, and any version by stage or id', async () => {
    const name = uniqueName();
    const created = await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await store.putSecretValue(name, { value: 'v2', clientRequestToken: token(2), stages: [SecretStage.pending] });

    expect(await store.readSecret(name)).toEqual({
      secretArn: created.ARN,
      name,
      versionId: token(1),
      value: 'v1',
      stages: ['AWSCURRENT'],
    });
    expect((await store.readSecret(created.ARN!, { stage: SecretStage.pending })).value).toBe('v2');
    expect((await store.readSecret(name, { versionId: token(2), stage: SecretStage.pending })).value).toBe('v2');
  });

  it('puts values idempotently and reports a token reused with another value as a conflict', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    expect(await store.putSecretValue(name, { value: 'v2', clientRequestToken: token(2) })).toEqual({
      versionId: token(2),
      stages: ['AWSCURRENT'],
    });
    expect(await store.putSecretValue(name, { value: 'v2', clientRequestToken: token(2) })).toEqual({
      versionId: token(2),
      stages: ['AWSCURRENT'],
    });

    const conflict = store.putSecretValue(name, { value: CANARY, clientRequestToken: token(2) });
    await expect(conflict).rejects.toBeInstanceOf(SecretVersionConflictError);
    await expect(conflict).rejects.toMatchObject({ code: 'secret_version_conflict', secretId: name });
    await expect(conflict).rejects.not.toThrow(CANARY);
  });

  it('describes versions to stages, rotation fields and tags in domain terms', async () => {
    const name = uniqueName();
    await sdk.send(
      new CreateSecretCommand({
        Name: name,
        SecretString: 'v1',
        ClientRequestToken: token(1),
        Tags: [{ Key: 'acctops:company', Value: 'c-1' }],
      }),
    );
    const lambda = 'arn:aws:lambda:eu-central-1:000000000000:function:adapter-rotation';
    sm.admin.registerRotationHandler(lambda, () => undefined);
    sm.admin.setRotationMode('manual');
    try {
      await sdk.send(
        new RotateSecretCommand({
          SecretId: name,
          RotationLambdaARN: lambda,
          RotationRules: { AutomaticallyAfterDays: 30 },
          ClientRequestToken: token(2),
        }),
      );
    } finally {
      sm.admin.setRotationMode('sync');
    }
    const described = await store.describeSecret(name);
    expect(described).toMatchObject({
      name,
      versionStages: { [token(1)]: ['AWSCURRENT'], [token(2)]: ['AWSPENDING'] },
      rotation: { enabled: true, lambdaArn: lambda, automaticallyAfterDays: 30, nextRotationAt: clock.now() + 30 * DAY },
      tags: { 'acctops:company': 'c-1' },
      lastChangedAt: clock.now(),
    });
    expect(described.rotation.lastRotatedAt).toBeUndefined();
    expect(versionWithStage(described, SecretStage.pending)).toBe(token(2));
    expect(versionWithStage(described, SecretStage.previous)).toBeUndefined();
  });

  it("describes and lists the secret's KMS key as the service names it, and none for the AWS managed key", async () => {
    const key = 'arn:aws:kms:eu-central-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const tags = [{ Key: 'acctops:kms-case', Value: 'x' }];
    const cmk = uniqueName();
    const awsManaged = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: cmk, SecretString: 'v1', KmsKeyId: key, Tags: tags }));
    await sdk.send(new CreateSecretCommand({ Name: awsManaged, SecretString: 'v1', Tags: tags }));
    // The emulator answers as AWS documents DescribeSecret: KmsKeyId only when a key was given.
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: awsManaged }))).KmsKeyId).toBeUndefined();
    expect((await store.describeSecret(cmk)).kmsKeyId).toBe(key);
    expect(await store.describeSecret(awsManaged)).not.toHaveProperty('kmsKeyId');
    const listed: [string, string | undefined][] = [];
    for await (const secret of store.listSecretsByTag('acctops:kms-case')) listed.push([secret.name, secret.kmsKeyId]);
    expect(listed).toEqual([
      [cmk, key],
      [awsManaged, undefined],
    ]);
  });

  it('moves and removes stages', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await store.putSecretValue(name, { value: 'v2', clientRequestToken: token(2), stages: [SecretStage.pending] });
    await store.moveStage(name, { stage: SecretStage.current, toVersionId: token(2), fromVersionId: token(1) });
    await store.moveStage(name, { stage: SecretStage.pending, fromVersionId: token(2) });
    expect((await store.describeSecret(name)).versionStages).toEqual({ [token(1)]: ['AWSPREVIOUS'], [token(2)]: ['AWSCURRENT'] });
    await expect(store.moveStage(name, { stage: SecretStage.current, toVersionId: token(1) })).rejects.toMatchObject({
      code: 'secrets_manager_InvalidParameterException',
      retryable: false,
    });
  });

  it('lists secrets by exact tag across pages, where the service only matches prefixes', async () => {
    const tagged = async (Name: string, Value: string, Key = 'acctops:company') =>
      sdk.send(new CreateSecretCommand({ Name, SecretString: 'x', Tags: [{ Key, Value }] }));
    for (let i = 0; i < 103; i++) await tagged(`acctops/bulk/${i}`, 'c-bulk');
    await tagged('acctops/bulk/prefix-value', 'c-bulk-other');
    await tagged('acctops/bulk/prefix-key', 'c-bulk', 'acctops:company-old');

    sm.admin.resetStats();
    const found: string[] = [];
    for await (const secret of store.listSecretsByTag('acctops:company', 'c-bulk')) found.push(secret.name);
    expect(found).toHaveLength(103);
    expect(found).not.toContain('acctops/bulk/prefix-value');
    expect(found).not.toContain('acctops/bulk/prefix-key');
    // The prefix filters let 105 through: two pages of at most 100.
    expect(sm.admin.stats().calls.ListSecrets).toBe(2);

    const anyValue: string[] = [];
    for await (const secret of store.listSecretsByTag('acctops:company-old')) anyValue.push(secret.name);
    expect(anyValue).toEqual(['acctops/bulk/prefix-key']);
  });

  it('maps a missing secret or value to SecretNotFoundError', async () => {
    await expect(store.readSecret('acctops/missing')).rejects.toBeInstanceOf(SecretNotFoundError);
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    await expect(store.readSecret(name, { stage: SecretStage.pending })).rejects.toMatchObject({
      code: 'secret_not_found',
      secretId: name,
      message: expect.stringContaining('ResourceNotFoundException') as string,
    });
  });

  it("maps a secret scheduled for deletion to SecretScheduledForDeletionError, the service's full stop dropped (decision 105)", async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: CANARY }));
    await sdk.send(new DeleteSecretCommand({ SecretId: name, RecoveryWindowInDays: 7 }));
    const read = store.readSecret(name);
    await expect(read).rejects.toBeInstanceOf(SecretScheduledForDeletionError);
    const error = (await read.catch((e: unknown) => e)) as SecretScheduledForDeletionError;
    expect(error).toMatchObject({ code: 'secret_scheduled_for_deletion', secretId: name });
    expect(error.message).toMatch(/InvalidRequestException: .*marked for deletion$/);
    expect(error.message).not.toContain(CANARY);
    // Another InvalidRequestException (a version id and a stage that disagree) stays a plain SecretStoreError.
    const live = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: live, SecretString: 'v1', ClientRequestToken: token(3) }));
    const other = await store.readSecret(live, { versionId: token(3), stage: SecretStage.pending }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(SecretStoreError);
    expect(other).not.toBeInstanceOf(SecretScheduledForDeletionError);
    expect(other).toMatchObject({ code: 'secrets_manager_InvalidRequestException' });
  });

  it('marks throttling retryable, and names the error without the value', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: CANARY }));
    sm.admin.injectFault({ operation: 'GetSecretValue' });
    const read = store.readSecret(name);
    await expect(read).rejects.toBeInstanceOf(SecretStoreError);
    await expect(read).rejects.toMatchObject({ retryable: true, code: 'secrets_manager_ThrottlingException' });
    expect((await store.readSecret(name)).value).toBe(CANARY);
  });

  it('reports an unreachable endpoint as a retryable SecretStoreError', async () => {
    const stopped = await startSecretsManager();
    await stopped.stop();
    const unreachable = new AwsSecretStore(localClientConfig(stopped.endpoint));
    await expect(unreachable.readSecret('acctops/anything')).rejects.toMatchObject({
      name: 'SecretStoreError',
      code: 'secrets_manager_unavailable',
      retryable: true,
    });
    // The errno code says why; the error's name alone was "Error".
    await expect(unreachable.readSecret('acctops/anything')).rejects.toThrow(
      /^Secrets Manager GetSecretValue failed for acctops\/anything: Error \(ECONNREFUSED\)$/,
    );
  });
});
