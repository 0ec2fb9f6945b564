import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import type { IConstruct } from 'constructs';
import { METRIC_DIMENSIONS, METRICS_NAMESPACE } from '../../contract/metrics';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { alarmTitle } from '../../lib/constructs/monitoring';
import { synthAcctopsStack } from '../helpers/cdk';

/**
 * docs/monitoring.md, "Alarms", is what on-call reads when paged: every alarm the stack makes must
 * be a row there, with the metric, statistic, period and threshold it really has and a step that
 * resolves it, and every row must be an alarm the stack makes. Its "Finding the row" table maps the
 * alarm's name in the notification to the row.
 */

const ROOT = join(__dirname, '..', '..');
const MONITORING = readFileSync(join(ROOT, 'docs', 'monitoring.md'), 'utf8');
const RUNBOOKS = readFileSync(join(ROOT, 'docs', 'runbooks.md'), 'utf8');

/** GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
const RUNBOOK_ANCHORS = new Set(
  RUNBOOKS.split('\n')
    .filter((line) => /^#{2,3} /.test(line))
    .map((line) => anchorOf(line.replace(/^#+ /, '').trim())),
);

/** The table rows (cells, trimmed) that follow `heading`'s header line `header`. */
function tableAfter(text: string, heading: string, header: string): string[][] {
  const start = text.indexOf(heading);
  if (start < 0) throw new Error(`${heading} not found`);
  const lines = text.slice(start).split('\n');
  const at = lines.findIndex((line) => line.startsWith(header));
  if (at < 0) throw new Error(`${header} not found after ${heading}`);
  const rows: string[][] = [];
  for (const line of lines.slice(at + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

interface DocumentedAlarm {
  row: string;
  name: string;
  namespace: string;
  metricName: string;
  /** The function the metric is of (Acctops `Function`, or Lambda's FunctionName), when the row names one. */
  function?: string;
  probe?: string;
  statistic: string;
  period: number;
  /** The number, or the default of the setting the doc names (`setting`). */
  threshold: number;
  setting?: string;
  evaluationPeriods: number;
  datapointsToAlarm: number;
  action: string;
}

const pascal = (kebab: string) => kebab.replace(/(^|-)([a-z0-9])/g, (_m, _dash: string, c: string) => c.toUpperCase());

function parseRow([row, alarm, metric, firesAt, , action]: string[]): DocumentedAlarm[] {
  const where = `${row} ${alarm}`;
  const stat = /\((?:[^()]*;\s*)?(sum|max),\s*(\d+)\s*(min|h)\)/.exec(metric!);
  if (!stat) throw new Error(`${where}: no (statistic, period) in ${metric}`);
  const common = {
    row: row!,
    statistic: stat[1] === 'sum' ? 'Sum' : 'Maximum',
    period: Number(stat[2]) * (stat[3] === 'h' ? 3600 : 60),
    action: action!,
  };
  const fires = /^≥ (\d+|`[^`]+`)/.exec(firesAt!);
  if (!fires) throw new Error(`${where}: no threshold in ${firesAt}`);
  const setting = /^\d+$/.test(fires[1]!) ? undefined : fires[1]!.slice(1, -1);
  const byDefault = /default (\d+)/.exec(firesAt!)?.[1];
  if (setting !== undefined && byDefault === undefined) throw new Error(`${where}: the setting ${setting} has no default in ${firesAt}`);
  const threshold = Number(setting === undefined ? fires[1] : byDefault);
  const ofN = /in (\d+) of (\d+)/.exec(firesAt!);
  const inARow = /(\d+) (?:runs|periods) in a row/.exec(firesAt!);
  const evaluationPeriods = ofN ? Number(ofN[2]) : inARow ? Number(inARow[1]) : 1;
  const datapointsToAlarm = ofN ? Number(ofN[1]) : evaluationPeriods;
  const thresholds = { threshold, ...(setting === undefined ? {} : { setting }), evaluationPeriods, datapointsToAlarm };

  const listed = /^`<Function>Errors` for (.+)$/.exec(alarm!);
  if (listed) {
    return listed[1]!.split(', ').map((fn) => ({
      ...common,
      ...thresholds,
      name: `${pascal(fn)}Errors`,
      namespace: 'AWS/Lambda',
      metricName: 'Errors',
      function: fn,
    }));
  }
  const name = /^`([^`]+)`$/.exec(alarm!)?.[1];
  if (!name) throw new Error(`${where}: the alarm is not one backticked name`);
  const of = / of ([a-z-]+)/.exec(metric!)?.[1];
  const lambda = /^Lambda `(\w+)`/.exec(metric!);
  if (lambda) return [{ ...common, ...thresholds, name, namespace: 'AWS/Lambda', metricName: lambda[1]!, function: of }];
  if (metric!.startsWith('SQS ')) {
    return [{ ...common, ...thresholds, name, namespace: 'AWS/SQS', metricName: 'ApproximateNumberOfMessagesVisible' }];
  }
  const own = /^`(\w+)`/.exec(metric!);
  if (!own) throw new Error(`${where}: no metric in ${metric}`);
  const probe = /Probe `([^`]+)`/.exec(metric!)?.[1];
  return [{ ...common, ...thresholds, name, namespace: METRICS_NAMESPACE, metricName: own[1]!, function: of, probe }];
}

const DOCUMENTED = tableAfter(MONITORING, '### Alarms', '| Row | Alarm |').flatMap(parseRow);
const PREFIXES = new Map(
  tableAfter(MONITORING, '### Alarms', '| Row | Name prefix |').flatMap(([rows, prefix]) =>
    rows!.split(', ').map((row) => [row, prefix === '(none)' ? '' : /^`(\w+)`$/.exec(prefix!)![1]!] as const),
  ),
);

type Properties = Record<string, unknown> & { Dimensions?: { Name: string; Value: unknown }[] };

describe('docs/monitoring.md, "Alarms", against the synthesized stack', () => {
  const { stack, template } = synthAcctopsStack();
  const resources = template.findResources('AWS::CloudWatch::Alarm') as Record<string, { Properties: Properties }>;
  const logicalId = (construct: IConstruct) => {
    const element = construct.node.defaultChild as CfnElement;
    return element.stack.getLogicalId(element);
  };
  const functionsById = new Map(
    stack.node
      .findAll()
      .filter((c): c is AcctopsFunction => c instanceof AcctopsFunction)
      .map((fn) => [logicalId(fn), fn.handlerDir]),
  );
  const synthesized = stack.monitoring.rows.flatMap(({ title, alarms }) =>
    alarms.map((alarm: Alarm) => ({ row: title, name: alarmTitle(alarm), id: logicalId(alarm) })),
  );
  const key = (a: { row: string; name: string }) => `${a.row}: ${a.name}`;

  it('lists exactly the alarms of the stack, each in its dashboard row', () => {
    expect(synthesized).toHaveLength(Object.keys(resources).length);
    expect(DOCUMENTED.map(key).sort()).toEqual(synthesized.map(key).sort());
  });

  it('each alarm watches the metric, statistic, period and threshold its row says', () => {
    const mismatches = synthesized.flatMap((alarm) => {
      const doc = DOCUMENTED.find((d) => key(d) === key(alarm))!;
      const p = resources[alarm.id]!.Properties;
      const dims = Object.fromEntries((p.Dimensions ?? []).map((d) => [d.Name, d.Value]));
      const actual = {
        namespace: p.Namespace,
        metricName: p.MetricName,
        statistic: p.Statistic,
        period: p.Period,
        threshold: p.Threshold,
        evaluationPeriods: p.EvaluationPeriods,
        datapointsToAlarm: p.DatapointsToAlarm ?? p.EvaluationPeriods,
        // An alarm with a unit sees only values sent with that unit: ours name none, so every unit counts.
        unit: p.Unit,
        function:
          p.Namespace === 'AWS/Lambda'
            ? functionsById.get((dims.FunctionName as { Ref: string }).Ref)
            : p.Namespace === METRICS_NAMESPACE
              ? dims[METRIC_DIMENSIONS.function]
              : undefined,
        probe: dims[METRIC_DIMENSIONS.probe],
        dimensions: p.Namespace === METRICS_NAMESPACE ? Object.keys(dims).sort() : undefined,
      };
      const expected = {
        namespace: doc.namespace,
        metricName: doc.metricName,
        statistic: doc.statistic,
        period: doc.period,
        threshold: doc.threshold,
        evaluationPeriods: doc.evaluationPeriods,
        datapointsToAlarm: doc.datapointsToAlarm,
        unit: undefined,
        // A row that names no function: the alarm's own metric decides (the queues, ProbeFailed's check-health).
        function: doc.function ?? actual.function,
        probe: doc.probe,
        dimensions:
          doc.namespace === METRICS_NAMESPACE
            ? [METRIC_DIMENSIONS.function, ...(doc.probe ? [METRIC_DIMENSIONS.probe] : []), METRIC_DIMENSIONS.stage].sort()
            : undefined,
      };
      return JSON.stringify(actual) === JSON.stringify(expected) ? [] : [{ alarm: key(alarm), actual, expected }];
    });
    expect(mismatches).toEqual([]);
  });

  it("a threshold the doc names as a setting is the setting's default (the stack passes no tuning)", () => {
    const named = DOCUMENTED.filter((d) => d.setting !== undefined);
    expect(named.map((d) => [key(d), d.setting, d.threshold])).toEqual([['Tokens: RefreshFailures', 'deferredAlarmThreshold', 10]]);
    const source = readFileSync(join(ROOT, 'lib', 'constructs', 'token-lifecycle.ts'), 'utf8');
    expect(source).toMatch(/@default 10\s*\*\/\s*readonly deferredAlarmThreshold\?: number;/);
  });

  it('each row says what resolves it: a runbook, an acctops or aws command', () => {
    const vague = DOCUMENTED.filter((d) => !/\]\(runbooks\.md#[^)]+\)|`acctops [^`]+`|`aws [^`]+`/.test(d.action)).map(key);
    expect(vague).toEqual([]);
    const links = DOCUMENTED.flatMap((d) => [...d.action.matchAll(/\]\(runbooks\.md#([^)]+)\)/g)].map((m) => m[1]!));
    expect(links.length).toBeGreaterThan(5);
    expect([...new Set(links)].filter((anchor) => !RUNBOOK_ANCHORS.has(anchor))).toEqual([]);
  });

  it("each alarm's description, which the notification carries, names a next step", () => {
    const step = /[Rr]unbook:? "[^"]+"|`acctops [^`]+`|\/acctops\/test\/[a-z-]+|docs\/monitoring\.md, "Alarms"/;
    const bare = Object.entries(resources)
      .filter(([, r]) => !step.test(String(r.Properties.AlarmDescription)))
      .map(([id, r]) => `${id}: ${String(r.Properties.AlarmDescription)}`);
    expect(bare).toEqual([]);
  });

  it('the name prefix table finds the row of every alarm from its name in CloudWatch', () => {
    // Unnamed alarms are named by CloudFormation `<stack>-<logical id>-<suffix>`; the logical id begins with the path.
    const unmatched = synthesized.filter(
      (alarm) => !new RegExp(`^${PREFIXES.get(alarm.row) ?? '?'}${alarm.name}Alarm[0-9A-F]{8}$`).test(alarm.id),
    );
    expect(unmatched).toEqual([]);
    expect([...PREFIXES.keys()].sort()).toEqual([...new Set(synthesized.map((a) => a.row))].sort());
  });

  it('every alarm docs/runbooks.md names by name is one of the table (or its name in CloudWatch)', () => {
    const known = new Set([...DOCUMENTED.map((d) => d.name), ...synthesized.map((a) => `${PREFIXES.get(a.row) ?? ''}${a.name}Alarm`)]);
    const named = [...RUNBOOKS.matchAll(/`(\w+)` alarm\b|\*\*Alarm:\*\* `(\w+)`/g)].map((m) => m[1] ?? m[2]!);
    expect(named.length).toBeGreaterThanOrEqual(6);
    expect(named.filter((name) => !known.has(name))).toEqual([]);
  });

  it('the parser reads what it is given', () => {
    expect(parseRow(['R', '`X`', '`ProbeFailed`, Probe `p` (sum, 5 min)', '≥ 1 in 2 of 3', 'two good runs', '`acctops doctor`'])).toEqual([
      expect.objectContaining({ metricName: 'ProbeFailed', probe: 'p', period: 300, evaluationPeriods: 3, datapointsToAlarm: 2 }),
    ]);
    expect(
      parseRow(['R', '`<Function>Errors` for a-b, c', 'Lambda `Errors` (sum, 1 h)', '≥ 1', 'x', 'y'])!.map((d) => [
        d.name,
        d.function,
        d.period,
      ]),
    ).toEqual([
      ['ABErrors', 'a-b', 3600],
      ['CErrors', 'c', 3600],
    ]);
    expect(
      parseRow(['R', '`Z`', '`M` of f (sum, 5 min)', '≥ `s` (`T`, default 7) per 5 min, 3 periods in a row', 'x', 'y'])[0],
    ).toMatchObject({
      threshold: 7,
      setting: 's',
      evaluationPeriods: 3,
      function: 'f',
    });
    expect(parseRow(['R', '`Y`', 'SQS depth (FIFO; max, 5 min)', '≥ 3 in 2 runs in a row', 'x', 'y'])[0]).toMatchObject({
      namespace: 'AWS/SQS',
      statistic: 'Maximum',
      threshold: 3,
      evaluationPeriods: 2,
      datapointsToAlarm: 2,
    });
    expect(anchorOf('Change the institution secret')).toBe('change-the-institution-secret');
  });
});
