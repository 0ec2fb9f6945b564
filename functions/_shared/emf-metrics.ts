import { systemClock, type Clock } from '../../src/core/shared/clock';
import {
  checkMetric,
  mergeDimensions,
  METRICS_NAMESPACE,
  type MetricDimensions,
  type Metrics,
  type MetricUnit,
} from '../../src/core/shared/metrics';
import { redactString } from '../../src/core/shared/redact';

/*
 * Our own writer of CloudWatch's embedded metric format, kept for the one function whose bundle
 * has no room for Powertools Metrics (export-period: 291 KB of a 300 KB bound before Powertools,
 * 329 KB with it; BENCHMARKS.md, "Cold start"). Every other function uses PowertoolsMetrics, and
 * both are held to the same tests (test/unit/functions/powertools-metrics.test.ts).
 */

// Limits of the embedded metric format.
const MAX_METRICS_PER_DOCUMENT = 100;
const MAX_VALUES_PER_METRIC = 100;

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
    checkMetric(name, value, this.dimensions, this.properties);
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
