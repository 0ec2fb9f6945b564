import { S3Client } from '@aws-sdk/client-s3';
import { requiredEnv } from '../../core/shared/env';
import type { AwsExportRuntime } from './export-runtime';
import { S3ObjectStore } from './s3-object-store';

/**
 * The exports bucket. With an S3 endpoint override (s3rver in the tests) the client uses
 * path-style addresses, which S3-compatible peers need.
 */
export function exportStore(runtime: AwsExportRuntime): S3ObjectStore {
  return runtime.once('store', () => {
    const client = new S3Client({ forcePathStyle: Boolean(process.env.AWS_ENDPOINT_URL_S3) });
    return new S3ObjectStore({ client, bucket: requiredEnv(runtime.config.bucketName, 'EXPORT_BUCKET_NAME') });
  });
}
