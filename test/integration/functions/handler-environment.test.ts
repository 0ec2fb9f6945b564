import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { synthAcctopsStack } from '../../helpers/cdk';
import { loadHandler } from '../../helpers/lambda';

/**
 * Least privilege, seen from the handlers: every function loads (its cold start succeeds) with
 * exactly the environment its construct gives it, and without any one variable it fails at load
 * with a ConfigError naming that variable, or loads because the variable has a default. Which
 * variables a function cannot start without is spelled out below, so that a handler that starts to
 * require more (or less) than before shows here.
 */

const REQUIRED_AT_LOAD: Record<string, string[]> = {
  'check-health': ['INSTITUTION_SECRET_ARN', 'ACCTOPS_BASE_URL'],
  'plan-token-refresh': ['TOKEN_TABLE_NAME', 'REFRESH_QUEUE_URL'],
  'refresh-tokens': ['TOKEN_TABLE_NAME', 'INSTITUTION_SECRET_ARN', 'ACCTOPS_BASE_URL', 'TOKEN_EVENT_BUS_NAME'],
  'onboard-user': ['TOKEN_TABLE_NAME', 'INSTITUTION_SECRET_ARN', 'ACCTOPS_BASE_URL'],
  'revoke-user': ['TOKEN_TABLE_NAME', 'INSTITUTION_SECRET_ARN', 'ACCTOPS_BASE_URL'],
  'recover-user': ['TOKEN_TABLE_NAME', 'INSTITUTION_SECRET_ARN', 'ACCTOPS_BASE_URL'],
  'revoke-api-key': ['ACCTOPS_BASE_URL'],
  'rotate-api-key': ['ACCTOPS_BASE_URL', 'REVOCATION_SCHEDULE_GROUP', 'REVOKE_FUNCTION_ARN', 'REVOCATION_SCHEDULER_ROLE_ARN'],
  'check-key-rotations': ['ACCTOPS_BASE_URL', 'REVOCATION_SCHEDULE_GROUP'],
  'plan-monthly-export': [
    'EXPORT_QUEUE_URL',
    'EXPORT_EVENT_BUS_NAME',
    'EXPORT_RUNS_TABLE_NAME',
    'TOKEN_TABLE_NAME',
    'COMPANY_REGISTRY_TABLE_NAME',
  ],
  'export-period': [
    'ACCTOPS_BASE_URL',
    'ACCTOPS_TOOL_VERSION',
    'EXPORT_BUCKET_NAME',
    'EXPORT_QUEUE_URL',
    'EXPORT_EVENT_BUS_NAME',
    'EXPORT_RUNS_TABLE_NAME',
    'TOKEN_TABLE_NAME',
    'COMPANY_REGISTRY_TABLE_NAME',
  ],
  'check-monthly-export': ['EXPORT_BUCKET_NAME', 'EXPORT_EVENT_BUS_NAME', 'EXPORT_RUNS_TABLE_NAME'],
  'request-export': ['EXPORT_QUEUE_URL'],
  'receive-export-webhook': ['EXPORT_QUEUE_URL', 'WEBHOOK_SECRET_ARN', 'WEBHOOK_REPLAY_TABLE_NAME', 'COMPANY_REGISTRY_TABLE_NAME'],
};

/** What the deployed value of a reference (a table name, a queue URL, an ARN) looks like. */
function deployedValue(name: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (name.endsWith('_ARN')) return `arn:aws:lambda:${LOCAL_REGION}:123456789012:function:acctops-test-${name.toLowerCase()}`;
  if (name.endsWith('_URL')) return `https://sqs.${LOCAL_REGION}.amazonaws.com/123456789012/acctops-test-${name.toLowerCase()}`;
  return `acctops-test-${name.toLowerCase().replace(/_/g, '-')}`;
}

/** Each function's environment as the template gives it, references replaced by deployed-looking values. */
function functionEnvironments(): Map<string, Record<string, string>> {
  const { template } = synthAcctopsStack();
  const out = new Map<string, Record<string, string>>();
  for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
    const variables = (fn.Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
    const dir = variables.ACCTOPS_FUNCTION;
    if (typeof dir !== 'string') continue;
    out.set(dir, Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, deployedValue(name, value)])));
  }
  return out;
}

/** Loads the handler with exactly `variables` (and the SDK's region and credentials): the error it throws, if any. */
function loadError(dir: string, variables: Record<string, string>): unknown {
  const saved = process.env;
  process.env = {
    PATH: saved.PATH,
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
    ...variables,
  };
  try {
    loadHandler(dir);
    return undefined;
  } catch (error) {
    return error;
  } finally {
    process.env = saved;
  }
}

const environments = functionEnvironments();

it('covers every function of the stack', () => {
  expect([...environments.keys()].sort()).toEqual(Object.keys(REQUIRED_AT_LOAD).sort());
});

describe.each([...environments])('%s', (dir, variables) => {
  it('loads with exactly the environment its construct gives it', () => {
    expect(loadError(dir, variables)).toBeUndefined();
  });

  it('fails at load naming each variable it cannot start without, and starts without any other', () => {
    const required: string[] = [];
    for (const name of Object.keys(variables).filter((n) => n !== 'ACCTOPS_FUNCTION' && n !== 'ACCTOPS_STAGE')) {
      const { [name]: _removed, ...rest } = variables;
      const error = loadError(dir, rest);
      if (error === undefined) continue;
      expect(error).toMatchObject({ name: 'ConfigError', field: name });
      required.push(name);
    }
    expect(required.sort()).toEqual([...REQUIRED_AT_LOAD[dir]!].sort());
  });
});

const PASSWORD = 's3cretPASS';

/**
 * Values no function may start with, beyond blank: what a hand edit in the console or a template
 * edited outside the stage's schema could leave. Chosen by what the variable holds, as its deployed
 * value shows (a number, the service's URL, an ARN read as one).
 */
function malformed(name: string, deployed: string): string[] {
  if (/^\d+$/.test(deployed)) return [' ', '0x10', '1e3', `${deployed}.5`];
  if (name === 'ACCTOPS_BASE_URL')
    return [
      `https://ops:${PASSWORD}@accounting.example.com/api/v1`,
      `https://accounting.example.com/api/v1?key=${PASSWORD}`,
      'https://accounting.example.com',
    ];
  if (name === 'EXPORT_TIME_ZONE') return ['Mars/Base'];
  // A secret's name works as a SecretId, and WEBHOOK_SECRET_ARN takes one; these are read as ARNs.
  if (/_ARN$/.test(name) && name !== 'WEBHOOK_SECRET_ARN') return ['acctops/prod/institution'];
  return [];
}

/**
 * Read by Node and Powertools, not by acctops's schemas; ACCTOPS_FUNCTION is loadHandler's to set.
 * Every other variable a function is given it reads: each case below fails if one is not.
 */
const NOT_OURS = new Set(['NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'ACCTOPS_FUNCTION']);

describe.each([...environments])('%s, given a variable blank or malformed', (dir, variables) => {
  const read = Object.entries(variables).filter(([name]) => !NOT_OURS.has(name));
  const cases = read.flatMap(([name, deployed]) => ['', ...malformed(name, deployed)].map((value) => [name, value] as const));

  it.each(cases)('fails at load naming %s when it is %j', (name, value) => {
    const error = loadError(dir, { ...variables, [name]: value });
    expect(error).toMatchObject({ name: 'ConfigError', field: name });
    expect(String((error as Error).message)).not.toContain(PASSWORD);
  });
});

it('the base URL, the time zone and an ARN are refused at load in words that say why', () => {
  const worker = environments.get('export-period')!;
  const checker = environments.get('check-monthly-export')!;
  const health = environments.get('check-health')!;
  const issue = (dir: string, variables: Record<string, string>) => (loadError(dir, variables) as { issues: unknown[] }).issues;
  expect(issue('export-period', { ...worker, ACCTOPS_BASE_URL: `https://ops:${PASSWORD}@accounting.example.com/api/v1` })).toEqual([
    { path: 'ACCTOPS_BASE_URL', message: expect.stringMatching(/^must not carry user info/) },
  ]);
  expect(issue('export-period', { ...worker, ACCTOPS_BASE_URL: 'https://accounting.example.com' })).toEqual([
    { path: 'ACCTOPS_BASE_URL', message: 'must end with /api/v1' },
  ]);
  expect(issue('check-monthly-export', { ...checker, EXPORT_TIME_ZONE: 'Mars/Base' })).toEqual([
    { path: 'EXPORT_TIME_ZONE', message: 'expected an IANA time zone, e.g. Europe/Berlin' },
  ]);
  expect(issue('check-health', { ...health, INSTITUTION_SECRET_ARN: 'acctops/prod/institution' })).toEqual([
    { path: 'INSTITUTION_SECRET_ARN', message: 'expected an ARN' },
  ]);
});

it('export-period starts with the tax-report field names of a stage that synthesizes; a value its check refuses names the variable', () => {
  const { template } = synthAcctopsStack({ exports: { taxReportFields: { periodEnd: 'endDate', createdAt: 'created' } } });
  const worker = Object.values(template.findResources('AWS::Lambda::Function')).find(
    (fn) => (fn.Properties.Environment?.Variables as Record<string, unknown> | undefined)?.ACCTOPS_FUNCTION === 'export-period',
  )!;
  const variables = Object.fromEntries(
    Object.entries(worker.Properties.Environment.Variables as Record<string, unknown>).map(([name, value]) => [
      name,
      deployedValue(name, value),
    ]),
  );
  expect(JSON.parse(variables.EXPORT_TAX_REPORT_FIELDS!)).toEqual({ periodEnd: 'endDate', createdAt: 'created' });
  expect(loadError('export-period', variables)).toBeUndefined();
  // The stage schema refuses this at synth (stage-config.test.ts); set by hand, the worker refuses it at start.
  expect(loadError('export-period', { ...variables, EXPORT_TAX_REPORT_FIELDS: '{"type":"status"}' })).toMatchObject({
    name: 'ConfigError',
    field: 'EXPORT_TAX_REPORT_FIELDS.type',
  });
});
