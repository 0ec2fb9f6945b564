import { randomUUID } from 'node:crypto';
import {
  type AccountingApiWarning,
  InvalidGrantError,
  KeyRevokedError,
  NotFoundError,
  type Transport,
  accessTokenAuth,
  apiKeyAuth,
  fetchTransport,
  localDateOf,
} from '../../../src/core/accounting-api';
import { MINUTE, type World, newIdentity, rejectionOf, startWorld } from './support';

/** Every operation the client has, through the default fetch transport, against the sandbox. */
describe('client against the sandbox: every operation', () => {
  let world: World;
  let reportPks: string[];
  let parentId: string;
  let childId: string;
  let brokenId: string;

  beforeAll(async () => {
    world = await startWorld();
    const { admin } = world.sandbox;
    const { companyId } = world;
    reportPks = [];
    for (const [month, amountDue] of [
      ['07', 123_456],
      ['08', '-0.50'],
      ['09', 0],
    ] as const) {
      const report = await admin.addTaxReport({
        companyId,
        periodStart: `2026-${month}-01`,
        periodEnd: `2026-${month}-30`,
        status: month === '09' ? 'draft' : 'submitted',
        amountDue,
      });
      reportPks.push(report.pk);
    }
    parentId = (await admin.addCategory({ companyId, name: 'Office', metadata: '{"costCentre":"100"}' })).publicId;
    childId = (
      await admin.addCategory({ companyId, name: 'Paper', parent: parentId, metadata: '{"vat":{"rate":19}}', cashflowType: 'EXPENSE' })
    ).publicId;
    brokenId = (await admin.addCategory({ companyId, name: 'Broken', metadata: '{"unterminated": ' })).publicId;
    await admin.generateTransactions({ companyId, month: '2026-09', count: 30 });
    await admin.generateTransactions({ companyId, month: '2026-10', count: 45 });
  });
  afterAll(() => world.sandbox.stop());

  describe('the five institution operations', () => {
    it('creates a user, verifies, refreshes (rotating the refresh token), retrieves and expires', async () => {
      const institution = world.institutionClient();
      const identity = newIdentity();

      const created = await institution.institution.createUser(identity);
      expect(created.user).toEqual({ username: identity.username, email: identity.email, external_id: identity.externalId });
      expect(created.expiresIn).toBe(1800);
      const verified = await institution.institution.verifyToken(created.accessToken);
      expect(verified).toEqual({ valid: true, expiresAt: new Date(world.clock.now() + 30 * MINUTE).toISOString() });

      // The user acts for a company once the service grants access; the access token works as a bearer.
      const { userId } = await world.sandbox.admin.findUser({ institutionId: world.institutionId, externalId: identity.externalId });
      await world.sandbox.admin.grantCompanyAccess({ userId, companyId: world.companyId });
      const asUser = world.client({ credentials: accessTokenAuth(created.accessToken) });
      expect((await asUser.companies.list().all()).map((c) => c.parsed.publicId)).toEqual([world.companyId]);

      // Refresh rotates: a new pair, and the refresh token sent is dead afterwards.
      const refreshed = await institution.institution.refreshToken(created.refreshToken!);
      expect(refreshed.refreshToken).not.toBe(created.refreshToken);
      expect(refreshed.accessToken).not.toBe(created.accessToken);
      expect(await institution.institution.verifyToken(created.refreshToken!)).toEqual({ valid: false, reason: 'revoked' });
      expect(await institution.institution.verifyToken(refreshed.refreshToken)).toMatchObject({ valid: true });
      const reuse = await rejectionOf(institution.institution.refreshToken(created.refreshToken!));
      expect(reuse).toBeInstanceOf(InvalidGrantError);
      expect(reuse).toMatchObject({ status: 400, apiCode: 'refresh_token_used' });

      // Retrieve issues a new pair for a known user, from the three identifying fields.
      const retrieved = await institution.institution.retrieveToken(identity);
      expect(await institution.institution.verifyToken(retrieved.accessToken)).toMatchObject({ valid: true });
      const notAUser = await rejectionOf(institution.institution.retrieveToken({ ...identity, email: 'someone-else@example.com' }));
      expect(notAUser).toBeInstanceOf(NotFoundError);

      // Expire kills every token of the user, and repeating it is harmless.
      expect(await institution.institution.expireToken(retrieved.refreshToken)).toEqual({ expired: true });
      expect(await institution.institution.expireToken(retrieved.refreshToken)).toEqual({ expired: true });
      expect(await institution.institution.verifyToken(retrieved.accessToken)).toEqual({ valid: false, reason: 'revoked' });
      expect(
        await rejectionOf(
          world
            .client({ credentials: accessTokenAuth(retrieved.accessToken) })
            .companies.list()
            .all(),
        ),
      ).toMatchObject({
        status: 401,
        apiCode: 'token_revoked',
      });

      const stats = await world.sandbox.admin.stats();
      expect(stats.usersCreated).toBe(1);
      expect(stats.refreshesPerUser[identity.externalId]).toBe(1);
      expect(stats.refusedRefreshesPerUser[identity.externalId]).toBe(1);
      expect(stats.retrievesPerUser[identity.externalId]).toBe(1);
      // The institution operations were sent with the Institution header (the sandbox identified the institution).
      const log = await world.sandbox.admin.requestLog();
      const institutionCalls = log.filter((entry) => entry.route.startsWith('POST /institution/'));
      expect(institutionCalls.length).toBeGreaterThanOrEqual(10);
      for (const entry of institutionCalls) expect(entry.credential).toEqual({ kind: 'institution', institutionId: world.institutionId });
    });
  });

  it("lists companies: exactly the key's own company", async () => {
    const companies = await world.client().companies.list().all();
    expect(companies.map((c) => c.parsed)).toEqual([
      { publicId: world.companyId, name: 'Client Tests GmbH', country: 'DE', currency: 'EUR' },
    ]);
  });

  it('lists tax reports of a company by pk, with exact money and dates', async () => {
    const reports = await world.client().taxReports.list(world.companyId).all();
    expect(reports.map((r) => r.parsed.pk).sort()).toEqual([...reportPks].sort());
    const byPk = new Map(reports.map((r) => [r.parsed.pk, r.parsed]));
    expect(byPk.get(reportPks[0]!)).toMatchObject({
      periodStart: '2026-07-01',
      periodEnd: '2026-07-30',
      amountDue: 123_456n,
      status: 'submitted',
      type: 'VAT_RETURN',
      currency: 'EUR',
    });
    expect(byPk.get(reportPks[1]!)?.amountDue).toBe(-50n);
    expect(byPk.get(reportPks[2]!)).toMatchObject({ amountDue: 0n, status: 'draft' });
  });

  it('lists transactions with date_from, date_to, page and page_size', async () => {
    const client = world.client();
    const october = await client.transactions.list({ dateFrom: '2026-10-01', dateTo: '2026-10-31' }).all();
    expect(october).toHaveLength(45);
    expect(
      (await world.sandbox.admin.transactionSummary({ companyId: world.companyId, dateFrom: '2026-10-01', dateTo: '2026-10-31' })).count,
    ).toBe(45);
    expect(october.every((t) => localDateOf(t.parsed.valueDate).startsWith('2026-10-'))).toBe(true);
    // valueDate stays the string as written, offset included.
    expect(october.every((t) => t.parsed.valueDate === t.raw.valueDate)).toBe(true);
    expect(new Set(october.map((t) => /(Z|[+-]\d{2}:\d{2})$/.exec(t.parsed.valueDate)?.[1])).size).toBeGreaterThan(3);

    const narrow = await client.transactions.list({ dateFrom: '2026-09-30', dateTo: '2026-10-01' }).all();
    expect(new Set(narrow.map((t) => localDateOf(t.parsed.valueDate)))).toEqual(new Set(['2026-09-30', '2026-10-01']));

    // page 3 of size 10 onwards is the full list without its first 20 items.
    const all = await client.transactions.list().all();
    expect(all).toHaveLength(75);
    const fromPage3 = await client.transactions.list({ page: 3, pageSize: 10 }).all();
    expect(fromPage3.map((t) => t.parsed.publicId)).toEqual(all.slice(20).map((t) => t.parsed.publicId));

    const log = await world.sandbox.admin.requestLog({ limit: 6 });
    expect(log.map((e) => e.query)).toEqual([
      '?page=3&page_size=10',
      '?page=4&page_size=10',
      '?page=5&page_size=10',
      '?page=6&page_size=10',
      '?page=7&page_size=10',
      '?page=8&page_size=10',
    ]);
  });

  it('lists categories with page and pageSize, parent and parsed metadata, warning about the invalid one', async () => {
    const warnings: AccountingApiWarning[] = [];
    const client = world.client({ onWarning: (w) => warnings.push(w) });
    const categories = await client.categories.list({ pageSize: 2 }).all();
    expect(categories).toHaveLength(3);
    const byId = new Map(categories.map((c) => [c.parsed.publicId, c]));
    expect(byId.get(childId)?.parsed).toMatchObject({
      name: 'Paper',
      parent: parentId,
      metadata: { vat: { rate: 19 } },
      metadataIssue: null,
      cashflowType: 'EXPENSE',
    });
    expect(byId.get(parentId)?.parsed).toMatchObject({ parent: null, metadata: { costCentre: '100' } });
    expect(byId.get(brokenId)?.parsed).toMatchObject({ metadata: null, metadataIssue: 'invalid_json' });
    expect(byId.get(brokenId)?.raw.metadata).toBe('{"unterminated": ');
    expect(warnings).toEqual([expect.objectContaining({ type: 'invalid_category_metadata', publicId: brokenId, issue: 'invalid_json' })]);

    const second = await client.categories.list({ page: 2, pageSize: 2 }).all();
    expect(second.map((c) => c.parsed.publicId)).toEqual(categories.slice(2).map((c) => c.parsed.publicId));
    expect((await world.sandbox.admin.requestLog({ limit: 1 }))[0]!.query).toBe('?page=2&pageSize=2');
  });

  describe('API keys', () => {
    it('lists (prefix, permissions, last use), creates (the key shown once) and revokes', async () => {
      const client = world.client();
      const created = await client.apiKeys.create({ name: 'export', permissions: ['read_transactions', 'read_categories'] });
      expect(created.key).toMatch(/^sbx_[A-Za-z0-9]{32}$/);
      expect(created.prefix).toBe(created.key.slice(0, 12));
      expect(created).toMatchObject({
        name: 'export',
        permissions: ['read_transactions', 'read_categories'],
        lastUsedAt: null,
        revokedAt: null,
      });

      const newKey = world.client({ credentials: apiKeyAuth(created.key) });
      world.clock.advance(MINUTE);
      expect(await newKey.transactions.list({ pageSize: 1 }).pages().next()).toMatchObject({ done: false });
      const usedAt = new Date(world.clock.now()).toISOString();

      const listed = await client.apiKeys.list().all();
      const entry = listed.find((k) => k.parsed.publicId === created.publicId);
      expect(entry?.parsed).toMatchObject({
        prefix: created.prefix,
        permissions: ['read_transactions', 'read_categories'],
        lastUsedAt: usedAt,
        revokedAt: null,
      });
      // Only the prefix is ever listed, never the key.
      expect(JSON.stringify(listed.map((k) => k.raw))).not.toContain(created.key);

      await client.apiKeys.revoke(created.publicId);
      await client.apiKeys.revoke(created.publicId); // idempotent
      expect(await rejectionOf(newKey.companies.list().all())).toBeInstanceOf(KeyRevokedError);
      const after = (await client.apiKeys.list({ pageSize: 1 }).all()).find((k) => k.parsed.publicId === created.publicId);
      expect(after?.parsed.revokedAt).toBe(usedAt);
      expect(await rejectionOf(client.apiKeys.revoke(randomUUID()))).toBeInstanceOf(NotFoundError);
    });

    const otherPaths = { list: '/management/keys/', create: '/management/keys/new/', revoke: '/management/keys/{publicId}/revoke/' };

    it('sends to configured paths: the sandbox (which serves only the defaults) sees them', async () => {
      const client = world.client({ apiKeyPaths: otherPaths });
      expect(await rejectionOf(client.apiKeys.list().all())).toBeInstanceOf(NotFoundError);
      const publicId = randomUUID();
      expect(await rejectionOf(client.apiKeys.revoke(publicId))).toBeInstanceOf(NotFoundError);
      const log = await world.sandbox.admin.requestLog({ limit: 2 });
      expect(log.map((e) => `${e.method} ${e.path}${e.query}`)).toEqual([
        'GET /api/v1/management/keys/?page_size=1000',
        `DELETE /api/v1/management/keys/${publicId}/revoke/`,
      ]);
    });

    it("works end to end on configured paths (a recording transport maps them onto the sandbox's)", async () => {
      const sent: string[] = [];
      const inner = fetchTransport();
      // Stands in for a service that serves key management elsewhere: what the client sends is recorded, then routed.
      const mapping: Transport = (request) => {
        const url = new URL(request.url);
        sent.push(`${request.method} ${url.pathname}`);
        url.pathname = url.pathname
          .replace(/\/management\/keys\/new\/$/, '/api-keys/')
          .replace(/\/management\/keys\/([^/]+)\/revoke\/$/, '/api-keys/$1/')
          .replace(/\/management\/keys\/$/, '/api-keys/');
        return inner({ ...request, url: url.href });
      };
      const client = world.client({ apiKeyPaths: otherPaths, transport: mapping });
      const created = await client.apiKeys.create({ name: 'elsewhere', permissions: ['read_tax_reports'] });
      expect((await client.apiKeys.list().all()).map((k) => k.parsed.publicId)).toContain(created.publicId);
      await client.apiKeys.revoke(created.publicId);
      expect(sent).toEqual([
        'POST /api/v1/management/keys/new/',
        'GET /api/v1/management/keys/',
        `DELETE /api/v1/management/keys/${created.publicId}/revoke/`,
      ]);
      expect(
        (await world.sandbox.admin.listApiKeys({ companyId: world.companyId })).find((k) => k.publicId === created.publicId)?.revokedAt,
      ).not.toBeNull();
    });
  });
});
