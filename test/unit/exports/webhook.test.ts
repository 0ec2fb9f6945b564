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

function harness(options: { secrets?: string[]; now?: number; timeZone?: string } = {}) {
  const clock = new ManualClock(options.now ?? NOW);
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
    ...(options.timeZone ? { timeZone: options.timeZone } : {}),
  };
  return { deps, queue, logger, metrics, clock, receive: (request: WebhookRequest) => receiveExportWebhook(deps, request) };
}

let ids = 0;
function body(fields: Record<string, unknown> = {}): string {
  return JSON.stringify({ id: `evt_${++ids}`, type: 'ExportRequested', companyId: COMPANY, period: '2026-10', ...fields });
}

function signed(
  text: string | Buffer,
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
    body: typeof text === 'string' ? Buffer.from(text, 'utf8') : text,
    source: { ip: '203.0.113.7', userAgent: 'sender/1.0' },
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
      exports: ['2026-08', '2026-09', '2026-10'].map((period) => ({ companyId: COMPANY, period, monthOpen: false })),
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
    [
      'a valid HMAC under another scheme name',
      401,
      'signature_missing',
      () => {
        const text = body();
        const timestamp = Math.floor(NOW / 1000);
        return signed(text, { headers: { [WEBHOOK_HEADERS.signature]: signWebhook(SECRET, timestamp, text).replace(/^v1=/, 'v0=') } });
      },
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

  it.each(refusals)('refuses %s (%i %s) and enqueues nothing', async (name, status, code, request) => {
    const { receive, queue, metrics } = harness();
    const response = await receive(request());
    expect(response.status).toBe(status);
    expect(response.body).toMatchObject({ error: { code } });
    expect(queue.messages).toEqual([]);
    // Every case but one carries a signature header: a sender in trouble, alarmed (decision 79).
    const unsigned = name === 'no signature';
    expect(metrics.sum('WebhookRejected')).toBe(unsigned ? 0 : 1);
    expect(metrics.sum('WebhookUnsigned')).toBe(unsigned ? 1 : 0);
  });

  it('accepts a timestamp exactly 5 minutes old or ahead and a body of exactly 64 KiB: both limits are inclusive', async () => {
    const { receive } = harness();
    const seconds = Math.floor(NOW / 1000);
    expect((await receive(signed(body(), { timestamp: seconds - 300 }))).status).toBe(202);
    expect((await receive(signed(body(), { timestamp: seconds + 300 }))).status).toBe(202);
    // JSON allows trailing whitespace: a valid request padded to the limit, then one byte beyond it.
    const text = body();
    const atLimit = text + ' '.repeat(64 * 1024 - Buffer.byteLength(text));
    expect(Buffer.byteLength(atLimit)).toBe(65_536);
    expect((await receive(signed(atLimit))).status).toBe(202);
    const overLimit = body();
    expect((await receive(signed(overLimit + ' '.repeat(64 * 1024 + 1 - Buffer.byteLength(overLimit))))).status).toBe(413);
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
    const { receive, queue, logger } = harness();
    const id = 'evt_retry_me';
    expect((await receive(signed(JSON.stringify({ id, companyId: OTHER, period: '2026-10' })))).status).toBe(403);
    expect((await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-13' })))).status).toBe(400);
    queue.failNext = new Error('queue unavailable');
    const down = await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-10' })));
    expect(down.status).toBe(503);
    expect(queue.messages).toEqual([]);
    // The WebhookUnavailable alarm's row: the error line names the dependency, the event, the company and the months.
    expect(logger.entries().find((e) => e.message === 'webhook export could not be enqueued')).toMatchObject({
      level: 'error',
      eventId: id,
      companyId: COMPANY,
      periods: ['2026-10'],
      error: expect.objectContaining({ message: 'queue unavailable' }),
    });
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

describe('receiveExportWebhook: what a refusal counts and logs', () => {
  const SCANNER = { ip: '198.51.100.23', userAgent: 'Mozilla/5.0 (scanner)' };
  const unsignedRequests: [string, WebhookRequest][] = [
    ['a GET without headers', { method: 'GET', headers: {}, body: Buffer.alloc(0), source: SCANNER }],
    [
      'a POST of a form',
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.from('a=1'), source: SCANNER },
    ],
    [
      'a POST of JSON without a signature',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from(body()), source: SCANNER },
    ],
    [
      'a POST with an empty signature header',
      { ...signed(body()), headers: { ...signed(body()).headers, [WEBHOOK_HEADERS.signature]: ' ' } },
    ],
  ];

  it.each(unsignedRequests)('%s is noise: counted as WebhookUnsigned, not in the alarmed WebhookRejected', async (_name, request) => {
    const { receive, metrics } = harness();
    expect((await receive(request)).status).toBeGreaterThanOrEqual(400);
    expect(metrics.sum('WebhookUnsigned')).toBe(1);
    expect(metrics.sum('WebhookRejected')).toBe(0);
  });

  it('a request that carried a signature and was refused still counts in WebhookRejected, whatever step refused it', async () => {
    const { receive, metrics } = harness();
    const requests = [
      signed(body(), { secret: 'whsec_wrong' }),
      signed(body(), { timestamp: Math.floor(NOW / 1000) - 3600 }),
      signed('{"id": "evt_x", '),
      signed(body({ formats: ['xml'] })),
      signed(body(), { method: 'GET' }),
      signed(body(), { headers: { 'content-type': 'text/plain' } }),
    ];
    for (const request of requests) expect((await receive(request)).status).toBeGreaterThanOrEqual(400);
    expect(metrics.sum('WebhookRejected')).toBe(requests.length);
    expect(metrics.sum('WebhookUnsigned')).toBe(0);
  });

  it('a replay of an accepted event (a retry after a lost 202) is WebhookReplayed, not WebhookRejected', async () => {
    const { receive, metrics, clock } = harness();
    const text = body();
    expect((await receive(signed(text))).status).toBe(202);
    clock.advance(30_000);
    expect((await receive(signed(text, { timestamp: Math.floor(clock.now() / 1000) }))).status).toBe(409);
    expect(metrics.sum('WebhookReplayed')).toBe(1);
    expect(metrics.sum('WebhookRejected')).toBe(0);
  });

  it('every refusal line names the source IP and user agent and its metric, never the signature or a header value', async () => {
    const { receive, logger } = harness();
    const request = signed(body(), { secret: 'whsec_wrong', headers: { authorization: 'Bearer hdr_secret_1234' } });
    await receive({ ...request, source: { ip: '192.0.2.44', userAgent: `partner-sender/2.1 ${'x'.repeat(500)}` } });
    await receive(unsignedRequests[0]![1]);
    const refused = logger.entries().filter((e) => e.message === 'webhook refused');
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatchObject({ sourceIp: '192.0.2.44', metric: 'WebhookRejected', code: 'signature_invalid' });
    expect(String(refused[0]!.userAgent)).toMatch(/^partner-sender\/2\.1 x+$/);
    expect(String(refused[0]!.userAgent).length).toBeLessThanOrEqual(200);
    expect(refused[1]).toMatchObject({ sourceIp: SCANNER.ip, userAgent: SCANNER.userAgent, metric: 'WebhookUnsigned' });
    const text = logger.lines.join('\n');
    expect(text).not.toContain(request.headers[WEBHOOK_HEADERS.signature]!.slice(3));
    expect(text).not.toContain('hdr_secret_1234');
  });

  it('a request without a source (not a Function URL event) logs null for both, not nothing', async () => {
    const { receive, logger } = harness();
    await receive({ method: 'GET', headers: {}, body: Buffer.alloc(0) });
    expect(logger.entries().find((e) => e.message === 'webhook refused')).toMatchObject({ sourceIp: null, userAgent: null });
  });
});

describe('receiveExportWebhook: valid JSON in its other spellings', () => {
  it.each([
    'application/json; charset="utf-8"',
    'application/json; charset="UTF-8"',
    'Application/JSON;charset=Utf-8',
    'application/json; foo=bar; charset="utf-8"',
  ])('accepts Content-Type %s', async (contentType) => {
    const { receive, queue } = harness();
    expect((await receive(signed(body(), { headers: { 'content-type': contentType } }))).status).toBe(202);
    expect(queue.messages).toHaveLength(1);
  });

  it.each(['application/json; charset="iso-8859-1"', 'application/json; charset=utf-8; charset=latin1', 'application/json; charset=""'])(
    'still refuses Content-Type %s with 415',
    async (contentType) => {
      const { receive } = harness();
      expect((await receive(signed(body(), { headers: { 'content-type': contentType } }))).body).toMatchObject({
        error: { code: 'unsupported_media_type' },
      });
    },
  );

  it('ignores a leading UTF-8 byte order mark; the signature covers the bytes as sent, mark included', async () => {
    const { receive, queue } = harness();
    const text = body();
    const withMark = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
    const accepted = await receive(signed(withMark));
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ eventId: (JSON.parse(text) as { id: string }).id });
    expect(queue.messages).toHaveLength(1);

    // Signed without the mark, sent with it: not the bytes that were signed.
    const other = body();
    const resigned = signed(other);
    const sentWithMark = { ...resigned, body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), resigned.body]) };
    expect((await receive(sentWithMark)).body).toMatchObject({ error: { code: 'signature_invalid' } });
    expect(queue.messages).toHaveLength(1);
  });
});

describe('receiveExportWebhook: months that have not begun', () => {
  it('refuses a month after the current one with 400 period_in_future naming period, enqueues nothing and forgets the id', async () => {
    const { receive, queue, metrics } = harness();
    const id = 'evt_future';
    const response = await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2099-01' })));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: {
        code: 'period_in_future',
        message: expect.stringContaining('2026-11') as unknown,
        issues: [{ path: 'period', message: 'is after the current month (2026-11, Europe/Berlin)' }],
      },
    });
    expect(queue.messages).toEqual([]);
    expect(metrics.sum('WebhookRejected')).toBe(1);
    // Refused after the claim: the sender may send the event again with a month that has begun.
    expect((await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-10' })))).status).toBe(202);
  });

  it('refuses a month before 2000-01 (a mistyped year) with 400 period_too_early naming period or from, enqueueing nothing', async () => {
    const { receive, queue, metrics } = harness();
    const id = 'evt_early';
    const response = await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '0226-10' })));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: {
        code: 'period_too_early',
        message: expect.stringContaining('2000-01') as unknown,
        issues: [{ path: 'period', message: 'is before 2000-01, the earliest month exported (a mistyped year?)' }],
      },
    });
    const range = await receive(signed(body({ period: undefined, from: '1999-12', to: '2000-01' })));
    expect(range.body).toMatchObject({ error: { code: 'period_too_early', issues: [{ path: 'from' }] } });
    expect(queue.messages).toEqual([]);
    expect(metrics.sum('WebhookRejected')).toBe(2);
    // Refused after the claim: the sender may send the event again with the year it meant.
    expect((await receive(signed(JSON.stringify({ id, companyId: COMPANY, period: '2026-10' })))).status).toBe(202);
  });

  it('refuses a range that ends after the current month whole, naming to', async () => {
    const { receive, queue } = harness();
    const response = await receive(signed(body({ period: undefined, from: '2026-10', to: '2026-12-05' })));
    expect(response.body).toMatchObject({ error: { code: 'period_in_future', issues: [{ path: 'to' }] } });
    expect(queue.messages).toEqual([]);
  });

  it('accepts the current month and says it is open; an ended month is not', async () => {
    const { receive, queue } = harness();
    const response = await receive(signed(body({ period: undefined, from: '2026-10', to: '2026-11' })));
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({
      exports: [
        { period: '2026-10', monthOpen: false },
        { period: '2026-11', monthOpen: true },
      ],
    });
    expect(queue.messages).toHaveLength(2);
  });

  it('measures the month in the export time zone: 00:30 on 1 December in Berlin is December there, November in UTC', async () => {
    const now = Date.parse('2026-11-30T23:30:00Z');
    const request = () => signed(body({ period: '2026-12' }), { timestamp: Math.floor(now / 1000) });
    expect((await harness({ now }).receive(request())).status).toBe(202);
    expect((await harness({ now, timeZone: 'UTC' }).receive(request())).body).toMatchObject({ error: { code: 'period_in_future' } });
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

  function storeOf(current: string, previous: () => Promise<string>): Pick<SecretStore, 'readSecret'> {
    return {
      readSecret: async (secretId, selector) => {
        const stage = selector?.stage ?? SecretStage.current;
        const value = stage === SecretStage.current ? current : await previous();
        return { secretArn: secretId, name: 'webhook', versionId: `v-${stage}`, value, stages: [stage] };
      },
    };
  }
  const noPrevious = () => Promise.reject(new SecretNotFoundError('no such version', { secretId: 'arn:webhook' }));

  it('takes a secret of exactly 32 characters and refuses one of 31', async () => {
    const clock = new ManualClock(NOW);
    const exact = 'a'.repeat(32);
    await expect(webhookSecretsFromStore(storeOf(exact, noPrevious), 'arn:webhook', { clock }).signingSecrets()).resolves.toEqual([exact]);
    await expect(webhookSecretsFromStore(storeOf('a'.repeat(31), noPrevious), 'arn:webhook', { clock }).signingSecrets()).rejects.toThrow(
      /at least 32 characters/,
    );
  });

  it('trims a stored secret (a value saved with its newline), so the sender’s signature with the secret itself verifies', async () => {
    const clock = new ManualClock(NOW);
    const secrets = webhookSecretsFromStore(storeOf(`${LONG}\n`, noPrevious), 'arn:webhook', { clock });
    await expect(secrets.signingSecrets()).resolves.toEqual([LONG]);
    // Whitespace does not count towards the minimum length.
    const padded = webhookSecretsFromStore(storeOf(`${'a'.repeat(31)}\n `, noPrevious), 'arn:webhook', { clock });
    await expect(padded.signingSecrets()).rejects.toThrow(/at least 32 characters/);
  });

  it('fails when AWSPREVIOUS cannot be read for another reason than its absence (a 503, not a 401 for the old secret)', async () => {
    const clock = new ManualClock(NOW);
    let fail = true;
    const secrets = webhookSecretsFromStore(
      storeOf(LONG, () => (fail ? Promise.reject(new Error('throttled')) : Promise.resolve(OLDER))),
      'arn:webhook',
      { clock, ttlMs: 300_000 },
    );
    await expect(secrets.signingSecrets()).rejects.toThrow('throttled');
    // Not remembered as "no previous version": the next request reads it again.
    fail = false;
    await expect(secrets.signingSecrets()).resolves.toEqual([LONG, OLDER]);
  });

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
