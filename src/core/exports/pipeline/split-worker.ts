import { randomUUID } from 'node:crypto';
import { ALARMED_METRICS } from '../../../../contract/metrics';
import type { DataClient } from '../../accounting-api';
import type { Logger } from '../../shared/logger';
import { isRetryableExportFailure } from './export-company-period';
import { countPublished, exportCompleted, exportFailed, writtenCounts } from './export-events';
import { manifestTriggerOf, type ExportJob, type ExportPartJob } from './export-jobs';
import type { ExportMessage, ExportWorkerDeps, JobResult } from './export-worker';
import { createExportClient } from './export-sources';
import { serviceCompanyId } from './service-company-id';
import { manifestKey, newRunId } from '../formats/layout';
import { droppedFormats, readManifest, type Manifest } from '../formats/manifest';
import { finishRunIfDone } from './monthly-export';
import type { SplitRecord } from './part-ledger';
import { parsePeriod, periodRange } from '../formats/period';
import { ConcurrentExportError, FormatLossError, PeriodExportError } from '../formats/period-errors';
import { DEFAULT_GC_GRACE_MS, PeriodExporter, sanitizeBaseUrl } from '../formats/period-exporter';
import { publishPeriod, type PublishResult } from '../formats/publish';
import { staleSymlinks as symlinksBehind } from '../formats/symlinks';
import {
  countTransactions,
  dayCounts,
  describeSplit,
  partDatasets,
  partJobs,
  partSources,
  planParts,
  splitIdOf,
  splitManifest,
  SplitIncompleteError,
} from './split-export';
import { DATASETS, type DatasetName } from '../formats/datasets';

/**
 * The worker's side of months exported in parts (docs/fleet-exports.md):
 *
 *   export job -> planSplit: count the month (one page-size-1 request); above the threshold, count
 *                 each day, pack days into parts, record the split, enqueue one export_part each
 *   export_part -> runPart: write the part's files into the split's run folder (invisible), record
 *                 the result; the part that completes the done set publishes the one manifest
 */

/**
 * Decides whether an export job is split. Returns undefined when the month fits one invocation
 * (the caller exports it whole), otherwise the job's result: its parts are enqueued.
 */
export async function planSplit(
  deps: ExportWorkerDeps,
  job: ExportJob,
  message: ExportMessage,
  last: boolean,
): Promise<JobResult | undefined> {
  const settings = deps.split;
  if (!settings || !(job.datasets ?? DATASETS).includes('transactions')) return undefined;
  const period = parsePeriod(job.period);
  const logger = deps.logger.child({ messageId: message.messageId, companyId: job.companyId, period: job.period });
  const splitId = splitIdOf(job);

  let split = await deps.ledger.getSplit(splitId);
  if (!split) {
    let parts;
    let defaultCurrency: string | undefined;
    try {
      // A removed company's month is not sized with its key: the whole-month export refuses it, with its events.
      if ((await deps.exporter.companyRemovedAt?.(job.companyId)) !== undefined) return undefined;
      const { client } = await companyClient(deps, job, logger);
      const total = await countTransactions(client, periodRange(period));
      if (total <= settings.maxTransactionsPerPart) return undefined;
      const days = await dayCounts(client, period, settings.probeConcurrency, deps.exporter.client?.dateTo);
      parts = planParts(days, settings.maxTransactionsPerPart);
      logger.info('month too large for one export; split by date range', {
        transactions: total,
        parts: parts.length,
        maxTransactionsPerPart: settings.maxTransactionsPerPart,
      });
      // Once for every part (SplitRecord.defaultCurrency), as the whole month would ask it.
      if (parts.length >= 2)
        defaultCurrency = deps.exporter.exporter?.defaultCurrency ?? (await deps.exporter.companyCurrency?.(job.companyId));
    } catch (error) {
      // The whole-month export reports the failure its usual way (event, ledger) on its last try.
      if (isRetryableExportFailure(error) && !last) {
        logger.warn('could not size the month; the queue will retry', { error });
        return 'retry';
      }
      // Not a warning: the whole-month export meets the same cause (an unknown company, a refused
      // key) and reports it as its own failure right after; a warning first read as a second fault.
      logger.info('month not sized; exporting it whole, which reports any failure', { error });
      return undefined;
    }
    // One day above the threshold is one part: the API filters by date, nothing finer.
    if (parts.length < 2) return undefined;
    // A narrower re-export without replaceFormats goes the whole-month way, which refuses it
    // (FormatLossError) before reading anything; a split would publish without the other formats.
    if (!job.replaceFormats && (await dropsFormats(deps, job))) return undefined;
    ({ split } = await deps.ledger.startSplit({
      splitId,
      companyId: job.companyId,
      period: job.period,
      runId: newRunId(deps.clock),
      parts,
      ...(defaultCurrency !== undefined ? { defaultCurrency } : {}),
      createdAt: deps.clock.now(),
    }));
  }
  if (split.publishedAt !== undefined) return 'completed';
  // A repeat (a redelivered job) enqueues the same parts again; the queue's deduplication and the
  // parts' done set make that harmless.
  await deps.queue.enqueue(partJobs(job, split));
  deps.metrics.add('ExportSplit', 1);
  describeSplit(split, logger).info('export parts enqueued');
  return 'split';
}

/**
 * The service as the job's company sees it: the sizing and every part read through the same
 * credentials, with the company id as the service spells it (the job holds ours, in lower case).
 */
async function companyClient(
  deps: ExportWorkerDeps,
  job: ExportJob | ExportPartJob,
  logger: Logger,
): Promise<{ client: DataClient; companyId: string }> {
  const { baseUrl, client: settings } = deps.exporter;
  const credentials = deps.credentials(job.source, job.companyId);
  const companyId = await serviceCompanyId({ baseUrl, client: settings, credentials, clock: deps.clock, logger }, job.companyId);
  return { client: createExportClient({ ...settings, baseUrl, credentials, companyId, clock: deps.clock, logger }), companyId };
}

async function dropsFormats(deps: ExportWorkerDeps, job: ExportJob): Promise<boolean> {
  const previous = await readManifest(deps.exporter.store, manifestKey(job.companyId, parsePeriod(job.period)));
  return previous !== undefined && droppedFormats(previous, job.datasets ?? DATASETS, job.formats).length > 0;
}

/**
 * One part: written, recorded, and, when it is the last one done, the month is published and
 * reported. A part delivered again after the publish only finishes the report, if it is not done.
 */
export async function runPart(deps: ExportWorkerDeps, job: ExportPartJob, message: ExportMessage, last: boolean): Promise<JobResult> {
  const period = parsePeriod(job.period);
  const logger = deps.logger.child({
    messageId: message.messageId,
    companyId: job.companyId,
    period: job.period,
    splitId: job.splitId,
    part: job.part.index,
  });
  let split = await deps.ledger.getSplit(job.splitId);
  if (!split) {
    // The split is recorded before its parts are enqueued: without it the part has nothing to join.
    logger.error('export part of an unknown split; dropped');
    return 'failed';
  }
  if (split.reportedAt !== undefined) return 'completed';

  if (split.publishedAt === undefined) {
    if (!split.done.includes(job.part.index)) {
      try {
        const { client, companyId } = await companyClient(deps, job, logger);
        const staged = await new PeriodExporter({
          store: deps.exporter.store,
          clock: deps.clock,
          logger,
          toolVersion: deps.exporter.toolVersion,
          ...deps.exporter.exporter,
          ...(split.defaultCurrency !== undefined ? { defaultCurrency: split.defaultCurrency } : {}),
        }).stage({
          company: job.companyId,
          period,
          runId: job.runId,
          part: job.part.index,
          range: { dateFrom: job.part.dateFrom, dateTo: job.part.dateTo },
          sources: partSources(client, companyId, job.part, { dateTo: deps.exporter.client?.dateTo, logger }),
          datasets: partDatasets(job),
          formats: job.formats,
        });
        const done = await deps.ledger.completePart(job.splitId, { index: job.part.index, datasets: staged });
        logger.info('export part written', { records: staged.transactions?.records ?? 0, done: done.done, of: done.parts });
        if (done.done < done.parts) return 'completed';
      } catch (thrown) {
        return partFailed(deps, job, thrown, message, last, logger);
      }
    }
    split = (await deps.ledger.getSplit(job.splitId)) ?? split;
    if (split.done.length < split.parts.length) return 'completed';
  }

  let published: SplitPublished;
  if (split.publishedAt === undefined) {
    try {
      published = await publishSplit(deps, job, split, logger);
    } catch (thrown) {
      return partFailed(deps, job, thrown, message, last, logger);
    }
  } else {
    // Published by an earlier delivery, which never publishes again: the period may be another
    // run's by now, and the split's objects garbage.
    published = { manifest: await readManifest(deps.exporter.store, manifestKey(job.companyId, period)) };
  }
  // A failure from here on is the bus's, the ledger's or the store's, not the export's: thrown, so
  // the queue delivers the part again, which finishes the report (no ExportFailed for a published month).
  await reportSplit(deps, job, split, published, logger);
  return 'completed';
}

export interface SplitPublished {
  /** The period's manifest: the split's, or, when it was replaced since, the later run's (or none). */
  manifest: Manifest | undefined;
  /** Datasets whose symlink this call could not write; absent when it wrote none (published earlier). */
  staleSymlinks?: DatasetName[];
}

/**
 * The finishing step: the one manifest of the month from every part's result, published by the
 * same compare-and-swap as a whole-month export, then marked in the ledger (a mark that fails is
 * logged, not thrown: `markPublished`). Returns the period's manifest: the split's, or, when an
 * earlier attempt's write was made and replaced since, the later run's (or none). Idempotent: a
 * split already published (its run is the manifest's, or a dataset's of it, or an unrefused
 * attempt started from a manifest version no longer current) is only marked.
 */
export async function publishSplit(
  deps: ExportWorkerDeps,
  job: ExportPartJob,
  split: SplitRecord,
  logger = deps.logger,
): Promise<SplitPublished> {
  const store = deps.exporter.store;
  const period = parsePeriod(job.period);
  const key = manifestKey(job.companyId, period);
  const expected = await store.head(key);
  const previous = expected ? await readManifest(store, key) : undefined;
  if (previous && (previous.runId === split.runId || Object.values(previous.datasets).some((d) => d.runId === split.runId))) {
    // Published by an earlier attempt that died before marking it: publishing again would count
    // the live objects as superseded.
    await markPublished(deps, split, deps.clock.now(), logger);
    return { manifest: previous };
  }
  // Read after the manifest: an attempt whose write produced, or came before, the version just
  // read is then in the record (the caller's copy may predate another delivery's attempt).
  const attempts = (await deps.ledger.getSplit(split.splitId))?.publishAttempts ?? split.publishAttempts;
  const made = attempts.find((a) => !a.refused && a.from !== expected?.etag);
  if (made) {
    // The manifest has changed since that write was to replace it and names another run: the
    // write was made and a later export replaced it (whose cleanup may have left our objects), or
    // the write failed without an answer and an export was published meanwhile. Either way the
    // period holds a complete export newer than the attempt, which publishing would undo.
    describeSplit(split, logger).warn('split export superseded after an earlier publish attempt; not published again', {
      attemptAt: new Date(made.at).toISOString(),
      manifestRunId: previous?.runId,
    });
    await markPublished(deps, split, deps.clock.now(), logger);
    return { manifest: previous };
  }
  const results = await deps.ledger.partResults(split.splitId);
  const replaced = DATASETS.filter((d) => results.some((r) => r.datasets[d]));
  if (previous && !job.replaceFormats) {
    // Checked at planning too, but the period may have changed since: an export with more formats
    // published while the parts ran would lose them to this manifest and its garbage collection.
    // The split's objects stay unreferenced, for garbage collection.
    const dropped = droppedFormats(previous, replaced, job.formats);
    if (dropped.length > 0) throw new FormatLossError(dropped);
  }
  const missing = split.parts.filter((p) => !results.some((r) => r.index === p.index)).map((p) => `part ${p.index}`);
  const objects = results.flatMap((r) => Object.values(r.datasets).flatMap((d) => d.objects));
  const heads = await Promise.all(objects.map((o) => store.head(o.key)));
  missing.push(...objects.filter((_, i) => heads[i] === undefined).map((o) => o.key));
  if (missing.length > 0) throw new SplitIncompleteError(split.splitId, missing);

  const now = deps.clock.now();
  const manifest = splitManifest({
    split,
    period,
    results,
    previous,
    generatedAt: new Date(now).toISOString(),
    toolVersion: deps.exporter.toolVersion,
    baseUrl: sanitizeBaseUrl(deps.exporter.baseUrl),
    trigger: manifestTriggerOf(job.trigger),
  });
  const attempt = { id: randomUUID(), at: now, ...(expected ? { from: expected.etag } : {}) };
  let recorded = false;
  let published: PublishResult;
  try {
    published = await publishPeriod({
      store,
      company: job.companyId,
      period,
      manifest,
      expected,
      previous,
      now,
      gcGraceMs: deps.exporter.exporter?.gcGraceMs ?? DEFAULT_GC_GRACE_MS,
      logger,
      beforeSwap: async () => {
        await deps.ledger.recordPublishAttempt(split.splitId, attempt);
        recorded = true;
      },
    });
  } catch (error) {
    // A refused condition is the one answer that proves the write was not made: without the mark
    // a redelivery would take the concurrent export's manifest for a replacement of ours.
    if (recorded && error instanceof ConcurrentExportError) {
      try {
        await deps.ledger.refusePublishAttempt(split.splitId, attempt.id);
      } catch (cause) {
        logger.warn('could not mark a refused publish attempt; a redelivery will leave the newer export in place', { error: cause });
      }
    }
    throw error;
  }
  await markPublished(deps, split, now, logger);
  const counts = writtenCounts(published.manifest, replaced);
  countPublished(deps.metrics, { ...counts, staleSymlinks: published.staleSymlinks });
  describeSplit(split, logger).info('split export published', {
    manifestKey: published.manifestKey,
    records: counts.records,
    ...(published.staleSymlinks.length > 0 ? { staleSymlinks: published.staleSymlinks } : {}),
  });
  return { manifest: published.manifest, staleSymlinks: published.staleSymlinks };
}

/**
 * Records the publish in the ledger. A failure is logged and counted, not thrown: the manifest is
 * the period's whatever the ledger says, so the part's failure path (ExportFailed on the last
 * delivery) would report a published month as failed. Nothing depends on the mark alone: a later
 * delivery still finds the publish (the manifest names the split's run, or an unrefused attempt
 * started from a manifest version no longer current), and the report's mark records it too.
 */
async function markPublished(deps: ExportWorkerDeps, split: SplitRecord, at: number, logger: Logger): Promise<void> {
  try {
    await deps.ledger.markSplitPublished(split.splitId, at);
  } catch (error) {
    deps.metrics.add('ExportSplitMarkFailed', 1);
    describeSplit(split, logger).warn('could not mark the split published; reporting it as published', { error });
  }
}

/**
 * What follows the publish: ExportCompleted and, for a monthly job, the run ledger; then the split
 * is marked reported. Until that mark any delivered part of the split repeats this, so a failure
 * of the bus or the ledger loses neither (ExportCompleted is at least once; consumers match on its
 * detail). `manifest` is the period's current one. When another run has replaced the split's
 * since, the split was still published: the company is settled completed, without an
 * ExportCompleted pointing at a manifest that is no longer the split's (the later run reports its
 * own).
 */
async function reportSplit(
  deps: ExportWorkerDeps,
  job: ExportPartJob,
  split: SplitRecord,
  published: SplitPublished,
  logger: Logger,
): Promise<void> {
  const store = deps.exporter.store;
  const period = parsePeriod(job.period);
  const key = manifestKey(job.companyId, period);
  const { manifest } = published;
  if (manifest?.runId === split.runId) {
    const replaced = DATASETS.filter((d) => manifest.datasets[d]?.runId === split.runId);
    let staleSymlinks = published.staleSymlinks;
    if (staleSymlinks === undefined) {
      // A delivery that did not publish cannot know which symlink writes failed, or whether the one
      // that published died before writing them: the store shows what Athena reads now. Counted
      // here too, since a publish that died (or lost the manifest write's answer) counted nothing;
      // a period the publishing delivery counted already, before its report failed, is counted
      // twice, which an alarm at >= 1 can bear and a missed one cannot.
      staleSymlinks = await symlinksBehind(store, manifest);
      if (staleSymlinks.length > 0) {
        deps.metrics.add(ALARMED_METRICS.exportStaleSymlinks.name, staleSymlinks.length);
        describeSplit(split, logger).error('split export published, but Athena still shows the previous export of these datasets', {
          manifestKey: key,
          datasets: staleSymlinks,
          repair: 'export the period again: every export of a period rewrites all its symlinks (acctops doctor lists stale ones)',
        });
      }
    }
    await deps.events.publish([
      exportCompleted(
        {
          companyId: job.companyId,
          period: period.text,
          manifestKey: key,
          manifestUrl: store.url(key),
          runId: split.runId,
          generatedAt: manifest.generatedAt,
          ...writtenCounts(manifest, replaced),
          staleSymlinks,
          carriedOver: DATASETS.filter((d) => manifest.datasets[d] && !replaced.includes(d)),
          formats: [...job.formats],
          source: job.source,
          trigger: job.trigger,
        },
        deps.clock.now(),
      ),
    ]);
  } else {
    describeSplit(split, logger).warn('split export replaced by a later run before it was reported; no ExportCompleted', {
      manifestRunId: manifest?.runId,
    });
  }
  if (job.trigger.kind === 'monthly') {
    const settled = await deps.ledger.settleCompany(job.trigger.runId, job.companyId, 'completed');
    if (settled.mayBeFinished) await finishRunIfDone(deps, job.trigger.runId);
  }
  await deps.ledger.markSplitReported(split.splitId, deps.clock.now());
}

/** A part's failure, reported like a whole-month export's: retried until its last delivery, then ExportFailed and the run ledger. */
async function partFailed(
  deps: ExportWorkerDeps,
  job: ExportPartJob,
  thrown: unknown,
  message: ExportMessage,
  last: boolean,
  logger: ExportWorkerDeps['logger'],
): Promise<JobResult> {
  const error = thrown instanceof PeriodExportError ? thrown.cause : thrown;
  // A missing part result or object does not come back by retrying: the month needs a fresh export.
  const retryable = !(error instanceof SplitIncompleteError) && isRetryableExportFailure(error);
  const final = !retryable || last;
  deps.metrics.add(final ? ALARMED_METRICS.exportFailed.name : 'ExportAttemptFailed', 1);
  // As a whole month's export: a retry is WARN, the failure that stays is ERROR.
  if (final) logger.error('export part failed; the month stays unpublished', { error, retryable });
  else logger.warn('export part attempt failed; the queue will retry', { error, retryable });
  if (!final) return 'retry';
  const period = parsePeriod(job.period);
  const key = manifestKey(job.companyId, period);
  await deps.events.publish([
    exportFailed(
      {
        companyId: job.companyId,
        period: period.text,
        manifestKey: key,
        manifestUrl: deps.exporter.store.url(key),
        previousExport: (await deps.exporter.store.head(key)) !== undefined,
        retryable,
        attempts: message.receiveCount,
        runId: job.runId,
        source: job.source,
        trigger: job.trigger,
      },
      error,
      deps.clock.now(),
    ),
  ]);
  if (job.trigger.kind === 'monthly') {
    const settled = await deps.ledger.settleCompany(job.trigger.runId, job.companyId, 'failed');
    if (settled.mayBeFinished) await finishRunIfDone(deps, job.trigger.runId);
  }
  return retryable ? 'retry' : 'failed';
}
