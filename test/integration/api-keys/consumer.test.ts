import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import {
  COMPANY_KEY_TAGS,
  CompanyApiKeys,
  CompanyKeyNotFoundError,
  PURPOSE_COMPANY_KEY,
  runDueRevocations,
  serializeCompanyKeySecret,
} from '../../../src/core/api-keys';
import { createAccountingClient } from '../../../src/core/accounting-api';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { client } from '../../helpers/secrets-manager';
import { CACHE_TTL_MS, GRACE_MS, MINUTE, RotationWorld } from './support';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  const TRANSACTIONS = 3000;
  const PAGE_SIZE = 100;

  describe('a consumer of company keys (getApiKey) across a rotation', () => {
    let world: RotationWorld;

    beforeEach(async () => {
      world = await RotationWorld.start(undefined, dialect);
      await world.sandbox.admin.generateTransactions({ companyId: world.companyId, month: '2026-10', count: TRANSACTIONS });
    });
    afterEach(async () => {
      const lines = world.logger.lines.join('\n');
      for (const key of world.fullKeys()) expect(lines).not.toContain(key);
      await world.stop();
      forgetRegisteredSecrets();
    });

    function consumer() {
      const keys = new CompanyApiKeys(world.store, world.directory, { ttlMs: CACHE_TTL_MS, clock: world.clock, logger: world.logger });
      const client = createAccountingClient({
        baseUrl: world.sandbox.baseUrl,
        credentials: keys.credentials(world.companyId),
        clock: world.clock,
        logger: world.logger,
      });
      return { keys, client };
    }

    const transactionRequests = async () =>
      (await world.sandbox.admin.requestLog({ limit: 1000 })).filter((r) => r.route === 'GET /accounting/transactions/');

    /** Reads the whole month page by page; `between(page)` runs after each page. */
    async function exportMonth(between: (page: number) => Promise<void>): Promise<Set<string>> {
      const { client: api } = consumer();
      const ids = new Set<string>();
      let page = 0;
      // All of October: the minimal dialect's date_to is exclusive (docs/assumptions.md, "The minimal dialect").
      const dateTo = dialect === 'minimal' ? '2026-11-01' : '2026-10-31';
      for await (const p of api.transactions.list({ dateFrom: '2026-10-01', dateTo, pageSize: PAGE_SIZE }).pages()) {
        for (const item of p.items) ids.add(item.parsed.publicId);
        await between(++page);
      }
      return ids;
    }

    it('getApiKey serves the current key from its cache and picks up a rotation after the TTL', async () => {
      const { keys } = consumer();
      expect((await keys.getApiKey(world.companyId)).apiKeyId).toBe(world.initialKey.apiKeyId);
      await world.startRotation();
      const rotated = await world.current();
      expect((await keys.getApiKey(world.companyId)).apiKeyId).toBe(world.initialKey.apiKeyId);
      world.clock.advance(CACHE_TTL_MS);
      expect((await keys.getApiKey(world.companyId)).apiKeyId).toBe(rotated.apiKeyId);
    });

    it('finishes an export during which the key rotates and the old key is revoked, without seeing an error', async () => {
      const revokeDeps = {
        store: world.store,
        clientFor: world.clientFor.bind(world),
        clock: world.clock,
        logger: world.logger,
        metrics: world.metrics,
      };
      const ids = await exportMonth(async (page) => {
        world.clock.advance(MINUTE); // each page takes a while
        if (page === 5) await world.startRotation();
        if (page === 10) {
          world.clock.advance(GRACE_MS);
          const run = await runDueRevocations({ ...revokeDeps, queue: world.queue });
          expect(run.outcomes).toEqual([expect.objectContaining({ apiKeyId: world.initialKey.apiKeyId, outcome: 'revoked' })]);
        }
      });
      expect(ids.size).toBe(TRANSACTIONS);

      const requests = await transactionRequests();
      const prefixes = new Set(requests.map((r) => (r.credential?.kind === 'api_key' ? r.credential.prefix : undefined)));
      const rotated = await world.current();
      // Both keys served pages, and the grace period outlasted the cache: no request was ever refused.
      expect(prefixes).toEqual(new Set([world.initialKey.keyPrefix, rotated.keyPrefix]));
      expect(requests.every((r) => r.status === 200)).toBe(true);
    });

    it('recovers when its cached key is revoked under it: one 401, a re-read of the secret, and the page again', async () => {
      const ids = await exportMonth(async (page) => {
        if (page === 5) {
          await world.startRotation();
          // Revoked early (a runbook, an incident): the consumer still holds it in its cache.
          await world.sandbox.admin.revokeApiKey({ publicId: world.initialKey.apiKeyId });
        }
      });
      expect(ids.size).toBe(TRANSACTIONS);
      const statuses = (await transactionRequests()).map((r) => r.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(1);
      expect(statuses.filter((s) => s === 200)).toHaveLength(TRANSACTIONS / PAGE_SIZE);
    });

    it('does not loop when the secret did not change: the 401 is raised', async () => {
      const { client: api } = consumer();
      await world.sandbox.admin.revokeApiKey({ publicId: world.initialKey.apiKeyId });
      await expect(api.companies.list().all()).rejects.toMatchObject({
        status: 401,
        code: dialect === 'default' ? 'key_revoked' : 'authentication_failed',
      });
      expect((await world.sandbox.admin.requestLog({ limit: 10 })).filter((r) => r.route === 'GET /companies/')).toHaveLength(1);
    });

    it("names a company without a key secret, and refuses a secret holding another company's key", async () => {
      const { keys } = consumer();
      await expect(keys.getApiKey(world.otherCompanyId)).rejects.toBeInstanceOf(CompanyKeyNotFoundError);
      await client(world.sm).send(
        new CreateSecretCommand({
          Name: 'misfiled',
          SecretString: serializeCompanyKeySecret(world.initialKey),
          Tags: [
            { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
            { Key: COMPANY_KEY_TAGS.company, Value: world.otherCompanyId },
          ],
        }),
      );
      await expect(keys.getApiKey(world.otherCompanyId)).rejects.toMatchObject({ field: 'companyId' });
    });
  });
});
