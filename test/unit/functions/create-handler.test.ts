import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { createHandler, type Invocation } from '../../../functions/_shared/create-handler';
import { createHandler as createLeanHandler } from '../../../functions/_shared/create-lean-handler';
import { EmfMetrics } from '../../../functions/_shared/emf-metrics';
import { PowertoolsMetrics } from '../../../functions/_shared/powertools-metrics';
import { ManualClock } from '../../../src/core/shared/clock';
import { AcctopsError, ConfigError, ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics, METRICS_NAMESPACE } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets, registerSecret } from '../../../src/core/shared/redact';
import { captureStdout } from '../../helpers/lambda';

const ENV = { ACCTOPS_STAGE: 'test', ACCTOPS_FUNCTION: 'export-company', LOG_LEVEL: 'debug' };
const CANARY = 'sbx_CanarySecretKey0123456789abcdef';

const eventSchema = z.object({
  id: z.string(),
  detail: z.object({ companyId: z.uuid(), month: z.string().regex(/^\d{4}-\d{2}$/), dryRun: z.boolean().default(false) }),
});
const GOOD = {
  id: 'evt-7f3a',
  detail: { companyId: '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d', month: '2026-10' },
};

function context(requestId = 'req-1'): Context {
  return { awsRequestId: requestId, functionName: 'fn' } as Context;
}

function setup(handler: (event: z.output<typeof eventSchema>, invocation: Invocation) => Promise<unknown>) {
  const logger = new MemoryLogger();
  const metrics = new MemoryMetrics();
  const clock = ManualClock.autoAdvancing();
  const calls: unknown[] = [];
  const lambda = createHandler({
    eventSchema,
    env: ENV,
    logger,
    clock,
    createMetrics: () => metrics,
    handler: async (event, invocation) => {
      calls.push(event);
      return handler(event, invocation);
    },
  });
  return { lambda, logger, metrics, calls, clock };
}

afterEach(() => forgetRegisteredSecrets());

describe('createHandler', () => {
  it('hands the parsed event (defaults applied) and per-invocation tools to the handler', async () => {
    let seen: Invocation | undefined;
    const { lambda, logger, metrics, calls } = setup(async (event, invocation) => {
      seen = invocation;
      invocation.logger.info('exporting', { month: event.detail.month });
      invocation.metrics.add('Exported', 1);
      return { done: event.detail.companyId };
    });

    await expect(lambda(GOOD, context())).resolves.toEqual({ done: GOOD.detail.companyId });
    expect(calls).toEqual([{ ...GOOD, detail: { ...GOOD.detail, dryRun: false } }]);
    expect(seen).toMatchObject({ correlationId: 'evt-7f3a', requestId: 'req-1' });
    expect(seen!.signal).toBeInstanceOf(AbortSignal);
    expect(metrics.sum('Exported')).toBe(1);
    expect(metrics.flushCount).toBe(1);

    const entries = logger.entries();
    expect(entries.map((e) => e.message)).toEqual(['exporting', 'invocation succeeded']);
    for (const entry of entries) {
      expect(entry).toMatchObject({ stage: 'test', function: 'export-company', requestId: 'req-1', correlationId: 'evt-7f3a' });
    }
  });

  it('refuses a malformed event with a ValidationError naming the field, before the handler runs', async () => {
    const { lambda, logger, metrics, calls } = setup(async () => 'unreachable');
    const bad = { id: 'evt-1', detail: { companyId: CANARY, month: '2026-10' } };

    const error = await lambda(bad, context()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('detail.companyId');
    expect((error as ValidationError).source).toBe('event');
    expect(calls).toEqual([]);
    expect(metrics.flushCount).toBe(1);

    const failure = logger.entries().find((e) => e.message === 'invocation failed')!;
    expect(failure).toMatchObject({
      level: 'error',
      error: { name: 'ValidationError', code: 'validation_failed', issues: [{ path: 'detail.companyId' }] },
    });
    expect(logger.lines.join('\n')).not.toContain(CANARY);
  });

  it("logFields: the parsed event's ids on every later line, the failure's included; none on a refused event", async () => {
    const logger = new MemoryLogger();
    const lambda = createHandler({
      eventSchema,
      env: ENV,
      logger,
      createMetrics: () => new MemoryMetrics(),
      logFields: (event) => ({ companyId: event.detail.companyId, period: event.detail.month, userExternalId: undefined }),
      handler: async (_event, { logger: log }) => {
        log.info('working');
        throw new AcctopsError('the service failed', { code: 'server_error' });
      },
    });
    await expect(lambda(GOOD, context())).rejects.toThrow(AcctopsError);
    const lines = logger.entries();
    expect(lines.map((e) => [e.message, e.companyId, e.period])).toEqual([
      ['working', GOOD.detail.companyId, '2026-10'],
      ['invocation failed', GOOD.detail.companyId, '2026-10'],
    ]);
    expect(lines.every((e) => !('userExternalId' in e))).toBe(true);

    const refused = await lambda({ id: 'evt-2', detail: { companyId: 'nope', month: '2026-10' } }, context('req-2')).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ValidationError);
    expect(logger.entries().at(-1)).toMatchObject({ message: 'invocation failed', requestId: 'req-2' });
    expect(logger.entries().at(-1)).not.toHaveProperty('companyId');
  });

  it('names every field of a badly shaped event', async () => {
    const { lambda } = setup(async () => 'unreachable');
    const error = (await lambda({ detail: { month: 'October' } }, context()).catch((e: unknown) => e)) as ValidationError;
    expect(error.issues.map((i) => i.path).sort()).toEqual(['detail.companyId', 'detail.month', 'id']);
  });

  it('logs a failure once, redacted, with its code, and rethrows it for Lambda', async () => {
    registerSecret(CANARY);
    const { lambda, logger, metrics } = setup(async (_event, { metrics: m }) => {
      m.add('Attempted', 1);
      throw new AcctopsError(`upstream refused key ${CANARY}`, { code: 'auth_failed' });
    });

    await expect(lambda(GOOD, context())).rejects.toMatchObject({ code: 'auth_failed' });
    const failures = logger.entries().filter((e) => e.level === 'error');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      message: 'invocation failed',
      correlationId: 'evt-7f3a',
      error: { name: 'AcctopsError', code: 'auth_failed', message: 'upstream refused key [REDACTED]' },
      stack: expect.stringContaining('AcctopsError'),
    });
    expect(logger.lines.join('\n')).not.toContain(CANARY);
    expect(metrics.sum('Attempted')).toBe(1);
    expect(metrics.flushCount).toBe(1);
  });

  it('falls back to the request id when the event has no usable id', async () => {
    const ids: string[] = [];
    const lambda = createHandler({
      eventSchema: z.unknown(),
      env: ENV,
      logger: new MemoryLogger(),
      createMetrics: () => new MemoryMetrics(),
      handler: async (_event, { correlationId }) => {
        ids.push(correlationId);
      },
    });
    await lambda({ id: 'evt-ok' }, context('r1'));
    await lambda({ correlationId: 'corr-1', id: 'evt-2' }, context('r2'));
    await lambda({ id: 'has spaces and {braces}' }, context('r3'));
    await lambda('a string event', context('r4'));
    expect(ids).toEqual(['evt-ok', 'corr-1', 'r3', 'r4']);
  });

  it('emits EMF on stdout by default, with Stage and Function dimensions and the ids as properties', async () => {
    const written: string[] = [];
    const write = captureStdout(written);
    try {
      const lambda = createHandler({
        eventSchema,
        env: ENV,
        logger: new MemoryLogger(),
        handler: async (_event, { metrics }) => {
          expect(metrics).toBeInstanceOf(PowertoolsMetrics);
          metrics.add('Exported', 2);
        },
      });
      await lambda(GOOD, context('req-9'));
    } finally {
      write.mockRestore();
    }
    const documents = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(documents).toEqual([
      expect.objectContaining({
        _aws: expect.objectContaining({
          CloudWatchMetrics: [
            { Namespace: METRICS_NAMESPACE, Dimensions: [['Stage', 'Function']], Metrics: [{ Name: 'Exported', Unit: 'Count' }] },
          ],
        }),
        Stage: 'test',
        Function: 'export-company',
        correlationId: 'evt-7f3a',
        requestId: 'req-9',
        Exported: 2,
      }),
    ]);
    // Powertools' own `service` dimension would make these different metrics from the alarms'.
    expect(documents[0]).not.toHaveProperty('service');
  });

  it('logs through Powertools by default: its standard keys, our fields, LOG_LEVEL, and redaction of every line', async () => {
    registerSecret(CANARY);
    const written: string[] = [];
    const write = captureStdout(written);
    try {
      const lambda = createHandler({
        eventSchema,
        env: { ...ENV, LOG_LEVEL: 'info' },
        createMetrics: () => new MemoryMetrics(),
        handler: async (_event, { logger }) => {
          logger.debug('below LOG_LEVEL');
          logger.info(`calling with ${CANARY}`, { apiKey: CANARY, nested: { note: `Bearer ${CANARY}` }, service: 'kept' });
          throw new AcctopsError(`refused ${CANARY}`, { code: 'auth_failed' });
        },
      });
      await expect(lambda(GOOD, { ...context('req-5'), functionName: 'acctops-test-export' } as Context)).rejects.toThrow(AcctopsError);
    } finally {
      write.mockRestore();
    }
    expect(written.join('')).not.toContain(CANARY);
    const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((l) => l.message)).toEqual(['calling with [REDACTED]', 'invocation failed']);
    expect(lines[0]).toMatchObject({
      level: 'INFO',
      service: 'acctops',
      function_name: 'acctops-test-export',
      function_request_id: 'req-5',
      correlation_id: 'evt-7f3a',
      correlationId: 'evt-7f3a',
      requestId: 'req-5',
      stage: 'test',
      function: 'export-company',
      apiKey: '[REDACTED]',
      nested: { note: 'Bearer [REDACTED]' },
      field_service: 'kept',
    });
    expect(typeof lines[0]!.timestamp).toBe('string');
    expect(lines[1]).toMatchObject({
      level: 'ERROR',
      error: { name: 'AcctopsError', code: 'auth_failed', message: 'refused [REDACTED]' },
      stack: expect.stringContaining('AcctopsError'),
    });
  });

  it('without Powertools (create-lean-handler): our JSON logger and EMF writer, same names, dimensions and redaction', async () => {
    registerSecret(CANARY);
    const written: string[] = [];
    const write = captureStdout(written);
    try {
      const lambda = createLeanHandler({
        eventSchema,
        env: ENV,
        handler: async (_event, { logger, metrics }) => {
          expect(metrics).toBeInstanceOf(EmfMetrics);
          metrics.add('Exported', 2);
          logger.warn(`saw ${CANARY}`, { apiKey: CANARY });
        },
      });
      await lambda(GOOD, context('req-3'));
    } finally {
      write.mockRestore();
    }
    expect(written.join('')).not.toContain(CANARY);
    const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({
        _aws: expect.objectContaining({
          CloudWatchMetrics: [
            { Namespace: METRICS_NAMESPACE, Dimensions: [['Stage', 'Function']], Metrics: [{ Name: 'Exported', Unit: 'Count' }] },
          ],
        }),
        Stage: 'test',
        Function: 'export-company',
        correlationId: 'evt-7f3a',
        Exported: 2,
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({
        // Powertools' keys, as every other function's lines: one filter finds them all.
        level: 'WARN',
        timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        message: 'saw [REDACTED]',
        apiKey: '[REDACTED]',
        requestId: 'req-3',
        correlationId: 'evt-7f3a',
      }),
    );
    expect(lines.filter((l) => 'time' in l || l.level === 'warn')).toEqual([]);
  });

  it('fails at init, naming the variable, when the function is misconfigured', () => {
    const build = () => createHandler({ eventSchema, env: { ACCTOPS_FUNCTION: 'x' }, handler: async () => undefined });
    expect(build).toThrow(ConfigError);
    expect(build).toThrow(/ACCTOPS_STAGE/);
  });
});
