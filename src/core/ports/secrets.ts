import { AcctopsError } from '../shared/errors';

/**
 * What our use cases need from a secret store (Secrets Manager in AWS, its emulator locally):
 * read a version, add a version idempotently, see which version carries which stage, move a
 * stage, and find secrets by tag. The staging labels keep their Secrets Manager names because the
 * rotation protocol is defined in those terms.
 */
export const SecretStage = {
  /** The version everyone reads. */
  current: 'AWSCURRENT',
  /** The version a rotation is bringing in. */
  pending: 'AWSPENDING',
  /** The version that was current before the last promotion. */
  previous: 'AWSPREVIOUS',
} as const;

/** Which version to read: by id, by stage, or both (they must then agree). Default: current. */
export interface SecretVersionSelector {
  versionId?: string;
  stage?: string;
}

export interface SecretValue {
  secretArn: string;
  name: string;
  versionId: string;
  value: string;
  stages: string[];
}

export interface SecretRotation {
  enabled: boolean;
  lambdaArn?: string;
  automaticallyAfterDays?: number;
  scheduleExpression?: string;
  /** Epoch milliseconds, like every time in acctops (see Clock). */
  lastRotatedAt?: number;
  nextRotationAt?: number;
}

export interface SecretDescription {
  secretArn: string;
  name: string;
  description?: string;
  /** Version id to its stages; versions without a stage (deprecated) are not listed. */
  versionStages: Record<string, string[]>;
  rotation: SecretRotation;
  tags: Record<string, string>;
  /**
   * The KMS key that encrypts the secret, as Secrets Manager names it (DescribeSecret's `KmsKeyId`:
   * a key id, key ARN, alias or alias ARN, as given at creation). Absent: the AWS managed key
   * `aws/secretsmanager`, for which the service returns none.
   */
  kmsKeyId?: string;
  lastChangedAt?: number;
  /** Set when the secret is scheduled for deletion. */
  deletedAt?: number;
}

export interface PutSecretValueInput {
  value: string;
  /**
   * Becomes the version id. Repeating a put with the same token and value is a no-op; the same
   * token with another value fails with SecretVersionConflictError.
   */
  clientRequestToken: string;
  /** Default: [current]. Moving current leaves previous on the version it came from. */
  stages?: string[];
}

export interface MoveSecretStageInput {
  stage: string;
  /** The version to label; omit to only remove the stage. */
  toVersionId?: string;
  /** The version the stage must currently be on; required when it is on one. */
  fromVersionId?: string;
}

export interface SecretVersionInfo {
  versionId: string;
  stages: string[];
  /** Epoch milliseconds. */
  createdAt?: number;
}

export interface StartRotationInput {
  /** The rotation function; default: the one already configured on the secret. */
  lambdaArn?: string;
  /** Sets the schedule as well; default: the secret's current rules. */
  automaticallyAfterDays?: number;
  /**
   * The id of the version the rotation brings in. Repeating the token of a rotation that is still
   * pending reattempts it; default: a new token chosen by the store.
   */
  clientRequestToken?: string;
}

export interface SecretStore {
  /** Throws SecretNotFoundError when the secret, the version or its value does not exist. */
  readSecret(secretId: string, selector?: SecretVersionSelector): Promise<SecretValue>;
  putSecretValue(secretId: string, input: PutSecretValueInput): Promise<{ versionId: string; stages: string[] }>;
  describeSecret(secretId: string): Promise<SecretDescription>;
  moveStage(secretId: string, input: MoveSecretStageInput): Promise<void>;
  /** Secrets carrying the tag `key` (with exactly `value`, when given), all pages. */
  listSecretsByTag(key: string, value?: string): AsyncIterable<SecretDescription>;
  /** Every version Secrets Manager keeps, labelled or not (deprecated, `stages` empty), newest first, with their creation dates. */
  listVersions(secretId: string): Promise<SecretVersionInfo[]>;
  /**
   * Starts the secret's rotation (RotateSecret): a new version labelled AWSPENDING, then the
   * rotation function's four steps, which AWS runs after this call returns.
   */
  startRotation(secretId: string, input?: StartRotationInput): Promise<{ versionId: string }>;
}

/** The version id carrying `stage`, if any. */
export function versionWithStage(description: Pick<SecretDescription, 'versionStages'>, stage: string): string | undefined {
  return Object.entries(description.versionStages).find(([, stages]) => stages.includes(stage))?.[0];
}

/**
 * A failed call to the secret store. Messages name the secret and the store's error, never a
 * value. `retryable` is true for throttling, server errors and lost connections.
 */
export class SecretStoreError extends AcctopsError {
  override readonly name: string = 'SecretStoreError';
  readonly secretId: string;
  readonly retryable: boolean;

  constructor(message: string, options: { code?: string; secretId: string; retryable?: boolean; cause?: unknown }) {
    super(message, { code: options.code ?? 'secret_store_failed', cause: options.cause });
    this.secretId = options.secretId;
    this.retryable = options.retryable ?? false;
  }
}

/** The secret, the requested version, or its value does not exist. */
export class SecretNotFoundError extends SecretStoreError {
  override readonly name: string = 'SecretNotFoundError';
  constructor(message: string, options: { secretId: string; cause?: unknown }) {
    super(message, { ...options, code: 'secret_not_found' });
  }
}

/**
 * The store refused the caller (Secrets Manager's AccessDeniedException). For a name the caller may
 * reach only under a resource-tag condition this is also the answer when no such secret exists:
 * IAM has no tag to compare, so nothing allows the call (rotation-sweep.ts, describeByNameOrTag).
 */
export class SecretAccessDeniedError extends SecretStoreError {
  override readonly name: string = 'SecretAccessDeniedError';
  constructor(message: string, options: { secretId: string; cause?: unknown }) {
    super(message, { ...options, code: 'secrets_manager_AccessDeniedException' });
  }
}

/**
 * The secret is scheduled for deletion (Secrets Manager's InvalidRequestException "marked for
 * deletion"): it refuses reads and writes until `RestoreSecret`. Typed so a caller can say what to
 * do (restore it) rather than pass the service's text on.
 */
export class SecretScheduledForDeletionError extends SecretStoreError {
  override readonly name: string = 'SecretScheduledForDeletionError';
  constructor(message: string, options: { secretId: string; cause?: unknown }) {
    super(message, { ...options, code: 'secret_scheduled_for_deletion' });
  }
}

/** A version with this client request token exists with a different value. */
export class SecretVersionConflictError extends SecretStoreError {
  override readonly name: string = 'SecretVersionConflictError';
  constructor(message: string, options: { secretId: string; cause?: unknown }) {
    super(message, { ...options, code: 'secret_version_conflict' });
  }
}
