import { Metrics as PowertoolsEmf } from '@aws-lambda-powertools/metrics';
import type { MetricUnit as PowertoolsUnit } from '@aws-lambda-powertools/metrics/types';
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

export interface PowertoolsMetricsOptions {
  /**
   * CloudWatch namespace; the alarms and dashboards in lib/ name the same one.
   * @default METRICS_NAMESPACE
   */
  namespace?: string;
  /**
   * Dimensions of every metric, e.g. `{ Stage: 'production', Function: 'refresh-tokens' }`.
   * @default {}
   */
  dimensions?: MetricDimensions;
  /**
   * Root members of every document (Powertools metadata): searchable in Logs Insights, not
   * dimensions (no cost per distinct value), e.g. the correlation id.
   * @default {}
   */
  properties?: Readonly<Record<string, string | number | boolean>>;
  /** @default systemClock */
  clock?: Clock;
}

/** One dimension set: a Powertools instance and the unit each of its names took first. */
interface Group {
  emf: PowertoolsEmf;
  units: Map<string, MetricUnit>;
}

/**
 * Our Metrics port on Powertools Metrics, which writes the CloudWatch embedded metric format to
 * stdout (through its own Console on the raw stream, so Lambda's JSON log format does not wrap
 * the document and CloudWatch still finds `_aws` at the root).
 *
 * Powertools keeps one dimension set per instance and always adds a `service` dimension; our
 * alarms select on exactly `Stage` and `Function` (plus e.g. `Probe` from `withDimensions`), and
 * a metric with one more dimension is a different metric to CloudWatch. So each dimension set
 * gets its own instance whose default dimensions are cleared and set to ours, and `flush`
 * publishes them all.
 */
export class PowertoolsMetrics implements Metrics {
  private readonly namespace: string;
  private readonly dimensions: MetricDimensions;
  private readonly properties: Readonly<Record<string, string | number | boolean>>;
  private readonly clock: Clock;
  private readonly groups: Map<string, Group>;

  /** `groups` is internal: views made by `withDimensions` share their root's. */
  constructor(options: PowertoolsMetricsOptions = {}, groups: Map<string, Group> = new Map()) {
    this.namespace = options.namespace ?? METRICS_NAMESPACE;
    this.dimensions = mergeDimensions({}, options.dimensions ?? {});
    this.properties = options.properties ?? {};
    this.clock = options.clock ?? systemClock;
    this.groups = groups;
  }

  add(name: string, value: number, unit: MetricUnit = 'Count'): void {
    checkMetric(name, value, this.dimensions, this.properties);
    const group = this.group();
    // Our port lets a name keep its first unit; Powertools would throw on a second one.
    const first = group.units.get(name) ?? unit;
    group.units.set(name, first);
    // Powertools clears metadata after each publish, including the one it makes by itself at 100
    // metrics or 100 values: set it again with every value so that no document lacks the ids.
    for (const [key, property] of Object.entries(this.properties)) {
      group.emf.addMetadata(key, typeof property === 'string' ? redactString(property) : String(property));
    }
    group.emf.addMetric(name, first as PowertoolsUnit, value);
  }

  withDimensions(dimensions: MetricDimensions): Metrics {
    return new PowertoolsMetrics(
      {
        namespace: this.namespace,
        dimensions: mergeDimensions(this.dimensions, dimensions),
        properties: this.properties,
        clock: this.clock,
      },
      this.groups,
    );
  }

  flush(): void {
    const timestamp = this.clock.now();
    for (const { emf } of this.groups.values()) {
      if (!emf.hasStoredMetrics()) continue;
      emf.setTimestamp(timestamp);
      emf.publishStoredMetrics();
    }
  }

  private group(): Group {
    const key = JSON.stringify(Object.entries(this.dimensions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    let group = this.groups.get(key);
    if (!group) {
      const emf = new PowertoolsEmf({ namespace: this.namespace });
      emf.clearDefaultDimensions();
      const redacted: Record<string, string> = {};
      for (const [dimension, value] of Object.entries(this.dimensions)) redacted[dimension] = redactString(value);
      if (Object.keys(redacted).length > 0) emf.setDefaultDimensions(redacted);
      group = { emf, units: new Map() };
      this.groups.set(key, group);
    }
    return group;
  }
}
