import { z } from 'zod';
import { EmfMetrics } from '../../../functions/_shared/emf-metrics';
import { PowertoolsMetrics } from '../../../functions/_shared/powertools-metrics';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryMetrics, METRICS_NAMESPACE, MetricsError, noMetrics } from '../../../src/core/shared/metrics';
import { captureStdout } from '../../helpers/lambda';

/**
 * The embedded metric format as CloudWatch documents it: `_aws` with a millisecond Timestamp and
 * metric directives; each directive's dimension keys and metric names are root members, metrics
 * being a number or an array of at most 100 numbers.
 */
const emfDocument = z
  .looseObject({
    _aws: z.strictObject({
      Timestamp: z.number().int().nonnegative(),
      CloudWatchMetrics: z
        .array(
          z.strictObject({
            Namespace: z.string().min(1).max(255),
            Dimensions: z.array(z.array(z.string()).max(30)).min(1),
            Metrics: z
              .array(z.strictObject({ Name: z.string().min(1).max(255), Unit: z.string().optional() }))
              .min(1)
              .max(100),
          }),
        )
        .length(1),
    }),
  })
  .superRefine((doc, ctx) => {
    const directive = doc._aws.CloudWatchMetrics[0]!;
    for (const key of directive.Dimensions.flat()) {
      if (typeof doc[key] !== 'string') ctx.addIssue({ code: 'custom', message: `dimension ${key} missing` });
    }
    for (const { Name } of directive.Metrics) {
      const value = doc[Name];
      const ok = typeof value === 'number' || (Array.isArray(value) && value.length <= 100 && value.every((v) => typeof v === 'number'));
      if (!ok) ctx.addIssue({ code: 'custom', message: `metric ${Name} has no valid value` });
    }
  });

let written: string[] = [];
let write: jest.SpyInstance | undefined;
beforeEach(() => {
  written = [];
  write = captureStdout(written);
});
afterEach(() => write?.mockRestore());

type Options = ConstructorParameters<typeof PowertoolsMetrics>[0] & ConstructorParameters<typeof EmfMetrics>[0];
type Implementation = new (options: Options) => PowertoolsMetrics | EmfMetrics;

function emf(Impl: Implementation, options: Options = {}) {
  // A timestamp within CloudWatch's window (14 days back), which Powertools checks.
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  const metrics = new Impl({ clock, ...options });
  // Powertools writes through a Console on process.stdout: one write per document, newline-terminated.
  const lines = written;
  const documents = () => lines.map((line) => emfDocument.parse(JSON.parse(line)));
  return { metrics, lines, documents, clock };
}

/**
 * Powertools Metrics (functions/_shared/powertools-metrics.ts) behind our port, and our own EMF
 * writer kept for export-period (functions/_shared/emf-metrics.ts), held to the same tests: the
 * document shape the alarms in lib/ depend on (namespace, metric names, exactly our dimensions
 * and no `service` dimension of Powertools' own), asserted on what reaches stdout.
 */
describe.each([
  ['PowertoolsMetrics', PowertoolsMetrics as Implementation],
  ['EmfMetrics', EmfMetrics as Implementation],
])('%s', (_name, Impl) => {
  it('writes one EMF document per flush with dimensions, units and values as root members', () => {
    const { metrics, documents, clock } = emf(Impl, { dimensions: { Stage: 'prod', Function: 'token-worker' } });
    metrics.add('TokensRefreshed', 3);
    metrics.add('RefreshLatency', 120, 'Milliseconds');
    metrics.add('RefreshLatency', 80, 'Milliseconds');
    metrics.flush();

    expect(documents()).toEqual([
      {
        _aws: {
          Timestamp: clock.now(),
          CloudWatchMetrics: [
            {
              Namespace: METRICS_NAMESPACE,
              Dimensions: [['Stage', 'Function']],
              Metrics: [
                { Name: 'TokensRefreshed', Unit: 'Count' },
                { Name: 'RefreshLatency', Unit: 'Milliseconds' },
              ],
            },
          ],
        },
        Stage: 'prod',
        Function: 'token-worker',
        TokensRefreshed: 3,
        RefreshLatency: [120, 80],
      },
    ]);
  });

  it('writes one document per dimension set, and views share one flush', () => {
    const { metrics, documents } = emf(Impl, { dimensions: { Stage: 'prod' } });
    metrics.add('Runs', 1);
    metrics.withDimensions({ Company: 'acme' }).add('ExportFailed', 1);
    metrics.withDimensions({ Company: 'umbrella' }).add('ExportFailed', 1);
    metrics.withDimensions({ Company: 'acme' }).add('ExportFailed', 1);
    metrics.flush();

    const docs = documents();
    expect(docs).toHaveLength(3);
    expect(docs.map((d) => [d._aws.CloudWatchMetrics[0]!.Dimensions, d.Company ?? null, d.ExportFailed ?? d.Runs])).toEqual([
      [[['Stage']], null, 1],
      [[['Stage', 'Company']], 'acme', [1, 1]],
      [[['Stage', 'Company']], 'umbrella', 1],
    ]);
  });

  it('splits at 100 metrics per document and 100 values per metric, each document with the ids', () => {
    const { metrics, documents } = emf(Impl, { dimensions: { Stage: 'prod' }, properties: { correlationId: 'evt-9' } });
    for (let i = 0; i < 150; i += 1) metrics.add(`M${i}`, i);
    for (let i = 0; i < 250; i += 1) metrics.add('Latency', i, 'Milliseconds');
    metrics.flush();

    const docs = documents();
    const names = docs.flatMap((d) => d._aws.CloudWatchMetrics[0]!.Metrics.map((m) => m.Name));
    expect(new Set(names).size).toBe(151);
    const latencies = docs.flatMap((d) => (d.Latency === undefined ? [] : ([] as number[]).concat(d.Latency as number | number[])));
    expect(latencies).toEqual(Array.from({ length: 250 }, (_, i) => i));
    for (const d of docs) expect(d._aws.CloudWatchMetrics[0]!.Metrics.length).toBeLessThanOrEqual(100);
    // Powertools publishes by itself when a document is full; ours must still carry the ids.
    expect(docs.length).toBeGreaterThan(2);
    for (const d of docs) expect(d).toMatchObject({ Stage: 'prod', correlationId: 'evt-9' });
  });

  it('keeps the unit a name was first recorded with, where Powertools would throw', () => {
    const { metrics, documents } = emf(Impl, { dimensions: { Stage: 'prod' } });
    metrics.add('Latency', 5, 'Milliseconds');
    metrics.add('Latency', 7, 'Seconds');
    metrics.flush();
    expect(documents()[0]!._aws.CloudWatchMetrics[0]!.Metrics).toEqual([{ Name: 'Latency', Unit: 'Milliseconds' }]);
  });

  it('writes nothing when nothing was recorded, and nothing twice', () => {
    const { metrics, lines } = emf(Impl);
    metrics.flush();
    expect(lines).toEqual([]);
    metrics.add('Runs', 1);
    metrics.flush();
    metrics.flush();
    expect(lines).toHaveLength(1);
  });

  it('adds properties as searchable root members, redacted', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJlLXZhbHVl';
    const { metrics, documents } = emf(Impl, {
      dimensions: { Stage: 'prod', Note: `key ${jwt}` },
      properties: { correlationId: 'evt-1', note: `token ${jwt}` },
    });
    metrics.add('Runs', 1);
    metrics.flush();
    const [doc] = documents();
    expect(doc!.correlationId).toBe('evt-1');
    expect(JSON.stringify(doc)).not.toContain(jwt);
    expect(doc!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['Stage', 'Note']]);
  });

  it.each([
    ['an empty name', (m: PowertoolsMetrics | EmfMetrics) => m.add('', 1)],
    ['a name starting with a colon', (m: PowertoolsMetrics | EmfMetrics) => m.add(':x', 1)],
    ['a value that is not finite', (m: PowertoolsMetrics | EmfMetrics) => m.add('Ratio', Number.NaN)],
    ['a name that is also a dimension', (m: PowertoolsMetrics | EmfMetrics) => m.add('Stage', 1)],
    ['a name that is also a property', (m: PowertoolsMetrics | EmfMetrics) => m.add('correlationId', 1)],
    ['an empty dimension value', (m: PowertoolsMetrics | EmfMetrics) => m.withDimensions({ Company: '' })],
    [
      'more than 30 dimensions',
      (m: PowertoolsMetrics | EmfMetrics) => m.withDimensions(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`D${i}`, 'x']))),
    ],
  ])('refuses %s', (_what, call) => {
    const { metrics } = emf(Impl, { dimensions: { Stage: 'prod' }, properties: { correlationId: 'c' } });
    expect(() => call(metrics)).toThrow(MetricsError);
  });
});

describe('MemoryMetrics', () => {
  it('records values with their dimensions and sums them', () => {
    const metrics = new MemoryMetrics();
    metrics.add('ProbeFailed', 1);
    metrics.withDimensions({ Probe: 'service' }).add('ProbeFailed', 2);
    metrics.withDimensions({ Probe: 'secret' }).add('ProbeFailed', 4);
    metrics.withDimensions({ Probe: 'service' }).flush();

    expect(metrics.sum('ProbeFailed')).toBe(7);
    expect(metrics.sum('ProbeFailed', { Probe: 'service' })).toBe(2);
    expect(metrics.flushCount).toBe(1);
    expect(() => metrics.add('Probe', Number.POSITIVE_INFINITY)).toThrow(MetricsError);
  });

  it('noMetrics accepts everything and keeps nothing', () => {
    expect(() => noMetrics.withDimensions({ A: 'b' }).add('X', 1)).not.toThrow();
    expect(() => noMetrics.flush()).not.toThrow();
  });
});
