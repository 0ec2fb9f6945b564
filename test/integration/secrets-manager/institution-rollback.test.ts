import { CreateSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { AwsSecretStore } from '../../../src/adapters/aws/secrets-manager';
import type { ProbeResult } from '../../../src/core/health/check-health';
import { SecretStage, type SecretStore } from '../../../src/core/ports/secrets';
import { ROLLED_BACK_STAGE, setInstitutionSecret } from '../../../cli/operations/secret-changes';
import { canarySecret } from '../../helpers/canary';
import { client, type RunningSecretsManager, secretStore, startSecretsManager } from '../../helpers/secrets-manager';

const GOOD = `inst_rollback:${canarySecret('rollback-good')}`;
const BAD = `inst_rollback:${canarySecret('rollback-bad')}`;

/**
 * `institution set-secret --rollback` through the real SDK client against the emulator: a repeat
 * (on-call unsure whether the first ran) must not put the refused value back.
 */
describe('institution set-secret --rollback (the secret-change operation)', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let store: AwsSecretStore;
  let seq = 0;

  beforeAll(async () => {
    sm = await startSecretsManager();
    sdk = client(sm);
    store = secretStore(sm);
  });
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  /** A secret holding GOOD; the probe passes while GOOD is current, as the service would. */
  async function institution(target: Pick<SecretStore, 'putSecretValue' | 'describeSecret' | 'moveStage'> = store) {
    const secretId = `acctops/rollback-${++seq}/institution`;
    await sdk.send(new CreateSecretCommand({ Name: secretId, SecretString: GOOD }));
    const verify = async (): Promise<ProbeResult[]> => {
      const ok = (await store.readSecret(secretId)).value === GOOD;
      return [
        { name: 'service-reachable', ok, durationMs: 1, ...(ok ? {} : { error: { name: 'AuthenticationError', message: 'refused' } }) },
      ];
    };
    const change = (value?: string) => setInstitutionSecret({ store: target, secretId, verify }, value);
    const labels = async () => (await store.describeSecret(secretId)).versionStages;
    return { secretId, change, labels };
  }

  it('restores the good value once; a repeat changes nothing and reports the rollback it found', async () => {
    const { secretId, change, labels } = await institution();
    const refused = await change(BAD);
    expect(refused).toMatchObject({ verified: false, rolledBack: false, alreadyRolledBack: false });

    const back = await change();
    expect(back).toMatchObject({
      verified: true,
      rolledBack: true,
      alreadyRolledBack: false,
      versionId: refused.previousVersionId,
      previousVersionId: refused.versionId,
    });
    const after = await labels();

    for (let i = 0; i < 2; i++) {
      expect(await change()).toMatchObject({
        verified: true,
        rolledBack: true,
        alreadyRolledBack: true,
        versionId: back.versionId,
        previousVersionId: refused.versionId,
      });
      expect(await labels()).toEqual(after);
      expect((await store.readSecret(secretId)).value).toBe(GOOD);
    }
    expect(after[refused.versionId]).toEqual(expect.arrayContaining([SecretStage.previous, ROLLED_BACK_STAGE]));
  });

  it('a value stored after a rollback can be rolled back, and the mark moves to it', async () => {
    const { change, labels } = await institution();
    const refused = await change(BAD);
    await change();
    const again = await change(BAD);
    expect(again.previousVersionId).toBe(refused.previousVersionId);

    expect(await change()).toMatchObject({ alreadyRolledBack: false, verified: true, versionId: refused.previousVersionId });
    const stages = await labels();
    expect(stages[again.versionId]).toEqual(expect.arrayContaining([SecretStage.previous, ROLLED_BACK_STAGE]));
    expect(stages[refused.versionId]).toBeUndefined(); // no label left: Secrets Manager may drop it
    expect(await change()).toMatchObject({ alreadyRolledBack: true, versionId: refused.previousVersionId });
  });

  it('a rollback that failed before AWSCURRENT moved is rolled back by its retry', async () => {
    let failCurrentMove = true;
    const flaky: Pick<SecretStore, 'putSecretValue' | 'describeSecret' | 'moveStage'> = {
      putSecretValue: (id, input) => store.putSecretValue(id, input),
      describeSecret: (id) => store.describeSecret(id),
      moveStage: async (id, input) => {
        if (input.stage === SecretStage.current && failCurrentMove) {
          failCurrentMove = false;
          throw new Error('connection reset');
        }
        await store.moveStage(id, input);
      },
    };
    const { secretId, change } = await institution(flaky);
    const refused = await change(BAD);
    await expect(change()).rejects.toThrow('connection reset');
    expect((await store.readSecret(secretId)).value).toBe(BAD);

    expect(await change()).toMatchObject({ alreadyRolledBack: false, verified: true, versionId: refused.previousVersionId });
    expect((await store.readSecret(secretId)).value).toBe(GOOD);
  });
});
