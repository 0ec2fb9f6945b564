import { describeError } from '../../../cli/errors';
import { ExitCode } from '../../../cli/exit-codes';
import {
  AccountingApiError,
  ApiValidationError,
  AuthenticationError,
  CompanyMismatchError,
  ConnectionError,
  NotFoundError,
  PaginationError,
  RateLimitError,
  ResponseTooLargeError,
  ResponseValidationError,
  ServerError,
  TimeoutError,
  TransportFailure,
} from '../../../src/core/accounting-api';
import { ExportCountMismatchError } from '../../../src/core/exports/pipeline/pipeline-errors';
import { recordRetries } from '../../../src/core/accounting-api/retry';

const TX = 'GET /api/v1/accounting/transactions/?date_from=2026-10-01&date_to=2026-10-31&page_size=1000';
const MAY_HAVE_ACTED = /service may have acted/;
const DOCTOR = /acctops doctor/;

describe('describeError: hints about a failed request to the service', () => {
  it('a key of another company: direct mode names ACCTOPS_API_KEY and --company, not `keys status` (the stored keys, not this one)', () => {
    const error = new CompanyMismatchError('in X-Company-Id', { status: 403, request: TX, param: 'X-Company-Id' });
    const direct = describeError(error, { direct: true });
    expect(direct.exitCode).toBe(ExitCode.auth);
    expect(direct.hint).toMatch(/set ACCTOPS_API_KEY to the key of the company --company names, or leave out --company/);
    expect(direct.hint).not.toMatch(/keys status/);
    expect(describeError(error).hint).toMatch(/`acctops keys status` lists them/);
  });

  /** Every way a read can fail that the export meets (5xx, 500 without a body, a proxy's 502, timeout, reset, unreadable 2xx). */
  const failedReads: [string, AccountingApiError][] = [
    ['503', new ServerError(undefined, { status: 503, request: TX, requestId: 'req_1' })],
    ['500 without a body', new ServerError(undefined, { status: 500, request: TX })],
    ['502 HTML', new ServerError(undefined, { status: 502, request: TX, serverMessage: 'HTML page' })],
    ['a timeout', new TimeoutError('127.0.0.1:4711: no complete answer in time', { request: TX })],
    ['a reset', new ConnectionError('127.0.0.1:4711: connection lost; the request may have been processed', { request: TX })],
    ['malformed JSON', new ResponseValidationError([{ path: '', message: 'body is not valid JSON' }], { status: 200, request: TX })],
    ['a dropped field', new ResponseValidationError([{ path: 'results[0].amount', message: 'required' }], { status: 200, request: TX })],
    ['a body too large', new ResponseTooLargeError(undefined, { status: 200, request: TX, limitBytes: 10 })],
  ];

  it.each(failedReads)('a read that failed (%s) changed nothing: no "may have acted", in any mode', (_label, error) => {
    expect(error.ambiguous).toBe(true);
    for (const direct of [false, true]) {
      const report = describeError(error, { direct });
      expect(report.exitCode).toBe(ExitCode.failure);
      expect(report.hint).toBeDefined();
      expect(report.hint).not.toMatch(MAY_HAVE_ACTED);
      // Direct mode: the service is the operator's URL, which `acctops doctor` knows nothing of.
      if (direct) expect(report.hint).not.toMatch(DOCTOR);
    }
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE'])('a %s that may have reached the service is to be checked before a repeat', (method) => {
    for (const error of [
      new ServerError(undefined, { status: 503, request: `${method} /api/v1/institution/users/token/refresh/` }),
      new TimeoutError(undefined, { request: `${method} /api/v1/api-keys/` }),
      new ConnectionError('lost', { request: `${method} /api/v1/api-keys/` }),
    ]) {
      expect(describeError(error).hint).toMatch(MAY_HAVE_ACTED);
      expect(describeError(error, { direct: true }).hint).toMatch(MAY_HAVE_ACTED);
    }
    // Never sent: nothing to check.
    const refused = new ConnectionError('127.0.0.1:1: connection refused (ECONNREFUSED); not sent', {
      request: `${method} /api/v1/api-keys/`,
      ambiguous: false,
    });
    expect(describeError(refused).hint).not.toMatch(MAY_HAVE_ACTED);
  });

  it('a refused certificate: renew it or trust its CA (NODE_EXTRA_CA_CERTS), not "check the host and port"', () => {
    const refused = (code: string) =>
      new ConnectionError(`api.example.test:443: TLS handshake failed (${code}): the server's certificate was refused; not sent`, {
        request: TX,
        ambiguous: false,
        final: true,
        cause: new TransportFailure('refused', { code }),
      });
    for (const direct of [true, false]) {
      const described = describeError(refused('CERT_HAS_EXPIRED'), { direct });
      expect(described.hint).toMatch(/certificate was refused.*renew.*NODE_EXTRA_CA_CERTS/);
      expect(described.hint).not.toMatch(/check the host/);
    }
    // A server that does not speak TLS there is a URL to fix: the generic hint stays.
    const notTls = new ConnectionError('127.0.0.1:4711: TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER); not sent', {
      request: TX,
      ambiguous: false,
      final: true,
      cause: new TransportFailure('refused', { code: 'ERR_SSL_WRONG_VERSION_NUMBER' }),
    });
    expect(describeError(notTls, { direct: true }).hint).toMatch(/check the host, the port and the scheme/);
  });

  it('an ambiguous error without a request description is taken at its word', () => {
    expect(describeError(new ServerError(undefined, { status: 503 })).hint).toMatch(MAY_HAVE_ACTED);
  });

  it('a 429 after the retries: run again later, with the Retry-After the client saw, never `acctops doctor`', () => {
    const limited = new RateLimitError(undefined, { status: 429, request: TX, retryAfterMs: 30_000 });
    for (const direct of [false, true]) {
      const { hint } = describeError(limited, { direct });
      expect(hint).toMatch(/run again later \(its last Retry-After asked for 30 s\)/);
      expect(hint).not.toMatch(DOCTOR);
    }
    expect(describeError(new RateLimitError(undefined, { status: 429, request: TX }), { direct: true }).hint).not.toMatch(/Retry-After/);
  });

  it('a 429 says what the client did: how many retries, or none because the wait asked exceeds --max-retry-wait', () => {
    const retried = new RateLimitError(undefined, { status: 429, request: TX, retryAfterMs: 60_000 });
    recordRetries(retried, { retries: 3, gaveUp: 'attempts', retryAfterMs: 60_000, maxRetryAfterMs: 300_000 });
    expect(describeError(retried, { direct: true }).hint).toMatch(
      /^the service still limited the rate after 3 retries by acctops: run again later \(its last Retry-After asked for 60 s\)/,
    );

    const capped = new RateLimitError(undefined, { status: 429, request: TX, retryAfterMs: 600_000 });
    recordRetries(capped, { retries: 0, gaveUp: 'retry_after_cap', retryAfterMs: 600_000, maxRetryAfterMs: 300_000 });
    const { hint } = describeError(capped, { direct: true });
    expect(hint).toMatch(
      /^no further retry was made: the service asked to wait 600 s, more than --max-retry-wait allows \(300 s\); run again with --max-retry-wait 10m/,
    );
    expect(hint).not.toMatch(/after acctops's retries|still limited the rate after/);

    // The cap as given (0 s is 0 s, not 1), and the smallest value that would have waited, in its shortest spelling.
    const suggested = (retryAfterMs: number, maxRetryAfterMs: number) => {
      const error = new RateLimitError(undefined, { status: 429, request: TX, retryAfterMs });
      recordRetries(error, { retries: 0, gaveUp: 'retry_after_cap', retryAfterMs, maxRetryAfterMs });
      return describeError(error, { direct: true }).hint;
    };
    expect(suggested(1_000, 0)).toBe(
      'no further retry was made: the service asked to wait 1 s, more than --max-retry-wait allows (0 s); run again with --max-retry-wait 1s or more, or later',
    );
    expect(suggested(61_000, 60_000)).toMatch(
      /asked to wait 61 s, more than --max-retry-wait allows \(60 s\); run again with --max-retry-wait 61s or more/,
    );
    expect(suggested(1_500, 1_000)).toMatch(
      /asked to wait 2 s, more than --max-retry-wait allows \(1 s\); run again with --max-retry-wait 2s or more/,
    );
    expect(suggested(7_200_000, 3_600_000)).toMatch(/allows \(3600 s\); run again with --max-retry-wait 2h or more/);

    const budget = new RateLimitError(undefined, { status: 429, request: TX, retryAfterMs: 61_000 });
    recordRetries(budget, { retries: 0, gaveUp: 'budget', retryAfterMs: 61_000, maxRetryAfterMs: undefined });
    expect(describeError(budget, { direct: true }).hint).toMatch(/^no retry was made: the wait the service asked for \(61 s\) did not fit/);
  });

  it('a 400 of a request that carried a page size names --page-size and exports.pageSize, not "run the export again later"', () => {
    const refused = new ApiValidationError(undefined, { status: 400, request: TX, param: 'page_size' });
    const { hint } = describeError(refused, { direct: true });
    expect(hint).toMatch(/--page-size.*exports\.pageSize/);
    expect(hint).not.toMatch(/run the export again later/);
    const unsized = new ApiValidationError(undefined, {
      status: 400,
      request: 'GET /api/v1/accounting/transactions/?date_from=x',
      param: 'date_from',
    });
    expect(describeError(unsized, { direct: true }).hint).not.toMatch(/page-size/);
  });

  it("pagination faults are the service's: report them (foreign_next: or use the address the service gives)", () => {
    for (const reason of ['next_loop', 'invalid_next', 'too_many_pages'] as const) {
      const { hint } = describeError(new PaginationError(reason, 'x', { status: 200, request: TX }), { direct: true });
      expect(hint).toMatch(/the service's `next` links are wrong.*report it to the service's owner/);
      expect(hint).not.toMatch(DOCTOR);
    }
    const foreign = describeError(new PaginationError('foreign_next', 'next leaves …', { status: 200, request: TX }), { direct: true });
    expect(foreign.hint).toMatch(/leaves the base URL.*use that address as the base URL.*report it/);
  });

  it('count_mismatch: the list changed while it was read; run the export again', () => {
    const report = describeError(new ExportCountMismatchError({ request: TX, counts: [203], itemsRead: 202 }));
    expect(report).toEqual({
      exitCode: ExitCode.failure,
      code: 'export_count_mismatch',
      message: `${TX}: pages announced 203 items, 202 were read`,
      hint: expect.stringMatching(/the list changed at the service while it was read.*run the export again$/) as unknown,
    });
  });

  it('a connection never made: in direct mode, check the URL; elsewhere, the service (doctor)', () => {
    const refused = new ConnectionError('127.0.0.1:4711: connection refused (ECONNREFUSED); not sent', {
      request: 'GET /api/v1/companies/?page_size=1000',
      ambiguous: false,
      cause: new TransportFailure('refused', { code: 'ECONNREFUSED' }),
    });
    expect(describeError(refused, { direct: true }).hint).toMatch(
      /check the host, the port and the scheme \(http or https\) of --base-url/,
    );
    expect(describeError(refused).hint).toMatch(DOCTOR);
  });

  it('direct mode: a 404 points at the base URL, a redirect at the address the service answers at', () => {
    const notFound = new NotFoundError(undefined, { status: 404, request: 'GET /api/v1/companies/?page_size=1000' });
    expect(describeError(notFound, { direct: true }).hint).toMatch(/check the base URL .*ending in \/api\/v1/);
    const moved = new AccountingApiError(undefined, { status: 301, request: 'GET /api/v1/companies/?page_size=1000' });
    expect(describeError(moved, { direct: true }).hint).toMatch(/redirects/);
    // Local and AWS mode: the service is the deployment's, which doctor checks.
    expect(describeError(notFound).hint).toMatch(DOCTOR);
  });
});

describe('describeError: a refused credential, per mode', () => {
  const refused = new AuthenticationError(undefined, { status: 401, request: TX, apiCode: 'key_revoked' });

  it('in direct mode names ACCTOPS_API_KEY only: no institution, no stored secret, no doctor', () => {
    const report = describeError(refused, { direct: true });
    expect(report.exitCode).toBe(ExitCode.auth);
    expect(report.hint).toContain('ACCTOPS_API_KEY');
    expect(report.hint).not.toMatch(DOCTOR);
    expect(report.hint).not.toMatch(/ACCTOPS_INSTITUTION|stored secret/);
  });

  it('in the local and AWS modes names every credential and the doctor that checks the stored ones', () => {
    expect(describeError(refused).hint).toMatch(DOCTOR);
    expect(describeError(refused).hint).toContain('ACCTOPS_INSTITUTION');
  });
});
