import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { AwsSecretStore } from '../../src/adapters/aws/secrets-manager';
import { localClientConfig } from './aws-credentials';

export { startSecretsManager } from '../../sandbox/secrets-manager';
export type { RunningSecretsManager, SecretsManagerOptions } from '../../sandbox/secrets-manager';

/** The real SDK client, pointed at an emulator (or any endpoint), with local credentials and no retries. */
export function client(target: string | { endpoint: string }): SecretsManagerClient {
  return new SecretsManagerClient(localClientConfig(typeof target === 'string' ? target : target.endpoint));
}

/** Our SecretStore port over the real SDK client, pointed at the emulator. */
export function secretStore(target: string | { endpoint: string }): AwsSecretStore {
  return new AwsSecretStore(client(target));
}
