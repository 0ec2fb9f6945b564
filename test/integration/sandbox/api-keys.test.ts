import { ManualClock } from '../../../src/core/shared/clock';
import { SandboxAdminError, startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

describe('sandbox: API keys', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0, 0));
  let sandbox: RunningSandbox;
  let companyId: string;
  let fullKey: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock, demo: false });
    companyId = (await sandbox.admin.createCompany({ name: 'Keys Co' })).publicId;
    await sandbox.admin.addCategory({ companyId, name: 'Travel' });
    await sandbox.admin.addTaxReport({ companyId, periodStart: '2026-10-01', periodEnd: '2026-10-31' });
    fullKey = (await sandbox.admin.createApiKey({ companyId, permissions: ['full_access'], name: 'admin key' })).key;
  });
  afterAll(() => sandbox.stop());

  const get = (path: string, key: string) => call(sandbox.baseUrl, path, { bearer: key });
  const keyWith = async (...permissions: Parameters<typeof sandbox.admin.createApiKey>[0]['permissions']) =>
    (await sandbox.admin.createApiKey({ companyId, permissions })).key;

  it('creates keys as sbx_ plus 32 base62 characters, shows the key once, and lists only the prefix', async () => {
    const created = await call(sandbox.baseUrl, '/api-keys/', {
      bearer: fullKey,
      body: { name: 'export', permissions: ['read_transactions', 'read_categories'] },
    });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^sbx_[0-9A-Za-z]{32}$/);
    expect(created.body).toMatchObject({
      name: 'export',
      prefix: created.body.key.slice(0, 12),
      permissions: ['read_transactions', 'read_categories'],
      lastUsedAt: null,
      revokedAt: null,
      expiresAt: null,
      createdAt: new Date(clock.now()).toISOString(),
    });
    const listed = await get('/api-keys/', fullKey);
    expect(listed.status).toBe(200);
    const entry = listed.body.results.find((k: { publicId: string }) => k.publicId === created.body.publicId);
    expect(entry.prefix).toBe(created.body.prefix);
    expect(entry).not.toHaveProperty('key');
    expect(listed.text).not.toContain(created.body.key);
  });

  it('keeps read and write apart, and full_access covers every operation', async () => {
    const writeOnly = await keyWith('write_transactions');
    const refused = await get('/accounting/transactions/', writeOnly);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ type: 'permission_error', code: 'permission_denied', permission: 'read_transactions' });

    const reader = await keyWith('read_transactions');
    expect((await get('/accounting/transactions/', reader)).status).toBe(200);
    expect((await get('/accounting/categories/', reader)).body.error.permission).toBe('read_categories');
    expect((await get(`/companies/${companyId}/taxes/reports/`, reader)).body.error.permission).toBe('read_tax_reports');
    expect((await get('/api-keys/', reader)).body.error.permission).toBe('manage_api_keys');
    expect((await get('/companies/', reader)).status).toBe(200);

    for (const path of ['/accounting/transactions/', '/accounting/categories/', `/companies/${companyId}/taxes/reports/`, '/api-keys/']) {
      expect((await get(path, fullKey)).status).toBe(200);
    }
  });

  it('refuses to mint a key stronger than the caller, unknown permissions, and a past expiry', async () => {
    const manager = await keyWith('manage_api_keys', 'read_transactions');
    const stronger = await call(sandbox.baseUrl, '/api-keys/', { bearer: manager, body: { name: 'x', permissions: ['read_categories'] } });
    expect(stronger.status).toBe(403);
    expect(stronger.body.error.permission).toBe('read_categories');
    const same = await call(sandbox.baseUrl, '/api-keys/', { bearer: manager, body: { name: 'x', permissions: ['read_transactions'] } });
    expect(same.status).toBe(201);

    const unknown = await call(sandbox.baseUrl, '/api-keys/', { bearer: fullKey, body: { name: 'x', permissions: ['read_everything'] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe('permissions[0]');
    const past = await call(sandbox.baseUrl, '/api-keys/', {
      bearer: fullKey,
      body: { name: 'x', permissions: ['read_transactions'], expiresAt: new Date(clock.now() - 1000).toISOString() },
    });
    expect(past.status).toBe(400);
    expect(past.body.error.param).toBe('expiresAt');
  });

  it('stops a key at its expiry on the sandbox clock', async () => {
    const { key } = await sandbox.admin.createApiKey({
      companyId,
      permissions: ['read_transactions'],
      expiresAt: new Date(clock.now() + 60_000).toISOString(),
    });
    expect((await get('/companies/', key)).status).toBe(200);
    clock.advance(60_000);
    const expired = await get('/companies/', key);
    expect(expired.status).toBe(401);
    expect(expired.body.error).toMatchObject({ type: 'authentication_error', code: 'key_expired' });
  });

  it('revokes through DELETE (204, idempotent, 404 for unknown ids) and the key stops at once', async () => {
    const created = await call(sandbox.baseUrl, '/api-keys/', {
      bearer: fullKey,
      body: { name: 'short-lived', permissions: ['read_transactions'] },
    });
    const path = `/api-keys/${created.body.publicId}/`;
    expect((await get('/companies/', created.body.key)).status).toBe(200);
    const revoked = await call(sandbox.baseUrl, path, { method: 'DELETE', bearer: fullKey });
    expect(revoked.status).toBe(204);
    expect(revoked.text).toBe('');
    expect((await call(sandbox.baseUrl, path, { method: 'DELETE', bearer: fullKey })).status).toBe(204);
    expect((await get('/companies/', created.body.key)).body.error.code).toBe('key_revoked');
    const listed = await get('/api-keys/?page_size=1000', fullKey);
    expect(listed.body.results.find((k: { publicId: string }) => k.publicId === created.body.publicId).revokedAt).toBe(
      new Date(clock.now()).toISOString(),
    );
    const unknown = await call(sandbox.baseUrl, '/api-keys/00000000-0000-4000-8000-000000000000/', { method: 'DELETE', bearer: fullKey });
    expect(unknown.status).toBe(404);
  });

  it('stops a key when its creator is disabled or loses the company, and works again when restored', async () => {
    const creator = await sandbox.admin.createUser({ username: 'creator', companies: [companyId], permissions: ['read_transactions'] });
    const { key } = await sandbox.admin.createApiKey({ companyId, creatorUserId: creator.userId, permissions: ['read_transactions'] });
    expect((await get('/accounting/transactions/', key)).status).toBe(200);

    await sandbox.admin.disableUser({ userId: creator.userId });
    expect((await get('/accounting/transactions/', key)).body.error.code).toBe('creator_disabled');
    await sandbox.admin.enableUser({ userId: creator.userId });
    expect((await get('/accounting/transactions/', key)).status).toBe(200);

    await sandbox.admin.removeCompanyAccess({ userId: creator.userId, companyId });
    const lost = await get('/accounting/transactions/', key);
    expect(lost.status).toBe(401);
    expect(lost.body.error.code).toBe('company_access_removed');
    await sandbox.admin.grantCompanyAccess({ userId: creator.userId, companyId });
    expect((await get('/accounting/transactions/', key)).status).toBe(200);

    // A creator cannot hand out what it does not hold.
    await expect(
      sandbox.admin.createApiKey({ companyId, creatorUserId: creator.userId, permissions: ['read_categories'] }),
    ).rejects.toMatchObject({ name: 'SandboxAdminError', status: 403, code: 'permission_denied' });
  });

  it('tracks lastUsedAt on every authenticated request', async () => {
    const created = await sandbox.admin.createApiKey({ companyId, permissions: ['read_transactions'], name: 'tracked' });
    expect(created.lastUsedAt).toBeNull();
    clock.advance(5_000);
    await get('/companies/', created.key);
    const used = (await sandbox.admin.listApiKeys({ companyId })).find((k) => k.publicId === created.publicId)!;
    expect(used.lastUsedAt).toBe(new Date(clock.now()).toISOString());
    clock.advance(5_000);
    await get('/accounting/categories/', created.key); // refused (403), but authenticated: counts as use
    const again = (await sandbox.admin.listApiKeys({ companyId })).find((k) => k.publicId === created.publicId)!;
    expect(again.lastUsedAt).toBe(new Date(clock.now()).toISOString());
  });

  it('refuses missing, malformed and unknown credentials with distinct codes', async () => {
    expect((await call(sandbox.baseUrl, '/companies/')).body.error.code).toBe('missing_credentials');
    expect((await call(sandbox.baseUrl, '/companies/', { headers: { authorization: 'Basic abc' } })).body.error.code).toBe(
      'invalid_credentials',
    );
    const unknown = await get('/companies/', `sbx_${'A'.repeat(32)}`);
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('invalid_credentials');
    expect((await get('/companies/', 'a.b.c')).body.error.code).toBe('token_invalid');
  });

  it('reports admin refusals as typed errors', async () => {
    const error = await sandbox.admin.createApiKey({ companyId: 'nope', permissions: ['full_access'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxAdminError);
    expect((error as SandboxAdminError).status).toBe(404);
  });
});
