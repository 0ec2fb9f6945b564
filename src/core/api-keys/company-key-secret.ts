import * as z from 'zod';
import { uuidSchema } from '../accounting-api';
import { issuesFromZod, ValidationError } from '../shared/errors';
import { keyPrefix, registerSecret } from '../shared/redact';
import { lazySchema } from '../shared/lazy-schema';

/**
 * One secret per company API key (docs/assumptions.md, "Secret formats"). Every version of the
 * secret holds this JSON: the full key, and what is needed to manage it without ever logging it.
 */
export interface CompanyKeySecret {
  /** The full key, `<service prefix>_<rest>`. Never logged: `keyPrefix` is. */
  apiKey: string;
  /** The key's `publicId` at the service (what revoke takes). */
  apiKeyId: string;
  /** `keyPrefix(apiKey)`: the service prefix, the underscore and 8 characters. */
  keyPrefix: string;
  /** The company the key acts for (spec §5.1.4). */
  companyId: string;
  /** The key's permissions as the service's key list shows them. */
  permissions: string[];
  /** When the key was created, ISO 8601 with an offset. */
  createdAt: string;
}

const SOURCE = 'company API key secret';
/**
 * A value that is not even a JSON object is what the stack stores in a secret it creates (a random
 * placeholder): no key has been installed yet, which the runbook fixes. A text that starts as JSON
 * and breaks is a damaged value, and keeps the parser's plain message.
 */
const NO_KEY_YET =
  "holds no key yet (not JSON: the placeholder a new secret starts with); install the company's key: " +
  '`acctops keys install --company <id>`, docs/runbooks.md, "Install a company API key"';
const API_KEY = /^[A-Za-z0-9]+_[\x21-\x7e]+$/;

export const companyKeySecretSchema = /* @__PURE__ */ lazySchema(() =>
  z
    .object({
      apiKey: z.string().max(4096).regex(API_KEY),
      apiKeyId: uuidSchema,
      keyPrefix: z.string().min(1).max(64),
      companyId: uuidSchema,
      permissions: z.array(z.string().min(1)).min(1),
      createdAt: z.iso.datetime({ offset: true }),
    })
    .refine((s) => s.keyPrefix === keyPrefix(s.apiKey), { path: ['keyPrefix'], message: 'must be the first characters of apiKey' }),
);

/**
 * Parses a version of a company key secret. The key is registered with the redactor before
 * anything else, so that even a malformed secret cannot leak through a later log line; errors
 * name the field and never quote a value.
 */
export function parseCompanyKeySecret(raw: string): CompanyKeySecret {
  let candidate: unknown;
  try {
    candidate = JSON.parse(raw);
  } catch {
    // No cause: the parser's message quotes the text around the error, i.e. the key.
    throw new ValidationError(SOURCE, [{ path: '', message: raw.trimStart().startsWith('{') ? 'is not valid JSON' : NO_KEY_YET }]);
  }
  if (typeof candidate === 'object' && candidate !== null && 'apiKey' in candidate && typeof candidate.apiKey === 'string') {
    registerSecret(candidate.apiKey);
  }
  const result = companyKeySecretSchema.safeParse(candidate);
  if (!result.success) {
    const issues = issuesFromZod(result.error).map((issue) =>
      issue.path === 'apiKey' && issue.message.startsWith('invalid') ? { ...issue, message: 'expected <service prefix>_<key>' } : issue,
    );
    throw new ValidationError(SOURCE, issues);
  }
  return { ...result.data, permissions: [...result.data.permissions] };
}

/** The JSON stored in a version; fields in a fixed order so that a retried put is byte-identical. */
export function serializeCompanyKeySecret(secret: CompanyKeySecret): string {
  registerSecret(secret.apiKey);
  return JSON.stringify({
    apiKey: secret.apiKey,
    apiKeyId: secret.apiKeyId,
    keyPrefix: secret.keyPrefix,
    companyId: secret.companyId,
    permissions: secret.permissions,
    createdAt: secret.createdAt,
  });
}

/** The loggable description of a key: what every log line, event and CLI row may show. */
export function describeKey(secret: Pick<CompanyKeySecret, 'apiKeyId' | 'keyPrefix' | 'companyId'>): Record<string, string> {
  return { companyId: secret.companyId, apiKeyId: secret.apiKeyId, keyPrefix: secret.keyPrefix };
}

/** Permissions compared as sets: the service may list them in another order. */
export function samePermissions(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((p) => right.has(p));
}
