import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { apiKeyAuth, fetchTransport, type AccountingClient } from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { transactionsOfRange, type DateToFinding, type DateToMode } from '../../../src/core/exports/pipeline/date-to';
import { createExportClient } from '../../../src/core/exports/pipeline/export-sources';
import { TEST_DIALECTS } from '../../helpers/dialects';

/**
 * Spec §4.2 names `date_to (date)` and not whether it includes its day. The minimal dialect reads it
 * as exclusive (docs/assumptions.md): a month read as [1st, last day] misses its last day there,
 * silently, unless the export reads that day on its own. Every record of the month, exactly once,
 * in both dialects; the probe is skipped when the setting says which.
 */
describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  describe('transactionsOfRange: the last day of a range', () => {
    let sandbox: RunningSandbox;
    let client: AccountingClient;
    let company: string;
    const requests: URL[] = [];
    const real = fetchTransport();

    beforeAll(async () => {
      sandbox = await startSandbox({ dialect, demo: false, clock: new ManualClock(Date.UTC(2026, 10, 5, 8, 0)) });
      company = (await sandbox.admin.createCompany()).publicId;
      await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count: 620 });
      await sandbox.admin.generateTransactions({ companyId: company, month: '2026-11', count: 300 });
      const key = await sandbox.admin.createApiKey({ companyId: company, permissions: ['full_access'] });
      client = createExportClient({
        baseUrl: sandbox.baseUrl,
        credentials: apiKeyAuth(key.key),
        clock: new ManualClock(),
        logger: new MemoryLogger(),
        pageSize: 250,
        transport: (request) => {
          requests.push(new URL(request.url));
          return real(request);
        },
      });
    });
    afterAll(() => sandbox.stop());
    beforeEach(() => requests.splice(0));

    async function read(mode: DateToMode): Promise<{ ids: string[]; finding: DateToFinding; logger: MemoryLogger }> {
      const logger = new MemoryLogger();
      let finding: DateToFinding | undefined;
      const ids: string[] = [];
      const source = transactionsOfRange(
        client,
        { dateFrom: '2026-10-01', dateTo: '2026-10-31' },
        { dateTo: mode, logger, onFinding: (f) => (finding = f) },
      );
      for await (const item of source) ids.push(item.parsed.publicId);
      return { ids, finding: finding!, logger };
    }

    it('detect: every record of October exactly once, none of November, and the finding says how date_to reads', async () => {
      const truth = await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-01', dateTo: '2026-10-31' });
      const { ids, finding, logger } = await read('detect');
      expect(ids).toHaveLength(truth.count);
      expect(new Set(ids).size).toBe(ids.length);
      expect(finding).toMatchObject({ dateTo: dialect === 'minimal' ? 'exclusive' : 'inclusive', detected: true });
      const probes = requests.filter((u) => u.searchParams.get('page_size') === '1');
      expect(probes).toHaveLength(1);
      expect(probes[0]!.searchParams.get('date_from')).toBe(probes[0]!.searchParams.get('date_to'));
      const warned = logger.entries().some((l) => l.level === 'warn' && String(l.msg ?? l.message).includes('date_to as exclusive'));
      expect(warned).toBe(dialect === 'minimal');
    });

    it('a setting that names the reading skips the probe; the wrong one loses (inclusive on exclusive) or adds (exclusive on inclusive) the last day', async () => {
      const truth = (await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-01', dateTo: '2026-10-31' })).count;
      const lastDay = (await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-10-31', dateTo: '2026-10-31' })).count;
      const firstOfNovember = (await sandbox.admin.transactionSummary({ companyId: company, dateFrom: '2026-11-01', dateTo: '2026-11-01' }))
        .count;
      expect(lastDay).toBeGreaterThan(0);
      const right = dialect === 'minimal' ? 'exclusive' : 'inclusive';
      const wrong = dialect === 'minimal' ? 'inclusive' : 'exclusive';
      expect((await read(right)).ids).toHaveLength(truth);
      expect(requests.some((u) => u.searchParams.get('page_size') === '1')).toBe(false);
      expect((await read(wrong)).ids).toHaveLength(dialect === 'minimal' ? truth - lastDay : truth + lastDay + firstOfNovember);
    });
  });
});
