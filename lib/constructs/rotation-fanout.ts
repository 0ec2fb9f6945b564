import { Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { Alarm } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { StageConfig } from '../config/stage';
import { acctopsAlarm } from './alarms';
import type { KeyRotation } from './key-rotation';
import { stageKey } from './stage-key';

export interface RotationFanoutProps {
  readonly stage: StageConfig;
  readonly keyRotation: KeyRotation;
  /** The company registry table (lib/constructs/company-registry.ts): the sweep's work list. */
  readonly companyRegistryTable: ITable;
  readonly alarmTopic: ITopic;
  readonly removalPolicy: RemovalPolicy;
  /**
   * Due companies the sweep checks itself; beyond, it queues them all.
   * @default 20
   */
  readonly inlineLimit?: number;
  /**
   * Concurrent worker invocations (each a batch of up to 10 companies), which bounds the calls to
   * the service and to Secrets Manager.
   * @default 5
   */
  readonly workerMaxConcurrency?: number;
}

/**
 * The rotation doctor at fleet scale (docs/fleet-rotation.md): the scheduled doctor sweeps the
 * registry (Scan of a small projection, UpdateItem of `rotationCheckAfter`), describes only the
 * companies whose mark is past, and sends the due ones to a queue that the same function consumes
 * in batches (partial batch failures, a DLQ and an alarm, like the other queues), each company's
 * entry read again (GetItem) before its check. Kept apart from KeyRotation, which still owns the
 * functions and the per-company resources of cdk.json companies.
 */
export class RotationFanout extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly deadLettersAlarm: Alarm;

  constructor(scope: Construct, id: string, props: RotationFanoutProps) {
    super(scope, id);
    const { keyRotation, companyRegistryTable: table } = props;
    const doctor = keyRotation.doctorFunction;
    const key = stageKey(this, 'QueueKey', props.stage, {
      description: `acctops ${props.stage.name}: encrypts the rotation check queue`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });
    this.deadLetterQueue = new Queue(this, 'CheckDeadLetters', {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.queue = new Queue(this, 'CheckQueue', {
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
      // AWS's advice for Lambda event sources: six times the function's timeout.
      visibilityTimeout: doctor.timeout ? Duration.seconds(doctor.timeout.toSeconds() * 6) : Duration.minutes(30),
      // The sweep runs hourly and queues every due company again: a day-old check is a duplicate.
      retentionPeriod: Duration.days(1),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: 3 },
    });

    doctor
      .bindTable(table, 'COMPANY_REGISTRY_TABLE_NAME', 'scan')
      .bindQueue(this.queue, 'ROTATION_CHECK_QUEUE_URL', 'send')
      .consumeQueue(this.queue, { batchSize: 10, maxConcurrency: props.workerMaxConcurrency ?? 5 });
    doctor.addEnvironment('ROTATION_INLINE_LIMIT', String(props.inlineLimit ?? 20));
    // The check-after mark: UpdateItem of one attribute (conditional: never creates an item).
    doctor.addToRolePolicy(new PolicyStatement({ actions: ['dynamodb:UpdateItem'], resources: [table.tableArn] }));
    // A queued check asks the company's entry again before it acts (removed since it was queued?):
    // one GetItem, whose kms:Decrypt the scan grant above already holds.
    doctor.addToRolePolicy(new PolicyStatement({ actions: ['dynamodb:GetItem'], resources: [table.tableArn] }));
    if (table.encryptionKey) {
      doctor.addToRolePolicy(
        new PolicyStatement({
          actions: ['kms:Encrypt', 'kms:GenerateDataKey'],
          resources: [table.encryptionKey.keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` } },
        }),
      );
    }

    this.deadLettersAlarm = acctopsAlarm(this, 'DeadLettersAlarm', {
      action: new SnsAction(props.alarmTopic),
      description:
        "A company's rotation check failed three receives and sits in the rotation check DLQ. The next hourly sweep queues the company again; " +
        '`acctops doctor` shows its findings. Runbook: "The rotation doctor reports findings".',
      metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
    });
  }
}
