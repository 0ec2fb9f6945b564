import * as z from 'zod';
import type { SecretStore } from '../ports/secrets';
import { CachedSecret, type CachedSecretOptions } from '../shared/cached-secret';
import { issuesFromZod, ValidationError } from '../shared/errors';
import { registerSecret } from '../shared/redact';
import { lazySchema } from '../shared/lazy-schema';

export interface InstitutionCredential {
  institutionId: string;
  secretKey: string;
}

const SOURCE = 'institution credential secret';

// Both end up in the `Institution: <institution_id>:<secret_key>` header (spec §5.2.1): printable
// ASCII, no spaces, and no colon in the id since the colon separates the two.
const INSTITUTION_ID = /^[\x21-\x39\x3b-\x7e]+$/;
const SECRET_KEY = /^[\x21-\x7e]+$/;

const schema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    institutionId: z.string().min(1).max(256).regex(INSTITUTION_ID),
    secretKey: z.string().min(1).max(4096).regex(SECRET_KEY),
  }),
);

const FORMAT_HINT: Record<string, string> = {
  institutionId: 'must be printable ASCII without spaces or ":"',
  secretKey: 'must be printable ASCII without spaces',
};

/**
 * Parses the institution credential as stored in Secrets Manager, in either form (see
 * docs/assumptions.md, "Secret formats"):
 * - plain `<institution_id>:<secret_key>` (split at the first colon), or
 * - JSON `{"institutionId": "...", "secretKey": "..."}` (other members are ignored).
 * Surrounding whitespace is ignored. Errors name the field and never contain the secret.
 */
export function parseInstitutionCredential(raw: string): InstitutionCredential {
  const text = raw.trim();
  let candidate: unknown;
  if (text.startsWith('{')) {
    try {
      candidate = JSON.parse(text);
    } catch {
      // No cause: the parser's message quotes the text around the error, i.e. the secret.
      throw new ValidationError(SOURCE, [{ path: '', message: 'starts with "{" but is not valid JSON' }]);
    }
  } else {
    const colon = text.indexOf(':');
    if (colon < 0) {
      throw new ValidationError(SOURCE, [
        { path: '', message: 'expected "<institution_id>:<secret_key>" or a JSON object with institutionId and secretKey' },
      ]);
    }
    candidate = { institutionId: text.slice(0, colon), secretKey: text.slice(colon + 1) };
  }
  if (typeof candidate === 'object' && candidate !== null && 'secretKey' in candidate && typeof candidate.secretKey === 'string') {
    // Before validation, so that even a malformed key that reaches a log is scrubbed.
    registerSecret(candidate.secretKey);
  }
  const result = schema.safeParse(candidate);
  if (!result.success) {
    const issues = issuesFromZod(result.error).map((issue) =>
      issue.message.startsWith('invalid ') && FORMAT_HINT[issue.path] ? { ...issue, message: FORMAT_HINT[issue.path]! } : issue,
    );
    throw new ValidationError(SOURCE, issues);
  }
  return result.data;
}

/**
 * The institution credential behind a TTL cache. Functions get the secret's ARN, never the value.
 * Wire it into the accounting client as a CredentialProvider:
 * `{ get: async () => ({ kind: 'institution', ...(await cached.get()) }), onAuthenticationError: () => cached.refreshAfterAuthError() }`.
 */
export function cachedInstitutionCredential(
  store: Pick<SecretStore, 'readSecret'>,
  secretArn: string,
  options: Omit<CachedSecretOptions<InstitutionCredential>, 'parse'> = {},
): CachedSecret<InstitutionCredential> {
  return new CachedSecret(store, secretArn, { ...options, parse: parseInstitutionCredential });
}
