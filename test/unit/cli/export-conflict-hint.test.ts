import { failed } from '../../../cli/operations/export-run';
import { ConcurrentExportError, PeriodExportError } from '../../../src/core/exports/formats/period-errors';

describe('a run that lost the race for the manifest', () => {
  const COMPANY = 'c0ffee00-0000-4000-8000-000000000001';
  const lost = new PeriodExportError(
    { company: COMPANY, period: '2026-10', runId: 'run-a' },
    new ConcurrentExportError(`exports/company=${COMPANY}/period=2026-10/_manifest.json`),
  );

  it('fails its row and says the period stands complete from the other run, with nothing to repair', () => {
    const row = failed(COMPANY, lost, { direct: true });
    expect(row.status).toBe('failed');
    expect(row.error).toMatchObject({ code: 'export_failed', exitCode: 1 });
    expect(row.error!.message).toContain('another export run replaced');
    expect(row.error!.hint).toMatch(/^another export of this period published first and stands complete .*nothing to repair/);
  });

  it('keeps the other failures’ hints', () => {
    const other = failed(COMPANY, new PeriodExportError({ company: COMPANY, period: '2026-10', runId: 'run-a' }, new Error('disk')));
    expect(other.error!.hint ?? '').not.toMatch(/published first/);
  });
});
