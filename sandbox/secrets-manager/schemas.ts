import * as z from 'zod';
import { issuesFromZod } from '../../src/core/shared/errors';
import { invalidParameter } from './errors';

/**
 * Request shapes with the constraints of the Secrets Manager API reference. Unknown members are
 * tolerated (replication, policies) because the real service accepts them; what we rely on is strict.
 */

const secretId = z.string().min(1).max(2048);
const versionId = z.string().min(32).max(64);
const stage = z.string().min(1).max(256);
const clientRequestToken = z.string().min(32).max(64);
const secretString = z.string().max(65536);
// awsJson1.1 carries blobs as base64 text; the emulator stores and returns that text as is.
const secretBinary = z.string().max(87384);
const tag = z.looseObject({ Key: z.string().min(1).max(128), Value: z.string().max(256) });
const nextToken = z.string().min(1).max(4096);

export const rotationRulesSchema = z.looseObject({
  AutomaticallyAfterDays: z.number().int().min(1).max(1000).optional(),
  Duration: z
    .string()
    .regex(/^([1-9]|1\d|2[0-4])h$/)
    .optional(),
  ScheduleExpression: z
    .string()
    .regex(/^(rate\(\d+ (hours?|days?)\)|cron\(.+\))$/)
    .optional(),
});

export const schemas = {
  CreateSecret: z.looseObject({
    Name: z
      .string()
      .min(1)
      .max(512)
      .regex(/^[a-zA-Z0-9/_+=.@-]+$/),
    ClientRequestToken: clientRequestToken.optional(),
    Description: z.string().max(2048).optional(),
    KmsKeyId: z.string().max(2048).optional(),
    SecretString: secretString.optional(),
    SecretBinary: secretBinary.optional(),
    Tags: z.array(tag).max(50).optional(),
  }),
  GetSecretValue: z.looseObject({ SecretId: secretId, VersionId: versionId.optional(), VersionStage: stage.optional() }),
  PutSecretValue: z.looseObject({
    SecretId: secretId,
    ClientRequestToken: clientRequestToken.optional(),
    SecretString: secretString.optional(),
    SecretBinary: secretBinary.optional(),
    VersionStages: z.array(stage).min(1).max(20).optional(),
  }),
  DescribeSecret: z.looseObject({ SecretId: secretId }),
  UpdateSecretVersionStage: z.looseObject({
    SecretId: secretId,
    VersionStage: stage,
    MoveToVersionId: versionId.optional(),
    RemoveFromVersionId: versionId.optional(),
  }),
  ListSecrets: z.looseObject({
    MaxResults: z.number().int().min(1).max(100).optional(),
    NextToken: nextToken.optional(),
    IncludePlannedDeletion: z.boolean().optional(),
    SortOrder: z.enum(['asc', 'desc']).optional(),
    Filters: z
      .array(
        z.looseObject({
          Key: z.enum(['description', 'name', 'tag-key', 'tag-value', 'primary-region', 'owning-service', 'all']),
          Values: z
            .array(
              z
                .string()
                .max(512)
                .regex(/^!?[a-zA-Z0-9 :_@/+=.\-!]*$/),
            )
            .min(1)
            .max(10),
        }),
      )
      .max(10)
      .optional(),
  }),
  ListSecretVersionIds: z.looseObject({
    SecretId: secretId,
    MaxResults: z.number().int().min(1).max(100).optional(),
    NextToken: nextToken.optional(),
    IncludeDeprecated: z.boolean().optional(),
  }),
  DeleteSecret: z.looseObject({
    SecretId: secretId,
    RecoveryWindowInDays: z.number().int().min(7).max(30).optional(),
    ForceDeleteWithoutRecovery: z.boolean().optional(),
  }),
  RestoreSecret: z.looseObject({ SecretId: secretId }),
  TagResource: z.looseObject({ SecretId: secretId, Tags: z.array(tag).max(50) }),
  UntagResource: z.looseObject({ SecretId: secretId, TagKeys: z.array(z.string().min(1).max(128)).max(50) }),
  RotateSecret: z.looseObject({
    SecretId: secretId,
    ClientRequestToken: clientRequestToken.optional(),
    RotationLambdaARN: z.string().max(2048).optional(),
    RotationRules: rotationRulesSchema.optional(),
    RotateImmediately: z.boolean().optional(),
  }),
  CancelRotateSecret: z.looseObject({ SecretId: secretId }),
  GetRandomPassword: z.looseObject({
    PasswordLength: z.number().int().min(1).max(4096).optional(),
    ExcludeCharacters: z.string().max(4096).optional(),
    ExcludeNumbers: z.boolean().optional(),
    ExcludePunctuation: z.boolean().optional(),
    ExcludeUppercase: z.boolean().optional(),
    ExcludeLowercase: z.boolean().optional(),
    IncludeSpace: z.boolean().optional(),
    RequireEachIncludedType: z.boolean().optional(),
  }),
} as const;

export type Operation = keyof typeof schemas;
export type Input<O extends Operation> = z.output<(typeof schemas)[O]>;
export type RotationRules = z.output<typeof rotationRulesSchema>;

export const OPERATIONS = Object.keys(schemas) as Operation[];

export function isOperation(name: string): name is Operation {
  return Object.hasOwn(schemas, name);
}

/** Validates a request body; the message names each bad member, like the service's own errors. */
export function parseInput<O extends Operation>(operation: O, body: unknown): Input<O> {
  const result = schemas[operation].safeParse(body);
  if (result.success) return result.data as Input<O>;
  const issues = issuesFromZod(result.error);
  throw invalidParameter(`Invalid ${operation} request: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`);
}
