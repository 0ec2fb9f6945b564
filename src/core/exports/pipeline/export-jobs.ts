import { createHash } from 'node:crypto';
import * as z from 'zod';
import { parseJsonWith, parseWith } from '../../shared/errors';
import { DATASETS, FORMATS, type DatasetName, type ExportFormat } from '../formats/datasets';
import type { ManifestTrigger } from '../formats/manifest';
import { lazySchema } from '../../shared/lazy-schema';
import { caseFoldedUuid as uuid } from '../../shared/uuid';

/**
 * The export queue's messages (docs/exports.md, "The pipeline"). Two kinds:
 *
 * - `export`: one company and one month, read through one source, written in `formats`.
 * - `discover`: one institution user of a monthly run; the worker lists the user's companies and
 *   enqueues an `export` for each company no other source of the run covers.
 *
 * Message bodies hold identifiers only, never a credential: the worker fetches the credential
 * when it runs (the company's key secret, or the user's token from the token store).
 */

const month = /* @__PURE__ */ lazySchema(() => z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'expected a month as YYYY-MM'));
/** Identifiers that become part of a deduplication id: plain tokens, bounded. */
const token = /* @__PURE__ */ lazySchema(() => z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'expected 1-128 letters, digits or . _ : -'));

export const datasetsSchema = /* @__PURE__ */ lazySchema(() => z.array(z.enum(DATASETS)).min(1).max(DATASETS.length));
export const formatsSchema = /* @__PURE__ */ lazySchema(() => z.array(z.enum(FORMATS)).min(1).max(FORMATS.length));

/** How an export reaches the company: the company's own API key, or an institution user's token. */
export const exportSourceSchema = /* @__PURE__ */ lazySchema(() =>
  z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('apiKey') }),
    z.strictObject({ kind: z.literal('user'), externalId: uuid }),
  ]),
);
export type ExportSource = z.output<typeof exportSourceSchema>;

/** Why an export runs: the monthly schedule (`runId` names the run) or a request (event or webhook). */
export const exportTriggerSchema = /* @__PURE__ */ lazySchema(() =>
  z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('monthly'), runId: token }),
    z.strictObject({ kind: z.literal('on_demand'), requestId: token, via: z.enum(['event', 'webhook', 'cli']) }),
  ]),
);
export type ExportTrigger = z.output<typeof exportTriggerSchema>;

export const exportJobSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    type: z.literal('export'),
    companyId: uuid,
    period: month,
    /** Default: every dataset. */
    datasets: datasetsSchema.optional(),
    formats: formatsSchema,
    source: exportSourceSchema,
    trigger: exportTriggerSchema,
    /** Allow fewer formats than the period's current export has (`acctops export --replace-formats`). */
    replaceFormats: z.boolean().optional(),
  }),
);
export type ExportJob = z.output<typeof exportJobSchema>;

const day = /* @__PURE__ */ lazySchema(() => z.iso.date());

/**
 * One part of a month too large for one invocation (docs/fleet-exports.md): the transactions of
 * `dateFrom`..`dateTo` (inclusive, local dates of valueDate), written as file `index` of the
 * split's run. Part 0 also writes the month's other datasets. The split's ledger item holds what
 * the parts need in common; the message repeats it so a part runs from its message alone.
 */
export const exportPartJobSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    type: z.literal('export_part'),
    companyId: uuid,
    period: month,
    splitId: token,
    /** The run id of every part's files (one staging folder, `run=<runId>/part-0000N.<ext>`). */
    runId: token,
    part: z.strictObject({
      index: z.number().int().min(0).max(9999),
      count: z.number().int().min(2).max(10000),
      dateFrom: day,
      dateTo: day,
    }),
    datasets: datasetsSchema.optional(),
    formats: formatsSchema,
    source: exportSourceSchema,
    trigger: exportTriggerSchema,
    /** The job's replaceFormats: the publish checks for lost formats again, against the manifest it replaces. */
    replaceFormats: z.boolean().optional(),
  }),
);
export type ExportPartJob = z.output<typeof exportPartJobSchema>;

export const discoverJobSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    type: z.literal('discover'),
    externalId: uuid,
    period: month,
    datasets: datasetsSchema.optional(),
    formats: formatsSchema,
    trigger: z.strictObject({ kind: z.literal('monthly'), runId: token }),
  }),
);
export type DiscoverJob = z.output<typeof discoverJobSchema>;

export const queuedJobSchema = /* @__PURE__ */ lazySchema(() =>
  z.discriminatedUnion('type', [exportJobSchema, discoverJobSchema, exportPartJobSchema]),
);
export type QueuedJob = ExportJob | DiscoverJob | ExportPartJob;

/**
 * Where jobs go: SQS FIFO in AWS, memory in tests. Each job is sent with `messageGroupOf(job)`
 * (one company and month never runs twice at once) and `deduplicationIdOf(job)` (a job enqueued
 * twice for the same reason within SQS's five-minute window is delivered once).
 */
export interface ExportQueue {
  /** Enqueues every job or throws ExportEnqueueError; a retry may enqueue some twice, which is harmless. */
  enqueue(jobs: readonly QueuedJob[]): Promise<void>;
}

/**
 * The FIFO message group: `<company>#<period>` for an export, so that the monthly run, an
 * on-demand request and a redelivery of one period are processed one after another; a discovery
 * is grouped by its user.
 */
export function messageGroupOf(job: QueuedJob): string {
  // Parts of one split run in parallel (a group each); they write disjoint files of one run.
  if (job.type === 'export_part') return `${job.companyId}#${job.period}#part${job.part.index}`;
  return job.type === 'export' ? `${job.companyId}#${job.period}` : `user#${job.externalId}`;
}

/** SHA-256 of what makes a job the same job: its trigger, kind, subject and month (and selection). */
export function deduplicationIdOf(job: QueuedJob): string {
  if (job.type === 'export_part') return createHash('sha256').update(`part|${job.splitId}|${job.part.index}`).digest('hex');
  const trigger = job.trigger.kind === 'monthly' ? `monthly:${job.trigger.runId}` : `on_demand:${job.trigger.requestId}`;
  const subject = job.type === 'export' ? job.companyId : job.externalId;
  const replace = job.type === 'export' && job.replaceFormats ? '|replace' : '';
  const selection = `${(job.datasets ?? DATASETS).join(',')}|${job.formats.join(',')}${replace}`;
  return createHash('sha256').update(`${trigger}|${job.type}|${subject}|${job.period}|${selection}`).digest('hex');
}

/** The wire form of a job, validated on the way out as well as in. */
export function encodeJob(job: QueuedJob): string {
  return JSON.stringify(parseWith(queuedJobSchema, job, 'export job'));
}

/** Parses a message body; a ValidationError names the field (`(root)` for text that is not JSON). */
export function decodeJob(body: string, source = 'export job'): QueuedJob {
  return parseJsonWith(queuedJobSchema, body, source);
}

/**
 * The id of a monthly run: the month and a digest of the scheduler's execution id, so that a
 * retried invocation of the same schedule run plans the same run (idempotently) and two runs of a
 * month never share an id.
 */
export function monthlyRunId(period: string, executionId: string): string {
  const digest = createHash('sha256').update(executionId).digest('hex').slice(0, 16);
  return `m${period.replace('-', '')}-${digest}`;
}

/**
 * What the manifest records of a job's trigger (decision 109): the monthly run's id, or the
 * request's. Nothing for the CLI's local and direct exports, whose request id is a constant.
 */
export function manifestTriggerOf(trigger: ExportTrigger): ManifestTrigger | undefined {
  if (trigger.kind === 'monthly') return { kind: 'monthly', id: trigger.runId };
  return trigger.via === 'cli' ? undefined : { kind: 'on_demand', id: trigger.requestId };
}

export function defaultDatasets(datasets: readonly DatasetName[] | undefined): DatasetName[] {
  return DATASETS.filter((d) => (datasets ?? DATASETS).includes(d));
}

export function defaultFormats(formats: readonly ExportFormat[] | undefined): ExportFormat[] {
  return FORMATS.filter((f) => (formats ?? FORMATS).includes(f));
}
