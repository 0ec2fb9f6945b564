import {
  CreateSecretCommand,
  DeleteSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  InvalidParameterException,
  InvalidRequestException,
  ListSecretsCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  RestoreSecretCommand,
  SecretsManagerClient,
  type SecretsManagerClientConfig,
  SecretsManagerServiceException,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { ManualClock } from '../../../src/core/shared/clock';
import { localClientConfig } from '../../helpers/aws-credentials';
import { client, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';

const DAY = 86_400_000;
const token = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('Secrets Manager emulator: errors the SDK maps to its typed exceptions', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  const clock = new ManualClock();
  let seq = 0;
  const uniqueName = () => `acctops/errors-${++seq}`;

  beforeAll(async () => {
    sm = await startSecretsManager({ clock });
    sdk = client(sm);
  });
  afterEach(() => sm.admin.clearFaults());
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  it('an unknown secret is ResourceNotFoundException', async () => {
    const call = sdk.send(new GetSecretValueCommand({ SecretId: 'acctops/never-created' }));
    await expect(call).rejects.toBeInstanceOf(ResourceNotFoundException);
    await expect(call).rejects.toMatchObject({
      message: "Secrets Manager can't find the specified secret.",
      $metadata: { httpStatusCode: 400 },
    });
  });

  it('a stage or version without a value is ResourceNotFoundException', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    await expect(sdk.send(new GetSecretValueCommand({ SecretId: name, VersionStage: 'AWSPENDING' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
    await expect(sdk.send(new GetSecretValueCommand({ SecretId: name, VersionId: token(99) }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
  });

  it('creating an existing name, or reusing a token with another value, is ResourceExistsException', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await expect(sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'other' }))).rejects.toBeInstanceOf(ResourceExistsException);
    // A retried CreateSecret (same token, same value) succeeds and creates nothing new.
    const retried = await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    expect(retried.VersionId).toBe(token(1));

    const put = sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'changed', ClientRequestToken: token(1) }));
    await expect(put).rejects.toBeInstanceOf(ResourceExistsException);
    await expect(put).rejects.toThrow("You can't modify an existing version");
    expect((await sdk.send(new GetSecretValueCommand({ SecretId: name }))).SecretString).toBe('v1');
  });

  it('label moves the API forbids are InvalidParameterException', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await sdk.send(
      new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2), VersionStages: ['AWSPENDING'] }),
    );

    // AWSCURRENT is on v1: moving it needs RemoveFromVersionId naming v1.
    const noRemove = sdk.send(
      new UpdateSecretVersionStageCommand({ SecretId: name, VersionStage: 'AWSCURRENT', MoveToVersionId: token(2) }),
    );
    await expect(noRemove).rejects.toBeInstanceOf(InvalidParameterException);
    await expect(noRemove).rejects.toThrow(`currently attached to version ${token(1)}`);
    await expect(
      sdk.send(
        new UpdateSecretVersionStageCommand({
          SecretId: name,
          VersionStage: 'AWSCURRENT',
          MoveToVersionId: token(1),
          RemoveFromVersionId: token(2),
        }),
      ),
    ).rejects.toBeInstanceOf(InvalidParameterException);
    // AWSCURRENT can be moved, never removed.
    await expect(
      sdk.send(new UpdateSecretVersionStageCommand({ SecretId: name, VersionStage: 'AWSCURRENT', RemoveFromVersionId: token(1) })),
    ).rejects.toBeInstanceOf(InvalidParameterException);
    await expect(
      sdk.send(
        new UpdateSecretVersionStageCommand({
          SecretId: name,
          VersionStage: 'AWSPENDING',
          MoveToVersionId: token(77),
          RemoveFromVersionId: token(2),
        }),
      ),
    ).rejects.toBeInstanceOf(InvalidParameterException);
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: name }))).VersionIdsToStages).toEqual({
      [token(1)]: ['AWSCURRENT'],
      [token(2)]: ['AWSPENDING'],
    });
  });

  it('malformed input is InvalidParameterException naming the member', async () => {
    const call = sdk.send(new CreateSecretCommand({ Name: 'bad name with spaces', SecretString: 'x' }));
    await expect(call).rejects.toBeInstanceOf(InvalidParameterException);
    await expect(call).rejects.toThrow(/Name: invalid/);
    const both = sdk.send(new CreateSecretCommand({ Name: uniqueName(), SecretString: 'x', SecretBinary: new Uint8Array([1]) }));
    await expect(both).rejects.toBeInstanceOf(InvalidParameterException);
  });

  it('a VersionStage that is not on the given VersionId is InvalidRequestException', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await expect(
      sdk.send(new GetSecretValueCommand({ SecretId: name, VersionId: token(1), VersionStage: 'AWSPENDING' })),
    ).rejects.toBeInstanceOf(InvalidRequestException);
  });

  it('a secret scheduled for deletion refuses reads with InvalidRequestException until restored or purged', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    const deleted = await sdk.send(new DeleteSecretCommand({ SecretId: name, RecoveryWindowInDays: 7 }));
    expect(deleted.DeletionDate).toEqual(new Date(clock.now() + 7 * DAY));

    await expect(sdk.send(new GetSecretValueCommand({ SecretId: name }))).rejects.toBeInstanceOf(InvalidRequestException);
    await expect(sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'x' }))).rejects.toBeInstanceOf(InvalidRequestException);
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: name }))).DeletedDate).toEqual(new Date(clock.now()));
    const names = async (IncludePlannedDeletion?: boolean) =>
      (await sdk.send(new ListSecretsCommand({ IncludePlannedDeletion, Filters: [{ Key: 'name', Values: [name] }] }))).SecretList?.map(
        (s) => s.Name,
      );
    expect(await names()).toEqual([]);
    expect(await names(true)).toEqual([name]);

    await sdk.send(new RestoreSecretCommand({ SecretId: name }));
    expect((await sdk.send(new GetSecretValueCommand({ SecretId: name }))).SecretString).toBe('v1');

    await sdk.send(new DeleteSecretCommand({ SecretId: name, RecoveryWindowInDays: 7 }));
    clock.advance(7 * DAY);
    await expect(sdk.send(new DescribeSecretCommand({ SecretId: name }))).rejects.toBeInstanceOf(ResourceNotFoundException);
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'reborn' }));
    expect((await sdk.send(new GetSecretValueCommand({ SecretId: name }))).SecretString).toBe('reborn');
  });

  it('each scheduled deletion takes effect at its own date; a restored one never; a purged ARN no longer resolves', async () => {
    const [soon, later, restored] = [uniqueName(), uniqueName(), uniqueName()];
    const arns: Record<string, string> = {};
    for (const name of [soon, later, restored])
      arns[name] = (await sdk.send(new CreateSecretCommand({ Name: name, SecretString: name }))).ARN!;
    await sdk.send(new DeleteSecretCommand({ SecretId: restored, RecoveryWindowInDays: 7 }));
    await sdk.send(new DeleteSecretCommand({ SecretId: soon, RecoveryWindowInDays: 8 }));
    await sdk.send(new DeleteSecretCommand({ SecretId: arns[later], RecoveryWindowInDays: 10 }));
    await sdk.send(new RestoreSecretCommand({ SecretId: arns[restored]!.slice(0, -7) }));
    const exists = async (id: string) =>
      sdk.send(new DescribeSecretCommand({ SecretId: id })).then(
        () => true,
        (error: unknown) => (error instanceof ResourceNotFoundException ? false : Promise.reject(error)),
      );

    clock.advance(7 * DAY);
    expect([await exists(soon), await exists(later), await exists(restored)]).toEqual([true, true, true]);
    clock.advance(DAY);
    expect([await exists(soon), await exists(arns[soon]!), await exists(later), await exists(restored)]).toEqual([
      false,
      false,
      true,
      true,
    ]);
    clock.advance(2 * DAY);
    expect([await exists(later), await exists(arns[later]!.slice(0, -7)), await exists(restored)]).toEqual([false, false, true]);

    // A secret created again under the purged name has a new ARN; the old one stays unknown.
    const reborn = await sdk.send(new CreateSecretCommand({ Name: soon, SecretString: 'reborn' }));
    expect(reborn.ARN).not.toBe(arns[soon]);
    expect(await exists(arns[soon]!)).toBe(false);
    expect(await exists(reborn.ARN!)).toBe(true);
  });

  it('ForceDeleteWithoutRecovery deletes at once and cannot be combined with a recovery window', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    await expect(
      sdk.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true, RecoveryWindowInDays: 7 })),
    ).rejects.toBeInstanceOf(InvalidParameterException);
    await sdk.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }));
    await expect(sdk.send(new DescribeSecretCommand({ SecretId: name }))).rejects.toBeInstanceOf(ResourceNotFoundException);
  });

  it('injected throttling answers ThrottlingException with status 400 for the given operation and count', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    sm.admin.resetStats();
    sm.admin.injectFault({ operation: 'GetSecretValue', count: 2 });

    for (let i = 0; i < 2; i++) {
      const call = sdk.send(new GetSecretValueCommand({ SecretId: name }));
      await expect(call).rejects.toBeInstanceOf(SecretsManagerServiceException);
      await expect(call).rejects.toMatchObject({
        name: 'ThrottlingException',
        message: 'Rate exceeded',
        $metadata: { httpStatusCode: 400 },
      });
    }
    // Other operations are not affected, and the third read goes through.
    await sdk.send(new DescribeSecretCommand({ SecretId: name }));
    expect((await sdk.send(new GetSecretValueCommand({ SecretId: name }))).SecretString).toBe('v1');
    expect(sm.admin.stats()).toEqual({ calls: { GetSecretValue: 3, DescribeSecret: 1 }, errors: { ThrottlingException: 2 } });
  });

  it('the SDK classifies the injected throttling as THROTTLING and retries it', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    sm.admin.resetStats();
    sm.admin.injectFault({ operation: 'GetSecretValue', count: 1 });
    const errorTypes: string[] = [];
    // A retry strategy without backoff delay, so that the test does not wait.
    const retryStrategy: SecretsManagerClientConfig['retryStrategy'] = {
      mode: 'standard',
      acquireInitialRetryToken: () => Promise.resolve({ getRetryCount: () => 0, getRetryDelay: () => 0 }),
      refreshRetryTokenForRetry: (retryToken, info) => {
        errorTypes.push(info.errorType);
        if (info.errorType !== 'THROTTLING' || retryToken.getRetryCount() > 0) return Promise.reject(info.error);
        return Promise.resolve({ getRetryCount: () => 1, getRetryDelay: () => 0 });
      },
      recordSuccess: () => undefined,
    };
    const retrying = new SecretsManagerClient({ ...localClientConfig(sm.endpoint), maxAttempts: 3, retryStrategy });
    try {
      expect((await retrying.send(new GetSecretValueCommand({ SecretId: name }))).SecretString).toBe('v1');
    } finally {
      retrying.destroy();
    }
    expect(errorTypes).toEqual(['THROTTLING']);
    expect(sm.admin.stats().calls.GetSecretValue).toBe(2);
  });

  it('faults can let calls through first, target every operation, and return server errors', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1' }));
    sm.admin.injectFault({ operation: '*', type: 'InternalServiceError', skip: 1, count: 1 });
    await sdk.send(new DescribeSecretCommand({ SecretId: name }));
    await expect(sdk.send(new GetSecretValueCommand({ SecretId: name }))).rejects.toMatchObject({
      name: 'InternalServiceError',
      $fault: 'server',
      $metadata: { httpStatusCode: 500 },
    });
    expect((await sdk.send(new GetSecretValueCommand({ SecretId: name }))).SecretString).toBe('v1');
  });
});
