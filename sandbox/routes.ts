import type { IncomingHttpHeaders } from 'node:http';
import * as z from 'zod';
import { actingCompany, authenticateBearer, checkBodyCompany, labelOf, permissionsOf, requirePermission, type Principal } from './auth';
import { TOKEN_NOT_VALID, minimalApiKeyView, minimalCompanyView, minimalTaxReportView, type Dialect } from './dialect';
import { SandboxApiError, authError, fromZod, invalidGrant, notFound, permissionDenied } from './errors';
import { envelope, type ListSpec, type PageRequest } from './pagination';
import type { RateLimitConfig } from './rate-limit';
import * as wire from './schemas';
import { covers, type SandboxState } from './state';
import type { CredentialLabel, StatsRecorder } from './stats';
import { selectPage } from './transactions';
import { apiKeyView, categoryView, companyView, taxReportView, transactionView, type WireSettings } from './views';

/**
 * The API as the sandbox serves it: one table of routes. The server dispatches on it, the fault
 * registry validates route names against it, and the OpenAPI document is generated from it.
 */

export interface SandboxSettings extends WireSettings {
  rateLimit: RateLimitConfig | null;
  /** Real milliseconds added before each API request is handled. */
  latencyMs: number;
  maxPageSize: number;
  /** What a page size above `maxPageSize` gets: clamped to it, or refused (400 naming the parameter). */
  pageSizeAboveMax: 'clamp' | 'refuse';
  /** The shapes of the answers (sandbox/dialect.ts); the state and the rules are the same in both. */
  dialect: Dialect;
}

export interface RouteContext {
  url: URL;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  state: SandboxState;
  settings: SandboxSettings;
  stats: StatsRecorder;
  /** Set for list routes. */
  page: PageRequest | undefined;
  /** Set once a bearer credential is authenticated: `revoke_credential` needs it. */
  principal: Principal | undefined;
  identify(label: CredentialLabel): void;
}

export interface RouteResult {
  status: number;
  body?: unknown;
}

export interface QueryParamDoc {
  name: string;
  schema: z.ZodType;
  description: string;
}

export interface RouteDef {
  method: 'GET' | 'POST' | 'DELETE';
  /** Relative to `/api/v1`, trailing slash included, `{name}` for a path parameter. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  auth: 'institution' | 'bearer';
  permission?: wire.Permission;
  list?: ListSpec;
  query?: QueryParamDoc[];
  requestBody?: z.ZodType;
  success: { status: number; schema?: z.ZodType; description: string };
  errors: number[];
  handle(ctx: RouteContext): RouteResult;
  /** Inserts records that sort before every other: the `result_set_change` fault. */
  shift?(ctx: RouteContext, count: number): void;
}

export const routeKey = (r: Pick<RouteDef, 'method' | 'path'>) => `${r.method} ${r.path}`;

function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SandboxApiError(400, 'validation_error', 'invalid_request', 'The body must be a JSON object.', { param: 'body' });
  }
  const result = schema.safeParse(body);
  if (!result.success) throw fromZod(result.error);
  return result.data;
}

const dateParam = z.iso.date();

function dateQuery(query: URLSearchParams, name: string): string | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const result = dateParam.safeParse(raw);
  if (!result.success) throw fromZod(result.error, name);
  return raw;
}

/**
 * The transaction filter of a request, both ends inclusive. The minimal dialect reads `date_to` as
 * exclusive (the spec does not say; docs/assumptions.md, "The minimal dialect"): its last day is the
 * one before, so equal ends select nothing.
 */
function dateFilter(ctx: RouteContext, dateFrom: string | undefined, dateTo: string | undefined): { dateFrom?: string; dateTo?: string } {
  if (dateTo === undefined || ctx.settings.dialect !== 'minimal') return { dateFrom, dateTo };
  return { dateFrom, dateTo: new Date(Date.parse(`${dateTo}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10) };
}

/**
 * The credential check that comes before anything else about a request (body, page size, method):
 * an anonymous caller learns nothing but 401. Bearer routes keep the principal on the context.
 */
export function authenticateRequest(
  auth: RouteDef['auth'],
  state: SandboxState,
  headers: IncomingHttpHeaders,
): { principal: Principal | undefined; label: CredentialLabel } {
  if (auth === 'institution') {
    const found = state.authenticateInstitution(headers['institution'] as string | undefined);
    return { principal: undefined, label: { kind: 'institution', institutionId: found.id } };
  }
  const principal = authenticateBearer(state, headers);
  return { principal, label: labelOf(principal) };
}

const minimal = (ctx: RouteContext) => ctx.settings.dialect === 'minimal';

function institution(ctx: RouteContext) {
  const found = ctx.state.authenticateInstitution(ctx.headers['institution'] as string | undefined);
  ctx.identify({ kind: 'institution', institutionId: found.id });
  return found;
}

/** Authenticates, resolves the acting company and checks the permission, in that order. */
function bearer(
  ctx: RouteContext,
  permission: wire.Permission | undefined,
  pathCompany?: string,
): { principal: Principal; companyId: string } {
  const principal = ctx.principal ?? authenticateBearer(ctx.state, ctx.headers);
  ctx.principal = principal;
  ctx.identify(labelOf(principal));
  const companyId = actingCompany(principal, ctx.headers, pathCompany);
  if (permission) requirePermission(principal, permission);
  return { principal, companyId };
}

function list<T>(ctx: RouteContext, count: number, results: T[]): RouteResult {
  const body = envelope(results, count, ctx.page!, ctx.url);
  // The spec does not show the fields' order; the minimal dialect sends `results` first, so a
  // client that reads `next` from a body's first bytes meets a service where it cannot.
  if (minimal(ctx)) return { status: 200, body: { results: body.results, count: body.count, next: body.next, previous: body.previous } };
  return { status: 200, body };
}

function page<T>(ctx: RouteContext, items: readonly T[]): T[] {
  const { offset, pageSize } = ctx.page!;
  return items.slice(offset, offset + pageSize);
}

const INSTITUTION_ERRORS = [400, 401, 429, 500, 502, 503];
const BEARER_ERRORS = [400, 401, 403, 429, 500, 502, 503];
const LIST_ERRORS = [...BEARER_ERRORS, 404];

export const routes: RouteDef[] = [
  {
    method: 'POST',
    path: '/institution/users/create/',
    operationId: 'createUser',
    summary: 'Registers a user of the institution and returns its first token pair.',
    tag: 'institution',
    auth: 'institution',
    requestBody: wire.createUserBodySchema,
    success: { status: 201, schema: wire.createUserResponseSchema, description: 'The user and its tokens.' },
    errors: [...INSTITUTION_ERRORS, 409],
    handle(ctx) {
      const inst = institution(ctx);
      const body = parseBody(wire.createUserBodySchema, ctx.body);
      const user = ctx.state.createUser({
        username: body.username,
        email: body.email,
        externalId: body.external_id,
        institutionId: inst.id,
      });
      ctx.stats.userCreated();
      const pair = ctx.state.issueTokens(user);
      // The spec promises an accessToken and nothing else: no user, no refresh token (retrieve gets a pair).
      if (minimal(ctx)) return { status: 201, body: { accessToken: pair.accessToken } };
      return {
        status: 201,
        body: {
          user: { username: user.username, email: user.email, external_id: body.external_id },
          accessToken: pair.accessToken,
          refreshToken: pair.refreshToken,
          expiresIn: pair.expiresIn,
        },
      };
    },
  },
  {
    method: 'POST',
    path: '/institution/users/token/refresh/',
    operationId: 'refreshToken',
    summary: 'Exchanges a refresh token for a new pair. The refresh token rotates: the one sent is dead afterwards.',
    tag: 'institution',
    auth: 'institution',
    requestBody: wire.refreshBodySchema,
    success: { status: 200, schema: wire.tokenPairSchema, description: 'A new token pair.' },
    errors: INSTITUTION_ERRORS,
    handle(ctx) {
      const inst = institution(ctx);
      const body = parseBody(wire.refreshBodySchema, ctx.body);
      const check = ctx.state.tokens.check(body.refresh, 'refresh');
      if (!check.ok && check.reason === 'invalid') throw invalidGrant('refresh_token_invalid', 'The refresh token is not valid.');
      if (check.record.institutionId !== inst.id) throw invalidGrant('refresh_token_invalid', 'The refresh token is not valid.');
      const user = ctx.state.user(check.record.userId);
      if (!check.ok) {
        ctx.stats.refreshRefused(user.externalId);
        // Reuse of a rotated refresh token means two holders: kill the whole family (OAuth 2.0 Security BCP).
        if (check.reason === 'used') ctx.state.tokens.revokeFamily(user.userId, check.record.family);
        throw invalidGrant(`refresh_token_${check.reason}`, `The refresh token is ${check.reason}.`);
      }
      if (user.disabled) {
        ctx.stats.refreshRefused(user.externalId);
        throw invalidGrant('refresh_token_revoked', "The token's user is disabled.");
      }
      if (minimal(ctx)) {
        // No rotation: the refresh token sent stays valid until it expires or is expired; only an access token comes back.
        const access = ctx.state.tokens.issueAccess(
          { userId: user.userId, institutionId: inst.id, subject: user.externalId ?? user.userId },
          check.record.family,
        );
        ctx.stats.refreshed(user.externalId);
        return { status: 200, body: { accessToken: access.accessToken } };
      }
      ctx.state.tokens.markUsed(check.record);
      const pair = ctx.state.tokens.issuePair(
        { userId: user.userId, institutionId: inst.id, subject: user.externalId ?? user.userId },
        check.record.family,
      );
      ctx.stats.refreshed(user.externalId);
      return { status: 200, body: { accessToken: pair.accessToken, refreshToken: pair.refreshToken, expiresIn: pair.expiresIn } };
    },
  },
  {
    method: 'POST',
    path: '/institution/users/token/verify/',
    operationId: 'verifyToken',
    summary: 'Says whether an access or refresh token is valid, and why not.',
    tag: 'institution',
    auth: 'institution',
    requestBody: wire.verifyBodySchema,
    success: { status: 200, schema: wire.verifyResponseSchema, description: 'The verdict.' },
    errors: INSTITUTION_ERRORS,
    handle(ctx) {
      const inst = institution(ctx);
      const body = parseBody(wire.verifyBodySchema, ctx.body);
      if (minimal(ctx)) return verifyMinimal(ctx, inst.id, body.token);
      let check = ctx.state.tokens.check(body.token, 'access');
      if (!check.ok && check.reason === 'invalid') check = ctx.state.tokens.check(body.token, 'refresh');
      if (!check.ok && check.reason === 'invalid') return { status: 200, body: { valid: false, reason: 'invalid' } };
      if (check.record.institutionId !== inst.id) return { status: 200, body: { valid: false, reason: 'invalid' } };
      if (!check.ok) return { status: 200, body: { valid: false, reason: check.reason === 'expired' ? 'expired' : 'revoked' } };
      if (ctx.state.user(check.record.userId).disabled) return { status: 200, body: { valid: false, reason: 'revoked' } };
      return { status: 200, body: { valid: true, expiresAt: new Date(check.record.expiresAt).toISOString() } };
    },
  },
  {
    method: 'POST',
    path: '/institution/users/token/expire/',
    operationId: 'expireToken',
    summary: "Revokes every access and refresh token of the refresh token's user. Idempotent.",
    tag: 'institution',
    auth: 'institution',
    requestBody: wire.expireBodySchema,
    success: { status: 200, schema: wire.expireResponseSchema, description: 'The tokens are dead.' },
    errors: INSTITUTION_ERRORS,
    handle(ctx) {
      const inst = institution(ctx);
      const body = parseBody(wire.expireBodySchema, ctx.body);
      const check = ctx.state.tokens.check(body.refresh, 'refresh');
      if ((!check.ok && check.reason === 'invalid') || check.record.institutionId !== inst.id) {
        throw invalidGrant('refresh_token_invalid', 'The service never issued this refresh token.');
      }
      ctx.state.tokens.revokeUser(check.record.userId);
      // Minimal: 200 with an empty body. A known token that is already dead expires again (idempotent).
      return minimal(ctx) ? { status: 200 } : { status: 200, body: { expired: true } };
    },
  },
  {
    method: 'POST',
    path: '/institution/users/token/retrieve/',
    operationId: 'retrieveTokens',
    summary: "Issues a new token pair for a user matching all three fields; the user's earlier tokens stay valid.",
    tag: 'institution',
    auth: 'institution',
    requestBody: wire.retrieveBodySchema,
    success: { status: 200, schema: wire.tokenPairSchema, description: 'A new token pair.' },
    errors: [...INSTITUTION_ERRORS, 404],
    handle(ctx) {
      const inst = institution(ctx);
      const body = parseBody(wire.retrieveBodySchema, ctx.body);
      const user = ctx.state.findInstitutionUser(inst.id, { username: body.username, email: body.email, externalId: body.external_id });
      if (!user) throw notFound('No user matches username, external_id and email.');
      if (user.disabled) throw authError('user_disabled', 'The user is disabled.');
      const pair = ctx.state.issueTokens(user);
      ctx.stats.retrieved(user.externalId);
      if (minimal(ctx)) return { status: 200, body: { accessToken: pair.accessToken, refreshToken: pair.refreshToken } };
      return { status: 200, body: { accessToken: pair.accessToken, refreshToken: pair.refreshToken, expiresIn: pair.expiresIn } };
    },
  },
  {
    method: 'GET',
    path: '/companies/',
    operationId: 'listCompanies',
    summary: "The API key's company, or the companies of the token's user (only the X-Company-Id one when sent).",
    tag: 'companies',
    auth: 'bearer',
    list: { pageSizeParam: 'page_size', defaultPageSize: 10 },
    success: { status: 200, schema: wire.companyListSchema, description: 'A page of companies.' },
    errors: LIST_ERRORS,
    handle(ctx) {
      const principal = ctx.principal ?? authenticateBearer(ctx.state, ctx.headers);
      ctx.principal = principal;
      ctx.identify(labelOf(principal));
      // Minimal: an API key gets "the company the key belongs to" (spec §4.2) as the object itself.
      // A user token may reach several companies, so it still gets a list (of the renamed view).
      if (minimal(ctx) && principal.kind === 'api_key') {
        return { status: 200, body: minimalCompanyView(ctx.state.company(actingCompany(principal, ctx.headers))) };
      }
      const ids =
        principal.kind === 'api_key' || ctx.headers['x-company-id'] !== undefined
          ? [actingCompany(principal, ctx.headers)]
          : [...principal.user.companies].sort();
      const view = minimal(ctx) ? minimalCompanyView : companyView;
      const companies = ids.map((id) => view(ctx.state.company(id)));
      return list(ctx, companies.length, page(ctx, companies));
    },
  },
  {
    method: 'GET',
    path: '/companies/{company_pk}/taxes/reports/',
    operationId: 'listTaxReports',
    summary: 'Tax reports of the company, identified by pk.',
    tag: 'companies',
    auth: 'bearer',
    permission: 'read_tax_reports',
    list: { pageSizeParam: 'page_size', defaultPageSize: 20 },
    success: { status: 200, schema: wire.taxReportListSchema, description: 'A page of tax reports.' },
    errors: LIST_ERRORS,
    handle(ctx) {
      const { companyId } = bearer(ctx, 'read_tax_reports', ctx.params.company_pk);
      const reports = ctx.state.taxReportsOf(companyId);
      return list(
        ctx,
        reports.length,
        page(ctx, reports).map((r) => (minimal(ctx) ? minimalTaxReportView(r, ctx.settings) : taxReportView(r, ctx.settings))),
      );
    },
    shift(ctx, count) {
      const companyId = ctx.principal && actingCompany(ctx.principal, ctx.headers, ctx.params.company_pk);
      for (let i = 0; i < count && companyId; i++) {
        ctx.state.addTaxReport(companyId, { pk: ctx.state.phantomId(), periodStart: '2000-01-01', periodEnd: '2000-01-31' });
      }
    },
  },
  {
    method: 'GET',
    path: '/accounting/transactions/',
    operationId: 'listTransactions',
    summary: 'Transactions of the company, ordered by valueDate (as an instant) then publicId.',
    tag: 'accounting',
    auth: 'bearer',
    permission: 'read_transactions',
    list: { pageSizeParam: 'page_size', defaultPageSize: 100 },
    query: [
      { name: 'date_from', schema: z.iso.date(), description: 'Inclusive; compares the date of valueDate as written in its own offset.' },
      { name: 'date_to', schema: z.iso.date(), description: 'Inclusive; compares the date of valueDate as written in its own offset.' },
    ],
    success: { status: 200, schema: wire.transactionListSchema, description: 'A page of transactions.' },
    errors: LIST_ERRORS,
    handle(ctx) {
      const { companyId } = bearer(ctx, 'read_transactions');
      const filter = dateFilter(ctx, dateQuery(ctx.query, 'date_from'), dateQuery(ctx.query, 'date_to'));
      const sources = ctx.state.transactionSources(companyId, filter);
      const count = sources.reduce((n, s) => n + s.size, 0);
      const { offset, pageSize } = ctx.page!;
      return list(
        ctx,
        count,
        selectPage(sources, offset, pageSize).map((t) => transactionView(t, ctx.settings)),
      );
    },
    shift(ctx, count) {
      if (!ctx.principal) return;
      const companyId = actingCompany(ctx.principal, ctx.headers);
      const filter = dateFilter(ctx, ctx.query.get('date_from') ?? undefined, ctx.query.get('date_to') ?? undefined);
      const first = selectPage(ctx.state.transactionSources(companyId, filter), 0, 1)[0];
      const day = filter.dateFrom ?? first?.localDate ?? new Date(ctx.state.clock.now()).toISOString().slice(0, 10);
      // The earliest instant any record of that local date can have: it sorts before all of them.
      for (let i = 0; i < count; i++) {
        ctx.state.addTransaction(companyId, {
          publicId: ctx.state.phantomId(),
          amount: -100n,
          valueDate: `${day}T00:00:00.000+14:00`,
          description: 'Inserted between pages',
        });
      }
    },
  },
  {
    method: 'GET',
    path: '/accounting/categories/',
    operationId: 'listCategories',
    summary: 'Categories of the company, ordered by publicId.',
    tag: 'accounting',
    auth: 'bearer',
    permission: 'read_categories',
    list: { pageSizeParam: 'pageSize', defaultPageSize: 50 },
    success: { status: 200, schema: wire.categoryListSchema, description: 'A page of categories.' },
    errors: LIST_ERRORS,
    handle(ctx) {
      const { companyId } = bearer(ctx, 'read_categories');
      const categories = ctx.state.categoriesOf(companyId);
      return list(
        ctx,
        categories.length,
        page(ctx, categories).map((c) => categoryView(c, ctx.settings)),
      );
    },
    shift(ctx, count) {
      if (!ctx.principal) return;
      const companyId = actingCompany(ctx.principal, ctx.headers);
      for (let i = 0; i < count; i++) ctx.state.addCategory(companyId, { publicId: ctx.state.phantomId(), name: 'Inserted between pages' });
    },
  },
  {
    method: 'GET',
    path: '/api-keys/',
    operationId: 'listApiKeys',
    summary: "API keys of the credential's company: prefix, permissions and last use, never the key.",
    tag: 'api-keys',
    auth: 'bearer',
    permission: 'manage_api_keys',
    list: { pageSizeParam: 'page_size', defaultPageSize: 25 },
    success: { status: 200, schema: wire.apiKeyListSchema, description: 'A page of API keys.' },
    errors: LIST_ERRORS,
    handle(ctx) {
      const { companyId } = bearer(ctx, 'manage_api_keys');
      const keys = ctx.state.apiKeysOf(companyId);
      return list(
        ctx,
        keys.length,
        page(ctx, keys).map((k) => (minimal(ctx) ? minimalApiKeyView(apiKeyView(k)) : apiKeyView(k))),
      );
    },
  },
  {
    method: 'POST',
    path: '/api-keys/',
    operationId: 'createApiKey',
    summary: 'Creates a key for the credential company; the full key is in this response only.',
    tag: 'api-keys',
    auth: 'bearer',
    permission: 'manage_api_keys',
    requestBody: wire.createApiKeyBodySchema,
    success: { status: 201, schema: wire.apiKeyCreatedSchema, description: 'The new key, shown once.' },
    errors: BEARER_ERRORS,
    handle(ctx) {
      const { principal, companyId } = bearer(ctx, 'manage_api_keys');
      const body = parseBody(wire.createApiKeyBodySchema, ctx.body);
      checkBodyCompany(body, companyId);
      // A key-holder cannot mint a key stronger than itself, nor than the key's creator.
      const missing = body.permissions.find((p) => !covers(permissionsOf(principal), p));
      if (missing) throw permissionDenied(missing);
      const { record, key } = ctx.state.createApiKey({
        companyId,
        creatorUserId: principal.kind === 'api_key' ? principal.creator.userId : principal.user.userId,
        name: body.name,
        permissions: body.permissions,
        expiresAt: body.expiresAt === undefined ? null : Date.parse(body.expiresAt),
      });
      return { status: 201, body: { ...(minimal(ctx) ? minimalApiKeyView(apiKeyView(record)) : apiKeyView(record)), key } };
    },
  },
  {
    method: 'DELETE',
    path: '/api-keys/{publicId}/',
    operationId: 'revokeApiKey',
    summary: 'Revokes a key of the credential company. Revoking a revoked key is 204 too.',
    tag: 'api-keys',
    auth: 'bearer',
    permission: 'manage_api_keys',
    success: { status: 204, description: 'Revoked.' },
    errors: [...BEARER_ERRORS, 400, 404],
    handle(ctx) {
      const { principal, companyId } = bearer(ctx, 'manage_api_keys');
      // Whether a key may revoke itself the spec does not say: the default dialect lets it, the
      // minimal one refuses (docs/assumptions.md), so a caller relying on either is found out.
      if (minimal(ctx) && principal.kind === 'api_key' && principal.key.publicId === ctx.params.publicId)
        throw new SandboxApiError(400, 'validation_error', 'invalid_request', 'A key cannot revoke itself.', { param: 'publicId' });
      ctx.state.revokeApiKey(ctx.params.publicId!, companyId);
      return { status: 204 };
    },
  },
];

/** simplejwt's TokenVerifyView: `200 {}` for a good token, 401 `token_not_valid` for any other. */
function verifyMinimal(ctx: RouteContext, institutionId: string, token: string): RouteResult {
  let check = ctx.state.tokens.check(token, 'access');
  if (!check.ok && check.reason === 'invalid') check = ctx.state.tokens.check(token, 'refresh');
  const good = check.ok && check.record.institutionId === institutionId && !ctx.state.user(check.record.userId).disabled;
  if (!good) throw new SandboxApiError(401, 'invalid_grant', 'token_not_valid', TOKEN_NOT_VALID.detail);
  return { status: 200, body: {} };
}

export const routeKeys: ReadonlySet<string> = new Set(routes.map(routeKey));

const compiled = routes.map((route) => {
  const names: string[] = [];
  const pattern = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { route, names, regex: new RegExp(`^${pattern}$`) };
});

/** The methods a path relative to `/api/v1` has (empty when the API has no such path): for 405 and `Allow`. */
export function routesAt(path: string): RouteDef[] {
  return compiled.filter(({ regex }) => regex.test(path)).map(({ route }) => route);
}

/** The route for a method and a path relative to `/api/v1`, matched exactly (trailing slash included). */
export function matchRoute(method: string, path: string): { route: RouteDef; params: Record<string, string> } | undefined {
  for (const { route, names, regex } of compiled) {
    if (route.method !== method) continue;
    const match = regex.exec(path);
    if (!match) continue;
    const params: Record<string, string> = {};
    try {
      names.forEach((name, i) => (params[name] = decodeURIComponent(match[i + 1]!)));
    } catch {
      return undefined; // a malformed %-escape names nothing
    }
    return { route, params };
  }
  return undefined;
}
