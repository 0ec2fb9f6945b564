import { blockedRevocations, RevocationBlockedError, type Revocation } from '../../../src/core/api-keys';
import { SecretAccessDeniedError, type SecretDescription, SecretNotFoundError } from '../../../src/core/ports/secrets';

const COMPANY = '3f2b8c1e-6a4d-4e2f-9b7a-1c2d3e4f5a6b';
const OTHER = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

const revocation = (secretId: string, apiKeyId: string, keyPrefix: string, revokeAt: number, companyId = COMPANY): Revocation => ({
  secretId,
  companyId,
  apiKeyId,
  keyPrefix,
  revokeAt,
  rotationToken: 'r'.repeat(36),
});

const description = (secretId: string, deletedAt?: number): SecretDescription => ({
  secretArn: secretId,
  name: secretId,
  versionStages: {},
  rotation: { enabled: false },
  tags: {},
  ...(deletedAt === undefined ? {} : { deletedAt }),
});

/** The pending revocations as the scheduler lists them, and a store that describes each secret as given. */
function deps(pending: Revocation[], secrets: Record<string, SecretDescription | Error>) {
  const described: string[] = [];
  return {
    described,
    deps: {
      scheduler: {
        async *pending() {
          yield* pending;
        },
      },
      store: {
        describeSecret: (secretId: string) => {
          described.push(secretId);
          const found = secrets[secretId];
          if (found === undefined) throw new Error(`unexpected secret ${secretId}`);
          return found instanceof Error ? Promise.reject(found) : Promise.resolve(found);
        },
      },
    },
  };
}

describe('blockedRevocations: pending revocations that fail when they come due (decision 107)', () => {
  it("names those whose company key secret is scheduled for deletion, soonest first, with the error the revocation will fail with; a served or vanished secret's are left out", async () => {
    const removed = 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:removed';
    const served = 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:served';
    const gone = 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:gone';
    const { deps: d, described } = deps(
      [
        revocation(removed, '11111111-1111-4111-8111-111111111111', 'sbx_Later001', 2_000),
        revocation(served, '22222222-2222-4222-8222-222222222222', 'sbx_Served01', 500, OTHER),
        revocation(removed, '33333333-3333-4333-8333-333333333333', 'sbx_Sooner01', 1_000),
        revocation(gone, '44444444-4444-4444-8444-444444444444', 'sbx_Gone0001', 100, OTHER),
      ],
      {
        [removed]: description(removed, 1),
        [served]: description(served),
        [gone]: new SecretNotFoundError('no such secret', { secretId: gone }),
      },
    );
    const blocked = await blockedRevocations(d);
    expect(blocked.map((b) => b.revocation.keyPrefix)).toEqual(['sbx_Sooner01', 'sbx_Later001']);
    for (const { revocation: r, error } of blocked) {
      expect(error).toBeInstanceOf(RevocationBlockedError);
      expect(error.code).toBe('revocation_secret_deleted');
      expect(error.message).toBe(
        `old key ${r.keyPrefix}… of company ${COMPANY} cannot be revoked: the company's key secret is scheduled for deletion (the company was removed), and the revocation needs the company's current key, which only that secret holds`,
      );
    }
    // One DescribeSecret per secret, however many of its keys are pending.
    expect(described.sort()).toEqual([gone, removed, served].sort());
  });

  it('fails when a secret cannot be described for another reason: an unread secret is not a served one', async () => {
    const secret = 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:denied';
    const { deps: d } = deps([revocation(secret, '55555555-5555-4555-8555-555555555555', 'sbx_Denied01', 1)], {
      [secret]: new SecretAccessDeniedError('not authorized to perform secretsmanager:DescribeSecret', { secretId: secret }),
    });
    await expect(blockedRevocations(d)).rejects.toBeInstanceOf(SecretAccessDeniedError);
  });
});
