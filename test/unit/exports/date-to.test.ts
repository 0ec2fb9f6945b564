import { apiKeyAuth, createAccountingClient, parseTimestamp, type AccountingClient } from '../../../src/core/accounting-api';
import { transactionsOfRange, type DateToFinding, type DateToMode } from '../../../src/core/exports/pipeline/date-to';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { BASE_URL, fakeTransport, listHandler, transaction, type FakeTransport } from '../accounting-api/fake-transport';

/**
 * The last day of a range read on its own (date-to.ts) against services whose `date_to` is
 * inclusive, though the probe (or the setting) takes it as exclusive: the last day's read then
 * repeats records the range already yielded, which must be dropped and counted, never written twice.
 */
describe('transactionsOfRange: repeats of the last day read on its own', () => {
  const RANGE = { dateFrom: '2026-10-01', dateTo: '2026-10-31' };

  /** Records around the end of October; `own` is the date in its own offset, `utc` in UTC. */
  const RECORDS = [
    transaction(1, { valueDate: '2026-10-15T12:00:00+02:00' }), // own 10-15, utc 10-15
    transaction(2, { valueDate: '2026-10-30T12:00:00+00:00' }), // own 10-30, utc 10-30
    transaction(3, { valueDate: '2026-10-30T23:30:00-02:00' }), // own 10-30, utc 10-31
    transaction(4, { valueDate: '2026-10-31T10:00:00+01:00' }), // own 10-31, utc 10-31
    transaction(5, { valueDate: '2026-10-31T23:30:00-02:00' }), // own 10-31, utc 11-01
    transaction(6, { valueDate: '2026-11-01T00:30:00+02:00' }), // own 11-01, utc 10-31
    transaction(7, { valueDate: '2026-11-01T12:00:00+00:00' }), // own 11-01, utc 11-01
  ];
  const id = (n: number) => String(transaction(n).publicId);

  /** The client the range reads through, two records a page so that a read spans pages. */
  function clientOf(fake: FakeTransport): AccountingClient {
    return createAccountingClient({
      baseUrl: BASE_URL,
      credentials: apiKeyAuth('sbx_AbCdEf1234567890abcdefghijklmnop'),
      transport: fake.transport,
      pageSize: 2,
    });
  }

  /**
   * A service that filters `[date_from, date_to]` inclusive by each record's date (its own offset's,
   * or UTC's with `utc`); `blindProbe` answers the probe (equal ends, page size 1) with nothing, as a
   * service with a quirk there would: the probe then concludes "exclusive".
   */
  function service(options: { utc?: boolean; blindProbe?: boolean; records?: Record<string, unknown>[] }): {
    client: AccountingClient;
    fake: FakeTransport;
  } {
    const records = options.records ?? RECORDS;
    const dayOf = (record: Record<string, unknown>) => {
      const instant = parseTimestamp(String(record.valueDate))!;
      const shift = options.utc ? 0 : instant.offsetMinutes * 60_000;
      return new Date(instant.utcMillis + shift).toISOString().slice(0, 10);
    };
    const fake = fakeTransport((request, url) => {
      const from = url.searchParams.get('date_from')!;
      const to = url.searchParams.get('date_to')!;
      const probe = from === to && url.searchParams.get('page_size') === '1';
      const items = options.blindProbe && probe ? [] : records.filter((r) => dayOf(r) >= from && dayOf(r) <= to);
      return listHandler('/accounting/transactions/', items)(request, url);
    });
    const client = clientOf(fake);
    return { client, fake };
  }

  async function read(client: AccountingClient, mode: DateToMode) {
    const logger = new MemoryLogger();
    let finding: DateToFinding | undefined;
    const source = transactionsOfRange(client, RANGE, { dateTo: mode, logger, onFinding: (f) => (finding = f) });
    expect(source.reading()).toBeUndefined();
    const ids: string[] = [];
    let duplicatesDropped = 0;
    for await (const page of source.pages()) {
      duplicatesDropped += page.duplicatesDropped;
      for (const item of page.items) ids.push(item.parsed.publicId);
    }
    const warnings = logger.entries().filter((l) => l.level === 'warn');
    return { ids, finding: finding!, reading: source.reading(), duplicatesDropped, warnings };
  }

  const lastDayReads = (fake: FakeTransport) => fake.urls().filter((u) => u.searchParams.get('date_from') === '2026-10-31');

  it('an inclusive service the probe misreads as exclusive: the last day is written once, its repeats counted and warned of once', async () => {
    const { client, fake } = service({ blindProbe: true });
    const { ids, finding, reading, duplicatesDropped, warnings } = await read(client, 'detect');
    // The range holds 1-5; the last day's read [31st, 1st] holds 4, 5 (repeats) and 6, 7 (the 1st):
    // once the repeats have shown date_to inclusive, 6 and 7 are the next range's, dropped.
    expect(lastDayReads(fake).length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual([1, 2, 3, 4, 5].map(id).sort());
    expect(finding).toEqual({ dateTo: 'exclusive', detected: true, lastDayRecords: 4, lastDayRepeats: 2, nextDayDropped: 2 });
    expect(reading).toEqual({ setting: 'detect', read: 'exclusive', lastDayRecords: 4, lastDayRepeats: 2, nextDayDropped: 2 });
    // Counted where the pagination's repeats are, so the manifest's duplicatesDropped holds them.
    expect(duplicatesDropped).toBe(2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      message: expect.stringContaining('repeated records the range already held') as unknown,
      repeatsDropped: 2,
      nextDayDropped: 2,
      lastDayRecords: 4,
      detected: true,
      hint: expect.stringContaining('to inclusive') as unknown,
    });
  });

  it('a service that dates by UTC: repeats whose own date is the day before or after are dropped too; its next day goes, whatever its own date', async () => {
    // By UTC, the range is 1-4 and 6; the last day [31st, 1st] is 3, 4, 6 again and 5, 7: November
    // by UTC, the service's next range (5's own date is still the 31st).
    const { client } = service({ utc: true, blindProbe: true });
    const { ids, finding, duplicatesDropped } = await read(client, 'detect');
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual([1, 2, 3, 4, 6].map(id).sort());
    expect(finding).toMatchObject({ dateTo: 'exclusive', lastDayRecords: 5, lastDayRepeats: 3, nextDayDropped: 2 });
    expect(duplicatesDropped).toBe(3);
  });

  it('timestamps in the basic format (no dashes) are placed on their days as well', async () => {
    const records = [
      transaction(11, { valueDate: '20261015T120000+0200' }),
      transaction(12, { valueDate: '20261030T233000-0200' }), // own 10-30, utc 10-31
      transaction(13, { valueDate: '20261031T100000+0100' }), // own 10-31
      transaction(14, { valueDate: '20261101T003000+0200' }), // own 11-01, utc 10-31: not in the range by own date
    ];
    const { client } = service({ utc: true, blindProbe: true, records });
    const { ids, finding } = await read(client, 'detect');
    // Sampled for the probe as well (Date.parse reads no basic-format date: the finding was `undetermined`, the last day never read).
    expect(finding.dateTo).toBe('exclusive');
    expect(new Set(ids).size).toBe(ids.length);
    // By UTC, the range is 11-14 (14 is 10-31 in UTC); the last day [31st, 1st] is 12, 13, 14 again.
    expect(finding).toMatchObject({ lastDayRecords: 3, lastDayRepeats: 3 });
    expect(ids).toHaveLength(4);
  });

  it('exclusive set on an inclusive service drops the repeats as well, without a probe', async () => {
    const { client, fake } = service({});
    const { ids, reading, warnings } = await read(client, 'exclusive');
    expect(fake.urls().some((u) => u.searchParams.get('page_size') === '1')).toBe(false);
    expect(new Set(ids).size).toBe(ids.length);
    expect(reading).toEqual({ setting: 'exclusive', read: 'exclusive', lastDayRecords: 4, lastDayRepeats: 2, nextDayDropped: 2 });
    expect(warnings).toEqual([expect.objectContaining({ repeatsDropped: 2, nextDayDropped: 2, detected: false })]);
  });

  it('a truly exclusive service: nothing is dropped, and the warning is the exclusive one', async () => {
    // Exclusive: [from, to) by own date, so the range ends on the 30th and the last day is the 31st alone.
    const fake = fakeTransport((request, url) => {
      const from = url.searchParams.get('date_from')!;
      const to = url.searchParams.get('date_to')!;
      return listHandler(
        '/accounting/transactions/',
        RECORDS.filter((r) => String(r.valueDate).slice(0, 10) >= from && String(r.valueDate).slice(0, 10) < to),
      )(request, url);
    });
    const client = clientOf(fake);
    const { ids, reading, duplicatesDropped, warnings } = await read(client, 'detect');
    expect([...ids].sort()).toEqual([1, 2, 3, 4, 5].map(id).sort());
    expect(reading).toEqual({ setting: 'detect', read: 'exclusive', lastDayRecords: 2, lastDayRepeats: 0 });
    expect(duplicatesDropped).toBe(0);
    expect(warnings).toEqual([
      expect.objectContaining({ message: expect.stringContaining('treats date_to as exclusive') as unknown, lastDayRecords: 2 }),
    ]);
  });

  it('only the ids that could be on the last day are kept: a repeat of another day is not recognised', async () => {
    // A service that answers the last day's read with the whole range again: 4 and 5 (own date the
    // 31st) and 3 and 6 (UTC the 31st) are known; 1 and 2 are of other days, so the memory stays a day's.
    const fake = fakeTransport((request, url) => {
      const lastDay = url.searchParams.get('date_from') === '2026-10-31';
      const probe = url.searchParams.get('page_size') === '1';
      const items = probe && !lastDay ? [] : RECORDS.slice(0, 6);
      return listHandler('/accounting/transactions/', items)(request, url);
    });
    const client = clientOf(fake);
    const { ids, finding } = await read(client, 'detect');
    expect(finding).toMatchObject({ lastDayRecords: 6, lastDayRepeats: 4 });
    expect(ids.filter((i) => i === id(1) || i === id(2))).toEqual([id(1), id(2), id(1), id(2)]);
  });

  it('records of the next day before the first repeat are kept: nothing has shown date_to inclusive yet', async () => {
    // The last day's read newest first: 7 and 6 (the 1st) on its first page, before the repeats 5 and 4.
    const fake = fakeTransport((request, url) => {
      const from = url.searchParams.get('date_from')!;
      const to = url.searchParams.get('date_to')!;
      const probe = from === to && url.searchParams.get('page_size') === '1';
      const own = (r: Record<string, unknown>) => String(r.valueDate).slice(0, 10);
      const items = probe ? [] : RECORDS.filter((r) => own(r) >= from && own(r) <= to);
      return listHandler('/accounting/transactions/', from === '2026-10-31' ? [...items].reverse() : items)(request, url);
    });
    const client = clientOf(fake);
    const { ids, finding } = await read(client, 'detect');
    expect([...ids].sort()).toEqual([1, 2, 3, 4, 5, 6, 7].map(id).sort());
    expect(finding).toMatchObject({ lastDayRecords: 4, lastDayRepeats: 2, nextDayDropped: 0 });
  });

  it('inclusive set: no last day read, nothing kept, the reading says so', async () => {
    const { client, fake } = service({ blindProbe: true });
    const { ids, reading, warnings } = await read(client, 'inclusive');
    expect(lastDayReads(fake)).toEqual([]);
    expect([...ids].sort()).toEqual([1, 2, 3, 4, 5].map(id).sort());
    expect(reading).toEqual({ setting: 'inclusive', read: 'inclusive', lastDayRecords: 0, lastDayRepeats: 0 });
    expect(warnings).toEqual([]);
  });

  it('detect on an inclusive service whose probe works: inclusive, nothing read again', async () => {
    const { client, fake } = service({});
    const { reading } = await read(client, 'detect');
    expect(lastDayReads(fake)).toEqual([]);
    expect(reading).toEqual({ setting: 'detect', read: 'inclusive', lastDayRecords: 0, lastDayRepeats: 0 });
  });
});
