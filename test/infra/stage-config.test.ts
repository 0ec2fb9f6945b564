import { Stack } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import cdkJson from '../../cdk.json';
import { LOG_RETENTION_DAYS, loadStageConfig, parseStageSettings, StageConfigError } from '../../lib/config/stage';
import { CURRENCY_CODE_EXPECTED } from '../../contract/currency';
import { MemoryRegistryTable } from '../../src/adapters/local/file-company-registry';
import { CompanyRegistry } from '../../src/core/companies/company-registry';
import { parseTaxReportFields } from '../../src/core/exports/formats/tax-report-fields';
import { testApp } from '../helpers/cdk';

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
      accessTokenLifetimeSeconds: 1800,
      alarmEmails: [],
      schedules: { tokenRefresh: 'rate(5 minutes)', monthlyExport: 'cron(0 3 1 * ? *)', timeZone: 'Europe/Berlin' },
      companies: [],
      apiKeys: { rotationDays: 30, revocationGraceMinutes: 30 },
      exports: { maxTransactionsPerPart: 500_000, taxReportFields: {}, webhookReservedConcurrency: 10 },
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
    ['access token lifetime', { ...BASE, accessTokenLifetimeSeconds: 30 }, 'stages.dev.accessTokenLifetimeSeconds'],
    ['page size 0', { ...BASE, exports: { pageSize: 0 } }, 'stages.dev.exports.pageSize'],
    ['page size above the maximum', { ...BASE, exports: { pageSize: 1001 } }, 'stages.dev.exports.pageSize'],
    ['date_to reading', { ...BASE, exports: { dateTo: 'sometimes' } }, 'stages.dev.exports.dateTo'],
    ['webhook reservation 0', { ...BASE, exports: { webhookReservedConcurrency: 0 } }, 'stages.dev.exports.webhookReservedConcurrency'],
    ['webhook reservation -1', { ...BASE, exports: { webhookReservedConcurrency: -1 } }, 'stages.dev.exports.webhookReservedConcurrency'],
    ['webhook reservation 2.5', { ...BASE, exports: { webhookReservedConcurrency: 2.5 } }, 'stages.dev.exports.webhookReservedConcurrency'],
    [
      'webhook reservation "10"',
      { ...BASE, exports: { webhookReservedConcurrency: '10' } },
      'stages.dev.exports.webhookReservedConcurrency',
    ],
    [
      'tax report field',
      { ...BASE, exports: { taxReportFields: { periodFinish: 'endDate' } } },
      'stages.dev.exports.taxReportFields.periodFinish',
    ],
    ['tax report name', { ...BASE, exports: { taxReportFields: { periodEnd: '' } } }, 'stages.dev.exports.taxReportFields.periodEnd'],
    ['tax report pk', { ...BASE, exports: { taxReportFields: { periodEnd: 'pk' } } }, 'stages.dev.exports.taxReportFields.periodEnd'],
    [
      'tax report path',
      { ...BASE, exports: { taxReportFields: { periodEnd: 'period..to' } } },
      'stages.dev.exports.taxReportFields.periodEnd',
    ],
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

  it("takes the webhook's reserved concurrency as a positive integer or null (none), and says why 0 is not none", () => {
    expect(load({ ...BASE, exports: { webhookReservedConcurrency: 1 } }).exports.webhookReservedConcurrency).toBe(1);
    expect(load({ ...BASE, exports: { webhookReservedConcurrency: 250 } }).exports.webhookReservedConcurrency).toBe(250);
    expect(load({ ...BASE, exports: { webhookReservedConcurrency: null } }).exports.webhookReservedConcurrency).toBeNull();
    const zero = failure(() => load({ ...BASE, exports: { webhookReservedConcurrency: 0 } }));
    expect(zero.issues).toEqual([
      {
        path: 'stages.dev.exports.webhookReservedConcurrency',
        message: expect.stringMatching(/at least 1, or null for no reservation .*0 would make Lambda refuse every request/),
      },
    ]);
  });

  it('takes a dotted path into a nested object as a tax-report field name (exports.taxReportFields)', () => {
    const stage = load({ ...BASE, exports: { taxReportFields: { periodStart: 'period.from', periodEnd: 'period.to' } } });
    expect(stage.exports.taxReportFields).toEqual({ periodStart: 'period.from', periodEnd: 'period.to' });
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
      { periodStart: 'period.from', periodEnd: 'period.to' },
      { periodEnd: 'period.' },
      { periodEnd: 'period.constructor' },
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

describe('stage configuration: secret ARNs, cron expressions, required fields, the ops topic', () => {
  const ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acme/api-key-AbCdEf';
  const imported = (...arns: string[]) => ({
    ...BASE,
    companies: arns.map((existingSecretArn, i) => ({ companyId: COMPANY.replace(/^0/, String(i)), existingSecretArn })),
  });

  it.each([
    ['a partial ARN (no -XXXXXX suffix)', 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acme/api-key', 'a partial ARN'],
    ['an ARN without :secret:', 'arn:aws:secretsmanager:eu-central-1:123456789012:acme-AbCdEf', 'secret:<name>-<6 characters>'],
    ['another resource type', 'arn:aws:secretsmanager:eu-central-1:123456789012:key:acme-AbCdEf', 'secret:<name>-<6 characters>'],
    ['another service', 'arn:aws:ssm:eu-central-1:123456789012:parameter/acme', 'not ssm'],
    ['a bad region', 'arn:aws:secretsmanager:europe:123456789012:secret:acme-AbCdEf', 'region'],
    ['a bad account', 'arn:aws:secretsmanager:eu-central-1:1234:secret:acme-AbCdEf', 'account'],
    ['a name with a space', 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:ac me-AbCdEf', 'secret name'],
    ['a name alone', 'acme/api-key', 'complete secret ARN'],
  ])('refuses %s as existingSecretArn, naming the field and what is wrong', (_what, arn, why) => {
    const error = failure(() => load(imported(arn)));
    expect(error.issues).toEqual([{ path: 'stages.dev.companies[0].existingSecretArn', message: expect.stringContaining(why) }]);
  });

  it("accepts exactly what CDK's fromSecretCompleteArn accepts, so a stage that loads never crashes the synth", () => {
    for (const arn of [
      ARN,
      'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:a-B1c2D3',
      'arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:x_y+z=.@/w-zzzzzz',
      'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acme/api-key',
      'arn:aws:secretsmanager:eu-central-1:123456789012:acme-AbCdEf',
    ]) {
      const loaded = (() => {
        try {
          return load(imported(arn)).companies[0]!.existingSecretArn;
        } catch (error) {
          if (!(error instanceof StageConfigError)) throw error;
          return undefined;
        }
      })();
      if (loaded === undefined) continue;
      expect(() => Secret.fromSecretCompleteArn(new Stack(testApp(), 'Stack'), 'S', loaded)).not.toThrow();
    }
  });

  it('refuses an imported secret outside the pinned account or region: rotation cannot reach it', () => {
    const pinned = { account: '123456789012', region: 'eu-central-1' };
    expect(load({ ...imported(ARN), ...pinned }).companies[0]!.existingSecretArn).toBe(ARN);
    for (const other of [ARN.replace('123456789012', '210987654321'), ARN.replace('eu-central-1', 'eu-west-1')]) {
      const error = failure(() => load({ ...imported(ARN, other), ...pinned }));
      expect(error.issues).toEqual([
        { path: 'stages.dev.companies[1].existingSecretArn', message: expect.stringContaining("the stack's own account and region") },
      ]);
    }
  });

  it('without a pinned environment, refuses imported secrets of different accounts or regions (one stack has one)', () => {
    expect(load(imported(ARN, ARN.replace('acme', 'beta'))).companies).toHaveLength(2);
    const error = failure(() => load(imported(ARN, ARN.replace('eu-central-1', 'us-east-1'))));
    expect(error.issues).toEqual([
      { path: 'stages.dev.companies[1].existingSecretArn', message: expect.stringContaining('companies[0].existingSecretArn') },
    ]);
  });

  it.each([
    ['cron(a b c d e f)', 'minutes "a"'],
    ['cron(0 3 1 * 1 *)', 'exactly one of them must be ?'],
    ['cron(0 3 1 * * *)', 'exactly one of them must be ?'],
    ['cron(0 3 ? * ? *)', 'exactly one of them must be ?'],
    ['cron(60 3 1 * ? *)', 'minutes "60": 60 is outside 0-59'],
    ['cron(0 24 1 * ? *)', 'hours "24"'],
    ['cron(0 ? 1 * ? *)', 'hours "?": ? is allowed only in day-of-month and day-of-week'],
    ['cron(0 3 32 * ? *)', 'day-of-month "32"'],
    ['cron(0 3 0 * ? *)', 'day-of-month "0"'],
    ['cron(0 3 1 13 ? *)', 'month "13"'],
    ['cron(0 3 1 JANUARY ? *)', 'month "JANUARY"'],
    ['cron(0 3 ? * 8 *)', 'day-of-week "8"'],
    ['cron(0 3 ? * MON#6 *)', 'day-of-week "MON#6"'],
    ['cron(0 3 ? * 2#1,3 *)', 'day-of-week "2#1,3"'],
    ['cron(0 3 ? * 1/2 *)', 'day-of-week "1/2": / (increments) is not allowed'],
    ['cron(0 3 1 * ? 1969)', 'year "1969"'],
    ['cron(0/0 3 1 * ? *)', 'minutes "0/0"'],
    ['cron(0 3 1-40 * ? *)', 'day-of-month "1-40"'],
    ['cron(0 3 1,,2 * ? *)', 'day-of-month "1,,2"'],
    ['cron(0 3 1 * ?)', 'expected 6 fields'],
    ['cron(0 3 1 * ? * *)', 'expected 6 fields'],
  ])('refuses %s, naming the cron field and what is wrong', (expression, why) => {
    for (const field of ['monthlyExport', 'tokenRefresh']) {
      const error = failure(() => load({ ...BASE, schedules: { [field]: expression } }));
      expect(error.issues).toEqual([{ path: `stages.dev.schedules.${field}`, message: expect.stringContaining(why) }]);
    }
  });

  it("accepts AWS's own examples and every cron expression the repository uses", () => {
    const used = [
      ...Object.values(cdkJson.context.stages).flatMap((s) => Object.values(s.schedules)),
      'cron(0 3 1 * ? *)',
      'cron(0/10 * * * ? *)',
      'cron(30 0 1 * ? *)',
    ].filter((e) => e.startsWith('cron('));
    const aws = [
      'cron(0 10 * * ? *)',
      'cron(15 12 * * ? *)',
      'cron(0 18 ? * MON-FRI *)',
      'cron(0 8 1 * ? *)',
      'cron(0/15 * * * ? *)',
      'cron(0/10 * ? * MON-FRI *)',
      'cron(0/5 8-17 ? * MON-FRI *)',
      'cron(0 9 ? * 2#1 *)',
      'cron(15 10 ? * 6L 2019-2022)',
      'cron(0 12 L * ? *)',
      'cron(0 12 3W * ? *)',
      'cron(*/30 * * JAN,FEB,MAR ? 2030)',
    ];
    for (const expression of [...used, ...aws]) {
      expect({ expression, monthly: load({ ...BASE, schedules: { monthlyExport: expression } }).schedules.monthlyExport }).toEqual({
        expression,
        monthly: expression,
      });
    }
  });

  it('says "required" of a missing required field, and what is wrong of a wrong one', () => {
    expect(failure(() => load({})).issues).toEqual([{ path: 'stages.dev.baseUrl', message: 'required' }]);
    expect(failure(() => load({ ...BASE, companies: [{}] })).issues).toEqual([
      { path: 'stages.dev.companies[0].companyId', message: 'required' },
    ]);
    expect(failure(() => load({ baseUrl: 'ftp://accounting.example.com/api/v1' })).issues).toEqual([
      { path: 'stages.dev.baseUrl', message: 'expected an https URL' },
    ]);
    expect(failure(() => load({ baseUrl: 42 })).issues).toEqual([{ path: 'stages.dev.baseUrl', message: 'expected an https URL' }]);
  });

  it('takes an ops topic ARN, refusing one that is not an SNS topic or not in the pinned region', () => {
    const topic = 'arn:aws:sns:eu-central-1:210987654321:org-ops';
    expect(load({ ...BASE, opsTopicArn: topic }).opsTopicArn).toBe(topic);
    expect(load({ ...BASE, opsTopicArn: topic, account: '123456789012', region: 'eu-central-1' }).opsTopicArn).toBe(topic);
    for (const bad of ['org-ops', 'arn:aws:sqs:eu-central-1:210987654321:org-ops', 'arn:aws:sns:eu-central-1:210987654321:org ops']) {
      expect(failure(() => load({ ...BASE, opsTopicArn: bad })).issues).toEqual([
        { path: 'stages.dev.opsTopicArn', message: expect.stringContaining('expected an SNS topic ARN') },
      ]);
    }
    expect(failure(() => load({ ...BASE, opsTopicArn: topic, account: '123456789012', region: 'eu-west-1' })).issues).toEqual([
      { path: 'stages.dev.opsTopicArn', message: expect.stringContaining('its own region only') },
    ]);
  });

  it("takes an imported secret's own KMS key (existingSecretKmsKeyArn), held to kmsKeyArn's rules and to the secret's region", () => {
    const key = 'arn:aws:kms:eu-central-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    const withKey = (company: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      load({ ...BASE, ...extra, companies: [{ companyId: COMPANY, ...company }] });
    expect(withKey({ existingSecretArn: ARN, existingSecretKmsKeyArn: key }).companies[0]).toMatchObject({
      existingSecretArn: ARN,
      existingSecretKmsKeyArn: key,
    });
    expect(withKey({ existingSecretArn: ARN }).companies[0]).not.toHaveProperty('existingSecretKmsKeyArn');
    const field = 'stages.dev.companies[0].existingSecretKmsKeyArn';
    expect(
      failure(() => withKey({ existingSecretArn: ARN, existingSecretKmsKeyArn: 'arn:aws:kms:eu-central-1:210987654321:alias/legacy' }))
        .issues,
    ).toEqual([{ path: field, message: expect.stringContaining('an alias ARN') }]);
    expect(failure(() => withKey({ existingSecretArn: ARN, existingSecretKmsKeyArn: 'legacy-key' })).issues).toEqual([
      { path: field, message: expect.stringContaining('expected a KMS key ARN') },
    ]);
    expect(failure(() => withKey({ existingSecretKmsKeyArn: key })).issues).toEqual([
      { path: field, message: expect.stringContaining('without existingSecretArn') },
    ]);
    expect(
      failure(() => withKey({ existingSecretArn: ARN, existingSecretKmsKeyArn: key.replace('eu-central-1', 'eu-west-1') })).issues,
    ).toEqual([
      {
        path: field,
        message: expect.stringContaining('is in aws region eu-west-1; the secret (existingSecretArn) is in aws region eu-central-1'),
      },
    ]);
    // Pinned: the secret is held to the stage's region, and the key to the secret's.
    const pinned = { account: '123456789012', region: 'eu-central-1' };
    expect(withKey({ existingSecretArn: ARN, existingSecretKmsKeyArn: key }, pinned).companies[0]!.existingSecretKmsKeyArn).toBe(key);
  });

  it('takes a KMS key ARN as kmsKeyArn, refusing an alias or another region by its name (test/infra/supplied-kms-key.test.ts has the rest)', () => {
    const key = 'arn:aws:kms:eu-central-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    expect(load({ ...BASE, kmsKeyArn: key }).kmsKeyArn).toBe(key);
    expect(load(BASE)).not.toHaveProperty('kmsKeyArn');
    expect(failure(() => load({ ...BASE, kmsKeyArn: 'alias/acctops' })).issues).toEqual([
      { path: 'stages.dev.kmsKeyArn', message: expect.stringContaining('expected a KMS key ARN') },
    ]);
    expect(failure(() => load({ ...BASE, kmsKeyArn: key, account: '123456789012', region: 'eu-west-1' })).issues).toEqual([
      { path: 'stages.dev.kmsKeyArn', message: expect.stringContaining('is in region eu-central-1') },
    ]);
  });
});
