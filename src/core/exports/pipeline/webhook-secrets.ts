import { SecretNotFoundError, SecretStage, type SecretStore } from '../../ports/secrets';
import { CachedSecret } from '../../shared/cached-secret';
import { type Clock, systemClock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { registerSecret } from '../../shared/redact';
import type { WebhookSecrets } from './webhook';

/** Shared secrets shorter than this are refused: HMAC-SHA256 wants at least 256 bits of key. */
const MIN_SECRET_LENGTH = 32;
/** As CachedSecret's. */
const DEFAULT_TTL_MS = 5 * 60_000;

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
  const clock = options.clock ?? systemClock;
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  // "No AWSPREVIOUS" is cached like a value: it is the usual state (a new secret, or a change
  // finished), and any request with a well-formed signature reaches this read, so without the
  // cache every such request, a forged one included, cost a GetSecretValue.
  let noPreviousUntil = 0;
  return {
    signingSecrets: async () => {
      const [current, previous] = versions as [CachedSecret<string>, CachedSecret<string>];
      const secrets = [await current.get()];
      if (clock.now() < noPreviousUntil) return secrets;
      try {
        const older = await previous.get();
        if (older !== secrets[0]) secrets.push(older);
      } catch (error) {
        if (!(error instanceof SecretNotFoundError)) throw error;
        noPreviousUntil = clock.now() + ttlMs;
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
