import type { CredentialProvider } from '../../accounting-api';
import type { EventPublisher } from '../../ports/events';
import type { Clock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics';
import { exportCompanyPeriod, isRetryableExportFailure, type ExportCompanyPeriodDeps } from './export-company-period';
import {
  decodeJob,
  messageGroupOf,
  type DiscoverJob,
  type ExportJob,
  type ExportQueue,
  type ExportSource,
  type QueuedJob,
} from './export-jobs';
import { createExportClient } from './export-sources';
import { finishRunIfDone } from './monthly-export';
import type { PartLedger } from './part-ledger';
import type { RunLedger } from './run-ledger';
import type { SplitSettings } from './split-export';
import { planSplit, runPart } from './split-worker';

/** A message of the export queue: its id (for partial batch failures), body, group and delivery count. */
export interface ExportMessage {
  messageId: string;
  body: string;
  /** SQS's ApproximateReceiveCount: 1 on the first delivery. */
  receiveCount: number;
}

/**
 * Makes the credential of a source. `companyId` is the company acted for; it is absent for a
 * discovery, which lists the companies a user's token reaches.
 */
export type SourceCredentials = (source: ExportSource, companyId?: string) => CredentialProvider;

export interface ExportWorkerDeps {
  /** What `exportCompanyPeriod` needs besides the logger and metrics of this invocation. */
  exporter: Omit<ExportCompanyPeriodDeps, 'logger' | 'metrics' | 'events' | 'clock'>;
  credentials: SourceCredentials;
  queue: ExportQueue;
  /** Monthly runs' ledger (on-demand jobs never touch it), and the ledger of months split into parts. */
  ledger: RunLedger & PartLedger;
  events: EventPublisher;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** The queue's maxReceiveCount: the delivery that, if it fails, moves the message to the DLQ. */
  maxReceiveCount: number;
  /** When to export a month in parts (docs/fleet-exports.md); absent: every month is exported whole. */
  split?: SplitSettings;
}

/** `split`: the month was too large and its parts were enqueued. */
export type JobResult = 'completed' | 'failed' | 'retry' | 'discovered' | 'malformed' | 'skipped' | 'split';

export interface ExportWorkerReport {
  /** Messages to hand back: to be retried, or, on their last delivery, moved to the dead-letter queue. */
  failedMessageIds: string[];
  results: { messageId: string; result: JobResult }[];
}

/**
 * The export worker's batch, in order. Each message is one job: an `export` (exportCompanyPeriod,
 * then the run ledger for a monthly job) or a `discover` (list a user's companies, enqueue the ones
 * no other source of the run covers). One company's failure fails only its own message.
 *
 * Which messages are handed back: a retryable failure before the last delivery (SQS redelivers
 * after the visibility timeout); a retryable failure on the last delivery, after ExportFailed was
 * published and the ledger settled (the message goes to the DLQ, where it can be redriven); a
 * malformed body (it reaches the DLQ after its deliveries). A failure that cannot heal (a refused
 * permission, no credential) is reported by ExportFailed and its message is deleted.
 *
 * FIFO: once a message of a group is handed back, later messages of that group in the batch are
 * handed back unprocessed, so a period never overtakes an earlier job of itself.
 */
export async function processExportBatch(deps: ExportWorkerDeps, messages: readonly ExportMessage[]): Promise<ExportWorkerReport> {
  const failedGroups = new Set<string>();
  const report: ExportWorkerReport = { failedMessageIds: [], results: [] };
  const record = (message: ExportMessage, result: JobResult, group?: string) => {
    report.results.push({ messageId: message.messageId, result });
    if (result === 'retry' || result === 'malformed' || result === 'skipped') {
      report.failedMessageIds.push(message.messageId);
      if (group) failedGroups.add(group);
    }
  };

  for (const message of messages) {
    let job: QueuedJob;
    try {
      job = decodeJob(message.body, `export job in message ${message.messageId}`);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      deps.logger.error('malformed export job; left for the dead-letter queue', { messageId: message.messageId, error });
      record(message, 'malformed');
      continue;
    }
    const group = messageGroupOf(job);
    if (failedGroups.has(group)) {
      record(message, 'skipped', group);
      continue;
    }
    const last = message.receiveCount >= deps.maxReceiveCount;
    try {
      const result =
        job.type === 'export'
          ? await runExport(deps, job, message, last)
          : job.type === 'export_part'
            ? await runPart(deps, job, message, last)
            : await runDiscovery(deps, job, message, last);
      record(message, result, group);
    } catch (error) {
      // The job's own failures are results; this is the ledger, the queue or the event bus.
      deps.logger.error('export job could not be completed; the queue will retry', {
        messageId: message.messageId,
        ...jobFields(job),
        error,
      });
      record(message, 'retry', group);
    }
  }
  const counts: Record<string, number> = {};
  for (const { result } of report.results) counts[result] = (counts[result] ?? 0) + 1;
  deps.logger.info('export batch done', { messages: messages.length, ...counts });
  return report;
}

/** Which company or user, month and part a job is: what on-call looks the failure up by. */
function jobFields(job: QueuedJob): Record<string, string | number> {
  const fields: Record<string, string | number> = { jobType: job.type, period: job.period };
  if (job.type === 'discover') fields.externalId = job.externalId;
  else fields.companyId = job.companyId;
  if (job.type === 'export_part') Object.assign(fields, { splitId: job.splitId, part: job.part.index });
  return fields;
}

async function runExport(worker: ExportWorkerDeps, job: ExportJob, message: ExportMessage, last: boolean): Promise<JobResult> {
  const deps = removalAskedOnce(worker, job.companyId);
  const split = await planSplit(deps, job, message, last);
  if (split) return split;
  const outcome = await exportCompanyPeriod(
    {
      ...deps.exporter,
      events: deps.events,
      clock: deps.clock,
      logger: deps.logger.child({ messageId: message.messageId }),
      metrics: deps.metrics,
    },
    {
      companyId: job.companyId,
      period: job.period,
      credentials: deps.credentials(job.source, job.companyId),
      source: job.source,
      trigger: job.trigger,
      datasets: job.datasets,
      formats: job.formats,
      replaceFormats: job.replaceFormats,
      attempt: { number: message.receiveCount, last },
    },
  );
  if (outcome.status === 'failed' && !outcome.final) return 'retry';
  if (job.trigger.kind === 'monthly') {
    const settled = await deps.ledger.settleCompany(job.trigger.runId, job.companyId, outcome.status);
    if (settled.mayBeFinished) await finishRunIfDone(deps, job.trigger.runId);
  }
  if (outcome.status === 'completed') return 'completed';
  // Final: retryable ones go to the DLQ (a redrive can still succeed), the others are done with.
  return outcome.retryable ? 'retry' : 'failed';
}

/** The job's deps with the registry's removal asked once for the job, by the sizing and the export alike. */
function removalAskedOnce(deps: ExportWorkerDeps, companyId: string): ExportWorkerDeps {
  const ask = deps.exporter.companyRemovedAt;
  if (ask === undefined) return deps;
  let answer: Promise<string | undefined> | undefined;
  return { ...deps, exporter: { ...deps.exporter, companyRemovedAt: () => (answer ??= ask(companyId)) } };
}

async function runDiscovery(deps: ExportWorkerDeps, job: DiscoverJob, message: ExportMessage, last: boolean): Promise<JobResult> {
  const { runId } = job.trigger;
  const source: ExportSource = { kind: 'user', externalId: job.externalId };
  const logger = deps.logger.child({ messageId: message.messageId, runId, externalId: job.externalId, period: job.period });
  let companies: string[];
  try {
    const client = createExportClient({
      ...deps.exporter.client,
      baseUrl: deps.exporter.baseUrl,
      credentials: deps.credentials(source),
      clock: deps.clock,
      logger,
    });
    companies = (await client.companies.list().all()).map((item) => item.parsed.publicId.toLowerCase());
  } catch (error) {
    const retryable = isRetryableExportFailure(error);
    if (retryable && !last) {
      logger.warn('could not list the companies of a user; the queue will retry', { error });
      return 'retry';
    }
    logger.error('could not list the companies of a user; they are left out of this run', { error, retryable });
    deps.metrics.add('ExportDiscoveryFailed', 1);
    const settled = await deps.ledger.settleDiscovery(runId, job.externalId, 'failed');
    if (settled.mayBeFinished) await finishRunIfDone(deps, runId);
    return retryable ? 'retry' : 'failed';
  }

  const jobs: ExportJob[] = [];
  for (const companyId of companies) {
    if ((await deps.ledger.expectCompany(runId, companyId, source)) === 'taken') continue;
    jobs.push({
      type: 'export',
      companyId,
      period: job.period,
      datasets: job.datasets,
      formats: job.formats,
      source,
      trigger: job.trigger,
    });
  }
  await deps.queue.enqueue(jobs);
  logger.info('user companies discovered', { companies: companies.length, enqueued: jobs.length });
  const settled = await deps.ledger.settleDiscovery(runId, job.externalId, 'done');
  if (settled.mayBeFinished) await finishRunIfDone(deps, runId);
  return 'discovered';
}
