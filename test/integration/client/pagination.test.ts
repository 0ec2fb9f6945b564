import {
  type AccountingApiWarning,
  type Page,
  PaginationError,
  type PaginatedList,
  type Transport,
  accessTokenAuth,
  apiKeyAuth,
  fetchTransport,
} from '../../../src/core/accounting-api';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { type RecordingServer, startRecordingServer } from '../../helpers/recording-server';
import { type World, rejectionOf, startWorld } from './support';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  const TX = 'GET /accounting/transactions/';
  // All of October: the minimal dialect's date_to is exclusive (docs/assumptions.md, "The minimal dialect").
  const OCTOBER = { dateFrom: '2026-10-01', dateTo: dialect === 'minimal' ? '2026-11-01' : '2026-10-31' } as const;

  async function collectPages<T>(list: PaginatedList<T>): Promise<Page<T>[]> {
    const pages: Page<T>[] = [];
    for await (const page of list.pages()) pages.push(page);
    return pages;
  }

  /** Pages read before the list failed, and the failure. */
  async function pagesUntilFailure<T>(list: PaginatedList<T>): Promise<{ pages: Page<T>[]; error: Error }> {
    const pages: Page<T>[] = [];
    const error = await rejectionOf(
      (async () => {
        for await (const page of list.pages()) pages.push(page);
      })(),
    );
    return { pages, error };
  }

  const sizes = <T>(pages: Page<T>[]) => pages.map((p) => p.items.length);

  describe('client against the sandbox: pagination', () => {
    let world: World;
    let foreign: RecordingServer;
    let userToken: string;

    beforeAll(async () => {
      world = await startWorld({ dialect });
      foreign = await startRecordingServer();
      const { admin } = world.sandbox;
      const { companyId } = world;
      await admin.generateTransactions({ companyId, month: '2026-10', count: 250 });
      for (let i = 0; i < 23; i++) await admin.addCategory({ companyId, name: `Category ${i}` });
      for (let m = 1; m <= 5; m++) await admin.addTaxReport({ companyId, periodStart: `2026-0${m}-01`, periodEnd: `2026-0${m}-28` });
      for (let i = 0; i < 4; i++) await admin.createApiKey({ companyId, permissions: ['read_transactions'], name: `reader ${i}` });
      const more = [await admin.createCompany({ name: 'Second' }), await admin.createCompany({ name: 'Third' })];
      const user = await admin.createUser({
        institutionId: world.institutionId,
        companies: [companyId, ...more.map((c) => c.publicId)],
        issueTokens: true,
      });
      userToken = user.tokens!.accessToken;
    });
    afterAll(async () => {
      await foreign.stop();
      await world.sandbox.stop();
    });
    beforeEach(() => world.sandbox.admin.resetStats());
    afterEach(() => world.sandbox.admin.faults.clear());

    it('pages(): several full pages and a partial one, following next (which carries the parameters) until null', async () => {
      const pages = await collectPages(world.client().transactions.list({ ...OCTOBER, pageSize: 40 }));
      expect(sizes(pages)).toEqual([40, 40, 40, 40, 40, 40, 10]);
      expect(pages.every((p) => p.count === 250)).toBe(true);
      pages.forEach((page, i) => {
        if (i === pages.length - 1) return expect(page.next).toBeNull();
        const next = new URL(page.next!);
        expect(Object.fromEntries(next.searchParams)).toEqual({
          date_from: '2026-10-01',
          date_to: OCTOBER.dateTo,
          page: String(i + 2),
          page_size: '40',
        });
        expect(page.request).toContain(i === 0 ? `?date_from=2026-10-01&date_to=${OCTOBER.dateTo}&page_size=40` : `page=${i + 1}`);
      });
      expect(pages[0]!.previous).toBeNull();
      expect(new URL(pages[1]!.previous!).searchParams.get('page')).toBe('1');
      expect(await world.requests(TX)).toBe(7);
      // Every request after the first was the next link, parameters included.
      const log = await world.sandbox.admin.requestLog({ limit: 7 });
      expect(log.slice(1).map((e) => e.query)).toEqual(
        [2, 3, 4, 5, 6, 7].map((n) => `?date_from=2026-10-01&date_to=${OCTOBER.dateTo}&page_size=40&page=${n}`),
      );
    });

    it('items() (and for await) yield the same items in order, each once, as many as the service holds', async () => {
      const list = world.client().transactions.list({ ...OCTOBER, pageSize: 40 });
      const viaPages = (await collectPages(list)).flatMap((p) => p.items.map((i) => i.parsed.publicId));
      const viaItems: string[] = [];
      for await (const item of list.items()) viaItems.push(item.parsed.publicId);
      const viaForAwait: string[] = [];
      for await (const item of list) viaForAwait.push(item.parsed.publicId);
      expect(viaItems).toEqual(viaPages);
      expect(viaForAwait).toEqual(viaPages);
      expect(new Set(viaItems).size).toBe(250);
      expect((await world.sandbox.admin.transactionSummary({ companyId: world.companyId, ...OCTOBER })).count).toBe(250);
    });

    it('asks for a page from the first bytes of the one before it where next precedes results (default dialect), else once that one is parsed', async () => {
      const events: string[] = [];
      // The real fetch to the sandbox, its body handed on in two halves a few event-loop turns
      // apart, as a body larger than a socket read arrives.
      const halves = (async (input: string, init: RequestInit) => {
        const response = await fetch(input, init);
        const bytes = new Uint8Array(await response.arrayBuffer());
        const parts = [bytes.subarray(0, bytes.length >> 1), bytes.subarray(bytes.length >> 1)];
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            const part = parts.shift();
            if (part === undefined) return controller.close();
            if (parts.length === 0) for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
            controller.enqueue(part);
          },
        });
        return new Response(body, { status: response.status, headers: response.headers });
      }) as unknown as typeof fetch;
      const inner = fetchTransport(halves);
      const transport: Transport = async (request) => {
        const page = new URL(request.url).searchParams.get('page') ?? '1';
        events.push(`sent ${page}`);
        const response = await inner(request);
        events.push(`read ${page}`);
        return response;
      };
      let items = 0;
      for await (const item of world.client({ transport }).transactions.list({ ...OCTOBER, pageSize: 50 })) items += item.parsed ? 1 : 0;
      expect(items).toBe(250);
      expect(events.filter((e) => e.startsWith('sent'))).toEqual(['sent 1', 'sent 2', 'sent 3', 'sent 4', 'sent 5']);
      const early = [3, 4, 5].filter((page) => events.indexOf(`sent ${page}`) < events.indexOf(`read ${page - 1}`));
      if (dialect === 'default') expect(early).toContain(3);
      else expect(early).toEqual([]);
      // Never more than one page ahead of the one being read.
      for (const page of [3, 4, 5]) expect(events.indexOf(`sent ${page}`)).toBeGreaterThan(events.indexOf(`read ${page - 2}`));
    });

    describe('page size: explicit, in the spelling of each resource (the sandbox default would give other sizes)', () => {
      it('categories: pageSize (default 50)', async () => {
        expect(sizes(await collectPages(world.client().categories.list({ pageSize: 10 })))).toEqual([10, 10, 3]);
        expect((await world.sandbox.admin.requestLog()).map((e) => e.query)).toEqual([
          '?pageSize=10',
          '?pageSize=10&page=2',
          '?pageSize=10&page=3',
        ]);
      });

      it('transactions: page_size (default 100)', async () => {
        expect(sizes(await collectPages(world.client().transactions.list({ pageSize: 120 })))).toEqual([120, 120, 10]);
        expect((await world.sandbox.admin.requestLog({ limit: 1 }))[0]!.query).toBe('?page_size=120&page=3');
      });

      it('tax reports: page_size (default 20)', async () => {
        expect(sizes(await collectPages(world.client().taxReports.list(world.companyId, { pageSize: 2 })))).toEqual([2, 2, 1]);
        expect((await world.sandbox.admin.requestLog({ limit: 1 }))[0]!.query).toBe('?page_size=2&page=3');
      });

      it('API keys: page_size (default 25)', async () => {
        expect(sizes(await collectPages(world.client().apiKeys.list({ pageSize: 2 })))).toEqual([2, 2, 1]);
      });

      it("companies: page_size (default 10), over a user's three companies", async () => {
        const pages = await collectPages(world.client({ credentials: accessTokenAuth(userToken) }).companies.list({ pageSize: 2 }));
        expect(sizes(pages)).toEqual([2, 1]);
        expect(pages[0]!.count).toBe(3);
      });

      it('sends 1000 when none is given, and caps a larger one at the maximum', async () => {
        expect(sizes(await collectPages(world.client().transactions.list()))).toEqual([250]);
        expect(sizes(await collectPages(world.client().transactions.list({ pageSize: 5000 })))).toEqual([250]);
        expect(sizes(await collectPages(world.client({ maxPageSize: 100 }).transactions.list({ pageSize: 5000 })))).toEqual([100, 100, 50]);
        expect((await world.sandbox.admin.requestLog()).map((e) => e.query)).toEqual([
          '?page_size=1000',
          '?page_size=1000',
          '?page_size=100',
          '?page_size=100&page=2',
          '?page_size=100&page=3',
        ]);
      });
    });

    describe('count', () => {
      it('reports a count that disagrees with the items read, as a warning (and a warn line)', async () => {
        await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'count_mismatch', delta: -1 } });
        const warnings: AccountingApiWarning[] = [];
        const logger = new MemoryLogger();
        const items = await world
          .client({ onWarning: (w) => warnings.push(w), logger })
          .transactions.list({ ...OCTOBER, pageSize: 100 })
          .all();
        expect(items).toHaveLength(250);
        expect(warnings).toEqual([
          { type: 'count_mismatch', request: expect.stringContaining('page=3') as unknown, counts: [249], itemsRead: 250 },
        ]);
        expect(logger.entries()).toEqual([expect.objectContaining({ level: 'warn', type: 'count_mismatch', itemsRead: 250 })]);
      });

      it('says nothing when the count matches, or when the consumer stops early', async () => {
        const warnings: AccountingApiWarning[] = [];
        const client = world.client({ onWarning: (w) => warnings.push(w) });
        await client.transactions.list({ pageSize: 100 }).all();
        await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'count_mismatch' } });
        for await (const page of client.transactions.list({ pageSize: 100 }).pages()) {
          expect(page.count).toBe(251);
          break;
        }
        expect(warnings).toEqual([]);
        // Three for the whole list, then the first page and the second, fetched ahead of the stop.
        expect(await world.requests(TX)).toBe(5);
      });
    });

    describe('next links the client refuses', () => {
      it('a loop back to page 1, after the pages before it were yielded', async () => {
        await world.sandbox.admin.faults.add({ route: TX, query: { page: '3' }, fault: { type: 'next_loop', to: 'first' } });
        const { pages, error } = await pagesUntilFailure(world.client().transactions.list({ pageSize: 40 }));
        expect(sizes(pages)).toEqual([40, 40, 40]);
        expect(error).toBeInstanceOf(PaginationError);
        expect(error).toMatchObject({ reason: 'next_loop', status: 200, requestId: expect.stringMatching(/^req_/) as unknown });
        expect(await world.requests(TX)).toBe(3);
      });

      it('a next pointing to the page itself', async () => {
        await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'next_loop' } });
        const { pages, error } = await pagesUntilFailure(world.client().transactions.list({ pageSize: 40 }));
        expect(pages).toHaveLength(1);
        expect(error).toMatchObject({ reason: 'next_loop' });
        expect(await world.requests(TX)).toBe(1);
      });

      it('a foreign origin outside the base path, without sending it anything (so never the credential)', async () => {
        const foreignNext = `${foreign.origin}/proxy/api/v1/accounting/transactions/?page=2&page_size=40`;
        await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'foreign_next', url: foreignNext } });
        const { pages, error } = await pagesUntilFailure(world.client().transactions.list({ pageSize: 40 }));
        expect(pages).toHaveLength(1);
        expect(error).toBeInstanceOf(PaginationError);
        expect(error).toMatchObject({ reason: 'foreign_next' });
        expect(error.message).toContain(`for ${foreign.origin}/proxy/api/v1/accounting/transactions/; not followed`);
        expect(foreign.requests).toEqual([]);
        expect(await world.requests(TX)).toBe(1);

        // Control: the foreign host does record what reaches it.
        await fetch(`${foreign.origin}/probe`);
        expect(foreign.requests.map((r) => r.url)).toEqual(['/probe']);
        foreign.requests.length = 0;
      });

      it('the sandbox default foreign next, and a next on the same host outside /api/v1/', async () => {
        await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'foreign_next' } });
        const sandboxOrigin = new URL(world.sandbox.baseUrl).origin;
        await world.sandbox.admin.faults.add({
          route: TX,
          after: 1,
          fault: { type: 'foreign_next', url: `${sandboxOrigin}/api/v2/accounting/transactions/?page=2` },
        });
        const client = world.client();
        const first = await pagesUntilFailure(client.transactions.list({ pageSize: 40 }));
        expect(first.error).toMatchObject({
          reason: 'foreign_next',
          message: expect.stringContaining('http://foreign.invalid/outside/api/v1/') as unknown,
        });
        const second = await pagesUntilFailure(client.transactions.list({ pageSize: 40 }));
        expect(second.error).toMatchObject({ reason: 'foreign_next', message: expect.stringContaining('/api/v2/') as unknown });
        expect((await world.sandbox.admin.requestLog()).map((e) => e.path)).toEqual([
          '/api/v1/accounting/transactions/',
          '/api/v1/accounting/transactions/',
        ]);
      });
    });

    // Decision 108: what a Django REST framework service behind a TLS-terminating proxy writes.
    describe('next links on another origin under the base path: requested on the base origin', () => {
      it('every page on another host: read whole from the sandbox, that host never contacted, one warning', async () => {
        await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'foreign_next', origin: foreign.origin } });
        const warnings: AccountingApiWarning[] = [];
        const logger = new MemoryLogger();
        const pages = await collectPages(
          world.client({ onWarning: (w) => warnings.push(w), logger }).transactions.list({ ...OCTOBER, pageSize: 40 }),
        );
        expect(sizes(pages)).toEqual([40, 40, 40, 40, 40, 40, 10]);
        expect(pages.slice(0, -1).every((p) => new URL(p.next!).origin === foreign.origin)).toBe(true);
        expect(await world.requests(TX)).toBe(7);
        expect(foreign.requests).toEqual([]);
        const sandboxOrigin = new URL(world.sandbox.baseUrl).origin;
        expect(warnings).toEqual([
          {
            type: 'next_rebased',
            request: expect.stringMatching(/^GET \/api\/v1\/accounting\/transactions\/\?/) as unknown,
            nextOrigin: foreign.origin,
            baseOrigin: sandboxOrigin,
          },
        ]);
        // The warning names origins and the (redacted) first request, not the `next` it carried.
        expect(JSON.stringify(warnings)).not.toContain('page=2');
        expect(logger.entries().filter((e) => e.message === 'accounting api warning')).toEqual([
          expect.objectContaining({ type: 'next_rebased', nextOrigin: foreign.origin, baseOrigin: sandboxOrigin }),
        ]);

        // Control: the foreign host does record what reaches it.
        await fetch(`${foreign.origin}/probe`);
        expect(foreign.requests.map((r) => r.url)).toEqual(['/probe']);
        foreign.requests.length = 0;
      });

      it('a next on the same host by another name and scheme: followed on the base origin', async () => {
        const sandbox = new URL(world.sandbox.baseUrl);
        // The sandbox listens on 127.0.0.1; `localhost` is the same machine named otherwise, as a
        // service that does not see the forwarded host writes its own.
        await world.sandbox.admin.faults.add({ route: TX, fault: { type: 'foreign_next', origin: `https://localhost:${sandbox.port}` } });
        const warnings: AccountingApiWarning[] = [];
        const pages = await collectPages(
          world.client({ onWarning: (w) => warnings.push(w) }).transactions.list({ ...OCTOBER, pageSize: 100 }),
        );
        expect(sizes(pages)).toEqual([100, 100, 50]);
        expect(new URL(pages[0]!.next!).origin).toBe(`https://localhost:${sandbox.port}`);
        expect(warnings).toMatchObject([
          { type: 'next_rebased', nextOrigin: `https://localhost:${sandbox.port}`, baseOrigin: sandbox.origin },
        ]);
        expect(await world.requests(TX)).toBe(3);
      });

      it('a loop through a rebased next is still next_loop', async () => {
        await world.sandbox.admin.faults.add({ route: TX, query: { page: '2' }, fault: { type: 'next_loop', to: 'first' } });
        await world.sandbox.admin.faults.add({ route: TX, times: 'always', fault: { type: 'foreign_next', origin: foreign.origin } });
        const { pages, error } = await pagesUntilFailure(world.client().transactions.list({ ...OCTOBER, pageSize: 40 }));
        expect(sizes(pages)).toEqual([40, 40]);
        expect(new URL(pages[1]!.next!).origin).toBe(foreign.origin);
        expect(error).toMatchObject({ reason: 'next_loop' });
        expect(await world.requests(TX)).toBe(2);
        expect(foreign.requests).toEqual([]);
      });
    });

    it('a result set that changes between pages: the repeated item is dropped, the count grows, and the client reports both', async () => {
      // A company of its own: the fault inserts a record for good.
      const { admin } = world.sandbox;
      const company = await admin.createCompany({ name: 'Moving' });
      await admin.generateTransactions({ companyId: company.publicId, month: '2026-10', count: 100 });
      const { key } = await admin.createApiKey({ companyId: company.publicId, permissions: ['read_transactions'] });
      await admin.faults.add({ route: TX, fault: { type: 'result_set_change' } });
      const warnings: AccountingApiWarning[] = [];
      const pages = await collectPages(
        world.client({ credentials: apiKeyAuth(key), onWarning: (w) => warnings.push(w) }).transactions.list({ ...OCTOBER, pageSize: 40 }),
      );
      expect(pages.map((p) => p.count)).toEqual([100, 101, 101]);
      const ids = pages.flatMap((p) => p.items.map((i) => i.parsed.publicId));
      // The service sent 101 items, page 1's last one again at the start of page 2; the inserted record is not among them.
      expect(ids).toHaveLength(100);
      expect(new Set(ids).size).toBe(100);
      expect(pages.map((p) => p.duplicatesDropped)).toEqual([0, 1, 0]);
      expect(warnings).toEqual([
        expect.objectContaining({ type: 'duplicate_item', path: 'results[0]', id: pages[0]!.items[39]!.parsed.publicId }),
        expect.objectContaining({ type: 'count_mismatch', counts: [100, 101], itemsRead: 100 }),
      ]);
    });

    it('pages that overlap while the count holds: each item once, one duplicate_item warning, no count_mismatch', async () => {
      await world.sandbox.admin.faults.add({ route: TX, query: { page: '3' }, fault: { type: 'page_overlap', items: 2 } });
      const warnings: AccountingApiWarning[] = [];
      const pages = await collectPages(
        world.client({ onWarning: (w) => warnings.push(w) }).transactions.list({ ...OCTOBER, pageSize: 100 }),
      );
      const ids = pages.flatMap((p) => p.items.map((i) => i.parsed.publicId));
      expect(ids).toHaveLength(250);
      expect(new Set(ids).size).toBe(250);
      expect(pages.map((p) => p.duplicatesDropped)).toEqual([0, 0, 2]);
      expect(warnings.map((w) => w.type === 'duplicate_item' && [w.path, w.request])).toEqual([
        ['results[0]', expect.stringContaining('page=3')],
        ['results[1]', expect.stringContaining('page=3')],
      ]);
    });
  });
});
