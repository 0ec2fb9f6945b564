import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../../src/core/shared/clock';
import { SandboxAdminError, startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

const TX = 'GET /accounting/transactions/';
const REFRESH = 'POST /institution/users/token/refresh/';

describe('sandbox: faults on demand', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0, 0));
  let sandbox: RunningSandbox;
  let companyId: string;
  let key: string;
  let institution: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock, demo: false });
    companyId = (await sandbox.admin.createCompany({ name: 'Faulty Co' })).publicId;
    await sandbox.admin.generateTransactions({ companyId, month: '2026-10', count: 50 });
    key = (await sandbox.admin.createApiKey({ companyId, permissions: ['full_access'] })).key;
    institution = (await sandbox.admin.createInstitution({ id: 'inst_faults' })).header;
  });
  afterAll(() => sandbox.stop());
  afterEach(() => sandbox.admin.faults.clear());

  const txs = (query = '') => call(sandbox.baseUrl, `/accounting/transactions/${query}`, { bearer: key });
  const newUser = async () => {
    const identity = { username: `u-${randomUUID().slice(0, 8)}`, email: 'u@example.com', external_id: randomUUID() };
    const res = await call(sandbox.baseUrl, '/institution/users/create/', { institution, body: identity });
    return { identity, refreshToken: res.body.refreshToken as string };
  };
  const refresh = (refreshToken: string) =>
    call(sandbox.baseUrl, '/institution/users/token/refresh/', { institution, body: { refresh: refreshToken } });

  it('fires per route and per count: `after` requests pass, then `times` get the fault', async () => {
    const rule = await sandbox.admin.faults.add({ route: TX, after: 1, times: 2, fault: { type: 'status', status: 503 } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await txs()).status);
    expect(statuses).toEqual([200, 503, 503, 200]);
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: key })).status).toBe(200);
    const [state] = await sandbox.admin.faults.list();
    expect(state).toMatchObject({ id: rule.id, seen: 4, fired: 2 });
    expect((await sandbox.admin.stats()).faultsFired.status).toBe(2);
  });

  it('answers 5xx and 429 with the documented envelope, Retry-After in whole seconds', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'status', status: 502 } });
    await sandbox.admin.faults.add({ route: TX, after: 1, fault: { type: 'status', status: 429 } });
    await sandbox.admin.faults.add({ route: TX, after: 2, fault: { type: 'status', status: 429, retryAfter: 7 } });
    const bad = await txs();
    expect(bad.status).toBe(502);
    expect(bad.body.error).toMatchObject({ type: 'api_error', code: 'bad_gateway', requestId: bad.headers.get('x-request-id') });
    const limited = await txs();
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((await txs()).headers.get('retry-after')).toBe('7');
  });

  it('can answer with a body that is not the envelope (a proxy page, nothing)', async () => {
    await sandbox.admin.faults.add({ route: TX, times: 1, fault: { type: 'status', status: 503, body: 'html' } });
    await sandbox.admin.faults.add({ route: TX, after: 1, fault: { type: 'status', status: 500, body: 'empty' } });
    const html = await txs();
    expect(html.status).toBe(503);
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(html.body).toBeUndefined();
    const empty = await txs();
    expect(empty.status).toBe(500);
    expect(empty.text).toBe('');
    expect(empty.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('holds a slow response on the sandbox clock until the test moves it', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'slow', delayMs: 60_000 } });
    let settled = false;
    const pending = txs().then((r) => ((settled = true), r));
    await sandbox.admin.waitForParked({ count: 1 });
    expect(settled).toBe(false);
    expect((await sandbox.admin.stats()).parked).toBe(1);
    clock.advance(60_000);
    expect((await pending).status).toBe(200);
    expect((await sandbox.admin.stats()).parked).toBe(0);
  });

  it('can hold a response in real time instead', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'slow', delayMs: 30, realTime: true } });
    const started = Date.now();
    expect((await txs()).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('resets the connection before handling: nothing happened at the service', async () => {
    const { identity, refreshToken } = await newUser();
    await sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'reset' } });
    await expect(refresh(refreshToken)).rejects.toThrow('fetch failed');
    expect((await refresh(refreshToken)).status).toBe(200);
    expect((await sandbox.admin.stats()).refreshesPerUser[identity.external_id]).toBe(1);
  });

  it('resets after handling: the refresh happened, the response is lost (the ambiguous case)', async () => {
    const { identity, refreshToken } = await newUser();
    await sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'reset', phase: 'after' } });
    await expect(refresh(refreshToken)).rejects.toThrow('fetch failed');
    expect((await sandbox.admin.stats()).refreshesPerUser[identity.external_id]).toBe(1);
    expect((await refresh(refreshToken)).body.error.code).toBe('refresh_token_used');
    const log = await sandbox.admin.requestLog({ limit: 2 });
    expect(log[0]).toMatchObject({ route: REFRESH, status: 'reset', faults: ['reset'] });
  });

  it('breaks the connection mid-body', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'reset', phase: 'partial' } });
    const response = await fetch(`${sandbox.baseUrl}/accounting/transactions/`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('sends malformed JSON with a JSON content type', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'malformed_json' } });
    const res = await txs();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(() => JSON.parse(res.text)).toThrow(SyntaxError);
    expect(res.text.startsWith('{"count":')).toBe(true);
  });

  it('points next to a foreign origin outside the base path, or to a given URL', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'foreign_next' } });
    const next = new URL((await txs('?page_size=10')).body.next);
    expect(next.origin).toBe('http://foreign.invalid');
    expect(next.pathname).toBe('/outside/api/v1/accounting/transactions/');
    expect(next.searchParams.get('page')).toBe('2');
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'foreign_next', url: 'http://127.0.0.1:9/elsewhere/' } });
    expect((await txs('?page_size=10')).body.next).toBe('http://127.0.0.1:9/elsewhere/');
  });

  it("puts a page's own next on another origin, and leaves a last page's null", async () => {
    await sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'foreign_next', origin: 'http://web:8000' } });
    const first = await txs('?page_size=10');
    const own = new URL(first.body.next);
    expect(own.origin).toBe('http://web:8000');
    expect(own.pathname).toBe('/api/v1/accounting/transactions/');
    expect(Object.fromEntries(own.searchParams)).toEqual({ page: '2', page_size: '10' });
    const last = await txs(`?page_size=10&page=${Math.ceil(first.body.count / 10)}`);
    expect(last.status).toBe(200);
    expect(last.body.next).toBeNull();
  });

  it('makes next loop back to the page itself or to page 1', async () => {
    await sandbox.admin.faults.add({ route: TX, query: { page: '2' }, fault: { type: 'next_loop' } });
    const second = `${sandbox.baseUrl}/accounting/transactions/?page_size=10&page=2`;
    expect((await call(sandbox.baseUrl, second, { bearer: key })).body.next).toBe(second);
    await sandbox.admin.faults.add({ route: TX, query: { page: '3' }, fault: { type: 'next_loop', to: 'first' } });
    const third = await txs('?page_size=10&page=3');
    expect(Object.fromEntries(new URL(third.body.next).searchParams)).toEqual({ page_size: '10', page: '1' });
  });

  it('reports a count that disagrees with the items', async () => {
    await sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'count_mismatch', delta: 3 } });
    const page = await txs('?page_size=1000');
    expect(page.body.count).toBe(53);
    expect(page.body.results).toHaveLength(50);
  });

  it('drifts the schema: a relied-on field missing, unknown fields, an unknown enum value', async () => {
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'drop_field', field: 'amount' } });
    expect((await txs()).body.results.every((t: object) => !('amount' in t))).toBe(true);
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'extra_fields', fields: { risk: 0.3, tags: ['x'] } } });
    expect((await txs()).body.results[0]).toMatchObject({ risk: 0.3, tags: ['x'], amount: expect.anything() });
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'unknown_enum', field: 'cashflowType' } });
    expect(new Set((await txs()).body.results.map((t: { cashflowType: string }) => t.cashflowType))).toEqual(new Set(['TRANSFER']));

    const { refreshToken } = await newUser();
    await sandbox.admin.faults.add({ route: REFRESH, fault: { type: 'drop_field', field: 'refreshToken' } });
    expect(Object.keys((await refresh(refreshToken)).body).sort()).toEqual(['accessToken', 'expiresIn']);
  });

  it('changes the result set between pages: the next page repeats an item and the count grows', async () => {
    const before = await txs('?page_size=10');
    await sandbox.admin.faults.add({ route: TX, query: { page: '2' }, fault: { type: 'result_set_change' } });
    const second = await txs('?page_size=10&page=2');
    expect(second.body.count).toBe(before.body.count);
    const third = await txs('?page_size=10&page=3');
    expect(third.body.count).toBe(before.body.count + 1);
    expect(third.body.results[0].publicId).toBe(second.body.results[9].publicId);
  });

  it('overlaps pages: a page starts with the previous page’s last items again, count and links unchanged', async () => {
    const first = await txs('?page_size=10');
    await sandbox.admin.faults.add({ route: TX, query: { page: '2' }, fault: { type: 'page_overlap', items: 2 } });
    const second = await txs('?page_size=10&page=2');
    expect(second.body.count).toBe(first.body.count);
    expect(second.body.next).toContain('page=3');
    expect(second.body.results).toHaveLength(12);
    expect(second.body.results.slice(0, 2)).toEqual(first.body.results.slice(8));
    // The list itself is unchanged: the page without the fault holds its own ten.
    expect((await txs('?page_size=10&page=2')).body.results).toEqual(second.body.results.slice(2));
    await sandbox.admin.faults.add({ route: TX, fault: { type: 'page_overlap' } });
    expect((await txs('?page_size=10')).body.results).toEqual(first.body.results);
  });

  it('revokes the calling credential after answering', async () => {
    const { key: doomed } = await sandbox.admin.createApiKey({ companyId, permissions: ['read_transactions'] });
    await sandbox.admin.faults.add({ route: TX, query: { page: '2' }, fault: { type: 'revoke_credential' } });
    expect((await call(sandbox.baseUrl, '/accounting/transactions/?page_size=10&page=2', { bearer: doomed })).status).toBe(200);
    const after = await call(sandbox.baseUrl, '/accounting/transactions/?page_size=10&page=3', { bearer: doomed });
    expect(after.body.error.code).toBe('key_revoked');
  });

  it('applies `*` rules to every route, and refuses unknown routes and bad specs', async () => {
    await sandbox.admin.faults.add({ route: '*', times: 2, fault: { type: 'status', status: 500 } });
    expect((await call(sandbox.baseUrl, '/companies/', { bearer: key })).status).toBe(500);
    expect((await txs()).status).toBe(500);
    expect((await txs()).status).toBe(200);
    await expect(
      sandbox.admin.faults.add({ route: 'GET /accounting/transactions', fault: { type: 'malformed_json' } }),
    ).rejects.toMatchObject({
      status: 400,
    });
    const typo = await sandbox.admin.faults.add({ route: TX, fault: { type: 'slow', delay: 5 } as never }).catch((e: unknown) => e);
    expect(typo).toBeInstanceOf(SandboxAdminError);
  });

  it('takes faults at start, and stop() releases responses still parked', async () => {
    const other = await startSandbox({
      port: 0,
      clock: new ManualClock(),
      faults: [{ route: 'GET /companies/', fault: { type: 'slow', delayMs: 1_000 } }],
    });
    const demoKey = other.demo!.companies[0]!.apiKeys[0]!.key;
    const pending = call(other.baseUrl, '/companies/', { bearer: demoKey });
    await other.admin.waitForParked({ count: 1 });
    await other.stop();
    await expect(pending).rejects.toThrow('fetch failed');
  });
});
