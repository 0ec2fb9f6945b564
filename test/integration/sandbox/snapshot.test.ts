import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../../src/core/shared/clock';
import { sandboxSnapshotSchema, startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

describe('sandbox: snapshot and restore', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0, 0));
  const running: RunningSandbox[] = [];
  afterAll(async () => {
    for (const sandbox of running) await sandbox.stop();
  });

  async function start(options: Parameters<typeof startSandbox>[0]) {
    const sandbox = await startSandbox({ port: 0, clock, ...options });
    running.push(sandbox);
    return sandbox;
  }

  it('restores data, users, keys and token states exactly, and continues the seeded sequence', async () => {
    const first = await start({ seed: 7 });
    const demo = first.demo!;
    const institution = demo.institution.header;
    const bakery = demo.companies[0]!;
    const fullKey = bakery.apiKeys[0]!.key;

    // A user with tokens, one refresh (so one refresh token is used), a new key and a revoked one.
    const identity = { username: 'dana', email: 'dana@example.com', external_id: randomUUID() };
    const created = await call(first.baseUrl, '/institution/users/create/', { institution, body: identity });
    const refreshed = await call(first.baseUrl, '/institution/users/token/refresh/', {
      institution,
      body: { refresh: created.body.refreshToken },
    });
    expect(refreshed.status).toBe(200);
    const kept = await first.admin.createApiKey({ companyId: bakery.publicId, permissions: ['read_transactions'], name: 'kept' });
    const revoked = await first.admin.createApiKey({ companyId: bakery.publicId, permissions: ['read_transactions'], name: 'revoked' });
    await first.admin.revokeApiKey({ publicId: revoked.publicId });
    await first.admin.addTransactions({
      companyId: bakery.publicId,
      transactions: [{ amount: '-12.34', valueDate: '2026-10-31T23:30:00-02:00' }],
    });
    await first.admin.generateTransactions({ companyId: bakery.publicId, month: '2026-09', count: 1500 });
    const pageBefore = await call(first.baseUrl, '/accounting/transactions/?date_from=2026-09-01&date_to=2026-10-31&page=2&page_size=200', {
      bearer: fullKey,
    });

    // Through JSON, as the CLI stores it.
    const snapshot = sandboxSnapshotSchema.parse(JSON.parse(JSON.stringify(first.snapshot())));
    const companyAfterSnapshot = await first.admin.createCompany({});
    const second = await start({ state: snapshot });

    expect(second.demo).toEqual(demo);
    expect(await second.admin.demoCredentials()).toEqual(demo);
    const pageAfter = await call(second.baseUrl, '/accounting/transactions/?date_from=2026-09-01&date_to=2026-10-31&page=2&page_size=200', {
      bearer: fullKey,
    });
    expect(pageAfter.status).toBe(200);
    expect(pageAfter.body.count).toBe(pageBefore.body.count);
    expect(pageAfter.body.results).toEqual(pageBefore.body.results);

    expect((await call(second.baseUrl, '/companies/', { bearer: kept.key })).status).toBe(200);
    const refused = await call(second.baseUrl, '/companies/', { bearer: revoked.key });
    expect(refused.body.error.code).toBe('key_revoked');

    const verify = (token: string) => call(second.baseUrl, '/institution/users/token/verify/', { institution, body: { token } });
    expect((await verify(refreshed.body.accessToken)).body.valid).toBe(true);
    expect((await verify(created.body.refreshToken)).body).toMatchObject({ valid: false, reason: 'revoked' });
    // Reuse of the rotated refresh token is still detected after the restore.
    const reuse = await call(second.baseUrl, '/institution/users/token/refresh/', {
      institution,
      body: { refresh: created.body.refreshToken },
    });
    expect(reuse.body.error.code).toBe('refresh_token_used');

    const retrieved = await call(second.baseUrl, '/institution/users/token/retrieve/', { institution, body: identity });
    expect(retrieved.status).toBe(200);
    expect((await second.admin.findUser({ institutionId: 'inst_demo', username: 'dana' })).externalId).toBe(identity.external_id);

    // Ids invented after the restore are the ones the original would have invented next.
    expect((await second.admin.createCompany({})).publicId).toBe(companyAfterSnapshot.publicId);
  });

  it('refuses a damaged snapshot with a ValidationError naming the field', async () => {
    const source = await start({ seed: 3, demo: false });
    const snapshot = JSON.parse(JSON.stringify(source.snapshot())) as Record<string, unknown>;
    delete snapshot.prng;
    await expect(startSandbox({ port: 0, state: snapshot as never })).rejects.toThrow(/state\.prng/);
  });
});
