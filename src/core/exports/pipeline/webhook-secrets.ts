import { SecretNotFoundError, SecretStage, type SecretStore } from '../../ports/secrets';
import { CachedSecret } from '../../shared/cached-secret';
import type { Clock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { registerSecret } from '../../shared/redact';
import type { WebhookSecrets } from './webhook';

/** Shared secrets shorter than this are refused: HMAC-SHA256 wants at least 256 bits of key. */
const MIN_SECRET_LENGTH = 32;

/**
 * The webhook's signing secrets from Secrets Manager: the AWSCURRENT version and, while a change
 * is under way, AWSPREVIOUS, so a sender can switch to the new secret after acctops accepts it
 * (docs/exports.md, "Changing the secret"). Both are read through a TTL cache; a secret without a
 * previous version is simply the current one.
 */
export function webhookSecretsFromStore(
  store: Pick<SecretStore, 'readSecret'>,
  secretId: string,
  options: { ttlMs?: number; clock?: Clock; logger?: Logger } = {},
): WebhookSecrets {
  const versions = [SecretStage.current, SecretStage.previous].map(
    (stage) => new CachedSecret(store, secretId, { ...options, selector: { stage }, parse: parseWebhookSecret }),
  );
  return {
    signingSecrets: async () => {
      const [current, previous] = versions as [CachedSecret<string>, CachedSecret<string>];
      const secrets = [await current.get()];
      try {
        const older = await previous.get();
        if (older !== secrets[0]) secrets.push(older);
      } catch (error) {
        if (!(error instanceof SecretNotFoundError)) throw error;
      }
      return secrets;
    },
  };
}

function parseWebhookSecret(raw: string): string {
  const secret = raw.trim();
  registerSecret(secret);
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new ValidationError('webhook secret', [{ path: '', message: `must have at least ${MIN_SECRET_LENGTH} characters` }]);
  }
  return secret;
}
