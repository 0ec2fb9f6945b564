import { CreateSecretCommand, DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { ManualClock } from '../../../src/core/shared/clock';
import { client, type RunningSecretsManager, secretStore, startSecretsManager } from '../../helpers/secrets-manager';
import { secretsSnapshotSchema } from '../../../sandbox/secrets-manager';

describe('Secrets Manager emulator: exportState, the state option and configureRotation', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0, 0));
  const running: RunningSecretsManager[] = [];
  afterAll(async () => {
    for (const sm of running) await sm.stop();
  });
  const start = async (options: Parameters<typeof startSecretsManager>[0] = {}) => {
    const sm = await startSecretsManager({ port: 0, clock, ...options });
    running.push(sm);
    return sm;
  };
  const LAMBDA = 'arn:aws:lambda:eu-central-1:000000000000:function:rotate';

  it('configureRotation dates the next rotation without invoking any function', async () => {
    const sm = await start();
    const created = await client(sm).send(new CreateSecretCommand({ Name: 'app/key', SecretString: 'v1' }));
    sm.admin.configureRotation('app/key', { lambdaArn: LAMBDA, rules: { AutomaticallyAfterDays: 30 } });
    const described = await secretStore(sm).describeSecret(created.ARN!);
    expect(described.rotation).toMatchObject({
      enabled: true,
      lambdaArn: LAMBDA,
      automaticallyAfterDays: 30,
      nextRotationAt: clock.now() + 30 * 86_400_000,
    });
    expect(described.rotation.lastRotatedAt).toBeUndefined();
    expect(sm.admin.rotations('app/key')).toEqual([]);
    expect(() => sm.admin.configureRotation('app/key', { lambdaArn: LAMBDA, rules: { AutomaticallyAfterDays: 0 } })).toThrow(
      /AutomaticallyAfterDays/,
    );
  });

  it('a new emulator started with an exported state serves the same secrets, versions, labels and tags', async () => {
    const sm = await start();
    const sdk = client(sm);
    const created = await sdk.send(
      new CreateSecretCommand({
        Name: 'acctops/company/x',
        SecretString: 'first',
        Tags: [{ Key: 'acctops:purpose', Value: 'company-api-key' }],
      }),
    );
    await sdk.send(new PutSecretValueCommand({ SecretId: created.ARN, SecretString: 'second', ClientRequestToken: 'a'.repeat(32) }));
    await sdk.send(
      new PutSecretValueCommand({
        SecretId: created.ARN,
        SecretString: 'pending',
        ClientRequestToken: 'b'.repeat(32),
        VersionStages: ['AWSPENDING'],
      }),
    );
    sm.admin.configureRotation(created.ARN!, { lambdaArn: LAMBDA, rules: { AutomaticallyAfterDays: 7 } });

    const exported = secretsSnapshotSchema.parse(JSON.parse(JSON.stringify(sm.admin.exportState())));
    const restored = await start({ state: exported });
    const again = client(restored);

    const before = await sdk.send(new DescribeSecretCommand({ SecretId: created.ARN }));
    const after = await again.send(new DescribeSecretCommand({ SecretId: created.ARN }));
    expect(after.ARN).toBe(created.ARN);
    expect(after.VersionIdsToStages).toEqual(before.VersionIdsToStages);
    expect(after.RotationEnabled).toBe(true);
    expect(after.NextRotationDate).toEqual(before.NextRotationDate);
    expect(after.Tags).toEqual([{ Key: 'acctops:purpose', Value: 'company-api-key' }]);
    expect((await again.send(new GetSecretValueCommand({ SecretId: created.ARN }))).SecretString).toBe('second');
    expect((await again.send(new GetSecretValueCommand({ SecretId: created.ARN, VersionStage: 'AWSPREVIOUS' }))).SecretString).toBe(
      'first',
    );
    expect((await again.send(new GetSecretValueCommand({ SecretId: created.ARN, VersionStage: 'AWSPENDING' }))).SecretString).toBe(
      'pending',
    );
    const found = [];
    for await (const s of secretStore(restored).listSecretsByTag('acctops:purpose', 'company-api-key')) found.push(s.name);
    expect(found).toEqual(['acctops/company/x']);

    // Changing the restored emulator leaves the exported document and the first emulator alone.
    await again.send(new PutSecretValueCommand({ SecretId: created.ARN, SecretString: 'third', ClientRequestToken: 'c'.repeat(32) }));
    expect((await sdk.send(new GetSecretValueCommand({ SecretId: created.ARN }))).SecretString).toBe('second');
    expect(exported.secrets[0]!.versions).toHaveLength(3);
  });

  it('refuses a damaged state with a ValidationError naming the field', async () => {
    const state = { format: 'acctops.secrets-manager-state', formatVersion: 1, seq: 'x', secrets: [] };
    await expect(startSecretsManager({ port: 0, state: state as never })).rejects.toThrow(/seq/);
  });
});
