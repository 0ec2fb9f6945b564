// One export (or one baseline walk) in a process of its own, so that its peak RSS is its own.
// bench/exports/export-bench.ts bundles this file with esbuild and runs it with plain node, the way
// Lambda runs a bundle: no tsx loader in the measured process.
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import { rm } from 'node:fs/promises';
import { S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { S3ObjectStore } from '../../src/adapters/aws/s3-object-store';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import { apiKeyAuth } from '../../src/core/accounting-api';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import { parsePeriod, periodRange } from '../../src/core/exports/formats/period';
import { createExportClient, EXPORT_PAGE_SIZE, exportSources } from '../../src/core/exports/pipeline/export-sources';
import { PeriodExporter } from '../../src/core/exports/formats/period-exporter';
import { systemClock } from '../../src/core/shared/clock';
import { parseWith } from '../../src/core/shared/errors';
import { silentLogger } from '../../src/core/shared/logger';

const jobSchema = z.strictObject({
  /**
   * `baseline`: fetch the same pages with a bare `fetch` loop and drop them; `baseline-http`: the
   * same with Node's own `http` client (the client acctops's transport is built on); `export`:
   * acctops's exporter.
   */
  mode: z.enum(['baseline', 'baseline-http', 'export']),
  formats: z.array(z.enum(['jsonl', 'csv', 'parquet'])).min(1),
  target: z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('dir'), dir: z.string().min(1) }),
    z.strictObject({ kind: z.literal('s3'), endpoint: z.url(), bucket: z.string().min(3) }),
  ]),
  baseUrl: z.url(),
  apiKey: z.string().min(1),
  companyId: z.uuid(),
  period: z.string().regex(/^\d{4}-\d{2}$/),
  pageSize: z.int().min(1).max(1000),
});
export type ExportJob = z.infer<typeof jobSchema>;

export interface ExportChildResult {
  /** Transactions read (the dataset the benchmark sizes). */
  transactions: number;
  /** Wall time of the walk or the export, from the first request to the published manifest. */
  ms: number;
  /** CPU time of this process (user + system, all its threads: gzip runs on the thread pool) over the same span. */
  cpuMs: number;
  /**
   * Peak resident set of this process image, in bytes: VmHWM from /proc/self/status. Not
   * process.resourceUsage().maxRSS: on Linux that is also the high-water mark of the process it was
   * forked from (the kernel carries the old image's peak across exec), so a child of a 180 MB
   * benchmark process reports at least 180 MB however little it uses.
   */
  peakRssBytes: number;
  /** Where peakRssBytes came from. */
  peakRssSource: 'VmHWM' | 'maxRSS';
  /** RSS once the modules are loaded, before the first request: what the process costs doing nothing. */
  startRssBytes: number;
  /**
   * Largest values of process.memoryUsage() sampled every 100 ms: which part of the RSS grew
   * (V8's heap, or memory outside it: Buffers, zlib, malloc).
   */
  sampled: { heapTotalBytes: number; heapUsedBytes: number; externalBytes: number; arrayBuffersBytes: number; rssBytes: number };
  /** Every second: [seconds, RSS MB, V8 heapTotal MB], to tell a plateau from a steady climb. */
  timeline: [number, number, number][];
  /** Bytes written (export) or received (baseline). */
  bytes: number;
  /** Whether this process runs with --expose-gc; then the heap retained after a full GC. */
  retainedHeapBytes: number | null;
}

/** Fetches every page of the lists the exporter reads, at the same page size, and drops them. */
async function baseline(
  job: ExportJob,
  get: (url: string, headers: Record<string, string>) => Promise<Page>,
): Promise<{ transactions: number; bytes: number }> {
  const { dateFrom, dateTo } = periodRange(parsePeriod(job.period));
  const headers = { accept: 'application/json', authorization: `Bearer ${job.apiKey}` };
  const lists = [
    `${job.baseUrl}/accounting/categories/?pageSize=${job.pageSize}`,
    `${job.baseUrl}/companies/${job.companyId}/taxes/reports/?page_size=${job.pageSize}`,
    `${job.baseUrl}/accounting/transactions/?date_from=${dateFrom}&date_to=${dateTo}&page_size=${job.pageSize}`,
  ];
  let transactions = 0;
  let bytes = 0;
  for (const [i, first] of lists.entries()) {
    for (let url: string | null = first; url !== null;) {
      const { ok, status, text } = await get(url, headers);
      if (!ok) throw new Error(`baseline: ${status} from ${url}`);
      const page = JSON.parse(text) as { results: unknown[]; next: string | null };
      bytes += text.length;
      if (i === lists.length - 1) transactions += page.results.length;
      url = page.next;
    }
  }
  return { transactions, bytes };
}

interface Page {
  ok: boolean;
  status: number;
  text: string;
}

async function viaFetch(url: string, headers: Record<string, string>): Promise<Page> {
  const response = await fetch(url, { headers });
  return { ok: response.ok, status: response.status, text: await response.text() };
}

const keepAlive = new http.Agent({ keepAlive: true });

/** A GET on Node's own client with a keep-alive agent: what a bare loop needs, nothing more. */
function viaHttp(url: string, headers: Record<string, string>): Promise<Page> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers, agent: keepAlive }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        resolve({ ok: status >= 200 && status < 300, status, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    request.on('error', reject);
  });
}

async function exportPeriod(job: ExportJob): Promise<{ transactions: number; bytes: number }> {
  let store: ObjectStore;
  if (job.target.kind === 'dir') {
    await rm(job.target.dir, { recursive: true, force: true });
    store = new DirObjectStore(job.target.dir);
  } else {
    const client = new S3Client({
      endpoint: job.target.endpoint,
      region: 'eu-central-1',
      // s3rver's built-in key pair; not a secret.
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    store = new S3ObjectStore({ client, bucket: job.target.bucket });
  }
  if (job.pageSize !== EXPORT_PAGE_SIZE) throw new Error(`the export reads pages of ${EXPORT_PAGE_SIZE}; the baseline must too`);
  // The export's own client and sources (page size 1000, items' JSON text kept), as the functions use them.
  const client = createExportClient({
    baseUrl: job.baseUrl,
    credentials: apiKeyAuth(job.apiKey),
    clock: systemClock,
    logger: silentLogger,
  });
  const period = parsePeriod(job.period);
  const summary = await new PeriodExporter({ store, clock: systemClock, logger: silentLogger, toolVersion: 'bench' }).run({
    company: job.companyId,
    period,
    sources: exportSources(client, job.companyId, period, { logger: silentLogger }),
    formats: job.formats,
    sourceBaseUrl: job.baseUrl,
  });
  return {
    transactions: summary.datasets.transactions?.records ?? 0,
    bytes: summary.manifest.objects.reduce((sum, o) => sum + o.bytes, 0),
  };
}

/** VmHWM of this process image, or (without /proc) maxRSS, which may include the parent's peak. */
function peakRss(): { bytes: number; source: 'VmHWM' | 'maxRSS' } {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kb !== undefined) return { bytes: Number(kb) * 1024, source: 'VmHWM' };
  } catch {
    // Not Linux: fall through.
  }
  return { bytes: process.resourceUsage().maxRSS * 1024, source: 'maxRSS' };
}

async function main(): Promise<void> {
  const job = parseWith(jobSchema, JSON.parse(process.argv[2] ?? 'null'), 'export job');
  const startRssBytes = process.memoryUsage.rss();
  const sampled = { heapTotalBytes: 0, heapUsedBytes: 0, externalBytes: 0, arrayBuffersBytes: 0, rssBytes: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    sampled.heapTotalBytes = Math.max(sampled.heapTotalBytes, m.heapTotal);
    sampled.heapUsedBytes = Math.max(sampled.heapUsedBytes, m.heapUsed);
    sampled.externalBytes = Math.max(sampled.externalBytes, m.external);
    sampled.arrayBuffersBytes = Math.max(sampled.arrayBuffersBytes, m.arrayBuffers);
    sampled.rssBytes = Math.max(sampled.rssBytes, m.rss);
  };
  const timeline: ExportChildResult['timeline'] = [];
  const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
  let ticks = 0;
  const sampler = setInterval(() => {
    sample();
    if (++ticks % 10 === 0) {
      const m = process.memoryUsage();
      timeline.push([ticks / 10, mb(m.rss), mb(m.heapTotal)]);
    }
  }, 100);
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const { transactions, bytes } =
    job.mode === 'export' ? await exportPeriod(job) : await baseline(job, job.mode === 'baseline' ? viaFetch : viaHttp);
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  clearInterval(sampler);
  sample();
  const gc = (globalThis as { gc?: () => void }).gc;
  let retainedHeapBytes: number | null = null;
  if (gc) {
    gc();
    retainedHeapBytes = process.memoryUsage().heapUsed;
  }
  const peak = peakRss();
  const result: ExportChildResult = {
    transactions,
    ms,
    cpuMs,
    peakRssBytes: peak.bytes,
    peakRssSource: peak.source,
    startRssBytes,
    sampled,
    timeline,
    bytes,
    retainedHeapBytes,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
