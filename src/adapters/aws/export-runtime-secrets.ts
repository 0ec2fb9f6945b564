import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { AwsExportRuntime } from './export-runtime';
import { AwsSecretStore } from './secrets-manager';

/** Secrets Manager: the company key secrets (worker) and the webhook's signing secret. */
export function exportSecretStore(runtime: AwsExportRuntime): AwsSecretStore {
  return runtime.once('secrets', () => new AwsSecretStore(new SecretsManagerClient({})));
}
