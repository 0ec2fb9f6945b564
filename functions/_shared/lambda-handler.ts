import middy, { type MiddlewareObj, type MiddyfiedHandler } from '@middy/core';
import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { systemClock, type Clock } from '../../src/core/shared/clock';
import { envDecimal, envString, readEnv } from '../../src/core/shared/env';
import { parseWith, ValidationError } from '../../src/core/shared/errors';
import type { Logger } from '../../src/core/shared/logger';
import type { Metrics } from '../../src/core/shared/metrics';
import { hasSecretShape, redactString } from '../../src/core/shared/redact';
import { lazySchema } from '../../src/core/shared/lazy-schema';

/** What every function gets from AcctopsFunction (lib/constructs/acctops-function.ts). */
export const runtimeEnvSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    ACCTOPS_STAGE: envString,
    ACCTOPS_FUNCTION: envString,
    LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
    /** Share of invocations logged at debug (Powertools' variable; unset in the stack unless a stage sets it). */
    POWERTOOLS_LOGGER_SAMPLE_RATE: envDecimal(0, 1).optional(),
  }),
);

export type RuntimeEnv = z.output<typeof runtimeEnvSchema>;

/**
 * Where a function's logs and metrics go. Two exist: Powertools (create-handler.ts, every function
 * but one) and our own JSON logger and EMF writer (create-lean-handler.ts, for a bundle without
 * room for Powertools). They are passed in, not imported here, so that a bundle carries only the
 * one its handler chose.
 */
export interface Observability {
  /** The function's root logger, made once at init; `beginInvocation` runs first in every invocation. */
  logger(env: RuntimeEnv): Logger & { beginInvocation?(context: Context, correlationId: string): void };
  /** The metrics of one invocation: dimensions Stage and Function, the ids as searchable members. */
  metrics(env: RuntimeEnv, ids: { correlationId: string; requestId: string }, clock: Clock): Metrics;
}

/** Per-invocation tools handed to a handler. */
export interface Invocation {
  /** Carries `requestId` and `correlationId` on every line; every line passes through our redaction. */
  readonly logger: Logger;
  /** Flushed (EMF, through Powertools) when the invocation ends, whether it succeeded or failed. */
  readonly metrics: Metrics;
  /** The event's own id when it has a usable one (EventBridge `id`), else the request id. */
  readonly correlationId: string;
  readonly requestId: string;
  /** Aborted just before Lambda's timeout: pass it to long loops and HTTP calls. */
  readonly signal: AbortSignal;
  readonly lambdaContext: Context;
}

export interface CreateHandlerOptions<S extends z.ZodType, R> {
  /** Parses the raw event before anything else runs; failure is a ValidationError naming the field. */
  eventSchema: S;
  handler: (event: z.output<S>, invocation: Invocation) => Promise<R>;
  /**
   * Fields of the parsed event that every later line of the invocation carries, its
   * `invocation failed` line included: the user or the company on-call looks a failure up by. Ids
   * and a key's prefix only, never a secret (the lines are redacted all the same).
   * @default none
   */
  logFields?: (event: z.output<S>) => Record<string, string | undefined>;
  /**
   * Picks a correlation id from the raw event; an unusable value falls back to the request id.
   * @default the event's `id` or `correlationId` member
   */
  correlationId?: (event: unknown) => string | undefined;
  /**
   * Environment read once, now, with readEnv.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
  /**
   * Root logger; each invocation logs through a child of it.
   * @default the Observability's logger, at LOG_LEVEL
   */
  logger?: Logger;
  /**
   * Makes the metrics of one invocation.
   * @default the Observability's metrics (EMF on stdout)
   */
  createMetrics?: (ids: { correlationId: string; requestId: string }) => Metrics;
  /** @default systemClock */
  clock?: Clock;
}

/** What buildHandler returns: a middy handler, as Lambda calls it. */
export type LambdaHandler<R> = MiddyfiedHandler<unknown, R, Error, Context & Partial<Scoped>>;

export interface Scoped {
  // The logger gains the event's logFields once the event is parsed.
  acctops: Omit<Invocation, 'signal' | 'lambdaContext' | 'logger'> & { logger: Logger; startedAt: number };
}

const CORRELATION_ID = /^[A-Za-z0-9._:/-]{1,128}$/;

/**
 * Whether the event's id can be the invocation's correlation id. It is taken before the event is
 * validated, even from an event then refused, and goes into every log line, the metrics and
 * Powertools' own correlation id: an id with a secret's shape (a key pasted into a hand-written
 * `aws lambda invoke` payload, a JWT) is refused like a malformed one, and the request id stands
 * in, rather than relying on each of those sinks to cut it, and searching the logs by a cut id.
 */
function usableCorrelationId(candidate: unknown): candidate is string {
  // A picker reads the raw event, so it may hand over a null or a number whatever its type says.
  return typeof candidate === 'string' && CORRELATION_ID.test(candidate) && !hasSecretShape(candidate);
}

function defaultCorrelationId(event: unknown): string | undefined {
  if (event === null || typeof event !== 'object') return undefined;
  const record = event as Record<string, unknown>;
  for (const key of ['correlationId', 'id']) {
    if (typeof record[key] === 'string') return record[key];
  }
  return undefined;
}

/**
 * The one way to write a Lambda entry point here (through createHandler): middy, with the event
 * parsed by zod before the handler (and so before any side effect), a logger per invocation that
 * carries the correlation id, EMF metrics flushed at the end, and failures logged once, redacted,
 * then rethrown so that Lambda's retry, DLQ and Errors metric see them.
 *
 * Call it at module scope: the environment is validated at init, so a misconfigured function
 * fails on its first cold start with the variable's name.
 *
 * For SQS batches, make `eventSchema` the envelope and parse each record's body in the handler, so
 * that one bad message becomes one batch item failure instead of failing the batch.
 */
export function buildHandler<S extends z.ZodType, R>(options: CreateHandlerOptions<S, R>, observability: Observability): LambdaHandler<R> {
  const env = readEnv(runtimeEnvSchema, options.env);
  const clock = options.clock ?? systemClock;
  const lambdaLogger = options.logger ? undefined : observability.logger(env);
  const root = (options.logger ?? lambdaLogger!).child({
    stage: env.ACCTOPS_STAGE,
    function: env.ACCTOPS_FUNCTION,
  });
  const pickCorrelationId = options.correlationId ?? defaultCorrelationId;
  const createMetrics =
    options.createMetrics ?? ((ids: { correlationId: string; requestId: string }) => observability.metrics(env, ids, clock));

  type Request = Parameters<NonNullable<MiddlewareObj<unknown, R, Error, Context & Partial<Scoped>>['before']>>[0];

  const scope: MiddlewareObj<unknown, R, Error, Context & Partial<Scoped>> = {
    name: 'acctops-scope',
    before: (request: Request) => {
      const requestId = request.context.awsRequestId;
      const candidate = pickCorrelationId(request.event);
      const correlationId = usableCorrelationId(candidate) ? candidate : requestId;
      lambdaLogger?.beginInvocation?.(request.context, correlationId);
      request.context.acctops = {
        logger: root.child({ requestId, correlationId }),
        metrics: createMetrics({ correlationId, requestId }),
        correlationId,
        requestId,
        startedAt: clock.now(),
      };
    },
    after: (request: Request) => {
      const scoped = request.context.acctops!;
      scoped.metrics.flush();
      scoped.logger.info('invocation succeeded', { durationMs: clock.now() - scoped.startedAt });
    },
    onError: (request: Request) => {
      const scoped = request.context.acctops;
      // The scope itself failed to start (no request id?): nothing to log through, let it surface.
      if (!scoped) return;
      scoped.metrics.flush();
      const error = request.error;
      scoped.logger.error('invocation failed', {
        durationMs: clock.now() - scoped.startedAt,
        error,
        ...(error instanceof ValidationError || !error?.stack ? {} : { stack: redactString(error.stack) }),
      });
    },
  };

  const parseEvent: MiddlewareObj<unknown, R, Error, Context & Partial<Scoped>> = {
    name: 'acctops-parse-event',
    before: (request: Request) => {
      request.event = parseWith(options.eventSchema, request.event, 'event');
      const scoped = request.context.acctops;
      if (options.logFields && scoped) {
        const fields = Object.fromEntries(
          Object.entries(options.logFields(request.event as z.output<S>)).filter(([, value]) => value !== undefined),
        );
        scoped.logger = scoped.logger.child(fields);
      }
    },
  };

  return middy<unknown, R, Error, Context & Partial<Scoped>>()
    .use(scope)
    .use(parseEvent)
    .handler((event, context, { signal }) => {
      const scoped = context.acctops!;
      return options.handler(event as z.output<S>, {
        logger: scoped.logger,
        metrics: scoped.metrics,
        correlationId: scoped.correlationId,
        requestId: scoped.requestId,
        signal,
        lambdaContext: context,
      });
    });
}
