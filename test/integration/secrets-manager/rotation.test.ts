import {
  CancelRotateSecretCommand,
  CreateSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  InvalidRequestException,
  PutSecretValueCommand,
  ResourceNotFoundException,
  RotateSecretCommand,
  type SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import type { RotationEvent, RotationStep } from '../../../sandbox/secrets-manager';
import { ManualClock } from '../../../src/core/shared/clock';
import { client, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';

const DAY = 86_400_000;
const LAMBDA = 'arn:aws:lambda:eu-central-1:000000000000:function:rotate-test';
const token = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/**
 * A rotation function written the way the AWS template (SecretsManagerRotationTemplate) is:
 * guards on DescribeSecret, createSecret that reuses an existing pending value, finishSecret
 * that moves AWSCURRENT and then drops AWSPENDING. It talks to the emulator over HTTP.
 */
function templateRotation(sdk: SecretsManagerClient) {
  const calls: RotationEvent[] = [];
  const puts: string[] = [];
  let generation = 0;
  const behaviour: { failAt?: RotationStep; skipPromotion?: boolean } = {};

  const handler = async (event: RotationEvent): Promise<void> => {
    calls.push(event);
    const { SecretId: arn, ClientRequestToken: version, Step: step } = event;
    const meta = await sdk.send(new DescribeSecretCommand({ SecretId: arn }));
    if (!meta.RotationEnabled) throw new Error('rotation is not enabled');
    const stages = meta.VersionIdsToStages?.[version];
    if (!stages) throw new Error('version has no stage for rotation');
    if (stages.includes('AWSCURRENT')) return;
    if (!stages.includes('AWSPENDING')) throw new Error('version is not AWSPENDING');
    if (behaviour.failAt === step) throw new Error(`${step} failed on purpose`);

    if (step === 'createSecret') {
      await sdk.send(new GetSecretValueCommand({ SecretId: arn, VersionStage: 'AWSCURRENT' }));
      try {
        await sdk.send(new GetSecretValueCommand({ SecretId: arn, VersionId: version, VersionStage: 'AWSPENDING' }));
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
        const value = `rotated-${++generation}`;
        puts.push(value);
        await sdk.send(
          new PutSecretValueCommand({ SecretId: arn, ClientRequestToken: version, SecretString: value, VersionStages: ['AWSPENDING'] }),
        );
      }
    } else if (step === 'finishSecret' && !behaviour.skipPromotion) {
      const current = Object.entries(meta.VersionIdsToStages ?? {}).find(([, s]) => s.includes('AWSCURRENT'))?.[0];
      await sdk.send(
        new UpdateSecretVersionStageCommand({
          SecretId: arn,
          VersionStage: 'AWSCURRENT',
          MoveToVersionId: version,
          RemoveFromVersionId: current,
        }),
      );
      await sdk.send(new UpdateSecretVersionStageCommand({ SecretId: arn, VersionStage: 'AWSPENDING', RemoveFromVersionId: version }));
    }
  };
  return { handler, calls, puts, behaviour };
}

describe('Secrets Manager emulator: RotateSecret drives the rotation function', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  const clock = new ManualClock();
  let seq = 0;

  beforeAll(async () => {
    sm = await startSecretsManager({ clock });
    sdk = client(sm);
  });
  afterEach(() => sm.admin.setRotationMode('sync'));
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  /** A secret with one current version, and a fresh template function registered under its own ARN. */
  async function setup() {
    const name = `acctops/rotation-${++seq}`;
    const lambdaArn = `${LAMBDA}-${seq}`;
    const created = await sdk.send(new CreateSecretCommand({ Name: name, SecretString: 'original', ClientRequestToken: token(0) }));
    const rotation = templateRotation(sdk);
    sm.admin.registerRotationHandler(lambdaArn, rotation.handler);
    return { name, arn: created.ARN!, lambdaArn, ...rotation };
  }
  const stagesOf = async (name: string) => (await sdk.send(new DescribeSecretCommand({ SecretId: name }))).VersionIdsToStages;
  const current = async (name: string) => (await sdk.send(new GetSecretValueCommand({ SecretId: name }))).SecretString;

  it('runs createSecret, setSecret, testSecret and finishSecret in order with the pending version token', async () => {
    const s = await setup();
    const rotated = await sdk.send(
      new RotateSecretCommand({
        SecretId: s.name,
        RotationLambdaARN: s.lambdaArn,
        RotationRules: { AutomaticallyAfterDays: 30 },
        ClientRequestToken: token(1),
      }),
    );
    expect(rotated).toMatchObject({ ARN: s.arn, Name: s.name, VersionId: token(1) });
    expect(s.calls).toEqual(
      (['createSecret', 'setSecret', 'testSecret', 'finishSecret'] as const).map((Step) => ({
        Step,
        SecretId: s.arn,
        ClientRequestToken: token(1),
      })),
    );
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSPREVIOUS'], [token(1)]: ['AWSCURRENT'] });
    expect(await current(s.name)).toBe('rotated-1');

    const described = await sdk.send(new DescribeSecretCommand({ SecretId: s.name }));
    expect(described).toMatchObject({
      RotationEnabled: true,
      RotationLambdaARN: s.lambdaArn,
      RotationRules: { AutomaticallyAfterDays: 30 },
      LastRotatedDate: new Date(clock.now()),
      NextRotationDate: new Date(clock.now() + 30 * DAY),
    });
    expect(sm.admin.rotation(s.name)).toMatchObject({ status: 'succeeded', token: token(1), kind: 'rotation' });
  });

  it('labels an empty new version AWSPENDING before invoking createSecret', async () => {
    const s = await setup();
    const seen: unknown[] = [];
    sm.admin.registerRotationHandler(s.lambdaArn, async (event) => {
      if (event.Step === 'createSecret') {
        seen.push((await stagesOf(s.name))?.[event.ClientRequestToken]);
        seen.push(
          await sdk
            .send(new GetSecretValueCommand({ SecretId: s.name, VersionStage: 'AWSPENDING' }))
            .catch((e: unknown) => (e as Error).name),
        );
      }
      await s.handler(event);
    });
    await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { ScheduleExpression: 'rate(10 days)' } }),
    );
    // The version exists (so the template's guards pass) but has no value (so createSecret fills it).
    expect(seen).toEqual([['AWSPENDING'], 'ResourceNotFoundException']);
    expect(sm.admin.rotation(s.name)?.status).toBe('succeeded');
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: s.name }))).NextRotationDate).toEqual(new Date(clock.now() + 10 * DAY));
  });

  it('a failing step stops the rotation: AWSCURRENT unchanged, AWSPENDING left in place, and a new RotateSecret is refused', async () => {
    const s = await setup();
    s.behaviour.failAt = 'testSecret';
    // Like AWS, the call itself succeeds: the failure happens inside the rotation function.
    const rotated = await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 7 } }),
    );
    expect(s.calls.map((c) => c.Step)).toEqual(['createSecret', 'setSecret', 'testSecret']);
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSCURRENT'], [rotated.VersionId!]: ['AWSPENDING'] });
    expect(await current(s.name)).toBe('original');
    expect(sm.admin.rotation(s.name)).toMatchObject({ status: 'failed', failedStep: 'testSecret' });
    expect((sm.admin.rotation(s.name)?.error as Error).message).toBe('testSecret failed on purpose');
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: s.name }))).LastRotatedDate).toBeUndefined();

    // A rotation with another token sees AWSPENDING on a non-current version: still in progress.
    const again = sdk.send(new RotateSecretCommand({ SecretId: s.name }));
    await expect(again).rejects.toBeInstanceOf(InvalidRequestException);
    await expect(again).rejects.toThrow("A previous rotation isn't complete");

    // Repeating the pending token reattempts that rotation from createSecret, which reuses the pending value.
    s.behaviour.failAt = undefined;
    await sdk.send(new RotateSecretCommand({ SecretId: s.name, ClientRequestToken: rotated.VersionId }));
    expect(s.puts).toEqual(['rotated-1']);
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSPREVIOUS'], [rotated.VersionId!]: ['AWSCURRENT'] });
    expect(sm.admin.rotations(s.name).map((r) => r.status)).toEqual(['failed', 'succeeded']);
  });

  it('a failure in createSecret leaves AWSPENDING on an empty version', async () => {
    const s = await setup();
    s.behaviour.failAt = 'createSecret';
    const rotated = await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 7 } }),
    );
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSCURRENT'], [rotated.VersionId!]: ['AWSPENDING'] });
    expect(sm.admin.secret(s.name)?.versions.find((v) => v.versionId === rotated.VersionId)?.hasValue).toBe(false);
  });

  it('manual mode: a test drives the steps one by one, crashes between them, and the retry converges', async () => {
    sm.admin.setRotationMode('manual');
    const s = await setup();
    const rotated = await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 30 } }),
    );
    expect(s.calls).toEqual([]);
    expect(sm.admin.rotation(s.name)?.status).toBe('pending');

    await sm.admin.runRotationStep(s.name, 'createSecret');
    await sm.admin.runRotationStep(s.name, 'setSecret');
    // "Crash": the function dies before testSecret. AWS reattempts the whole rotation with the same token.
    const retried = await sm.admin.retryRotation(s.name);
    expect(retried).toMatchObject({ status: 'succeeded', token: rotated.VersionId });
    expect(sm.admin.rotations(s.name).map((r) => r.status)).toEqual(['superseded', 'succeeded']);
    expect(s.calls.map((c) => c.Step)).toEqual(['createSecret', 'setSecret', 'createSecret', 'setSecret', 'testSecret', 'finishSecret']);
    expect(s.puts).toEqual(['rotated-1']);
    expect(await current(s.name)).toBe('rotated-1');

    // A step re-run after completion hits the template's "already AWSCURRENT" guard and changes nothing.
    await sm.admin.runRotationStep(s.name, 'finishSecret');
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSPREVIOUS'], [rotated.VersionId!]: ['AWSCURRENT'] });
  });

  it('manual mode: RotateSecret with the pending token starts a new attempt without invoking anything', async () => {
    sm.admin.setRotationMode('manual');
    const s = await setup();
    const rotated = await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 30 } }),
    );
    await sm.admin.runRotationStep(s.name, 'createSecret');
    await sdk.send(new RotateSecretCommand({ SecretId: s.name, ClientRequestToken: rotated.VersionId }));
    expect(s.calls.map((c) => c.Step)).toEqual(['createSecret']);
    expect(sm.admin.rotations(s.name).map((r) => [r.token, r.status])).toEqual([
      [rotated.VersionId, 'superseded'],
      [rotated.VersionId, 'pending'],
    ]);
  });

  it('runRotationStep rethrows the handler error so that a test sees it', async () => {
    sm.admin.setRotationMode('manual');
    const s = await setup();
    s.behaviour.failAt = 'setSecret';
    await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 30 } }),
    );
    await sm.admin.runRotationStep(s.name, 'createSecret');
    await expect(sm.admin.runRotationStep(s.name, 'setSecret')).rejects.toThrow('setSecret failed on purpose');
    expect(sm.admin.rotation(s.name)).toMatchObject({
      status: 'failed',
      failedStep: 'setSecret',
      invocations: [
        { step: 'createSecret', ok: true },
        { step: 'setSecret', ok: false },
      ],
    });
  });

  it('a finishSecret that does not promote the version is a failed rotation', async () => {
    const s = await setup();
    s.behaviour.skipPromotion = true;
    const rotated = await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 7 } }),
    );
    expect(sm.admin.rotation(s.name)).toMatchObject({ status: 'failed', failedStep: 'finishSecret' });
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSCURRENT'], [rotated.VersionId!]: ['AWSPENDING'] });
  });

  it('RotateImmediately=false runs only testSecret, on a version it removes afterwards', async () => {
    const s = await setup();
    const pendingSeen: (string[] | undefined)[] = [];
    sm.admin.registerRotationHandler(s.lambdaArn, async (event) => {
      pendingSeen.push((await stagesOf(s.name))?.[event.ClientRequestToken]);
      await s.handler(event);
    });
    await sdk.send(
      new RotateSecretCommand({
        SecretId: s.name,
        RotationLambdaARN: s.lambdaArn,
        RotationRules: { AutomaticallyAfterDays: 14 },
        RotateImmediately: false,
      }),
    );
    expect(s.calls.map((c) => c.Step)).toEqual(['testSecret']);
    expect(pendingSeen).toEqual([['AWSPENDING']]);
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSCURRENT'] });
    const described = await sdk.send(new DescribeSecretCommand({ SecretId: s.name }));
    expect(described).toMatchObject({ RotationEnabled: true, NextRotationDate: new Date(clock.now() + 14 * DAY) });
    expect(described.LastRotatedDate).toBeUndefined();
    expect(sm.admin.rotation(s.name)).toMatchObject({ kind: 'configuration-test', status: 'succeeded' });
  });

  it('async mode answers RotateSecret before the steps run; settled() waits for them', async () => {
    sm.admin.setRotationMode('async');
    const s = await setup();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    sm.admin.registerRotationHandler(s.lambdaArn, async (event) => {
      if (event.Step === 'createSecret') await gate;
      await s.handler(event);
    });
    await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 30 } }),
    );
    expect(sm.admin.rotation(s.name)?.status).toBe('running');
    expect(await current(s.name)).toBe('original');
    release();
    await sm.admin.settled();
    expect(sm.admin.rotation(s.name)?.status).toBe('succeeded');
    expect(await current(s.name)).toBe('rotated-1');
  });

  it('rotation needs a function: none configured is InvalidRequestException, an unknown one AccessDeniedException', async () => {
    const s = await setup();
    await expect(sdk.send(new RotateSecretCommand({ SecretId: s.name }))).rejects.toBeInstanceOf(InvalidRequestException);
    await expect(sdk.send(new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: `${LAMBDA}-missing` }))).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
    // Nothing was configured or created by the refused calls.
    expect(await stagesOf(s.name)).toEqual({ [token(0)]: ['AWSCURRENT'] });
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: s.name }))).RotationEnabled).toBe(false);
  });

  it('CancelRotateSecret turns rotation off and leaves the labels for someone to repair', async () => {
    sm.admin.setRotationMode('manual');
    const s = await setup();
    const rotated = await sdk.send(
      new RotateSecretCommand({ SecretId: s.name, RotationLambdaARN: s.lambdaArn, RotationRules: { AutomaticallyAfterDays: 30 } }),
    );
    const cancelled = await sdk.send(new CancelRotateSecretCommand({ SecretId: s.name }));
    expect(cancelled.VersionId).toBe(rotated.VersionId);
    const described = await sdk.send(new DescribeSecretCommand({ SecretId: s.name }));
    expect(described.RotationEnabled).toBe(false);
    expect(described.NextRotationDate).toBeUndefined();
    expect(described.VersionIdsToStages?.[rotated.VersionId!]).toEqual(['AWSPENDING']);
    expect(sm.admin.rotation(s.name)?.status).toBe('cancelled');
  });
});
