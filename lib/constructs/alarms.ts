import type { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, Metric, TreatMissingData, type IAlarmAction, type IMetric } from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { METRIC_DIMENSIONS, METRICS_NAMESPACE, type AlarmedMetric } from '../../contract/metrics';

export interface AcctopsAlarmProps {
  /** What fired and what to do: the runbook, the log group, the command. */
  readonly description: string;
  readonly metric: IMetric;
  /** Notified when the alarm fires. */
  readonly action: IAlarmAction;
  /**
   * Also notify `action` when the alarm clears. Monitoring adds this to every other alarm of the
   * stack once they all exist.
   * @default false
   */
  readonly notifyOk?: boolean;
  /** @default 1 */
  readonly threshold?: number;
  /** @default 1 */
  readonly evaluationPeriods?: number;
  /** @default evaluationPeriods */
  readonly datapointsToAlarm?: number;
}

/**
 * Every acctops alarm: it fires at `threshold` or more, and missing data is "not breaching":
 * our metrics are only written when something happens (nothing failed, nothing dead-lettered, no
 * check ran yet), so silence is the healthy state, never a reason to page.
 */
export function acctopsAlarm(scope: Construct, id: string, props: AcctopsAlarmProps): Alarm {
  const alarm = new Alarm(scope, id, {
    alarmDescription: props.description,
    metric: props.metric,
    threshold: props.threshold ?? 1,
    evaluationPeriods: props.evaluationPeriods ?? 1,
    datapointsToAlarm: props.datapointsToAlarm,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
  });
  alarm.addAlarmAction(props.action);
  if (props.notifyOk) alarm.addOkAction(props.action);
  return alarm;
}

/**
 * One of our EMF metrics as the functions emit it (contract/metrics.ts): namespace Acctops,
 * dimensions Stage and Function, plus `dimensions` (check-health's Probe).
 */
export function acctopsMetric(
  stageName: string,
  metric: AlarmedMetric,
  options: { statistic: string; period: Duration; dimensions?: Readonly<Record<string, string>> },
): Metric {
  return new Metric({
    namespace: METRICS_NAMESPACE,
    metricName: metric.name,
    dimensionsMap: { [METRIC_DIMENSIONS.stage]: stageName, [METRIC_DIMENSIONS.function]: metric.function, ...options.dimensions },
    statistic: options.statistic,
    period: options.period,
  });
}
