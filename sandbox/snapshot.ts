import * as z from 'zod';

/**
 * The sandbox's state as JSON, so that a sandbox can stop and start again where it was: the CLI's
 * local mode keeps one in its state directory between invocations (docs/cli.md, "The
 * local mode"). A snapshot holds credentials (institution secrets, the token signing key, demo
 * keys): store it like one (mode 0600).
 *
 * What is derived is left out and recomputed on restore (indexes, a transaction's instant and
 * local date, generated records). Settings, faults, statistics and the request log belong to one
 * run and are not part of it.
 */

export const SANDBOX_SNAPSHOT_FORMAT = 'acctops.sandbox-state';

const digits = z.string().regex(/^-?\d+$/);
const epochMs = z.number().int();
const nullableEpoch = epochMs.nullable();

export const sandboxSnapshotSchema = z.object({
  format: z.literal(SANDBOX_SNAPSHOT_FORMAT),
  formatVersion: z.literal(1),
  seed: z.string(),
  /** Position of the seeded sequence: ids invented after a restore continue it. */
  prng: z.number().int().min(0),
  userCounter: z.number().int().min(0),
  phantomCounter: z.number().int().min(0),
  tokens: z.object({
    signingKey: z.base64(),
    records: z.array(
      z.object({
        jti: z.string(),
        type: z.enum(['access', 'refresh']),
        userId: z.string(),
        institutionId: z.string(),
        family: z.string(),
        issuedAt: epochMs,
        expiresAt: epochMs,
        revokedAt: nullableEpoch,
        usedAt: nullableEpoch,
      }),
    ),
  }),
  institutions: z.array(z.object({ id: z.string(), secret: z.string(), name: z.string() })),
  users: z.array(
    z.object({
      userId: z.string(),
      username: z.string(),
      email: z.string(),
      externalId: z.string().nullable(),
      institutionId: z.string().nullable(),
      companies: z.array(z.string()),
      permissions: z.array(z.string()),
      disabled: z.boolean(),
    }),
  ),
  companies: z.array(
    z.object({
      publicId: z.string(),
      name: z.string(),
      country: z.string(),
      currency: z.string(),
      ownerUserId: z.string(),
      bankAccounts: z.array(z.string()),
    }),
  ),
  apiKeys: z.array(
    z.object({
      publicId: z.string(),
      companyId: z.string(),
      creatorUserId: z.string(),
      name: z.string(),
      prefix: z.string(),
      /** SHA-256 of the key, hex: the key itself is never kept. */
      hash: z.hex().length(64),
      permissions: z.array(z.string()),
      createdAt: epochMs,
      expiresAt: nullableEpoch,
      revokedAt: nullableEpoch,
      lastUsedAt: nullableEpoch,
    }),
  ),
  categories: z.array(
    z.object({
      publicId: z.string(),
      companyId: z.string(),
      name: z.string(),
      parent: z.string().nullable(),
      cashflowType: z.enum(['EXPENSE', 'INCOME']),
      vatApplied: z.enum(['YES', 'NO']),
      metadata: z.string(),
      description: z.string(),
      examples: z.string(),
    }),
  ),
  taxReports: z.array(
    z.object({
      pk: z.string(),
      companyId: z.string(),
      periodStart: z.string(),
      periodEnd: z.string(),
      status: z.enum(['draft', 'submitted']),
      amountDue: digits,
      currency: z.string(),
      createdAt: epochMs,
    }),
  ),
  /** Held transactions; generated ones are `datasets`. */
  transactions: z.array(
    z.object({
      publicId: z.string(),
      companyId: z.string(),
      amount: digits,
      currency: z.string(),
      cashflowType: z.enum(['EXPENSE', 'INCOME']),
      valueDate: z.string(),
      description: z.string(),
      category: z.string().nullable(),
      bankAccount: z.string(),
    }),
  ),
  /** The demo credentials a seeded sandbox hands out (SANDBOX ONLY), or null without the demo. */
  demo: z
    .object({
      notice: z.string(),
      institution: z.object({ id: z.string(), secret: z.string(), name: z.string(), header: z.string() }),
      companies: z.array(
        z.object({
          publicId: z.string(),
          name: z.string(),
          currency: z.string(),
          apiKeys: z.array(z.object({ name: z.string(), key: z.string(), permissions: z.array(z.string()) })),
        }),
      ),
      users: z.array(
        z.object({ userId: z.string(), username: z.string(), email: z.string(), externalId: z.string(), companies: z.array(z.string()) }),
      ),
    })
    .nullable(),
  datasets: z.array(
    z.object({
      seed: z.string(),
      companyId: z.string(),
      currency: z.string(),
      month: z.string(),
      count: z.number().int().min(0),
      categories: z.array(z.string()),
      // Absent in states saved before it (sandbox/transactions.ts, GeneratedDatasetSpec).
      categoryTypes: z.array(z.enum(['EXPENSE', 'INCOME'])).optional(),
      bankAccounts: z.array(z.string()),
    }),
  ),
});

export type SandboxStateSnapshot = z.output<typeof sandboxSnapshotSchema>;
