import * as z from 'zod';
import { datasetsSchema, defaultFormats, formatsSchema, type ExportJob, type ExportTrigger } from './export-jobs';
import { parsePeriod, periodOf, refuseEarlyPeriod, refuseFuturePeriod, type Period } from '../formats/period';
import { lazySchema } from '../../shared/lazy-schema';
import { caseFoldedUuid as uuid } from '../../shared/uuid';

/** A request covers at most this many months (three years): a bigger backfill is several requests. */
export const MAX_MONTHS_PER_REQUEST = 36;

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;
const month = /* @__PURE__ */ lazySchema(() => z.string().regex(MONTH, 'expected a month as YYYY-MM'));
/** A month, or a day of it: a range is widened to the whole months it touches. */
const monthOrDay = /* @__PURE__ */ lazySchema(() => z.union([month, z.iso.date()], { error: 'expected YYYY-MM or YYYY-MM-DD' }));

const requestFields = {
  companyId: uuid,
  /** One month. */
  period: month.optional(),
  /** A range, both ends inclusive; each month it touches is exported whole. */
  from: monthOrDay.optional(),
  to: monthOrDay.optional(),
  /** Default: all three. */
  datasets: datasetsSchema.optional(),
  /** Default: all three. */
  formats: formatsSchema.optional(),
};

function checkRange(request: { period?: string; from?: string; to?: string }, ctx: z.RefinementCtx): void {
  const range = request.from !== undefined || request.to !== undefined;
  if ((request.period === undefined) === !range) {
    ctx.addIssue({ code: 'custom', path: ['period'], message: 'give either period or from and to' });
    return;
  }
  if (!range) return;
  if (request.from === undefined || request.to === undefined) {
    ctx.addIssue({ code: 'custom', path: [request.from === undefined ? 'from' : 'to'], message: 'from and to go together' });
    return;
  }
  const from = request.from.slice(0, 7);
  const to = request.to.slice(0, 7);
  // zod runs refinements after field issues it can continue past: a malformed end is reported there.
  if (!MONTH.test(from) || !MONTH.test(to)) return;
  if (from > to) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
  else if (monthsBetween(from, to).length > MAX_MONTHS_PER_REQUEST) {
    ctx.addIssue({ code: 'custom', path: ['to'], message: `a request covers at most ${MAX_MONTHS_PER_REQUEST} months` });
  }
}

/**
 * The detail of an `ExportRequested` event (EventBridge). `userExternalId` exports through that
 * institution user's token (the company must be one of the user's); without it the company's own
 * API key is used.
 */
export const exportRequestedSchema = /* @__PURE__ */ lazySchema(() =>
  z
    .strictObject({
      ...requestFields,
      userExternalId: uuid.optional(),
      /** Allow fewer formats than the period's current export has (`acctops export --replace-formats` in AWS mode). */
      replaceFormats: z.boolean().optional(),
      /**
       * The sender's id of the request, in place of the event's (which EventBridge assigns): the
       * manifest records it (`trigger`), so the sender can tell its export from another published
       * meanwhile (`acctops export` in AWS mode). Makes the jobs' deduplication ids as the event id would.
       */
      requestId: z
        .string()
        .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'expected 1-128 letters, digits or . _ : -')
        .optional(),
    })
    .superRefine(checkRange),
);
export type ExportRequested = z.output<typeof exportRequestedSchema>;

/**
 * The webhook's body: the same request plus the sender's event `id` (signed with the body, so a
 * replay cannot swap it). A webhook can only use the company's own API key.
 */
export const webhookExportRequestSchema = /* @__PURE__ */ lazySchema(() =>
  z
    .strictObject({
      id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'expected 1-128 letters, digits or . _ : -'),
      type: z.literal('ExportRequested').optional(),
      ...requestFields,
    })
    .superRefine(checkRange),
);
export type WebhookExportRequest = z.output<typeof webhookExportRequestSchema>;

/** The months of a request, oldest first. */
export function requestedMonths(request: { period?: string; from?: string; to?: string }): Period[] {
  if (request.period !== undefined) return [parsePeriod(request.period)];
  return monthsBetween(request.from!.slice(0, 7), request.to!.slice(0, 7));
}

/**
 * Refuses a request that names a month after the current one in `timeZone` (FuturePeriodError
 * naming `period`, or `to` for a range, after `prefix`), or one before EARLIEST_PERIOD
 * (EarlyPeriodError naming `period`, or `from`), before anything is queued: the CLI's rule
 * (`acctops export --month`). A range is refused whole, not cut at either end. The current month
 * is allowed and exported as it stands so far (decisions 79 and 87 in docs/architecture.md).
 */
export function refuseFutureRequest(
  request: { period?: string; from?: string; to?: string },
  at: { now: number; timeZone: string },
  prefix = '',
): void {
  if (request.period !== undefined) {
    refuseEarlyPeriod(request.period, `${prefix}period`);
    refuseFuturePeriod(request.period, at.now, at.timeZone, `${prefix}period`);
    return;
  }
  if (request.from !== undefined) refuseEarlyPeriod(request.from.slice(0, 7), `${prefix}from`);
  if (request.to !== undefined) refuseFuturePeriod(request.to.slice(0, 7), at.now, at.timeZone, `${prefix}to`);
}

/** One export job per requested month, all for the same company, source and trigger. */
export function onDemandJobs(
  request: {
    companyId: string;
    period?: string;
    from?: string;
    to?: string;
    datasets?: ExportJob['datasets'];
    formats?: ExportJob['formats'];
    userExternalId?: string;
    replaceFormats?: boolean;
  },
  trigger: Extract<ExportTrigger, { kind: 'on_demand' }>,
): ExportJob[] {
  const source: ExportJob['source'] = request.userExternalId ? { kind: 'user', externalId: request.userExternalId } : { kind: 'apiKey' };
  return requestedMonths(request).map((period) => ({
    type: 'export',
    companyId: request.companyId,
    period: period.text,
    ...(request.datasets ? { datasets: [...request.datasets] } : {}),
    formats: defaultFormats(request.formats),
    source,
    trigger,
    ...(request.replaceFormats ? { replaceFormats: true } : {}),
  }));
}

function monthsBetween(from: string, to: string): Period[] {
  const out: Period[] = [];
  let current = parsePeriod(from);
  const last = parsePeriod(to);
  // Bounded: the schema caps a range before it is expanded, and the loop stops past the cap anyway.
  while (current.text <= last.text && out.length <= MAX_MONTHS_PER_REQUEST) {
    out.push(current);
    current = current.month === 12 ? periodOf(current.year + 1, 1) : periodOf(current.year, current.month + 1);
  }
  return out;
}
