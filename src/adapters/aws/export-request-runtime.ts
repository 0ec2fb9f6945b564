import { AwsExportRuntime } from './export-runtime';
import { exportQueue } from './export-runtime-sqs';
import type { SqsExportQueue } from './sqs-export-queue';

/** request-export's root: it only enqueues the jobs an on-demand request asks for. */
export class AwsExportRequestRuntime extends AwsExportRuntime {
  queue(): SqsExportQueue {
    return exportQueue(this);
  }
}
