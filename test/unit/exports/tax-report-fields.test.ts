import { parseTaxReportFieldList, parseTaxReportFields, taxReportWithNames } from '../../../src/core/exports/formats/tax-report-fields';
import { taxReportFields as taxReportFieldsArg } from '../../../cli/args';
import { exportRuntimeFromEnv, AwsExportRuntime } from '../../../src/adapters/aws/export-runtime';
import { ConfigError, ValidationError } from '../../../src/core/shared/errors';

const issuesOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError || error instanceof ConfigError) return error.issues;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe("tax report fields: the service's names of ours", () => {
  it('reads ours=theirs pairs, as the CLI takes them', () => {
    expect(parseTaxReportFieldList(' periodEnd=endDate, periodStart = startDate ,createdAt=created')).toEqual({
      periodEnd: 'endDate',
      periodStart: 'startDate',
      createdAt: 'created',
    });
  });

  it('names what is wrong: a field of ours it does not know, a pair without =, pk, one name for two fields', () => {
    expect(issuesOf(() => parseTaxReportFieldList('periodFinish=endDate'))).toEqual([
      { path: 'periodFinish', message: 'not a tax-report field of ours' },
    ]);
    expect(issuesOf(() => parseTaxReportFieldList('periodEnd'))).toEqual([expect.objectContaining({ path: 'pair 1' })]);
    expect(issuesOf(() => parseTaxReportFieldList('periodEnd='))).toEqual([expect.objectContaining({ path: 'pair 1' })]);
    expect(issuesOf(() => parseTaxReportFields({ periodEnd: 'pk' }))).toEqual([expect.objectContaining({ path: 'periodEnd' })]);
    expect(issuesOf(() => parseTaxReportFields({ periodStart: 'date', periodEnd: 'date' }))).toEqual([
      { path: 'periodEnd', message: 'the same service field as periodStart' },
    ]);
  });

  it('refuses a service field that would feed two of ours, counting a field left unmapped under its own name', () => {
    expect(issuesOf(() => parseTaxReportFields({ type: 'status' }))).toEqual([
      { path: 'type', message: 'the same service field as status' },
    ]);
    expect(issuesOf(() => parseTaxReportFields({ status: 'constructor' }))).toEqual([
      { path: 'status', message: 'not a field name, nor a dotted path of field names (period.from)' },
    ]);
    // A swap is fine: each service field feeds one of ours.
    expect(parseTaxReportFields({ periodEnd: 'periodStart', periodStart: 'periodEnd' })).toEqual({
      periodEnd: 'periodStart',
      periodStart: 'periodEnd',
    });
  });

  it('takes a dotted path into nested objects, and refuses one with an empty or prototype segment', () => {
    expect(parseTaxReportFieldList('periodStart=period.from,periodEnd=period.to')).toEqual({
      periodStart: 'period.from',
      periodEnd: 'period.to',
    });
    // The CLI's --tax-report-fields parser: a bad path is a usage error naming our field.
    expect(taxReportFieldsArg('periodStart=period.from')).toEqual({ periodStart: 'period.from' });
    expect(() => taxReportFieldsArg('periodEnd=period..to')).toThrow(/periodEnd: not a field name, nor a dotted path/);
    for (const bad of ['period.', '.to', 'period..to', 'period.__proto__']) {
      expect(issuesOf(() => parseTaxReportFields({ periodEnd: bad }))).toEqual([
        { path: 'periodEnd', message: expect.stringMatching(/dotted path/) },
      ]);
    }
  });

  it('reads the value at a dotted path; a field of that whole name wins; a path that ends nowhere is no value', () => {
    const read = (raw: Record<string, unknown>) =>
      taxReportWithNames({ pk: '3a3a3a3a-0000-4000-8000-000000000001', ...raw }, { periodStart: 'period.from', periodEnd: 'period.to' }, 0);
    expect(read({ period: { from: '2026-10-01', to: '2026-10-31' } })).toMatchObject({
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31',
    });
    expect(read({ 'period.from': '2026-09-01', period: { from: '2026-10-01' } })).toMatchObject({
      periodStart: '2026-09-01',
      periodEnd: null,
    });
    expect(read({ period: [{ from: '2026-10-01' }] })).toMatchObject({ periodStart: null });
    expect(read({ period: '2026-10' })).toMatchObject({ periodStart: null, periodEnd: null });
    expect(() => read({ period: { from: '01.10.2026' } })).toThrow(
      expect.objectContaining({ issues: [expect.objectContaining({ path: 'period.from' })] }),
    );
  });

  it('names a pair by its position, never by its text, and refuses a field given twice or an empty list', () => {
    expect(issuesOf(() => parseTaxReportFieldList('periodEnd=endDate,secret-looking-text'))).toEqual([
      { path: 'pair 2', message: 'expected ours=theirs, e.g. periodEnd=endDate' },
    ]);
    expect(issuesOf(() => parseTaxReportFieldList('periodEnd=a,periodEnd=b'))).toEqual([
      { path: 'pair 2', message: 'names a field given before' },
    ]);
    expect(issuesOf(() => parseTaxReportFieldList(','))).toEqual([expect.objectContaining({ path: 'pair 1' })]);
  });

  it('comes to the export function as EXPORT_TAX_REPORT_FIELDS, a JSON object; unset is our names, malformed is a ConfigError naming it', () => {
    const read = (value: string | undefined) =>
      exportRuntimeFromEnv(AwsExportRuntime, ['EXPORT_TAX_REPORT_FIELDS'], value === undefined ? {} : { EXPORT_TAX_REPORT_FIELDS: value })
        .env.EXPORT_TAX_REPORT_FIELDS;
    expect(read('{"periodEnd":"endDate"}')).toEqual({ periodEnd: 'endDate' });
    expect(read(undefined)).toEqual({});
    expect(issuesOf(() => read('periodEnd=endDate'))).toEqual([expect.objectContaining({ path: 'EXPORT_TAX_REPORT_FIELDS' })]);
    expect(issuesOf(() => read('{"periodFinish":"endDate"}'))).toEqual([
      expect.objectContaining({ path: expect.stringContaining('EXPORT_TAX_REPORT_FIELDS') as unknown }),
    ]);
  });
});
