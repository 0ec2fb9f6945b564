import { METRICS_NAMESPACE } from '../../../contract/metrics';
import { AcctopsError } from './errors';

/**
 * Metrics are a port so that use cases count what happened (refreshes, failures, rows exported)
 * without knowing where numbers go: CloudWatch's embedded metric format through Powertools in
 * Lambda (functions/_shared/powertools-metrics.ts), memory in tests, nowhere in the CLI. The wire
 * format lives out there, not here; what stays here are the names and limits that every
 * implementation checks alike, so that a test with MemoryMetrics fails where CloudWatch would.
 */
export interface Metrics {
  /**
   * Records one value. Values of the same name (and dimensions) accumulate until `flush`. A name
   * keeps the unit of its first value.
   */
  add(name: string, value: number, unit?: MetricUnit): void;
  /** A view that records into the same buffer with extra dimensions, e.g. `{ Probe: name }` (never a company: docs/monitoring.md). */
  withDimensions(dimensions: MetricDimensions): Metrics;
  /** Emits everything recorded since the last flush. */
  flush(): void;
}

/** CloudWatch's units (MetricDatum.Unit). */
export type MetricUnit =
  | 'Seconds'
  | 'Microseconds'
  | 'Milliseconds'
  | 'Bytes'
  | 'Kilobytes'
  | 'Megabytes'
  | 'Gigabytes'
  | 'Terabytes'
  | 'Bits'
  | 'Kilobits'
  | 'Megabits'
  | 'Gigabits'
  | 'Terabits'
  | 'Percent'
  | 'Count'
  | 'Bytes/Second'
  | 'Kilobytes/Second'
  | 'Megabytes/Second'
  | 'Gigabytes/Second'
  | 'Terabytes/Second'
  | 'Bits/Second'
  | 'Kilobits/Second'
  | 'Megabits/Second'
  | 'Gigabits/Second'
  | 'Terabits/Second'
  | 'Count/Second'
  | 'None';

export type MetricDimensions = Readonly<Record<string, string>>;

/** Every acctops metric lives in this CloudWatch namespace (contract/metrics.ts; the alarms read it there too). */
export { METRICS_NAMESPACE };

// CloudWatch's limit of dimensions per metric (MetricDatum).
const MAX_DIMENSIONS = 30;

/** A metric call that CloudWatch would reject: a programming error, found by tests. */
export class MetricsError extends AcctopsError {
  override readonly name: string = 'MetricsError';
  constructor(message: string) {
    super(message, { code: 'metric_invalid' });
  }
}

export function checkMetricName(name: string, dimensions: MetricDimensions): void {
  if (name.length < 1 || name.length > 255 || name.startsWith(':')) {
    throw new MetricsError(`metric name must be 1 to 255 characters and not start with a colon: "${name}"`);
  }
  if (Object.hasOwn(dimensions, name)) {
    throw new MetricsError(`metric name "${name}" collides with a dimension of the same name`);
  }
}

export function checkMetricValue(name: string, value: number): void {
  if (!Number.isFinite(value)) throw new MetricsError(`metric "${name}" needs a finite number`);
}

/** Every check a metric passes before a writer buffers it (both Lambda writers in functions/_shared). */
export function checkMetric(name: string, value: number, dimensions: MetricDimensions, properties: Record<string, unknown>): void {
  checkMetricName(name, dimensions);
  if (Object.hasOwn(properties, name)) {
    throw new MetricsError(`metric name "${name}" collides with a property of the same name`);
  }
  checkMetricValue(name, value);
}

export function mergeDimensions(base: MetricDimensions, extra: MetricDimensions): MetricDimensions {
  const merged = { ...base, ...extra };
  const keys = Object.keys(merged);
  if (keys.length > MAX_DIMENSIONS) throw new MetricsError(`at most ${MAX_DIMENSIONS} dimensions per metric`);
  for (const key of keys) {
    const value = merged[key]!;
    if (key.length < 1 || key.length > 255 || value.length < 1 || value.length > 1024) {
      throw new MetricsError(`dimension "${key}" needs a name of 1-255 and a value of 1-1024 characters`);
    }
  }
  return merged;
}

export interface RecordedMetric {
  readonly name: string;
  readonly value: number;
  readonly unit: MetricUnit;
  readonly dimensions: MetricDimensions;
}

/** Keeps every value in `recorded`, for assertions. Validates names like the Lambda adapter does. */
export class MemoryMetrics implements Metrics {
  constructor(
    readonly recorded: RecordedMetric[] = [],
    private readonly dimensions: MetricDimensions = {},
    private readonly flushes: { count: number } = { count: 0 },
  ) {}

  add(name: string, value: number, unit: MetricUnit = 'Count'): void {
    checkMetricName(name, this.dimensions);
    checkMetricValue(name, value);
    this.recorded.push({ name, value, unit, dimensions: this.dimensions });
  }

  withDimensions(dimensions: MetricDimensions): Metrics {
    return new MemoryMetrics(this.recorded, mergeDimensions(this.dimensions, dimensions), this.flushes);
  }

  flush(): void {
    this.flushes.count += 1;
  }

  /** How many times `flush` was called on this metrics or any view of it. */
  get flushCount(): number {
    return this.flushes.count;
  }

  /** Sum of the values of `name` whose dimensions include `dimensions`. */
  sum(name: string, dimensions: MetricDimensions = {}): number {
    return this.recorded
      .filter((m) => m.name === name && Object.entries(dimensions).every(([k, v]) => m.dimensions[k] === v))
      .reduce((total, m) => total + m.value, 0);
  }
}

/** Discards everything: for the CLI and the local demo, whose stdout is for people. */
export const noMetrics: Metrics = {
  add: () => undefined,
  withDimensions: () => noMetrics,
  flush: () => undefined,
};
