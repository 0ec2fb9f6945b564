import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

describe('sandbox: rate limit and added latency', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0, 0));
  let sandbox: RunningSandbox;
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock, demo: false, rateLimit: { requestsPerSecond: 2 } });
    const companyId = (await sandbox.admin.createCompany()).publicId;
    keyA = (await sandbox.admin.createApiKey({ companyId, permissions: ['read_transactions'] })).key;
    keyB = (await sandbox.admin.createApiKey({ companyId, permissions: ['read_transactions'] })).key;
  });
  afterAll(() => sandbox.stop());

  const companies = (key: string) => call(sandbox.baseUrl, '/companies/', { bearer: key });

  it('keeps a token bucket per credential on the sandbox clock: 429 with Retry-After in whole seconds', async () => {
    expect((await companies(keyA)).status).toBe(200);
    expect((await companies(keyA)).status).toBe(200);
    const limited = await companies(keyA);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((await companies(keyB)).status).toBe(200); // another credential, another bucket

    clock.advance(499);
    expect((await companies(keyA)).status).toBe(429);
    clock.advance(1);
    expect((await companies(keyA)).status).toBe(200);
    expect((await sandbox.admin.stats()).rateLimited).toBe(2);
  });

  it('rounds Retry-After up for slow rates, and can be switched off at run time', async () => {
    await sandbox.admin.configure({ rateLimit: { requestsPerSecond: 0.25, burst: 1 } });
    expect((await companies(keyA)).status).toBe(200);
    expect((await companies(keyA)).headers.get('retry-after')).toBe('4');
    await sandbox.admin.configure({ rateLimit: null });
    for (let i = 0; i < 5; i++) expect((await companies(keyA)).status).toBe(200);
  });

  it('adds latency in real time before each API request, never to the admin API', async () => {
    await sandbox.admin.configure({ latencyMs: 40 });
    const started = Date.now();
    expect((await companies(keyA)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    expect((await sandbox.admin.configure({ latencyMs: 0 })).latencyMs).toBe(0);
  });
});
