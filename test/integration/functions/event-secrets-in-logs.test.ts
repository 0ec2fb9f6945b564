import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { startAwsRecorder, type AwsRecorder } from '../../helpers/aws-recorder';
import { canaryApiKey, expectNoCanaries, trackSecret } from '../../helpers/canary';
import { captureStdout, lambdaContexts, loadHandler } from '../../helpers/lambda';

/**
 * An operator who pastes a key into a hand-written `aws lambda invoke` payload, or a broken event
 * producer, must not leave it in CloudWatch: the handler takes its correlation id from the raw
 * event before validation and writes it on every line and into the metrics, and a strict schema
 * names unknown fields in the error, its log line and Lambda's own report of the failure. The real
 * handlers (Powertools' and, for export-period, the lean JSON logger and EMF writer), their stdout
 * and stderr captured, SQS on a local peer. The keys are never registered: nothing acctops holds.
 */

const SANDBOX_SHAPE = canaryApiKey('event-secrets-in-logs');
const OTHER_SHAPE = 'sk_live_Q7pXz9LmN2vB4kR8tY1wE6uI3oA5';
const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const NOW = new Date();
const A_PAST_MONTH = `${NOW.getUTCFullYear() - 1}-${String(NOW.getUTCMonth() + 1).padStart(2, '0')}`;

let recorder: AwsRecorder;
const saved = { ...process.env };

beforeAll(async () => {
  trackSecret(SANDBOX_SHAPE);
  trackSecret(OTHER_SHAPE);
  recorder = await startAwsRecorder();
  Object.assign(process.env, {
    ACCTOPS_STAGE: 'test',
    LOG_LEVEL: 'debug',
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
    AWS_MAX_ATTEMPTS: '1',
    AWS_ENDPOINT_URL_SQS: recorder.endpoint,
    // Nothing below is reached: the events that pass validation only enqueue.
    AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
    ACCTOPS_BASE_URL: 'https://127.0.0.1:9/api/v1',
    ACCTOPS_TOOL_VERSION: '0.1.0',
    EXPORT_QUEUE_URL: recorder.queueUrl('exports.fifo'),
    EXPORT_BUCKET_NAME: 'acctops-test-exports',
    EXPORT_EVENT_BUS_NAME: 'acctops-test-exports',
    EXPORT_RUNS_TABLE_NAME: 'acctops-test-runs',
    COMPANY_REGISTRY_TABLE_NAME: 'acctops-test-companies',
    TOKEN_TABLE_NAME: 'acctops-test-tokens',
    INSTITUTION_SECRET_ARN: `arn:aws:secretsmanager:${LOCAL_REGION}:000000000000:secret:acctops/test/institution-AbCdEf`,
  });
});
afterAll(async () => {
  process.env = saved;
  await recorder.stop();
});

interface Run {
  lines: string[];
  /** The JSON log lines (EMF documents included). */
  entries: Record<string, unknown>[];
  requestId: string;
  result?: unknown;
  error?: Error;
}

async function invoke(dir: string, event: unknown): Promise<Run> {
  const context = lambdaContexts({ prefix: dir })();
  const lines: string[] = [];
  const handler = loadHandler(dir);
  const spy = captureStdout(lines);
  const run: Run = { lines, entries: [], requestId: context.awsRequestId };
  try {
    run.result = await handler(event, context);
  } catch (error) {
    run.error = error as Error;
  } finally {
    spy.mockRestore();
  }
  for (const line of lines.join('').split('\n')) {
    if (line.trim().startsWith('{')) run.entries.push(JSON.parse(line) as Record<string, unknown>);
  }
  return run;
}

/** Nothing of either key past its loggable prefix, in the lines or in the thrown error. */
function expectNoKey(run: Run): void {
  const everything = [...run.lines, run.error?.message ?? '', JSON.stringify(run.error ?? {})].join('\n');
  for (const key of [SANDBOX_SHAPE, OTHER_SHAPE]) expect(everything).not.toContain(key.slice(key.indexOf('_') + 1 + 8));
  expectNoCanaries(everything, 'handler output');
}

/** Every line that carries a correlation id carries the request id instead of the key. */
function expectCorrelatedByRequestId(run: Run): void {
  const correlated = run.entries.filter((e) => 'correlationId' in e || 'correlation_id' in e);
  expect(correlated.length).toBeGreaterThan(0);
  for (const entry of correlated) {
    expect(entry.correlationId ?? entry.correlation_id).toBe(run.requestId);
  }
}

describe.each([
  ['the sandbox shape', SANDBOX_SHAPE],
  ['another service shape (sk_live_)', OTHER_SHAPE],
])('a key of %s in an event', (_label, key) => {
  it('as the correlation id of an event that is then refused (onboard-user): no line holds it', async () => {
    const run = await invoke('onboard-user', { correlationId: key, externalId: COMPANY, username: 'ada', email: 'ada@example.com' });
    expect(run.error?.name).toBe('ValidationError');
    // The refusal names the field it refuses, an ordinary name, as before.
    expect(run.error?.message).toContain('unknown field(s) correlationId');
    expectCorrelatedByRequestId(run);
    expectNoKey(run);
  });

  it('as the correlation id of an event that is carried out (request-export): no line holds it, the job is queued', async () => {
    const before = recorder.messages.length;
    const run = await invoke('request-export', {
      id: 'evt-1a2b3c',
      correlationId: key,
      'detail-type': 'ExportRequested',
      detail: { companyId: COMPANY, period: A_PAST_MONTH },
    });
    expect(run.error).toBeUndefined();
    expect(recorder.messages.length).toBe(before + 1);
    expectCorrelatedByRequestId(run);
    expectNoKey(run);
  });

  it('as the correlation id of an event the lean handler (export-period) refuses: no line holds it', async () => {
    const run = await invoke('export-period', { Records: [], correlationId: key });
    expect(run.error?.name).toBe('ValidationError');
    expectCorrelatedByRequestId(run);
    expectNoKey(run);
  });

  it('as the name of an unknown field (request-export, onboard-user): cut to its prefix in the refusal', async () => {
    const prefix = key.slice(0, key.indexOf('_') + 1 + 8);
    const runs = [
      await invoke('request-export', {
        id: key,
        'detail-type': 'ExportRequested',
        detail: { companyId: COMPANY, period: A_PAST_MONTH, [key]: 1 },
      }),
      await invoke('onboard-user', { externalId: COMPANY, username: 'ada', email: 'ada@example.com', [key]: 1 }),
    ];
    for (const run of runs) {
      expect(run.error?.name).toBe('ValidationError');
      expect(run.error?.message).toContain(`unknown field(s) ${prefix}…[REDACTED]`);
      expectCorrelatedByRequestId(run);
      expectNoKey(run);
    }
  });
});
