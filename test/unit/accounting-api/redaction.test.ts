import {
  AccountingClient,
  type AccountingClientOptions,
  TransportFailure,
  accessTokenAuth,
  apiKeyAuth,
  institutionAuth,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { forgetRegisteredSecrets, keyPrefix, redact } from '../../../src/core/shared/redact';
import { BASE_URL, type Handler, apiError, fakeTransport, json, transaction } from './fake-transport';
import { CANARY } from '../../helpers/canary';

/**
 * Canary secrets go through every failure path the client has; none may come out in an error
 * message, a serialised error (what a logger writes) or a log line.
 */
const CANARY_KEY = CANARY.apiKey;
const CANARY_TOKEN = CANARY.accessToken;
const CANARY_SECRET = CANARY.institutionSecret;
const CANARY_NEW_KEY = CANARY.otherApiKey;
const CANARIES = [
  CANARY_KEY,
  CANARY_TOKEN,
  CANARY_SECRET,
  CANARY_NEW_KEY,
  CANARY_KEY.slice('sbx_'.length),
  CANARY_NEW_KEY.slice('sbx_'.length),
];

const USER = { username: 'ada', email: 'ada@example.com', externalId: '6a1f0c2e-8b3d-4e5f-9a7b-1c2d3e4f5a6b' };

/** A server that echoes whatever credential it got, the way a careless service might. */
const echo =
  (status: number, type: string, code: string): Handler =>
  (request) =>
    apiError(status, type, code, {
      message: `bad credential ${request.headers.authorization ?? ''} ${request.headers.institution ?? ''} body=${request.body ?? ''}`,
    });

describe('redaction of canary secrets', () => {
  const logger = new MemoryLogger();
  const errors: unknown[] = [];

  beforeAll(() => forgetRegisteredSecrets()); // the client must register what it handles by itself

  function client(handler: Handler, overrides: Partial<AccountingClientOptions> = {}) {
    return new AccountingClient({
      baseUrl: BASE_URL,
      credentials: apiKeyAuth(CANARY_KEY),
      transport: fakeTransport(handler).transport,
      clock: ManualClock.autoAdvancing(),
      logger,
      random: () => 0,
      onWarning: () => undefined,
      retry: { maxAttempts: 2 },
      ...overrides,
    });
  }

  async function collect(run: () => Promise<unknown>): Promise<void> {
    const error = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    errors.push(error);
  }

  const institution = { credentials: institutionAuth({ institutionId: 'inst_1', secretKey: CANARY_SECRET }) };

  it('drives every failure path', async () => {
    await collect(() =>
      client(echo(401, 'authentication_error', 'key_revoked'))
        .companies.list()
        .all(),
    );
    await collect(() =>
      client(echo(503, 'api_error', 'unavailable'))
        .transactions.list()
        .all(),
    );
    await collect(() =>
      client(echo(403, 'permission_error', 'permission_denied')).apiKeys.create({ name: 'n', permissions: ['full_access'] }),
    );
    await collect(() =>
      client(echo(401, 'authentication_error', 'token_expired'), { credentials: accessTokenAuth(CANARY_TOKEN) })
        .companies.list()
        .all(),
    );
    await collect(() =>
      client(echo(401, 'authentication_error', 'institution_invalid'), institution).institution.verifyToken(CANARY_TOKEN),
    );
    await collect(() => client(echo(400, 'invalid_grant', 'refresh_token_used'), institution).institution.refreshToken(CANARY_TOKEN));
    await collect(() => client(echo(500, 'api_error', 'internal_error'), institution).institution.createUser(USER));
    // The service answers with a key nobody registered yet.
    await collect(() =>
      client(() => apiError(409, 'conflict_error', 'state_prevents_change', { message: `key ${CANARY_NEW_KEY} is in use` })).apiKeys.revoke(
        '4b3a2c1d-0e9f-4a8b-9c7d-6e5f4a3b2c1d',
      ),
    );
    // A created key in a response that fails validation.
    await collect(() =>
      client(() => json(201, { key: CANARY_NEW_KEY, name: 42 })).apiKeys.create({ name: 'n', permissions: ['full_access'] }),
    );
    // Tokens in a body that is not valid JSON.
    await collect(() =>
      client(() => ({ status: 200, headers: {}, body: `{"accessToken": "${CANARY_TOKEN}", ` }), institution).institution.retrieveToken(
        USER,
      ),
    );
    // A transport that puts the credential in its own error.
    await collect(() =>
      client((r) => {
        throw new TransportFailure('timeout', { cause: new Error(`timeout with ${r.headers.authorization}`) });
      })
        .companies.list()
        .all(),
    );
    await collect(() =>
      client((r) => {
        throw new Error(`socket closed while sending ${r.headers.authorization}`);
      })
        .companies.list()
        .all(),
    );
    // A foreign next that carries the key in its query.
    await collect(() =>
      client(() =>
        json(200, { count: 3, next: `http://evil.test/api/v1/x/?key=${CANARY_KEY}&page=2`, previous: null, results: [transaction(1)] }),
      )
        .transactions.list()
        .all(),
    );
    // Refused before sending: a malformed key.
    await collect(() =>
      client(() => json(200, {}), { credentials: apiKeyAuth('CANARYkey0123456789abcdefghijklmn') })
        .companies.list()
        .all(),
    );
    expect(errors).toHaveLength(14);
  });

  it('leaves no canary in any error message, serialised error or log line', () => {
    expect(logger.lines.length).toBeGreaterThan(0); // retries were logged
    const texts = [
      ...errors.map((e) => (e as Error).message),
      ...errors.map((e) => String((e as Error).stack)),
      ...errors.map((e) => JSON.stringify(redact(e))),
      ...logger.lines,
    ];
    for (const text of texts) {
      for (const canary of CANARIES) expect(text).not.toContain(canary);
    }
  });

  it('still says what happened', () => {
    const messages = errors.map((e) => (e as Error).message);
    expect(messages[0]).toMatch(
      /API key revoked \(401, key_revoked, on GET \/api\/v1\/companies\/\?page_size=1000, request id req_0123abcd\)/,
    );
    expect(messages[7]).toContain(keyPrefix(CANARY_NEW_KEY));
  });
});
