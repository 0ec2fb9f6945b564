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
 * Nothing asynchronous fails silently (issue 16, item 12): every schedule dead-letters to the
 * FailedInvocations queue, every function a schedule invokes (and revoke-api-key, invoked by the
 * run-time revocation schedules) sends its failed asynchronous invocations there, and its alarm
 * notifies the topic.
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

  it('every function a schedule invokes, and revoke-api-key, sends failed asynchronous invocations to the queue', () => {
    for (const [id, schedule] of schedules) {
      const arn = (schedule.Properties.Target as { Arn: { 'Fn::GetAtt': [string, string] } }).Arn;
      expect({ id, covered: withFailureDestination.has(JSON.stringify({ Ref: arn['Fn::GetAtt'][0] })) }).toEqual({ id, covered: true });
    }
    expect(withFailureDestination.has(JSON.stringify({ Ref: logicalId(stack.keyRotation.revokeFunction) }))).toBe(true);
    for (const config of invokeConfigs) expect(config.Properties.MaximumRetryAttempts).toBe(2);
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
