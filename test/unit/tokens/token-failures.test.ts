import {
  ApiValidationError,
  AuthenticationError,
  ConnectionError,
  InvalidGrantError,
  NotFoundError,
  RateLimitError,
  ResponseValidationError,
  ServerError,
  TimeoutError,
} from '../../../src/core/accounting-api';
import { ValidationError } from '../../../src/core/shared/errors';
import { describeFailure, loggedFailure, serviceFailure } from '../../../src/core/tokens/token-failures';

describe('reading a failed call to the service', () => {
  it.each([
    ['429 after the client retried', new RateLimitError(undefined, { status: 429 }), 'later'],
    ['a connection never made', new ConnectionError('not sent', { ambiguous: false }), 'later'],
    // Final for the client's retries only: a later run, once the certificate is renewed, can pass.
    ['a TLS handshake refused (final)', new ConnectionError('not sent', { ambiguous: false, final: true }), 'later'],
    ['the institution credential refused', new AuthenticationError(undefined, { status: 401, apiCode: 'institution_invalid' }), 'later'],
    ['a 401 without an envelope (a proxy)', new AuthenticationError(undefined, { status: 401 }), 'later'],
    ["DRF's 401 authentication_failed", new AuthenticationError(undefined, { status: 401, apiCode: 'authentication_failed' }), 'later'],
    ["DRF's 401 not_authenticated", new AuthenticationError(undefined, { status: 401, apiCode: 'not_authenticated' }), 'later'],
    ['a connection lost after sending', new ConnectionError('lost'), 'ambiguous'],
    ['a timeout', new TimeoutError(undefined), 'ambiguous'],
    ['a 5xx', new ServerError(undefined, { status: 503 }), 'ambiguous'],
    ['an unreadable success', new ResponseValidationError([{ path: 'accessToken', message: 'expected string' }]), 'ambiguous'],
    ['invalid_grant', new InvalidGrantError(undefined, { status: 400, apiCode: 'refresh_token_used' }), 'refused'],
    ['a user-level 401', new AuthenticationError(undefined, { status: 401, apiCode: 'user_disabled' }), 'refused'],
    ['404', new NotFoundError(undefined, { status: 404 }), 'refused'],
    ['400', new ApiValidationError(undefined, { status: 400 }), 'refused'],
  ])('%s is %s', (_name, error, kind) => {
    expect(serviceFailure(error)).toBe(kind);
  });

  it('leaves errors that are not the service’s to the caller', () => {
    expect(serviceFailure(new ValidationError('x', []))).toBeUndefined();
    expect(serviceFailure(new Error('dynamodb throttled'))).toBeUndefined();
  });

  it('describes a failure by class and codes only', () => {
    const error = new InvalidGrantError('token eyJhbGciOi.secret', { status: 400, apiCode: 'refresh_token_used', requestId: 'req_1' });
    expect(describeFailure(error)).toEqual({
      errorClass: 'InvalidGrantError',
      errorCode: 'invalid_grant',
      apiCode: 'refresh_token_used',
      status: 400,
      requestId: 'req_1',
    });
    expect(describeFailure('a string')).toEqual({ errorClass: 'UnknownError' });
  });

  it("logs the service's request id as serviceRequestId, never over a line's own requestId", () => {
    const error = new ServerError(undefined, { status: 503, requestId: 'req_1' });
    expect(loggedFailure(error)).toEqual({ errorClass: 'ServerError', errorCode: error.code, status: 503, serviceRequestId: 'req_1' });
    expect(loggedFailure(new ServerError(undefined, { status: 503 }))).not.toHaveProperty('serviceRequestId');
    expect(loggedFailure(new Error('x'))).toEqual({ errorClass: 'Error' });
  });
});
