import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import cdkJson from '../../cdk.json';
import { LOG_RETENTION_DAYS, loadStageConfig, parseStageSettings, StageConfigError } from '../../lib/config/stage';
import { CURRENCY_CODE_EXPECTED } from '../../contract/currency';
import { MemoryRegistryTable } from '../../src/adapters/local/file-company-registry';
import { CompanyRegistry } from '../../src/core/companies/company-registry';
import { parseTaxReportFields } from '../../src/core/exports/formats/tax-report-fields';

const BASE = { baseUrl: 'https://accounting.example.com/api/v1' };
const COMPANY = '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d';

/** Loads `settings` as the only stage, `dev`. */
function load(settings: unknown) {
  const context: Record<string, unknown> = { stage: 'dev', stages: { dev: settings } };
  return loadStageConfig((key) => context[key]);
}

function failure(run: () => unknown): StageConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof StageConfigError) return error;
    throw error;
  }
  throw new Error('expected a StageConfigError');
}

describe('stage configuration', () => {
  it('reads every stage of cdk.json', () => {
    const { stages } = cdkJson.context;
    for (const name of Object.keys(stages)) {
      const context: Record<string, unknown> = { ...cdkJson.context, stage: name };
      const stage = loadStageConfig((key) => context[key]);
      expect(stage.name).toBe(name);
      expect(stage.baseUrl).toMatch(/^https:\/\/.+\/api\/v1$/);
    }
  });

  it('fills every default', () => {
    expect(load(BASE)).toEqual({
      name: 'dev',
      baseUrl: BASE.baseUrl,
      retainData: true,
      logLevel: 'info',
      logRetentionDays: 30,
      secretCacheTtlSeconds: 300,
      alarmEmails: [],
      schedules: { tokenRefresh: 'rate(5 minutes)', monthlyExport: 'cron(0 3 1 * ? *)', timeZone: 'Europe/Berlin' },
      companies: [],
      apiKeys: { rotationDays: 30, revocationGraceMinutes: 30 },
      exports: { maxTransactionsPerPart: 500_000, taxReportFields: {} },
    });
  });

  it('keeps given values, strips a trailing slash from the base URL', () => {
    const stage = load({
      baseUrl: 'https://accounting.example.com/api/v1/',
      account: '123456789012',
      region: 'eu-central-1',
      schedules: { timeZone: 'America/New_York', tokenRefresh: 'rate(1 minute)' },
      companies: [{ companyId: COMPANY, existingSecretArn: 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acme-AbCdEf' }],
      apiKeys: { paths: { revoke: '/keys/{publicId}/' } },
    });
    expect(stage.baseUrl).toBe('https://accounting.example.com/api/v1');
    expect(stage.schedules).toEqual({ tokenRefresh: 'rate(1 minute)', monthlyExport: 'cron(0 3 1 * ? *)', timeZone: 'America/New_York' });
    expect(stage.companies[0]?.existingSecretArn).toContain(':secret:acme');
    expect(stage.apiKeys.paths).toEqual({ revoke: '/keys/{publicId}/' });
  });

  it.each([
    ['baseUrl', {}, 'stages.dev.baseUrl'],
    ['baseUrl', { baseUrl: 'http://accounting.example.com/api/v1' }, 'stages.dev.baseUrl'],
    ['baseUrl', { baseUrl: 'https://accounting.example.com/v2' }, 'stages.dev.baseUrl'],
    ['time zone', { ...BASE, schedules: { timeZone: 'Europe/Atlantis' } }, 'stages.dev.schedules.timeZone'],
    ['token refresh', { ...BASE, schedules: { tokenRefresh: 'every 5 minutes' } }, 'stages.dev.schedules.tokenRefresh'],
    ['rate plural', { ...BASE, schedules: { tokenRefresh: 'rate(1 minutes)' } }, 'stages.dev.schedules.tokenRefresh'],
    ['monthly export', { ...BASE, schedules: { monthlyExport: 'rate(30 days)' } }, 'stages.dev.schedules.monthlyExport'],
    ['companyId', { ...BASE, companies: [{ companyId: 'acme' }] }, 'stages.dev.companies[0].companyId'],
    ['split size', { ...BASE, exports: { maxTransactionsPerPart: 10 } }, 'stages.dev.exports.maxTransactionsPerPart'],
    [
      'tax report field',
      { ...BASE, exports: { taxReportFields: { periodFinish: 'endDate' } } },
      'stages.dev.exports.taxReportFields.periodFinish',
    ],
    ['tax report name', { ...BASE, exports: { taxReportFields: { periodEnd: '' } } }, 'stages.dev.exports.taxReportFields.periodEnd'],
    ['tax report pk', { ...BASE, exports: { taxReportFields: { periodEnd: 'pk' } } }, 'stages.dev.exports.taxReportFields.periodEnd'],
    [
      'tax report name twice',
      { ...BASE, exports: { taxReportFields: { periodStart: 'date', periodEnd: 'date' } } },
      'stages.dev.exports.taxReportFields.periodEnd',
    ],
    [
      'tax report name of another',
      { ...BASE, exports: { taxReportFields: { type: 'status' } } },
      'stages.dev.exports.taxReportFields.type',
    ],
    ['duplicate company', { ...BASE, companies: [{ companyId: COMPANY }, { companyId: COMPANY.toUpperCase() }] }, 'stages.dev.companies'],
    [
      'secret ARN',
      { ...BASE, companies: [{ companyId: COMPANY, existingSecretArn: 'acme' }] },
      'stages.dev.companies[0].existingSecretArn',
    ],
    [
      'default currency',
      { ...BASE, companies: [{ companyId: COMPANY, defaultCurrency: 'EURO' }] },
      'stages.dev.companies[0].defaultCurrency',
    ],
    [
      'default currency Intl does not list',
      { ...BASE, companies: [{ companyId: COMPANY }, { companyId: COMPANY.replace('0b', '1b'), defaultCurrency: 'XYZ' }] },
      'stages.dev.companies[1].defaultCurrency',
    ],
    ['e-mail', { ...BASE, alarmEmails: ['oncall'] }, 'stages.dev.alarmEmails[0]'],
    ['log retention', { ...BASE, logRetentionDays: 31 }, 'stages.dev.logRetentionDays'],
    ['log level', { ...BASE, logLevel: 'verbose' }, 'stages.dev.logLevel'],
    ['unknown field', { ...BASE, logRetention: 30 }, 'stages.dev.logRetention'],
    ['nested unknown field', { ...BASE, schedules: { timezone: 'UTC' } }, 'stages.dev.schedules.timezone'],
    ['revoke path', { ...BASE, apiKeys: { paths: { revoke: '/api-keys/' } } }, 'stages.dev.apiKeys.paths.revoke'],
    ['account alone', { ...BASE, account: '123456789012' }, 'stages.dev.account'],
    [
      'grace vs cache',
      { ...BASE, secretCacheTtlSeconds: 1800, apiKeys: { revocationGraceMinutes: 30 } },
      'stages.dev.apiKeys.revocationGraceMinutes',
    ],
  ])('a bad %s fails with the field name', (_what, settings, field) => {
    const error = failure(() => load(settings));
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
  });

  it("refuses exactly the tax-report field names the export worker's environment refuses", () => {
    const cases: Record<string, string | undefined>[] = [
      { periodEnd: 'endDate', periodStart: 'startDate', createdAt: 'created' },
      { periodEnd: 'periodStart', periodStart: 'startDate' },
      { periodEnd: 'pk' },
      { periodStart: 'date', periodEnd: 'date' },
      { type: 'status' },
      { status: 'constructor' },
      { amountDue: 'x'.repeat(129) },
    ];
    for (const names of cases) {
      const synthesizes = (() => {
        try {
          load({ ...BASE, exports: { taxReportFields: names } });
          return true;
        } catch {
          return false;
        }
      })();
      const starts = (() => {
        try {
          parseTaxReportFields(names);
          return true;
        } catch {
          return false;
        }
      })();
      expect({ names, synthesizes }).toEqual({ names, synthesizes: starts });
    }
  });

  it("takes a company's defaultCurrency exactly as `companies add --default-currency` does: upper-cased, else refused with its words", async () => {
    const registry = new CompanyRegistry(new MemoryRegistryTable(), { defaultFormats: ['csv'] });
    for (const raw of ['JPY', 'gbp', ' chf ', 'Eur', 'EURO', 'XYZ', 'e1r', '', 'EU']) {
      const synthesized = (() => {
        try {
          return load({ ...BASE, companies: [{ companyId: COMPANY, defaultCurrency: raw }] }).companies[0]!.defaultCurrency;
        } catch (error) {
          if (!(error instanceof StageConfigError)) throw error;
          return error.issues;
        }
      })();
      const added = await registry.add({ companyId: COMPANY, defaultCurrency: raw }, 0).then(
        ({ company }) => company.defaultCurrency,
        (error: { issues: unknown }) => error.issues,
      );
      expect({ raw, synthesized }).toEqual({
        raw,
        synthesized: Array.isArray(added) ? [{ path: 'stages.dev.companies[0].defaultCurrency', message: CURRENCY_CODE_EXPECTED }] : added,
      });
    }
    expect(load({ ...BASE, companies: [{ companyId: COMPANY, defaultCurrency: 'gbp' }] }).companies[0]!.defaultCurrency).toBe('GBP');
    expect(load({ ...BASE, companies: [{ companyId: COMPANY }] }).companies[0]).not.toHaveProperty('defaultCurrency');
  });

  it('names the stage key when the stage is missing or unknown', () => {
    expect(failure(() => loadStageConfig(() => undefined)).field).toBe('stage');
    const unknown = failure(() => loadStageConfig((key) => (key === 'stage' ? 'prod' : { sandbox: BASE })));
    expect(unknown.field).toBe('stage');
    expect(unknown.message).toContain('known: sandbox');
    expect(failure(() => loadStageConfig((key) => (key === 'stage' ? 'dev' : undefined))).field).toBe('stages');
  });

  it.each([
    ['user and password', 'https://user:s3cretPASS@accounting.example.com/api/v1', 'user info'],
    ['user alone', 'https://s3cretPASS@accounting.example.com/api/v1', 'user info'],
    ['password alone', 'https://:s3cretPASS@accounting.example.com/api/v1/', 'user info'],
    ['query', 'https://accounting.example.com/api/v1?token=s3cretPASS', 'a query or fragment'],
    ['fragment', 'https://accounting.example.com/api/v1#s3cretPASS', 'a query or fragment'],
    ['empty query', 'https://accounting.example.com/api/v1?', 'a query or fragment'],
  ])('refuses a base URL with a %s, naming the field and why, never the value', (_what, baseUrl, why) => {
    const error = failure(() => load({ baseUrl }));
    expect(error.issues).toEqual([{ path: 'stages.dev.baseUrl', message: expect.stringContaining(why) }]);
    expect(error.message).toContain(`stages.dev.baseUrl: must not carry ${why}`);
    // What bin/app.ts prints, and what a `cause` chain would show.
    const shown = [error.message, ...error.issues.map((i) => i.message), JSON.stringify(error.cause)].join('\n');
    expect(shown).not.toContain('s3cretPASS');
    expect(shown).not.toContain('accounting.example.com');
  });

  it('reports every bad field at once', () => {
    const error = failure(() => parseStageSettings({ baseUrl: 'nope', logLevel: 'loud' }, 'stages.dev'));
    expect(error.issues.map((i) => i.path).sort()).toEqual(['stages.dev.baseUrl', 'stages.dev.logLevel']);
  });

  it('admits exactly the retention periods CloudWatch Logs (and CDK) know', () => {
    const cdkValues = Object.values(RetentionDays).filter((v): v is number => typeof v === 'number' && v !== RetentionDays.INFINITE);
    expect([...LOG_RETENTION_DAYS].sort((a, b) => a - b)).toEqual(cdkValues.sort((a, b) => a - b));
  });
});
