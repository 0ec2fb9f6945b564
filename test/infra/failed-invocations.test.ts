import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { synthAcctopsStack } from '../helpers/cdk';

const logicalId = (construct: IConstruct) => {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return element.stack.getLogicalId(element);
};

interface Resource {
  Properties: Record<string, unknown>;
}

/**
 * Nothing asynchronous fails silently (issue 16, item 12; decision 100): every schedule dead-letters
 * to the FailedInvocations queue, every function invoked asynchronously (a schedule's target, an
 * event rule's target, revoke-api-key from the run-time revocation schedules), found in the template
 * rather than listed, sends its failed invocations there, and its alarm notifies the topic.
 */
describe('FailedInvocations', () => {
  const { stack, template } = synthAcctopsStack({ alarmEmails: ['oncall@example.com'] });
  const queueArn = { 'Fn::GetAtt': [logicalId(stack.failedInvocations.queue), 'Arn'] };
  const schedules = Object.entries(template.findResources('AWS::Scheduler::Schedule') as Record<string, Resource>);
  const invokeConfigs = Object.values(template.findResources('AWS::Lambda::EventInvokeConfig') as Record<string, Resource>);
  const withFailureDestination = new Set(
    invokeConfigs
      .filter(
        (c) =>
          JSON.stringify((c.Properties.DestinationConfig as { OnFailure?: { Destination: unknown } })?.OnFailure?.Destination) ===
          JSON.stringify(queueArn),
      )
      .map((c) => JSON.stringify(c.Properties.FunctionName)),
  );

  it('every schedule of the stack has the queue as its dead-letter queue', () => {
    expect(schedules.length).toBeGreaterThanOrEqual(5);
    for (const [id, schedule] of schedules) {
      const target = schedule.Properties.Target as { DeadLetterConfig?: { Arn: unknown } };
      expect({ id, deadLetter: target.DeadLetterConfig?.Arn }).toEqual({ id, deadLetter: queueArn });
    }
  });

  describe('every function invoked asynchronously, as the template says', () => {
    const functionIds = new Set(Object.keys(template.findResources('AWS::Lambda::Function')));
    /** The function an ARN (or name) expression of the template names, if it names one of the stack's. */
    const functionOf = (value: unknown): string | undefined => {
      const ref = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] } | undefined;
      const id = ref?.Ref ?? ref?.['Fn::GetAtt']?.[0];
      return id !== undefined && functionIds.has(id) ? id : undefined;
    };
    const defined = (ids: (string | undefined)[]) => ids.filter((id): id is string => id !== undefined);
    const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : ([value].flat() as T[]));

    const scheduleTargets = defined(schedules.map(([, s]) => functionOf((s.Properties.Target as { Arn: unknown }).Arn)));
    const ruleTargets = defined(
      Object.values(template.findResources('AWS::Events::Rule') as Record<string, Resource>).flatMap((rule) =>
        list(rule.Properties.Targets as { Arn: unknown }[]).map((t) => functionOf(t.Arn)),
      ),
    );
    // The roles EventBridge (Scheduler) assumes to invoke a function: the revocation schedules exist
    // only at run time, and their role is the one place the template names their target.
    const INVOKING_SERVICES = ['scheduler.amazonaws.com', 'events.amazonaws.com'];
    const invokingRoles = Object.entries(template.findResources('AWS::IAM::Role') as Record<string, Resource>)
      .filter(([, role]) =>
        list((role.Properties.AssumeRolePolicyDocument as { Statement: { Principal?: { Service?: string | string[] } }[] }).Statement).some(
          (s) => list(s.Principal?.Service).some((service) => INVOKING_SERVICES.includes(service)),
        ),
      )
      .map(([id]) => id);
    type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
    const roleTargets = defined(
      Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>)
        .filter((p) => list(p.Properties.Roles as { Ref: string }[]).some((r) => invokingRoles.includes(r.Ref)))
        .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
        .filter((s) => s.Effect === 'Allow' && list(s.Action).includes('lambda:InvokeFunction'))
        .flatMap((s) => list(s.Resource).map(functionOf)),
    );
    // Services that invoke a function asynchronously under a resource policy of the function (an S3
    // notification or an SNS subscription added later is caught here too).
    const ASYNC_PRINCIPALS = ['events.amazonaws.com', 'scheduler.amazonaws.com', 's3.amazonaws.com', 'sns.amazonaws.com'];
    const permissionTargets = defined(
      Object.values(template.findResources('AWS::Lambda::Permission') as Record<string, Resource>)
        .filter((p) => ASYNC_PRINCIPALS.includes(p.Properties.Principal as string))
        .map((p) => functionOf(p.Properties.FunctionName)),
    );
    const invokedAsynchronously = [...new Set([...scheduleTargets, ...ruleTargets, ...roleTargets, ...permissionTargets])].sort();

    it("are the schedules' targets, request-export (the ExportRequested rule) and revoke-api-key (the revocation schedules)", () => {
      expect(invokedAsynchronously).toEqual(
        [
          stack.tokens.planner,
          stack.keyRotation.doctorFunction,
          stack.exports.planner,
          stack.exports.checker,
          stack.checkHealth,
          stack.exports.requester,
          stack.keyRotation.revokeFunction,
        ]
          .map(logicalId)
          .sort(),
      );
      expect(ruleTargets).toEqual([logicalId(stack.exports.requester)]);
      expect(roleTargets).toContain(logicalId(stack.keyRotation.revokeFunction));
    });

    it("each sends what failed Lambda's two retries to the queue", () => {
      for (const id of invokedAsynchronously) {
        expect({ id, covered: withFailureDestination.has(JSON.stringify({ Ref: id })) }).toEqual({ id, covered: true });
      }
      for (const config of invokeConfigs) expect(config.Properties.MaximumRetryAttempts).toBe(2);
    });

    it('each role may send to the queue, and nothing else there (no SqsDestination extras)', () => {
      const queueStatements = (fnId: string) => {
        const role = (template.findResources('AWS::Lambda::Function')[fnId] as Resource).Properties.Role as {
          'Fn::GetAtt': [string, string];
        };
        return Object.values(template.findResources('AWS::IAM::Policy') as Record<string, Resource>)
          .filter((p) => list(p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role['Fn::GetAtt'][0]))
          .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
          .filter((s) => JSON.stringify(s.Resource).includes(JSON.stringify(queueArn)));
      };
      for (const id of invokedAsynchronously) {
        expect({ id, actions: queueStatements(id).flatMap((s) => list(s.Action)) }).toEqual({ id, actions: ['sqs:SendMessage'] });
      }
    });
  });

  it('the run-time revocation schedules get the queue: the rotation function is told its ARN', () => {
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(stack.keyRotation.rotateFunction)] as Resource;
    expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables.REVOCATION_DEAD_LETTER_ARN).toEqual(queueArn);
  });

  it('alarms on one message, to the topic, while any message is there', () => {
    const alarm = template.findResources('AWS::CloudWatch::Alarm')[logicalId(stack.failedInvocations.alarm)] as Resource;
    expect(alarm.Properties).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [{ Ref: logicalId(stack.alarmTopic) }],
      OKActions: [{ Ref: logicalId(stack.alarmTopic) }],
    });
    const queue = template.findResources('AWS::SQS::Queue')[logicalId(stack.failedInvocations.queue)] as Resource;
    expect(queue.Properties.MessageRetentionPeriod).toBe(14 * 86_400);
  });
});
