import { renderExport } from '../../../cli/commands/export';
import { notSeenInTime } from '../../../cli/operations/aws-operations';
import type { CompanyExportRow, ExportReport } from '../../../cli/operations/operations';
import { NO_EXPORT_RESULT } from '../../../cli/operations/shared';
import { Output } from '../../../cli/output';

const COMPANY = '3f0c2a4e-9b1d-4c6e-8a2f-5d7e9b1c3a40';

/**
 * AWS mode waits for the manifests of the exports it requested; a company whose manifest did not
 * appear in time stayed `requested` with no error, so its report had no `!` line and stderr no
 * error line, where the local and direct modes give a failed company both (decision 103).
 */
describe('AWS mode: a requested export not seen in time', () => {
  const requested: CompanyExportRow = { ...NO_EXPORT_RESULT, companyId: COMPANY, status: 'requested' };

  it('keeps the row requested (the pipeline may still publish it) and gives it an error naming the month, the wait and where to look', () => {
    const row = notSeenInTime(requested, '2026-10', 'acctops-prod');
    expect(row.status).toBe('requested');
    expect(row.error).toEqual({
      code: 'export_not_seen',
      message:
        'no manifest of 2026-10 appeared within 15 min of the request: the pipeline may still be exporting it (a large month is split and takes longer), or its export failed',
      exitCode: 5,
      hint: expect.stringMatching(/^`acctops --stack acctops-prod doctor` shows .*\/acctops\/<stage>\/export-period/),
    });
    // Every other field as the requested row had it: --json adds an error where there was null.
    expect({ ...row, error: null }).toEqual(requested);
  });

  it('the report for people gets the `!` line the other modes print for a failed company', () => {
    let stdout = '';
    const out = new Output(
      { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: () => true } },
      { json: false, verbose: false },
    );
    const report: ExportReport = {
      month: '2026-10',
      mode: 'aws',
      out: 's3://bucket/exports',
      formats: ['jsonl'],
      csvDialect: null,
      defaultCurrency: null,
      companies: [notSeenInTime(requested, '2026-10', 'acctops-prod')],
      skipped: [],
      monthOpen: false,
    };
    renderExport(out, report);
    expect(stdout).toContain(`\n! ${COMPANY}: no manifest of 2026-10 appeared within 15 min of the request:`);
  });
});
