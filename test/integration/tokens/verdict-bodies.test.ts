import { createServer, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { createAccountingClient, institutionAuth } from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { ExpiryNotConfirmedError, RevocationIncompleteError } from '../../../src/core/tokens/errors';
import { TokenLifecycle } from '../../../src/core/tokens/token-lifecycle';
import { closeServer, listenOnLoopback } from '../../helpers/loopback';

/**
 * The token use cases against a service that answers verify and expire with a 200 whose body says
 * "no" in its own words (spec §4.1 shows neither body): `{"status": "INVALID"}` on verify is an
 * invalid token, `{"status": "FAILED"}` on expire is no confirmation (docs/assumptions.md, "Verify
 * and expire bodies"). Real client, real HTTP, the file token store.
 */

const INSTITUTION = { institutionId: 'inst-verdicts', secretKey: 'sk_verdicts_0123456789abcdef' };
const ACCESS = 'opaque-access-verdicts-0123456789';
const REFRESH = 'opaque-refresh-verdicts-0123456789';

let server: Server;
let origin: string;
let dir: string;
/** What the service answers to verify and expire, set by each test. */
let verifyBody: unknown;
let expireBody: unknown;
/** When set, what expire answers for this refresh token instead of `expireBody`. */
let expireAnswer: ((refresh: string) => unknown) | undefined;
const FRESH = { accessToken: 'fresh-access-verdicts-0123456789', refreshToken: 'fresh-refresh-verdicts-0123456789' };
const calls: string[] = [];

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'acctops-verdict-bodies-'));
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      calls.push(path);
      if (req.headers.institution !== `${INSTITUTION.institutionId}:${INSTITUTION.secretKey}`) return send(res, 401, { detail: 'no' });
      if (path === '/api/v1/institution/users/create/') return send(res, 201, { accessToken: ACCESS, refreshToken: REFRESH });
      if (path === '/api/v1/institution/users/token/verify/') return send(res, 200, verifyBody);
      if (path === '/api/v1/institution/users/token/retrieve/') return send(res, 200, FRESH);
      if (path === '/api/v1/institution/users/token/expire/') {
        return send(res, 200, expireAnswer ? expireAnswer((JSON.parse(raw) as { refresh: string }).refresh) : expireBody);
      }
      return send(res, 404, { detail: 'Not found.' });
    });
  });
  origin = await listenOnLoopback(server);
});

afterAll(async () => {
  await closeServer(server);
  await rm(dir, { recursive: true, force: true });
});

function lifecycle(file: string): TokenLifecycle {
  const clock = ManualClock.autoAdvancing();
  const client = createAccountingClient({
    baseUrl: `${origin}/api/v1`,
    credentials: institutionAuth(INSTITUTION),
    clock,
    retry: { maxAttempts: 1 },
  });
  return new TokenLifecycle({
    store: new FileTokenStore({ path: join(dir, file) }),
    institution: client.institution,
    clock,
    logger: new MemoryLogger(),
    metrics: new MemoryMetrics(),
  });
}

const user = (externalId: string) => ({
  externalId,
  username: `user-${externalId.slice(0, 8)}`,
  email: `${externalId.slice(0, 8)}@example.test`,
});

describe('verify and expire answered 200 with a body that says no', () => {
  it('verify of a stored user whose token the service calls INVALID reports it invalid, and an unknown status stays valid', async () => {
    const tokens = lifecycle('verify.json');
    const id = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    await expect(tokens.onboard(user(id))).resolves.toMatchObject({ result: 'created', status: 'active' });

    verifyBody = { status: 'INVALID' };
    await expect(tokens.verify(id)).resolves.toMatchObject({ status: 'active', service: { valid: false, reason: 'invalid' } });

    verifyBody = { valid: true, token_status: 'expired' };
    await expect(tokens.verify(id)).resolves.toMatchObject({ service: { valid: false, reason: 'expired' } });

    verifyBody = { status: 'ACTIVE' };
    await expect(tokens.verify(id)).resolves.toMatchObject({ service: { valid: true, expiresAt: null } });
    expect(calls.filter((c) => c.endsWith('/token/verify/'))).toHaveLength(3);
  });

  it('a revoke whose expire is answered {"status": "FAILED"} is incomplete: revoked here, not confirmed there', async () => {
    const tokens = lifecycle('revoke.json');
    const id = '1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e';
    await tokens.onboard(user(id));

    expireBody = { status: 'FAILED' };
    const error = await tokens.revoke(id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RevocationIncompleteError);
    expect((error as RevocationIncompleteError).cause).toBeInstanceOf(ExpiryNotConfirmedError);
    expect(await new FileTokenStore({ path: join(dir, 'revoke.json') }).get(id)).toMatchObject({ status: 'revoked' });

    // Both the stored token and a fresh pair's were asked, and neither confirmed.
    expect(calls.slice(-3)).toEqual([
      '/api/v1/institution/users/token/expire/',
      '/api/v1/institution/users/token/retrieve/',
      '/api/v1/institution/users/token/expire/',
    ]);

    // Revoking again expires again; a plain 200 confirms it.
    expireBody = {};
    await expect(tokens.revoke(id)).resolves.toEqual({ externalId: id, result: 'already_revoked' });
  });

  it('a stored refresh token the service calls blacklisted with a 200: a fresh pair is expired instead, and the revoke completes at once', async () => {
    const tokens = lifecycle('revoke-stale.json');
    const id = '2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f';
    await tokens.onboard(user(id));
    // It was: every revoke sent the same stored token, got the same "no", and never finished.
    expireAnswer = (refresh) => (refresh === REFRESH ? { success: false, detail: 'Token is blacklisted' } : {});
    try {
      const before = calls.length;
      await expect(tokens.revoke(id)).resolves.toMatchObject({ externalId: id, result: 'revoked' });
      expect(calls.slice(before)).toEqual([
        '/api/v1/institution/users/token/expire/',
        '/api/v1/institution/users/token/retrieve/',
        '/api/v1/institution/users/token/expire/',
      ]);
    } finally {
      expireAnswer = undefined;
    }
  });
});
