import {
  DescribeSecretCommand,
  type DescribeSecretCommandOutput,
  GetSecretValueCommand,
  ListSecretsCommand,
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  RotateSecretCommand,
  type SecretListEntry,
  SecretsManagerClient,
  type SecretsManagerClientConfig,
  SecretsManagerServiceException,
  type Tag,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import {
  type MoveSecretStageInput,
  type PutSecretValueInput,
  type SecretDescription,
  SecretAccessDeniedError,
  SecretNotFoundError,
  SecretScheduledForDeletionError,
  type SecretStore,
  SecretStoreError,
  type SecretValue,
  type SecretVersionInfo,
  type SecretVersionSelector,
  SecretVersionConflictError,
  type StartRotationInput,
} from '../../core/ports/secrets';

/** Throttling and server-side errors are worth retrying; the SDK's own retries have run by then. */
const RETRYABLE = new Set(['ThrottlingException', 'InternalServiceError', 'RequestLimitExceeded', 'ServiceUnavailable']);

/**
 * The SecretStore port over @aws-sdk/client-secrets-manager. Give it a client, or a client config
 * (`{ endpoint }` for the local emulator).
 */
export class AwsSecretStore implements SecretStore {
  private readonly client: SecretsManagerClient;

  constructor(clientOrConfig: SecretsManagerClient | SecretsManagerClientConfig = {}) {
    this.client = clientOrConfig instanceof SecretsManagerClient ? clientOrConfig : new SecretsManagerClient(clientOrConfig);
  }

  async readSecret(secretId: string, selector: SecretVersionSelector = {}): Promise<SecretValue> {
    const out = await this.call('GetSecretValue', secretId, () =>
      this.client.send(new GetSecretValueCommand({ SecretId: secretId, VersionId: selector.versionId, VersionStage: selector.stage })),
    );
    if (out.SecretString === undefined || !out.ARN || !out.Name || !out.VersionId) {
      throw new SecretStoreError(`secret ${secretId} has no string value (acctops stores every secret as a string)`, {
        code: 'secret_not_string',
        secretId,
      });
    }
    return { secretArn: out.ARN, name: out.Name, versionId: out.VersionId, value: out.SecretString, stages: out.VersionStages ?? [] };
  }

  async putSecretValue(secretId: string, input: PutSecretValueInput): Promise<{ versionId: string; stages: string[] }> {
    const out = await this.call('PutSecretValue', secretId, () =>
      this.client.send(
        new PutSecretValueCommand({
          SecretId: secretId,
          ClientRequestToken: input.clientRequestToken,
          SecretString: input.value,
          VersionStages: input.stages,
        }),
      ),
    );
    return { versionId: out.VersionId ?? input.clientRequestToken, stages: out.VersionStages ?? [] };
  }

  async describeSecret(secretId: string): Promise<SecretDescription> {
    const out = await this.call('DescribeSecret', secretId, () => this.client.send(new DescribeSecretCommand({ SecretId: secretId })));
    return toDescription(out, out.VersionIdsToStages);
  }

  async moveStage(secretId: string, input: MoveSecretStageInput): Promise<void> {
    await this.call('UpdateSecretVersionStage', secretId, () =>
      this.client.send(
        new UpdateSecretVersionStageCommand({
          SecretId: secretId,
          VersionStage: input.stage,
          MoveToVersionId: input.toVersionId,
          RemoveFromVersionId: input.fromVersionId,
        }),
      ),
    );
  }

  async *listSecretsByTag(key: string, value?: string): AsyncIterable<SecretDescription> {
    // The service's tag filters are prefix matches and key and value match independently,
    // so the filters narrow the listing and the exact match is checked here.
    const Filters = [
      { Key: 'tag-key' as const, Values: [key] },
      ...(value === undefined ? [] : [{ Key: 'tag-value' as const, Values: [value] }]),
    ];
    let NextToken: string | undefined;
    do {
      const page = await this.call(`ListSecrets(tag ${key})`, '*', () =>
        this.client.send(new ListSecretsCommand({ Filters, NextToken, MaxResults: 100 })),
      );
      for (const entry of page.SecretList ?? []) {
        const description = toDescription(entry, entry.SecretVersionsToStages);
        if (Object.hasOwn(description.tags, key) && (value === undefined || description.tags[key] === value)) yield description;
      }
      NextToken = page.NextToken;
    } while (NextToken);
  }

  async listVersions(secretId: string): Promise<SecretVersionInfo[]> {
    const versions: SecretVersionInfo[] = [];
    let NextToken: string | undefined;
    do {
      const page = await this.call('ListSecretVersionIds', secretId, () =>
        this.client.send(new ListSecretVersionIdsCommand({ SecretId: secretId, NextToken, MaxResults: 100, IncludeDeprecated: true })),
      );
      for (const v of page.Versions ?? []) {
        if (v.VersionId) versions.push({ versionId: v.VersionId, stages: v.VersionStages ?? [], createdAt: v.CreatedDate?.getTime() });
      }
      NextToken = page.NextToken;
    } while (NextToken);
    return versions;
  }

  async startRotation(secretId: string, input: StartRotationInput = {}): Promise<{ versionId: string }> {
    const out = await this.call('RotateSecret', secretId, () =>
      this.client.send(
        new RotateSecretCommand({
          SecretId: secretId,
          RotationLambdaARN: input.lambdaArn,
          RotationRules: input.automaticallyAfterDays === undefined ? undefined : { AutomaticallyAfterDays: input.automaticallyAfterDays },
          ClientRequestToken: input.clientRequestToken,
          RotateImmediately: true,
        }),
      ),
    );
    if (!out.VersionId) throw new SecretStoreError(`Secrets Manager RotateSecret for ${secretId} returned no version id`, { secretId });
    return { versionId: out.VersionId };
  }

  private async call<T>(operation: string, secretId: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw toStoreError(operation, secretId, error);
    }
  }
}

function toDescription(
  out: Pick<
    DescribeSecretCommandOutput | SecretListEntry,
    | 'ARN'
    | 'Name'
    | 'Description'
    | 'RotationEnabled'
    | 'RotationLambdaARN'
    | 'RotationRules'
    | 'LastRotatedDate'
    | 'NextRotationDate'
    | 'LastChangedDate'
    | 'DeletedDate'
    | 'Tags'
    | 'KmsKeyId'
  >,
  versions: Record<string, string[]> | undefined,
): SecretDescription {
  return {
    secretArn: out.ARN ?? '',
    name: out.Name ?? '',
    description: out.Description,
    versionStages: { ...versions },
    rotation: {
      enabled: out.RotationEnabled ?? false,
      lambdaArn: out.RotationLambdaARN,
      automaticallyAfterDays: out.RotationRules?.AutomaticallyAfterDays,
      scheduleExpression: out.RotationRules?.ScheduleExpression,
      lastRotatedAt: out.LastRotatedDate?.getTime(),
      nextRotationAt: out.NextRotationDate?.getTime(),
    },
    tags: toTagRecord(out.Tags),
    ...(out.KmsKeyId ? { kmsKeyId: out.KmsKeyId } : {}),
    lastChangedAt: out.LastChangedDate?.getTime(),
    deletedAt: out.DeletedDate?.getTime(),
  };
}

function toTagRecord(tags: Tag[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const tag of tags ?? []) if (tag.Key !== undefined) out[tag.Key] = tag.Value ?? '';
  return out;
}

/**
 * Maps SDK errors to the port's. A service error's message is the service's own text (names and
 * ARNs, no values) and is kept with the error as cause. Anything else, such as a response that
 * failed to parse, may quote the response body, which can hold the secret: only its name is kept.
 */
export function toStoreError(operation: string, secretId: string, error: unknown): SecretStoreError {
  const name = error instanceof Error ? error.name : 'UnknownError';
  if (error instanceof SecretsManagerServiceException) {
    // The service's text ends in a full stop; callers go on after it (`…: <message>; hint`, or a
    // sentence's own full stop), so it is dropped here rather than doubled there.
    const message = `Secrets Manager ${operation} failed for ${secretId}: ${name}: ${error.message.replace(/\.+\s*$/, '')}`;
    if (error instanceof ResourceNotFoundException) return new SecretNotFoundError(message, { secretId, cause: error });
    if (name === 'InvalidRequestException' && /marked for deletion/i.test(error.message))
      return new SecretScheduledForDeletionError(message, { secretId, cause: error });
    if (error instanceof ResourceExistsException) return new SecretVersionConflictError(message, { secretId, cause: error });
    // The SDK has no class for it: AccessDeniedException is a common error, not one of the service's model.
    if (name === 'AccessDeniedException') return new SecretAccessDeniedError(message, { secretId, cause: error });
    return new SecretStoreError(message, {
      code: `secrets_manager_${name}`,
      secretId,
      retryable: RETRYABLE.has(name) || error.$fault === 'server',
      cause: error,
    });
  }
  const quotesResponse = typeof error === 'object' && error !== null && ('$response' in error || '$responseBodyText' in error);
  // A connection's failure is Node's plain Error: its name alone read "failed for *: Error". Its errno
  // code (ECONNREFUSED, ENOTFOUND) is a word of the system's, never of a response; the SDK's wrapper
  // of an error from another realm keeps it in its message only.
  const errno = connectionErrno(error);
  const detail = errno ? `${name} (${errno})` : name;
  return new SecretStoreError(`Secrets Manager ${operation} failed for ${secretId}: ${detail}`, {
    code: 'secrets_manager_unavailable',
    secretId,
    retryable: true,
    cause: quotesResponse ? undefined : error,
  });
}

const CONNECTION_ERRNO = /\b(ECONNREFUSED|ECONNRESET|ECONNABORTED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)\b/;

function connectionErrno(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && CONNECTION_ERRNO.test(code)) return code;
  return typeof message === 'string' ? CONNECTION_ERRNO.exec(message)?.[1] : undefined;
}
