import type { CredentialProvider } from '../accounting-api';
import type { CachedSecret } from '../shared/cached-secret';
import type { InstitutionCredential } from './institution-credential';

/**
 * The institution credential as the accounting client's CredentialProvider: every request reads
 * the cached secret (TTL), and a 401 makes the cache read Secrets Manager again, once per cooldown
 * window; the request is sent once more only when a different version came back. So an institution
 * secret changed by the runbook is picked up by running functions without a redeploy, and a secret
 * that is simply wrong costs one read, not one per request.
 */
export function institutionCredentialProvider(secret: CachedSecret<InstitutionCredential>): CredentialProvider {
  return {
    get: async () => ({ kind: 'institution', ...(await secret.get()) }),
    onAuthenticationError: () => secret.refreshAfterAuthError(),
  };
}
