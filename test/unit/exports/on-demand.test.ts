import {
  decodeJob,
  deduplicationIdOf,
  encodeJob,
  messageGroupOf,
  monthlyRunId,
  type ExportJob,
} from '../../../src/core/exports/pipeline/export-jobs';
import { exportRequestedSchema, onDemandJobs, requestedMonths } from '../../../src/core/exports/pipeline/on-demand';
import { parseWith, ValidationError } from '../../../src/core/shared/errors';

const COMPANY = '6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B';
const USER = '11111111-2222-4333-8444-555555555555';
const trigger = { kind: 'on_demand' as const, requestId: 'evt-1', via: 'event' as const };
const parse = (detail: unknown) => parseWith(exportRequestedSchema, detail, 'ExportRequested detail');

describe('ExportRequested', () => {
  it('splits a range into whole months, across a year end, from days or months', () => {
    expect(requestedMonths(parse({ companyId: COMPANY, from: '2025-11-30', to: '2026-02-01' })).map((p) => p.text)).toEqual([
      '2025-11',
      '2025-12',
      '2026-01',
      '2026-02',
    ]);
    expect(requestedMonths(parse({ companyId: COMPANY, from: '2026-10', to: '2026-10-31' })).map((p) => p.text)).toEqual(['2026-10']);
    expect(requestedMonths(parse({ companyId: COMPANY, period: '2026-02' })).map((p) => p.text)).toEqual(['2026-02']);
  });

  it('makes one export job per month: the company in lower case, the user as source when named, all formats by default', () => {
    const jobs = onDemandJobs(
      parse({ companyId: COMPANY, from: '2026-09', to: '2026-10', userExternalId: USER, datasets: ['transactions'] }),
      trigger,
    );
    expect(jobs).toEqual(
      ['2026-09', '2026-10'].map((period) => ({
        type: 'export',
        companyId: COMPANY.toLowerCase(),
        period,
        datasets: ['transactions'],
        formats: ['jsonl', 'csv', 'parquet'],
        source: { kind: 'user', externalId: USER },
        trigger,
      })),
    );
    expect(onDemandJobs(parse({ companyId: COMPANY, period: '2026-10' }), trigger)[0]!.source).toEqual({ kind: 'apiKey' });
  });

  it.each([
    [{ companyId: COMPANY }, 'period'],
    [{ companyId: COMPANY, period: '2026-10', from: '2026-01', to: '2026-02' }, 'period'],
    [{ companyId: COMPANY, from: '2026-01' }, 'to'],
    [{ companyId: COMPANY, from: '2026-03', to: '2026-01' }, 'to'],
    [{ companyId: COMPANY, from: '2020-01', to: '2026-01' }, 'to'],
    [{ companyId: COMPANY, period: '2026-13' }, 'period'],
    [{ companyId: COMPANY, from: 'October', to: '2026-10' }, 'from'],
    [{ companyId: 'acme', period: '2026-10' }, 'companyId'],
    [{ companyId: COMPANY, period: '2026-10', formats: ['xml'] }, 'formats[0]'],
    [{ companyId: COMPANY, period: '2026-10', formats: [] }, 'formats'],
    [{ companyId: COMPANY, period: '2026-10', extra: 1 }, ''],
  ])('refuses %j naming %s', (detail, field) => {
    const error = (() => {
      try {
        parse(detail);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe(field);
  });
});

describe('export jobs on the queue', () => {
  const job: ExportJob = {
    type: 'export',
    companyId: COMPANY.toLowerCase(),
    period: '2026-10',
    formats: ['csv'],
    source: { kind: 'apiKey' },
    trigger,
  };

  it('round-trips through the wire form and refuses a malformed body naming the field', () => {
    expect(decodeJob(encodeJob(job))).toEqual(job);
    expect(() => decodeJob('{"type":"export"')).toThrow(ValidationError);
    expect(() => decodeJob(JSON.stringify({ ...job, source: { kind: 'user' } }))).toThrow(/source\.externalId/);
  });

  it('groups by company and month; deduplicates by trigger, subject, month and selection', () => {
    expect(messageGroupOf(job)).toBe(`${COMPANY.toLowerCase()}#2026-10`);
    expect(
      messageGroupOf({
        type: 'discover',
        externalId: USER,
        period: '2026-10',
        formats: ['csv'],
        trigger: { kind: 'monthly', runId: 'm1' },
      }),
    ).toBe(`user#${USER}`);
    const id = deduplicationIdOf(job);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(deduplicationIdOf({ ...job })).toBe(id);
    expect(deduplicationIdOf({ ...job, period: '2026-09' })).not.toBe(id);
    expect(deduplicationIdOf({ ...job, formats: ['parquet'] })).not.toBe(id);
    expect(deduplicationIdOf({ ...job, trigger: { ...trigger, requestId: 'evt-2' } })).not.toBe(id);
  });

  it('derives the monthly run id from the month and the scheduler execution id', () => {
    expect(monthlyRunId('2026-10', 'exec-a')).toBe(monthlyRunId('2026-10', 'exec-a'));
    expect(monthlyRunId('2026-10', 'exec-a')).not.toBe(monthlyRunId('2026-10', 'exec-b'));
    expect(monthlyRunId('2026-10', 'exec-a')).toMatch(/^m202610-[0-9a-f]{16}$/);
  });
});
