import * as z from 'zod';
import { parseWith } from '../../shared/errors';
import { registerSecret } from '../../shared/redact';
import type { RequestEngine } from '../request';
import type { RetrySafety } from '../retry';
import {
  type CreateUserInput,
  type CreatedUser,
  type RetrieveTokenInput,
  type TokenExpiry,
  type TokenPair,
  type TokenVerification,
  createUserInputSchema,
  createdUserSchema,
  retrieveTokenInputSchema,
  tokenExpirySchema,
  tokenPairSchema,
  tokenVerificationSchema,
} from '../schemas';

const tokenSchema = z.string().min(1);

/**
 * The five institution operations (spec §4.1). They need `institutionAuth(...)`.
 * createUser and refreshToken are `unsafe`: after an ambiguous failure (`error.ambiguous`) the
 * caller must reconcile (recover a refresh through retrieveToken), not repeat.
 */
export class InstitutionResource {
  constructor(private readonly engine: RequestEngine) {}

  async createUser(input: CreateUserInput): Promise<CreatedUser> {
    const user = parseWith(createUserInputSchema, input, 'createUser input');
    const body = { username: user.username, email: user.email, external_id: user.externalId };
    return this.tokens(createdUserSchema, await this.post('/institution/users/create/', body, 'unsafe'));
  }

  /** Rotates the refresh token: the one sent is dead after a success. */
  async refreshToken(refreshToken: string): Promise<TokenPair> {
    const refresh = parseWith(tokenSchema, refreshToken, 'refreshToken');
    return this.tokens(tokenPairSchema, await this.post('/institution/users/token/refresh/', { refresh }, 'unsafe'));
  }

  async verifyToken(token: string): Promise<TokenVerification> {
    const value = parseWith(tokenSchema, token, 'token');
    return this.engine.parse(tokenVerificationSchema, await this.post('/institution/users/token/verify/', { token: value }, 'idempotent'));
  }

  /** Revokes every token of the user; repeating it is harmless. */
  async expireToken(refreshToken: string): Promise<TokenExpiry> {
    const refresh = parseWith(tokenSchema, refreshToken, 'refreshToken');
    return this.engine.parse(tokenExpirySchema, await this.post('/institution/users/token/expire/', { refresh }, 'idempotent'));
  }

  /** A new pair for a known user; earlier tokens stay valid until they expire. */
  async retrieveToken(input: RetrieveTokenInput): Promise<TokenPair> {
    const user = parseWith(retrieveTokenInputSchema, input, 'retrieveToken input');
    const body = { username: user.username, external_id: user.externalId, email: user.email };
    return this.tokens(tokenPairSchema, await this.post('/institution/users/token/retrieve/', body, 'idempotent'));
  }

  private post(path: string, body: Record<string, unknown>, safety: RetrySafety) {
    return this.engine.send({ method: 'POST', url: this.engine.url(path), auth: 'institution', safety, body });
  }

  /** Registers the new tokens with the redactor before anyone can log them. */
  private tokens<T extends TokenPair>(schema: z.ZodType<T>, response: Awaited<ReturnType<RequestEngine['send']>>): T {
    const body = response.body as Partial<Record<'accessToken' | 'refreshToken', unknown>> | undefined;
    for (const token of [body?.accessToken, body?.refreshToken]) if (typeof token === 'string') registerSecret(token, { from: 'service' });
    return this.engine.parse(schema, response);
  }
}
