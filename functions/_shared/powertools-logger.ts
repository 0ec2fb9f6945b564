import { LogFormatter, LogItem, Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';
import { LevelLogger, type Logger, type LogLevel } from '../../src/core/shared/logger';
import { redact, redactString } from '../../src/core/shared/redact';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Keys Powertools owns: it drops them from a call's attributes (with a warning line of its own). */
const RESERVED = new Set(['level', 'message', 'sampling_rate', 'service', 'timestamp']);

/**
 * Powertools' standard keys (level, timestamp, service, cold_start, function_request_id,
 * correlation_id, sampling_rate, xray_trace_id…), so the lines read like any Powertools
 * function's, with every value passed through our redaction. This is the one place every line
 * goes through: a message, a caller's fields, the persistent and per-invocation keys and errors
 * (redact turns an Error into a plain object first, so Powertools' own error serialiser never
 * sees one; formatError is redacted as well in case an Error arrives some other way).
 */
export class RedactingLogFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    const base: LogAttributes = {
      level: attributes.logLevel,
      message: redactString(attributes.message),
      timestamp: this.formatTimestamp(attributes.timestamp),
      service: attributes.serviceName,
      cold_start: context?.coldStart,
      function_name: context?.functionName,
      function_request_id: context?.awsRequestId,
      sampling_rate: attributes.sampleRateValue,
      xray_trace_id: attributes.xRayTraceId,
    };
    return new LogItem({ attributes: base }).addAttributes(redact(additional) as LogAttributes);
  }

  override formatError(error: Error): LogAttributes {
    return redact(error) as LogAttributes;
  }
}

/** One Powertools instance and the per-invocation level, shared by a root and its children. */
interface Shared {
  readonly powertools: PowertoolsLogger;
  readonly level: LogLevel;
  readonly sampleRate: number;
  readonly random: () => number;
  /** The level of the current invocation: `level`, or debug when this invocation is sampled. */
  current: LogLevel;
}

export interface LambdaLoggerOptions {
  /** LOG_LEVEL of the function. */
  level: LogLevel;
  /**
   * Share of invocations logged at debug whatever `level` says (POWERTOOLS_LOGGER_SAMPLE_RATE).
   * @default 0
   */
  sampleRate?: number;
  /** @default 'acctops' (POWERTOOLS_SERVICE_NAME overrides it) */
  serviceName?: string;
  /** For tests of the sampling decision. @default Math.random */
  random?: () => number;
}

/**
 * Our Logger port on Powertools Logger, for Lambda. The port stays what it was (so src and other
 * branches' handlers compile unchanged); what Powertools adds is the standard line shape, the
 * Lambda context keys and the correlation id (`correlation_id`), written to raw stdout.
 *
 * The level is filtered here, not by Powertools: the functions run with Lambda's application log
 * level at TRACE (lib/constructs/acctops-function.ts), and Powertools defers to that setting
 * (AWS_LAMBDA_LOG_LEVEL) over its own level and disables its debug sampling under it. So
 * Powertools is created at TRACE and this class applies LOG_LEVEL and the sample rate, drawing
 * once per invocation as Powertools would.
 */
export class LambdaLogger extends LevelLogger {
  private constructor(
    private readonly shared: Shared,
    private readonly base: Record<string, unknown>,
  ) {
    super();
  }

  static create(options: LambdaLoggerOptions): LambdaLogger {
    const sampleRate = options.sampleRate ?? 0;
    const powertools = new PowertoolsLogger({
      logLevel: 'TRACE',
      serviceName: process.env.POWERTOOLS_SERVICE_NAME || options.serviceName || 'acctops',
      logFormatter: new RedactingLogFormatter(),
      // Powertools reports the rate it was given on every line; sampling itself happens here.
      ...(sampleRate > 0 ? { sampleRateValue: sampleRate } : {}),
    });
    return new LambdaLogger(
      { powertools, level: options.level, sampleRate, random: options.random ?? Math.random, current: options.level },
      {},
    );
  }

  /** Starts an invocation: Lambda context keys, the correlation id, the sampling draw. */
  beginInvocation(context: Context, correlationId: string): void {
    const { powertools } = this.shared;
    powertools.resetKeys();
    powertools.addContext(context);
    powertools.setCorrelationId(correlationId);
    this.shared.current = this.shared.sampleRate > 0 && this.shared.random() < this.shared.sampleRate ? 'debug' : this.shared.level;
  }

  child(fields: Record<string, unknown>): Logger {
    return new LambdaLogger(this.shared, { ...this.base, ...fields });
  }

  protected write(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    if (ORDER[level] < ORDER[this.shared.current]) return;
    const attributes: Record<string, unknown> = {};
    for (const [key, value] of Object.entries({ ...this.base, ...fields })) {
      // Keep a caller's field whose name Powertools reserves, under a name it does not.
      attributes[RESERVED.has(key) ? `field_${key}` : key] = value;
    }
    this.shared.powertools[level](message, attributes);
  }
}
