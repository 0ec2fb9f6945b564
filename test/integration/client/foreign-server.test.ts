import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  type AccountingClient,
  AuthenticationError,
  InvalidGrantError,
  PaginationError,
  ResponseTooLargeError,
  apiKeyAuth,
  createAccountingClient,
  institutionAuth,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { closeServer, listenOnLoopback } from '../../helpers/loopback';

/**
 * The real client (fetch transport) against a tiny service written from the spec alone, in the
 * manner of Django REST framework with simplejwt: not our sandbox, an independent peer. It answers
 * what the spec allows and the sandbox never sends: a company as an object, DRF error bodies,
 * opaque tokens, empty verify and expire bodies, and the misbehaviour the client must bound
 * (an endless body, an endless `next` chain).
 */

const COMPANY = '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
const GOOD_REFRESH = 'opaque-refresh-good-0123456789';
const DEAD_REFRESH = 'opaque-refresh-dead-0123456789';
const INSTITUTION = { institutionId: 'inst-7', secretKey: 'sk_foreign_0123456789abcdef' };

type Route = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>, url: URL) => void;

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

const TOKEN_NOT_VALID = { detail: 'Token is invalid or expired', code: 'token_not_valid' };

const routes: Record<string, Route> = {
  'GET /api/v1/companies/': (_req, res) => send(res, 200, { publicId: COMPANY, legalName: 'Acme GmbH' }),
  'GET /api/v1/accounting/categories/': (_req, res, _body, url) => {
    const page = Number(url.searchParams.get('page') ?? '1');
    // Always a next page: a server that never stops.
    send(res, 200, {
      count: 3,
      next: `http://${url.host}/api/v1/accounting/categories/?page=${page + 1}&pageSize=1`,
      previous: null,
      results: [{ publicId: `00000000-0000-4000-8000-${String(page).padStart(12, '0')}`, name: `c${page}` }],
    });
  },
  'GET /api/v1/accounting/transactions/': (_req, res) => {
    // An endless body without Content-Length: the client must stop reading, not buffer it all.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"count": 1, "next": null, "previous": null, "results": [{"publicId": "');
    const chunk = 'x'.repeat(64 * 1024);
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  },
  'GET /api/v1/companies/3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/taxes/reports/': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1 << 30) });
    res.write('{');
  },
  'POST /api/v1/institution/users/token/refresh/': (_req, res, body) =>
    body.refresh === GOOD_REFRESH
      ? send(res, 200, { access: 'x', accessToken: 'opaque-access-new-0123456789' })
      : send(res, 401, TOKEN_NOT_VALID),
  'POST /api/v1/institution/users/token/verify/': (_req, res, body) =>
    body.token === GOOD_REFRESH ? send(res, 200, {}) : send(res, 401, TOKEN_NOT_VALID),
  'POST /api/v1/institution/users/token/expire/': (_req, res) => {
    res.writeHead(200);
    res.end();
  },
};

let server: Server;
let origin: string;
const requests: string[] = [];
let transactionsStreamClosed: Promise<void>;
let signalClosed: () => void;

beforeAll(async () => {
  transactionsStreamClosed = new Promise((resolve) => (signalClosed = resolve));
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
      const key = `${req.method} ${url.pathname}`;
      requests.push(`${key}${url.search}`);
      if (req.headers.institution !== undefined && req.headers.institution !== `${INSTITUTION.institutionId}:${INSTITUTION.secretKey}`) {
        return send(res, 401, { detail: 'Incorrect authentication credentials.', code: 'authentication_failed' });
      }
      if (key === 'GET /api/v1/accounting/transactions/') res.on('close', () => signalClosed());
      const text = Buffer.concat(chunks).toString('utf8');
      const route = routes[key];
      if (!route) return send(res, 404, { detail: 'Not found.' });
      route(req, res, text ? (JSON.parse(text) as Record<string, unknown>) : {}, url);
    });
  });
  origin = await listenOnLoopback(server);
});

afterAll(() => closeServer(server));

function client(options: { institution?: typeof INSTITUTION; maxResponseBytes?: number } = {}): AccountingClient {
  return createAccountingClient({
    baseUrl: `${origin}/api/v1`,
    credentials: options.institution ? institutionAuth(options.institution) : apiKeyAuth('sbx_ForeignKey0123456789abcdefghijkl'),
    clock: ManualClock.autoAdvancing(),
    retry: { maxAttempts: 1 },
    maxResponseBytes: options.maxResponseBytes,
  });
}

describe('the client against a service written from the spec alone', () => {
  it('reads the company as an object and keeps its unknown fields', async () => {
    const [company] = await client().companies.list().all();
    expect(company?.parsed).toMatchObject({ publicId: COMPANY, name: null });
    expect(company?.raw).toEqual({ publicId: COMPANY, legalName: 'Acme GmbH' });
  });

  it('institution operations: opaque tokens, a refresh that does not rotate, empty bodies, token_not_valid', async () => {
    const institution = client({ institution: INSTITUTION }).institution;
    expect(await institution.refreshToken(GOOD_REFRESH)).toMatchObject({
      accessToken: 'opaque-access-new-0123456789',
      refreshToken: GOOD_REFRESH,
      expiresIn: null,
    });
    expect(await institution.verifyToken(GOOD_REFRESH)).toEqual({ valid: true, expiresAt: null });
    expect(await institution.verifyToken(DEAD_REFRESH)).toEqual({ valid: false, reason: 'invalid' });
    expect(await institution.expireToken(GOOD_REFRESH)).toEqual({ expired: true });
    const dead = await institution.refreshToken(DEAD_REFRESH).catch((e: unknown) => e);
    expect(dead).toBeInstanceOf(InvalidGrantError);
    expect(dead).toMatchObject({ status: 401, apiCode: 'token_not_valid' });
  });

  it('a wrong institution credential answered by DRF is still AuthenticationError, on verify too', async () => {
    const wrong = client({ institution: { ...INSTITUTION, secretKey: 'sk_wrong_0123456789abcdef' } }).institution;
    await expect(wrong.verifyToken(DEAD_REFRESH)).rejects.toBeInstanceOf(AuthenticationError);
    await expect(wrong.refreshToken(GOOD_REFRESH)).rejects.toMatchObject({
      status: 401,
      apiCode: 'authentication_failed',
      name: 'AuthenticationError',
    });
  });

  it('stops reading an endless body at maxResponseBytes and closes the connection', async () => {
    const error = await client({ maxResponseBytes: 256 * 1024 })
      .transactions.list()
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toMatchObject({ limitBytes: 256 * 1024, status: 200 });
    await transactionsStreamClosed; // the server saw the connection go: nothing keeps streaming
  });

  it('refuses a declared Content-Length above the limit without reading the body', async () => {
    const error = await client({ maxResponseBytes: 1024 })
      .taxReports.list(COMPANY)
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
  });

  it('stops an endless next chain with PaginationError(too_many_pages)', async () => {
    const before = requests.filter((r) => r.startsWith('GET /api/v1/accounting/categories/')).length;
    const error = await client()
      .categories.list({ pageSize: 1 })
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaginationError);
    expect((error as PaginationError).reason).toBe('too_many_pages');
    // count 3 at 1 a page: 3 pages plus a margin of 2.
    expect(requests.filter((r) => r.startsWith('GET /api/v1/accounting/categories/')).length - before).toBe(5);
  });
});
