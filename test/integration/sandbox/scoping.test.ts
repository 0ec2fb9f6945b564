import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

describe('sandbox: company scoping (path, body, X-Company-Id)', () => {
  let sandbox: RunningSandbox;
  let a: string;
  let b: string;
  let keyA: string;
  let bobToken: string;
  let aliceToken: string;
  let loneToken: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock: new ManualClock(), demo: false });
    a = (await sandbox.admin.createCompany({ name: 'A' })).publicId;
    b = (await sandbox.admin.createCompany({ name: 'B' })).publicId;
    await sandbox.admin.addTransactions({
      companyId: a,
      transactions: [{ amount: -100, valueDate: '2026-10-05T10:00:00Z', description: 'A only' }],
    });
    await sandbox.admin.addTransactions({
      companyId: b,
      transactions: [{ amount: -200, valueDate: '2026-10-05T10:00:00Z', description: 'B only' }],
    });
    keyA = (await sandbox.admin.createApiKey({ companyId: a, permissions: ['full_access'] })).key;
    const inst = await sandbox.admin.createInstitution({ id: 'inst_scope' });
    const user = (username: string, companies: string[]) =>
      sandbox.admin.createUser({ username, institutionId: inst.id, externalId: randomUUID(), companies, issueTokens: true });
    bobToken = (await user('bob', [a, b])).tokens!.accessToken;
    aliceToken = (await user('alice', [a])).tokens!.accessToken;
    loneToken = (await user('lone', [])).tokens!.accessToken;
  });
  afterAll(() => sandbox.stop());

  it('an API key sees exactly its own company', async () => {
    const res = await call(sandbox.baseUrl, '/companies/', { bearer: keyA });
    expect(res.body.count).toBe(1);
    expect(res.body.results[0].publicId).toBe(a);
    const txs = await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: keyA });
    expect(txs.body.results.map((t: { description: string }) => t.description)).toEqual(['A only']);
  });

  it('refuses another company in the path', async () => {
    const res = await call(sandbox.baseUrl, `/companies/${b}/taxes/reports/`, { bearer: keyA });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ type: 'company_mismatch_error', code: 'company_mismatch', param: 'company_pk' });
    expect((await call(sandbox.baseUrl, `/companies/${a}/taxes/reports/`, { bearer: keyA })).status).toBe(200);
  });

  it('refuses another company in X-Company-Id, and accepts its own', async () => {
    const res = await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: keyA, companyId: b });
    expect(res.status).toBe(403);
    expect(res.body.error.param).toBe('X-Company-Id');
    expect((await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: keyA, companyId: a })).status).toBe(200);
  });

  it('refuses another company in the body (companyId or company)', async () => {
    for (const field of ['companyId', 'company']) {
      const res = await call(sandbox.baseUrl, '/api-keys/', {
        bearer: keyA,
        body: { name: 'x', permissions: ['read_transactions'], [field]: b },
      });
      expect(res.status).toBe(403);
      expect(res.body.error.param).toBe(field);
    }
    const own = await call(sandbox.baseUrl, '/api-keys/', {
      bearer: keyA,
      body: { name: 'x', permissions: ['read_transactions'], companyId: a },
    });
    expect(own.status).toBe(201);
  });

  it("a user token lists the user's companies and acts for the X-Company-Id one", async () => {
    const all = await call(sandbox.baseUrl, '/companies/', { bearer: bobToken });
    expect(all.body.results.map((c: { publicId: string }) => c.publicId)).toEqual([a, b].sort());
    const onlyB = await call(sandbox.baseUrl, '/companies/', { bearer: bobToken, companyId: b });
    expect(onlyB.body.results.map((c: { publicId: string }) => c.publicId)).toEqual([b]);
    const txs = await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: bobToken, companyId: b });
    expect(txs.body.results.map((t: { description: string }) => t.description)).toEqual(['B only']);
  });

  it('a user with several companies must name one; a user with one needs not; a user with none cannot act', async () => {
    const ambiguous = await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: bobToken });
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.error).toMatchObject({ code: 'invalid_request', param: 'X-Company-Id' });
    expect((await call(sandbox.baseUrl, `/companies/${b}/taxes/reports/`, { bearer: bobToken })).status).toBe(200);
    expect((await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: aliceToken })).status).toBe(200);
    expect((await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: loneToken })).body.error.param).toBe('X-Company-Id');
  });

  it("refuses a user token for a company that is not the user's", async () => {
    const viaHeader = await call(sandbox.baseUrl, '/accounting/transactions/', { bearer: aliceToken, companyId: b });
    expect(viaHeader.status).toBe(403);
    expect(viaHeader.body.error.param).toBe('X-Company-Id');
    const viaPath = await call(sandbox.baseUrl, `/companies/${b}/taxes/reports/`, { bearer: aliceToken });
    expect(viaPath.body.error.param).toBe('company_pk');
    const disagreeing = await call(sandbox.baseUrl, `/companies/${a}/taxes/reports/`, { bearer: bobToken, companyId: b });
    expect(disagreeing.body.error.param).toBe('company_pk');
  });
});
