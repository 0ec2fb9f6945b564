import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { apiKeyAuth, fetchTransport, type DataClient } from '../../../src/core/accounting-api';
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
    let client: DataClient;
    let company: string;
    const requests: URL[] = [];
    const real = fetchTransport();
    /** When set, the probe (equal ends, page size 1) asks a day without records: a probe that misreads an inclusive service. */
    let blindProbe = false;

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
          const url = new URL(request.url);
          requests.push(url);
          if (
            blindProbe &&
            url.searchParams.get('page_size') === '1' &&
            url.searchParams.get('date_from') === url.searchParams.get('date_to')
          ) {
            url.searchParams.set('date_from', '2001-01-01');
            url.searchParams.set('date_to', '2001-01-01');
            return real({ ...request, url: url.href });
          }
          return real(request);
        },
      });
    });
    afterAll(() => sandbox.stop());
    beforeEach(() => {
      requests.splice(0);
      blindProbe = false;
    });

    async function read(
      mode: DateToMode,
    ): Promise<{ ids: string[]; finding: DateToFinding; logger: MemoryLogger; duplicatesDropped: number }> {
      const logger = new MemoryLogger();
      let finding: DateToFinding | undefined;
      const ids: string[] = [];
      let duplicatesDropped = 0;
      const source = transactionsOfRange(
        client,
        { dateFrom: '2026-10-01', dateTo: '2026-10-31' },
        { dateTo: mode, logger, onFinding: (f) => (finding = f) },
      );
      for await (const page of source.pages()) {
        duplicatesDropped += page.duplicatesDropped;
        for (const item of page.items) ids.push(item.parsed.publicId);
      }
      return { ids, finding: finding!, logger, duplicatesDropped };
    }

    const count = async (dateFrom: string, dateTo: string) =>
      (await sandbox.admin.transactionSummary({ companyId: company, dateFrom, dateTo })).count;

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

    it('a setting that names the reading skips the probe; the wrong one loses (inclusive on exclusive) the last day, or reads (exclusive on inclusive) the next one and drops it, never the last day twice', async () => {
      const truth = await count('2026-10-01', '2026-10-31');
      const lastDay = await count('2026-10-31', '2026-10-31');
      const firstOfNovember = await count('2026-11-01', '2026-11-01');
      expect(lastDay).toBeGreaterThan(0);
      const right = dialect === 'minimal' ? 'exclusive' : 'inclusive';
      const wrong = dialect === 'minimal' ? 'inclusive' : 'exclusive';
      expect((await read(right)).ids).toHaveLength(truth);
      expect(requests.some((u) => u.searchParams.get('page_size') === '1')).toBe(false);
      const misread = await read(wrong);
      expect(new Set(misread.ids).size).toBe(misread.ids.length);
      // Exclusive on inclusive: the 31st's repeats and the 1st of November (the next range's) are dropped.
      expect(misread.ids).toHaveLength(dialect === 'minimal' ? truth - lastDay : truth);
      expect(misread.finding.lastDayRepeats).toBe(dialect === 'minimal' ? 0 : lastDay);
      expect(misread.finding.nextDayDropped).toBe(dialect === 'minimal' ? 0 : firstOfNovember);
    });

    it('a probe that misreads an inclusive service as exclusive: the last day read again drops what the range held, counts it and warns once', async () => {
      const truth = await count('2026-10-01', '2026-10-31');
      const lastDay = await count('2026-10-31', '2026-10-31');
      const firstOfNovember = await count('2026-11-01', '2026-11-01');
      blindProbe = true;
      const { ids, finding, logger, duplicatesDropped } = await read('detect');
      expect(finding.dateTo).toBe('exclusive');
      // No record twice. The minimal dialect is exclusive indeed: the 31st comes once, from its own read.
      expect(new Set(ids).size).toBe(ids.length);
      const inclusive = dialect !== 'minimal';
      // An inclusive service answers [31st, 1st] with both days: the 31st's are repeats, dropped; once
      // they have shown date_to inclusive, the 1st's are the next range's, dropped and counted apart.
      expect(finding).toEqual({
        dateTo: 'exclusive',
        detected: true,
        lastDayRecords: inclusive ? lastDay + firstOfNovember : lastDay,
        lastDayRepeats: inclusive ? lastDay : 0,
        nextDayDropped: inclusive ? firstOfNovember : 0,
      });
      expect(ids).toHaveLength(truth);
      expect(duplicatesDropped).toBe(inclusive ? lastDay : 0);
      const warnings = logger.entries().filter((l) => l.level === 'warn');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject(
        inclusive
          ? {
              message: expect.stringContaining('the service treats date_to as inclusive') as unknown,
              repeatsDropped: lastDay,
              nextDayDropped: firstOfNovember,
            }
          : { message: expect.stringContaining('the service treats date_to as exclusive') as unknown, lastDayRecords: lastDay },
      );
    });
  });
});
