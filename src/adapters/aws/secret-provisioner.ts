import {
  CancelRotateSecretCommand,
  CreateSecretCommand,
  DeleteSecretCommand,
  ResourceExistsException,
  RestoreSecretCommand,
  RotateSecretCommand,
  SecretsManagerClient,
  type SecretsManagerClientConfig,
} from '@aws-sdk/client-secrets-manager';
import { randomUUID } from 'node:crypto';
import type { SecretLifecycle } from '../../core/api-keys';
import {
  type SecretDescription,
  SecretNotFoundError,
  SecretStage,
  SecretStoreError,
  SecretVersionConflictError,
} from '../../core/ports/secrets';
import { AwsSecretStore, toStoreError } from './secrets-manager';

export interface NewSecret {
  name: string;
  /** Stored as SecretString; never logged or put in an error. */
  value: string;
  description?: string;
  tags?: Record<string, string>;
  /** The customer-managed key (the stack's SecretsKey); absent: aws/secretsmanager. */
  kmsKeyId?: string;
}

/**
 * Creates, retires and restores secrets (CreateSecret with tags, RotateSecret, CancelRotateSecret,
 * DeleteSecret with a recovery window, RestoreSecret): the SecretLifecycle of `acctops keys install`
 * and `companies remove|restore` (src/core/api-keys/key-provisioning.ts), in AWS and against the
 * local mode's emulator. The SecretStore port reads and rotates secrets that exist.
 */
export class AwsSecretProvisioner implements SecretLifecycle {
  private readonly client: SecretsManagerClient;
  private readonly store: AwsSecretStore;

  constructor(clientOrConfig: SecretsManagerClient | SecretsManagerClientConfig = {}) {
    this.client = clientOrConfig instanceof SecretsManagerClient ? clientOrConfig : new SecretsManagerClient(clientOrConfig);
    this.store = new AwsSecretStore(this.client);
  }

  async describe(secretId: string): Promise<SecretDescription | undefined> {
    try {
      return await this.store.describeSecret(secretId);
    } catch (error) {
      if (error instanceof SecretNotFoundError) return undefined;
      throw error;
    }
  }

  async readCurrent(secretId: string): Promise<string> {
    return (await this.store.readSecret(secretId, { stage: SecretStage.current })).value;
  }

  async create(input: NewSecret): Promise<{ arn: string }> {
    return this.createSecret(input);
  }

  async putCurrent(secretId: string, value: string): Promise<void> {
    await this.store.putSecretValue(secretId, { value, clientRequestToken: randomUUID() });
  }

  async enableRotation(secretId: string, input: { lambdaArn: string; automaticallyAfterDays: number }): Promise<void> {
    await this.call('RotateSecret', secretId, () =>
      this.client.send(
        new RotateSecretCommand({
          SecretId: secretId,
          RotationLambdaARN: input.lambdaArn,
          RotationRules: { AutomaticallyAfterDays: input.automaticallyAfterDays },
          // The key was checked at the service just now; the first rotation comes on schedule.
          RotateImmediately: false,
        }),
      ),
    );
  }

  async cancelRotation(secretId: string): Promise<void> {
    await this.call('CancelRotateSecret', secretId, () => this.client.send(new CancelRotateSecretCommand({ SecretId: secretId })));
  }

  async scheduleDeletion(secretId: string, recoveryWindowDays: number): Promise<{ deletionDate?: number }> {
    const out = await this.call('DeleteSecret', secretId, () =>
      this.client.send(new DeleteSecretCommand({ SecretId: secretId, RecoveryWindowInDays: recoveryWindowDays })),
    );
    return out.DeletionDate ? { deletionDate: out.DeletionDate.getTime() } : {};
  }

  async restore(secretId: string): Promise<void> {
    await this.call('RestoreSecret', secretId, () => this.client.send(new RestoreSecretCommand({ SecretId: secretId })));
  }

  private async call<T>(operation: string, secretId: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw toStoreError(operation, secretId, error);
    }
  }

  /** CreateSecret; SecretVersionConflictError when a secret of that name exists. */
  async createSecret(secret: NewSecret): Promise<{ arn: string; versionId: string }> {
    try {
      const out = await this.client.send(
        new CreateSecretCommand({
          Name: secret.name,
          SecretString: secret.value,
          Description: secret.description,
          KmsKeyId: secret.kmsKeyId,
          Tags: Object.entries(secret.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
        }),
      );
      if (!out.ARN || !out.VersionId)
        throw new SecretStoreError(`Secrets Manager CreateSecret for ${secret.name} returned no ARN or version`, { secretId: secret.name });
      return { arn: out.ARN, versionId: out.VersionId };
    } catch (error) {
      if (error instanceof SecretStoreError) throw error;
      // Only the error's name and the service's message (which names the secret, never its value).
      const detail =
        error instanceof Error ? `${error.name}: ${'$metadata' in error ? error.message : 'request failed'}` : 'request failed';
      const options = { secretId: secret.name, cause: error instanceof ResourceExistsException ? error : undefined };
      if (error instanceof ResourceExistsException) throw new SecretVersionConflictError(`secret ${secret.name} exists already`, options);
      throw new SecretStoreError(`Secrets Manager CreateSecret failed for ${secret.name}: ${detail}`, options);
    }
  }
}
