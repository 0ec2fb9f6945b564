import { Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import type { StageConfig } from '../../config/stage';
import { Grouping } from '../grouping';
import { stageKey } from '../stage-key';

export interface ExportStorageProps {
  readonly stage: StageConfig;
  /** Of the key and both buckets. */
  readonly removalPolicy: RemovalPolicy;
  /** Days a replaced or deleted export object is kept as a noncurrent version. */
  readonly noncurrentVersionDays: number;
  /** Days the bucket's server access logs are kept. */
  readonly accessLogDays: number;
}

/**
 * Where exports are kept: the exports key (it also encrypts the pipeline's queues and tables), the
 * KMS-encrypted, versioned, TLS-only bucket, and the bucket of its server access logs. Grants are
 * made by the functions that use the bucket (bindBucket), never here.
 */
export class ExportStorage extends Grouping {
  /** Its own key, or the stage's supplied one (`kmsKeyArn`). */
  readonly key: IKey;
  readonly bucket: Bucket;
  readonly accessLogs: Bucket;

  constructor(scope: Construct, id: string, props: ExportStorageProps) {
    super(scope, id);
    // S3 delivers the exports bucket's access logs under a bucket policy statement for
    // logging.s3.amazonaws.com, limited to that bucket and account, instead of the LogDeliveryWrite
    // ACL (AWS's advice since ACLs are disabled by default). Set on this construct, before its
    // children, so that it holds in the app and in the tests, and nowhere else.
    this.node.setContext('@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy', true);
    const stageName = props.stage.name;
    this.key = stageKey(this, 'Key', props.stage, {
      description: `acctops ${stageName}: encrypts the exports bucket, the export queues and tables`,
      alias: `alias/acctops/${stageName}/exports`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });

    // S3 writes server access logs only into an SSE-S3 bucket (not SSE-KMS), hence a bucket of its own.
    this.accessLogs = new Bucket(this, 'AccessLogs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      // Log objects delivered under the bucket policy belong to us, and no ACL applies.
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(props.accessLogDays) }],
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'This bucket receives the exports bucket’s server access logs; logging the log bucket into itself would only log its own log deliveries.',
    });

    this.bucket = new Bucket(this, 'Bucket', {
      encryption: BucketEncryption.KMS,
      encryptionKey: this.key,
      // One data key per bucket instead of one KMS call per object: exports write thousands of parts.
      bucketKeyEnabled: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      versioned: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'exports-bucket/',
      lifecycleRules: [
        // An abort that itself failed leaves invisible parts that cost storage until this rule ends them.
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Re-runs replace objects and the garbage collection deletes superseded runs: old versions go after a while.
        { id: 'expire-noncurrent-versions', noncurrentVersionExpiration: Duration.days(props.noncurrentVersionDays) },
        { id: 'remove-expired-delete-markers', expiredObjectDeleteMarker: true },
      ],
      removalPolicy: props.removalPolicy,
    });
  }
}
