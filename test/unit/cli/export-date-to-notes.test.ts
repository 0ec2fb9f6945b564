import { renderExport } from '../../../cli/commands/export';
import type { CompanyExportRow, ExportReport, TransactionsDateTo } from '../../../cli/operations/operations';
import { NO_EXPORT_RESULT } from '../../../cli/operations/shared';
import { Output } from '../../../cli/output';

/**
 * The export report's note on how the month's `date_to` was read (docs/exports.md, "The last day of
 * a range"), from the row the manifest fills: what was read on its own, what repeated, and the
 * setting of the mode that fixes it.
 */
describe('export report: the last day read on its own', () => {
  const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';

  function render(mode: ExportReport['mode'], dateTo: TransactionsDateTo | null, duplicatesDropped: Record<string, number> = {}): string[] {
    const row: CompanyExportRow = {
      ...NO_EXPORT_RESULT,
      companyId: COMPANY,
      status: 'completed',
      manifestUrl: `file:///x/exports/company=${COMPANY}/period=2026-10/_manifest.json`,
      records: { transactions: 10 },
      totals: [],
      duplicatesDropped: { transactions: 0, ...duplicatesDropped },
      transactionsOutsidePeriod: 0,
      transactionsDateTo: dateTo,
    };
    let stderr = '';
    const out = new Output(
      { stdout: { write: () => true }, stderr: { write: (t: string) => (stderr += t) } },
      { json: false, verbose: false },
    );
    renderExport(out, {
      month: '2026-10',
      mode,
      out: 'x',
      formats: ['csv'],
      csvDialect: 'standard',
      defaultCurrency: null,
      companies: [row],
      skipped: [],
      monthOpen: false,
    });
    return stderr.split('\n').filter((line) => line.startsWith('acctops: note: '));
  }

  it('says nothing when date_to read inclusive, undetermined, or the manifest does not say', () => {
    expect(render('direct', { setting: 'detect', read: 'inclusive', lastDayRecords: 0, lastDayRepeats: 0, nextDayDropped: 0 })).toEqual([]);
    expect(render('direct', { setting: 'detect', read: 'undetermined', lastDayRecords: 0, lastDayRepeats: 0, nextDayDropped: 0 })).toEqual(
      [],
    );
    expect(render('aws', null)).toEqual([]);
  });

  it('an exclusive date_to: the last day read on its own, with the records, and how to skip the probe in the mode', () => {
    const found = { setting: 'detect', read: 'exclusive', lastDayRecords: 97, lastDayRepeats: 0, nextDayDropped: 0 } as const;
    expect(render('direct', found)).toEqual([
      `acctops: note: ${COMPANY}: the service's date_to excludes its day (as its probe found): the last day of 2026-10 was read on its own, 97 transaction(s), and written with the month; --date-to exclusive skips the probe (docs/exports.md, "The last day of a range")`,
    ]);
    expect(render('aws', found)[0]).toContain("; the stage's exports.dateTo exclusive skips the probe");
    expect(render('local', found)[0]).toMatch(/written with the month \(docs/);
    expect(render('direct', { ...found, setting: 'exclusive' })[0]).toMatch(/\(as set\): .* written with the month \(docs/);
  });

  it('repeats of the last day: their own note, with the inclusive setting; not counted again in the note of repeated pages', () => {
    const misread = { setting: 'detect', read: 'exclusive', lastDayRecords: 40, lastDayRepeats: 38, nextDayDropped: 0 } as const;
    expect(render('direct', misread, { transactions: 38 })).toEqual([
      `acctops: note: ${COMPANY}: the last day of 2026-10, read on its own because date_to was taken as exclusive (as its probe found), repeated 38 of its 40 transaction(s) the month already held: dropped, each written once and counted once in the totals; the service's date_to includes its day: use --date-to inclusive (docs/exports.md, "The last day of a range")`,
    ]);
    expect(render('aws', { ...misread, setting: 'exclusive' }, { transactions: 38 })[0]).toContain(
      "(as set), repeated 38 of its 40 transaction(s) the month already held: dropped, each written once and counted once in the totals; the service's date_to includes its day: use the stage's exports.dateTo inclusive",
    );
    // Repeats across pages besides: the pages' note counts only those.
    const notes = render('direct', misread, { transactions: 41, categories: 1 });
    expect(notes[0]).toContain(
      'the service sent records again on a later page (the list changed while it was read): 3 of transactions, 1 of categories',
    );
    expect(notes[1]).toContain('repeated 38 of its 40');
  });

  it("the next month's first day that the misread added: dropped, said in the same note, never as outside the month", () => {
    const misread = { setting: 'exclusive', read: 'exclusive', lastDayRecords: 50, lastDayRepeats: 38, nextDayDropped: 12 } as const;
    const notes = render('direct', misread, { transactions: 38 });
    expect(notes).toEqual([
      `acctops: note: ${COMPANY}: the last day of 2026-10, read on its own because date_to was taken as exclusive (as set), repeated 38 of its 50 transaction(s) the month already held: dropped, each written once and counted once in the totals; and 12 of the day after it, which belong to the next month: dropped, its own export holds them; the service's date_to includes its day: use --date-to inclusive (docs/exports.md, "The last day of a range")`,
    ]);
  });
});
