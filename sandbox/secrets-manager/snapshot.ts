import * as z from 'zod';
import { rotationRulesSchema } from './schemas';

/**
 * The emulator's secrets as JSON, so that an emulator can stop and start again where it was (the
 * CLI's local mode keeps one in its state directory). Secret values are in it: store it like a
 * secret (mode 0600). Rotation attempts, faults and statistics belong to one run and are left out;
 * the staging labels are what a rotation leaves behind, and they are kept.
 */

export const SECRETS_SNAPSHOT_FORMAT = 'acctops.secrets-manager-state';

const epochMs = z.number().int();

export const secretsSnapshotSchema = z.object({
  format: z.literal(SECRETS_SNAPSHOT_FORMAT),
  formatVersion: z.literal(1),
  seq: z.number().int().min(0),
  secrets: z.array(
    z.object({
      seq: z.number().int(),
      arn: z.string(),
      name: z.string(),
      description: z.string().optional(),
      kmsKeyId: z.string().optional(),
      tags: z.array(z.object({ Key: z.string(), Value: z.string() })),
      createdAt: epochMs,
      lastChangedAt: epochMs,
      lastAccessedAt: epochMs.optional(),
      deletedAt: epochMs.optional(),
      deletionDate: epochMs.optional(),
      rotationEnabled: z.boolean(),
      rotationLambdaArn: z.string().optional(),
      rotationRules: rotationRulesSchema.optional(),
      lastRotatedAt: epochMs.optional(),
      nextRotationAt: epochMs.optional(),
      versions: z.array(
        z.object({
          id: z.string(),
          seq: z.number().int(),
          value: z.object({ SecretString: z.string().optional(), SecretBinary: z.string().optional() }).optional(),
          stages: z.array(z.string()),
          createdAt: epochMs,
          lastAccessedAt: epochMs.optional(),
        }),
      ),
    }),
  ),
});

export type SecretsManagerSnapshot = z.output<typeof secretsSnapshotSchema>;
