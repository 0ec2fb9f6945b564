import { CreateSecretCommand, ResourceExistsException, SecretsManagerClient, type SecretsManagerClientConfig } from '@aws-sdk/client-secrets-manager';
import { SecretStoreError, SecretVersionConflictError } from '../../core/ports/secrets';

export interface NewSecret {
  name: string;
  /** Stored as SecretString; never logged or put in an error. */
  value: string;
  description?: string;
  tags?: Record<string, string>;
}

/**
 * Creates secrets (CreateSecret with tags). The SecretStore port reads and rotates secrets that
 * exist; creating them is the deployment's job in AWS, and this adapter's only for the CLI's local
 * mode, which provisions its own secrets in the Secrets Manager emulator the way the stack would.
 */
export class AwsSecretProvisioner {
  private readonly client: SecretsManagerClient;

  constructor(clientOrConfig: SecretsManagerClient | SecretsManagerClientConfig = {}) {
    this.client = clientOrConfig instanceof SecretsManagerClient ? clientOrConfig : new SecretsManagerClient(clientOrConfig);
  }

  async createSecret(secret: NewSecret): Promise<{ arn: string; versionId: string }> {
    try {
      const out = await this.client.send(
        new CreateSecretCommand({
          Name: secret.name,
          SecretString: secret.value,
          Description: secret.description,
          Tags: Object.entries(secret.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
        }),
      );
      if (!out.ARN || !out.VersionId) throw new SecretStoreError(`Secrets Manager CreateSecret for ${secret.name} returned no ARN or version`, { secretId: secret.name });
      return { arn: out.ARN, versionId: out.VersionId };
    } catch (error) {
      if (error instanceof SecretStoreError) throw error;
      // Only the error's name and the service's message (which names the secret, never its value).
      const detail = error instanceof Error ? `${error.name}: ${'$metadata' in error ? error.message : 'request failed'}` : 'request failed';
      const options = { secretId: secret.name, cause: error instanceof ResourceExistsException ? error : undefined };
      if (error instanceof ResourceExistsException) throw new SecretVersionConflictError(`secret ${secret.name} exists already`, options);
      throw new SecretStoreError(`Secrets Manager CreateSecret failed for ${secret.name}: ${detail}`, options);
    }
  }
}
