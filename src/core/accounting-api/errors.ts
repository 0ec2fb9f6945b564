import type * as z from 'zod';
import { AcctopsError, type FieldIssue, issuesFromZod } from '../shared/errors';
import { hasSecretShape, isShortIdentifier, redactString } from '../shared/redact';
import { transportCause, type TransportFailure, type TransportResponse } from './transport';

/**
 * Every error the client raises. One base class, one factory (`errorFromResponse`) that maps a
 * response to a subclass, and a message that never holds a secret: it names the request by
 * method and path only (see `describeRequest`), and the whole message passes `redactString`.
 */

export interface AccountingApiErrorOptions {
  status?: number;
  /** `X-Request-Id` of the response, or `error.requestId` of the envelope. */
  requestId?: string;
  /** Redacted description of the request, e.g. `GET /api/v1/accounting/transactions/?page=2`. */
  request?: string;
  /** `error.type` and `error.code` of the envelope (docs/assumptions.md), when there was one. */
  apiType?: string;
  apiCode?: string;
  /** The service's own message, already scrubbed. */
  serverMessage?: string;
  param?: string;
  permission?: string;
  retryAfterMs?: number;
  /** Overrides the class's default `ambiguous` (a connection that was never made is not). */
  ambiguous?: boolean;
  cause?: unknown;
}

export class AccountingApiError extends AcctopsError {
  override readonly name: string = 'AccountingApiError';
  /** Our stable code for the class (`AcctopsError.code`); the service's code is `apiCode`. */
  static readonly errorCode: string = 'unexpected_response';
  protected static readonly summary: string = 'unexpected response from the Accounting API';
  /**
   * True when the service may have acted on the request although we saw no success (timeouts,
   * broken connections, 5xx). A non-idempotent operation that failed ambiguously must be
   * reconciled (a token refresh through retrieve), never blindly repeated.
   */
  static readonly ambiguous: boolean = false;

  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly request: string | undefined;
  readonly apiType: string | undefined;
  readonly apiCode: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly ambiguous: boolean;

  constructor(detail: string | undefined, options: AccountingApiErrorOptions = {}) {
    const cls = new.target as unknown as typeof AccountingApiError;
    super(composeMessage(cls.summary, detail, options), { code: cls.errorCode, cause: options.cause });
    this.status = options.status;
    this.requestId = options.requestId;
    this.request = options.request;
    this.apiType = options.apiType;
    this.apiCode = options.apiCode;
    this.retryAfterMs = options.retryAfterMs;
    this.ambiguous = options.ambiguous ?? cls.ambiguous;
  }
}

function composeMessage(summary: string, detail: string | undefined, o: AccountingApiErrorOptions): string {
  const facts = [
    o.status === undefined ? undefined : String(o.status),
    o.apiCode,
    o.request === undefined ? undefined : `on ${o.request}`,
    o.requestId === undefined ? undefined : `request id ${o.requestId}`,
  ].filter((f) => f !== undefined);
  const tail = [detail, o.serverMessage].filter((t) => t !== undefined && t !== '').join(': ');
  return redactString(`${summary}${facts.length ? ` (${facts.join(', ')})` : ''}${tail ? `: ${tail}` : ''}`);
}

// ---- 401 and the credential ----

export class AuthenticationError extends AccountingApiError {
  override readonly name: string = 'AuthenticationError';
  static override readonly errorCode: string = 'authentication_failed';
  protected static override readonly summary: string = 'authentication failed';
}
export class KeyExpiredError extends AuthenticationError {
  override readonly name: string = 'KeyExpiredError';
  static override readonly errorCode = 'key_expired';
  protected static override readonly summary = 'API key expired';
}
export class KeyRevokedError extends AuthenticationError {
  override readonly name: string = 'KeyRevokedError';
  static override readonly errorCode = 'key_revoked';
  protected static override readonly summary = 'API key revoked';
}
export class CreatorDisabledError extends AuthenticationError {
  override readonly name: string = 'CreatorDisabledError';
  static override readonly errorCode = 'creator_disabled';
  protected static override readonly summary = "API key's creator is disabled";
}
export class CompanyAccessRemovedError extends AuthenticationError {
  override readonly name: string = 'CompanyAccessRemovedError';
  static override readonly errorCode = 'company_access_removed';
  protected static override readonly summary = "API key's creator lost access to the company";
}
export class TokenExpiredError extends AuthenticationError {
  override readonly name: string = 'TokenExpiredError';
  static override readonly errorCode = 'token_expired';
  protected static override readonly summary = 'access token expired';
}
export class TokenRevokedError extends AuthenticationError {
  override readonly name: string = 'TokenRevokedError';
  static override readonly errorCode = 'token_revoked';
  protected static override readonly summary = 'access token revoked';
}

/** Refused before sending: the key does not have the form `<prefix>_<rest>`. Never holds the key. */
export class MalformedApiKeyError extends AccountingApiError {
  override readonly name: string = 'MalformedApiKeyError';
  static override readonly errorCode = 'malformed_api_key';
  protected static override readonly summary = 'API key is malformed (expected <prefix>_<rest>); nothing was sent';
}

/** OAuth 2.0 `invalid_grant` (RFC 6749 §5.2), whatever the status: the refresh token is dead. */
export class InvalidGrantError extends AccountingApiError {
  override readonly name: string = 'InvalidGrantError';
  static override readonly errorCode = 'invalid_grant';
  protected static override readonly summary = 'refresh token rejected (invalid_grant)';
}

// ---- 403, 404, 409, 400 ----

export class PermissionDeniedError extends AccountingApiError {
  override readonly name: string = 'PermissionDeniedError';
  static override readonly errorCode = 'permission_denied';
  protected static override readonly summary = 'permission denied';
  /** The missing permission, when the service names it. */
  readonly permission: string | undefined;
  constructor(detail: string | undefined, options: AccountingApiErrorOptions = {}) {
    super(detail ?? (options.permission ? `needs ${options.permission}` : undefined), options);
    this.permission = options.permission;
  }
}

/**
 * A company id that differs from the credential's company. Raised by the service (403), or by
 * the client before sending (then `status` is undefined). `param` names where it was:
 * `company_pk`, `X-Company-Id`, `companyId` or `company`.
 */
export class CompanyMismatchError extends AccountingApiError {
  override readonly name: string = 'CompanyMismatchError';
  static override readonly errorCode = 'company_mismatch';
  protected static override readonly summary = "company differs from the credential's company";
  readonly param: string | undefined;
  constructor(detail: string | undefined, options: AccountingApiErrorOptions = {}) {
    super(detail ?? (options.param ? `in ${options.param}` : undefined), options);
    this.param = options.param;
  }
}

export class NotFoundError extends AccountingApiError {
  override readonly name: string = 'NotFoundError';
  static override readonly errorCode = 'not_found';
  protected static override readonly summary = 'not found';
}

/** 409: a state that prevents the change (deletion, verification), or a duplicate. */
export class ConflictError extends AccountingApiError {
  override readonly name: string = 'ConflictError';
  static override readonly errorCode: string = 'conflict';
  protected static override readonly summary: string = 'conflict';
}
export class UserExistsError extends ConflictError {
  override readonly name: string = 'UserExistsError';
  static override readonly errorCode = 'user_exists';
  protected static override readonly summary = 'user already exists';
}

/** 400: the service refused the body or the query; `param` names the field when known. */
export class ApiValidationError extends AccountingApiError {
  override readonly name: string = 'ApiValidationError';
  static override readonly errorCode = 'invalid_request';
  protected static override readonly summary = 'request refused as invalid';
  readonly param: string | undefined;
  constructor(detail: string | undefined, options: AccountingApiErrorOptions = {}) {
    super(detail ?? (options.param ? `field ${options.param}` : undefined), options);
    this.param = options.param;
  }
}

// ---- transient ----

export class RateLimitError extends AccountingApiError {
  override readonly name: string = 'RateLimitError';
  static override readonly errorCode = 'rate_limited';
  protected static override readonly summary = 'rate limited';
}

export class ServerError extends AccountingApiError {
  override readonly name: string = 'ServerError';
  static override readonly errorCode = 'server_error';
  protected static override readonly summary = 'server error';
  static override readonly ambiguous: boolean = true;
}

/** No HTTP answer. `ambiguous` is false only when the connection was never made. */
export class ConnectionError extends AccountingApiError {
  override readonly name: string = 'ConnectionError';
  static override readonly errorCode = 'connection_failed';
  protected static override readonly summary = 'connection failed';
  static override readonly ambiguous: boolean = true;
  /**
   * True when no retry of the client's can succeed: a TLS handshake refused for the server's
   * certificate, for want of a common protocol, or because the server does not speak TLS, and a
   * URL refused before connecting (`TransportFailure.final`). The client raises it after one attempt; a later run, once the URL
   * or the certificate is fixed, can still succeed, so callers that schedule work again (a queue's
   * redelivery) may.
   */
  readonly final: boolean;
  constructor(detail: string | undefined, options: AccountingApiErrorOptions & { final?: boolean } = {}) {
    super(detail, options);
    this.final = options.final ?? false;
  }
}

/** No complete answer within the timeout; the service may have acted (`ambiguous` is true). */
export class TimeoutError extends AccountingApiError {
  override readonly name: string = 'TimeoutError';
  static override readonly errorCode = 'timeout';
  protected static override readonly summary = 'request timed out';
  static override readonly ambiguous: boolean = true;
}

// ---- the client's own checks ----

/**
 * A success response that does not match the schema. Names each bad field by path, never its
 * value. Ambiguous: the service did act (a refresh rotated the token), we cannot read the result.
 */
export class ResponseValidationError extends AccountingApiError {
  override readonly name: string = 'ResponseValidationError';
  static override readonly errorCode = 'response_invalid';
  protected static override readonly summary = 'response failed validation';
  static override readonly ambiguous: boolean = true;
  readonly issues: FieldIssue[];
  constructor(issues: FieldIssue[], options: AccountingApiErrorOptions = {}) {
    super(issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; '), options);
    this.issues = issues;
  }
  /** The first offending field, e.g. `results[3].amount`. */
  get field(): string {
    return this.issues[0]?.path ?? '';
  }
}

/**
 * A zod failure on a response as a ResponseValidationError. `prefix` places the issue in the
 * body (`results[3]`). Messages of our own refinements are kept: they never quote the value.
 */
export function responseValidationError(error: z.ZodError, prefix: string, options: AccountingApiErrorOptions): ResponseValidationError {
  const issues = issuesFromZod(error, prefix).map((issue, i) => {
    const source = error.issues[i];
    if (source?.code === 'custom') return { ...issue, message: source.message };
    if (source?.code === 'invalid_union') {
      // Say what would have been accepted (an amount: a number or a string), not "invalid union".
      const expected = [...new Set(source.errors.flat().flatMap((e) => (e.code === 'invalid_type' ? [e.expected] : [])))];
      if (expected.length) return { ...issue, message: `expected ${expected.join(' or ')}` };
    }
    return issue;
  });
  return new ResponseValidationError(issues, options);
}

/**
 * - `foreign_next`: `next` leaves the base URL's path or carries user info (another origin under the
 *   path is requested on the base origin instead: decision 108); `next_loop`: `next` points to a page
 *   already read (on the base origin);
 * - `invalid_next`: `next` is not a URL;
 * - `too_many_pages`: more pages than the lists's `count` and page size allow, with a margin
 *   (an endless `page=N+1` chain).
 */
export type PaginationFailure = 'foreign_next' | 'next_loop' | 'invalid_next' | 'too_many_pages';

export class PaginationError extends AccountingApiError {
  override readonly name: string = 'PaginationError';
  static override readonly errorCode = 'pagination_failed';
  protected static override readonly summary = 'pagination stopped';
  readonly reason: PaginationFailure;
  constructor(reason: PaginationFailure, detail: string, options: AccountingApiErrorOptions = {}) {
    super(`${reason}: ${detail}`, options);
    this.reason = reason;
  }
}

/**
 * A response body longer than the client's `maxResponseBytes`: the transport stopped reading at
 * the limit. Ambiguous, as any answer we could not read: the service may have acted. Never
 * retried: the same request would get the same body.
 */
export class ResponseTooLargeError extends AccountingApiError {
  override readonly name: string = 'ResponseTooLargeError';
  static override readonly errorCode = 'response_too_large';
  protected static override readonly summary = 'response body too large';
  static override readonly ambiguous: boolean = true;
  readonly limitBytes: number | undefined;
  constructor(detail: string | undefined, options: AccountingApiErrorOptions & { limitBytes?: number } = {}) {
    super(
      detail ?? (options.limitBytes === undefined ? undefined : `more than ${options.limitBytes} bytes; reading stopped there`),
      options,
    );
    this.limitBytes = options.limitBytes;
  }
}

// ---- Retry-After ----

/**
 * `Retry-After` as milliseconds from `now`: whole (or decimal) seconds, or an HTTP date.
 * Undefined when absent or unreadable, so that the caller falls back to its own backoff.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  // Every HTTP date format starts with a day name; Date.parse alone would take "-3" for a year.
  const date = /^[A-Za-z]{3}/.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

// ---- describing a request without its secrets ----

/** Query parameters whose values are safe to show; any other value is replaced. */
const SAFE_QUERY = new Set(['page', 'page_size', 'pageSize', 'date_from', 'date_to']);

/** `GET /api/v1/accounting/transactions/?date_from=2026-10-01&page=2`: method, path, safe query. */
export function describeRequest(method: string, url: URL): string {
  const query: string[] = [];
  url.searchParams.forEach((value, name) => {
    query.push(`${encodeURIComponent(name)}=${SAFE_QUERY.has(name) ? encodeURIComponent(value) : '[REDACTED]'}`);
  });
  return redactString(`${method} ${url.pathname}${query.length ? `?${query.join('&')}` : ''}`);
}

/**
 * Text from the service goes into messages only after this: the service could echo a key that was
 * never registered with `registerSecret`, and redactString cuts anything shaped like a key to its
 * prefix. Cut to 300 characters after redaction, so that the cut cannot leave a key's head too
 * short for the key rule to recognise; and the word the first cut (1000, which bounds the
 * redactor's work) goes through is dropped whole, since redaction earlier in the text can shrink
 * it enough to bring that word's head, as short, under 300.
 */
function scrubServerText(text: string): string {
  const bounded = text.length > 1000 ? text.slice(0, 1000).replace(/[^\s"'`,;:()[\]{}<>]*$/, '') : text;
  return redactString(bounded).slice(0, 300);
}

/** What a field of the service's error shows in place of a value that may be a secret. */
export const WITHHELD = '[REDACTED]';

const REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:/+=-]{0,127}$/;
const PARAM = /^[A-Za-z_][A-Za-z0-9_.[\]-]{0,127}$/;

/**
 * The service's identifiers of an error (`code`, `type`, `permission`) are kept as they are only
 * when they are short identifiers (`isShortIdentifier`, the rule a token record's `lastErrorCode`
 * is held to): they go into messages, the CLI's --json, log lines and events, and a service or a
 * proxy could put anything there, a key it echoes included. Anything else is WITHHELD, not
 * dropped: a 401 whose code was withheld is still one the service explained (isInstitutionRefusal).
 */
function serviceCode(value: string | undefined): string | undefined {
  return value === undefined || (isShortIdentifier(value) && !hasSecretShape(value)) ? value : WITHHELD;
}

/** A field path (`items[1].rate`, `date_from`) without a secret's shape, else WITHHELD. */
function serviceParam(value: string | undefined): string | undefined {
  return value === undefined || (PARAM.test(value) && !hasSecretShape(value)) ? value : WITHHELD;
}

/**
 * The service's request id, kept when it is one token of at most 128 id characters without a
 * secret's shape (a UUID, the sandbox's `req_<16 hex>`, 32 hex digits), else WITHHELD. No limit on
 * runs of letters and digits here, unlike codes: a proxy's request id is often 32 hex digits. An id
 * of a key's shape (`req_` and 20 random characters or more) is withheld though it may be none: the
 * two cannot be told apart, and a key printed costs more than an id missed.
 */
export function serviceRequestId(value: string | undefined): string | undefined {
  return value === undefined || (REQUEST_ID.test(value) && !hasSecretShape(value)) ? value : WITHHELD;
}

// ---- the factory ----

/**
 * Where an error body's facts came from. The spec shows no error body (§7), so every shape a
 * Django REST framework service or a proxy in front of it plausibly sends is read:
 * - `envelope`: ours, `{"error": {"type", "code", "message", "param", …}}` (docs/assumptions.md);
 * - `oauth`: RFC 6749 §5.2, `{"error": "invalid_grant", "error_description": …}` (an `error` in
 *   lower snake case; any other string, Spring's `"error": "Bad Request"`, is `json` and its
 *   `message` is read);
 * - `detail`: DRF's `{"detail": …, "code": …}` (simplejwt adds `messages`);
 * - `fields`: DRF field errors, `{"email": ["Enter a valid email address."]}`;
 * - `jsonapi`: JSON:API, `{"errors": [{"code", "title", "detail", "source": {"pointer"}}]}`;
 * - `problem`: RFC 9457 problem details, `{"type", "title", "status", "detail"}`;
 * - `json`: any other JSON; `text`: plain text; `html`: a page (a proxy's); `empty`.
 */
export type ErrorBodyShape = 'envelope' | 'oauth' | 'detail' | 'fields' | 'jsonapi' | 'problem' | 'json' | 'text' | 'html' | 'empty';

export interface ErrorBody {
  shape: ErrorBodyShape;
  type?: string;
  code?: string;
  /** Unscrubbed: pass it through `scrubServerText` before it goes anywhere. */
  message?: string;
  param?: string;
  permission?: string;
  requestId?: string;
}

const HTML = /^\s*(<!doctype\s+html|<html|<head|<body|<\?xml|<!--)/i;

/**
 * An `error` string that is a code (RFC 6749 §5.2's `invalid_grant`, `invalid_client`): lower
 * snake case. `Bad Request` or `User exists` is a phrase, read as words (Spring's shape).
 */
const OAUTH_CODE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;

/** Reads an error body of any shape into the same facts. Never throws. */
export function readErrorBody(received: string, contentType?: string): ErrorBody {
  // A UTF-8 byte order mark, as on a success body (request.ts): ignored, or the codes that decide
  // a token refusal from a credential one would go unread.
  const body = received.charCodeAt(0) === 0xfeff ? received.slice(1) : received;
  if (body.trim() === '') return { shape: 'empty' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    if (HTML.test(body) || (contentType ?? '').toLowerCase().includes('html')) {
      const title = /<title[^>]*>([^<]{1,200})<\/title>/i.exec(body)?.[1]?.trim();
      return { shape: 'html', message: title ? `HTML page "${title}"` : 'HTML page' };
    }
    const firstLine = body.trim().split(/\r?\n/, 1)[0] ?? '';
    return { shape: 'text', message: firstLine.slice(0, 200) };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    // DRF answers a list of messages for a ValidationError raised with one (`["Invalid token."]`).
    const first = Array.isArray(parsed) ? parsed.find((m): m is string => typeof m === 'string') : undefined;
    return first === undefined ? { shape: 'json' } : { shape: 'detail', message: first };
  }
  const object = parsed as Record<string, unknown>;
  const text = (from: Record<string, unknown>, key: string): string | undefined => {
    const value = from[key];
    return typeof value === 'string' ? value : undefined;
  };
  if (object.error !== null && typeof object.error === 'object' && !Array.isArray(object.error)) {
    const error = object.error as Record<string, unknown>;
    const envelope: ErrorBody = {
      shape: 'envelope',
      type: text(error, 'type'),
      code: text(error, 'code'),
      message: text(error, 'message'),
      param: text(error, 'param'),
      permission: text(error, 'permission'),
      requestId: text(error, 'requestId'),
    };
    if (envelope.type !== undefined || envelope.code !== undefined) return envelope;
  }
  // The reason in words, wherever a shape keeps it: OAuth's `error_description`, Spring's
  // `message`, DRF's `detail`. Spring's default `message` may be empty, so blanks do not count.
  const words = (): string | undefined =>
    joinTexts([text(object, 'error_description') ?? text(object, 'message') ?? text(object, 'detail')]);
  if (typeof object.error === 'string' && OAUTH_CODE.test(object.error)) {
    return { shape: 'oauth', code: object.error, message: words() };
  }
  if (typeof object.error === 'string') {
    // Spring's `{"status": 400, "error": "Bad Request", "message": …}`: `error` is the status's
    // reason phrase (or a sentence), not a code; it is the message only when nothing else says more.
    return { shape: 'json', code: text(object, 'code'), message: words() ?? joinTexts([object.error]) };
  }
  const jsonApi = jsonApiErrors(object.errors);
  if (jsonApi) return jsonApi;
  // Problem details name their shape by content type, or by a `title` beside no DRF `code`.
  const problem = (contentType ?? '').toLowerCase().includes('problem+json') || (typeof object.title === 'string' && !('code' in object));
  if (problem && (typeof object.title === 'string' || typeof object.detail === 'string')) {
    return { shape: 'problem', message: joinTexts([text(object, 'title'), text(object, 'detail')]), code: text(object, 'code') };
  }
  if ('detail' in object) {
    const detail = object.detail;
    return {
      shape: 'detail',
      code: text(object, 'code'),
      message: typeof detail === 'string' ? detail : undefined,
      requestId: text(object, 'requestId') ?? text(object, 'request_id'),
    };
  }
  const field = firstFieldError(object, '');
  // ApiValidationError names `param` in its message itself ("field date_from: …").
  if (field) return { shape: 'fields', param: field.path || undefined, message: field.message };
  return { shape: 'json', code: text(object, 'code'), message: text(object, 'message') ?? text(object, 'title') };
}

/**
 * JSON:API's `errors` array: the first error's code and field (`source.pointer`'s last segment,
 * or `source.parameter`), and the title or detail of each error (at most three), so that a 409's
 * "already registered" or a 400's reason reaches the message.
 */
function jsonApiErrors(errors: unknown): ErrorBody | undefined {
  if (!Array.isArray(errors)) return undefined;
  const items = errors.filter((e): e is Record<string, unknown> => e !== null && typeof e === 'object' && !Array.isArray(e));
  if (items.length === 0) return undefined;
  const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  const first = items[0]!;
  const source = first.source !== null && typeof first.source === 'object' ? (first.source as Record<string, unknown>) : {};
  const pointer = str(source.pointer)?.split('/').filter(Boolean).pop();
  return {
    shape: 'jsonapi',
    code: str(first.code),
    message: joinTexts(items.slice(0, 3).map((e) => str(e.detail) ?? str(e.title))),
    param: str(source.parameter) ?? (pointer === 'data' || pointer === 'attributes' ? undefined : pointer),
  };
}

/** Non-empty texts, repeated ones once, joined for one message; undefined when there is none. */
function joinTexts(texts: readonly (string | undefined)[]): string | undefined {
  const kept = [...new Set(texts.filter((t): t is string => t !== undefined && t.trim() !== ''))];
  return kept.length === 0 ? undefined : kept.join('; ');
}

/**
 * The first DRF field error: `{"user": {"email": ["…"]}}` is `user.email`, a list serializer's
 * `{"items": [{}, {"rate": ["…"]}]}` is `items[1].rate`. `non_field_errors` names no field.
 */
function firstFieldError(value: unknown, path: string, depth = 0): { path: string; message: string } | undefined {
  if (depth > 5 || value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    const messages = value.filter((m): m is string => typeof m === 'string');
    if (messages.length > 0) return { path, message: messages.join(' ') };
    for (let i = 0; i < value.length; i++) {
      const found = firstFieldError(value[i], `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    const name = key === 'non_field_errors' ? path : path ? `${path}.${key}` : key;
    const found = firstFieldError(inner, name, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * What the request was, as far as reading its error goes:
 * - `token`: a token operation (refresh, verify, expire); `tokenField` is the body field that
 *   carried the token (`refresh`, `token`). A refusal that concerns that token is InvalidGrantError,
 *   never an AuthenticationError: it says nothing about the institution credential.
 * - `createUser`: a duplicate refused as a field error (DRF answers 400) is UserExistsError.
 */
export type ErrorContextKind = { kind: 'token'; tokenField: string } | { kind: 'createUser' } | { kind: 'other' };

type ErrorClass = new (detail: string | undefined, options: AccountingApiErrorOptions) => AccountingApiError;

const AUTH_BY_CODE: Record<string, ErrorClass> = {
  key_expired: KeyExpiredError,
  key_revoked: KeyRevokedError,
  creator_disabled: CreatorDisabledError,
  company_access_removed: CompanyAccessRemovedError,
  token_expired: TokenExpiredError,
  token_revoked: TokenRevokedError,
};

const BY_TYPE: Record<string, ErrorClass> = {
  authentication_error: AuthenticationError,
  permission_error: PermissionDeniedError,
  company_mismatch_error: CompanyMismatchError,
  not_found_error: NotFoundError,
  conflict_error: ConflictError,
  validation_error: ApiValidationError,
  rate_limit_error: RateLimitError,
  api_error: ServerError,
};

/** DRF's `code`s (exceptions.py) when the body has no `type`; the status decides otherwise. */
const BY_DRF_CODE: Record<string, ErrorClass> = {
  not_authenticated: AuthenticationError,
  authentication_failed: AuthenticationError,
  permission_denied: PermissionDeniedError,
  not_found: NotFoundError,
  throttled: RateLimitError,
  parse_error: ApiValidationError,
  invalid: ApiValidationError,
};

/**
 * Codes that refuse the credential in the header (ours and DRF's). On a token operation only
 * these, or a 401 that names nothing, are read as "the institution credential is wrong".
 */
export const CREDENTIAL_CODES: ReadonlySet<string> = new Set([
  'institution_invalid',
  'missing_credentials',
  'invalid_credentials',
  'not_authenticated',
  'authentication_failed',
]);

/**
 * 401 codes that refuse the user the request is about (ours, and DRF's for an inactive user), not
 * the credential that sent it: a new credential cannot help, only the service owner can.
 */
export const USER_REFUSAL_CODES: ReadonlySet<string> = new Set(['user_disabled', 'user_inactive']);

/** A 401 whose code says the user is refused (disabled at the service), not the credential. */
export function refusesUser(error: AccountingApiError): boolean {
  return error instanceof AuthenticationError && error.apiCode !== undefined && USER_REFUSAL_CODES.has(error.apiCode);
}

/** A code about a token: simplejwt's `token_not_valid`, ours (`token_*`, `refresh_token_*`), RFC 6750's `invalid_token`. */
function isTokenCode(code: string | undefined): boolean {
  if (code === undefined) return false;
  const c = code.toLowerCase();
  return (
    c === 'invalid_token' || c === 'token_not_valid' || c.startsWith('token_') || c.startsWith('refresh_token') || c.includes('blacklist')
  );
}

/** A message about a token and not about the credential: `Token is invalid or expired`. */
const TOKEN_TEXT = /\btoken\b/i;
const CREDENTIAL_TEXT = /institution|credential|header|secret/i;

/**
 * Whether a refusal on a token operation concerns the token sent in the body (docs/assumptions.md,
 * "Token refusals"). By the body, in this order: a credential code says no; a token code, or a
 * field error on the token's field, says yes; a 400 says yes (the credential is not in the body,
 * and our token is a non-empty string, so a 400 can only be about its value); a 401 says yes only
 * when its message is about a token and not about a credential. A 401 that names nothing (a
 * proxy's page) is read as a credential refusal: re-reading the secret and retrying later costs a
 * retry, while calling a good grant dead would cost the user a recovery.
 */
function concernsToken(status: number, body: ErrorBody, tokenField: string): boolean {
  if (status !== 400 && status !== 401 && status !== 403) return false;
  if (body.code !== undefined && CREDENTIAL_CODES.has(body.code)) return false;
  if (body.type === 'authentication_error' && body.code === undefined) return false;
  if (isTokenCode(body.code)) return true;
  if (body.param === tokenField) return true;
  if (status === 400) return body.shape !== 'envelope' || body.type === 'validation_error';
  if (status === 401) return body.message !== undefined && TOKEN_TEXT.test(body.message) && !CREDENTIAL_TEXT.test(body.message);
  return false;
}

const DUPLICATE_TEXT = /already exists|already registered|already taken|\bexists\b|duplicate|unique/i;
const DUPLICATE_CODES: ReadonlySet<string> = new Set(['unique', 'duplicate', 'already_exists', 'user_exists']);

function classByStatus(status: number): ErrorClass {
  if (status === 400) return ApiValidationError;
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionDeniedError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  return AccountingApiError;
}

function classFor(status: number, body: ErrorBody, context: ErrorContextKind): ErrorClass {
  if (body.type === 'invalid_grant' || body.code === 'invalid_grant') return InvalidGrantError;
  if (context.kind === 'token' && concernsToken(status, body, context.tokenField)) return InvalidGrantError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  const byType = body.type === undefined ? undefined : BY_TYPE[body.type];
  // A DRF code refines only within its family of statuses: a 400 `not_found` stays a 400.
  const byCode = body.code === undefined ? undefined : BY_DRF_CODE[body.code];
  const base = byType ?? (byCode && classByStatus(status) === byCode ? byCode : classByStatus(status));
  if (base === AuthenticationError && body.code) return AUTH_BY_CODE[body.code] ?? AuthenticationError;
  if (base === ConflictError && body.code === 'user_exists') return UserExistsError;
  if (
    context.kind === 'createUser' &&
    (status === 400 || status === 409) &&
    ((body.code !== undefined && DUPLICATE_CODES.has(body.code)) || (body.message !== undefined && DUPLICATE_TEXT.test(body.message)))
  ) {
    return UserExistsError;
  }
  return base;
}

/**
 * The one mapping from an HTTP error response to a typed error, whatever the body's shape
 * (`readErrorBody`). The service's text reaches the message only scrubbed (`scrubServerText`):
 * registered secrets, JWTs, bearer values and anything key-shaped are cut out. Its other fields are
 * kept only when they are identifiers without a secret's shape (`serviceCode`, `serviceParam`,
 * `serviceRequestId`); the class is chosen from the body as received, since only a known code
 * changes it.
 */
export function errorFromResponse(
  response: TransportResponse,
  context: { request: string; now: number; operation?: ErrorContextKind },
): AccountingApiError {
  const body = readErrorBody(response.body, response.headers['content-type']);
  const Cls = classFor(response.status, body, context.operation ?? { kind: 'other' });
  return new Cls(undefined, {
    status: response.status,
    requestId: serviceRequestId(response.headers['x-request-id'] ?? body.requestId),
    request: context.request,
    apiType: serviceCode(body.type),
    apiCode: serviceCode(body.code),
    serverMessage: body.message === undefined ? undefined : scrubServerText(body.message),
    param: serviceParam(body.param),
    permission: serviceCode(body.permission),
    retryAfterMs: parseRetryAfter(response.headers['retry-after'], context.now),
  });
}

/**
 * `host:port` of a URL, the port written even when it is the scheme's default (`https://x` is
 * `x:443`): what a connection failure is about. Never the user info, path or query.
 */
export function endpointOf(url: URL): string {
  const port = url.port || { 'http:': '80', 'https:': '443' }[url.protocol];
  return port ? `${url.hostname}:${port}` : url.hostname;
}

/**
 * A failure below HTTP, as a typed error. With the request's `url`, the message names the endpoint
 * and the low-level cause (`127.0.0.1:4711: connection refused (ECONNREFUSED)…`): the request
 * description has the path only, and a wrong host, port or scheme is fixed by knowing which.
 */
export function errorFromTransportFailure(failure: TransportFailure, request: string, url?: URL): AccountingApiError {
  if (failure.kind === 'too_large')
    return new ResponseTooLargeError(undefined, { request, cause: failure, status: failure.status, limitBytes: failure.limitBytes });
  const where = url === undefined ? '' : `${endpointOf(url)}: `;
  const cause = transportCause(failure);
  if (failure.kind === 'timeout') return new TimeoutError(`${where}no complete answer in time`, { request, cause: failure });
  const detail =
    failure.kind === 'refused'
      ? `${where}${cause ?? 'no connection'}; not sent`
      : `${where}${cause ?? 'connection lost'}; the request may have been processed`;
  return new ConnectionError(detail, { request, cause: failure, ambiguous: failure.kind !== 'refused', final: failure.final });
}
