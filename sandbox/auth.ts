import type { IncomingHttpHeaders } from 'node:http';
import { authError, companyMismatch, invalidRequest, permissionDenied } from './errors';
import type { Permission } from './schemas';
import { KEY_SERVICE_PREFIX, covers, type ApiKeyRecord, type SandboxState, type User } from './state';
import type { CredentialLabel } from './stats';
import type { TokenRecord } from './tokens';

/**
 * Who is calling and for which company: the rules of spec §5 and docs/assumptions.md ("Which
 * companies a credential sees"), shared by every bearer route.
 */

export type Principal = { kind: 'api_key'; key: ApiKeyRecord; creator: User } | { kind: 'user'; user: User; token: TokenRecord };

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function labelOf(principal: Principal): CredentialLabel {
  return principal.kind === 'api_key'
    ? { kind: 'api_key', prefix: principal.key.prefix, companyId: principal.key.companyId }
    : { kind: 'user', userId: principal.user.userId, externalId: principal.user.externalId };
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function authenticateBearer(state: SandboxState, headers: IncomingHttpHeaders): Principal {
  const authorization = header(headers, 'authorization');
  if (authorization === undefined || authorization === '') throw authError('missing_credentials', 'The Authorization header is missing.');
  const credential = BEARER.exec(authorization)?.[1];
  if (credential === undefined) throw authError('invalid_credentials', 'The Authorization header must be "Bearer <credential>".');
  if (credential.startsWith(`${state.spelling.keyServicePrefix}_`) || credential.startsWith(`${KEY_SERVICE_PREFIX}_`)) {
    const { record, creator } = state.authenticateApiKey(credential);
    return { kind: 'api_key', key: record, creator };
  }
  if (!state.tokens.looksLikeToken(credential))
    throw authError('invalid_credentials', 'The bearer credential is neither an API key nor a token.');
  const check = state.tokens.check(credential, 'access');
  if (!check.ok) {
    const code = check.reason === 'invalid' ? 'token_invalid' : check.reason === 'expired' ? 'token_expired' : 'token_revoked';
    throw authError(code, `The access token is ${check.reason === 'used' ? 'revoked' : check.reason}.`);
  }
  const user = state.user(check.record.userId);
  if (user.disabled) throw authError('user_disabled', "The token's user is disabled.");
  return { kind: 'user', user, token: check.record };
}

export function permissionsOf(principal: Principal): Permission[] {
  return principal.kind === 'api_key' ? principal.key.permissions : principal.user.permissions;
}

export function requirePermission(principal: Principal, needed: Permission): void {
  if (!covers(permissionsOf(principal), needed)) throw permissionDenied(needed);
}

/**
 * The company a request acts for. An API key always acts for its own company; a user token acts
 * for the company in `X-Company-Id`, else the one in the path, else the user's only company.
 */
export function actingCompany(principal: Principal, headers: IncomingHttpHeaders, pathCompany?: string): string {
  const named = header(headers, 'x-company-id');
  if (principal.kind === 'api_key') {
    const own = principal.key.companyId;
    if (named !== undefined && named !== own) throw companyMismatch('X-Company-Id');
    if (pathCompany !== undefined && pathCompany !== own) throw companyMismatch('company_pk');
    return own;
  }
  const mine = principal.user.companies;
  if (named !== undefined) {
    if (!mine.has(named)) throw companyMismatch('X-Company-Id');
    if (pathCompany !== undefined && pathCompany !== named) throw companyMismatch('company_pk');
    return named;
  }
  if (pathCompany !== undefined) {
    if (!mine.has(pathCompany)) throw companyMismatch('company_pk');
    return pathCompany;
  }
  if (mine.size === 1) return [...mine][0]!;
  throw invalidRequest(
    'X-Company-Id',
    mine.size === 0 ? 'The user has no company to act for.' : 'The user has several companies: send X-Company-Id.',
  );
}

/** Company ids in a request body (spec §5.1.4) must be the acting company's. */
export function checkBodyCompany(body: { companyId?: string | undefined; company?: string | undefined }, companyId: string): void {
  for (const field of ['companyId', 'company'] as const) {
    if (body[field] !== undefined && body[field] !== companyId) throw companyMismatch(field);
  }
}
