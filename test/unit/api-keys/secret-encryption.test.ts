import { secretEncryption } from '../../../src/core/api-keys/secret-encryption';

describe('secretEncryption', () => {
  it('reads no KmsKeyId, or the alias aws/secretsmanager by name or ARN, as the AWS managed key', () => {
    expect(secretEncryption({})).toEqual({ kmsKeyId: null, awsManagedKey: true });
    expect(secretEncryption({ kmsKeyId: 'alias/aws/secretsmanager' })).toEqual({
      kmsKeyId: 'alias/aws/secretsmanager',
      awsManagedKey: true,
    });
    const aliasArn = 'arn:aws:kms:eu-central-1:123456789012:alias/aws/secretsmanager';
    expect(secretEncryption({ kmsKeyId: aliasArn })).toEqual({ kmsKeyId: aliasArn, awsManagedKey: true });
  });

  it('reads any other key, by id, key ARN or another alias, as customer managed', () => {
    for (const id of [
      '1234abcd-12ab-34cd-56ef-1234567890ab',
      'arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
      'alias/legacy-secrets',
      'arn:aws:kms:eu-central-1:123456789012:alias/aws/secretsmanager-copy',
    ]) {
      expect(secretEncryption({ kmsKeyId: id })).toEqual({ kmsKeyId: id, awsManagedKey: false });
    }
  });
});
