import { systemClock } from '../../../src/core/shared/clock';
import { SandboxAdminError, connectSandboxAdmin, startSandbox, type RunningSandbox, type SandboxAdmin } from '../../../sandbox';
import { call } from './support';

describe('sandbox: the admin API over HTTP', () => {
  let sandbox: RunningSandbox;
  let remote: SandboxAdmin;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 }); // its own clock: the system clock plus an offset
    remote = connectSandboxAdmin(sandbox.baseUrl);
  });
  afterAll(() => sandbox.stop());

  it('sets up state from another "process": a company and a key that then work on the API', async () => {
    const company = await remote.createCompany({ name: 'Remote Co', currency: 'EUR' });
    const created = await remote.createApiKey({ companyId: company.publicId, permissions: ['read_transactions'] });
    expect(created.key).toMatch(/^sbx_/);
    await remote.addTransactions({
      companyId: company.publicId,
      transactions: [{ amount: '-12.34', valueDate: '2026-10-01T08:00:00+02:00' }],
    });
    const res = await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: created.key });
    expect(res.body.results.map((t: { amount: number }) => t.amount)).toEqual([-1234]);
  });

  it('injects faults and reads stats and the request log, which holds no secret', async () => {
    const demoKey = sandbox.demo!.companies[0]!.apiKeys[0]!.key;
    await remote.resetStats();
    await remote.faults.add({ route: 'GET /companies/', times: 1, fault: { type: 'status', status: 503 } });
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: demoKey })).status).toBe(503);
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: demoKey })).status).toBe(200);
    const stats = await remote.stats();
    expect(stats.byRouteAndStatus['GET /companies/']).toEqual({ '200': 1, '503': 1 });
    expect(stats.requests).toBe(2); // admin calls are not API traffic
    const log = await remote.requestLog({ limit: 2 });
    expect(log.map((e) => e.status)).toEqual([503, 200]);
    expect(log[1]!.credential).toEqual({ kind: 'api_key', prefix: demoKey.slice(0, 12), companyId: sandbox.demo!.companies[0]!.publicId });
    expect(JSON.stringify(log)).not.toContain(demoKey);
    expect((await remote.faults.list())[0]).toMatchObject({ fired: 1 });
    await remote.faults.clear();
    expect(await remote.faults.list()).toEqual([]);
  });

  it('moves its own clock forward: a key with an expiry stops working', async () => {
    const before = await remote.now();
    const companyId = sandbox.demo!.companies[1]!.publicId;
    const { key } = await remote.createApiKey({
      companyId,
      permissions: ['read_transactions'],
      expiresAt: new Date(before.epochMs + 3_600_000).toISOString(),
    });
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: key })).status).toBe(200);
    const after = await remote.advanceClock({ ms: 3_600_000 });
    expect(after.epochMs - before.epochMs).toBeGreaterThanOrEqual(3_600_000);
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: key })).body.error.code).toBe('key_expired');
  });

  it('answers GET for read-only operations only, 404 for unknown ones, 400 naming a bad field', async () => {
    const stats = await fetch(`${sandbox.adminUrl}stats`);
    expect(stats.status).toBe(200);
    expect(stats.headers.get('x-request-id')).toMatch(/^req_/);
    expect(((await stats.json()) as { requests: number }).requests).toBeGreaterThanOrEqual(0);
    expect((await fetch(`${sandbox.adminUrl}createCompany`)).status).toBe(405);
    const unknown = await fetch(`${sandbox.adminUrl}dropDatabase`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const bad = await remote.generateTransactions({ companyId: 'x', month: '2026-13', count: 1 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(SandboxAdminError);
    expect(bad).toMatchObject({ status: 400, param: 'month' });
  });

  it('changes configuration and hands out the demo credentials', async () => {
    const settings = await remote.configure({ amountEncoding: 'string', rateLimit: { requestsPerSecond: 200 }, latencyMs: 0 });
    expect(settings).toMatchObject({ amountEncoding: 'string', rateLimit: { requestsPerSecond: 200 }, maxPageSize: 1000 });
    await remote.configure({ amountEncoding: 'integer', rateLimit: null });
    expect(await remote.demoCredentials()).toEqual(sandbox.demo);
  });

  it('creates token holders in bulk, outside the rate limit', async () => {
    const inst = await remote.createInstitution({ id: 'inst_bulk' });
    const users = await remote.createUsers({
      users: Array.from({ length: 50 }, (_, i) => ({ institutionId: inst.id, username: `bulk-${i}`, issueTokens: true })),
    });
    expect(users).toHaveLength(50);
    const verify = await call(sandbox.baseUrl, '/institution/users/token/verify/', {
      institution: inst.header,
      body: { token: users[49]!.tokens!.accessToken },
    });
    expect(verify.body.valid).toBe(true);
  });

  it("changes an institution's secret: the old one stops working at once", async () => {
    const inst = await remote.createInstitution({ id: 'inst_rotating' });
    const body = { token: 'x.y.z' };
    expect((await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution: inst.header, body })).status).toBe(200);
    const changed = await remote.setInstitutionSecret({ id: inst.id, secret: 'a-brand-new-secret' });
    expect(changed.header).toBe('inst_rotating:a-brand-new-secret');
    const old = await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution: inst.header, body });
    expect(old.body.error.code).toBe('institution_invalid');
    expect((await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution: changed.header, body })).status).toBe(200);
  });

  it('refuses to advance a clock it was given and cannot move', async () => {
    const fixed = await startSandbox({
      port: 0,
      demo: false,
      clock: { now: () => systemClock.now(), sleep: (ms) => systemClock.sleep(ms) },
    });
    try {
      await expect(fixed.admin.advanceClock({ ms: 1 })).rejects.toMatchObject({ code: 'clock_not_controllable' });
    } finally {
      await fixed.stop();
    }
  });
});
