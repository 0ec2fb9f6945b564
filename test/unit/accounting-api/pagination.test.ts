import {
  AccountingClient,
  type AccountingApiWarning,
  type AccountingClientOptions,
  PaginationError,
  apiKeyAuth,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { ConfigError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import {
  BASE_URL,
  COMPANY_A,
  COMPANY_B,
  type Handler,
  apiError,
  category,
  fakeTransport,
  json,
  listHandler,
  transaction,
} from './fake-transport';

const KEY = 'sbx_PaginationKey0123456789abcdefghij';

function setup(handler: Handler, overrides: Partial<AccountingClientOptions> = {}) {
  const fake = fakeTransport(handler);
  const logger = new MemoryLogger();
  const warnings: AccountingApiWarning[] = [];
  const client = new AccountingClient({
    baseUrl: BASE_URL,
    credentials: apiKeyAuth(KEY),
    transport: fake.transport,
    clock: ManualClock.autoAdvancing(),
    logger,
    onWarning: (w) => warnings.push(w),
    ...overrides,
  });
  return { client, fake, logger, warnings };
}

const transactions = Array.from({ length: 7 }, (_, i) => transaction(i));

describe('pagination', () => {
  it('iterates items across pages, following next until null', async () => {
    const { client, fake } = setup(listHandler('/accounting/transactions/', transactions));
    const seen: string[] = [];
    for await (const item of client.transactions.list({ pageSize: 3 })) seen.push(item.parsed.publicId);
    expect(seen).toEqual(transactions.map((t) => t.publicId));
    expect(fake.urls().map((u) => u.searchParams.get('page'))).toEqual([null, '2', '3']);
  });

  it('iterates pages, each with its items, count and links', async () => {
    const { client } = setup(listHandler('/accounting/transactions/', transactions));
    const pages = [];
    for await (const page of client.transactions.list({ pageSize: 3 }).pages()) pages.push(page);
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    expect(pages.every((p) => p.count === 7)).toBe(true);
    expect(pages[0]!.previous).toBeNull();
    expect(pages[2]!.next).toBeNull();
    expect(pages[1]!.request).toBe('GET /api/v1/accounting/transactions/?page_size=3&page=2');
  });

  it('fetches nothing until iterated, and starts afresh on each iteration', async () => {
    const { client, fake } = setup(listHandler('/accounting/transactions/', transactions));
    const list = client.transactions.list({ pageSize: 5 });
    expect(fake.requests).toHaveLength(0);
    expect(await list.all()).toHaveLength(7);
    expect(await list.all()).toHaveLength(7);
    expect(fake.requests).toHaveLength(4);
  });

  it('keeps the raw object beside the parsed one', async () => {
    const raw = transaction(1, { amount: '-49.99', extra: { nested: true } });
    const { client } = setup(listHandler('/accounting/transactions/', [raw]));
    const [item] = await client.transactions.list().all();
    expect(item!.raw).toEqual(raw);
    expect(item!.raw.amount).toBe('-49.99');
    expect(item!.parsed.amount).toBe(-4999n);
  });

  describe('page size', () => {
    it('sends 1000 by default, as page_size for transactions', async () => {
      const { client, fake } = setup(listHandler('/accounting/transactions/', []));
      await client.transactions
        .list({ dateFrom: '2026-10-01', dateTo: '2026-10-31', page: 2 })
        .all()
        .catch(() => undefined);
      const url = fake.urls()[0]!;
      expect(url.pathname).toBe('/api/v1/accounting/transactions/');
      expect(Object.fromEntries(url.searchParams)).toEqual({
        date_from: '2026-10-01',
        date_to: '2026-10-31',
        page: '2',
        page_size: '1000',
      });
    });

    it('spells it pageSize for categories, and never sends the other spelling', async () => {
      const { client, fake } = setup(listHandler('/accounting/categories/', [category(1)], { sizeParam: 'pageSize' }));
      await client.categories.list({ pageSize: 20 }).all();
      const url = fake.urls()[0]!;
      expect(url.searchParams.get('pageSize')).toBe('20');
      expect(url.searchParams.has('page_size')).toBe(false);
    });

    it('uses page_size for companies, tax reports and API keys', async () => {
      const { client, fake } = setup((_r, url) => listHandler(url.pathname.slice('/api/v1'.length), [])(_r, url));
      await client.companies.list().all();
      await client.taxReports.list('3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d').all();
      await client.apiKeys.list().all();
      expect(fake.urls().map((u) => [u.pathname, u.searchParams.get('page_size'), u.searchParams.has('pageSize')])).toEqual([
        ['/api/v1/companies/', '1000', false],
        ['/api/v1/companies/3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/taxes/reports/', '1000', false],
        ['/api/v1/api-keys/', '1000', false],
      ]);
    });

    it('caps the size at the maximum and refuses a non-positive one before sending', async () => {
      const { client, fake } = setup(listHandler('/accounting/transactions/', []));
      await client.transactions.list({ pageSize: 5000 }).all();
      expect(fake.urls()[0]!.searchParams.get('page_size')).toBe('1000');
      expect(() => client.transactions.list({ pageSize: 0 })).toThrow();
      expect(() => new AccountingClient({ baseUrl: BASE_URL, credentials: apiKeyAuth(KEY), pageSize: 2.5 })).toThrow(ConfigError);
      expect(fake.requests).toHaveLength(1);
    });

    it('honours a configured lower maximum', async () => {
      const { client, fake } = setup(listHandler('/accounting/transactions/', []), { maxPageSize: 200 });
      await client.transactions.list().all();
      expect(fake.urls()[0]!.searchParams.get('page_size')).toBe('200');
    });
  });

  describe('next links', () => {
    function pagesWithNext(next: string): Handler {
      let n = 0;
      return () =>
        n++ === 0
          ? json(200, { count: 2, next, previous: null, results: [transaction(1)] })
          : json(200, { count: 2, next: null, previous: null, results: [transaction(2)] });
    }

    it.each([
      ['a path outside the prefix', 'https://api.test:4010/admin/dump/?page=2'],
      ['a path outside the prefix on another host', 'https://evil.test/admin/dump/?page=2'],
      ['a look-alike prefix', 'https://api.test:4010/api/v10/accounting/transactions/?page=2'],
      ['a dot-segment escape', 'https://api.test:4010/api/v1/../internal/?page=2'],
      ['user info', 'https://user:pw@api.test:4010/api/v1/accounting/transactions/?page=2'],
      ['user info on another host', 'http://user@evil.test/api/v1/accounting/transactions/?page=2'],
      ['a scheme other than http(s)', 'file:///api/v1/accounting/transactions/?page=2'],
      ['a websocket scheme', 'wss://api.test:4010/api/v1/accounting/transactions/?page=2'],
    ])('refuses a next on %s without sending the credential there', async (_name, next) => {
      const { client, fake } = setup(pagesWithNext(next));
      const seen: string[] = [];
      const error = await (async () => {
        for await (const item of client.transactions.list()) seen.push(item.parsed.publicId);
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaginationError);
      expect((error as PaginationError).reason).toBe('foreign_next');
      expect(seen).toHaveLength(1); // the page before the bad link is still delivered
      // Nothing left for the foreign place: one request, to the base URL, and only it carried the key.
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests.every((r) => r.url.startsWith(`${BASE_URL}/`))).toBe(true);
      expect(fake.requests.filter((r) => r.headers.authorization === `Bearer ${KEY}`)).toHaveLength(1);
    });

    // Decision 108: a service behind a TLS-terminating proxy names its own view of the request.
    it.each([
      ['another host', 'https://evil.test:4010/api/v1/accounting/transactions/?page=2&page_size=1000', 'https://evil.test:4010'],
      // A downgrade is never followed: the page is asked for over https all the same (decision 92).
      [
        'http on the same host and port',
        'http://api.test:4010/api/v1/accounting/transactions/?page=2&page_size=1000',
        'http://api.test:4010',
      ],
      ['http on the same host', 'http://api.test/api/v1/accounting/transactions/?page=2&page_size=1000', 'http://api.test'],
      ['another port', 'https://api.test:4011/api/v1/accounting/transactions/?page=2&page_size=1000', 'https://api.test:4011'],
      ['an internal host name', 'http://web:8000/api/v1/accounting/transactions/?page=2&page_size=1000#frag', 'http://web:8000'],
      ['a protocol-relative link', '//evil.test/api/v1/accounting/transactions/?page=2&page_size=1000', 'https://evil.test'],
    ])('requests a next under the prefix on %s from the base origin, with a warning', async (_name, next, nextOrigin) => {
      const { client, fake, warnings } = setup(pagesWithNext(next));
      expect(await client.transactions.list().all()).toHaveLength(2);
      expect(fake.requests.map((r) => r.url)).toEqual([
        `${BASE_URL}/accounting/transactions/?page_size=1000`,
        `${BASE_URL}/accounting/transactions/?page=2&page_size=1000`,
      ]);
      expect(fake.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
      expect(warnings).toEqual([
        {
          type: 'next_rebased',
          request: 'GET /api/v1/accounting/transactions/?page_size=1000',
          nextOrigin,
          baseOrigin: 'https://api.test:4010',
        },
      ]);
    });

    it('warns of rebased next links once a list, and names no query value', async () => {
      let n = 0;
      const { client, fake, warnings, logger } = setup(() => {
        n++;
        const next = n < 4 ? `http://web:8000/api/v1/accounting/transactions/?page=${n + 1}&secret_ish=hunter2` : null;
        return json(200, { count: 4, next, previous: null, results: [transaction(n)] });
      });
      expect(await client.transactions.list().all()).toHaveLength(4);
      expect(fake.urls().map((u) => [u.origin, u.searchParams.get('page')])).toEqual([
        ['https://api.test:4010', null],
        ['https://api.test:4010', '2'],
        ['https://api.test:4010', '3'],
        ['https://api.test:4010', '4'],
      ]);
      expect(warnings.map((w) => w.type)).toEqual(['next_rebased']);
      expect(JSON.stringify(warnings)).not.toContain('hunter2');
      expect(JSON.stringify(logger.entries())).not.toContain('hunter2');
      // Each iteration is a list of its own.
      n = 0;
      await client.transactions.list().all();
      expect(warnings.map((w) => w.type)).toEqual(['next_rebased', 'next_rebased']);
    });

    it('detects a loop through a rebased next', async () => {
      const { client, fake } = setup(() =>
        json(200, { count: 9, next: 'http://web:8000/api/v1/accounting/transactions/?page_size=1000&page=1', previous: null, results: [] }),
      );
      await expect(client.transactions.list().all()).rejects.toMatchObject({ reason: 'next_loop' });
      expect(fake.requests).toHaveLength(1);
    });

    it('keeps a rebased path on the base host when the base path is the root', async () => {
      const { client, fake, warnings } = setup(
        (_request, url) =>
          url.searchParams.get('page') === '2'
            ? json(200, { count: 2, next: null, previous: null, results: [transaction(2)] })
            : json(200, {
                count: 2,
                next: 'http://web:8000//evil.test/accounting/transactions/?page=2',
                previous: null,
                results: [transaction(1)],
              }),
        { baseUrl: 'https://api.test:4010/' },
      );
      expect(await client.transactions.list().all()).toHaveLength(2);
      expect(fake.urls().map((u) => u.host)).toEqual(['api.test:4010', 'api.test:4010']);
      expect(fake.requests[1]!.url).toBe('https://api.test:4010//evil.test/accounting/transactions/?page=2');
      expect(warnings).toMatchObject([{ type: 'next_rebased', nextOrigin: 'http://web:8000' }]);
    });

    it('follows a relative next resolved against the current page', async () => {
      const { client, fake } = setup(pagesWithNext('/api/v1/accounting/transactions/?page=2&page_size=1000'));
      expect(await client.transactions.list().all()).toHaveLength(2);
      expect(fake.requests[1]!.url).toBe(`${BASE_URL}/accounting/transactions/?page=2&page_size=1000`);
    });

    it('detects a next seen before (a loop), whatever the order of its query', async () => {
      let n = 0;
      const { client, fake } = setup(() => {
        n++;
        const next =
          n === 1
            ? `${BASE_URL}/accounting/transactions/?page=2&page_size=1000`
            : `${BASE_URL}/accounting/transactions/?page_size=1000&page=2`;
        return json(200, { count: 99, next, previous: null, results: [transaction(n)] });
      });
      const error = await client.transactions
        .list()
        .all()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaginationError);
      expect((error as PaginationError).reason).toBe('next_loop');
      expect(fake.requests).toHaveLength(2);
    });

    it.each([
      ['as sent', `${BASE_URL}/accounting/categories/?pageSize=1000`],
      ['with page=1 spelled out', `${BASE_URL}/accounting/categories/?pageSize=1000&page=1`],
    ])('detects a next that points back at the first page %s', async (_name, next) => {
      const { client, fake } = setup(() => json(200, { count: 9, next, previous: null, results: [] }));
      await expect(client.categories.list().all()).rejects.toMatchObject({ reason: 'next_loop' });
      expect(fake.requests).toHaveLength(1);
    });
  });

  describe('one page ahead', () => {
    it('has sent the next page request, and only that one, when a page is handed over', async () => {
      const { client, fake } = setup(listHandler('/accounting/transactions/', transactions));
      const sentWhenDelivered: number[] = [];
      for await (const page of client.transactions.list({ pageSize: 3 }).pages()) {
        // Let anything else that could be sent go out before counting.
        await new Promise((resolve) => setImmediate(resolve));
        sentWhenDelivered.push(fake.requests.length);
        expect(page.items).not.toHaveLength(0);
      }
      expect(sentWhenDelivered).toEqual([2, 3, 3]);
      expect(fake.urls().map((u) => u.searchParams.get('page'))).toEqual([null, '2', '3']);
    });

    it('raises a failure of the page fetched ahead only after the page before it is consumed', async () => {
      const { client } = setup((_request, url) =>
        url.searchParams.get('page') === '2'
          ? apiError(400, 'invalid_request_error', 'invalid_parameter', { param: 'page' })
          : json(200, { count: 2, next: `${BASE_URL}/accounting/transactions/?page=2`, previous: null, results: [transaction(1)] }),
      );
      const seen: string[] = [];
      const error = await (async () => {
        for await (const item of client.transactions.list()) seen.push(item.parsed.publicId);
      })().catch((e: unknown) => e);
      expect(seen).toEqual([transaction(1).publicId]);
      expect(error).toMatchObject({ status: 400 });
    });

    it('lets a consumer that stops early return only once the request in flight has settled, its failure dropped', async () => {
      let settled = false;
      const { client, fake } = setup(async (_request, url) => {
        if (url.searchParams.get('page') !== '2') {
          return json(200, { count: 2, next: `${BASE_URL}/accounting/transactions/?page=2`, previous: null, results: [transaction(1)] });
        }
        await new Promise((resolve) => setImmediate(resolve));
        settled = true;
        return apiError(400, 'invalid_request_error', 'invalid_parameter', { param: 'page' });
      });
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        for await (const item of client.transactions.list()) {
          if (item.parsed.publicId) break;
        }
        expect(settled).toBe(true);
        for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
      expect(unhandled).toEqual([]);
      expect(fake.requests).toHaveLength(2);
    });

    it('does not retry the request in flight when the consumer stops early', async () => {
      const { client, fake } = setup(async (_request, url) => {
        if (url.searchParams.get('page') !== '2') {
          return json(200, { count: 2, next: `${BASE_URL}/accounting/transactions/?page=2`, previous: null, results: [transaction(1)] });
        }
        await new Promise((resolve) => setImmediate(resolve));
        return apiError(503, 'api_error', 'service_unavailable', {}, { 'retry-after': '5' });
      });
      for await (const item of client.transactions.list()) {
        if (item.parsed.publicId) break;
      }
      expect(fake.requests.map((r) => new URL(r.url).searchParams.get('page'))).toEqual([null, '2']);
    });

    it('still retries the request for the next page while the consumer reads on', async () => {
      let failures = 1;
      const { client, fake } = setup((_request, url) => {
        if (url.searchParams.get('page') !== '2') {
          return json(200, { count: 2, next: `${BASE_URL}/accounting/transactions/?page=2`, previous: null, results: [transaction(1)] });
        }
        if (failures-- > 0) return apiError(503, 'api_error', 'service_unavailable');
        return json(200, { count: 2, next: null, previous: null, results: [transaction(2)] });
      });
      const read: string[] = [];
      for await (const item of client.transactions.list()) read.push(item.parsed.publicId);
      expect(read).toEqual([transaction(1).publicId, transaction(2).publicId]);
      expect(fake.requests).toHaveLength(3);
    });

    it('does not turn a failure of the page fetched ahead into an unhandled rejection while the consumer is busy', async () => {
      const { client } = setup((_request, url) =>
        url.searchParams.get('page') === '2'
          ? apiError(400, 'invalid_request_error', 'invalid_parameter', { param: 'page' })
          : json(200, { count: 2, next: `${BASE_URL}/accounting/transactions/?page=2`, previous: null, results: [transaction(1)] }),
      );
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      let error: unknown;
      try {
        for await (const item of client.transactions.list()) {
          expect(item.parsed.publicId).toBe(transaction(1).publicId);
          // Busy with the item while the request ahead fails.
          for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        }
      } catch (thrown) {
        error = thrown;
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
      expect(unhandled).toEqual([]);
      expect(error).toMatchObject({ status: 400 });
    });
  });

  describe('the next request from the first bytes of a page', () => {
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const pageOf = (url: URL) => url.searchParams.get('page') ?? '1';

    /**
     * Answers as a socket would: the first bytes of a 2xx body go to `onBodyStart` (as the default
     * transport does), and the rest takes a few turns of the event loop. `log` records each request
     * as it is sent and each body as it completes.
     */
    function streamed(handler: Handler, log: string[], headBytes = 120): Handler {
      return async (request, url) => {
        log.push(`sent ${pageOf(url)}`);
        const response = await handler(request, url);
        if (response.status < 300) request.onBodyStart?.(Buffer.from(response.body).subarray(0, headBytes));
        for (let i = 0; i < 3; i++) await tick();
        log.push(`read ${pageOf(url)}`);
        return response;
      };
    }

    /** A page whose text is written by hand, for keys JSON.stringify cannot repeat. */
    const rawPage = (text: string) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: text });
    const linkTo = (page: number) => `${BASE_URL}/accounting/transactions/?page=${page}`;

    it('sends it while the rest of the page is still arriving, from page 2 on (page 1 sets how many pages may follow)', async () => {
      const log: string[] = [];
      const items = Array.from({ length: 12 }, (_, i) => transaction(i));
      const { client } = setup(streamed(listHandler('/accounting/transactions/', items), log));
      const read: string[] = [];
      for await (const item of client.transactions.list({ pageSize: 3 })) read.push(item.parsed.publicId);
      expect(read).toEqual(items.map((t) => t.publicId));
      // Page 1 is read before page 2 is sent: its length bounds how many pages may follow.
      expect(log.indexOf('sent 2')).toBeGreaterThan(log.indexOf('read 1'));
      expect(log.indexOf('sent 3')).toBeLessThan(log.indexOf('read 2'));
      // This fake sends page 3's first bytes before page 2 is parsed, while page 3 is still the early
      // request: no guess is made from them, and page 4 waits for page 3 to be read.
      expect(log.indexOf('sent 4')).toBeGreaterThan(log.indexOf('read 3'));
      expect(log.filter((e) => e.startsWith('sent'))).toEqual(['sent 1', 'sent 2', 'sent 3', 'sent 4']);
    });

    it('sends a rebased next early, on the base origin, and uses that request', async () => {
      const log: string[] = [];
      const { client, fake, warnings } = setup(
        streamed((_request, url) => {
          const n = Number(pageOf(url));
          const next = n < 4 ? `http://web:8000/api/v1/accounting/transactions/?page=${n + 1}` : null;
          return rawPage(JSON.stringify({ count: 4, next, previous: null, results: [transaction(n)] }));
        }, log),
      );
      expect(await client.transactions.list().all()).toHaveLength(4);
      expect(log.indexOf('sent 3')).toBeLessThan(log.indexOf('read 2'));
      expect(log.filter((e) => e.startsWith('sent'))).toEqual(['sent 1', 'sent 2', 'sent 3', 'sent 4']);
      expect(fake.urls().every((u) => u.origin === 'https://api.test:4010')).toBe(true);
      expect(warnings.map((w) => w.type)).toEqual(['next_rebased']);
    });

    it('drops an early request whose page names another next when parsed, follows that one, and sends no more early', async () => {
      const log: string[] = [];
      let droppedSettled = false;
      const page = (n: number, next: string | null) =>
        rawPage(JSON.stringify({ count: 4, next, previous: null, results: [transaction(n)] }));
      const { client } = setup(
        streamed(async (_request, url) => {
          switch (pageOf(url)) {
            case '1':
              return page(1, linkTo(2));
            // The head names page 3; JSON.parse takes the last `next`, page 4.
            case '2':
              return rawPage(`{"count":4,"next":"${linkTo(3)}","results":[${JSON.stringify(transaction(2))}],"next":"${linkTo(4)}"}`);
            case '3':
              for (let i = 0; i < 10; i++) await tick();
              droppedSettled = true;
              return page(3, linkTo(4));
            case '4':
              return page(4, linkTo(5));
            default:
              return page(5, null);
          }
        }, log),
      );
      const read: string[] = [];
      for await (const item of client.transactions.list()) read.push(item.parsed.publicId);
      expect(read).toEqual([1, 2, 4, 5].map((n) => transaction(n).publicId));
      expect(droppedSettled).toBe(true);
      // After the wrong guess, page 5 waits for page 4 to be read, as without early requests.
      expect(log.indexOf('sent 5')).toBeGreaterThan(log.indexOf('read 4'));
    });

    it('does not retry a dropped early request that fails: one attempt, no Retry-After wait, and the list goes on', async () => {
      const log: string[] = [];
      const clock = ManualClock.autoAdvancing();
      const page = (n: number, next: string | null) =>
        rawPage(JSON.stringify({ count: 4, next, previous: null, results: [transaction(n)] }));
      const { client, logger } = setup(
        streamed(async (_request, url) => {
          switch (pageOf(url)) {
            case '1':
              return page(1, linkTo(2));
            case '2':
              return rawPage(`{"count":4,"next":"${linkTo(3)}","results":[${JSON.stringify(transaction(2))}],"next":"${linkTo(4)}"}`);
            case '3':
              // Rate limited: a wanted request would sleep 30 s and try again, up to four times.
              return apiError(429, 'rate_limit_error', 'rate_limited', {}, { 'retry-after': '30' });
            case '4':
              return page(4, null);
            default:
              throw new Error(`unexpected page ${pageOf(url)}`);
          }
        }, log),
        { clock },
      );
      const started = clock.now();
      const read: string[] = [];
      for await (const item of client.transactions.list()) read.push(item.parsed.publicId);
      expect(read).toEqual([1, 2, 4].map((n) => transaction(n).publicId));
      expect(log.filter((e) => e === 'sent 3')).toHaveLength(1);
      expect(clock.now() - started).toBeLessThan(30_000);
      expect(logger.entries().filter((e) => e.message === 'accounting api request will be retried')).toEqual([]);
    });

    it('sends nothing early for a next it would refuse; the parsed page raises the refusal after the page before it', async () => {
      const log: string[] = [];
      const { client, fake } = setup(
        streamed((_request, url) => {
          const next = pageOf(url) === '1' ? linkTo(2) : 'https://elsewhere.test/internal/accounting/transactions/?page=3';
          return json(200, { count: 3, next, previous: null, results: [transaction(Number(pageOf(url)))] });
        }, log),
      );
      const read: string[] = [];
      const error = await (async () => {
        for await (const item of client.transactions.list()) read.push(item.parsed.publicId);
      })().catch((e: unknown) => e);
      expect(read).toEqual([transaction(1).publicId, transaction(2).publicId]);
      expect(error).toBeInstanceOf(PaginationError);
      expect(error).toMatchObject({ reason: 'foreign_next' });
      expect(fake.urls().map((u) => u.host)).toEqual(['api.test:4010', 'api.test:4010']);
    });

    it('sends nothing early past the most pages the first page allows; the parsed page raises too_many_pages', async () => {
      const log: string[] = [];
      // count 2 at one item a page allows 2 + 2 pages; the service's next goes on for ever.
      const { client, fake } = setup(
        streamed((_request, url) => {
          const n = Number(pageOf(url));
          return json(200, { count: 2, next: linkTo(n + 1), previous: null, results: [transaction(n)] });
        }, log),
      );
      const error = await (async () => {
        for await (const item of client.transactions.list()) expect(item.parsed.publicId).toBeDefined();
      })().catch((e: unknown) => e);
      expect(error).toMatchObject({ reason: 'too_many_pages' });
      expect(fake.requests).toHaveLength(4);
    });

    it('lets a consumer that stops early return only once the early request has settled', async () => {
      const log: string[] = [];
      let fourthSettled = false;
      const { client } = setup(
        streamed(async (_request, url) => {
          const n = Number(pageOf(url));
          // Page 3 answers late, so its first bytes come after page 2 is parsed: they send page 4,
          // which is slow, while the consumer still holds page 2.
          for (let i = 0; i < (n === 3 ? 5 : 0); i++) await tick();
          if (n === 4) {
            for (let i = 0; i < 30; i++) await tick();
            fourthSettled = true;
          }
          return json(200, { count: 10, next: linkTo(n + 1), previous: null, results: [transaction(n)] });
        }, log),
      );
      let sentWhileHeld: string[] = [];
      for await (const page of client.transactions.list().pages()) {
        if (page.items[0]!.parsed.publicId !== transaction(2).publicId) continue;
        for (let i = 0; i < 20; i++) await tick();
        sentWhileHeld = log.filter((e) => e.startsWith('sent'));
        break;
      }
      expect(sentWhileHeld).toEqual(['sent 1', 'sent 2', 'sent 3', 'sent 4']);
      expect(fourthSettled).toBe(true);
      expect(log).not.toContain('sent 5');
    });

    it('resolves a relative next from the first bytes against the page it came in, as the parsed page does', async () => {
      const log: string[] = [];
      const { client, fake } = setup(
        streamed((_request, url) => {
          const n = Number(pageOf(url));
          const next = n === 1 ? `${BASE_URL}/accounting/transactions/b/?page=2` : n < 4 ? `c${n}/?page=${n + 1}` : null;
          return json(200, { count: 4, next, previous: null, results: [transaction(n)] });
        }, log),
      );
      const read: string[] = [];
      for await (const item of client.transactions.list()) read.push(item.parsed.publicId);
      expect(read).toEqual([1, 2, 3, 4].map((n) => transaction(n).publicId));
      expect(fake.urls().map((u) => u.pathname.replace('/api/v1/accounting/transactions/', ''))).toEqual(['', 'b/', 'b/c2/', 'b/c2/c3/']);
      expect(log.indexOf('sent 3')).toBeLessThan(log.indexOf('read 2'));
    });
  });

  describe('count', () => {
    it('reports a count that disagrees with the items read, as a typed warning and a warn line', async () => {
      const { client, warnings, logger } = setup(listHandler('/accounting/transactions/', transactions, { count: 8 }));
      expect(await client.transactions.list({ pageSize: 3 }).all()).toHaveLength(7);
      expect(warnings).toEqual([
        { type: 'count_mismatch', request: 'GET /api/v1/accounting/transactions/?page_size=3&page=3', counts: [8], itemsRead: 7 },
      ]);
      expect(logger.entries().filter((e) => e.level === 'warn' && e.type === 'count_mismatch')).toHaveLength(1);
    });

    it('reports a count that changed between pages even when the last one matches', async () => {
      let n = 0;
      const { client, warnings } = setup(() => {
        n++;
        return n === 1
          ? json(200, {
              count: 2,
              next: `${BASE_URL}/accounting/transactions/?page=2&page_size=1000`,
              previous: null,
              results: [transaction(1)],
            })
          : json(200, { count: 3, next: null, previous: null, results: [transaction(2), transaction(3)] });
      });
      await client.transactions.list().all();
      expect(warnings).toMatchObject([{ type: 'count_mismatch', counts: [2, 3], itemsRead: 3 }]);
    });

    it('says nothing when count matches, or when the consumer stops early', async () => {
      const ok = setup(listHandler('/accounting/transactions/', transactions));
      await ok.client.transactions.list({ pageSize: 3 }).all();
      expect(ok.warnings).toEqual([]);

      const early = setup(listHandler('/accounting/transactions/', transactions, { count: 100 }));
      for await (const item of early.client.transactions.list({ pageSize: 3 })) {
        if (item.parsed.publicId) break;
      }
      expect(early.warnings).toEqual([]);
    });

    it('lets a strict caller turn the warning into a failure', async () => {
      const { client } = setup(listHandler('/accounting/transactions/', transactions, { count: 6 }), {
        onWarning: (w) => {
          throw new Error(`refusing: ${w.type}`);
        },
      });
      await expect(client.transactions.list().all()).rejects.toThrow('refusing: count_mismatch');
    });
  });
});

describe('pagination: repeated items', () => {
  const TX = '/accounting/transactions/';

  const idOf = (item: unknown): string => {
    const { publicId, pk } = item as { publicId?: string; pk?: string };
    return (publicId ?? pk)!;
  };

  /** Serves `pages` as they are, one a request, with `next` links; `count` is the distinct items unless given. */
  function pagesOf(path: string, pages: unknown[][], count = new Set(pages.flat().map(idOf)).size): Handler {
    return (_request, url) => {
      if (url.pathname !== new URL(BASE_URL).pathname + path) return apiError(404, 'not_found_error', 'not_found');
      const n = Number(url.searchParams.get('page') ?? '1');
      const next = new URL(url);
      next.searchParams.set('page', String(n + 1));
      return json(200, { count, next: n < pages.length ? next.href : null, previous: null, results: pages[n - 1] });
    };
  }
  const t = (i: number) => transaction(i);
  const ids = (items: { parsed: { publicId: string } }[]) => items.map((item) => item.parsed.publicId);

  it('drops an item the previous page ended with, keeps the first, and warns once for it', async () => {
    // An insert before the read position between page 1 and page 2: page 2 starts with page 1's last item.
    const { client, warnings, logger } = setup(pagesOf(TX, [[t(1), t(2), t(3)], [t(3), t(4), t(5)], [t(6)]]));
    const pages = await collect(client.transactions.list({ pageSize: 3 }).pages());
    expect(pages.flatMap((p) => ids(p.items))).toEqual([1, 2, 3, 4, 5, 6].map((i) => t(i).publicId));
    expect(pages.map((p) => p.duplicatesDropped)).toEqual([0, 1, 0]);
    expect(warnings).toEqual([
      {
        type: 'duplicate_item',
        request: 'GET /api/v1/accounting/transactions/?page_size=3&page=2',
        path: 'results[0]',
        id: t(3).publicId,
      },
    ]);
    // Six distinct items, as announced: no count_mismatch.
    expect(
      logger
        .entries()
        .filter((e) => e.level === 'warn')
        .map((e) => e.type),
    ).toEqual(['duplicate_item']);
  });

  it('drops several items a page repeats from the one before, whatever their order there', async () => {
    const { client, warnings } = setup(
      pagesOf(TX, [
        [t(1), t(2), t(3)],
        [t(3), t(2), t(4)],
      ]),
    );
    expect(ids(await client.transactions.list({ pageSize: 3 }).all())).toEqual([1, 2, 3, 4].map((i) => t(i).publicId));
    expect(warnings.map((w) => w.type === 'duplicate_item' && [w.path, w.id])).toEqual([
      ['results[0]', t(3).publicId],
      ['results[1]', t(2).publicId],
    ]);
  });

  it('drops an item repeated within one page', async () => {
    const { client, warnings } = setup(pagesOf(TX, [[t(1), t(2), t(1), t(3)]]));
    const [page] = await collect(client.transactions.list().pages());
    expect(ids(page!.items)).toEqual([1, 2, 3].map((i) => t(i).publicId));
    expect(page!.duplicatesDropped).toBe(1);
    expect(warnings).toMatchObject([{ type: 'duplicate_item', path: 'results[2]', id: t(1).publicId }]);
  });

  it('keeps items that differ only in their id, and warns of nothing', async () => {
    const same = (i: number) => transaction(i, { amount: -500, description: 'same', valueDate: '2026-10-01T00:00:00+00:00' });
    const { client, warnings } = setup(
      pagesOf(TX, [
        [same(1), same(2)],
        [same(3), same(4)],
      ]),
    );
    expect(await client.transactions.list({ pageSize: 2 }).all()).toHaveLength(4);
    expect(warnings).toEqual([]);
  });

  it('remembers only the page before: a repeat two pages apart is handed over again', async () => {
    // The bound that keeps memory constant: two pages' ids, never the whole list's.
    const { client, warnings } = setup(pagesOf(TX, [[t(1)], [t(2)], [t(1)]], 3));
    expect(ids(await client.transactions.list({ pageSize: 1 }).all())).toEqual([t(1), t(2), t(1)].map((x) => x.publicId));
    expect(warnings).toEqual([]);
  });

  it('counts a dropped repeat as not read, so a repeat that hides a skipped item is still a count_mismatch', async () => {
    // Four announced, four sent, one of them twice: an item was skipped.
    const { client, warnings } = setup(
      pagesOf(
        TX,
        [
          [t(1), t(2)],
          [t(2), t(4)],
        ],
        4,
      ),
    );
    expect(await client.transactions.list({ pageSize: 2 }).all()).toHaveLength(3);
    expect(warnings.map((w) => w.type)).toEqual(['duplicate_item', 'count_mismatch']);
    expect(warnings[1]).toMatchObject({ counts: [4], itemsRead: 3 });
  });

  it('identifies tax reports by pk and categories by publicId', async () => {
    const report = (i: number) => ({ pk: `20000000-0000-4000-8000-${String(i).padStart(12, '0')}` });
    const reports = setup(
      pagesOf(`/companies/${COMPANY_A}/taxes/reports/`, [
        [report(1), report(2)],
        [report(2), report(3)],
      ]),
    );
    expect((await reports.client.taxReports.list(COMPANY_A, { pageSize: 2 }).all()).map((r) => r.parsed.pk)).toEqual(
      [1, 2, 3].map((i) => report(i).pk),
    );
    expect(reports.warnings).toMatchObject([{ type: 'duplicate_item', id: report(2).pk }]);

    const categories = setup(
      pagesOf('/accounting/categories/', [
        [category(1), category(2)],
        [category(2), category(3)],
      ]),
    );
    expect(ids(await categories.client.categories.list({ pageSize: 2 }).all())).toEqual([1, 2, 3].map((i) => category(i).publicId));
    expect(categories.warnings).toMatchObject([{ type: 'duplicate_item', id: category(2).publicId }]);
  });

  it('leaves lists without an identity as they are: a single answer, API keys', async () => {
    const company = { publicId: COMPANY_A, name: 'Acme' };
    // `GET /companies/` may answer a JSON array as the whole list (ListSource.single).
    const single = setup(() => json(200, [company, company]));
    expect(await single.client.companies.list().all()).toHaveLength(2);
    expect(single.warnings).toEqual([]);

    const key = { publicId: COMPANY_B, name: 'k', prefix: 'sbx_01234567', permissions: [] };
    const keys = setup(pagesOf('/api-keys/', [[key], [key]], 2));
    expect(await keys.client.apiKeys.list({ pageSize: 1 }).all()).toHaveLength(2);
    expect(keys.warnings).toEqual([]);
  });
});

async function collect<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const page of pages) out.push(page);
  return out;
}

describe('pagination: itemJson', () => {
  const text = (item: { json: { bytes: Uint8Array; start: number; end: number } | undefined }) =>
    item.json && Buffer.from(item.json.bytes.subarray(item.json.start, item.json.end)).toString('utf8');

  it('hands out each item of an envelope page as the JSON text the service sent', async () => {
    // Spaced, and with a number spelling JSON.stringify would change: the text is the service's.
    const [a, b, c] = [0, 1, 2].map((i) => JSON.stringify(category(i)));
    const spaced = `{ "extra" : 1.50 , ${a!.slice(1)}`;
    const body = (page: number) =>
      page === 1
        ? `{"count":3,"next":"${BASE_URL}/accounting/categories/?pageSize=2&page=2","results":[ ${spaced},\n ${b} ]}`
        : `{"count":3,"next":null,"results":[${c}]}`;
    const { client } = setup(
      (_request, url) => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: body(Number(url.searchParams.get('page') ?? '1')),
      }),
      { itemJson: true },
    );
    const items = await client.categories.list({ pageSize: 2 }).all();
    expect(items.map(text)).toEqual([`{"extra":1.50,${a!.slice(1)}`, b, c]);
  });

  it('is off by default, and never set for an answer that is the item itself', async () => {
    const off = setup(listHandler('/accounting/transactions/', transactions));
    expect((await off.client.transactions.list().all()).every((i) => i.json === undefined)).toBe(true);
    const company = { publicId: 'ab2f3c4d-0000-4000-8000-000000000001', name: 'Acme' };
    const single = setup(() => json(200, company), { itemJson: true });
    const [item] = await single.client.companies.list().all();
    expect(item!.parsed.publicId).toBe(company.publicId);
    expect(item!.json).toBeUndefined();
  });
});
