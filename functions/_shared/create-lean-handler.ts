import type * as z from 'zod';
import { METRIC_DIMENSIONS } from '../../contract/metrics';
import { JsonLogger } from '../../src/core/shared/logger';
import { EmfMetrics } from './emf-metrics';
import { buildHandler, type CreateHandlerOptions, type LambdaHandler, type Observability } from './lambda-handler';

export type { CreateHandlerOptions, Invocation } from './lambda-handler';

/** Our own JSON logger and EMF writer: the same ports, redaction, metric names and dimensions. */
export const ownObservability: Observability = {
  // Powertools' level and timestamp keys: a query for ERROR lines finds export-period's too.
  logger: (env) => new JsonLogger(undefined, {}, env.LOG_LEVEL, Date.now, 'lambda'),
  metrics: (env, ids, clock) =>
    new EmfMetrics({
      dimensions: { [METRIC_DIMENSIONS.stage]: env.ACCTOPS_STAGE, [METRIC_DIMENSIONS.function]: env.ACCTOPS_FUNCTION },
      properties: ids,
      clock,
    }),
};

/**
 * createHandler without Powertools, for a function whose bundle has no room for it: Powertools
 * Logger and Metrics add ~38 KB to a bundle, and export-period's was 291 KB of the 300 KB bound
 * (BENCHMARKS.md, "Cold start"; docs/observability.md). Same behaviour otherwise; importing this
 * file instead of create-handler.ts keeps Powertools out of the bundle.
 */
export function createHandler<S extends z.ZodType, R>(options: CreateHandlerOptions<S, R>): LambdaHandler<R> {
  return buildHandler(options, ownObservability);
}
