import { Stack, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Alarm, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Construct, type IConstruct } from 'constructs';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { Monitoring } from '../../lib/constructs/monitoring';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { PROBES } from '../../src/core/health/check-health';
import { acknowledgements, describeViolations, nagViolations, roleStatements, synthAcctopsStack, testApp, testStage } from '../helpers/cdk';

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Resource = { Properties: Record<string, unknown> };

/** Alarms of the template whose AlarmActions or OKActions are not exactly the topic. */
function alarmsNotWiredTo(template: Template, topic: unknown): string[] {
  return Object.entries(template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>)
    .filter(([, alarm]) => {
      const p = alarm.Properties;
      return (
        JSON.stringify(p.AlarmActions) !== JSON.stringify([topic]) ||
        JSON.stringify(p.OKActions) !== JSON.stringify([topic]) ||
        p.InsufficientDataActions !== undefined
      );
    })
    .map(([id]) => id);
}

/** The FunctionName of each Lambda metric alarm on `metric`, as the logical id it refers to. */
function alarmedFunctions(template: Template, metric: string): string[] {
  return Object.values(
    template.findResources('AWS::CloudWatch::Alarm', { Properties: { Namespace: 'AWS/Lambda', MetricName: metric } }) as Record<
      string,
      Resource
    >,
  ).map(
    (alarm) =>
      (alarm.Properties.Dimensions as { Name: string; Value: { Ref: string } }[]).find((d) => d.Name === 'FunctionName')!.Value.Ref,
  );
}

describe('Monitoring', () => {
  const { app, stack, template } = synthAcctopsStack({ alarmEmails: ['oncall@example.com', 'team@example.com'] });
  const topic = { Ref: logicalId(stack.alarmTopic) };
  const monitoring = stack.monitoring;
  const alarmIds = Object.keys(template.findResources('AWS::CloudWatch::Alarm'));
  const functionIds = Object.keys(template.findResources('AWS::Lambda::Function'));

  it('is cdk-nag clean without a single acknowledgement', () => {
    expect(describeViolations(nagViolations(app))).toEqual([]);
    expect(acknowledgements(monitoring)).toEqual([]);
  });

  describe('notifications: one topic', () => {
    it('every alarm in the template notifies the topic when it fires and when it clears, and nothing on INSUFFICIENT_DATA', () => {
      expect(alarmIds.length).toBeGreaterThanOrEqual(28);
      expect(alarmsNotWiredTo(template, topic)).toEqual([]);
    });

    it('is not vacuous: an alarm added after Monitoring, without the topic, is reported', () => {
      const other = testApp();
      const late = new AcctopsStack(other, 'acctops-test', { stage: testStage() });
      new Alarm(late, 'Forgotten', {
        metric: new Metric({ namespace: 'Acctops', metricName: 'Anything' }),
        threshold: 1,
        evaluationPeriods: 1,
      });
      const lateTemplate = Template.fromStack(late);
      expect(alarmsNotWiredTo(lateTemplate, { Ref: logicalId(late.alarmTopic) })).toEqual([logicalId(late.node.findChild('Forgotten'))]);
    });

    it('subscribes exactly the stage’s alarmEmails to the topic', () => {
      const subscriptions = Object.values(template.findResources('AWS::SNS::Subscription') as Record<string, Resource>).map(
        (s) => s.Properties,
      );
      expect(subscriptions).toEqual([
        expect.objectContaining({ Protocol: 'email', Endpoint: 'oncall@example.com', TopicArn: topic }),
        expect.objectContaining({ Protocol: 'email', Endpoint: 'team@example.com', TopicArn: topic }),
      ]);
      synthAcctopsStack().template.resourceCountIs('AWS::SNS::Subscription', 0);
    });
  });

  describe('functions', () => {
    it('every function has exactly one Errors alarm: its capability’s, or one made here', () => {
      expect(functionIds.length).toBe(14);
      expect(alarmedFunctions(template, 'Errors').sort()).toEqual([...functionIds].sort());
      expect(monitoring.errorsAlarms.size).toBe(functionIds.length);
      // Reused, not duplicated: the planner's alarm is the token lifecycle's own.
      expect(monitoring.errorsAlarms.get('plan-token-refresh')).toBe(stack.tokens.alarms.plannerErrors);
      expect(monitoring.errorsAlarms.get('rotate-api-key')).toBe(stack.keyRotation.alarms.rotationFailures);
      expect(monitoring.errorsAlarms.get('refresh-tokens')!.node.scope).toBe(monitoring);
    });

    it('alarms on Throttles for exactly the functions with reserved concurrency (the webhook)', () => {
      const reserved = Object.entries(template.findResources('AWS::Lambda::Function') as Record<string, Resource>)
        .filter(([, fn]) => fn.Properties.ReservedConcurrentExecutions !== undefined)
        .map(([id]) => id);
      expect(reserved).toEqual([logicalId(stack.exports.webhook)]);
      expect(alarmedFunctions(template, 'Throttles')).toEqual(reserved);
      expect([...monitoring.throttlesAlarms.keys()]).toEqual(['receive-export-webhook']);
    });

    it('an Errors alarm made here counts a 5-minute sum, any error fires it, no data is not a breach', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack.tokens.worker) } }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: 1,
        EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    });
  });

  describe('the issue’s list of alarms', () => {
    const alarm = (a: Alarm) => (template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>)[logicalId(a)]!.Properties;
    const fnRef = (fn: AcctopsFunction) => [{ Name: 'FunctionName', Value: { Ref: logicalId(fn) } }];
    const queueDims = (queue: IConstruct) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(queue), 'QueueName'] } }];

    it.each([
      [
        'DLQ depth: token refresh',
        () => stack.tokens.alarms.deadLetters,
        'ApproximateNumberOfMessagesVisible',
        () => queueDims(stack.tokens.deadLetterQueue),
      ],
      [
        'DLQ depth: export jobs',
        () => stack.exports.alarms.deadLetters,
        'ApproximateNumberOfMessagesVisible',
        () => queueDims(stack.exports.deadLetterQueue),
      ],
      [
        'DLQ depth: ExportRequested',
        () => stack.exports.alarms.requestDeadLetters,
        'ApproximateNumberOfMessagesVisible',
        () => queueDims(stack.exports.requestDeadLetterQueue),
      ],
      ['refresh failures', () => stack.tokens.alarms.refreshFailures, 'TokenRefreshDeferred', undefined],
      ['users in needs_attention', () => stack.tokens.alarms.needsAttention, 'TokenNeedsAttention', undefined],
      ['rotation failures', () => stack.keyRotation.alarms.rotationFailures, 'Errors', () => fnRef(stack.keyRotation.rotateFunction)],
      ['revocation failures', () => stack.keyRotation.alarms.revocationFailures, 'Errors', () => fnRef(stack.keyRotation.revokeFunction)],
      ['the rotation doctor’s findings', () => stack.keyRotation.alarms.doctorFindings, 'UnrepairedRotationFindings', undefined],
      ['the doctor’s probe: institution credential', () => monitoring.healthAlarms.institutionCredential, 'ProbeFailed', undefined],
      ['the doctor’s probe: service reachable', () => monitoring.healthAlarms.service, 'ProbeFailed', undefined],
      ['export failures', () => stack.exports.alarms.exportFailures, 'ExportFailed', undefined],
      ['Athena symlinks left behind by a published export', () => stack.exports.alarms.staleSymlinks, 'ExportStaleSymlinks', undefined],
      ['a company whose monthly export is overdue', () => stack.exports.alarms.overdue, 'MonthlyExportsOverdue', undefined],
    ] as const)('%s', (_name, of, metricName, dimensions) => {
      const props = alarm(of());
      expect(props.MetricName).toBe(metricName);
      if (dimensions) expect(props.Dimensions).toEqual(dimensions());
      expect(monitoring.alarms).toContain(of());
    });
  });

  describe('health: the doctor’s probes on a schedule', () => {
    it('alarms exactly the probes check-health runs (PROBES in src/core/health)', () => {
      const probeAlarms = Object.values(
        template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: 'ProbeFailed' } }),
      ) as Resource[];
      const probes = probeAlarms.map(
        (a) => (a.Properties.Dimensions as { Name: string; Value: string }[]).find((d) => d.Name === 'Probe')?.Value,
      );
      expect(probes.sort()).toEqual(Object.values(PROBES).sort());
    });

    it("runs check-health every 5 minutes with the scheduled handlers' envelope (all probes)", () => {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: 'rate(5 minutes)',
        Target: {
          Arn: { 'Fn::GetAtt': [logicalId(stack.checkHealth), 'Arn'] },
          Input: JSON.stringify({
            source: 'acctops.scheduler',
            schedule: 'health-check',
            scheduledAt: '<aws.scheduler.scheduled-time>',
            executionId: '<aws.scheduler.execution-id>',
          }),
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 300 },
          RoleArn: Match.anyValue(),
        },
      });
    });

    it('its scheduler role may invoke check-health and nothing else', () => {
      const role = monitoring.node.findChild('HealthSchedulerRole') as IConstruct;
      expect(roleStatements(template, logicalId(role))).toEqual([
        { Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: { 'Fn::GetAtt': [logicalId(stack.checkHealth), 'Arn'] } },
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': [logicalId(stack.failedInvocations.queue), 'Arn'] } },
      ]);
    });

    it.each(Object.values(PROBES))('alarms when %s fails in two of three runs, with the dimensions check-health emits', (probe) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Acctops',
        MetricName: 'ProbeFailed',
        Dimensions: [
          { Name: 'Function', Value: 'check-health' },
          { Name: 'Probe', Value: probe },
          { Name: 'Stage', Value: 'test' },
        ],
        Statistic: 'Sum',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
      });
    });
  });

  describe('the dashboard', () => {
    const dashboards = template.findResources('AWS::CloudWatch::Dashboard') as Record<string, Resource>;
    const [dashboardId, dashboard] = Object.entries(dashboards)[0]!;
    const body = JSON.stringify(dashboard.Properties.DashboardBody);

    it('is one, named after the stack and region, and published as DashboardName', () => {
      expect(Object.keys(dashboards)).toHaveLength(1);
      expect(dashboard.Properties.DashboardName).toEqual({ 'Fn::Join': ['', ['acctops-test-', { Ref: 'AWS::Region' }]] });
      template.hasOutput('DashboardName', { Value: { Ref: dashboardId } });
    });

    it('shows every alarm of the template, referenced by ARN (the alarm objects themselves)', () => {
      const missing = alarmIds.filter((id) => !body.includes(JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] })));
      expect(missing).toEqual([]);
    });

    it('has one row per capability, in order, then the functions', () => {
      const headings = [...body.matchAll(/## ([^"\\]+)/g)].map((m) => m[1]);
      expect(headings).toEqual(['Tokens', 'API-key rotation', 'Rotation fan-out', 'Exports', 'Failed invocations', 'Health', 'Functions']);
    });

    it('titles every alarm widget by the name docs/monitoring.md gives it (FailedInvocations’ alarm is only `Alarm`)', () => {
      expect(body).not.toContain('\\"title\\":\\"\\"');
      expect(body).toContain('\\"title\\":\\"FailedInvocations\\"');
      expect(body).toContain('\\"title\\":\\"DeadLetters\\"');
    });

    it('graphs the Errors of every function, from their alarms’ metrics', () => {
      const graph = /"title\\":\\"Errors by function\\"/.test(body);
      expect(graph).toBe(true);
      for (const name of monitoring.errorsAlarms.keys()) expect(body).toContain(`\\"label\\":\\"${name}\\"`);
    });
  });

  it('publishes the stage’s base URL as ServiceBaseUrl', () => {
    template.hasOutput('ServiceBaseUrl', { Value: 'https://accounting.example.com/api/v1' });
  });

  it('refuses an alarm that belongs to no dashboard row', () => {
    const world = () => {
      const other = new Stack(testApp(), 'rows');
      const capability = new Construct(other, 'Capability');
      new Alarm(capability, 'Stray', {
        metric: new Metric({ namespace: 'Acctops', metricName: 'Stray' }),
        threshold: 1,
        evaluationPeriods: 1,
      });
      const props = {
        stageName: 'test',
        alarmTopic: new Topic(other, 'Topic'),
        checkHealth: new AcctopsFunction(other, 'CheckHealth', { handlerDir: 'check-health', description: 'x', stageName: 'test' }),
      };
      return { other, capability, props };
    };
    const without = world();
    expect(() => new Monitoring(without.other, 'Monitoring', { ...without.props, rows: [] })).toThrow(
      /rows\/Capability\/Stray.*Monitoring's rows/,
    );
    const withRow = world();
    const made = new Monitoring(withRow.other, 'Monitoring', {
      ...withRow.props,
      rows: [{ title: 'Capability', scope: withRow.capability }],
    });
    expect(made.alarms.map((a) => a.node.id)).toEqual([
      'Stray',
      'InstitutionCredentialProbeAlarm',
      'ServiceProbeAlarm',
      'CheckHealthErrorsAlarm',
    ]);
  });
});
