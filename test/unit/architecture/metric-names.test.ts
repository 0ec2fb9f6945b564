import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ALARMED_METRICS, METRIC_DIMENSIONS } from '../../../contract/metrics';
import { importGraph } from '../../helpers/import-graph';

/**
 * The metric names of docs/monitoring.md, "Metric names", and of the alarms (contract/metrics.ts)
 * against what the code passes to `Metrics.add`. An alarm on a name nobody writes never fires
 * (missing data is "not breaching"), and a name the doc lists but nothing writes sends on-call to
 * look for a graph that stays empty. Read from the source: every `metrics.add(…)` of src and
 * functions, its name a literal, an `ALARMED_METRICS` entry, a ternary of those, or (a variable)
 * a value of a `…_METRIC(S)` table of its file or an `ALARMED_METRICS` name a function of its file returns.
 */

const ROOT = resolve(__dirname, '..', '..', '..');

const sources = ['src', 'functions'].flatMap((dir) =>
  readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => ({ file: `${dir}/${file}`, text: readFileSync(join(ROOT, dir, file), 'utf8') })),
);

const ALARMED_BY_KEY = ALARMED_METRICS as Record<string, { name: string; function: string }>;

/** The names an argument expression can evaluate to, with the table values of its file. */
function namesOf(expression: string, tables: readonly string[]): string[] {
  const literals = [...expression.matchAll(/'([A-Z][A-Za-z]+)'/g)].map((m) => m[1]!);
  const alarmed = [...expression.matchAll(/ALARMED_METRICS\.(\w+)\.name/g)].map((m) => {
    const entry = ALARMED_BY_KEY[m[1]!];
    if (!entry) throw new Error(`ALARMED_METRICS.${m[1]} does not exist`);
    return entry.name;
  });
  const found = [...literals, ...alarmed];
  // An identifier (a refusal's metric, RESULT_METRIC[result]): one of the file's tables.
  return found.length > 0 ? found : [...tables];
}

interface Emission {
  file: string;
  name: string;
  /** Dimension names added by `withDimensions` at the call. */
  dimensions: string[];
}

function emissions(file: string, text: string): Emission[] {
  const tables = [
    ...[...text.matchAll(/const \w+_METRICS?\s*(?::[^=]+)?=\s*\{([^}]*)\}/g)].flatMap((m) => namesOf(m[1]!, [])),
    // A function that picks the name (the webhook's refusalMetric).
    ...[...text.matchAll(/return ALARMED_METRICS\.(\w+)\.name/g)].map((m) => ALARMED_BY_KEY[m[1]!]!.name),
  ];
  const calls = /(?:metrics|withDimensions\(\{([^}]*)\}\))\s*\.add\(\s*([^,]+),/g;
  return [...text.matchAll(calls)].flatMap((m) => {
    const dimensions =
      m[1] === undefined
        ? []
        : [...m[1].matchAll(/\[METRIC_DIMENSIONS\.(\w+)\]|(\w+):/g)].map((d) =>
            d[1] !== undefined ? METRIC_DIMENSIONS[d[1] as keyof typeof METRIC_DIMENSIONS] : d[2]!,
          );
    return [...new Set(namesOf(m[2]!, tables))].map((name) => ({ file, name, dimensions }));
  });
}

const EMITTED = sources.flatMap(({ file, text }) => emissions(file, text));

/** docs/monitoring.md's "Metric names" table: each row's backticked metric names, its dimensions cell. */
function documentedMetrics(): { names: string[]; dimensions: string }[] {
  const doc = readFileSync(join(ROOT, 'docs', 'monitoring.md'), 'utf8');
  const lines = doc.slice(doc.indexOf('### Metric names')).split('\n');
  const header = lines.findIndex((line) => line.startsWith('| Metric |'));
  const rows: { names: string[]; dimensions: string }[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [metric, dimensions] = line.slice(1).split(' | ');
    // `Name` (+ `Dimension`): the parenthesis names a dimension, not a metric.
    rows.push({
      names: [...metric!.replace(/\(\+[^)]*\)/g, '').matchAll(/`(\w+)`/g)].map((m) => m[1]!),
      dimensions: `${metric} ${dimensions}`,
    });
  }
  return rows;
}

const DOCUMENTED = documentedMetrics();

describe('metric names', () => {
  it('the source scan finds the emissions (not vacuous)', () => {
    expect(EMITTED.length).toBeGreaterThan(40);
    expect(EMITTED).toContainEqual({ file: 'src/core/health/check-health.ts', name: 'ProbeFailed', dimensions: ['Probe'] });
    // Through RESULT_METRIC and the webhook's refusal tables.
    expect(EMITTED.map((e) => e.name)).toEqual(expect.arrayContaining(['TokenLostRace', 'WebhookReplayed', 'WebhookRejected']));
  });

  it('docs/monitoring.md lists exactly the metrics the code emits', () => {
    const documented = new Set(DOCUMENTED.flatMap((row) => row.names));
    const emitted = new Set(EMITTED.map((e) => e.name));
    expect([...emitted].filter((name) => !documented.has(name)).sort()).toEqual([]);
    expect([...documented].filter((name) => !emitted.has(name)).sort()).toEqual([]);
  });

  it('each dimension a call adds is in its metric’s row', () => {
    const missing = EMITTED.flatMap((e) =>
      e.dimensions
        .filter((dimension) => !DOCUMENTED.some((row) => row.names.includes(e.name) && row.dimensions.includes(`${dimension}`)))
        .map((dimension) => `${e.name} + ${dimension} (${e.file})`),
    );
    expect(missing).toEqual([]);
    expect(
      EMITTED.filter((e) => e.dimensions.length > 0)
        .map((e) => `${e.name}+${e.dimensions.join()}`)
        .sort(),
    ).toEqual(['ProbeFailed+Probe', 'RotationChecksSkipped+Reason', 'RotationFindings+Finding']);
  });

  it('an alarmed metric is written by name through ALARMED_METRICS, never as a bare literal', () => {
    const alarmedNames = new Set<string>(Object.values(ALARMED_METRICS).map((m) => m.name));
    const bare = sources.flatMap(({ file, text }) =>
      [...text.matchAll(/(?:metrics|withDimensions\(\{[^}]*\}\))\s*\.add\(\s*([^,]+),/g)]
        .flatMap((m) => [...m[1]!.matchAll(/'(\w+)'/g)].map((l) => l[1]!))
        .filter((name) => alarmedNames.has(name))
        .map((name) => `${file}: '${name}'`),
    );
    expect(bare).toEqual([]);
  });

  describe('each alarmed metric is emitted by the function its alarm names', () => {
    const graph = importGraph(ROOT, ['src', 'functions', 'contract']);
    /** Every file the handler loads, itself included. */
    const reach = (start: string) => {
      const seen = new Set([start]);
      const queue = [start];
      while (queue.length > 0)
        for (const next of graph.edges.get(queue.pop()!) ?? []) if (!seen.has(next) && seen.add(next)) queue.push(next);
      return seen;
    };

    it.each(Object.entries(ALARMED_METRICS))('%s', (_key, metric) => {
      const handler = `functions/${metric.function}/handler.ts`;
      expect(graph.edges.has(handler)).toBe(true);
      const loaded = reach(handler);
      const writers = EMITTED.filter((e) => e.name === metric.name).map((e) => e.file);
      expect(writers.length).toBeGreaterThan(0);
      expect(writers.filter((file) => loaded.has(file))).not.toEqual([]);
    });
  });
});
