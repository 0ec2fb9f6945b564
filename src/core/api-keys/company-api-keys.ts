import type { CredentialProvider } from '../accounting-api';
import type { SecretStore } from '../ports/secrets';
import { CachedSecret } from '../shared/cached-secret';
import { type Clock } from '../shared/clock';
import { ValidationError } from '../shared/errors';
import { type Logger, silentLogger } from '../shared/logger';
import { type CompanyKeySecret, parseCompanyKeySecret } from './company-key-secret';
import type { CompanyKeyDirectory } from './key-directory';

export interface CompanyApiKeysOptions {
  /**
   * How long a key is served from memory. The rotation's grace period must be longer (see
   * `rotationSettings`). Default 5 minutes.
   */
  ttlMs?: number;
  /** See CachedSecret. Default 30 seconds. */
  authRefreshCooldownMs?: number;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Company API keys for our own functions (exports and the like): `getApiKey(companyId)` reads the
 * company's key secret through a TTL cache, and `credentials(companyId)` is the accounting
 * client's CredentialProvider over it. On a 401 the provider reads the secret again and, when a
 * rotation has changed it, the client retries once with the new key: an export that runs across a
 * rotation (and the old key's revocation) finishes without an error.
 */
export class CompanyApiKeys {
  private readonly secrets = new Map<string, Promise<CachedSecret<CompanyKeySecret>>>();
  private readonly logger: Logger;

  constructor(
    private readonly store: Pick<SecretStore, 'readSecret'>,
    private readonly directory: Pick<CompanyKeyDirectory, 'find'>,
    private readonly options: CompanyApiKeysOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger;
  }

  /** The company's current key (cached). The result holds the full key: never log it, log `keyPrefix`. */
  async getApiKey(companyId: string): Promise<CompanyKeySecret> {
    return (await this.secretOf(companyId)).get();
  }

  credentials(companyId: string): CredentialProvider {
    return {
      get: async () => {
        const key = await this.getApiKey(companyId);
        return { kind: 'apiKey', apiKey: key.apiKey, companyId: key.companyId };
      },
      onAuthenticationError: async () => (await this.secretOf(companyId)).refreshAfterAuthError(),
    };
  }

  private secretOf(companyId: string): Promise<CachedSecret<CompanyKeySecret>> {
    const id = companyId.toLowerCase();
    let cached = this.secrets.get(id);
    if (!cached) {
      cached = this.directory.find(id).then(
        (entry) =>
          new CachedSecret(this.store, entry.secretId, {
            parse: (raw) => checkCompany(parseCompanyKeySecret(raw), id),
            ttlMs: this.options.ttlMs,
            authRefreshCooldownMs: this.options.authRefreshCooldownMs,
            clock: this.options.clock,
            logger: this.logger.child({ companyId: id }),
          }),
      );
      // A failed lookup is not cached: the next call asks the directory again.
      cached.catch(() => this.secrets.delete(id));
      this.secrets.set(id, cached);
    }
    return cached;
  }
}

/** A secret tagged for one company that holds another's key would make every call act for the wrong company. */
function checkCompany(secret: CompanyKeySecret, companyId: string): CompanyKeySecret {
  if (secret.companyId.toLowerCase() !== companyId) {
    throw new ValidationError('company API key secret', [
      { path: 'companyId', message: `is not the company ${companyId} it is filed under` },
    ]);
  }
  return secret;
}
