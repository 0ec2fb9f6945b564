import * as z from 'zod';
import { parseWith } from '../../shared/errors';
import { registerSecret } from '../../shared/redact';
import { InvalidGrantError, ResponseValidationError, type ErrorContextKind } from '../errors';
import type { ApiResponse, RequestEngine } from '../request';
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
  tokenPairSchema,
  tokenReplySchema,
} from '../schemas';
import { expiryOf, verdictOf } from '../token-verdicts';
import { lazySchema } from '../../shared/lazy-schema';

const tokenSchema = /* @__PURE__ */ lazySchema(() => z.string().min(1));

/** A refresh's pair, and whether the service rotated the refresh token. */
export type RefreshedPair = TokenPair & { refreshTokenRotated: boolean };

/**
 * The five institution operations (spec §4.1). They need `institutionAuth(...)`.
 * createUser and refreshToken are `unsafe`: after an ambiguous failure (`error.ambiguous`) the
 * caller must reconcile (recover a refresh through retrieveToken), not repeat.
 *
 * The spec shows none of their bodies beyond the tokens, so they are read tolerantly
 * (docs/assumptions.md, "Institution operations"). A refusal on refresh, verify or expire that
 * concerns the token sent (not the institution credential) is InvalidGrantError, whatever the
 * body's shape (errors.ts, `concernsToken`).
 */
export class InstitutionResource {
  constructor(private readonly engine: RequestEngine) {}

  /** May answer with an access token only (`refreshToken` null): the caller then retrieves a pair. */
  async createUser(input: CreateUserInput): Promise<CreatedUser> {
    const user = parseWith(createUserInputSchema, input, 'createUser input');
    const body = { username: user.username, email: user.email, external_id: user.externalId };
    return this.tokens(createdUserSchema, await this.post('/institution/users/create/', body, 'unsafe', { kind: 'createUser' }));
  }

  /**
   * A new access token. When the service rotates the refresh token the one sent is dead after a
   * success; when the reply carries none (spec: it "returns a new access token"), the one sent
   * stays in use and is returned as `refreshToken`.
   */
  async refreshToken(refreshToken: string): Promise<RefreshedPair> {
    const refresh = parseWith(tokenSchema, refreshToken, 'refreshToken');
    const reply = this.tokens(
      tokenReplySchema,
      await this.post('/institution/users/token/refresh/', { refresh }, 'unsafe', tokenOp('refresh')),
    );
    const rotated = reply.refreshToken !== null && reply.refreshToken !== refresh;
    return { ...reply, refreshToken: reply.refreshToken ?? refresh, refreshTokenRotated: rotated };
  }

  /**
   * The service's verdict. Any 2xx is "valid" unless its body carries a negative marker
   * (`valid: false`, RFC 7662's `active: false`, `"status": "INVALID"`…: token-verdicts.ts); an
   * empty body or `{}` is valid. A refusal about the token (a 401
   * `token_not_valid`, a 400 on the token) is `{ valid: false, reason }`, not an error; a refusal
   * of the institution credential stays an AuthenticationError.
   */
  async verifyToken(token: string): Promise<TokenVerification> {
    const value = parseWith(tokenSchema, token, 'token');
    let response: ApiResponse;
    try {
      response = await this.post('/institution/users/token/verify/', { token: value }, 'idempotent', tokenOp('token'));
    } catch (error) {
      if (error instanceof InvalidGrantError) return { valid: false, reason: reasonOfRefusal(error.apiCode) };
      throw error;
    }
    return verdictOf(response.body, value);
  }

  /**
   * Revokes every token of the user; repeating it is harmless. Any 2xx means done unless its body
   * says it was not (`expired: false`, `success: false`, a failed status: token-verdicts.ts).
   */
  async expireToken(refreshToken: string): Promise<TokenExpiry> {
    const refresh = parseWith(tokenSchema, refreshToken, 'refreshToken');
    const response = await this.post('/institution/users/token/expire/', { refresh }, 'idempotent', tokenOp('refresh'));
    return expiryOf(response.body);
  }

  /** A new pair for a known user; earlier tokens stay valid until they expire. */
  async retrieveToken(input: RetrieveTokenInput): Promise<TokenPair> {
    const user = parseWith(retrieveTokenInputSchema, input, 'retrieveToken input');
    const body = { username: user.username, external_id: user.externalId, email: user.email };
    return this.tokens(tokenPairSchema, await this.post('/institution/users/token/retrieve/', body, 'idempotent', { kind: 'other' }));
  }

  private post(path: string, body: Record<string, unknown>, safety: RetrySafety, errorContext: ErrorContextKind) {
    // A token we send is a secret even when this process never received it (read from the store):
    // a service that echoes it in an error body must not put it in our messages.
    for (const field of ['refresh', 'token'] as const) if (typeof body[field] === 'string') registerSecret(body[field]);
    return this.engine.send({ method: 'POST', url: this.engine.url(path), auth: 'institution', safety, body, errorContext });
  }

  /**
   * Registers the new tokens with the redactor before anyone can log them, wherever they are
   * (`tokenHolder`), then parses the holder's fields with the rest of the body.
   */
  private tokens<T>(schema: z.ZodType<T>, response: ApiResponse): T {
    const context = { status: response.status, requestId: response.requestId, request: response.request };
    const found = tokenHolder(response.body);
    for (const { holder } of found) {
      for (const token of [holder.accessToken, holder.refreshToken])
        if (typeof token === 'string') registerSecret(token, { from: 'service' });
    }
    // Of one pair stated twice, keep the statement that has both tokens.
    const fullest = [...found].sort((a, b) => tokenCount(b.holder) - tokenCount(a.holder));
    const distinct = fullest.filter((c, i) => fullest.findIndex((o) => samePair(o.holder, c.holder)) === i);
    if (distinct.length > 1) {
      // Which pair the service meant cannot be told; keeping either could store a token it never issued for this user.
      const [a, b] = distinct.map((c) => (c.key === undefined ? 'accessToken' : `${c.key}.accessToken`));
      throw new ResponseValidationError(
        [{ path: a!, message: `a second, different token pair is at ${b!}; cannot tell which to keep` }],
        context,
      );
    }
    const nested = distinct[0]?.key;
    if (nested === undefined) return this.engine.parse(schema, response);
    const body = response.body as Record<string, unknown>;
    const holder = body[nested] as Record<string, unknown>;
    const { [nested]: _moved, ...rest } = body;
    try {
      return this.engine.parse(schema, { ...response, body: { ...rest, ...holder } });
    } catch (error) {
      if (!(error instanceof ResponseValidationError)) throw error;
      // Name the field where the service put it (`tokens.accessToken`), not where we moved it.
      const issues = error.issues.map((issue) => {
        const head = /^[^.[]+/.exec(issue.path)?.[0];
        return head !== undefined && head in holder ? { ...issue, path: `${nested}.${issue.path}` } : issue;
      });
      throw new ResponseValidationError(issues, context);
    }
  }
}

/**
 * Where a token reply keeps its tokens. Spec §4.1 shows nothing of these bodies beyond the
 * accessToken/refreshToken they produce, so they may sit at the top level or one level down
 * under any object property (`{"user": {…}, "tokens": {"accessToken", "refreshToken"}}`). Every
 * object holding either name is a candidate (`key` undefined: the body itself).
 */
function tokenHolder(body: unknown): { key: string | undefined; holder: Record<string, unknown> }[] {
  if (!isObject(body)) return [];
  const holds = (o: Record<string, unknown>) => 'accessToken' in o || 'refreshToken' in o;
  const found: { key: string | undefined; holder: Record<string, unknown> }[] = holds(body) ? [{ key: undefined, holder: body }] : [];
  for (const [key, value] of Object.entries(body)) if (isObject(value) && holds(value)) found.push({ key, holder: value });
  return found;
}

function tokenCount(holder: Record<string, unknown>): number {
  return (typeof holder.accessToken === 'string' ? 1 : 0) + (typeof holder.refreshToken === 'string' ? 1 : 0);
}

/** The same pair stated twice (a body repeating its tokens under `tokens`) is one candidate. */
function samePair(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return (
    a.accessToken === b.accessToken && (a.refreshToken === undefined || b.refreshToken === undefined || a.refreshToken === b.refreshToken)
  );
}

function tokenOp(tokenField: string): ErrorContextKind {
  return { kind: 'token', tokenField };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `token_expired` and the like say why; anything else is just "invalid". */
function reasonOfRefusal(code: string | undefined): string {
  const c = code?.toLowerCase() ?? '';
  if (c.includes('expired')) return 'expired';
  if (c.includes('revoked') || c.includes('blacklist') || c.includes('used')) return 'revoked';
  return 'invalid';
}
