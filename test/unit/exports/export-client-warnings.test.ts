import { apiKeyAuth, type AccountingApiWarning } from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { createExportClient, NEXT_REBASED_HINT } from '../../../src/core/exports/pipeline/export-sources';
import { BASE_URL, fakeTransport, json, transaction } from '../accounting-api/fake-transport';

/**
 * A `next` on another origin under the base path (decision 108) does not stop an export: the
 * deployed worker's log says what the service's owner should fix, and a caller that asked is told.
 */
describe('createExportClient: a rebased next', () => {
  it('reads on, logs the origins with what to fix (never the query), and passes the warning on', async () => {
    const fake = fakeTransport((_request, url) => {
      const page = Number(url.searchParams.get('page') ?? '1');
      const next = page < 3 ? `http://web:8000/api/v1/accounting/transactions/?page=${page + 1}&token=opaque-cursor-value` : null;
      return json(200, { count: 3, next, previous: null, results: [transaction(page)] });
    });
    const logger = new MemoryLogger();
    const told: AccountingApiWarning[] = [];
    const client = createExportClient({
      baseUrl: BASE_URL,
      credentials: apiKeyAuth('sbx_ExportClientKey0123456789abcdefgh'),
      clock: ManualClock.autoAdvancing(),
      logger,
      transport: fake.transport,
      onWarning: (warning) => told.push(warning),
    });
    expect(await client.transactions.list().all()).toHaveLength(3);
    expect(fake.urls().map((u) => u.origin)).toEqual(Array(3).fill('https://api.test:4010'));
    expect(told).toMatchObject([{ type: 'next_rebased', nextOrigin: 'http://web:8000', baseOrigin: 'https://api.test:4010' }]);
    const hinted = logger.entries().filter((e) => e.hint === NEXT_REBASED_HINT);
    expect(hinted).toEqual([
      expect.objectContaining({ level: 'warn', nextOrigin: 'http://web:8000', baseOrigin: 'https://api.test:4010' }),
    ]);
    expect(JSON.stringify(logger.entries())).not.toContain('opaque-cursor-value');
  });
});
