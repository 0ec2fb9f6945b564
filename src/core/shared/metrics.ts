import { METRICS_NAMESPACE } from '../../../contract/metrics';
import { systemClock, type Clock } from './clock';
import { AcctopsError } from './errors';
import { redactString } from './redact';

/**
 * Metrics are a port so that use cases count what happened (refreshes, failures, rows exported)
 * without knowing where numbers go: CloudWatch through EMF in Lambda, memory in tests, nowhere
 * in the CLI.
 */
export interface Metrics {
  /**
   * Records one value. Values of the same name (and dimensions) accumulate until `flush`. A name
   * keeps the unit of its first value.
   */
  add(name: string, value: number, unit?: MetricUnit): void;
  /** A view that records into the same buffer with extra dimensions, e.g. `{ Company: id }`. */
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

// Limits of the embedded metric format and of CloudWatch (MetricDatum, Dimension).
const MAX_METRICS_PER_DOCUMENT = 100;
const MAX_VALUES_PER_METRIC = 100;
const MAX_DIMENSIONS = 30;

/** A metric call that CloudWatch would reject: a programming error, found by tests. */
export class MetricsError extends AcctopsError {
  constructor(message: string) {
    super(message, { code: 'metric_invalid' });
  }
}

function checkName(name: string, dimensions: MetricDimensions): void {
  if (name.length < 1 || name.length > 255 || name.startsWith(':')) {
    throw new MetricsError(`metric name must be 1 to 255 characters and not start with a colon: "${name}"`);
  }
  if (Object.hasOwn(dimensions, name)) {
    throw new MetricsError(`metric name "${name}" collides with a dimension of the same name`);
  }
}

function checkValue(name: string, value: number): void {
  if (!Number.isFinite(value)) throw new MetricsError(`metric "${name}" needs a finite number`);
}

function mergeDimensions(base: MetricDimensions, extra: MetricDimensions): MetricDimensions {
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

interface Series {
  unit: MetricUnit;
  values: number[];
}

interface Group {
  dimensions: MetricDimensions;
  series: Map<string, Series>;
}

/** One buffer shared by a root EmfMetrics and every `withDimensions` view of it. */
class MetricBuffer {
  readonly groups = new Map<string, Group>();

  add(dimensions: MetricDimensions, name: string, value: number, unit: MetricUnit): void {
    const key = JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    let group = this.groups.get(key);
    if (!group) {
      group = { dimensions, series: new Map() };
      this.groups.set(key, group);
    }
    const series = group.series.get(name);
    if (series) series.values.push(value);
    else group.series.set(name, { unit, values: [value] });
  }
}

export interface EmfMetricsOptions {
  /**
   * CloudWatch namespace.
   * @default METRICS_NAMESPACE
   */
  namespace?: string;
  /**
   * Dimensions of every metric, e.g. `{ Stage: 'production', Function: 'token-worker' }`.
   * @default {}
   */
  dimensions?: MetricDimensions;
  /**
   * Extra root members of every document: searchable in Logs Insights, not dimensions (no cost
   * per distinct value), e.g. the correlation id.
   * @default {}
   */
  properties?: Readonly<Record<string, string | number | boolean>>;
  /**
   * Where each JSON document goes. In Lambda it must be raw stdout: with the JSON log format,
   * Lambda wraps console.* output in its own object, and CloudWatch would no longer find `_aws`
   * at the root.
   * @default process.stdout.write
   */
  sink?: (line: string) => void;
  /** @default systemClock */
  clock?: Clock;
}

/**
 * CloudWatch Embedded Metric Format: each flush writes JSON documents whose `_aws` member tells
 * CloudWatch Logs which root members are metrics and which are dimensions. No API call, no
 * credentials, no latency; the log line is the metric.
 */
export class EmfMetrics implements Metrics {
  private readonly namespace: string;
  private readonly dimensions: MetricDimensions;
  private readonly properties: Readonly<Record<string, string | number | boolean>>;
  private readonly sink: (line: string) => void;
  private readonly clock: Clock;
  private readonly buffer: MetricBuffer;

  /** `buffer` is internal: views made by `withDimensions` share their root's. */
  constructor(options: EmfMetricsOptions = {}, buffer: MetricBuffer = new MetricBuffer()) {
    this.namespace = options.namespace ?? METRICS_NAMESPACE;
    this.dimensions = mergeDimensions({}, options.dimensions ?? {});
    this.properties = options.properties ?? {};
    this.sink = options.sink ?? ((line) => process.stdout.write(`${line}\n`));
    this.clock = options.clock ?? systemClock;
    this.buffer = buffer;
  }

  add(name: string, value: number, unit: MetricUnit = 'Count'): void {
    checkName(name, this.dimensions);
    if (Object.hasOwn(this.properties, name)) {
      throw new MetricsError(`metric name "${name}" collides with a property of the same name`);
    }
    checkValue(name, value);
    this.buffer.add(this.dimensions, name, value, unit);
  }

  withDimensions(dimensions: MetricDimensions): Metrics {
    return new EmfMetrics(
      {
        namespace: this.namespace,
        dimensions: mergeDimensions(this.dimensions, dimensions),
        properties: this.properties,
        sink: this.sink,
        clock: this.clock,
      },
      this.buffer,
    );
  }

  flush(): void {
    const timestamp = this.clock.now();
    for (const group of this.buffer.groups.values()) {
      for (const document of this.documents(group, timestamp)) this.sink(JSON.stringify(document));
    }
    this.buffer.groups.clear();
  }

  /** Splits a group so that no document exceeds 100 metrics nor any metric 100 values. */
  private *documents(group: Group, timestamp: number): Generator<Record<string, unknown>> {
    const pending = [...group.series.entries()].map(([name, s]) => ({ name, unit: s.unit, values: [...s.values] }));
    const dimensionMembers: Record<string, string> = {};
    for (const [key, value] of Object.entries(group.dimensions)) dimensionMembers[key] = redactString(value);
    const propertyMembers: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(this.properties)) {
      propertyMembers[key] = typeof value === 'string' ? redactString(value) : value;
    }
    while (pending.some((p) => p.values.length > 0)) {
      const batch = pending.filter((p) => p.values.length > 0).slice(0, MAX_METRICS_PER_DOCUMENT);
      const members: Record<string, number | number[]> = {};
      for (const metric of batch) {
        const values = metric.values.splice(0, MAX_VALUES_PER_METRIC);
        members[metric.name] = values.length === 1 ? values[0]! : values;
      }
      yield {
        _aws: {
          Timestamp: timestamp,
          CloudWatchMetrics: [
            {
              Namespace: this.namespace,
              Dimensions: [Object.keys(group.dimensions)],
              Metrics: batch.map((m) => ({ Name: m.name, Unit: m.unit })),
            },
          ],
        },
        ...propertyMembers,
        ...dimensionMembers,
        ...members,
      };
    }
  }
}

export interface RecordedMetric {
  readonly name: string;
  readonly value: number;
  readonly unit: MetricUnit;
  readonly dimensions: MetricDimensions;
}

/** Keeps every value in `recorded`, for assertions. Validates names like EmfMetrics does. */
export class MemoryMetrics implements Metrics {
  constructor(
    readonly recorded: RecordedMetric[] = [],
    private readonly dimensions: MetricDimensions = {},
    private readonly flushes: { count: number } = { count: 0 },
  ) {}

  add(name: string, value: number, unit: MetricUnit = 'Count'): void {
    checkName(name, this.dimensions);
    checkValue(name, value);
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
