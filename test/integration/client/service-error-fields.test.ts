import { createServer, type Server, type ServerResponse } from 'node:http';
import {
  AccountingApiError,
  ApiValidationError,
  AuthenticationError,
  PermissionDeniedError,
  ResponseValidationError,
  apiKeyAuth,
  createAccountingClient,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { redact } from '../../../src/core/shared/redact';
import { describeFailure, failureCode, isInstitutionRefusal } from '../../../src/core/tokens/token-failures';
import { canaryApiKey, expectNoCanaries, trackSecret } from '../../helpers/canary';
import { closeServer, listenOnLoopback } from '../../helpers/loopback';

/**
 * The service's error fields other than its message (`code`, `type`, `param`, `permission`, the
 * request id in the `X-Request-Id` header or the body) reach the error's message, its fields, the
 * CLI's --json, log lines and the `ExportFailed`/`TokenRefreshFailed` events. A service (or a proxy,
 * or a fault) that echoes a key there must not make us print it: the real client against a real
 * HTTP server that answers so. The keys are never registered with the redactor, as a key the
 * service echoes but we never held would not be.
 */

const OURS = canaryApiKey('service-error-fields-ours');
/** A key of the sandbox's shape and one of another service's, neither registered. */
const ECHOED = canaryApiKey('service-error-fields-echoed');
const OTHER_SHAPE = 'sk_live_Q7pXz9LmN2vB4kR8tY1wE6uI3oA5';

type Answer = { status: number; headers?: Record<string, string>; body: unknown };
let answer: Answer;
let server: Server;
let origin: string;

function send(res: ServerResponse, { status, headers, body }: Answer): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

beforeAll(async () => {
  trackSecret(OURS);
  trackSecret(ECHOED);
  trackSecret(OTHER_SHAPE);
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => send(res, answer));
  });
  origin = await listenOnLoopback(server);
});
afterAll(() => closeServer(server));

async function failure(): Promise<AccountingApiError> {
  const client = createAccountingClient({
    baseUrl: `${origin}/api/v1`,
    credentials: apiKeyAuth(OURS),
    clock: ManualClock.autoAdvancing(),
    retry: { maxAttempts: 1 },
  });
  const error = await client.companies
    .list()
    .all()
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(AccountingApiError);
  return error as AccountingApiError;
}

/** Every place the error's text goes: its message, its fields, the redactor's copy, the events' description. */
function everything(error: AccountingApiError): string {
  return JSON.stringify({
    message: error.message,
    fields: { ...error },
    logged: redact(error),
    described: describeFailure(error),
  });
}

function expectNoKey(text: string): void {
  for (const key of [ECHOED, OTHER_SHAPE]) expect(text).not.toContain(key.slice(key.indexOf('_') + 1 + 8));
  expectNoCanaries(text, 'the client error');
}

describe('the service error fields that are not its message', () => {
  it.each<[string, string]>([
    ['a key of the sandbox shape', ECHOED],
    ['a key of another service shape (sk_live_)', OTHER_SHAPE],
  ])('a 400 whose DRF code and request id are %s: withheld, in the message, the fields and the description', async (_label, key) => {
    answer = { status: 400, body: { detail: `bad ${key}`, code: key, request_id: key } };
    const error = await failure();
    expect(error).toBeInstanceOf(ApiValidationError);
    expect(error).toMatchObject({ status: 400, apiCode: '[REDACTED]', requestId: '[REDACTED]' });
    expect(error.message).toMatch(
      /^request refused as invalid \(400, \[REDACTED\], on GET \/api\/v1\/companies\/, request id \[REDACTED\]\): bad /,
    );
    expectNoKey(everything(error));
    expect(failureCode(error)).toBeUndefined();
  });

  it('an envelope whose type, code, param and permission hold a key, and an X-Request-Id that is one', async () => {
    answer = {
      status: 403,
      headers: { 'x-request-id': ECHOED },
      body: { error: { type: ECHOED, code: ECHOED, message: 'no', param: ECHOED, permission: OTHER_SHAPE, requestId: ECHOED } },
    };
    const error = await failure();
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).toMatchObject({ apiType: '[REDACTED]', apiCode: '[REDACTED]', permission: '[REDACTED]', requestId: '[REDACTED]' });
    expectNoKey(everything(error));
  });

  it('a 401 whose code was withheld is still a refusal the service explained, not the institution credential', async () => {
    answer = { status: 401, body: { detail: 'no', code: ECHOED } };
    const error = await failure();
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(isInstitutionRefusal(error as AuthenticationError)).toBe(false);
    expectNoKey(everything(error));
  });

  it('keeps the fields that are identifiers: a code, a field path, a permission, a UUID or hex request id', async () => {
    answer = {
      status: 403,
      headers: { 'x-request-id': '6f1c2a3b-0000-4000-8000-000000000000' },
      body: {
        error: { type: 'permission_error', code: 'permission_denied', message: 'no', param: 'items[1].rate', permission: 'read_invoices' },
      },
    };
    expect(await failure()).toMatchObject({
      apiType: 'permission_error',
      apiCode: 'permission_denied',
      permission: 'read_invoices',
      requestId: '6f1c2a3b-0000-4000-8000-000000000000',
    });
    answer = { status: 400, headers: { 'x-request-id': '0123456789abcdef0123456789abcdef' }, body: { date_from: ['Enter a valid date.'] } };
    expect(await failure()).toMatchObject({ param: 'date_from', requestId: '0123456789abcdef0123456789abcdef' });
    // The sandbox's own request ids; a prefix and 20 random characters or more would be a key's shape.
    answer = { status: 404, headers: { 'x-request-id': 'req_0123456789abcdef' }, body: { detail: 'Not found.' } };
    expect(await failure()).toMatchObject({ requestId: 'req_0123456789abcdef' });
  });

  it('a success whose X-Request-Id is a key: the response error that follows names no key', async () => {
    answer = { status: 200, headers: { 'x-request-id': ECHOED }, body: { count: 1, next: null, previous: null, results: [{ nope: 1 }] } };
    const error = await failure();
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect(error.requestId).toBe('[REDACTED]');
    expectNoKey(everything(error));
  });
});
