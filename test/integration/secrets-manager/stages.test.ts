import {
  CreateSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { ManualClock } from '../../../src/core/shared/clock';
import { client, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';

const token = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('Secrets Manager emulator: staging labels through the real SDK', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  const clock = new ManualClock();
  let seq = 0;
  const uniqueName = () => `acctops/stages-${++seq}`;

  beforeAll(async () => {
    sm = await startSecretsManager({ clock });
    sdk = client(sm);
  });
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  const stagesOf = async (name: string) => (await sdk.send(new DescribeSecretCommand({ SecretId: name }))).VersionIdsToStages;
  const valueOf = async (name: string, input: { VersionStage?: string; VersionId?: string } = {}) =>
    (await sdk.send(new GetSecretValueCommand({ SecretId: name, ...input }))).SecretString;

  it('listens on an ephemeral loopback port and returns ARNs shaped like real ones', async () => {
    expect(sm.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const name = uniqueName();
    const created = await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', KmsKeyId: 'alias/ignored' }));
    expect(created.ARN).toMatch(new RegExp(`^arn:aws:secretsmanager:eu-central-1:000000000000:secret:${name}-[A-Za-z0-9]{6}$`));
    // A secret is addressable by name, full ARN and partial ARN (without the random suffix).
    expect(await valueOf(created.ARN!)).toBe('v1');
    expect(await valueOf(created.ARN!.slice(0, -7))).toBe('v1');
  });

  it('CreateSecret labels the first version AWSCURRENT', async () => {
    const name = uniqueName();
    const created = await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'first', ClientRequestToken: token(1) }));
    expect(created.VersionId).toBe(token(1));
    expect(await stagesOf(name)).toEqual({ [token(1)]: ['AWSCURRENT'] });
    const got = await sdk.send(new GetSecretValueCommand({ SecretId: name }));
    expect(got).toMatchObject({ VersionId: token(1), SecretString: 'first', VersionStages: ['AWSCURRENT'] });
    expect(got.CreatedDate).toEqual(new Date(clock.now()));
  });

  it('PutSecretValue moves AWSCURRENT to the new version and AWSPREVIOUS to the one it left', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    const put = await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2) }));
    expect(put).toMatchObject({ VersionId: token(2), VersionStages: ['AWSCURRENT'] });
    expect(await stagesOf(name)).toEqual({ [token(1)]: ['AWSPREVIOUS'], [token(2)]: ['AWSCURRENT'] });

    await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v3', ClientRequestToken: token(3) }));
    // v1 lost its last label: deprecated, so DescribeSecret no longer lists it.
    expect(await stagesOf(name)).toEqual({ [token(2)]: ['AWSPREVIOUS'], [token(3)]: ['AWSCURRENT'] });
    expect(await valueOf(name)).toBe('v3');
    expect(await valueOf(name, { VersionStage: 'AWSPREVIOUS' })).toBe('v2');
    expect(await valueOf(name, { VersionId: token(1) })).toBe('v1');

    const all = await sdk.send(new ListSecretVersionIdsCommand({ SecretId: name, IncludeDeprecated: true }));
    expect(all.Versions?.map((v) => [v.VersionId, v.VersionStages])).toEqual([
      [token(3), ['AWSCURRENT']],
      [token(2), ['AWSPREVIOUS']],
      [token(1), []],
    ]);
    const labelled = await sdk.send(new ListSecretVersionIdsCommand({ SecretId: name }));
    expect(labelled.Versions?.map((v) => v.VersionId)).toEqual([token(3), token(2)]);
  });

  it('PutSecretValue with VersionStages [AWSPENDING] leaves AWSCURRENT where it is', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await sdk.send(
      new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2), VersionStages: ['AWSPENDING'] }),
    );
    expect(await stagesOf(name)).toEqual({ [token(1)]: ['AWSCURRENT'], [token(2)]: ['AWSPENDING'] });
    expect(await valueOf(name)).toBe('v1');
    expect(await valueOf(name, { VersionStage: 'AWSPENDING' })).toBe('v2');

    // A later pending version takes the label away from the earlier one.
    await sdk.send(
      new PutSecretValueCommand({ SecretId: name, SecretString: 'v3', ClientRequestToken: token(3), VersionStages: ['AWSPENDING'] }),
    );
    expect(await stagesOf(name)).toEqual({ [token(1)]: ['AWSCURRENT'], [token(3)]: ['AWSPENDING'] });
  });

  it('the first value of a secret created empty becomes AWSCURRENT even when only AWSPENDING was asked for', async () => {
    const name = uniqueName();
    const created = await sdk.send(new CreateSecretCommand({ Name: name }));
    expect(created.VersionId).toBeUndefined();
    await sdk.send(
      new PutSecretValueCommand({ SecretId: name, SecretString: 'v1', ClientRequestToken: token(1), VersionStages: ['AWSPENDING'] }),
    );
    expect(await stagesOf(name)).toEqual({ [token(1)]: ['AWSPENDING', 'AWSCURRENT'] });
  });

  it('PutSecretValue is idempotent for the same token and value and changes nothing', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2) }));
    await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v3', ClientRequestToken: token(3) }));
    const before = await stagesOf(name);

    // A retry of the v2 put (a Lambda retried after a lost response) must not make v2 current again.
    const retried = await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2) }));
    expect(retried.VersionId).toBe(token(2));
    expect(await stagesOf(name)).toEqual(before);
    expect(await valueOf(name)).toBe('v3');
  });

  it('UpdateSecretVersionStage moving AWSCURRENT moves AWSPREVIOUS to the version it came from', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2) }));
    await sdk.send(
      new PutSecretValueCommand({ SecretId: name, SecretString: 'v3', ClientRequestToken: token(3), VersionStages: ['AWSPENDING'] }),
    );
    expect(await stagesOf(name)).toEqual({
      [token(1)]: ['AWSPREVIOUS'],
      [token(2)]: ['AWSCURRENT'],
      [token(3)]: ['AWSPENDING'],
    });

    // What finishSecret does: promote the pending version, then drop its AWSPENDING label.
    await sdk.send(
      new UpdateSecretVersionStageCommand({
        SecretId: name,
        VersionStage: 'AWSCURRENT',
        MoveToVersionId: token(3),
        RemoveFromVersionId: token(2),
      }),
    );
    expect(await stagesOf(name)).toEqual({ [token(2)]: ['AWSPREVIOUS'], [token(3)]: ['AWSPENDING', 'AWSCURRENT'] });
    await sdk.send(new UpdateSecretVersionStageCommand({ SecretId: name, VersionStage: 'AWSPENDING', RemoveFromVersionId: token(3) }));
    expect(await stagesOf(name)).toEqual({ [token(2)]: ['AWSPREVIOUS'], [token(3)]: ['AWSCURRENT'] });
    expect(await valueOf(name)).toBe('v3');

    // Rolling back is the same move in the other direction.
    await sdk.send(
      new UpdateSecretVersionStageCommand({
        SecretId: name,
        VersionStage: 'AWSCURRENT',
        MoveToVersionId: token(2),
        RemoveFromVersionId: token(3),
      }),
    );
    expect(await stagesOf(name)).toEqual({ [token(2)]: ['AWSCURRENT'], [token(3)]: ['AWSPREVIOUS'] });
  });

  it('UpdateSecretVersionStage attaches custom labels and moving AWSCURRENT onto itself changes nothing', async () => {
    const name = uniqueName();
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'v1', ClientRequestToken: token(1) }));
    await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2', ClientRequestToken: token(2) }));
    await sdk.send(new UpdateSecretVersionStageCommand({ SecretId: name, VersionStage: 'golden', MoveToVersionId: token(1) }));
    await sdk.send(
      new UpdateSecretVersionStageCommand({
        SecretId: name,
        VersionStage: 'AWSCURRENT',
        MoveToVersionId: token(2),
        RemoveFromVersionId: token(2),
      }),
    );
    expect(await stagesOf(name)).toEqual({ [token(1)]: ['AWSPREVIOUS', 'golden'], [token(2)]: ['AWSCURRENT'] });
    expect(await valueOf(name, { VersionStage: 'golden' })).toBe('v1');
  });

  it('DescribeSecret reports dates from the injected clock', async () => {
    const name = uniqueName();
    const createdAt = clock.now();
    await sdk.send(
      new CreateSecretCommand({ Name: name, SecretString: 'v1', Description: 'for dates', Tags: [{ Key: 'team', Value: 'ops' }] }),
    );
    clock.advance(60_000);
    await sdk.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2' }));
    const described = await sdk.send(new DescribeSecretCommand({ SecretId: name }));
    expect(described).toMatchObject({
      Name: name,
      Description: 'for dates',
      RotationEnabled: false,
      CreatedDate: new Date(createdAt),
      LastChangedDate: new Date(createdAt + 60_000),
      Tags: [{ Key: 'team', Value: 'ops' }],
    });
    expect(described.NextRotationDate).toBeUndefined();
  });
});
