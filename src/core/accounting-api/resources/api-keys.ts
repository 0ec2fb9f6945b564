import { ConfigError, parseWith } from '../../shared/errors';
import { registerSecret } from '../../shared/redact';
import type { PaginatedList } from '../pagination';
import type { RequestEngine } from '../request';
import {
  type ApiKey,
  type CreateApiKeyInput,
  type CreatedApiKey,
  type PageQuery,
  apiKeySchema,
  createApiKeyInputSchema,
  createdApiKeySchema,
  pageQuerySchema,
  uuidSchema,
} from '../schemas';

/**
 * Where API-key management lives. The spec does not show it; the defaults are the sandbox's
 * (docs/assumptions.md). `revoke` holds the placeholder `{publicId}`.
 */
export interface ApiKeyPaths {
  list: string;
  create: string;
  revoke: string;
}

export const defaultApiKeyPaths: ApiKeyPaths = {
  list: '/api-keys/',
  create: '/api-keys/',
  revoke: '/api-keys/{publicId}/',
};

export function resolveApiKeyPaths(paths: Partial<ApiKeyPaths> = {}): ApiKeyPaths {
  const resolved = { ...defaultApiKeyPaths, ...paths };
  if (!resolved.revoke.includes('{publicId}')) {
    throw new ConfigError([{ path: 'apiKeyPaths.revoke', message: 'must contain {publicId}' }]);
  }
  return resolved;
}

export class ApiKeysResource {
  constructor(
    private readonly engine: RequestEngine,
    private readonly paths: ApiKeyPaths,
  ) {}

  /** Keys of the credential's company: prefix, permissions, last use. Never the full key. */
  list(query: PageQuery = {}): PaginatedList<ApiKey> {
    const { page, pageSize } = parseWith(pageQuerySchema, query, 'apiKeys.list query');
    return this.engine.list({ path: this.paths.list, query: { page }, pageSizeParam: 'page_size', pageSize, itemSchema: apiKeySchema });
  }

  /**
   * Creates a key; the result's `key` is the only time the full key is shown. Never retried
   * after an ambiguous failure (a repeat could mint a second key).
   */
  async create(input: CreateApiKeyInput): Promise<CreatedApiKey> {
    const body = parseWith(createApiKeyInputSchema, input, 'apiKeys.create input');
    const response = await this.engine.send({
      method: 'POST',
      url: this.engine.url(this.paths.create),
      auth: 'bearer',
      safety: 'unsafe',
      body,
    });
    const key = (response.body as { key?: unknown } | undefined)?.key;
    if (typeof key === 'string') registerSecret(key, { from: 'service' });
    return this.engine.parse(createdApiKeySchema, response);
  }

  /** Revokes a key by its `publicId`; revoking a revoked key succeeds too. */
  async revoke(publicId: string): Promise<void> {
    const id = parseWith(uuidSchema, publicId, 'publicId');
    const url = this.engine.url(this.paths.revoke.replace('{publicId}', encodeURIComponent(id)));
    await this.engine.send({ method: 'DELETE', url, auth: 'bearer', safety: 'idempotent' });
  }
}
