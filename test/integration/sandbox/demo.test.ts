import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

const NOW = Date.UTC(2026, 10, 20, 9, 0, 0); // 20 November 2026: the demo months are August to October

describe('sandbox: the deterministic demo seed', () => {
  let sandbox: RunningSandbox;
  let twin: RunningSandbox;
  let other: RunningSandbox;

  beforeAll(async () => {
    [sandbox, twin, other] = await Promise.all([
      startSandbox({ port: 0, seed: 5, clock: new ManualClock(NOW) }),
      startSandbox({ port: 0, seed: 5, clock: new ManualClock(NOW) }),
      startSandbox({ port: 0, seed: 6, clock: new ManualClock(NOW) }),
    ]);
  });
  afterAll(() => Promise.all([sandbox, twin, other].map((s) => s.stop())));

  it('gives the same credentials and data for the same seed, and others for another seed', async () => {
    expect(twin.demo).toEqual(sandbox.demo);
    expect(other.demo!.companies[0]!.apiKeys[0]!.key).not.toBe(sandbox.demo!.companies[0]!.apiKeys[0]!.key);
    const page = (s: RunningSandbox) =>
      call(s.baseUrl, '/accounting/transactions/?page_size=1000', { bearer: s.demo!.companies[0]!.apiKeys[0]!.key }).then((r) => r.text);
    expect(await page(twin)).toBe((await page(sandbox)).replace(`:${sandbox.port}/`, `:${twin.port}/`));
  });

  it('labels its credentials as sandbox-only and has the institution inst_demo with three users', () => {
    const demo = sandbox.demo!;
    expect(demo.notice).toMatch(/SANDBOX ONLY/);
    expect(demo.institution.id).toBe('inst_demo');
    expect(demo.institution.header).toMatch(/^inst_demo:.*NOT-FOR-PRODUCTION$/);
    expect(demo.companies.map((c) => c.currency)).toEqual(['EUR', 'EUR', 'GBP']);
    expect(demo.users.map((u) => [u.username, u.companies.length])).toEqual([
      ['alice', 1],
      ['bob', 2],
      ['carol', 0],
    ]);
  });

  it('has a few hundred transactions in each of the three months before the clock, with boundary cases', async () => {
    for (const company of sandbox.demo!.companies) {
      const key = company.apiKeys[1]!.key; // the read-only export key
      for (const [month, last] of [
        ['2026-08', 31],
        ['2026-09', 30],
        ['2026-10', 31],
      ] as const) {
        const res = await call(sandbox.baseUrl, `/accounting/transactions/?date_from=${month}-01&date_to=${month}-${last}&page_size=1000`, {
          bearer: key,
        });
        expect(res.body.count).toBeGreaterThanOrEqual(180);
        expect(res.body.count).toBeLessThanOrEqual(250);
        const dates = res.body.results.map((t: { valueDate: string }) => t.valueDate);
        expect(dates).toContain(`${month}-${last}T23:30:00-02:00`);
        expect(dates).toContain(`${month}-01T00:15:00+05:30`);
      }
      const current = await call(sandbox.baseUrl, '/accounting/transactions/?date_from=2026-11-01', { bearer: key });
      expect(current.body.count).toBe(0);
    }
  });

  it('has categories (one with invalid metadata JSON), tax reports, and keys of two strengths', async () => {
    const company = sandbox.demo!.companies[0]!;
    const [full, exportKey] = company.apiKeys.map((k) => k.key) as [string, string];
    const categories = (await call(sandbox.baseUrl, '/accounting/categories/', { bearer: exportKey })).body.results as {
      metadata: string;
      parent: string | null;
    }[];
    expect(categories.filter((c) => c.parent === null)).toHaveLength(2);
    expect(
      categories.filter((c) => {
        try {
          JSON.parse(c.metadata);
          return false;
        } catch {
          return true;
        }
      }),
    ).toHaveLength(1);
    const reports = (await call(sandbox.baseUrl, `/companies/${company.publicId}/taxes/reports/`, { bearer: exportKey })).body.results as {
      status: string;
    }[];
    expect(reports).toHaveLength(6);
    expect(reports.filter((r) => r.status === 'draft')).toHaveLength(1);
    expect((await call(sandbox.baseUrl, '/api-keys/', { bearer: exportKey })).status).toBe(403);
    expect((await call(sandbox.baseUrl, '/api-keys/', { bearer: full })).body.count).toBe(2);
  });

  it("lets a demo user retrieve tokens and see the user's companies", async () => {
    const bob = sandbox.demo!.users[1]!;
    const tokens = await call(sandbox.baseUrl, '/institution/users/token/retrieve/', {
      institution: sandbox.demo!.institution.header,
      body: { username: bob.username, email: bob.email, external_id: bob.externalId },
    });
    expect(tokens.status).toBe(200);
    const companies = await call(sandbox.baseUrl, '/companies/', { bearer: tokens.body.accessToken });
    expect(companies.body.results.map((c: { publicId: string }) => c.publicId).sort()).toEqual([...bob.companies].sort());
  });
});
