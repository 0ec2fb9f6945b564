import type { SecretDescription } from '../ports/secrets';

/** The AWS managed key of Secrets Manager, by the alias the service and its console name it with. */
const AWS_MANAGED_ALIAS = 'alias/aws/secretsmanager';

/** Which KMS key encrypts a secret, in the terms the stack's grants care about. */
export interface SecretEncryption {
  /** DescribeSecret's `KmsKeyId`; null when it names none, which is the AWS managed key. */
  kmsKeyId: string | null;
  /**
   * The AWS managed key `aws/secretsmanager`, which needs no grant: no `KmsKeyId`, or its alias
   * (name or ARN). A key named by its id or key ARN counts as customer managed even if it is that
   * key, which only KMS DescribeKey could tell; the cost of that error is one needless setting.
   */
  awsManagedKey: boolean;
}

export function secretEncryption(description: Pick<SecretDescription, 'kmsKeyId'>): SecretEncryption {
  const id = description.kmsKeyId ?? null;
  const awsManagedKey = id === null || id === AWS_MANAGED_ALIAS || id.endsWith(`:${AWS_MANAGED_ALIAS}`);
  return { kmsKeyId: id, awsManagedKey };
}
