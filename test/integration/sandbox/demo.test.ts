import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { call } from './support';

const NOW = Date.UTC(2026, 10, 20, 9, 0, 0); // 20 November 2026: the demo months are August to October

describe('sandbox: the demo seed (data from the seed, credentials random unless seededCredentials)', () => {
  let sandbox: RunningSandbox;
  let twin: RunningSandbox;
  let seeded: RunningSandbox;
  let seededTwin: RunningSandbox;
  let other: RunningSandbox;

  beforeAll(async () => {
    [sandbox, twin, seeded, seededTwin, other] = await Promise.all([
      startSandbox({ port: 0, seed: 5, clock: new ManualClock(NOW) }),
      startSandbox({ port: 0, seed: 5, clock: new ManualClock(NOW) }),
      startSandbox({ port: 0, seed: 5, clock: new ManualClock(NOW), seededCredentials: true }),
      startSandbox({ port: 0, seed: 5, clock: new ManualClock(NOW), seededCredentials: true }),
      startSandbox({ port: 0, seed: 6, clock: new ManualClock(NOW), seededCredentials: true }),
    ]);
  });
  afterAll(() => Promise.all([sandbox, twin, seeded, seededTwin, other].map((s) => s.stop())));

  const keysOf = (s: RunningSandbox) => s.demo!.companies.flatMap((c) => c.apiKeys.map((k) => k.key));
  /** The demo credentials with the secrets left out: ids, names, permissions. */
  const withoutSecrets = (s: RunningSandbox) => ({
    ...s.demo!,
    institution: { id: s.demo!.institution.id, name: s.demo!.institution.name },
    companies: s.demo!.companies.map((c) => ({ ...c, apiKeys: c.apiKeys.map(({ name, permissions }) => ({ name, permissions })) })),
  });
  /** Every company's transactions, categories and tax reports as served, each read with its own key. */
  const dataOf = async (s: RunningSandbox) => {
    const pages: string[] = [];
    for (const company of s.demo!.companies) {
      const bearer = company.apiKeys[0]!.key;
      for (const path of [
        '/accounting/transactions/?page_size=1000',
        '/accounting/categories/?pageSize=1000',
        `/companies/${company.publicId}/taxes/reports/?page_size=1000`,
      ]) {
        const res = await call(s.baseUrl, path, { bearer });
        expect(res.status).toBe(200);
        pages.push(res.text.replaceAll(`:${s.port}/`, ':PORT/'));
      }
    }
    return pages;
  };

  it('gives the same data for the same seed, and credentials of its own to each sandbox', async () => {
    const keys = keysOf(sandbox);
    expect(keys).toHaveLength(6);
    expect(keys.every((key) => /^sbx_[0-9A-Za-z]{32}$/.test(key))).toBe(true);
    expect(new Set([...keys, ...keysOf(twin)]).size).toBe(12);
    // Compared as booleans: a failure must not print credentials.
    expect(twin.demo!.institution.secret === sandbox.demo!.institution.secret).toBe(false);
    expect(sandbox.demo!.institution.header === `inst_demo:${sandbox.demo!.institution.secret}`).toBe(true);
    expect(withoutSecrets(twin)).toEqual(withoutSecrets(sandbox));
    expect(await dataOf(twin)).toEqual(await dataOf(sandbox));
    // A key works only where it was made.
    expect((await call(twin.baseUrl, '/companies/', { bearer: keys[0]! })).status).toBe(401);
  });

  it('with seededCredentials, the credentials follow from the seed too, and the data is what random ones give', async () => {
    expect(seededTwin.demo).toEqual(seeded.demo);
    expect(seeded.demo!.institution.header).toMatch(/^inst_demo:.*NOT-FOR-PRODUCTION$/);
    expect(keysOf(other)[0] === keysOf(seeded)[0]).toBe(false);
    expect(keysOf(seeded).filter((k) => keysOf(sandbox).includes(k)).length).toBe(0);
    // The seeded sequence is the same whichever way the keys were made: no datum shifts.
    expect(withoutSecrets(seeded)).toEqual(withoutSecrets(sandbox));
    expect(await dataOf(seeded)).toEqual(await dataOf(sandbox));
    expect(seeded.snapshot().prng).toBe(sandbox.snapshot().prng);
  });

  it('labels its credentials as sandbox-only and has the institution inst_demo with three users', () => {
    const demo = sandbox.demo!;
    expect(demo.notice).toMatch(/SANDBOX ONLY/);
    expect(demo.institution.id).toBe('inst_demo');
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
