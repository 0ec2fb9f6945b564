import type * as z from 'zod';
import { type Clock } from '../shared/clock';
import { type Logger } from '../shared/logger';
import { type AuthScheme, type Credential, type CredentialProvider, authHeader } from './auth';
import {
  AccountingApiError,
  AuthenticationError,
  CompanyMismatchError,
  type ErrorContextKind,
  ResponseTooLargeError,
  ResponseValidationError,
  describeRequest,
  errorFromResponse,
  errorFromTransportFailure,
  refusesUser,
  responseValidationError,
  serviceRequestId,
} from './errors';
import { parseJsonLossless } from './lossless-json';
import { ignoredFieldsOf } from './schemas';
import { type ItemWarning, type AccountingApiWarning, type WarningHandler } from './warnings';
import { PaginatedList, type Page, resolvePageSize } from './pagination';
import { type RetryPolicy, type RetrySafety, recordRetries, retryDecision } from './retry';
import { type HttpMethod, type Transport, TransportFailure, type TransportRequest, type TransportResponse } from './transport';

/**
 * The request engine under every resource: credential, company scoping, the retry loop,
 * lossless JSON and error mapping. Resources describe operations; this sends them.
 */

export interface ApiResponse {
  status: number;
  requestId: string | undefined;
  /** Redacted description of the request, for errors, warnings and logs. */
  request: string;
  /** The JSON body, parsed losslessly; undefined for an empty body (204). */
  body: unknown;
  /** The body's UTF-8 bytes as received (encoded from its text when the transport gave none). */
  bodyBytes(): Uint8Array;
  /** The body's text, whose UTF-8 encoding `bodyBytes` is. */
  bodyText(): string;
  /** The credential the request went out with (the company learned from it is tied to it). */
  credential: Credential;
}

export interface Operation {
  method: HttpMethod;
  /** Absolute URL (built by `url()`, or a validated `next`). */
  url: URL;
  auth: AuthScheme;
  safety: RetrySafety;
  body?: Record<string, unknown>;
  /** A company id in the path (`company_pk`), checked against the credential's company. */
  pathCompany?: string;
  /** How to read a refusal (a token operation's 401 may be about the token). Default `other`. */
  errorContext?: ErrorContextKind;
  /** See TransportRequest.onBodyStart: handed to the transport on every attempt. */
  onBodyStart?: (head: Uint8Array) => void;
  /**
   * Whether the caller still wants the answer, asked when an attempt fails. Once it says no, the
   * failure is final: no retry (nor its sleep) and no re-authentication for an answer nobody reads,
   * such as a list's request for a page after the consumer stopped.
   */
  wanted?: () => boolean;
}

export interface EngineSettings {
  baseUrl: URL;
  credentials: CredentialProvider;
  companyId: string | undefined;
  transport: Transport;
  timeoutMs: number;
  retry: RetryPolicy;
  clock: Clock;
  random: () => number;
  logger: Logger;
  onWarning: WarningHandler | undefined;
  pageSize: number;
  maxPageSize: number;
  /** A response body above this many bytes is ResponseTooLargeError. */
  maxResponseBytes: number;
  /** See AccountingClientOptions.itemJson. */
  itemJson?: boolean;
  /** See AccountingClientOptions.onRetryWait. */
  onRetryWait?: (wait: RetryWait) => void;
}

/** A wait before another attempt, as it begins. */
export interface RetryWait {
  /** Redacted description of the request. */
  request: string;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  delayMs: number;
  /** True when the service asked for the wait (`Retry-After`), false for the client's own backoff. */
  askedByService: boolean;
  error: AccountingApiError;
  /** Attempts in all (the policy's), so that a caller can say "attempt 2 of 4". */
  maxAttempts: number;
  /** Each attempt's timeout, so that a caller can say how long a request that timed out waited. */
  timeoutMs: number;
}

export interface ListOperation<T> {
  path: string;
  query?: Record<string, string | number | undefined>;
  pageSizeParam: 'page_size' | 'pageSize';
  pageSize: number | undefined;
  itemSchema: z.ZodType<T>;
  /** See ListSource.single. */
  single?: boolean;
  /** See ListSource.fastParse. */
  fastParse?(raw: unknown): T | undefined;
  pathCompany?: string;
  checkItem?(parsed: T): ItemWarning | undefined;
  /** See ListSource.identity. */
  identity?(parsed: T): string;
  onPage?(page: Page<T>, response: ApiResponse): void;
}

const BODY_COMPANY_FIELDS = ['companyId', 'company'] as const;

export class RequestEngine {
  /** The company of an API key, learned from `GET /companies/`; tied to that exact key. */
  private learned: { apiKey: string; companyId: string } | undefined;

  constructor(readonly settings: EngineSettings) {}

  /** `baseUrl` + `path` (kept exactly, trailing slash included) + the defined query values. */
  url(path: string, query: Record<string, string | number | undefined> = {}): URL {
    const url = new URL(`${this.settings.baseUrl.href}${path}`);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  /** The company requests must stay in, once known: the credential's, the learned one, or the configured one. */
  companyOf(credential: Credential): string | undefined {
    if (credential.kind === 'institution') return undefined;
    const learned = credential.kind === 'apiKey' && this.learned?.apiKey === credential.apiKey ? this.learned.companyId : undefined;
    return credential.companyId ?? learned ?? this.settings.companyId;
  }

  /** Records the company an API key acts for (called with the result of `GET /companies/`). */
  learnCompany(credential: Credential, companyId: string): void {
    if (credential.kind === 'apiKey' && credential.companyId === undefined) this.learned = { apiKey: credential.apiKey, companyId };
  }

  async send(operation: Operation): Promise<ApiResponse> {
    const { settings } = this;
    const request = describeRequest(operation.method, operation.url);
    const body = operation.body === undefined ? undefined : JSON.stringify(operation.body);
    const started = settings.clock.now();
    let attempt = 0;
    let reauthenticated = false;
    for (;;) {
      attempt++;
      const credential = await settings.credentials.get();
      const [authName, authValue] = authHeader(credential, operation.auth);
      const headers: Record<string, string> = { accept: 'application/json', [authName]: authValue };
      const companyHeader = operation.auth === 'bearer' ? settings.companyId : undefined;
      if (companyHeader !== undefined) headers['x-company-id'] = companyHeader;
      if (body !== undefined) headers['content-type'] = 'application/json';
      this.checkScope(credential, operation, companyHeader, request);

      const outcome = await this.exchange(
        {
          method: operation.method,
          url: operation.url.href,
          headers,
          body,
          timeoutMs: settings.timeoutMs,
          maxBodyBytes: settings.maxResponseBytes,
          onBodyStart: operation.onBodyStart,
        },
        request,
        operation.errorContext,
      );
      if (!(outcome instanceof AccountingApiError)) return this.success(outcome, request, credential);
      const error = outcome;
      if (operation.wanted?.() === false) throw error;

      // A disabled user is refused whatever credential asks: re-reading it would only cost a read.
      if (error instanceof AuthenticationError && !refusesUser(error) && !reauthenticated && settings.credentials.onAuthenticationError) {
        reauthenticated = true;
        if (await settings.credentials.onAuthenticationError(error, credential)) {
          attempt--; // a fresh credential is not a retry of the same one
          continue;
        }
        throw error;
      }
      const now = settings.clock.now();
      const decision = retryDecision(error, {
        safety: operation.safety,
        attempt,
        elapsedMs: now - started,
        policy: settings.retry,
        random: settings.random,
        now,
      });
      if (!('delayMs' in decision)) {
        recordRetries(error, {
          retries: attempt - 1,
          gaveUp: decision.giveUp,
          retryAfterMs: error.retryAfterMs,
          maxRetryAfterMs: settings.retry.maxRetryAfterMs,
        });
        throw error;
      }
      const delay = decision.delayMs;
      settings.logger.warn('accounting api request will be retried', {
        request,
        attempt,
        delayMs: delay,
        error: error.code,
        status: error.status,
        // Not `requestId`: that field of every line is the invocation's own (docs/observability.md).
        serviceRequestId: error.requestId,
      });
      settings.onRetryWait?.({
        request,
        attempt,
        delayMs: delay,
        askedByService: error.retryAfterMs !== undefined,
        error,
        maxAttempts: settings.retry.maxAttempts,
        timeoutMs: settings.timeoutMs,
      });
      await settings.clock.sleep(delay);
    }
  }

  /** One attempt: a 2xx response, or the typed error for anything else. */
  private async exchange(
    transportRequest: TransportRequest,
    request: string,
    errorContext: ErrorContextKind | undefined,
  ): Promise<TransportResponse | AccountingApiError> {
    let response: TransportResponse;
    try {
      response = await this.settings.transport(transportRequest);
    } catch (thrown) {
      const failure = thrown instanceof TransportFailure ? thrown : new TransportFailure('reset', { cause: thrown });
      return errorFromTransportFailure(failure, request, new URL(transportRequest.url));
    }
    // A custom transport may ignore `maxBodyBytes`; chars <= bytes <= 3 chars, so most bodies need no count.
    const limit = this.settings.maxResponseBytes;
    if (response.body.length > limit || (response.body.length * 3 > limit && Buffer.byteLength(response.body) > limit)) {
      return new ResponseTooLargeError(undefined, { request, status: response.status, limitBytes: limit });
    }
    if (response.status >= 200 && response.status < 300) return response;
    return errorFromResponse(response, { request, now: this.settings.clock.now(), operation: errorContext });
  }

  /** Parses a single-object response with `schema`, or raises ResponseValidationError. */
  parse<T>(schema: z.ZodType<T>, response: ApiResponse): T {
    const result = schema.safeParse(response.body);
    if (result.success) {
      const fields = ignoredFieldsOf(result.data);
      if (fields.length) this.warn({ type: 'ignored_field', request: response.request, path: '', fields: [...fields] });
      return result.data;
    }
    throw responseValidationError(result.error, '', { status: response.status, requestId: response.requestId, request: response.request });
  }

  list<T>(operation: ListOperation<T>): PaginatedList<T> {
    const { settings } = this;
    const pageSize = resolvePageSize(operation.pageSize, settings);
    return new PaginatedList<T>({
      baseUrl: settings.baseUrl,
      firstUrl: this.url(operation.path, { ...operation.query, [operation.pageSizeParam]: pageSize }),
      fetch: (url, onBodyStart, wanted) =>
        this.send({ method: 'GET', url, auth: 'bearer', safety: 'idempotent', pathCompany: operation.pathCompany, onBodyStart, wanted }),
      itemSchema: operation.itemSchema,
      fastParse: operation.fastParse,
      single: operation.single,
      warn: (warning) => this.warn(warning),
      checkItem: operation.checkItem,
      identity: operation.identity,
      onPage: operation.onPage,
      itemJson: settings.itemJson,
      pageSizeParam: operation.pageSizeParam,
    });
  }

  warn(warning: AccountingApiWarning): void {
    this.settings.logger.warn('accounting api warning', { ...warning });
    this.settings.onWarning?.(warning);
  }

  private checkScope(credential: Credential, operation: Operation, companyHeader: string | undefined, request: string): void {
    const company = this.companyOf(credential);
    if (company === undefined) return;
    const refs: [param: string, value: unknown][] = [
      ['company_pk', operation.pathCompany],
      ['X-Company-Id', companyHeader],
      ...BODY_COMPANY_FIELDS.map((field): [string, unknown] => [field, operation.body?.[field]]),
    ];
    for (const [param, value] of refs) {
      if (value !== undefined && value !== null && String(value).toLowerCase() !== company.toLowerCase()) {
        throw new CompanyMismatchError(`refused before sending: ${param} is not the credential's company`, { param, request });
      }
    }
  }

  private success(response: TransportResponse, request: string, credential: Credential): ApiResponse {
    const requestId = serviceRequestId(response.headers['x-request-id']);
    const { text, received } = withoutByteOrderMark(response.body, response.bytes);
    let body: unknown;
    if (!isBlank(text)) {
      try {
        body = parseJsonLossless(text, received);
      } catch {
        // No cause attached: the parser's message quotes the body, which may hold a token.
        throw new ResponseValidationError([{ path: '', message: 'body is not valid JSON' }], {
          status: response.status,
          requestId,
          request,
        });
      }
    }
    // The text stays while the page is read: a list cuts its items out of an ASCII body by searching
    // the text (item-json.ts). A plain Uint8Array over the bytes' memory: its subarrays are cheaper
    // than a Buffer's.
    const bodyBytes = () => {
      const bytes = received ?? Buffer.from(text);
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    };
    return { status: response.status, requestId, request, body, bodyBytes, bodyText: () => text, credential };
  }
}

/**
 * The body without a leading UTF-8 byte order mark: RFC 8259 §8.1 forbids writing one but lets a
 * parser ignore it, and some stacks write one, where JSON.parse would refuse the whole body. The
 * text and the bytes are cut apart (a custom transport may have decoded one without it), so that
 * item-json's offsets into the bytes stay those of the text.
 */
function withoutByteOrderMark(text: string, bytes: Uint8Array | undefined): { text: string; received: Uint8Array | undefined } {
  const markInText = text.charCodeAt(0) === 0xfeff;
  const markInBytes = bytes !== undefined && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  if (!markInText && !markInBytes) return { text, received: bytes };
  return { text: markInText ? text.slice(1) : text, received: markInBytes ? bytes.subarray(3) : bytes };
}

/**
 * Whether a body holds no JSON value: empty, or JSON whitespace alone (a framework's `"\n"` for a
 * reply with nothing to say). Such a body is read as an empty one (a 204's), not as invalid JSON:
 * verify and expire read nothing from it (docs/assumptions.md), and a list still refuses it by
 * its envelope. One look at the first character for a body with content.
 */
function isBlank(text: string): boolean {
  if (text === '') return true;
  const first = text.charCodeAt(0);
  if (first !== 0x20 && first !== 0x09 && first !== 0x0a && first !== 0x0d) return false;
  return /^[ \t\n\r]*$/.test(text);
}
