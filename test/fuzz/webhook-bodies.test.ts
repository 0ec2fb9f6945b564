import fc from 'fast-check';
import { MemoryExportQueue } from '../helpers/memory-export-queue';
import { MemoryReplayGuard } from '../helpers/memory-replay-guard';
import { decodeJob } from '../../src/core/exports/pipeline/export-jobs';
import { MAX_MONTHS_PER_REQUEST } from '../../src/core/exports/pipeline/on-demand';
import { WEBHOOK_HEADERS, WEBHOOK_MAX_BODY_BYTES, receiveExportWebhook, signWebhook } from '../../src/core/exports/pipeline/webhook';
import { ManualClock } from '../../src/core/shared/clock';
import { MemoryLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { FUZZ_RUNS, FUZZ_SEED, unknownKey } from './support';

/**
 * Correctly signed webhook deliveries with fuzzed bodies: past the signature, the timestamp and the
 * replay check, into the body's validation. What must hold: never a throw or a 5xx; 202 exactly
 * when jobs were enqueued, only for the served company, at most 36 months and none after the current
 * one; every refusal a 4xx whose code says why and whose issues name the field; nothing enqueued on a refusal.
 */

const SERVED = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const OTHER = '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d';
const clock = new ManualClock(Date.UTC(2026, 10, 3, 10, 0));
const logger = new MemoryLogger();

const month = fc
  .tuple(fc.integer({ min: 1990, max: 2100 }), fc.integer({ min: 1, max: 12 }))
  .map(([y, m]) => `${y}-${String(m).padStart(2, '0')}`);
/** A month before the clock's: what a valid request names (a range from it may still end in the future). */
const pastMonth = fc
  .tuple(fc.integer({ min: 1990, max: 2025 }), fc.integer({ min: 1, max: 12 }))
  .map(([y, m]) => `${y}-${String(m).padStart(2, '0')}`);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const field = {
  id: fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/), fc.string({ maxLength: 140 }), fc.integer()),
  companyId: fc.oneof(fc.constantFrom(SERVED, SERVED.toUpperCase(), OTHER), fc.uuid(), fc.string({ maxLength: 40 }), fc.constant(null)),
  period: maybe(fc.oneof(month, fc.string({ maxLength: 10 }), fc.constant('2026-13'))),
  from: maybe(
    fc.oneof(
      month,
      month.map((m) => `${m}-15`),
      fc.string({ maxLength: 12 }),
    ),
  ),
  to: maybe(
    fc.oneof(
      month,
      month.map((m) => `${m}-28`),
      fc.string({ maxLength: 12 }),
    ),
  ),
  datasets: maybe(
    fc.oneof(fc.subarray(['transactions', 'tax_reports', 'categories']), fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 })),
  ),
  formats: maybe(
    fc.oneof(
      fc.subarray(['jsonl', 'csv', 'parquet']),
      fc.array(fc.constantFrom('xlsx', 'CSV', 'json', ''), { minLength: 1, maxLength: 3 }),
    ),
  ),
  type: maybe(fc.constantFrom('ExportRequested', 'Other')),
};

/**
 * Requests that are valid as generated (one month, or a range of up to four years: some over the
 * cap, some naming or ending in a month after the current one).
 */
const plausible = fc.oneof(
  fc.record({
    id: fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/),
    companyId: fc.constantFrom(SERVED, SERVED.toUpperCase()),
    period: pastMonth,
  }),
  fc.record({ id: fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/), companyId: fc.constant(SERVED), period: month }),
  fc.tuple(fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/), pastMonth, fc.integer({ min: 0, max: 48 })).map(([id, from, span]) => {
    const [y, m] = from.split('-').map(Number) as [number, number];
    const end = y * 12 + (m - 1) + span;
    return { id, companyId: SERVED, from, to: `${Math.floor(end / 12)}-${String((end % 12) + 1).padStart(2, '0')}`, formats: ['parquet'] };
  }),
);

const body = fc.oneof(
  { weight: 3, arbitrary: plausible },
  { weight: 6, arbitrary: fc.record(field, { requiredKeys: ['id', 'companyId'] }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.record(field, { requiredKeys: ['id', 'companyId'] }), unknownKey(Object.keys(field)))
      .map(([b, k]) => ({ ...b, [k]: CANARY.refreshToken })),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

async function deliver(value: unknown) {
  const queue = new MemoryExportQueue();
  const metrics = new MemoryMetrics();
  const text = JSON.stringify(value) ?? 'null';
  const timestamp = Math.floor(clock.now() / 1000);
  const response = await receiveExportWebhook(
    {
      secrets: { signingSecrets: () => Promise.resolve([CANARY.webhookSecret]) },
      replay: new MemoryReplayGuard(clock),
      queue,
      allowedCompanies: new Set([SERVED]),
      clock,
      logger,
      metrics,
    },
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [WEBHOOK_HEADERS.timestamp]: String(timestamp),
        [WEBHOOK_HEADERS.signature]: signWebhook(CANARY.webhookSecret, timestamp, text),
      },
      body: Buffer.from(text, 'utf8'),
    },
  );
  return { response, queue, metrics, size: Buffer.byteLength(text) };
}

describe('webhook bodies (fast-check, fixed seed)', () => {
  it('a signed body is accepted for the served company only, or refused with a 4xx naming the field; nothing is enqueued on a refusal', async () => {
    let accepted = 0;
    let future = 0;
    await fc.assert(
      fc.asyncProperty(body, async (value) => {
        const { response, queue, metrics } = await deliver(value);
        expectNoCanaries(response, 'webhook response');
        if (response.status === 202) {
          accepted += 1;
          const jobs = queue.messages.map((m) => decodeJob(m.body));
          expect(jobs.length).toBeGreaterThanOrEqual(1);
          expect(jobs.length).toBeLessThanOrEqual(MAX_MONTHS_PER_REQUEST);
          expect(new Set(jobs.map((j) => j.type === 'export' && j.companyId))).toEqual(new Set([SERVED]));
          expect(jobs.every((j) => j.type === 'export' && j.period <= '2026-11')).toBe(true);
          expect(metrics.sum('WebhookAccepted')).toBe(1);
          return;
        }
        expect(queue.messages).toEqual([]);
        expect([400, 403]).toContain(response.status);
        const error = (response.body as { error: { code: string; issues?: { path: string; message: string }[] } }).error;
        if (response.status === 403) {
          expect(error.code).toBe('company_not_allowed');
          expect(String((value as { companyId?: unknown }).companyId).toLowerCase()).not.toBe(SERVED);
        } else if (error.code === 'period_in_future') {
          future += 1;
          // A month after the clock's (2026-11, Europe/Berlin), named by the field that asked for it.
          const path = error.issues?.[0]?.path;
          expect(['period', 'to']).toContain(path);
          expect(String((value as Record<string, unknown>)[path!]).slice(0, 7) > '2026-11').toBe(true);
        } else if (error.code === 'period_too_early') {
          // A month before 2000-01, named by the field that asked for it.
          const path = error.issues?.[0]?.path;
          expect(['period', 'from']).toContain(path);
          expect(String((value as Record<string, unknown>)[path!]).slice(0, 7) < '2000-01').toBe(true);
        } else {
          expect(error.code).toBe('body_invalid');
          expect(error.issues?.length).toBeGreaterThan(0);
        }
        expect(metrics.sum('WebhookRejected')).toBe(1);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 3, endOnFailure: true },
    );
    // The generators reach the accepting path too, or the property would prove little.
    expect(accepted).toBeGreaterThan(FUZZ_RUNS / 4);
    expect(future).toBeGreaterThan(0);
  });

  it('a body over the limit is refused with 413 before its signature is even checked', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: WEBHOOK_MAX_BODY_BYTES + 1, max: WEBHOOK_MAX_BODY_BYTES * 4 }), async (size) => {
        const padding = 'x'.repeat(size - 60);
        const { response, queue } = await deliver({ id: 'evt-big', companyId: SERVED, period: '2026-10', pad: padding });
        expect(response.status).toBe(413);
        expect(queue.messages).toEqual([]);
      }),
      { seed: FUZZ_SEED, numRuns: 10 },
    );
  });
});
