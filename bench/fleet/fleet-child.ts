// One measured step of the fleet benchmarks in a process of its own (its peak RSS is its own):
//   plan  the monthly planner over the company registry on dynalite (real @aws-sdk DynamoDB client)
//   job   one export-queue message through the export worker (a split month's sizing, or one part),
//         with the run ledger on dynalite and the files on s3rver
// bench/fleet/fleet-exports-bench.ts bundles this file with esbuild and runs it with plain node.
import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { DynamoDbRegistryTable } from '../../src/adapters/aws/dynamodb-company-registry';
import { DynamoDbRunLedger } from '../../src/adapters/aws/dynamodb-run-ledger';
import { S3ObjectStore } from '../../src/adapters/aws/s3-object-store';
import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { MemoryExportQueue } from '../../test/helpers/memory-export-queue';
import { apiKeyAuth } from '../../src/core/accounting-api';
import { CompanyRegistry, type RegistryTable } from '../../src/core/companies/company-registry';
import type { ExportQueue, QueuedJob } from '../../src/core/exports/pipeline/export-jobs';
import { processExportBatch } from '../../src/core/exports/pipeline/export-worker';
import { planMonthlyExport } from '../../src/core/exports/pipeline/monthly-export';
import { systemClock } from '../../src/core/shared/clock';
import { parseWith } from '../../src/core/shared/errors';
import { silentLogger } from '../../src/core/shared/logger';
import { noMetrics } from '../../src/core/shared/metrics';

const aws = { region: 'eu-central-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } };

const stepSchema = z.discriminatedUnion('mode', [
  z.strictObject({
    mode: z.literal('plan'),
    dynamoEndpoint: z.url(),
    registryTable: z.string(),
    runsTable: z.string(),
    executionId: z.string(),
  }),
  z.strictObject({
    mode: z.literal('job'),
    dynamoEndpoint: z.url(),
    runsTable: z.string(),
    s3Endpoint: z.url(),
    bucket: z.string(),
    baseUrl: z.url(),
    apiKey: z.string(),
    body: z.string(),
    maxTransactionsPerPart: z.int().min(1),
  }),
]);

export interface FleetChildResult {
  ms: number;
  peakRssBytes: number;
  /** plan: export jobs enqueued; job: the worker's result. */
  outcome: string;
  /** plan: registry pages read (Scan calls). */
  pages?: number;
  /** CPU time of this process (user + system): against `ms`, how much of the wall is our code. */
  cpuMs?: number;
  /** job: messages the worker enqueued (the parts of a split month). */
  enqueued?: string[];
}

/** Counts what the planner enqueues; SQS itself is not emulated here (BENCHMARKS.md says so). */
class CountingQueue implements ExportQueue {
  jobs = 0;
  enqueue(jobs: readonly QueuedJob[]): Promise<void> {
    this.jobs += jobs.length;
    return Promise.resolve();
  }
}

function peakRss(): number {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kb !== undefined) return Number(kb) * 1024;
  } catch {
    // Not Linux.
  }
  return process.resourceUsage().maxRSS * 1024;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

async function main(): Promise<void> {
  const step = parseWith(stepSchema, JSON.parse(process.argv[2] ?? 'null'), 'fleet step');
  const dynamo = new DynamoDBClient({ ...aws, endpoint: step.dynamoEndpoint });
  const ledger = new DynamoDbRunLedger({ client: dynamo, tableName: step.runsTable, clock: systemClock });
  const started = performance.now();
  const cpuAtStart = process.cpuUsage();
  let result: Omit<FleetChildResult, 'ms' | 'peakRssBytes'>;
  if (step.mode === 'plan') {
    const table = new DynamoDbRegistryTable({ client: dynamo, tableName: step.registryTable });
    let pages = 0;
    const counted: RegistryTable = {
      getItem: (id) => table.getItem(id),
      putItem: (item) => table.putItem(item),
      scanPage: (request) => (pages++, table.scanPage(request)),
    };
    const queue = new CountingQueue();
    const report = await planMonthlyExport(
      { ledger, queue, events: new MemoryEventPublisher(), clock: systemClock, logger: silentLogger, metrics: noMetrics },
      {
        scheduledAt: '2026-11-01T02:00:00.000Z',
        executionId: step.executionId,
        timeZone: 'Europe/Berlin',
        registry: new CompanyRegistry(counted, { defaultFormats: ['jsonl', 'csv', 'parquet'] }),
        formats: ['jsonl', 'csv', 'parquet'],
      },
    );
    result = { outcome: `${report.companies} export jobs`, pages };
  } else {
    const s3 = new S3Client({
      ...aws,
      endpoint: step.s3Endpoint,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const queue = new MemoryExportQueue();
    const report = await processExportBatch(
      {
        exporter: { store: new S3ObjectStore({ client: s3, bucket: step.bucket }), toolVersion: 'bench', baseUrl: step.baseUrl },
        credentials: () => apiKeyAuth(step.apiKey),
        queue,
        ledger,
        events: new MemoryEventPublisher(),
        clock: systemClock,
        logger: silentLogger,
        metrics: noMetrics,
        maxReceiveCount: 3,
        split: { maxTransactionsPerPart: step.maxTransactionsPerPart },
      },
      [{ messageId: 'bench-1', body: step.body, receiveCount: 1 }],
    );
    result = { outcome: report.results[0]!.result, enqueued: queue.drain().map((m) => m.body) };
  }
  const ms = performance.now() - started;
  process.stdout.write(
    `${JSON.stringify({ ...result, ms, cpuMs: cpuMsSince(cpuAtStart), peakRssBytes: peakRss() } satisfies FleetChildResult)}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
