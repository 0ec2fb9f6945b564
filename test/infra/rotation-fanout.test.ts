import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { roleStatements, synthAcctopsStack } from '../helpers/cdk';

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe('RotationFanout', () => {
  const { stack, template } = synthAcctopsStack({ companies: [] });
  const fanout = stack.rotationFanout;
  const doctor = stack.keyRotation.doctorFunction;

  it('the doctor consumes its queue with partial batch failures; the queue dead-letters after 3 receives to a DLQ with an alarm', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(doctor) },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(fanout.queue), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(fanout.deadLetterQueue), 'Arn'] }, maxReceiveCount: 3 },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(fanout.deadLetterQueue), 'QueueName'] } }],
      Threshold: 1,
    });
  });

  it('the doctor gets the registry to scan, mark and ask again before a queued check (Scan, UpdateItem, GetItem), the queue to send to, and its sweep settings', () => {
    const statements = roleStatements(template, logicalId(doctor.executionRole)) as Statement[];
    const onTable = statements.filter(
      (s) => JSON.stringify(s.Resource).includes(logicalId(stack.companies.table)) && actionsOf(s).some((a) => a.startsWith('dynamodb:')),
    );
    expect(new Set(onTable.flatMap(actionsOf))).toEqual(new Set(['dynamodb:Scan', 'dynamodb:UpdateItem', 'dynamodb:GetItem']));
    expect(
      statements.some((s) => actionsOf(s).includes('sqs:SendMessage') && JSON.stringify(s.Resource).includes(logicalId(fanout.queue))),
    ).toBe(true);
    const env = (template.toJSON().Resources[logicalId(doctor)] as { Properties: { Environment: { Variables: Record<string, unknown> } } })
      .Properties.Environment.Variables;
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining(['COMPANY_REGISTRY_TABLE_NAME', 'ROTATION_CHECK_QUEUE_URL', 'ROTATION_INLINE_LIMIT']),
    );
  });

  it('a stage without cdk.json companies has no per-company rotation resources', () => {
    expect(Object.keys(template.findResources('AWS::SecretsManager::RotationSchedule'))).toEqual([]);
    expect(Object.keys(template.findResources('AWS::SecretsManager::Secret')).filter((id) => id.includes('CompanySecret'))).toEqual([]);
  });
});
