import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { decodeJob } from '../../src/core/exports/pipeline/export-jobs';
import { decodeRefreshRequest } from '../../src/core/tokens/refresh-queue';
import { LOCAL_REGION, localCredentials } from '../helpers/aws-credentials';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { startRecordingServer, type RecordingServer } from '../helpers/recording-server';
import { captureStdout, lambdaContexts, loadHandler, type LambdaHandler } from '../helpers/lambda';
import { FUZZ_RUNS, FUZZ_SEED, notA, unknownKey, wrongType } from './support';

/**
 * Every Lambda handler, loaded as Lambda loads it (environment read at init), gets fuzzed events.
 * Every AWS endpoint and the service's base URL point at one recording server, so "no partial
 * write" is checked in its strongest form: a refused event makes no request at all.
 *
 * For each handler: events that are not objects, and a valid event with one field broken (a wrong
 * type, a malformed value, an oversized string, the field removed, or an unknown field next to it).
 * What must hold: the invocation rejects with a ValidationError whose issues name that field, and
 * nothing is sent anywhere. SQS handlers also get valid envelopes of malformed message bodies: each
 * message is reported as a batch item failure, and nothing is sent.
 */

const UUID = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const ARN = (service: string, resource: string) => `arn:aws:${service}:${LOCAL_REGION}:000000000000:${resource}`;

let peer: RecordingServer;
const saved = { ...process.env };
const stdout: string[] = [];
let write: jest.SpyInstance;
const handlers = new Map<string, LambdaHandler>();

const context = lambdaContexts({ prefix: 'fuzz' });

beforeAll(async () => {
  peer = await startRecordingServer();
  const origin = peer.origin;
  Object.assign(process.env, {
    ACCTOPS_STAGE: 'fuzz',
    LOG_LEVEL: 'debug',
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
    AWS_MAX_ATTEMPTS: '1',
    AWS_ENDPOINT_URL_DYNAMODB: origin,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: origin,
    AWS_ENDPOINT_URL_SQS: origin,
    AWS_ENDPOINT_URL_EVENTBRIDGE: origin,
    AWS_ENDPOINT_URL_SCHEDULER: origin,
    AWS_ENDPOINT_URL_S3: origin,
    ACCTOPS_BASE_URL: `${origin}/api/v1`,
    ACCTOPS_TOOL_VERSION: '0.1.0',
    INSTITUTION_SECRET_ARN: ARN('secretsmanager', 'secret:acctops/fuzz/institution-AbCdEf'),
    TOKEN_TABLE_NAME: 'acctops-fuzz-tokens',
    TOKEN_EVENT_BUS_NAME: 'acctops-fuzz-tokens',
    REFRESH_QUEUE_URL: `${origin}/000000000000/acctops-fuzz-refresh`,
    REVOCATION_SCHEDULE_GROUP: 'acctops-fuzz-revocations',
    REVOKE_FUNCTION_ARN: ARN('lambda', 'function:acctops-fuzz-revoke-api-key'),
    REVOCATION_SCHEDULER_ROLE_ARN: 'arn:aws:iam::000000000000:role/acctops-fuzz-scheduler',
    KEY_EVENT_BUS_NAME: 'acctops-fuzz-keys',
    EXPORT_BUCKET_NAME: 'acctops-fuzz-exports',
    EXPORT_QUEUE_URL: `${origin}/000000000000/acctops-fuzz-exports.fifo`,
    EXPORT_EVENT_BUS_NAME: 'acctops-fuzz-exports',
    EXPORT_RUNS_TABLE_NAME: 'acctops-fuzz-runs',
    COMPANY_REGISTRY_TABLE_NAME: 'acctops-fuzz-companies',
    EXPORT_FORMATS: 'jsonl,csv,parquet',
    WEBHOOK_SECRET_ARN: ARN('secretsmanager', 'secret:acctops/fuzz/webhook-AbCdEf'),
    WEBHOOK_REPLAY_TABLE_NAME: 'acctops-fuzz-replay',
  });
  write = captureStdout(stdout);
  for (const dir of readdirSync(join(__dirname, '..', '..', 'functions')).filter((d) => !d.startsWith('_')))
    handlers.set(dir, loadHandler(dir));
});

afterAll(async () => {
  write.mockRestore();
  process.env = saved;
  await peer.stop();
  // Refused events are logged (redacted): nothing of what they carried may come out.
  expectNoCanaries(stdout, 'handler stdout');
});

interface EventSpec {
  /** A valid event: what the function's caller sends. */
  base: Record<string, unknown>;
  /** Fields (top-level) and a value each can never be valid with. */
  broken: Record<string, fc.Arbitrary<unknown>>;
  /** Strict schemas refuse unknown fields; loose ones (envelopes) ignore them. */
  strict: boolean;
}

/** The scheduled handlers' one envelope (functions/_shared/scheduled-event.ts), plus a handler's own parameters. */
const scheduler = (schedule: string, own: Pick<EventSpec, 'base' | 'broken'> = { base: {}, broken: {} }): EventSpec => ({
  base: { source: 'acctops.scheduler', schedule, scheduledAt: '2026-11-01T03:00:00+01:00', executionId: 'exec-1', ...own.base },
  broken: {
    source: notA('acctops.scheduler'),
    schedule: notA(schedule),
    scheduledAt: fc.oneof(
      wrongType('string'),
      fc.string({ maxLength: 40 }).filter((s) => !/^\d{4}-\d\d-\d\dT/.test(s)),
    ),
    executionId: fc.oneof(wrongType('string'), fc.constant(''), fc.string({ minLength: 129, maxLength: 400 })),
    ...own.broken,
  },
  strict: true,
});

const guidField = fc.oneof(
  wrongType('string'),
  fc.string({ maxLength: 60 }).filter((s) => !/^[0-9a-f-]{36}$/i.test(s)),
);
const sqsRecord = (extra: Record<string, unknown> = {}) => ({ messageId: 'm-1', body: '{}', eventSource: 'aws:sqs', ...extra });
const sqsEnvelope = (extra: Record<string, unknown> = {}): EventSpec => ({
  base: { Records: [sqsRecord(extra)] },
  broken: {
    Records: fc.oneof(
      wrongType('array'),
      fc.constant([]),
      fc.array(
        fc.oneof(
          wrongType('object'),
          fc.constant({ ...sqsRecord(extra), eventSource: 'aws:sns' }),
          fc.constant({ ...sqsRecord(extra), messageId: '' }),
        ),
        { minLength: 1, maxLength: 3 },
      ),
    ),
  },
  strict: false,
});

/** The event each function is invoked with; a test below fails when a new function has none. */
const EVENTS: Record<string, EventSpec> = {
  'check-health': scheduler('health-check', {
    base: { probes: ['service-reachable'] },
    broken: {
      probes: fc.oneof(
        wrongType('array'),
        fc.constant([]),
        fc
          .array(fc.string(), { minLength: 1, maxLength: 3 })
          .filter((a) => a.some((p) => !['service-reachable', 'institution-credential-readable'].includes(p))),
      ),
    },
  }),
  'check-key-rotations': scheduler('key-rotation-doctor', { base: { repair: false }, broken: { repair: wrongType('boolean') } }),
  'check-monthly-export': scheduler('monthly-export-check'),
  'plan-monthly-export': scheduler('monthly-export'),
  'plan-token-refresh': scheduler('token-refresh'),
  'export-period': sqsEnvelope({ attributes: { ApproximateReceiveCount: '1' } }),
  'refresh-tokens': sqsEnvelope(),
  'onboard-user': {
    base: { externalId: UUID, username: 'ada', email: 'ada@example.test' },
    broken: {
      externalId: guidField,
      // Oversized: the use case caps a username at 512 characters.
      username: fc.oneof(
        wrongType('string'),
        fc.constant(''),
        fc.string({ minLength: 513, maxLength: 2000 }).filter((s) => s.trim().length > 512),
      ),
      email: fc.oneof(
        wrongType('string'),
        fc.string({ maxLength: 40 }).filter((s) => !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s)),
      ),
    },
    strict: true,
  },
  'recover-user': {
    base: { externalId: UUID, reactivate: true, force: true },
    broken: { externalId: guidField, reactivate: wrongType('boolean'), force: wrongType('boolean') },
    strict: true,
  },
  'revoke-user': { base: { externalId: UUID }, broken: { externalId: guidField }, strict: true },
  'rotate-api-key': {
    base: { SecretId: ARN('secretsmanager', 'secret:acctops/fuzz/company-AbCdEf'), ClientRequestToken: UUID, Step: 'createSecret' },
    broken: {
      SecretId: fc.oneof(wrongType('string'), fc.constant(''), fc.string({ minLength: 2049, maxLength: 3000 })),
      ClientRequestToken: fc.oneof(wrongType('string'), fc.string({ maxLength: 31 }), fc.string({ minLength: 65, maxLength: 200 })),
      Step: notA('createSecret', 'setSecret', 'testSecret', 'finishSecret'),
    },
    strict: false,
  },
  'revoke-api-key': {
    base: {
      secretId: ARN('secretsmanager', 'secret:acctops/fuzz/company-AbCdEf'),
      companyId: UUID,
      apiKeyId: UUID,
      keyPrefix: 'sbx_AbCdEfGh',
      revokeAt: 1_700_000_000_000,
      rotationToken: UUID,
    },
    broken: {
      companyId: guidField,
      apiKeyId: guidField,
      // A whole key where its prefix belongs (a hand-written invocation) was taken as the prefix.
      keyPrefix: fc.oneof(
        wrongType('string'),
        fc.constant(''),
        fc.constant(CANARY.apiKey),
        fc.stringMatching(/^[a-z]{2,6}_[A-Za-z0-9]{9,40}$/),
        fc.stringMatching(/^[A-Za-z0-9]{1,20}$/),
      ),
      revokeAt: fc.oneof(wrongType('number'), fc.constant(-1), fc.double({ min: 0.1, max: 0.9 })),
    },
    strict: false,
  },
  'request-export': {
    base: { id: 'evt-1', 'detail-type': 'ExportRequested', detail: { companyId: UUID, period: '2026-10' } },
    broken: {
      id: fc.oneof(wrongType('string'), fc.constant(''), fc.string({ minLength: 129, maxLength: 300 })),
      'detail-type': notA('ExportRequested'),
      detail: fc.oneof(
        wrongType('object'),
        fc.record({ companyId: guidField, period: fc.constant('2026-10') }),
        fc.record({ companyId: fc.constant(UUID), period: fc.string({ maxLength: 10 }).filter((s) => !/^\d{4}-(0[1-9]|1[0-2])$/.test(s)) }),
        // A range longer than 36 months is refused before it is expanded.
        fc.integer({ min: 4, max: 80 }).map((years) => ({ companyId: UUID, from: '1990-01', to: `${1990 + years}-01` })),
      ),
    },
    strict: false,
  },
  'receive-export-webhook': {
    base: {
      headers: { 'content-type': 'application/json' },
      body: '{}',
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST' } },
    },
    broken: {
      headers: fc.oneof(
        fc.constant(null),
        fc.integer(),
        fc.string(),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), wrongType('string'), { minKeys: 1, maxKeys: 3 }),
      ),
      body: wrongType('string'),
      isBase64Encoded: wrongType('boolean'),
      requestContext: fc.oneof(wrongType('object'), fc.constant({ http: {} }), fc.constant({ http: { method: '' } })),
    },
    strict: false,
  },
};

function isValidationError(error: unknown): error is { name: string; issues: { path: string; message: string }[]; message: string } {
  return (
    error instanceof Error &&
    error.name === 'ValidationError' &&
    (error as { code?: string }).code === 'validation_failed' &&
    Array.isArray((error as { issues?: unknown }).issues)
  );
}

/** Invokes; returns the error (undefined when it resolved) and whether anything was sent. */
async function invoke(dir: string, event: unknown): Promise<{ error: unknown; result: unknown; sent: number }> {
  const before = peer.requests.length;
  let error: unknown;
  let result: unknown;
  try {
    result = await handlers.get(dir)!(event, context());
  } catch (e) {
    error = e;
  }
  return { error, result, sent: peer.requests.length - before };
}

const namesField = (issues: { path: string; message: string }[], field: string) =>
  issues.some((i) => i.path === field || i.path.startsWith(`${field}.`) || i.path.startsWith(`${field}[`));

describe('Lambda events (fast-check, fixed seed)', () => {
  it('every function has an event spec', () => {
    expect([...handlers.keys()].sort()).toEqual(Object.keys(EVENTS).sort());
  });

  it.each(Object.keys(EVENTS))('%s: a broken event is a ValidationError naming the field, and nothing is sent anywhere', async (dir) => {
    const spec = EVENTS[dir]!;
    const fields = Object.keys(spec.broken);
    type Case =
      | { kind: 'not-object'; event: unknown }
      | { kind: 'field'; field: string; event: unknown }
      | { kind: 'unknown'; key: string; event: unknown };
    const cases: fc.Arbitrary<Case> = fc.oneof(
      fc
        .oneof(fc.constant(null), fc.integer(), fc.string(), fc.boolean(), fc.array(fc.anything(), { maxLength: 3 }))
        .map((event): Case => ({ kind: 'not-object', event })),
      fc
        .constantFrom(...fields)
        .chain((field) =>
          fc.tuple(
            fc.constant(field),
            fc.oneof(
              spec.broken[field]!.map((v) => ({ set: v })),
              fc.constant('remove' as const),
            ),
          ),
        )
        .filter(
          ([field, change]) =>
            change !== 'remove' || !['isBase64Encoded', 'headers', 'body', 'reactivate', 'force', 'repair', 'probes'].includes(field),
        )
        .map(([field, change]): Case => {
          const event: Record<string, unknown> = { ...spec.base };
          if (change === 'remove') delete event[field];
          else event[field] = change.set;
          return { kind: 'field', field, event };
        }),
      ...(spec.strict
        ? [unknownKey(Object.keys(spec.base)).map((key): Case => ({ kind: 'unknown', key, event: { ...spec.base, [key]: CANARY.apiKey } }))]
        : []),
    );
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const { error, sent } = await invoke(dir, c.event);
        expect(sent).toBe(0);
        if (!isValidationError(error)) throw new Error(`${dir}: expected a ValidationError, got ${String(error)}`);
        if (c.kind === 'field') expect(namesField(error.issues, c.field)).toBe(true);
        else if (c.kind === 'unknown') expect(error.message).toContain(c.key);
        else expect(error.issues[0]!.path).toBe('');
        expectNoCanaries(error, 'validation error');
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
    );
  });

  it.each([
    ['refresh-tokens', (body: string) => decodeRefreshRequest(body)],
    ['export-period', (body: string) => decodeJob(body)],
  ] as const)('%s: malformed message bodies become batch item failures, and nothing is sent', async (dir, decode) => {
    const body = fc
      .oneof(
        fc.string({ maxLength: 200 }),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        fc.record({ externalId: fc.string(), dueAt: fc.anything() }).map((v) => JSON.stringify(v)),
        fc
          .record({ type: fc.constantFrom('export', 'discover'), companyId: fc.string(), period: fc.string(), formats: fc.anything() })
          .map((v) => JSON.stringify(v)),
      )
      .filter((text) => {
        try {
          decode(text);
          return false;
        } catch {
          return true;
        }
      });
    await fc.assert(
      fc.asyncProperty(fc.array(body, { minLength: 1, maxLength: 5 }), async (bodies) => {
        const Records = bodies.map((b, i) => ({
          messageId: `m-${i}`,
          body: b,
          eventSource: 'aws:sqs',
          attributes: { ApproximateReceiveCount: '1' },
        }));
        const { error, result, sent } = await invoke(dir, { Records });
        expect(error).toBeUndefined();
        expect(sent).toBe(0);
        expect(result).toEqual({ batchItemFailures: Records.map((r) => ({ itemIdentifier: r.messageId })) });
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
    );
  });

  // EventBridge's envelope one level too deep or missing (a rule's input transformer, a hand-written
  // `aws lambda invoke` of the detail alone): refused naming the fields as they stand, nothing sent.
  it.each([
    [
      'request-export',
      { ...EVENTS['request-export']!.base, detail: { detail: { companyId: UUID, period: '2026-10' } } },
      ['detail.companyId', 'detail'],
    ],
    ['request-export', { companyId: UUID, period: '2026-10' }, ['id', 'detail-type', 'detail']],
    ['onboard-user', { detail: EVENTS['onboard-user']!.base }, ['externalId', 'username', 'email', '']],
    ['revoke-api-key', { detail: EVENTS['revoke-api-key']!.base }, ['secretId', 'companyId', 'apiKeyId', '']],
    ['check-key-rotations', { detail: { repair: false } }, ['']],
    ['check-health', { source: 'aws.events', 'detail-type': 'Scheduled Event', detail: EVENTS['check-health']!.base }, ['source', '']],
  ] as const)(
    '%s: an envelope off by one level (case %#) is a ValidationError naming the fields as they stand',
    async (dir, event, paths) => {
      const { error, sent } = await invoke(dir, event);
      expect(sent).toBe(0);
      if (!isValidationError(error)) throw new Error(`${dir}: expected a ValidationError, got ${String(error)}`);
      for (const path of paths) expect(error.issues.map((i) => i.path)).toContain(path);
    },
  );

  it('receive-export-webhook: any headers and body without a well-formed signature get a 4xx before the secret is read', async () => {
    const headerValue = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom('application/json', 'text/plain', 'v1=zz', 'v1=', '1700000000'),
    );
    const headers = fc.dictionary(
      fc.oneof(
        fc.constantFrom('Content-Type', 'content-type', 'X-Acctops-Signature', 'x-acctops-timestamp'),
        fc.string({ minLength: 1, maxLength: 20 }),
      ),
      headerValue,
      { maxKeys: 5 },
    );
    const body = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.nat({ max: 200_000 }).map((n) => 'x'.repeat(n)),
    );
    const method = fc.constantFrom('POST', 'GET', 'PUT', 'post');
    await fc.assert(
      fc.asyncProperty(headers, body, method, async (h, b, m) => {
        fc.pre(!Object.entries(h).some(([k, v]) => k.toLowerCase() === 'x-acctops-signature' && /v1=[0-9a-f]{64}/i.test(v)));
        const { error, result, sent } = await invoke('receive-export-webhook', {
          headers: h,
          body: b,
          isBase64Encoded: false,
          requestContext: { http: { method: m } },
        });
        expect(error).toBeUndefined();
        expect(sent).toBe(0);
        const response = result as { statusCode: number; body: string };
        expect(response.statusCode).toBeGreaterThanOrEqual(400);
        expect(response.statusCode).toBeLessThan(500);
        // The size limit: a JSON POST over 64 KiB is refused as such, before anything else is looked at.
        const contentTypes = Object.entries(h).filter(([k]) => k.toLowerCase() === 'content-type');
        if (Buffer.byteLength(b) > 64 * 1024 && m === 'POST' && contentTypes.length === 1 && contentTypes[0]![1] === 'application/json') {
          expect(response.statusCode).toBe(413);
        }
        expect(JSON.parse(response.body)).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
    );
  });
});
