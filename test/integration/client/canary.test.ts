import { inspect } from 'node:util';
import {
  type AccountingApiWarning,
  type AccountingClient,
  type Transport,
  accessTokenAuth,
  apiKeyAuth,
  fetchTransport,
  institutionAuth,
} from '../../../src/core/accounting-api';
import { type Logger, MemoryLogger } from '../../../src/core/shared/logger';
import { keyPrefix, redact } from '../../../src/core/shared/redact';
import { type RecordingServer, startRecordingServer } from '../../helpers/recording-server';
import { MINUTE, type World, newIdentity, startWorld } from './support';

/**
 * One run of client and sandbox with canary secrets: a mix of successful and failing calls
 * (faults included), then every log line (the client's and the sandbox's), every error message
 * and serialised error, every warning and the sandbox's request log are scanned. No canary may
 * appear anywhere; API keys may appear as their prefix only.
 *
 * The sandbox's lines are captured WITHOUT the shared redactor, so a leak in the sandbox is not
 * hidden by secrets the client registered in this process. The wire itself is the control: every
 * canary did travel over it, and the same scan finds it there.
 */

const INSTITUTION_ID = 'inst_canary';
const CANARY_SECRET = 'CANARY-institution-secret-5f0c2a9e7d41';
const CANARY_WRONG_SECRET = 'CANARY-wrong-secret-77b1e0c3a9f2';
const CANARY_MALFORMED_KEY = 'CANARYmalformedKeyWithoutUnderscore0123';

/** Unredacted capture: what a careless sink would write. */
class RawLogger implements Logger {
  constructor(
    readonly lines: string[],
    private readonly base: Record<string, unknown> = {},
  ) {}
  debug(message: string, fields?: Record<string, unknown>): void {
    this.write('debug', message, fields);
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.write('info', message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.write('warn', message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.write('error', message, fields);
  }
  child(fields: Record<string, unknown>): Logger {
    return new RawLogger(this.lines, { ...this.base, ...fields });
  }
  private write(level: string, message: string, fields?: Record<string, unknown>): void {
    this.lines.push(`${level} ${message} ${inspect({ ...this.base, ...fields }, { depth: 10, breakLength: Infinity })}`);
  }
}

/** The fragments of a secret that must never appear: the whole of it, and the part that is not a prefix. */
function fragments(secret: string): string[] {
  const jwt = secret.split('.');
  if (jwt.length === 3) return [secret, jwt[2]!];
  if (/^[A-Za-z0-9]+_/.test(secret)) return [secret, secret.slice(keyPrefix(secret).length)];
  return [secret];
}

function findCanaries(texts: string[], secrets: string[]): { secret: string; text: string }[] {
  const found: { secret: string; text: string }[] = [];
  for (const secret of secrets) {
    for (const fragment of fragments(secret)) {
      const text = texts.find((t) => t.includes(fragment));
      if (text !== undefined) found.push({ secret: fragment, text: text.slice(0, 300) });
    }
  }
  return found;
}

describe('client and sandbox with canary secrets', () => {
  let world: World;
  let foreign: RecordingServer;
  const sandboxLines: string[] = [];
  const clientLogger = new MemoryLogger();
  const warnings: AccountingApiWarning[] = [];
  const errors: Error[] = [];
  const wire: string[] = [];
  const canaries: string[] = [CANARY_SECRET, `${INSTITUTION_ID}:${CANARY_SECRET}`, CANARY_WRONG_SECRET, CANARY_MALFORMED_KEY];
  const keys: string[] = [];

  /** fetchTransport, with every request and response also written down verbatim: the control. */
  const recording: Transport = async (request) => {
    wire.push(JSON.stringify(request));
    const response = await fetchTransport()(request);
    wire.push(JSON.stringify(response));
    return response;
  };

  const client = (overrides: Parameters<World['client']>[0] = {}): AccountingClient =>
    world.client({ logger: clientLogger, transport: recording, onWarning: (w) => warnings.push(w), ...overrides });
  const institution = (secretKey = CANARY_SECRET) =>
    client({ credentials: institutionAuth({ institutionId: INSTITUTION_ID, secretKey }) }).institution;

  async function fails(work: Promise<unknown>): Promise<void> {
    const outcome = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(outcome).toBeInstanceOf(Error);
    errors.push(outcome as Error);
  }

  beforeAll(async () => {
    world = await startWorld({ logger: new RawLogger(sandboxLines) });
    foreign = await startRecordingServer();
    const { admin } = world.sandbox;
    await admin.createInstitution({ id: INSTITUTION_ID, secret: CANARY_SECRET });
    await admin.generateTransactions({ companyId: world.companyId, month: '2026-10', count: 40 });
    await admin.addCategory({ companyId: world.companyId, name: 'Broken', metadata: `{"token": "${CANARY_SECRET}"` });
    keys.push(world.key, (await admin.createApiKey({ companyId: world.companyId, permissions: ['read_transactions'] })).key);
  });
  afterAll(async () => {
    await foreign.stop();
    await world.sandbox.stop();
  });

  it('runs a mix of successful and failing calls, faults included', async () => {
    const { admin } = world.sandbox;
    const [fullKey, readKey] = keys as [string, string];

    // Institution operations: tokens are issued, rotated and retrieved.
    const identity = newIdentity();
    const created = await institution().createUser(identity);
    const { userId } = await admin.findUser({ institutionId: INSTITUTION_ID, externalId: identity.externalId });
    await admin.grantCompanyAccess({ userId, companyId: world.companyId });
    await institution().verifyToken(created.accessToken);
    const rotated = await institution().refreshToken(created.refreshToken!);
    await admin.faults.add({ route: 'POST /institution/users/token/retrieve/', fault: { type: 'status', status: 503 } });
    const retrieved = await institution().retrieveToken(identity);
    canaries.push(
      created.accessToken,
      created.refreshToken!,
      rotated.accessToken,
      rotated.refreshToken,
      retrieved.accessToken,
      retrieved.refreshToken,
    );
    expect(
      await client({ credentials: accessTokenAuth(rotated.accessToken) })
        .companies.list()
        .all(),
    ).toHaveLength(1);

    // Bearer operations with the key, through 5xx, resets and a partial body.
    await admin.faults.add({ route: 'GET /accounting/transactions/', fault: { type: 'status', status: 503 } });
    await admin.faults.add({ route: 'GET /accounting/transactions/', after: 1, fault: { type: 'reset' } });
    await admin.faults.add({ route: 'GET /accounting/transactions/', after: 2, fault: { type: 'reset', phase: 'partial' } });
    expect(await client().transactions.list({ pageSize: 15 }).all()).toHaveLength(40);
    await client().categories.list().all(); // warns about the broken metadata
    const minted = await client().apiKeys.create({ name: 'canary', permissions: ['read_categories'] });
    keys.push(minted.key);
    await client({ credentials: apiKeyAuth(minted.key) })
      .categories.list()
      .all();
    await client().apiKeys.list().all();
    await client().apiKeys.revoke(minted.publicId);

    // Failures of every kind.
    await admin.faults.add({ route: 'POST /institution/users/token/refresh/', fault: { type: 'malformed_json' } });
    await fails(institution().refreshToken(rotated.refreshToken)); // the body held the new tokens
    await admin.faults.add({ route: 'POST /institution/users/token/retrieve/', fault: { type: 'drop_field', field: 'refreshToken' } });
    await fails(institution().retrieveToken(identity)); // the body held an access token
    await fails(institution().refreshToken(created.refreshToken!)); // reuse: invalid_grant
    await fails(institution(CANARY_WRONG_SECRET).verifyToken(retrieved.accessToken));
    await fails(
      client({ credentials: apiKeyAuth(minted.key) })
        .categories.list()
        .all(),
    ); // revoked
    await fails(client({ credentials: apiKeyAuth(readKey) }).apiKeys.create({ name: 'x', permissions: ['full_access'] }));
    await fails(
      client({ credentials: apiKeyAuth(CANARY_MALFORMED_KEY) })
        .companies.list()
        .all(),
    );
    await admin.faults.add({ route: 'GET /companies/', times: 'always', fault: { type: 'status', status: 502, body: 'html' } });
    await fails(
      client({ credentials: apiKeyAuth(readKey) })
        .companies.list()
        .all(),
    );
    await admin.faults.clear();
    await admin.faults.add({ route: 'GET /accounting/transactions/', times: 'always', fault: { type: 'reset', phase: 'after' } });
    await fails(
      client({ credentials: apiKeyAuth(readKey), retry: { maxAttempts: 2 } })
        .transactions.list()
        .all(),
    );
    await admin.faults.clear();
    await admin.faults.add({ route: 'GET /accounting/transactions/', fault: { type: 'slow', delayMs: MINUTE } });
    await fails(
      client({ timeoutMs: 100, retry: { maxAttempts: 1 } })
        .transactions.list()
        .all(),
    );
    world.clock.advance(MINUTE);
    // A foreign next that carries the key in its query: refused outside the base path. Under it, a
    // next is requested on the base origin (decision 108), query and all; the service's own request
    // log would then hold what its link carried, so that one carries no key.
    await admin.faults.add({
      route: 'GET /accounting/transactions/',
      fault: { type: 'foreign_next', url: `${foreign.origin}/elsewhere/api/v1/accounting/transactions/?api_key=${fullKey}&page=2` },
    });
    await fails(client().transactions.list({ pageSize: 10 }).all());
    await admin.faults.add({
      route: 'GET /accounting/transactions/',
      fault: { type: 'foreign_next', url: `${foreign.origin}/api/v1/accounting/transactions/?page=2&page_size=10` },
    });
    await client().transactions.list({ pageSize: 10 }).all();
    await admin.faults.add({ route: 'GET /accounting/transactions/', fault: { type: 'count_mismatch' } });
    await client().transactions.list().all();
    world.clock.advance(30 * MINUTE + 1000);
    await fails(
      client({ credentials: accessTokenAuth(retrieved.accessToken) })
        .companies.list()
        .all(),
    ); // expired
    await admin.configure({ rateLimit: { requestsPerSecond: 1, burst: 1 } });
    await fails(
      (async () => {
        const limited = client({ credentials: apiKeyAuth(readKey), retry: { maxAttempts: 1 } });
        await limited.transactions.list().all();
        await limited.transactions.list().all();
      })(),
    );
    await admin.configure({ rateLimit: null });
    await institution().expireToken(retrieved.refreshToken);

    // A careless caller dumps whole exchanges, secrets in free text, into the client's logger:
    // only the redactor (fed by the client's registerSecret calls) stands between them and the log.
    for (const entry of wire) clientLogger.debug('wire dump', { entry });

    expect(errors.map((e) => e.name)).toEqual([
      'ResponseValidationError',
      'ResponseValidationError',
      'InvalidGrantError',
      'AuthenticationError',
      'KeyRevokedError',
      'PermissionDeniedError',
      'MalformedApiKeyError',
      'ServerError',
      'ConnectionError',
      'TimeoutError',
      'PaginationError',
      'TokenExpiredError',
      'RateLimitError',
    ]);
    expect(warnings.map((w) => w.type).sort()).toEqual([
      'count_mismatch',
      'invalid_category_metadata',
      'invalid_category_metadata',
      'next_rebased',
    ]);
    expect(foreign.requests).toEqual([]);
  });

  function capturedTexts(requestLog: unknown): string[] {
    return [
      ...clientLogger.lines,
      ...sandboxLines,
      ...errors.flatMap((e) => [e.message, String(e.stack), JSON.stringify(e), JSON.stringify(redact(e)), inspect(e, { depth: 10 })]),
      ...warnings.map((w) => JSON.stringify(w)),
      JSON.stringify(requestLog),
    ];
  }

  it('leaves no canary in any log line, error message, serialised error, warning or request log', async () => {
    const texts = capturedTexts(await world.sandbox.admin.requestLog());
    const secrets = [...canaries, ...keys];
    expect(secrets).toHaveLength(4 + 6 + 3);
    expect(findCanaries(texts, secrets)).toEqual([]);

    // The scan read real material: the wire was dumped, retries were logged, the sandbox logged every request, and
    // keys show up as their prefix (in the request log and the client's messages).
    expect(clientLogger.entries().filter((e) => e.message === 'wire dump')).toHaveLength(wire.length);
    expect(clientLogger.entries().filter((e) => e.message === 'accounting api request will be retried').length).toBeGreaterThanOrEqual(5);
    expect(sandboxLines.filter((l) => l.startsWith('debug sandbox request')).length).toBe((await world.sandbox.admin.stats()).requests);
    for (const key of keys) expect(texts.some((t) => t.includes(keyPrefix(key)))).toBe(true);
  });

  it('control: the same scan finds every canary on the wire, and in an unredacted line', () => {
    const secrets = [...canaries, ...keys].filter((s) => s !== CANARY_MALFORMED_KEY); // refused before sending
    const onWire = findCanaries(wire, secrets).map((f) => f.secret);
    for (const secret of secrets) expect(onWire).toContain(secret);
    expect(findCanaries(wire, [CANARY_MALFORMED_KEY])).toEqual([]);
    const careless = inspect({ headers: { authorization: `Bearer ${keys[0]}`, institution: `${INSTITUTION_ID}:${CANARY_SECRET}` } });
    expect(findCanaries([careless], [keys[0]!, CANARY_SECRET]).map((f) => f.secret)).toEqual([keys[0], keys[0]!.slice(12), CANARY_SECRET]);
  });
});
