import { AccountingApiError, AuthenticationError, CREDENTIAL_CODES, ConnectionError, RateLimitError } from '../accounting-api';
import { isStorableErrorCode } from './token-store';

/**
 * How the token use cases read a failed call to the service. Three kinds:
 *
 * - `later`: nothing happened at the service for this user and trying again later can work: rate
 *   limited after the client's own retries, a connection that was never made, or the institution
 *   credential refused (after the secret was read again). Not the user's fault, so it must never
 *   cost a user its place in the schedule: the lease is released and the work is retried (SQS
 *   redelivers, the planner re-enqueues).
 * - `ambiguous`: the service may have acted (timeout, connection lost after sending, 5xx, an
 *   unreadable success). After a refresh, the refresh token may have rotated: recover via retrieve.
 *   After a retrieve (idempotent, already retried by the client), treated like `later`.
 * - `refused`: the service answered and said no (invalid_grant, 404, 400, 403, 409, a user-level
 *   401). After a refresh: recover via retrieve. After a retrieve: the user needs attention.
 *
 * Errors that are not the service's (the store, the secret, configuration) are none of these:
 * the use cases let them propagate.
 */
export type ServiceFailure = 'later' | 'ambiguous' | 'refused';

/**
 * 401 codes that refuse the institution credential itself: ours (docs/assumptions.md, error
 * table) and DRF's `not_authenticated`/`authentication_failed`. A 401 without a code (a proxy)
 * counts as one too: blaming the credential costs a retry, blaming the user would cost the user.
 * A 401 about the token in the body never reaches here as an AuthenticationError: the client
 * reads it as InvalidGrantError (docs/assumptions.md, "Token refusals").
 */
export function isInstitutionRefusal(error: AuthenticationError): boolean {
  return error.apiCode === undefined || CREDENTIAL_CODES.has(error.apiCode);
}

/** The kind of a service failure, or undefined when `error` did not come from the service. */
export function serviceFailure(error: unknown): ServiceFailure | undefined {
  if (!(error instanceof AccountingApiError)) return undefined;
  if (error instanceof RateLimitError) return 'later';
  if (error instanceof ConnectionError && !error.ambiguous) return 'later';
  if (error instanceof AuthenticationError && isInstitutionRefusal(error)) return 'later';
  return error.ambiguous ? 'ambiguous' : 'refused';
}

/**
 * The code a token record keeps of a failure (`lastErrorCode`): the service's where it gave one,
 * since that is what tells a disabled user (`user_disabled`) from other 401s, else our stable code.
 * Undefined when there is none, or it is not a short identifier (`isStorableErrorCode`).
 */
export function failureCode(error: unknown): string | undefined {
  const { apiCode, errorCode } = describeFailure(error);
  const code = apiCode ?? errorCode;
  return code !== undefined && isStorableErrorCode(code) ? code : undefined;
}

/**
 * The loggable description of a failure: class name, stable code and the service's code, status
 * and request id. Never a message (it is redacted, but a class is what dashboards group by).
 */
export function describeFailure(error: unknown): {
  errorClass: string;
  errorCode?: string;
  apiCode?: string;
  status?: number;
  requestId?: string;
} {
  if (error instanceof AccountingApiError) {
    return {
      errorClass: error.name,
      errorCode: error.code,
      ...(error.apiCode === undefined ? {} : { apiCode: error.apiCode }),
      ...(error.status === undefined ? {} : { status: error.status }),
      ...(error.requestId === undefined ? {} : { requestId: error.requestId }),
    };
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { errorClass: error.name, ...(typeof code === 'string' ? { errorCode: code } : {}) };
  }
  return { errorClass: 'UnknownError' };
}

/**
 * `describeFailure` for a log line: the service's request id as `serviceRequestId`. A line's own
 * `requestId` is the invocation's (docs/observability.md), and a field of the same name spread
 * into the line replaced it on exactly the lines one looks up by it. Events keep `requestId`: no
 * invocation id competes there.
 */
export function loggedFailure(error: unknown): Omit<ReturnType<typeof describeFailure>, 'requestId'> & { serviceRequestId?: string } {
  const { requestId, ...rest } = describeFailure(error);
  return requestId === undefined ? rest : { ...rest, serviceRequestId: requestId };
}
