import type * as z from 'zod';
import { METRIC_DIMENSIONS } from '../../contract/metrics';
import { buildHandler, type CreateHandlerOptions, type LambdaHandler, type Observability } from './lambda-handler';
import { LambdaLogger } from './powertools-logger';
import { PowertoolsMetrics } from './powertools-metrics';

export type { CreateHandlerOptions, Invocation } from './lambda-handler';

/** Powertools Logger and Metrics behind our ports (docs/observability.md). */
export const powertoolsObservability: Observability = {
  logger: (env) => LambdaLogger.create({ level: env.LOG_LEVEL, sampleRate: env.POWERTOOLS_LOGGER_SAMPLE_RATE }),
  metrics: (env, ids, clock) =>
    new PowertoolsMetrics({
      dimensions: { [METRIC_DIMENSIONS.stage]: env.ACCTOPS_STAGE, [METRIC_DIMENSIONS.function]: env.ACCTOPS_FUNCTION },
      properties: ids,
      clock,
    }),
};

/**
 * The Lambda entry point of every function (see buildHandler): logs and metrics through
 * Powertools. Call it at module scope, so that a misconfigured function fails at init, naming the
 * variable.
 */
export function createHandler<S extends z.ZodType, R>(options: CreateHandlerOptions<S, R>): LambdaHandler<R> {
  return buildHandler(options, powertoolsObservability);
}
