import { SQSClient } from '@aws-sdk/client-sqs';
import { requiredEnv } from '../../core/shared/env';
import type { AwsExportRuntime } from './export-runtime';
import { SqsExportQueue } from './sqs-export-queue';

/** The export queue. */
export function exportQueue(runtime: AwsExportRuntime): SqsExportQueue {
  return runtime.once(
    'queue',
    () => new SqsExportQueue({ client: new SQSClient({}), queueUrl: requiredEnv(runtime.config.queueUrl, 'EXPORT_QUEUE_URL') }),
  );
}
