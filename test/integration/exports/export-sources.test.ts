import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { runDirectExport } from '../../helpers/run-direct-export';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { fetchTransport, type Transport } from '../../../src/core/accounting-api';
import { exportCompanyPeriod } from '../../../src/core/exports/pipeline/export-company-period';
import type { ExportProgress } from '../../../src/core/exports/pipeline/export-sources';
import { manifestKey } from '../../../src/core/exports/formats/layout';
import { readManifest } from '../../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { UserTokenUnavailableError } from '../../../src/core/exports/pipeline/pipeline-errors';
import { userTokenCredentials } from '../../../src/core/exports/pipeline/user-token-credentials';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { TEST_DIALECTS, expiryOf } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // The two kinds of source against the sandbox: an institution user's access token from the token
  // store (X-Company-Id picks the company; a token that expires mid-export is picked up again from
  // the store), and the CLI's direct mode with a company API key into a local directory.

  const MINUTE = 60_000;
  let sandbox: RunningSandbox;
  const sandboxClock = new ManualClock(Date.UTC(2026, 10, 5, 8, 0));
  let root: string;
  let companyA: string;
  let companyB: string;
  let user: { userId: string; externalId: string; username: string; email: string };
  let store: FileTokenStore;

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, demo: false, clock: sandboxClock });
    root = await mkdtemp(join(tmpdir(), 'acctops-export-sources-'));
    const institution = await sandbox.admin.createInstitution({ id: 'inst-exports' });
    companyA = (await sandbox.admin.createCompany()).publicId;
    companyB = (await sandbox.admin.createCompany()).publicId;
    for (const [company, count] of [
      [companyA, 2300],
      [companyB, 40],
    ] as const) {
      await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count });
      await sandbox.admin.addCategory({ companyId: company, name: 'Rent' });
    }
    const created = await sandbox.admin.createUser({
      institutionId: institution.id,
      externalId: randomUUID(),
      companies: [companyA, companyB],
      issueTokens: true,
    });
    user = { userId: created.userId, externalId: created.externalId!, username: created.username, email: created.email };
    store = new FileTokenStore({ path: join(root, 'tokens.json') });
    await store.create(
      {
        ...user,
        accessToken: created.tokens!.accessToken,
        refreshToken: created.tokens!.refreshToken,
        accessTokenExpiresAt: expiryOf(created.tokens!.accessToken, sandboxClock.now()),
      },
      sandboxClock.now(),
    );
  });

  afterAll(async () => {
    await sandbox.stop();
    await rm(root, { recursive: true, force: true });
    forgetRegisteredSecrets();
  });

  /** What the refresh worker does: a new pair from the service, saved under the lease. */
  async function refreshInStore(): Promise<string> {
    const pair = await sandbox.admin.issueTokens({ userId: user.userId });
    const record = (await store.acquireLease(user.externalId, 'test', sandboxClock.now() + MINUTE, sandboxClock.now()))!;
    await store.saveTokens(
      user.externalId,
      {
        accessToken: pair.accessToken,
        refreshToken: pair.refreshToken,
        accessTokenExpiresAt: expiryOf(pair.accessToken, sandboxClock.now()),
      },
      { expectedVersion: record.version, owner: 'test', now: sandboxClock.now() },
    );
    return pair.accessToken;
  }

  /** A transport that runs `after` once, right after the first page of transactions came back. */
  function afterFirstTransactionsPage(after: () => Promise<void>): Transport {
    const real = fetchTransport();
    let done = false;
    return async (request) => {
      const response = await real(request);
      if (!done && request.url.includes('/accounting/transactions/')) {
        done = true;
        await after();
      }
      return response;
    };
  }

  function exportAsUser(company: string, options: { providerClock: ManualClock; transport?: Transport; dir: string }) {
    return exportCompanyPeriod(
      {
        store: new DirObjectStore(options.dir),
        clock: ManualClock.autoAdvancing(),
        logger: new MemoryLogger(),
        toolVersion: '0.1.0',
        baseUrl: sandbox.baseUrl,
        client: { transport: options.transport },
      },
      {
        companyId: company,
        period: '2026-10',
        credentials: userTokenCredentials(store, user.externalId, { clock: options.providerClock, companyId: company }),
        source: { kind: 'user', externalId: user.externalId },
        trigger: { kind: 'on_demand', requestId: 'test', via: 'event' },
        formats: ['csv'],
      },
    );
  }

  describe('institution user source', () => {
    it('X-Company-Id selects each of the user’s companies: each export holds only that company’s month', async () => {
      const dir = join(root, 'user-companies');
      const clock = new ManualClock(sandboxClock.now());
      const a = await exportAsUser(companyA, { providerClock: clock, dir });
      const b = await exportAsUser(companyB, { providerClock: clock, dir });
      expect(a.status === 'completed' && a.summary.datasets.transactions!.records).toBe(
        (await sandbox.admin.transactionSummary({ companyId: companyA, dateFrom: '2026-10-01', dateTo: '2026-10-31' })).count,
      );
      expect(b.status === 'completed' && b.summary.datasets.transactions!.records).toBe(40);
      const log = (await sandbox.admin.requestLog({ limit: 50 })).filter((e) => e.route === 'GET /accounting/transactions/');
      expect(log.length).toBeGreaterThanOrEqual(4);
      expect(log.every((e) => e.credential?.kind === 'user' && e.credential.externalId === user.externalId)).toBe(true);
    });

    it('an access token that expires mid-export: after the 401 the provider takes the refreshed token from the store once, and the export completes', async () => {
      const dir = join(root, 'expiry-401');
      await sandbox.admin.resetStats();
      let fresh = '';
      const transport = afterFirstTransactionsPage(async () => {
        sandboxClock.advance(31 * MINUTE);
        fresh = await refreshInStore();
      });
      // The provider's clock stands still, so it does not see the expiry coming: the 401 path.
      const outcome = await exportAsUser(companyA, { providerClock: new ManualClock(sandboxClock.now()), transport, dir });

      expect(outcome.status).toBe('completed');
      const stats = await sandbox.admin.stats();
      expect(stats.byRouteAndStatus['GET /accounting/transactions/']?.['401']).toBe(1);
      expect(fresh).not.toBe('');
      const manifest = (await readManifest(new DirObjectStore(dir), manifestKey(companyA, parsePeriod('2026-10'))))!;
      expect(manifest.datasets.transactions!.records).toBe(
        outcome.status === 'completed' ? outcome.summary.datasets.transactions!.records : -1,
      );
    });

    it('a token about to expire is re-read from the store before it is sent (no 401)', async () => {
      const dir = join(root, 'expiry-ahead');
      await sandbox.admin.resetStats();
      const transport = afterFirstTransactionsPage(async () => {
        sandboxClock.advance(31 * MINUTE);
        await refreshInStore();
      });
      const outcome = await exportAsUser(companyA, { providerClock: sandboxClock, transport, dir });
      expect(outcome.status).toBe('completed');
      expect((await sandbox.admin.stats()).byStatus['401']).toBeUndefined();
    });

    it('a 401 with no newer token in the store fails after one re-read; a revoked user is a non-retryable failure', async () => {
      const dir = join(root, 'expired-no-refresh');
      const transport = afterFirstTransactionsPage(async () => {
        sandboxClock.advance(31 * MINUTE);
      });
      const stale = await exportAsUser(companyA, { providerClock: new ManualClock(sandboxClock.now()), transport, dir });
      expect(stale).toMatchObject({ status: 'failed', retryable: true });
      // The minimal dialect answers simplejwt's token_not_valid, which does not say "expired": a retryable 401 all the same.
      expect(stale.status === 'failed' && (stale.error as Error).name).toBe(
        dialect === 'default' ? 'TokenExpiredError' : 'AuthenticationError',
      );

      await refreshInStore();
      const record = (await store.acquireLease(user.externalId, 'test', sandboxClock.now() + MINUTE, sandboxClock.now()))!;
      await store.markStatus(
        user.externalId,
        { status: 'revoked' },
        { expectedVersion: record.version, owner: 'test', now: sandboxClock.now() },
      );
      const revoked = await exportAsUser(companyA, { providerClock: sandboxClock, dir });
      expect(revoked).toMatchObject({ status: 'failed', retryable: false, final: true });
      expect(revoked.status === 'failed' && revoked.error).toBeInstanceOf(UserTokenUnavailableError);
    });
  });

  describe('direct mode (runDirectExport)', () => {
    let key: string;
    beforeAll(async () => {
      key = (await sandbox.admin.createApiKey({ companyId: companyB, permissions: ['full_access'] })).key;
    });

    async function files(dir: string): Promise<string[]> {
      const entries = await readdir(dir, { recursive: true, withFileTypes: true });
      return entries
        .filter((e) => e.isFile())
        .map((e) => relative(dir, join(e.parentPath, e.name)))
        .sort();
    }

    it('learns the key’s company, writes the layout and manifest of the pipeline into a directory, and reports progress', async () => {
      const dir = join(root, 'direct');
      const progress: ExportProgress[] = [];
      const summary = await runDirectExport({
        baseUrl: sandbox.baseUrl,
        apiKey: key,
        month: '2026-10',
        outDir: dir,
        toolVersion: '0.1.0',
        onProgress: (p) => progress.push(p),
      });

      expect(summary.company).toBe(companyB);
      const prefix = `exports/company=${companyB}/period=2026-10/`;
      const written = await files(dir);
      expect(written).toContain(`${prefix}_manifest.json`);
      for (const object of summary.manifest.objects) expect(written).toContain(object.key);
      expect(written.filter((f) => f.startsWith(prefix) && f.includes('/run='))).toHaveLength(9);
      expect(summary.datasets.transactions!.records).toBe(40);
      expect(
        progress
          .filter((p) => p.done)
          .map((p) => p.dataset)
          .sort(),
      ).toEqual(['categories', 'tax_reports', 'transactions']);
      expect(summary.manifest.source.baseUrl).toBe(sandbox.baseUrl);
    });

    it('refuses a bad month or a missing output before anything is fetched', async () => {
      await sandbox.admin.resetStats();
      await expect(
        runDirectExport({ baseUrl: sandbox.baseUrl, apiKey: key, month: '2026-13', outDir: join(root, 'x'), toolVersion: '0.1.0' }),
      ).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'month',
      });
      await expect(
        runDirectExport({ baseUrl: sandbox.baseUrl, apiKey: key, month: '2026-10', toolVersion: '0.1.0' } as never),
      ).rejects.toBeInstanceOf(ValidationError);
      expect((await sandbox.admin.stats()).requests).toBe(0);
    });
  });
});
