// One rotation-doctor sweep, in a process of its own (its peak RSS is the doctor's), against
// dynalite (the registry) and the Secrets Manager emulator, with the real @aws-sdk clients. Prints
// one JSON line: two runs, the first over unmarked companies, the second the steady state.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { Agent } from 'node:http';
import { DynamoDbRotationCheckIndex } from '../../src/adapters/aws/dynamodb-rotation-check-index';
import { AwsSecretStore } from '../../src/adapters/aws/secrets-manager';
import {
  companyKeySecretName,
  describeByNameOrTag,
  type QueuedCheck,
  sweepKeyRotations,
  taggedKeyDirectory,
} from '../../src/core/api-keys';
import type { SecretDescription } from '../../src/core/ports/secrets';
import { ManualClock } from '../../src/core/shared/clock';
import { silentLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { REGISTRY_TABLE, STAGE } from './fleet';

async function main(): Promise<void> {
  const [dynamoEndpoint, smEndpoint] = process.argv.slice(2) as [string, string];
  const config = {
    region: 'eu-central-1',
    credentials: { accessKeyId: 'AKIABENCH', secretAccessKey: 'bench-not-a-secret' },
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets: 32 }) },
  };
  const store = new AwsSecretStore(new SecretsManagerClient({ ...config, endpoint: smEndpoint }));
  let describes = 0;
  let describeMs = 0;
  let markMs = 0;
  const counting = {
    describeSecret: async (id: string): Promise<SecretDescription> => {
      describes += 1;
      const t = performance.now();
      try {
        return await store.describeSecret(id);
      } finally {
        describeMs += performance.now() - t;
      }
    },
  };
  const index = new DynamoDbRotationCheckIndex({
    client: new DynamoDBClient({ ...config, endpoint: dynamoEndpoint }),
    tableName: REGISTRY_TABLE,
  });
  const timedIndex = {
    pages: () => index.pages(),
    setCheckAfter: async (companyId: string, at: number) => {
      const t = performance.now();
      try {
        await index.setCheckAfter(companyId, at);
      } finally {
        markMs += performance.now() - t;
      }
    },
  };
  // A day and an hour after the secrets were created: the 1-day ones are due, not yet overdue.
  const clock = new ManualClock(Date.now() + 25 * 3600_000);
  const runOnce = async () => {
    const queued: QueuedCheck[] = [];
    describes = 0;
    describeMs = 0;
    markMs = 0;
    const started = performance.now();
    const report = await sweepKeyRotations(
      {
        index: timedIndex,
        describeCompanySecret: describeByNameOrTag({
          store: counting,
          directory: taggedKeyDirectory(store, { stage: STAGE }),
          nameOf: (id) => companyKeySecretName(STAGE, id),
        }),
        queue: { enqueue: async (checks) => void queued.push(...checks) },
        store: {
          describeSecret: () => Promise.reject(new Error('not in a sweep')),
          readSecret: () => Promise.reject(new Error('the sweep reads no value')),
          listVersions: () => Promise.reject(new Error('not in a sweep')),
          moveStage: () => Promise.reject(new Error('not in a sweep')),
        },
        scheduler: { pending: async function* () {} },
        clientFor: () => {
          throw new Error('the sweep calls no service');
        },
        clock,
        logger: silentLogger,
        metrics: new MemoryMetrics(),
      },
      { graceMs: 30 * 60_000, inlineLimit: 0, concurrency: 32 },
    );
    return {
      wallMs: performance.now() - started,
      registered: report.registered,
      described: report.described,
      describeCalls: describes,
      queued: report.queued,
      findings: report.findings.length,
      describeMs,
      markMs,
    };
  };
  const first = await runOnce();
  clock.advance(3600_000);
  const second = await runOnce();
  console.log(JSON.stringify({ first, second, maxRssMiB: process.resourceUsage().maxRSS / 1024 }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
