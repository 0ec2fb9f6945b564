import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  AlarmWidget,
  Dashboard,
  GraphWidget,
  Metric,
  TextWidget,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { ContextAttribute, Schedule, ScheduleExpression, ScheduleTargetInput, type IScheduleTarget } from 'aws-cdk-lib/aws-scheduler';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct, type IConstruct } from 'constructs';
import { ALARMED_METRICS, HEALTH_PROBES, METRIC_DIMENSIONS } from '../../contract/metrics';
import { AcctopsFunction } from './acctops-function';
import { acctopsAlarm, acctopsMetric } from './alarms';

/** One row of the dashboard: a capability's title and the construct whose alarms it shows. */
export interface MonitoringRow {
  readonly title: string;
  readonly scope: IConstruct;
}

export interface MonitoringProps {
  readonly stageName: string;
  /** Receives every alarm of the stack, as alarm and as OK action. */
  readonly alarmTopic: ITopic;
  /**
   * An existing topic (an organisation-wide ops topic) that every alarm of the stack also notifies,
   * as alarm and as OK action.
   * @default - the alarm topic only
   */
  readonly opsTopicArn?: string;
  /** Run on `healthCheckSchedule`; its failed probes are alarmed. */
  readonly checkHealth: AcctopsFunction;
  /** The capabilities' rows, in order; each alarm of the stack belongs to one of them or to Monitoring. */
  readonly rows: readonly MonitoringRow[];
  /**
   * When check-health runs by itself (it also runs on every `acctops doctor`).
   * @default 'rate(5 minutes)'
   */
  readonly healthCheckSchedule?: string;
}

/** Lambda's `Errors` and `Throttles` are counted per 5 minutes. */
const FUNCTION_PERIOD = Duration.minutes(5);

/**
 * The stack's monitoring, built from what the capabilities already made (docs/monitoring.md,
 * "Alarms and notifications"). Create it LAST in the stack: it walks the stack as it is at that moment.
 *
 * - Health: check-health on a schedule, and an alarm per probe (`ProbeFailed`): the doctor's
 *   "secrets readable, service reachable" without anyone running the doctor.
 * - Functions: every AcctopsFunction gets an `Errors` alarm unless its capability already alarms
 *   on exactly that metric (the planners, the rotation functions, the doctor), and a `Throttles`
 *   alarm when it has reserved concurrency (the only case where throttling is a configured
 *   outcome rather than the account running out).
 * - Notifications: every alarm of the stack notifies the one topic when it fires (the
 *   capabilities add that) and when it clears (added here, so no alarm can miss it).
 * - The dashboard: the alarms' states, then one row per capability made of the alarms themselves
 *   (each widget draws its alarm's own metric and threshold), then the functions' errors.
 */
export class Monitoring extends Construct {
  readonly dashboard: Dashboard;
  readonly healthSchedule: Schedule;
  readonly healthAlarms: Record<keyof typeof HEALTH_PROBES, Alarm>;
  /** The `Errors` alarm of every function, by handlerDir: made here or by the function's capability. */
  readonly errorsAlarms: ReadonlyMap<string, Alarm>;
  /** The `Throttles` alarm of every function with reserved concurrency, by handlerDir. */
  readonly throttlesAlarms: ReadonlyMap<string, Alarm>;
  /** Every alarm of the stack, in dashboard order. */
  readonly alarms: readonly Alarm[];
  /** The dashboard's rows with their alarms, the last one `Functions`: docs/monitoring.md's table, "Alarms", lists them so. */
  readonly rows: readonly { readonly title: string; readonly alarms: readonly Alarm[] }[];
  private readonly action: SnsAction;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.action = new SnsAction(props.alarmTopic);
    const existing = alarmsUnder(stack);

    this.healthSchedule = new Schedule(this, 'HealthSchedule', {
      description: `acctops ${props.stageName}: runs the health probes`,
      schedule: ScheduleExpression.expression(props.healthCheckSchedule ?? 'rate(5 minutes)'),
      target: this.healthTarget(props.checkHealth),
    });
    const probeMetric = (probe: string) =>
      acctopsMetric(props.stageName, ALARMED_METRICS.probeFailed, {
        statistic: 'Sum',
        period: Duration.minutes(5),
        dimensions: { [METRIC_DIMENSIONS.probe]: probe },
      });
    // Two of three runs: one lost request to the service is not worth a page; ten minutes of failures are.
    this.healthAlarms = {
      institutionCredential: this.alarm('InstitutionCredentialProbeAlarm', {
        description:
          'check-health cannot read the institution credential (missing, unparsable, or not decryptable): every token refresh fails. ' +
          'Runbook: "Change the institution secret".',
        metric: probeMetric(HEALTH_PROBES.institutionCredential),
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      }),
      service: this.alarm('ServiceProbeAlarm', {
        description:
          'check-health cannot reach the Accounting API with the institution credential (down, unreachable, or the credential refused). ' +
          '`acctops doctor` shows the error; a refused credential: runbook "Change the institution secret".',
        metric: probeMetric(HEALTH_PROBES.service),
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      }),
    };

    const errors = new Map<string, Alarm>();
    const throttles = new Map<string, Alarm>();
    const functions = stack.node.findAll().filter((c): c is AcctopsFunction => c instanceof AcctopsFunction);
    for (const fn of functions) {
      const own = existing.find((alarm) => isMetricOf(alarm.metric, fn, 'Errors'));
      errors.set(
        fn.handlerDir,
        own ??
          this.alarm(`${pascal(fn.handlerDir)}ErrorsAlarm`, {
            description:
              `${fn.handlerDir} failed: an unhandled error, a timeout or a failed cold start (${fn.logGroupName} has the "invocation failed" line). ` +
              'If an acctops command that invokes it has just failed, this is that failure.',
            metric: fn.metricErrors({ period: FUNCTION_PERIOD, statistic: 'Sum' }),
          }),
      );
      if (fn.reservedConcurrency !== undefined) {
        throttles.set(
          fn.handlerDir,
          this.alarm(`${pascal(fn.handlerDir)}ThrottlesAlarm`, {
            description:
              `${fn.handlerDir} was throttled at its reserved concurrency (${fn.reservedConcurrency}): callers were refused. ` +
              'Raise it (docs/monitoring.md, "Alarms", names the stage setting), or find who calls it this often.',
            metric: fn.metricThrottles({ period: FUNCTION_PERIOD, statistic: 'Sum' }),
          }),
        );
      }
    }
    this.errorsAlarms = errors;
    this.throttlesAlarms = throttles;

    for (const alarm of existing) alarm.addOkAction(this.action);

    const functionAlarms = [...new Set([...errors.values(), ...throttles.values()])];
    const rows = [
      ...props.rows.map((row) => ({ title: row.title, alarms: alarmsUnder(row.scope) })),
      { title: 'Health', alarms: Object.values(this.healthAlarms) },
    ];
    const placed = new Set([...rows.flatMap((r) => r.alarms), ...functionAlarms]);
    const homeless = alarmsUnder(stack).filter((alarm) => !placed.has(alarm));
    if (homeless.length > 0) {
      throw new Error(
        `alarms outside every dashboard row: ${homeless.map((a) => a.node.path).join(', ')}; add their construct to Monitoring's rows`,
      );
    }
    this.alarms = [...new Set([...rows.flatMap((r) => r.alarms), ...functionAlarms])];
    this.rows = [...rows, { title: 'Functions', alarms: functionAlarms.filter((a) => !rows.some((r) => r.alarms.includes(a))) }];
    if (props.opsTopicArn !== undefined) {
      const ops = new SnsAction(Topic.fromTopicArn(this, 'OpsTopic', props.opsTopicArn));
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(ops);
        alarm.addOkAction(ops);
      }
    }

    this.dashboard = new Dashboard(this, 'Dashboard', {
      // Dashboard names are unique per account, not per region.
      dashboardName: `${stack.stackName}-${stack.region}`,
      defaultInterval: Duration.days(1),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# acctops ${props.stageName}\nEvery alarm notifies the alarm topic when it fires and when it clears. What each one means and what to do: docs/monitoring.md, "Alarms".`,
        width: 24,
        height: 2,
      }),
      new AlarmStatusWidget({ title: 'Alarms', alarms: [...this.alarms], width: 24, height: 2 + Math.ceil(this.alarms.length / 4) }),
    );
    for (const row of rows) this.dashboard.addWidgets(heading(row.title), ...row.alarms.map(alarmWidget));
    this.dashboard.addWidgets(
      heading('Functions'),
      new GraphWidget({
        title: 'Errors by function',
        left: [...errors].map(([name, alarm]) => labelled(alarm.metric, name)),
        width: 12,
        height: 6,
      }),
      new AlarmStatusWidget({ title: 'Function alarms', alarms: functionAlarms, width: 12, height: 6 }),
      ...[...throttles.values()].map(alarmWidget),
    );

    new CfnOutput(stack, 'DashboardName', {
      value: this.dashboard.dashboardName,
      description: 'CloudWatch dashboard of every acctops alarm (docs/monitoring.md)',
    });
  }

  /** check-health as its schedule's target, with a role that may invoke exactly that function. */
  private healthTarget(fn: AcctopsFunction): IScheduleTarget {
    const role = new Role(this, 'HealthSchedulerRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: 'Lets EventBridge Scheduler invoke check-health, and nothing else',
    });
    role.addToPolicy(new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [fn.functionArn] }));
    return {
      bind: () => ({
        arn: fn.functionArn,
        role,
        // The scheduled handlers' one envelope (functions/_shared/scheduled-event.ts): every probe runs.
        input: ScheduleTargetInput.fromObject({
          source: 'acctops.scheduler',
          schedule: 'health-check',
          scheduledAt: ContextAttribute.scheduledTime,
          executionId: ContextAttribute.executionId,
        }),
        // No retries: the next run is minutes away.
        retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeInSeconds: 300 },
      }),
    };
  }

  private alarm(
    id: string,
    options: { description: string; metric: IMetric; evaluationPeriods?: number; datapointsToAlarm?: number },
  ): Alarm {
    return acctopsAlarm(this, id, { ...options, action: this.action, notifyOk: true });
  }
}

function alarmsUnder(scope: IConstruct): Alarm[] {
  return scope.node.findAll().filter((c): c is Alarm => c instanceof Alarm);
}

/** Whether `metric` is exactly the function's Lambda metric `name` (as `fn.metric(name)` makes it). */
function isMetricOf(metric: IMetric, fn: AcctopsFunction, name: string): boolean {
  return (
    metric instanceof Metric &&
    metric.namespace === 'AWS/Lambda' &&
    metric.metricName === name &&
    metric.dimensions?.FunctionName === fn.functionName
  );
}

function pascal(kebab: string): string {
  return kebab.replace(/(^|-)([a-z0-9])/g, (_m, _dash: string, c: string) => c.toUpperCase());
}

function heading(title: string): TextWidget {
  return new TextWidget({ markdown: `## ${title}`, width: 24, height: 1 });
}

/**
 * What the dashboard and docs/monitoring.md call an alarm: its id without `Alarm`, or its
 * construct's id when that leaves nothing (FailedInvocations' `Alarm`), so no widget is untitled.
 */
export function alarmTitle(alarm: Alarm): string {
  return alarm.node.id.replace(/Alarm$/, '') || alarm.node.scope!.node.id;
}

/** The alarm's own metric and threshold, titled by the alarm's name. */
function alarmWidget(alarm: Alarm): AlarmWidget {
  return new AlarmWidget({ alarm, title: alarmTitle(alarm), width: 6, height: 5 });
}

function labelled(metric: IMetric, label: string): IMetric {
  return metric instanceof Metric ? metric.with({ label }) : metric;
}
