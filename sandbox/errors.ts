import type * as z from 'zod';
import { formatPath } from '../src/core/shared/errors';

/**
 * An error the sandbox answers with, in the envelope of docs/assumptions.md. Handlers throw it;
 * the server turns it into the response, so every refusal has one shape.
 */
export class SandboxApiError extends Error {
  override readonly name: string = 'SandboxApiError';
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly param: string | null;
  readonly permission: string | null;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    type: string,
    code: string,
    message: string,
    options: { param?: string; permission?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.type = type;
    this.code = code;
    this.param = options.param ?? null;
    this.permission = options.permission ?? null;
    this.headers = options.headers ?? {};
  }

  body(requestId: string): ErrorEnvelope {
    return {
      error: { type: this.type, code: this.code, message: this.message, param: this.param, permission: this.permission, requestId },
    };
  }
}

export interface ErrorEnvelope {
  error: { type: string; code: string; message: string; param: string | null; permission: string | null; requestId: string };
}

export const authError = (code: string, message: string) => new SandboxApiError(401, 'authentication_error', code, message);

export const invalidGrant = (code: string, message: string) => new SandboxApiError(400, 'invalid_grant', code, message);

export const invalidRequest = (param: string, message: string) =>
  new SandboxApiError(400, 'validation_error', 'invalid_request', message, { param });

export const notFound = (message = 'Not found.') => new SandboxApiError(404, 'not_found_error', 'not_found', message);

export const permissionDenied = (permission: string) =>
  new SandboxApiError(403, 'permission_error', 'permission_denied', `This operation needs the permission ${permission}.`, { permission });

export const companyMismatch = (param: string) =>
  new SandboxApiError(403, 'company_mismatch_error', 'company_mismatch', `The company in ${param} is not the credential's company.`, {
    param,
  });

export const conflict = (code: string, message: string) => new SandboxApiError(409, 'conflict_error', code, message);

export function rateLimited(retryAfterSeconds: number | string): SandboxApiError {
  return new SandboxApiError(429, 'rate_limit_error', 'rate_limited', 'Too many requests.', {
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

/** A path the API has, with a method it lacks: `Allow` lists the ones it has. */
export const methodNotAllowed = (method: string, allow: readonly string[]) =>
  new SandboxApiError(405, 'method_not_allowed_error', 'method_not_allowed', `Method "${method}" not allowed.`, {
    headers: { Allow: allow.join(', ') },
  });

export const payloadTooLarge = (limitBytes: number) =>
  new SandboxApiError(413, 'payload_too_large_error', 'payload_too_large', `The body is larger than ${limitBytes} bytes.`, {
    param: 'body',
  });

const SERVER_CODES: Record<number, string> = { 500: 'internal_error', 502: 'bad_gateway', 503: 'unavailable' };

/** The envelope the table of docs/assumptions.md gives for a status, used by `status` faults. */
export function errorForStatus(status: number): SandboxApiError {
  if (status === 429) return rateLimited(1);
  if (status >= 500) return new SandboxApiError(status, 'api_error', SERVER_CODES[status] ?? 'internal_error', 'The service failed.');
  if (status === 401) return authError('invalid_credentials', 'Authentication failed.');
  if (status === 403) return new SandboxApiError(403, 'permission_error', 'permission_denied', 'Permission denied.');
  if (status === 404) return notFound();
  if (status === 409) return conflict('state_prevents_change', 'The current state prevents this change.');
  return new SandboxApiError(status, 'validation_error', 'invalid_request', 'The request is invalid.');
}

/**
 * A 400 naming the first bad field; like the client, it never echoes the value. A string's length
 * bound is said with its number (`too big (at most 150 characters)`), as DRF's "Ensure this field has
 * no more than 150 characters." does: a limit the spec does not state is then learnt from the refusal.
 */
export function fromZod(error: z.ZodError, prefix?: string): SandboxApiError {
  const issue = error.issues[0];
  const path = formatPath([...(prefix ? [prefix] : []), ...(issue?.path ?? [])]) || (prefix ?? 'body');
  return invalidRequest(path, `Invalid value for ${path}: ${issue?.code.replace(/_/g, ' ') ?? 'invalid'}${lengthBound(issue)}.`);
}

function lengthBound(issue: z.core.$ZodIssue | undefined): string {
  const characters = (n: number) => `${n} character${n === 1 ? '' : 's'}`;
  if (issue?.code === 'too_big' && issue.origin === 'string') return ` (at most ${characters(Number(issue.maximum))})`;
  if (issue?.code === 'too_small' && issue.origin === 'string') return ` (at least ${characters(Number(issue.minimum))})`;
  return '';
}
