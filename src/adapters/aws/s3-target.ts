import { S3Client } from '@aws-sdk/client-s3';
import { configuredRegion } from './aws-setup-error';
import { S3ObjectStore } from './s3-object-store';

/**
 * The store of `--out s3://…`, which can say before the first object whether the SDK has a region.
 * Without one, every call fails inside the SDK ("Region is missing") as a failure of the object it
 * was writing, which the CLI would otherwise see as each company's failure.
 */
export class S3TargetStore extends S3ObjectStore {
  private readonly sdk: S3Client;

  constructor(client: S3Client, bucket: string, prefix?: string) {
    super({ client, bucket, prefix });
    this.sdk = client;
  }

  /** The region the client signs for; an AwsSetupError (`aws_region_missing`) when there is none. */
  region(): Promise<string> {
    return configuredRegion(this.sdk.config);
  }
}

/**
 * The ObjectStore behind `--out s3://bucket/prefix`: an S3 client on the default credential chain
 * and region. When an endpoint is configured (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`: a local
 * S3 such as s3rver or MinIO), path-style addressing and checksums only when required, which such
 * servers need (a streamed put otherwise arrives aws-chunked and is stored with its framing).
 */
export function s3ObjectStoreFor(options: { bucket: string; prefix?: string; region?: string; env?: NodeJS.ProcessEnv }): S3TargetStore {
  const env = options.env ?? process.env;
  const custom = Boolean(env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL);
  const client = new S3Client({
    ...(options.region ? { region: options.region } : {}),
    ...(custom
      ? { forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED' as const, responseChecksumValidation: 'WHEN_REQUIRED' as const }
      : {}),
  });
  return new S3TargetStore(client, options.bucket, options.prefix);
}
