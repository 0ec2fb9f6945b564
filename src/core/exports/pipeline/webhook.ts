import { ALARMED_METRICS } from '../../../../contract/metrics';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { DEFAULT_TIME_ZONE, EARLIEST_PERIOD, EarlyPeriodError, FuturePeriodError, periodOpen } from '../formats/period';
import type { Clock } from '../../shared/clock';
import { issuesFromZod, type FieldIssue } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics';
import type { CompanyAllowlist } from './company-allowlist';
import type { ExportQueue } from './export-jobs';
import { onDemandJobs, refuseFutureRequest, webhookExportRequestSchema } from './on-demand';

/**
 * The export webhook (docs/exports.md, "Webhook"): an HTTP POST whose body is signed with a shared
 * secret. Header names are lower case here (HTTP headers are case-insensitive; Lambda Function
 * URLs deliver them lower-cased).
 */
export const WEBHOOK_HEADERS = {
  /** `v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`; several comma-separated during a secret change. */
  signature: 'x-acctops-signature',
  /** Unix time in seconds when the sender signed. */
  timestamp: 'x-acctops-timestamp',
} as const;

export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;
export const WEBHOOK_MAX_BODY_BYTES = 64 * 1024;
const SIGNATURE_SCHEME = 'v1';

export interface WebhookRequest {
  method: string;
  /** Lower-case names. */
  headers: Readonly<Record<string, string | undefined>>;
  /** The body exactly as received (the signature covers these bytes). */
  body: Buffer;
  /**
   * Who sent it, for the log only (a Function URL's `requestContext.http.sourceIp` and
   * `userAgent`): a refusal must say where the request came from, never by quoting a header
   * that could carry a secret.
   */
  source?: { ip?: string; userAgent?: string };
}

export interface WebhookResponse {
  status: number;
  body:
    | {
        accepted: true;
        eventId: string;
        /** `monthOpen`: the current month (in the export's time zone), exported as it stands so far. */
        exports: { companyId: string; period: string; monthOpen: boolean }[];
      }
    | { error: { code: string; message: string; issues?: FieldIssue[] } };
}

/** The signing secrets currently accepted: the current one and, during a change, the previous one. */
export interface WebhookSecrets {
  signingSecrets(): Promise<readonly string[]>;
}

/**
 * What a claim found: `claimed` (ours now, until its lease ends), `in_flight` (another delivery
 * holds an unconfirmed lease: it is enqueueing now, or died doing so and the lease will lapse) or
 * `accepted` (confirmed: a replay).
 */
export type ClaimResult = 'claimed' | 'in_flight' | 'accepted';

/**
 * Remembers event ids already accepted, until a replay would fail the timestamp check anyway.
 * A claim is first a short lease; only `confirm`, after the jobs are enqueued, makes it an
 * acceptance. A function that dies (a timeout) between claim and enqueue leaves a lease that lapses
 * on its own, so the sender's retry goes through instead of meeting 409 until the replay window ends.
 */
export interface ReplayGuard {
  /** Claims `eventId` until `leaseUntil` unless an unexpired claim exists (then says which kind). */
  claim(eventId: string, leaseUntil: number): Promise<ClaimResult>;
  /** Turns this process's claim into an acceptance remembered until `expiresAt`. */
  confirm(eventId: string, expiresAt: number): Promise<void>;
  /** Forgets a claim whose request ended with nothing enqueued, so the sender may send it again. */
  release(eventId: string): Promise<void>;
}

/**
 * How long a claim holds before its jobs are enqueued: longer than the webhook function's timeout
 * (10 s, lib/constructs/exports/webhook.ts), so that a live delivery always confirms within its lease, and
 * well inside SQS FIFO's five-minute deduplication window, so that if a confirm is lost after the
 * enqueue a retry's jobs carry the same deduplication ids (`on_demand:<event id>`) and are dropped.
 */
export const WEBHOOK_CLAIM_LEASE_MS = 30_000;

export interface WebhookDeps {
  secrets: WebhookSecrets;
  replay: ReplayGuard;
  queue: ExportQueue;
  /**
   * Tenant isolation: the companies this webhook may request exports for. In AWS the company
   * registry (registryAllowlist: a cached GetItem per company); a set of lower-case ids in tests.
   */
  allowedCompanies: CompanyAllowlist | ReadonlySet<string>;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** @default WEBHOOK_MAX_BODY_BYTES */
  maxBodyBytes?: number;
  /** @default WEBHOOK_TOLERANCE_MS */
  toleranceMs?: number;
  /** The export's time zone (EXPORT_TIME_ZONE): which month is the current one. @default DEFAULT_TIME_ZONE */
  timeZone?: string;
}

/**
 * Refusals that are not a sender's misconfiguration, counted apart from the alarmed
 * `WebhookRejected` and never alarmed (decision 79 in docs/architecture.md): a request without a
 * signature header (a scanner, a probe, a wrong method or path) and a replay of an event already
 * accepted (a sender retrying after it lost our 202).
 */
export const WEBHOOK_QUIET_METRICS = { unsigned: 'WebhookUnsigned', replayed: 'WebhookReplayed' } as const;

/** A user agent is the sender's own text: kept to this many characters in a log line. */
const USER_AGENT_LOGGED_CHARS = 200;

class Rejection {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
    readonly issues?: FieldIssue[],
  ) {}
}

/**
 * Receives one webhook delivery and answers 202 after enqueueing the export jobs, or refuses it
 * with a 4xx that names the reason and enqueues nothing. The checks, in order:
 *
 * 0. cheap ones that need no secret: method POST (405), `Content-Type: application/json` with no
 *    charset but UTF-8, quoted or not (415), body size (413);
 * 1. the HMAC-SHA256 signature over `<timestamp>.<body>` with a shared secret, compared in
 *    constant time (401);
 * 2. the timestamp, at most 5 minutes away from now in either direction (401);
 * 3. the event id (a signed body member), never accepted before (409), and not being accepted by
 *    another delivery right now (503, see ReplayGuard: a claim is a short lease until confirmed);
 * 4. the body, with zod (400; a leading UTF-8 byte order mark is ignored), no month after the
 *    current one (400 `period_in_future`) nor before 2000-01 (400 `period_too_early`), and the company, which must be one this webhook serves (403).
 *
 * A claimed event id is released again when a later step refuses the request or the queue fails,
 * so that the sender can deliver the same event again. A failing dependency (the secret, the
 * replay table, the queue) is a 503, never a 4xx.
 */
export async function receiveExportWebhook(deps: WebhookDeps, request: WebhookRequest): Promise<WebhookResponse> {
  const now = deps.clock.now();
  try {
    const response = await handle(deps, request, now);
    deps.metrics.add('WebhookAccepted', 1);
    return response;
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    const metric = refusalMetric(error, request);
    deps.metrics.add(metric, 1);
    deps.logger.warn('webhook refused', {
      status: error.status,
      code: error.code,
      reason: error.message,
      issues: error.issues,
      metric,
      ...sourceFields(request),
    });
    return {
      status: error.status,
      body: { error: { code: error.code, message: error.message, ...(error.issues ? { issues: error.issues } : {}) } },
    };
  }
}

async function handle(deps: WebhookDeps, request: WebhookRequest, now: number): Promise<WebhookResponse> {
  const maxBytes = deps.maxBodyBytes ?? WEBHOOK_MAX_BODY_BYTES;
  const tolerance = deps.toleranceMs ?? WEBHOOK_TOLERANCE_MS;
  if (request.method.toUpperCase() !== 'POST') throw new Rejection(405, 'method_not_allowed', 'only POST is accepted');
  if (!isJson(request.headers['content-type'])) {
    throw new Rejection(415, 'unsupported_media_type', 'Content-Type must be application/json (UTF-8)');
  }
  if (request.body.length > maxBytes) throw new Rejection(413, 'payload_too_large', `the body may have at most ${maxBytes} bytes`);

  const timestampText = request.headers[WEBHOOK_HEADERS.timestamp];
  const signatures = parseSignatures(request.headers[WEBHOOK_HEADERS.signature]);
  if (timestampText === undefined || signatures.length === 0) {
    throw new Rejection(401, 'signature_missing', `${WEBHOOK_HEADERS.signature} (v1=<hex>) and ${WEBHOOK_HEADERS.timestamp} are required`);
  }
  const secrets = await unavailableOnError(deps.logger, 'webhook secret could not be read', () => deps.secrets.signingSecrets());
  const valid = secrets.some((secret) => {
    const expected = hmac(secret, timestampText, request.body);
    // timingSafeEqual needs equal lengths; every candidate is 32 bytes already (parseSignatures).
    return signatures.some((candidate) => timingSafeEqual(candidate, expected));
  });
  if (!valid) throw new Rejection(401, 'signature_invalid', 'the signature does not match the body and timestamp');

  const timestamp = /^\d{1,12}$/.test(timestampText) ? Number(timestampText) * 1000 : Number.NaN;
  if (Number.isNaN(timestamp) || Math.abs(now - timestamp) > tolerance) {
    throw new Rejection(
      401,
      'timestamp_out_of_tolerance',
      `the timestamp must be within ${tolerance / 60_000} minutes of now (Unix seconds)`,
    );
  }

  let body: unknown;
  try {
    // RFC 8259 §8.1 lets a parser ignore a byte order mark; the signature covered the bytes as sent.
    const text = request.body.toString('utf8');
    body = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    // No cause or parser message: it would quote the body.
    throw new Rejection(400, 'body_invalid', 'the body is not JSON', [{ path: '', message: 'not valid JSON' }]);
  }
  const id = (body as { id?: unknown } | null)?.id;
  const eventId = webhookExportRequestSchema.shape.id.safeParse(id);
  if (!eventId.success) throw new Rejection(400, 'body_invalid', 'the body needs an event id', issuesFromZod(eventId.error, 'id'));
  const claim = await unavailableOnError(deps.logger.child({ eventId: eventId.data }), 'replay guard could not be asked', () =>
    deps.replay.claim(eventId.data, now + WEBHOOK_CLAIM_LEASE_MS),
  );
  if (claim === 'accepted') {
    throw new Rejection(409, 'event_replayed', `event ${eventId.data} was already accepted`);
  }
  if (claim === 'in_flight') {
    // Not 409: the other delivery may have died before enqueueing; its lease lapses and a retry wins.
    throw new Rejection(
      503,
      'event_in_flight',
      `event ${eventId.data} is being accepted by another delivery; send it again in ${WEBHOOK_CLAIM_LEASE_MS / 1000} s`,
    );
  }

  try {
    const parsed = webhookExportRequestSchema.safeParse(body);
    if (!parsed.success) throw new Rejection(400, 'body_invalid', 'the body is not an export request', issuesFromZod(parsed.error));
    const timeZone = deps.timeZone ?? DEFAULT_TIME_ZONE;
    try {
      refuseFutureRequest(parsed.data, { now, timeZone });
    } catch (error) {
      if (error instanceof EarlyPeriodError) {
        throw new Rejection(
          400,
          error.code,
          `the request names a month before ${EARLIEST_PERIOD}, the earliest exported (a mistyped year?)`,
          error.issues,
        );
      }
      if (!(error instanceof FuturePeriodError)) throw error;
      throw new Rejection(
        400,
        error.code,
        `the request names a month after the current one (${error.currentPeriod}, ${timeZone}): it has no data yet`,
        error.issues,
      );
    }
    const list = deps.allowedCompanies;
    const allowed =
      'allows' in list
        ? await unavailableOnError(
            deps.logger.child({ eventId: eventId.data, companyId: parsed.data.companyId }),
            'company registry could not be asked',
            () => list.allows(parsed.data.companyId, deps.logger),
          )
        : list.has(parsed.data.companyId);
    if (!allowed) {
      throw new Rejection(403, 'company_not_allowed', `this webhook does not serve company ${parsed.data.companyId}`);
    }
    const jobs = onDemandJobs(parsed.data, { kind: 'on_demand', requestId: eventId.data, via: 'webhook' });
    const periods = jobs.map((j) => j.period);
    await unavailableOnError(
      deps.logger.child({ eventId: eventId.data, companyId: parsed.data.companyId, periods }),
      'webhook export could not be enqueued',
      () => deps.queue.enqueue(jobs),
    );
    // A replay must arrive within the tolerance; after that the timestamp check refuses it anyway.
    try {
      await deps.replay.confirm(eventId.data, timestamp + tolerance + 60_000);
    } catch (confirmError) {
      // The jobs are enqueued: answer 202. A retry after the lease enqueues them again with the same
      // deduplication ids, which the FIFO queue drops (WEBHOOK_CLAIM_LEASE_MS).
      deps.logger.error('could not confirm an accepted webhook event', { eventId: eventId.data, error: confirmError });
    }
    deps.logger.info('webhook export accepted', {
      eventId: eventId.data,
      companyId: parsed.data.companyId,
      periods,
      ...sourceFields(request),
    });
    return {
      status: 202,
      body: {
        accepted: true,
        eventId: eventId.data,
        exports: jobs.map((j) => ({ companyId: j.companyId, period: j.period, monthOpen: periodOpen(j.period, now, timeZone) })),
      },
    };
  } catch (error) {
    try {
      await deps.replay.release(eventId.data);
    } catch (releaseError) {
      // The sender then gets 409 for this id until the claim expires: it must use a new event id.
      deps.logger.error('could not release the claim of a refused webhook event', { eventId: eventId.data, error: releaseError });
    }
    throw error;
  }
}

/**
 * Which metric a refusal counts in. Only a request that carried a signature header and was refused
 * for something other than a replay is a sender in trouble (`WebhookRejected`, alarmed); whether
 * the signature was valid does not matter, since a wrong secret is the case the alarm is for.
 */
function refusalMetric(rejection: Rejection, request: WebhookRequest): string {
  if (rejection.status >= 500) return ALARMED_METRICS.webhookUnavailable.name;
  if (rejection.code === 'event_replayed') return WEBHOOK_QUIET_METRICS.replayed;
  if (!request.headers[WEBHOOK_HEADERS.signature]?.trim()) return WEBHOOK_QUIET_METRICS.unsigned;
  return ALARMED_METRICS.webhookRejected.name;
}

/** Where a request came from, for its log line: the connection's address and the user agent, cut short. */
function sourceFields(request: WebhookRequest): { sourceIp: string | null; userAgent: string | null } {
  const userAgent = request.source?.userAgent;
  return {
    sourceIp: request.source?.ip ?? null,
    userAgent: userAgent === undefined ? null : userAgent.slice(0, USER_AGENT_LOGGED_CHARS),
  };
}

/** A failing dependency is a 503 (the sender retries), never a 4xx that would make it give up. */
async function unavailableOnError<T>(logger: Logger, message: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    logger.error(message, { error });
    throw new Rejection(503, 'unavailable', 'the webhook cannot take requests right now; send the event again');
  }
}

/**
 * The signature header for `body` signed at `timestamp` (Unix seconds): what a sender puts in
 * `X-Acctops-Signature`. Exported for senders written in TypeScript, the docs' example and tests.
 */
export function signWebhook(secret: string, timestamp: number | string, body: string | Buffer): string {
  return `${SIGNATURE_SCHEME}=${hmac(secret, String(timestamp), typeof body === 'string' ? Buffer.from(body, 'utf8') : body).toString('hex')}`;
}

function hmac(secret: string, timestamp: string, body: Buffer): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(body).digest();
}

/** The `v1=` entries of the header as 32-byte buffers; anything else is ignored. */
function parseSignatures(header: string | undefined): Buffer[] {
  if (!header) return [];
  return header
    .split(',')
    .map((part) => part.trim().split('='))
    .filter(([scheme, hex]) => scheme === SIGNATURE_SCHEME && hex !== undefined && /^[0-9a-f]{64}$/i.test(hex))
    .map(([, hex]) => Buffer.from(hex!, 'hex'));
}

/**
 * `application/json`, with no charset or UTF-8 only: `charset=utf-8` or the quoted
 * `charset="UTF-8"` (RFC 9110 §5.6.6: a parameter value may be a quoted string; charset names are
 * case-insensitive). Other parameters are ignored.
 */
function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const [type, ...params] = contentType.split(';').map((part) => part.trim());
  if (type?.toLowerCase() !== 'application/json') return false;
  return params.every((param) => {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') return true;
    let value = param.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1).replace(/\\(.)/g, '$1');
    return value.toLowerCase() === 'utf-8';
  });
}
