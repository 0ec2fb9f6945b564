import {
  AccountingClient,
  ApiValidationError,
  RateLimitError,
  apiKeyAuth,
  retryRecordOf,
  type AccountingApiWarning,
  type AccountingClientOptions,
  type RetryWait,
} from './retry-imports';
import { ManualClock } from '../../../src/core/shared/clock';
import { BASE_URL, apiError, fakeTransport, json, sequence, transaction, type Handler } from './fake-transport';

/**
 * A per-minute rate limit answers Retry-After up to 60 s (Django REST framework's throttles): a
 * client that gives up on any wait longer than its total budget can never finish an export larger
 * than one window. And a service whose configured maximum page size is below ours refuses it.
 */

const KEY = 'sbx_AbCdEf12GhIjKl34MnOpQr56StUvWx78';
const limited = (seconds: number) => apiError(429, 'rate_limit_error', 'rate_limited', {}, { 'retry-after': String(seconds) });
const emptyList = json(200, { count: 0, next: null, previous: null, results: [] });

function client(handler: Handler, overrides: Partial<AccountingClientOptions> = {}) {
  const fake = fakeTransport(handler);
  const clock = ManualClock.autoAdvancing();
  const waits: RetryWait[] = [];
  const warnings: AccountingApiWarning[] = [];
  const api = new AccountingClient({
    baseUrl: BASE_URL,
    credentials: apiKeyAuth(KEY),
    transport: fake.transport,
    clock,
    random: () => 0.5,
    onRetryWait: (wait) => waits.push(wait),
    onWarning: (warning) => warnings.push(warning),
    ...overrides,
  });
  return { api, fake, clock, waits, warnings };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('Retry-After beyond the default budget', () => {
  it('by default a Retry-After beyond 60 s is not waited for, and the error records that no retry was made', async () => {
    const { api, fake, waits } = client(sequence(limited(61), emptyList));
    const error = await rejection(api.transactions.list().all());
    expect(error).toBeInstanceOf(RateLimitError);
    expect(fake.requests).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(retryRecordOf(error)).toEqual({ retries: 0, gaveUp: 'budget', retryAfterMs: 61_000, maxRetryAfterMs: undefined });
  });

  it('with a cap per wait and no total budget, a 60 s Retry-After is waited for, as asked, and the list finishes', async () => {
    const { api, fake, clock, waits } = client(sequence(limited(60), limited(60), emptyList), {
      retry: { maxRetryAfterMs: 5 * 60_000, maxElapsedMs: Number.POSITIVE_INFINITY },
    });
    const started = clock.now();
    expect(await api.transactions.list().all()).toEqual([]);
    expect(fake.requests).toHaveLength(3);
    expect(waits.map((w) => [w.delayMs, w.askedByService, w.attempt])).toEqual([
      [60_000, true, 1],
      [60_000, true, 2],
    ]);
    expect(clock.now() - started).toBe(120_000);
  });

  it('a Retry-After above the cap fails at once, and the record names the cap', async () => {
    const { api, fake, waits } = client(sequence(limited(600), emptyList), {
      retry: { maxRetryAfterMs: 5 * 60_000, maxElapsedMs: Number.POSITIVE_INFINITY },
    });
    const error = await rejection(api.transactions.list().all());
    expect(fake.requests).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(retryRecordOf(error)).toEqual({ retries: 0, gaveUp: 'retry_after_cap', retryAfterMs: 600_000, maxRetryAfterMs: 300_000 });
  });

  it('never waits past deadlineAt, whatever the budget: the retries it made are counted', async () => {
    const clock = ManualClock.autoAdvancing();
    const deadline = clock.now() + 15_000;
    const { api, fake } = client(sequence(limited(10), limited(10), limited(10), emptyList), {
      clock,
      retry: { maxElapsedMs: 300_000, deadlineAt: deadline },
    });
    const error = await rejection(api.transactions.list().all());
    expect(fake.requests).toHaveLength(2);
    expect(clock.now()).toBeLessThanOrEqual(deadline);
    expect(retryRecordOf(error)).toMatchObject({ retries: 1, gaveUp: 'deadline' });
  });
});

describe('a first page refused for its page size', () => {
  const page = (n: number, next: string | null) => json(200, { count: 3, next, previous: null, results: [transaction(n)] });

  it('is requested once more without the page size, then next is followed, with one page_size_refused warning', async () => {
    const handler: Handler = (_request, url) => {
      if (url.searchParams.has('page_size')) return apiError(400, 'validation_error', 'invalid_request', { param: 'page_size' });
      const at = Number(url.searchParams.get('page') ?? '1');
      const next = new URL(url);
      next.searchParams.set('page', String(at + 1));
      return page(at, at < 3 ? next.href : null);
    };
    const { api, fake, warnings } = client(handler);
    const items = await api.transactions.list({ dateFrom: '2026-10-01', dateTo: '2026-10-31', pageSize: 1000 }).all();
    expect(items).toHaveLength(3);
    expect(fake.urls().map((u) => u.search)).toEqual([
      '?date_from=2026-10-01&date_to=2026-10-31&page_size=1000',
      '?date_from=2026-10-01&date_to=2026-10-31',
      '?date_from=2026-10-01&date_to=2026-10-31&page=2',
      '?date_from=2026-10-01&date_to=2026-10-31&page=3',
    ]);
    expect(warnings.filter((w) => w.type === 'page_size_refused')).toEqual([
      { type: 'page_size_refused', request: expect.stringContaining('page_size=1000'), param: 'page_size', pageSize: 1000 },
    ]);
  });

  it('a 400 about another field is not retried, and neither is a second refusal', async () => {
    const other = client(sequence(apiError(400, 'validation_error', 'invalid_request', { param: 'date_from' }), emptyList));
    expect(await rejection(other.api.transactions.list({ dateFrom: '2026-10-01' }).all())).toBeInstanceOf(ApiValidationError);
    expect(other.fake.requests).toHaveLength(1);

    const always = client(() => apiError(400, 'validation_error', 'invalid_request'));
    expect(await rejection(always.api.transactions.list().all())).toBeInstanceOf(ApiValidationError);
    expect(always.fake.requests).toHaveLength(2);
  });
});
