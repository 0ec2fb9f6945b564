import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import { gzipSync } from 'node:zlib';
import { generate } from 'selfsigned';
import {
  AccountingApiError,
  type AccountingClient,
  ConnectionError,
  type CredentialProvider,
  type RetryWait,
  type Transport,
  apiKeyAuth,
  createAccountingClient,
  fetchTransport,
  httpTransport,
  institutionAuth,
  retryRecordOf,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { CANARY, expectNoCanaries, textOf } from '../../helpers/canary';
import { closeServer, listenOnLoopback } from '../../helpers/loopback';

/**
 * The real client over real TLS on loopback, through both transports: the service is always https
 * in production, and only here does a TLS handshake happen. The certificates (a CA, servers it
 * issued, a self-signed one) are made when the suite starts, in memory: no key is ever written to
 * disk or to the repository.
 *
 * A trusted CA is a case of `httpTransport` only: it takes an https Agent (`ca`), while
 * `fetchTransport` takes a `fetch`, and Node 20's global fetch trusts only the roots the process
 * started with (built in, or added by NODE_EXTRA_CA_CERTS): its `dispatcher` option needs the undici
 * package's Agent, which acctops does not depend on. The refusals need no trust and run through both.
 *
 * A refused handshake is final (decision 74): the server's own counters show one connection, not
 * the four a retried failure makes, while a refused connection and a reset are still retried.
 */

const PAGE = {
  count: 2,
  next: null,
  previous: null,
  results: [
    {
      publicId: '00000000-0000-4000-8000-000000000001',
      amount: '-49.99',
      currency: 'EUR',
      cashflowType: 'EXPENSE',
      valueDate: '2026-10-31T23:30:00-02:00',
      description: 'über TLS',
      category: null,
      bankAccount: '11111111-2222-4333-8444-555555555555',
    },
    {
      publicId: '00000000-0000-4000-8000-000000000002',
      amount: '12.50',
      currency: 'EUR',
      cashflowType: 'INCOME',
      valueDate: '2026-10-30T08:00:00+00:00',
      description: 'refund',
      category: null,
      bankAccount: '11111111-2222-4333-8444-555555555555',
    },
  ],
};
const TX_PATH = '/api/v1/accounting/transactions/';

/** What a server saw: TCP connections (one per attempt), finished handshakes, HTTP requests. */
interface Seen {
  connections: number;
  handshakes: number;
  requests: { method: string; path: string; authorization?: string; encoding?: string }[];
  /** How many of the next TCP connections the server resets before any handshake. */
  resetNext: number;
}

interface Endpoint {
  server: http.Server;
  origin: string;
  seen: Seen;
}

/** Answers the transactions list; gzip-compressed when `gzip` is set and the client asks for it. */
let gzip = false;
/** When set, answers the transactions list instead: a page's `next`, a redirect. */
let answer: ((res: http.ServerResponse) => void) | undefined;

function handle(seen: Seen) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    const compress = gzip && String(req.headers['accept-encoding']).includes('gzip');
    seen.requests.push({ method: req.method!, path, authorization: req.headers.authorization, encoding: compress ? 'gzip' : undefined });
    if (path !== TX_PATH) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end('{"detail":"Not found."}');
    }
    if (answer) return answer(res);
    const body = Buffer.from(JSON.stringify(PAGE));
    res.writeHead(200, { 'content-type': 'application/json', ...(compress ? { 'content-encoding': 'gzip' } : {}) });
    res.end(compress ? gzipSync(body) : body);
  };
}

async function serve(tls: https.ServerOptions | undefined): Promise<Endpoint> {
  const seen: Seen = { connections: 0, handshakes: 0, requests: [], resetNext: 0 };
  const server = tls ? https.createServer(tls, handle(seen)) : http.createServer(handle(seen));
  server.on('connection', (socket: net.Socket) => {
    seen.connections++;
    if (seen.resetNext > 0) {
      seen.resetNext--;
      socket.resetAndDestroy();
    }
  });
  server.on('secureConnection', () => seen.handshakes++);
  const origin = await listenOnLoopback(server);
  return { server, origin: tls ? origin.replace('http:', 'https:') : origin, seen };
}

const EC = { keyType: 'ec', algorithm: 'sha256' } as const;
const serverExtensions = (altNames: { type: 2 | 7; value?: string; ip?: string }[]) => [
  { name: 'basicConstraints' as const, cA: false },
  { name: 'keyUsage' as const, digitalSignature: true },
  { name: 'extKeyUsage' as const, serverAuth: true },
  { name: 'subjectAltName' as const, altNames },
];

let caCert: string;
const endpoints = {} as Record<'issued' | 'chained' | 'selfSigned' | 'otherName' | 'expired' | 'legacy' | 'mutual' | 'plain', Endpoint>;

beforeAll(async () => {
  const ca = await generate([{ name: 'commonName', value: 'acctops test CA' }], {
    ...EC,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  caCert = ca.cert;
  const issuer = { key: ca.private, cert: ca.cert };
  const loopback = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    ...EC,
    ca: issuer,
    extensions: serverExtensions([
      { type: 7, ip: '127.0.0.1' },
      { type: 2, value: 'localhost' },
    ]),
  });
  const elsewhere = await generate([{ name: 'commonName', value: 'accounting.example.com' }], {
    ...EC,
    ca: issuer,
    extensions: serverExtensions([{ type: 2, value: 'accounting.example.com' }]),
  });
  const lapsed = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    ...EC,
    ca: issuer,
    notBeforeDate: new Date(Date.now() - 30 * 86_400_000),
    notAfterDate: new Date(Date.now() - 86_400_000),
    extensions: serverExtensions([{ type: 7, ip: '127.0.0.1' }]),
  });
  const selfSigned = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    ...EC,
    extensions: serverExtensions([{ type: 7, ip: '127.0.0.1' }]),
  });
  Object.assign(endpoints, {
    issued: await serve({ key: loopback.private, cert: loopback.cert }),
    chained: await serve({ key: loopback.private, cert: `${loopback.cert.trim()}\n${ca.cert}` }),
    selfSigned: await serve({ key: selfSigned.private, cert: selfSigned.cert }),
    otherName: await serve({ key: elsewhere.private, cert: elsewhere.cert }),
    expired: await serve({ key: lapsed.private, cert: lapsed.cert }),
    // A legacy endpoint: TLS 1.0 only (OpenSSL 3 needs security level 0 to speak it at all).
    legacy: await serve({
      key: loopback.private,
      cert: loopback.cert,
      minVersion: 'TLSv1',
      maxVersion: 'TLSv1',
      ciphers: 'DEFAULT@SECLEVEL=0',
    }),
    // Mutual TLS: a client certificate of the test CA required, TLS 1.3 (where the refusal comes after our Finished).
    mutual: await serve({
      key: loopback.private,
      cert: loopback.cert,
      requestCert: true,
      rejectUnauthorized: true,
      ca: ca.cert,
      minVersion: 'TLSv1.3',
    }),
    plain: await serve(undefined),
  });
});

afterAll(async () => {
  for (const { server } of Object.values(endpoints)) await closeServer(server);
});

beforeEach(() => {
  gzip = false;
  answer = undefined;
  for (const { seen } of Object.values(endpoints)) Object.assign(seen, { connections: 0, handshakes: 0, requests: [], resetNext: 0 });
});

function clientFor(
  endpoint: Endpoint,
  transport: Transport,
  credentials: CredentialProvider = apiKeyAuth(CANARY.apiKey),
): { client: AccountingClient; waits: RetryWait[]; logger: MemoryLogger } {
  const waits: RetryWait[] = [];
  // Logged retries go through the canary hook (test/helpers/canary-setup.ts) like any log line.
  const logger = new MemoryLogger();
  const client = createAccountingClient({
    baseUrl: `${endpoint.origin}/api/v1`,
    credentials,
    transport,
    clock: ManualClock.autoAdvancing(),
    random: () => 0,
    logger,
    onRetryWait: (wait) => waits.push(wait),
  });
  return { client, waits, logger };
}

async function rejectionOf(work: Promise<unknown>): Promise<Error> {
  const outcome: unknown = await work.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error(`expected a rejection with an Error, got ${String(outcome)}`);
  return outcome;
}

/** Neither credential anywhere in the error: message, JSON, causes, own properties. */
function expectNoCredential(error: Error): void {
  for (const text of [error.message, JSON.stringify(error), textOf(error)]) {
    expect(text).not.toContain(CANARY.apiKey);
    expect(text).not.toContain(CANARY.institutionSecret);
  }
  expectNoCanaries(error, 'the TLS failure');
}

/** Raised after the first attempt: no wait, no retry logged, and the client's record says why it stopped. */
function expectNotRetried(error: Error, waits: RetryWait[], logger: MemoryLogger): void {
  expect(error).toMatchObject({ final: true });
  expect(error.cause).toMatchObject({ final: true });
  expect(waits).toEqual([]);
  expect(logger.entries().filter((e) => e.message === 'accounting api request will be retried')).toEqual([]);
  expect(retryRecordOf(error)).toMatchObject({ retries: 0, gaveUp: 'not_retryable' });
}

/**
 * A list read through a server whose certificate is refused: the client's error names the code,
 * nothing was sent, one connection was made (a retried failure makes four), no credential in it.
 */
function expectCertificateRefused(
  error: Error,
  endpoint: Endpoint,
  code: string,
  attempt: { waits: RetryWait[]; logger: MemoryLogger },
): void {
  expect(error).toBeInstanceOf(ConnectionError);
  expect(error).toMatchObject({ ambiguous: false, code: 'connection_failed', status: undefined });
  expect(error.message).toBe(
    `connection failed (on GET /api/v1/accounting/transactions/?page_size=1000): ${new URL(endpoint.origin).host}: ` +
      `TLS handshake failed (${code}): the server's certificate was refused; not sent`,
  );
  expect(error.cause).toMatchObject({ name: 'TransportFailure', kind: 'refused', code });
  expectNotRetried(error, attempt.waits, attempt.logger);
  expect(endpoint.seen).toMatchObject({ connections: 1, handshakes: 0, requests: [] });
  expectNoCredential(error);
}

describe('a trusted certificate (httpTransport with an Agent that trusts the test CA)', () => {
  it('reads a list page, gzip-compressed or not, and the second request reuses the TLS connection', async () => {
    const { issued } = endpoints;
    const agent = new https.Agent({ keepAlive: true, ca: caCert });
    try {
      const { client } = clientFor(issued, httpTransport({ https: agent }));
      const first = await client.transactions.list().all();
      gzip = true;
      const second = await client.transactions.list().all();

      for (const items of [first, second]) {
        expect(items.map((i) => [i.parsed.publicId, i.parsed.amount, i.parsed.description])).toEqual([
          ['00000000-0000-4000-8000-000000000001', -4999n, 'über TLS'],
          ['00000000-0000-4000-8000-000000000002', 1250n, 'refund'],
        ]);
      }
      expect(issued.seen.requests).toEqual([
        { method: 'GET', path: TX_PATH, authorization: `Bearer ${CANARY.apiKey}`, encoding: undefined },
        { method: 'GET', path: TX_PATH, authorization: `Bearer ${CANARY.apiKey}`, encoding: 'gzip' },
      ]);
      // One TCP connection, one handshake: the second request went over the kept-alive session.
      expect(issued.seen).toMatchObject({ connections: 1, handshakes: 1 });
    } finally {
      agent.destroy();
    }
  });

  it.each([
    ['for another name', 'ERR_TLS_CERT_ALTNAME_INVALID', 'otherName'],
    ['expired yesterday', 'CERT_HAS_EXPIRED', 'expired'],
  ] as const)(
    'a certificate of the trusted CA %s: ConnectionError naming %s, not ambiguous, attempted once, nothing sent',
    async (_label, code, which) => {
      const endpoint = endpoints[which];
      const agent = new https.Agent({ keepAlive: true, ca: caCert });
      try {
        const { client, waits, logger } = clientFor(endpoint, httpTransport({ https: agent }));
        expectCertificateRefused(await rejectionOf(client.transactions.list().all()), endpoint, code, { waits, logger });
      } finally {
        agent.destroy();
      }
    },
  );

  it('a server that requires a client certificate (TLS 1.3): refused as that, attempted once, nothing processed', async () => {
    const { mutual } = endpoints;
    const agent = new https.Agent({ keepAlive: true, ca: caCert });
    try {
      const { client, waits, logger } = clientFor(mutual, httpTransport({ https: agent }));
      const error = await rejectionOf(client.transactions.list().all());
      expect(error).toBeInstanceOf(ConnectionError);
      // It was `reset`: "the request may have been processed", retried, and no word of the cause.
      expect(error).toMatchObject({ ambiguous: false });
      expect(error.cause).toMatchObject({ kind: 'refused', code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' });
      expect(error.message).toMatch(
        /TLS handshake failed \(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED\): the server requires a client certificate \(mutual TLS\), which acctops does not present; not sent$/,
      );
      expectNotRetried(error, waits, logger);
      expect(mutual.seen).toMatchObject({ connections: 1, handshakes: 0, requests: [] });
      expectNoCredential(error);
    } finally {
      agent.destroy();
    }
  });
});

describe.each([
  ['httpTransport', () => httpTransport()],
  ['fetchTransport', () => fetchTransport()],
])('%s with its default trust (the built-in roots)', (_name, transport) => {
  it.each([
    ['a self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'selfSigned'],
    ['a certificate of an unknown CA, the CA sent along', 'SELF_SIGNED_CERT_IN_CHAIN', 'chained'],
    ['a certificate of an unknown CA, alone', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'issued'],
  ] as const)(
    '%s: ConnectionError naming %s, not ambiguous, attempted once, nothing sent, no credential in it',
    async (_label, code, which) => {
      const endpoint = endpoints[which];
      const { client, waits, logger } = clientFor(endpoint, transport());
      expectCertificateRefused(await rejectionOf(client.transactions.list().all()), endpoint, code, { waits, logger });
    },
  );

  it('an unsafe POST with the Institution credential: attempted once as well, and the credential is in no error', async () => {
    const { selfSigned } = endpoints;
    const { client, waits, logger } = clientFor(
      selfSigned,
      transport(),
      institutionAuth({ institutionId: CANARY.institutionId, secretKey: CANARY.institutionSecret }),
    );
    const error = await rejectionOf(
      client.institution.createUser({ username: 'tls-user', email: 'tls@example.com', externalId: '6c1f7c2e-5a0b-4d4e-9f3a-0b1c2d3e4f50' }),
    );
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ ambiguous: false });
    expect(error.message).toMatch(/^connection failed \(on POST \/api\/v1\/institution\/users\/create\/\): /);
    expect(error.message).toMatch(/TLS handshake failed \(DEPTH_ZERO_SELF_SIGNED_CERT\).*; not sent$/);
    expectNotRetried(error, waits, logger);
    expect(selfSigned.seen).toMatchObject({ connections: 1, requests: [] });
    expectNoCredential(error);
  });

  it('a server that speaks only TLS 1.0: refused, named by OpenSSL as both transports name it, attempted once, nothing sent', async () => {
    const { legacy } = endpoints;
    const { client, waits, logger } = clientFor(legacy, transport());
    const error = await rejectionOf(client.transactions.list().all());
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ ambiguous: false });
    // Node 20's OpenSSL: the server answers our TLS 1.2+ hello with a protocol_version alert.
    expect(error.cause).toMatchObject({ kind: 'refused', code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    expect(error.message).toMatch(
      /TLS handshake failed \(ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION\): no TLS version or cipher both sides accept; not sent$/,
    );
    expectNotRetried(error, waits, logger);
    expect(legacy.seen).toMatchObject({ connections: 1, handshakes: 0, requests: [] });
  });
});

/**
 * An http server behind an https:// URL. httpTransport's `EPROTO` path is also run against real
 * servers in test/unit/accounting-api/http-transport.test.ts (the transport),
 * test/integration/client/errors.test.ts (the client) and test/cli/export-direct-faults.test.ts
 * (the CLI); the fetch transport had it only from a stand-in error before this suite.
 */
describe.each([
  ['httpTransport', () => httpTransport()],
  ['fetchTransport', () => fetchTransport()],
])('%s, https:// to an http server', (_name, transport) => {
  it('refused as ERR_SSL_WRONG_VERSION_NUMBER, attempted once, nothing processed', async () => {
    const { plain } = endpoints;
    const { client, waits, logger } = clientFor({ ...plain, origin: plain.origin.replace('http:', 'https:') }, transport());
    const error = await rejectionOf(client.transactions.list().all());
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ ambiguous: false });
    expect(error.cause).toMatchObject({ kind: 'refused', code: 'ERR_SSL_WRONG_VERSION_NUMBER' });
    expect(error.message).toMatch(/TLS handshake failed \(ERR_SSL_WRONG_VERSION_NUMBER\).*an http:\/\/ server\?\); not sent$/);
    expectNotRetried(error, waits, logger);
    expect(plain.seen).toMatchObject({ connections: 1, requests: [] });
  });
});

/** A port on loopback that nothing listens on: one the system just gave out, closed again. */
async function closedPort(): Promise<number> {
  const probe = http.createServer();
  const port = Number(new URL(await listenOnLoopback(probe)).port);
  await closeServer(probe);
  return port;
}

/** Counts the attempts that reach the transport, for an endpoint where no server can count them. */
function counted(transport: Transport): { transport: Transport; attempts: () => number } {
  let attempts = 0;
  return {
    transport: (request) => {
      attempts++;
      return transport(request);
    },
    attempts: () => attempts,
  };
}

describe.each([
  ['httpTransport', () => httpTransport()],
  ['fetchTransport', () => fetchTransport()],
])('%s: what may pass is still retried', (_name, transport) => {
  it('an https:// URL whose port refuses the connection (ECONNREFUSED): retried to the last attempt, not final', async () => {
    const port = await closedPort();
    const attempts = counted(transport());
    const endpoint = { ...endpoints.issued, origin: `https://127.0.0.1:${port}` };
    const { client, waits } = clientFor(endpoint, attempts.transport);
    const error = await rejectionOf(client.transactions.list().all());
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ ambiguous: false, final: false });
    expect(error.cause).toMatchObject({ kind: 'refused', code: 'ECONNREFUSED', final: false });
    expect(error.message).toMatch(/connection refused \(ECONNREFUSED\).*; not sent$/);
    expect(attempts.attempts()).toBe(4);
    expect(waits.map((w) => w.attempt)).toEqual([1, 2, 3]);
    expect(retryRecordOf(error)).toMatchObject({ retries: 3, gaveUp: 'attempts' });
  });

  it('a connection reset before the handshake is retried; the refused certificate behind it then ends the retries', async () => {
    const { selfSigned } = endpoints;
    selfSigned.seen.resetNext = 1;
    const { client, waits } = clientFor(selfSigned, transport());
    const error = await rejectionOf(client.transactions.list().all());
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.cause).toMatchObject({ kind: 'refused', code: 'DEPTH_ZERO_SELF_SIGNED_CERT', final: true });
    expect(waits.map((w) => [w.attempt, w.error.code, w.error.ambiguous])).toEqual([[1, 'connection_failed', true]]);
    expect(retryRecordOf(error)).toMatchObject({ retries: 1, gaveUp: 'not_retryable' });
    expect(selfSigned.seen).toMatchObject({ connections: 2, handshakes: 0, requests: [] });
    expectNoCredential(error);
    for (const wait of waits) expectNoCredential(wait.error);
  });
});

it('httpTransport trusting the CA: a connection reset before the handshake is retried, and the next one reads the page', async () => {
  const { issued } = endpoints;
  issued.seen.resetNext = 1;
  const agent = new https.Agent({ keepAlive: true, ca: caCert });
  try {
    const { client, waits } = clientFor(issued, httpTransport({ https: agent }));
    const items = await client.transactions.list().all();
    expect(items).toHaveLength(2);
    expect(waits.map((w) => w.attempt)).toEqual([1]);
    expect(issued.seen).toMatchObject({ connections: 2, handshakes: 1 });
    expect(issued.seen.requests).toHaveLength(1);
  } finally {
    agent.destroy();
  }
});

/**
 * A downgrade from https to plain http on the same host is never followed (decision 92): a page's
 * `next` and a redirect both point at `http://127.0.0.1:<port>`, where an http server would answer,
 * and it receives nothing. The `next` lies under the base path, so its page is requested over TLS on
 * the base origin instead (decision 108); the redirect is an error, the key went over TLS once.
 */
describe('an https service that points to plain http on its own host', () => {
  const PLACES = ['its own https port', 'an http port of the same host'] as const;
  const downgrade = (place: (typeof PLACES)[number], endpoint: Endpoint, plain: Endpoint): string =>
    place === PLACES[0] ? `${endpoint.origin.replace('https:', 'http:')}${TX_PATH}?page=2` : `${plain.origin}${TX_PATH}?page=2`;

  it.each(PLACES)('a next link to http on %s: its page fetched over TLS on the base origin, nothing sent there', async (place) => {
    const { issued, plain } = endpoints;
    const next = downgrade(place, issued, plain);
    // Page 2's own items: repeats of page 1 would be dropped as duplicates.
    const second = PAGE.results.map((item) => ({ ...item, publicId: item.publicId.replace('-000000000', '-100000000') }));
    let pages = 0;
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(++pages === 1 ? { ...PAGE, count: 4, next } : { ...PAGE, count: 4, results: second }));
    };
    const agent = new https.Agent({ keepAlive: true, ca: caCert });
    try {
      const { client, logger } = clientFor(issued, httpTransport({ https: agent }));
      expect(await client.transactions.list().all()).toHaveLength(4);
      expect(issued.seen.requests).toEqual([
        expect.objectContaining({ method: 'GET', path: TX_PATH, authorization: `Bearer ${CANARY.apiKey}` }),
        expect.objectContaining({ method: 'GET', path: TX_PATH, authorization: `Bearer ${CANARY.apiKey}` }),
      ]);
      // Both pages over the one TLS connection: the second request was not sent in clear anywhere.
      expect(issued.seen).toMatchObject({ connections: 1, handshakes: 1 });
      expect(plain.seen).toMatchObject({ connections: 0, requests: [] });
      const warned = logger.entries().filter((e) => e.message === 'accounting api warning');
      expect(warned).toEqual([
        expect.objectContaining({ type: 'next_rebased', nextOrigin: new URL(next).origin, baseOrigin: issued.origin }),
      ]);
    } finally {
      agent.destroy();
    }
  });

  it.each(PLACES)('a 302 to http on %s: not followed, an error, nothing sent there', async (place) => {
    const { issued, plain } = endpoints;
    const location = downgrade(place, issued, plain);
    answer = (res) => {
      res.writeHead(302, { location });
      res.end();
    };
    const agent = new https.Agent({ keepAlive: true, ca: caCert });
    try {
      const { client } = clientFor(issued, httpTransport({ https: agent }));
      const error = await rejectionOf(client.transactions.list().all());
      expect(error).toBeInstanceOf(AccountingApiError);
      expect(error).toMatchObject({ status: 302 });
      expect(issued.seen.requests).toHaveLength(1);
      expect(plain.seen).toMatchObject({ connections: 0, requests: [] });
      expectNoCredential(error);
    } finally {
      agent.destroy();
    }
  });
});
