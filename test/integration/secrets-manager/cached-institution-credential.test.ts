import { CreateSecretCommand, PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { cachedInstitutionCredential } from '../../../src/core/credentials/institution-credential';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { client, type RunningSecretsManager, secretStore, startSecretsManager } from '../../helpers/secrets-manager';
import { canarySecret } from '../../helpers/canary';

const OLD_KEY = canarySecret('institution-old');
const NEW_KEY = canarySecret('institution-new');

describe('the institution credential read through the cache, counted at the emulator', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  const clock = new ManualClock();
  const logger = new MemoryLogger();
  let arn: string;

  beforeAll(async () => {
    sm = await startSecretsManager({ clock });
    sdk = client(sm);
    const created = await sdk.send(new CreateSecretCommand({ Name: 'acctops/institution', SecretString: `inst-7:${OLD_KEY}` }));
    arn = created.ARN!;
  });
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
    forgetRegisteredSecrets();
  });

  it('reads Secrets Manager once per TTL, picks up a changed secret after an auth error, and does not hammer it', async () => {
    const credential = cachedInstitutionCredential(secretStore(sm), arn, { clock, logger, ttlMs: 300_000, authRefreshCooldownMs: 30_000 });
    const reads = () => sm.admin.stats().calls.GetSecretValue ?? 0;
    sm.admin.resetStats();

    for (let i = 0; i < 25; i++) expect(await credential.get()).toEqual({ institutionId: 'inst-7', secretKey: OLD_KEY });
    expect(reads()).toBe(1);

    // Ops change the institution secret; running functions still hold the old one.
    await sdk.send(
      new PutSecretValueCommand({ SecretId: arn, SecretString: JSON.stringify({ institutionId: 'inst-7', secretKey: NEW_KEY }) }),
    );
    expect((await credential.get()).secretKey).toBe(OLD_KEY);

    // The service refuses the old key: one re-read, and the retry gets the new key.
    expect(await credential.refreshAfterAuthError()).toBe(true);
    expect((await credential.get()).secretKey).toBe(NEW_KEY);
    expect(reads()).toBe(2);

    // Every other in-flight request fails the same way: no more reads within the cooldown.
    for (let i = 0; i < 20; i++) await credential.refreshAfterAuthError();
    expect(reads()).toBe(2);

    clock.advance(300_000);
    await credential.get();
    expect(reads()).toBe(3);
    expect(logger.lines.join('\n')).not.toMatch(new RegExp(`${OLD_KEY}|${NEW_KEY}`));
  });
});
