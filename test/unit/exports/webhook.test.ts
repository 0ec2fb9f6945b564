import { MemoryExportQueue } from '../../helpers/memory-export-queue';
import { MemoryReplayGuard } from '../../helpers/memory-replay-guard';
import { decodeJob } from '../../../src/core/exports/pipeline/export-jobs';
import {
  receiveExportWebhook,
  signWebhook,
  WEBHOOK_CLAIM_LEASE_MS,
  WEBHOOK_HEADERS,
  type WebhookDeps,
  type WebhookRequest,
} from '../../../src/core/exports/pipeline/webhook';
import { webhookSecretsFromStore } from '../../../src/core/exports/pipeline/webhook-secrets';
import { SecretNotFoundError, SecretStage, type SecretStore } from '../../../src/core/ports/secrets';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';

const SECRET = 'whsec_canary_7f3e9a1b2c4d5e6f';
const PREVIOUS = 'whsec_previous_0a1b2c3d4e5f';
const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const OTHER = '11111111-2222-4333-8444-555555555555';
const NOW = Date.UTC(2026, 10, 3, 10, 0, 0);

function harness(options: { secrets?: string[] } = {}) {
  const clock = new ManualClock(NOW);
  const queue = new MemoryExportQueue();
  const logger = new MemoryLogger();
  const metrics = new MemoryMetrics();
  const deps: WebhookDeps = {
    secrets: { signingSecrets: () => Promise.resolve(options.secrets ?? [SECRET]) },
    replay: new MemoryReplayGuard(clock),
    queue,
    allowedCompanies: new Set([COMPANY]),
    clock,
    logger,
    metrics,
  };
  return { deps, queue, logger, metrics, clock, receive: (request: WebhookRequest) => receiveExportWebhook(deps, request) };
}

let ids = 0;
function body(fields: Record<string, unknown> = {}): string {
  return JSON.stringify({ id: `evt_${++ids}`, type: 'ExportRequested', companyId: COMPANY, period: '2026-10', ...fields });
}

function signed(
  text: string,
  options: { secret?: string; timestamp?: number; headers?: Record<string, string | undefined>; method?: string } = {},
): WebhookRequest {
  const timestamp = options.timestamp ?? Math.floor(NOW / 1000);
  return {
    method: options.method ?? 'POST',
    headers: {
      'content-type': 'application/json',
      [WEBHOOK_HEADERS.timestamp]: String(timestamp),
      [WEBHOOK_HEADERS.signature]: signWebhook(options.secret ?? SECRET, timestamp, text),
      ...options.headers,
    },
    body: Buffer.from(text, 'utf8'),
  };
}

describe('signWebhook', () => {
  it('gives the worked example of docs/exports.md ("Signature recipe, worked")', () => {
    const body =
      '{"id":"evt_01J9Z3K8Q2","companyId":"6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b","period":"2026-10","formats":["csv","parquet"]}';
    expect(Buffer.byteLength(body)).toBe(121);
    expect(signWebhook('whsec_example_0123456789abcdef0123456789abcdef', 1793520000, body)).toBe(
      'v1=e58e413a33d7e6da225304532c4b8a6a2e7a0cb955f1c5d88ecd6fa051ac8065',
    );
  });
});

describe('receiveExportWebhook', () => {
  it('accepts a signed request with 202 and enqueues one export job per month, grouped by company and month', async () => {
    const { receive, queue } = harness();
    const text = body({ period: undefined, from: '2026-08-15', to: '2026-10', formats: ['parquet'], datasets: ['transactions'] });
    const response = await receive(signed(text));

    expect(response.status).toBe(202);
    const eventId = (JSON.parse(text) as { id: string }).id;
    expect(response.body).toEqual({
      accepted: true,
      eventId,
      exports: ['2026-08', '2026-09', '2026-10'].map((period) => ({ companyId: COMPANY, period })),
    });
    expect(queue.messages.map((m) => m.groupId)).toEqual([`${COMPANY}#2026-08`, `${COMPANY}#2026-09`, `${COMPANY}#2026-10`]);
    expect(decodeJob(queue.messages[0]!.body)).toEqual({
      type: 'export',
      companyId: COMPANY,
      period: '2026-08',
      datasets: ['transactions'],
      formats: ['parquet'],
      source: { kind: 'apiKey' },
      trigger: { kind: 'on_demand', requestId: eventId, via: 'webhook' },
    });
  });

  it('accepts the previous secret while a secret change is under way, and several signatures in the header', async () => {
    const { receive, queue } = harness({ secrets: [SECRET, PREVIOUS] });
    expect((await receive(signed(body(), { secret: PREVIOUS }))).status).toBe(202);
    const text = body();
    const ts = Math.floor(NOW / 1000);
    const both = `${signWebhook('whsec_unknown', ts, text)}, ${signWebhook(SECRET, ts, text)}`;
    expect((await receive(signed(text, { headers: { [WEBHOOK_HEADERS.signature]: both } }))).status).toBe(202);
    expect(queue.messages).toHaveLength(2);
  });

  const refusals: [string, number, string, () => WebhookRequest][] = [
    ['a signature made with another secret', 401, 'signature_invalid', () => signed(body(), { secret: 'whsec_wrong' })],
    ['a body changed after signing', 401, 'signature_invalid', () => ({ ...signed(body()), body: Buffer.from(body()) })],
    [
      'a timestamp changed after signing',
      401,
      'signature_invalid',
      () => signed(body(), { headers: { [WEBHOOK_HEADERS.timestamp]: String(Math.floor(NOW / 1000) + 1) } }),
    ],
    ['no signature', 401, 'signature_missing', () => signed(body(), { headers: { [WEBHOOK_HEADERS.signature]: undefined } })],
    [
      'a signature in an unknown scheme',
      401,
      'signature_missing',
      () => signed(body(), { headers: { [WEBHOOK_HEADERS.signature]: 'v0=abc' } }),
    ],
    ['no timestamp', 401, 'signature_missing', () => signed(body(), { headers: { [WEBHOOK_HEADERS.timestamp]: undefined } })],
    [
      'a timestamp 5 minutes and 1 second old',
      401,
      'timestamp_out_of_tolerance',
      () => signed(body(), { timestamp: Math.floor(NOW / 1000) - 301 }),
    ],
    ['a timestamp 6 minutes ahead', 401, 'timestamp_out_of_tolerance', () => signed(body(), { timestamp: Math.floor(NOW / 1000) + 360 })],
    ['a timestamp in milliseconds', 401, 'timestamp_out_of_tolerance', () => signed(body(), { timestamp: NOW })],
    ['an oversized body', 413, 'payload_too_large', () => signed(body({ padding: 'x'.repeat(70_000) }))],
    ['text/plain', 415, 'unsupported_media_type', () => signed(body(), { headers: { 'content-type': 'text/plain' } })],
    [
      'JSON in Latin-1',
      415,
      'unsupported_media_type',
      () => signed(body(), { headers: { 'content-type': 'application/json; charset=iso-8859-1' } }),
    ],
    ['no content type', 415, 'unsupported_media_type', () => signed(body(), { headers: { 'content-type': undefined } })],
    ['GET', 405, 'method_not_allowed', () => signed(body(), { method: 'GET' })],
    ['a body that is not JSON', 400, 'body_invalid', () => signed('{"id": "evt_x", ')],
    ['a body without an event id', 400, 'body_invalid', () => signed(JSON.stringify({ companyId: COMPANY, period: '2026-10' }))],
    ['a body with both period and a range', 400, 'body_invalid', () => signed(body({ from: '2026-01', to: '2026-02' }))],
    ['a body naming a user source', 400, 'body_invalid', () => signed(body({ userExternalId: OTHER }))],
    ['a range of 37 months', 400, 'body_invalid', () => signed(body({ period: undefined, from: '2023-01', to: '2026-01' }))],
    ['a company the webhook does not serve', 403, 'company_not_allowed', () => signed(body({ companyId: OTHER }))],
  ];

  it.each(refusals)('refuses %s (%i %s) and enqueues nothing', async (_name, status, code, request) => {
    const { receive, queue, metrics } = harness();
    const response = await receive(request());
    expect(response.status).toBe(status);
    expect(response.body).toMatchObject({ error: { code } });
    expect(queue.messages).toEqual([]);
    expect(metrics.sum('WebhookRejected')).toBe(1);
  });

  it('checks in order: signature before timestamp, timestamp before the event id, the event id before the body', async () => {
    const { receive } = harness();
    const stale = Math.floor(NOW / 1000) - 3600;
    expect((await receive(signed(body(), { secret: 'whsec_wrong', timestamp: stale }))).body).toMatchObject({
      error: { code: 'signature_invalid' },
    });
    const text = body();
    expect((await receive(signed(text))).status).toBe(202);
    expect((await receive(signed(text, { timestamp: stale }))).body).toMatchObject({ error: { code: 'timestamp_out_of_tolerance' } });
    const replayedInvalid = JSON.stringify({ ...(JSON.parse(text) as object), formats: ['xml'] });
    expect((await receive(signed(replayedInvalid))).body).toMatchObject({ error: { code: 'event_replayed' } });
  });

  it('refuses a replayed event id with 409 within the tolerance; the first delivery’s jobs are enqueued once', async () => {
    const { receive, queue, clock } = harness();
    const text = body();
    expect((await receive(signed(text))).status).toBe(202);
    clock.advance(4 * 60_000);
    const replay = await receive(signed(text, { timestamp: Math.floor(clock.now() / 1000) }));
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ error: { code: 'event_replayed' } });
    expect(queue.messages).toHaveLength(1);
  });

  it('a delivery that dies between claim and enqueue (a timeout) does not block the retry: 503 during its lease, then 202', async () => {
    const { deps, receive, queue, clock } = harness();
    const text = body();
    // The first delivery claims, then hangs in the enqueue until Lambda ends it (never resolves).
    const hung = new MemoryExportQueue();
    const enqueued = new Promise<void>((resolve) => {
      hung.enqueue = () => {
        resolve();
        return new Promise<void>(() => undefined);
      };
    });
    void receiveExportWebhook({ ...deps, queue: hung }, signed(text));
    await enqueued;
    expect(queue.messages).toEqual([]);

    clock.advance(10_000);
    const early = await receive(signed(text, { timestamp: Math.floor(clock.now() / 1000) }));
    expect(early).toMatchObject({ status: 503, body: { error: { code: 'event_in_flight' } } });

    clock.advance(WEBHOOK_CLAIM_LEASE_MS - 10_000 + 1);
    const retry = await receive(signed(text, { timestamp: Math.floor(clock.now() / 1000) }));
    expect(retry.status).toBe(202);
    expect(queue.messages).toHaveLength(1);
    // Accepted now: a later replay within the tolerance is the 409 it always was.
    clock.advance(60_000);
    expect((await receive(signed(text, { timestamp: Math.floor(clock.now() / 1000) }))).status).toBe(409);
  });

  it('a confirm that fails after the enqueue still answers 202 (the jobs are queued)', async () => {
    const { deps, receive, queue, logger } = harness();
    deps.replay.confirm = () => Promise.reject(new Error('ProvisionedThroughputExceeded'));
    expect((await receive(signed(body()))).status).toBe(202);
    expect(queue.messages).toHaveLength(1);
    expect(logger.lines.some((l) => l.includes('could not confirm'))).toBe(true);
  });

  it('forgets an event id it refused after claiming it (bad body, other company, queue down): the sender may send it again', async () => {
    const { receive, queue } = harness();
    const id = 'evt_retry_me';
    expect((await receive(signed(JSON.stringify({ id, companyId: OTHER, period: '2026-10' })))).status).toBe(403);
    expect((await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-13' })))).status).toBe(400);
    queue.failNext = new Error('queue unavailable');
    const down = await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-10' })));
    expect(down.status).toBe(503);
    expect(queue.messages).toEqual([]);
    expect((await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-10' })))).status).toBe(202);
    expect(queue.messages).toHaveLength(1);
  });

  it('a secret store that cannot be read is a 503, not a refusal that would make the sender give up', async () => {
    const h = harness();
    h.deps.secrets = { signingSecrets: () => Promise.reject(new Error('AccessDenied')) };
    const response = await receiveExportWebhook(h.deps, signed(body()));
    expect(response).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
    expect(h.metrics.sum('WebhookUnavailable')).toBe(1);
  });

  it('never writes the secret or a signature into a log line or a response', async () => {
    const { receive, logger } = harness();
    const responses = [];
    for (const [, , , request] of refusals) responses.push(await receive(request()));
    const good = signed(body());
    responses.push(await receive(good));
    const texts = [...logger.lines, ...responses.map((r) => JSON.stringify(r))];
    expect(logger.lines.length).toBeGreaterThan(refusals.length);
    const signature = good.headers[WEBHOOK_HEADERS.signature]!.slice(3);
    for (const text of texts) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(signature);
    }
  });
});

describe('webhookSecretsFromStore', () => {
  const LONG = 'whsec_current_0123456789abcdef0123456789';
  const OLDER = 'whsec_previous_0123456789abcdef012345678';

  /** A store counting reads per stage; AWSPREVIOUS exists only while `previous` is set. */
  function countingStore(state: { previous?: string }) {
    const reads: Record<string, number> = {};
    const store: Pick<SecretStore, 'readSecret'> = {
      readSecret: (secretId, selector) => {
        const stage = selector?.stage ?? SecretStage.current;
        reads[stage] = (reads[stage] ?? 0) + 1;
        const value = stage === SecretStage.current ? LONG : state.previous;
        if (value === undefined) return Promise.reject(new SecretNotFoundError('no such version', { secretId }));
        return Promise.resolve({ secretArn: secretId, name: 'webhook', versionId: `v-${stage}`, value, stages: [stage] });
      },
    };
    return { store, reads };
  }

  it('reads a missing AWSPREVIOUS once per TTL, as the current one, not on every request', async () => {
    const clock = new ManualClock(NOW);
    const state: { previous?: string } = {};
    const { store, reads } = countingStore(state);
    const secrets = webhookSecretsFromStore(store, 'arn:webhook', { clock, ttlMs: 300_000 });
    for (let i = 0; i < 10; i++) {
      await expect(secrets.signingSecrets()).resolves.toEqual([LONG]);
      clock.advance(10_000);
    }
    expect(reads).toEqual({ AWSCURRENT: 1, AWSPREVIOUS: 1 });
    // A change of the secret begins: after the TTL both are served.
    state.previous = OLDER;
    clock.advance(300_000);
    await expect(secrets.signingSecrets()).resolves.toEqual([LONG, OLDER]);
    expect(reads).toEqual({ AWSCURRENT: 2, AWSPREVIOUS: 2 });
  });
});
