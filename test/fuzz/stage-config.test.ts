import fc from 'fast-check';
import { StageConfigError, loadStageConfig, parseStageSettings } from '../../lib/config/stage';
import { FUZZ_RUNS, FUZZ_SEED, unknownKey, wrongType } from './support';

/**
 * cdk.json's stage settings, fuzzed: whatever an operator types, synth either gets validated
 * settings or a StageConfigError whose issues name the field by its full path in the context
 * (`stages.fuzz.schedules.timeZone`); never a TypeError from deeper in the CDK code.
 */

const PREFIX = 'stages.fuzz';
const VALID = {
  baseUrl: 'https://accounting.example.com/api/v1',
  account: '123456789012',
  region: 'eu-central-1',
  retainData: false,
  logLevel: 'warn',
  logRetentionDays: 90,
  secretCacheTtlSeconds: 120,
  alarmEmails: ['ops@example.com'],
  schedules: { tokenRefresh: 'rate(5 minutes)', monthlyExport: 'cron(0 3 1 * ? *)', timeZone: 'Europe/Berlin' },
  companies: [{ companyId: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b' }],
  apiKeys: { rotationDays: 30, revocationGraceMinutes: 30, paths: { list: '/api-keys/', revoke: '/api-keys/{publicId}/' } },
};

const KNOWN_FIELDS = [
  ...Object.keys(VALID),
  'opsTopicArn',
  'kmsKeyArn',
  ...Object.keys(VALID.schedules),
  ...Object.keys(VALID.apiKeys),
  'list',
  'create',
  'revoke',
];

/** Paths to a leaf or section of VALID, and values each can never take. */
const BROKEN: Record<string, fc.Arbitrary<unknown>> = {
  baseUrl: fc.oneof(
    wrongType('string'),
    fc.constantFrom(
      'http://accounting.example.com/api/v1',
      'https://accounting.example.com/v2',
      'not a url',
      '',
      'https://user:pass@accounting.example.com/api/v1',
      'https://accounting.example.com/api/v1?page=1',
      'https://accounting.example.com/api/v1#top',
    ),
  ),
  retainData: wrongType('boolean'),
  logLevel: fc.oneof(wrongType('string'), fc.constantFrom('trace', 'INFO', '')),
  logRetentionDays: fc.oneof(
    wrongType('number'),
    fc
      .integer()
      .filter(
        (n) => ![1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653].includes(n),
      ),
  ),
  secretCacheTtlSeconds: fc.oneof(
    wrongType('number'),
    fc.integer({ min: 3601 }),
    fc.integer({ max: -1 }),
    fc.double({ min: 0.1, max: 0.9 }),
  ),
  alarmEmails: fc.oneof(
    wrongType('array'),
    fc.array(
      fc.string({ maxLength: 20 }).filter((s) => !s.includes('@')),
      { minLength: 1, maxLength: 3 },
    ),
  ),
  'schedules.tokenRefresh': fc.oneof(
    wrongType('string'),
    fc.constantFrom('rate(1 minutes)', 'rate(0 hours)', 'every 5 minutes', 'cron(* * *)'),
  ),
  'schedules.monthlyExport': fc.oneof(
    wrongType('string'),
    fc.constantFrom('rate(1 day)', 'cron(0 3 1 * ?)', 'cron(a b c d e f)', 'cron(0 3 1 * 1 *)', 'cron(0 3 32 * ? *)'),
  ),
  opsTopicArn: fc.oneof(wrongType('string'), fc.constantFrom('org-ops', 'arn:aws:sns:eu-west-1:123456789012:ops')),
  kmsKeyArn: fc.oneof(
    wrongType('string'),
    fc.constantFrom(
      'alias/acctops',
      'arn:aws:kms:eu-central-1:123456789012:alias/acctops',
      // VALID pins eu-central-1.
      'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
    ),
  ),
  'schedules.timeZone': fc.oneof(wrongType('string'), fc.constantFrom('Mars/Olympus', 'Europe/Berlinn', '')),
  companies: fc.oneof(
    wrongType('array'),
    fc.array(fc.oneof(wrongType('object'), fc.record({ companyId: fc.string({ maxLength: 20 }) })), { minLength: 1, maxLength: 3 }),
    fc.constant([{ companyId: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b' }, { companyId: '6F1C2A3B-4D5E-4F60-8A7B-9C0D1E2F3A4B' }]),
  ),
  'apiKeys.rotationDays': fc.oneof(wrongType('number'), fc.integer({ min: 366 }), fc.integer({ max: 0 })),
  'apiKeys.paths.revoke': fc.oneof(wrongType('string'), fc.constantFrom('/api-keys/', 'api-keys/{publicId}', '/api-keys/{publicId}')),
  account: fc.oneof(
    wrongType('string'),
    fc.string({ maxLength: 12 }).filter((s) => !/^\d{12}$/.test(s)),
  ),
  region: fc.oneof(wrongType('string'), fc.constantFrom('eu-central', 'EU-CENTRAL-1', 'eu_central_1')),
};

function withChange(path: string, change: { set: unknown } | 'remove'): Record<string, unknown> {
  const copy = structuredClone(VALID) as Record<string, unknown>;
  const parts = path.split('.');
  let node = copy;
  for (const part of parts.slice(0, -1)) node = node[part] as Record<string, unknown>;
  const last = parts[parts.length - 1]!;
  if (change === 'remove') delete node[last];
  else node[last] = change.set;
  return copy;
}

function stageError(run: () => unknown): StageConfigError | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (!(error instanceof StageConfigError)) throw new Error(`expected a StageConfigError, got ${String(error)}`);
    return error;
  }
}

describe('stage settings (fast-check, fixed seed)', () => {
  it('the reference settings are valid', () => {
    expect(parseStageSettings(VALID, PREFIX)).toMatchObject({ baseUrl: VALID.baseUrl, secretCacheTtlSeconds: 120 });
  });

  it('a broken field is a StageConfigError naming it by its full path', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(BROKEN)).chain((path) => fc.tuple(fc.constant(path), BROKEN[path]!)),
        ([path, value]) => {
          const error = stageError(() => parseStageSettings(withChange(path, { set: value }), PREFIX));
          expect(error).toBeDefined();
          // account and region must come together: breaking one may be reported on the account.
          const names = path === 'region' ? [`${PREFIX}.region`, `${PREFIX}.account`] : [`${PREFIX}.${path}`];
          expect(
            error!.issues.some((i) => names.some((n) => i.path === n || i.path.startsWith(`${n}.`) || i.path.startsWith(`${n}[`))),
          ).toBe(true);
        },
      ),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 3 },
    );
  });

  it('an unknown field anywhere is named, and removing an optional field is fine', () => {
    fc.assert(
      fc.property(fc.constantFrom('', 'schedules', 'apiKeys', 'apiKeys.paths'), unknownKey(KNOWN_FIELDS), (section, key) => {
        const path = section === '' ? key : `${section}.${key}`;
        const error = stageError(() => parseStageSettings(withChange(path, { set: 1 }), PREFIX));
        expect(error?.issues).toEqual(expect.arrayContaining([{ path: `${PREFIX}.${path}`, message: 'unknown field' }]));
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS },
    );
    for (const optional of [
      'retainData',
      'logLevel',
      'logRetentionDays',
      'secretCacheTtlSeconds',
      'alarmEmails',
      'schedules',
      'companies',
      'apiKeys',
    ]) {
      expect(stageError(() => parseStageSettings(withChange(optional, 'remove'), PREFIX))).toBeUndefined();
    }
  });

  it('any JSON at all, as the whole context, is either a stage or a StageConfigError (never another error)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 2 }), (stages, stage) => {
        const error = stageError(() => loadStageConfig((key) => (key === 'stages' ? stages : stage)));
        if (error) expect(error.issues.length).toBeGreaterThan(0);
        for (const issue of error?.issues ?? []) expect(issue.path).toMatch(/^(stage|stages)(\.|$|\[)/);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 3 },
    );
  });
});
