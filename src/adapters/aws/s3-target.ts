import { S3Client } from '@aws-sdk/client-s3';
import { S3ObjectStore } from './s3-object-store';

/**
 * The ObjectStore behind `--out s3://bucket/prefix`: an S3 client on the default credential chain
 * and region. When an endpoint is configured (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`: a local
 * S3 such as s3rver or MinIO), path-style addressing and checksums only when required, which such
 * servers need (a streamed put otherwise arrives aws-chunked and is stored with its framing).
 */
export function s3ObjectStoreFor(options: { bucket: string; prefix?: string; region?: string; env?: NodeJS.ProcessEnv }): S3ObjectStore {
  const env = options.env ?? process.env;
  const custom = Boolean(env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL);
  const client = new S3Client({
    ...(options.region ? { region: options.region } : {}),
    ...(custom
      ? { forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED' as const, responseChecksumValidation: 'WHEN_REQUIRED' as const }
      : {}),
  });
  return new S3ObjectStore({ client, bucket: options.bucket, prefix: options.prefix });
}
