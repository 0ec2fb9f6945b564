import type * as z from 'zod';
import { ConfigError } from '../shared/errors';
import { ApiValidationError, PaginationError, type PaginationFailure, responseValidationError } from './errors';
import type { ApiResponse } from './request';
import { envelopeNextFromHead } from './envelope-head';
import { listItemJson, type JsonText } from './item-json';
import { ignoredFieldsOf, listEnvelopeSchema } from './schemas';
import type { AccountingApiWarning, ItemWarning } from './warnings';

/**
 * Lists (spec §4.3) as async iterators over items and over pages, in the manner of openai-node's
 * pagination: nothing is fetched until iteration starts, and each iteration starts afresh.
 *
 * Following `next` is where a credential could leak: a `next` must lie under the base URL's path
 * (`/api/v1/`) and carry no user info, or the list stops with PaginationError before sending
 * anything. One that names another origin is requested on the base URL's own (decision 108): a
 * service behind a TLS-terminating proxy writes its internal view (`http://web:8000/api/v1/…`), and
 * the key must only ever go to the configured origin over its scheme.
 */

/** One item: the raw JSON object (for lossless exports) beside its parsed form. */
export interface PageItem<T> {
  /** As received. An integer beyond 2^53 appears as a digit string (see lossless-json.ts). */
  readonly raw: Record<string, unknown>;
  readonly parsed: T;
  /**
   * The item's JSON text exactly as the service sent it, as UTF-8 (whitespace between tokens
   * removed, so it is one line), when the client was made with `itemJson` and the page is a list
   * envelope; otherwise undefined. Its bytes are the page's body: read them, do not write to them.
   */
  readonly json: JsonText | undefined;
}

export interface Page<T> {
  readonly items: PageItem<T>[];
  readonly count: number;
  readonly next: string | null;
  readonly previous: string | null;
  /** The redacted request that fetched this page. */
  readonly request: string;
  /** Items of the page left out of `items` as repeats (ListSource.identity); 0 for a list without one. */
  readonly duplicatesDropped: number;
}

export interface ListSource<T> {
  baseUrl: URL;
  firstUrl: URL;
  /**
   * `onBodyStart` as TransportRequest.onBodyStart: the list reads the body's first bytes for `next`.
   * `wanted` as Operation.wanted: false once the list will not read the answer, so that a failed
   * attempt is not retried.
   */
  fetch(url: URL, onBodyStart?: (head: Uint8Array) => void, wanted?: () => boolean): Promise<ApiResponse>;
  itemSchema: z.ZodType<T>;
  /**
   * The answer may be the item itself instead of a list envelope (spec §4.2: `GET /companies/`
   * returns "the company the key belongs to"): a JSON object without a `results` array is read as
   * a one-item last page, a JSON array as the whole list.
   */
  single?: boolean;
  /** The schema's output for an item it surely accepts, or undefined to run the schema. */
  fastParse?(raw: unknown): T | undefined;
  warn(warning: AccountingApiWarning): void;
  /** Inspects a parsed item for something to warn about (a category's invalid metadata). */
  checkItem?(parsed: T): ItemWarning | undefined;
  /**
   * What identifies an item (a transaction's `publicId`). With it, an item whose identity came
   * earlier on the same page or on the page before is dropped with a `duplicate_item` warning:
   * offset pages repeat items when the list grows before the read position. Only two pages' ids
   * are kept, so memory does not grow with the list; a repeat further apart is not seen.
   */
  identity?(parsed: T): string;
  onPage?(page: Page<T>, response: ApiResponse): void;
  /** Cut each item's JSON text from the body (PageItem.json). */
  itemJson?: boolean;
  /**
   * The query parameter that carries the page size in `firstUrl`. With it, a first page refused
   * with a 400 that names no other field is requested once more without it (`page_size_refused`).
   */
  pageSizeParam?: string;
}

/**
 * The most pages a list may take: what its largest `count` needs at the page size the service
 * actually used (the first page's length; it may cap ours), plus a margin for items added while
 * we read (10%, at least 2 pages). Past it, an endless `next` chain is PaginationError('too_many_pages').
 */
export function maxPagesFor(count: number, firstPageLength: number): number {
  const expected = Math.ceil(count / Math.max(1, firstPageLength));
  return expected + Math.max(2, Math.ceil(expected / 10));
}

/** The service maximum (spec §8: "normally 1,000 (configured)"). */
export const MAX_PAGE_SIZE = 1000;

/** The page size to send: the caller's, else the default, never above the maximum. */
export function resolvePageSize(requested: number | undefined, defaults: { pageSize: number; maxPageSize: number }): number {
  const size = requested ?? defaults.pageSize;
  if (!Number.isInteger(size) || size < 1) {
    throw new ConfigError([{ path: 'pageSize', message: 'must be a positive integer' }]);
  }
  return Math.min(size, defaults.maxPageSize);
}

export class PaginatedList<T> implements AsyncIterable<PageItem<T>> {
  constructor(private readonly source: ListSource<T>) {}

  [Symbol.asyncIterator](): AsyncIterator<PageItem<T>> {
    return this.items();
  }

  async *items(): AsyncGenerator<PageItem<T>, void, undefined> {
    for await (const page of this.pages()) {
      // A plain loop: `yield*` over an array in an async generator adds an await per item.
      for (const item of page.items) yield item;
    }
  }

  /**
   * Pages in order, following `next` until it is null. When the list ends (not when the
   * consumer stops early), any page `count` that differs from the items read is reported as a
   * `count_mismatch` warning. With `identity`, repeats of the page before are left out (each a
   * `duplicate_item` warning) and not counted as read.
   *
   * One page ahead: the request for page n+1 is sent (its `next` checked first) as soon as page
   * n's `next` is known, so the peer's time overlaps ours. That is when the first bytes of page n's
   * body arrive, where a service that sends `next` before `results` shows it (envelope-head.ts), so
   * that reading and parsing the rest of page n overlaps the peer too; otherwise when page n is
   * parsed, before its items are validated. An early request whose page then names another `next`
   * is dropped, the right one sent, and the list sends no more early requests. At most two requests
   * are in flight: a page's body still arriving and the request for the page after it, so while
   * the consumer holds page n, page n+1 may be read and page n+2 requested. A failure is
   * raised when its page is due; until then it is marked handled, so that a slow consumer does not
   * turn it into an unhandled rejection. A consumer that stops early waits for every request sent
   * to settle (outcomes dropped): nothing is left running after the list (a Lambda invocation must
   * not leave a request, or its retries, to the next one). A request whose answer the list will not
   * read (a dropped early request, or any request in flight when the consumer stops) is not
   * retried: its wait is the attempt under way, never a Retry-After.
   */
  async *pages(options: { follow?: boolean } = {}): AsyncGenerator<Page<T>, void, undefined> {
    const { source } = this;
    const following = options.follow ?? true;
    const seen = new Set<string>([loopKey(source.firstUrl)]);
    let url: URL = source.firstUrl;
    let itemsRead = 0;
    const counts: number[] = [];
    let lastRequest = '';
    let pagesRead = 0;
    let maxCount = 0;
    let firstPageLength = 0;
    const warnedFields = new Set<string>();
    let warnedRebase = false;
    // Two sets swapped page by page instead of one of every id: a million-record export must not
    // hold a million ids, and a shift is as long as what was inserted between two requests,
    // expected to be well under a page.
    const ids: Ids | undefined = source.identity ? { previous: new Set(), current: new Set() } : undefined;
    /** The request for the page after the one whose body is arriving, sent from that body's first bytes. */
    let early: { url: string; response?: Promise<ApiResponse> } | undefined;
    /** Set once an early guess was wrong, and when the list ends: no more early requests. */
    let noEarly = false;
    /** Requests sent and no longer wanted: awaited before the list ends. */
    const dropped: Promise<unknown>[] = [];
    /** Whether the list still reads each request's answer (ListSource.fetch's `wanted`). */
    const reading = new WeakMap<Promise<ApiResponse>, { wanted: boolean }>();
    const unwant = (response: Promise<ApiResponse> | undefined): void => {
      const flag = response && reading.get(response);
      if (flag) flag.wanted = false;
    };
    // Runs while the page after the last one parsed (page pagesRead + 1, at `url`) is arriving.
    const onBodyStart = (head: Uint8Array): void => {
      // Page 1: its length, which bounds the number of pages, is not known yet.
      if (early !== undefined || noEarly || pagesRead === 0 || !following) return;
      const next = envelopeNextFromHead(head);
      if (typeof next !== 'string') return;
      // The checks of a parsed page's `next`, before anything is sent; stricter where this page's
      // count is not known yet. A refusal is raised by the parsed page in its turn.
      if (pagesRead + 1 >= maxPagesFor(maxCount, firstPageLength)) return;
      const target = follow(next, url, source.baseUrl, seen);
      if (!(target instanceof URL)) return;
      // Claimed before sending: a transport that calls back at once must find the slot taken.
      const claimed: { url: string; response?: Promise<ApiResponse> } = { url: target.href };
      early = claimed;
      claimed.response = send(target);
    };
    const send = (next: URL): Promise<ApiResponse> => {
      const flag = { wanted: true };
      const response = source.fetch(next, source.single ? undefined : onBodyStart, () => flag.wanted);
      reading.set(response, flag);
      response.catch(() => undefined);
      return response;
    };
    let pending: Promise<ApiResponse> | undefined = send(url);
    try {
      while (pending) {
        let response: ApiResponse;
        try {
          response = await pending;
        } catch (error) {
          const unsized = pagesRead === 0 && url === source.firstUrl ? this.withoutPageSize(error, url) : undefined;
          if (!unsized) throw error;
          // A service configured below our size refuses it (spec §8: the maximum is "configured"); its
          // own default is always accepted, and `next` leads through the rest (spec §4.3).
          source.warn({
            type: 'page_size_refused',
            request: (error as ApiValidationError).request ?? '',
            param: source.pageSizeParam!,
            pageSize: Number(url.searchParams.get(source.pageSizeParam!)),
          });
          url = unsized;
          seen.add(loopKey(url));
          pending = send(url);
          continue;
        }
        pending = undefined;
        const envelope = this.parseEnvelope(response);
        pagesRead++;
        if (pagesRead === 1) firstPageLength = envelope.results.length;
        maxCount = Math.max(maxCount, envelope.count);
        // A bad `next` is raised after its page is handed over, as when pages were fetched one by one.
        let refused: { error: unknown } | undefined;
        if (envelope.next !== null && following) {
          try {
            const limit = maxPagesFor(maxCount, firstPageLength);
            if (pagesRead >= limit) {
              throw new PaginationError(
                'too_many_pages',
                `page ${pagesRead + 1} requested; count ${maxCount} at ${firstPageLength} a page allows at most ${limit}`,
                contextOf(response),
              );
            }
            const checked = checkNext(envelope.next, url, source.baseUrl, seen, response);
            url = checked;
            if (!warnedRebase && checked.rebasedFrom !== undefined) {
              // Once a list: every page of such a service names the same wrong origin.
              warnedRebase = true;
              source.warn({
                type: 'next_rebased',
                request: response.request,
                nextOrigin: checked.rebasedFrom,
                baseOrigin: source.baseUrl.origin,
              });
            }
            if (early?.response !== undefined && early.url === url.href) {
              pending = early.response;
            } else {
              // Sent before this page's items are validated, so that the peer works meanwhile.
              pending = send(url);
            }
          } catch (error) {
            refused = { error };
          }
        }
        if (early?.response !== undefined && early.response !== pending) {
          unwant(early.response);
          dropped.push(early.response);
          noEarly = true;
        }
        early = undefined;
        if (ids) {
          const older = ids.previous;
          older.clear();
          ids.previous = ids.current;
          ids.current = older;
        }
        const page = this.parseItems(envelope, response, warnedFields, ids);
        source.onPage?.(page, response);
        itemsRead += page.items.length;
        if (counts[counts.length - 1] !== page.count) counts.push(page.count);
        lastRequest = page.request;
        yield page;
        if (refused) throw refused.error;
      }
    } finally {
      // Only after an early stop (or a failure) is a request still in flight here.
      noEarly = true;
      unwant(pending);
      unwant(early?.response);
      await Promise.allSettled([pending, early?.response, ...dropped]);
    }
    // A count that changed between pages means the list moved under us (offset pages may then
    // repeat or skip an item) even when the last count matches.
    if (following && counts.some((count) => count !== itemsRead)) {
      source.warn({ type: 'count_mismatch', request: lastRequest, counts, itemsRead });
    }
  }

  /** The first page's URL without its page size, when `error` is a 400 that may be about it; else undefined. */
  private withoutPageSize(error: unknown, url: URL): URL | undefined {
    const param = this.source.pageSizeParam;
    if (param === undefined || !url.searchParams.has(param) || !(error instanceof ApiValidationError)) return undefined;
    // A 400 about another field (a date) would be refused again: that error is the answer.
    if (error.param !== undefined && error.param !== param) return undefined;
    const unsized = new URL(url);
    unsized.searchParams.delete(param);
    return unsized;
  }

  /** The first page alone, its `next` not followed (nor requested ahead): a count, a sample. */
  async firstPage(): Promise<Page<T>> {
    for await (const page of this.pages({ follow: false })) return page;
    // pages() yields every page it reads, the first one included, or throws.
    throw new Error('unreachable: a list without a first page');
  }

  /** Every item of every page. For short lists (companies, API keys); stream long ones. */
  async all(): Promise<PageItem<T>[]> {
    const out: PageItem<T>[] = [];
    for await (const item of this.items()) out.push(item);
    return out;
  }

  private parseEnvelope(response: ApiResponse): ListEnvelope & { itemPath?: (i: number) => string } {
    const body = response.body;
    if (this.source.single) {
      if (Array.isArray(body)) return { count: body.length, next: null, previous: null, results: body, itemPath: (i) => `[${i}]` };
      const results = (body as { results?: unknown } | null)?.results;
      if (body !== null && typeof body === 'object' && !Array.isArray(results)) {
        const entries = Object.entries(body);
        // `{"data": {…}, "meta": {…}}`: a body that is not the item itself holds it one level down
        // when exactly one property's object is one, as token replies are read (docs/assumptions.md).
        if (!this.source.itemSchema.safeParse(body).success) {
          const holders = entries.filter(
            ([, inner]) =>
              inner !== null && typeof inner === 'object' && !Array.isArray(inner) && this.source.itemSchema.safeParse(inner).success,
          );
          const [key, inner] = holders.length === 1 ? holders[0]! : [];
          if (key !== undefined) return { count: 1, next: null, previous: null, results: [inner], itemPath: () => key };
        }
        // `{"company": {…}}`: one property holding an object is a wrapper (an item's required
        // identifier is never an object), so the item is inside it. Errors name the path as sent.
        const [key, inner] = entries.length === 1 ? entries[0]! : [];
        if (key !== undefined && inner !== null && typeof inner === 'object' && !Array.isArray(inner))
          return { count: 1, next: null, previous: null, results: [inner], itemPath: () => key };
        return { count: 1, next: null, previous: null, results: [body], itemPath: () => '' };
      }
    }
    const envelope = listEnvelopeSchema.safeParse(response.body);
    if (!envelope.success) throw responseValidationError(envelope.error, '', contextOf(response));
    return envelope.data;
  }

  private parseItems(
    envelope: ListEnvelope & { itemPath?: (i: number) => string },
    response: ApiResponse,
    warnedFields: Set<string>,
    ids: Ids | undefined,
  ): Page<T> {
    const { itemSchema, fastParse, checkItem, identity } = this.source;
    const results = envelope.results;
    const items: PageItem<T>[] = new Array<PageItem<T>>(results.length);
    let kept = 0;
    // Only an envelope (its schema holds `results` to an array) has items to cut out: a `single`
    // list's object may be the item itself, whatever keys it has.
    const texts =
      this.source.itemJson && !this.source.single ? listItemJson(response.bodyBytes(), results.length, response.bodyText()) : undefined;
    for (let i = 0; i < results.length; i++) {
      const raw = results[i];
      let parsed = fastParse?.(raw);
      if (parsed === undefined) {
        const result = itemSchema.safeParse(raw);
        if (!result.success) throw responseValidationError(result.error, envelope.itemPath?.(i) ?? `results[${i}]`, contextOf(response));
        parsed = result.data;
      }
      if (ids && identity) {
        const id = identity(parsed);
        const before = ids.current.size;
        ids.current.add(id);
        if (ids.current.size === before || ids.previous.has(id)) {
          // The item was handed over already (and, in a streaming export, written): keep that one.
          this.source.warn({ type: 'duplicate_item', request: response.request, path: `results[${i}]`, id });
          continue;
        }
      }
      items[kept++] = { raw: raw as Record<string, unknown>, parsed, json: texts?.[i] };
      const warning = checkItem?.(parsed);
      if (warning) this.source.warn({ ...warning, request: response.request, path: `results[${i}]` });
      const ignored = ignoredFieldsOf(parsed);
      if (ignored.length) {
        const fresh = ignored.filter((field) => !warnedFields.has(field));
        for (const field of fresh) warnedFields.add(field);
        if (fresh.length) this.source.warn({ type: 'ignored_field', request: response.request, path: `results[${i}]`, fields: fresh });
      }
    }
    if (kept < results.length) items.length = kept;
    return {
      items,
      count: envelope.count,
      next: envelope.next,
      previous: envelope.previous ?? null,
      request: response.request,
      duplicatesDropped: results.length - kept,
    };
  }
}

type ListEnvelope = z.infer<typeof listEnvelopeSchema>;

/** The identities of the page being parsed and of the one before it (ListSource.identity). */
interface Ids {
  previous: Set<string>;
  current: Set<string>;
}

function contextOf(response: ApiResponse): { status: number; requestId: string | undefined; request: string } {
  return { status: response.status, requestId: response.requestId, request: response.request };
}

/** Query order does not make a different page, nor does spelling out the first page (spec §4.3). */
function loopKey(url: URL): string {
  const copy = new URL(url);
  if (!copy.searchParams.has('page')) copy.searchParams.set('page', '1');
  copy.searchParams.sort();
  copy.hash = '';
  return copy.href;
}

/** A `next` to request: on the base URL's origin; `rebasedFrom` the origin it named instead, if another. */
type NextUrl = URL & { rebasedFrom?: string };

/** `next` resolved and checked (the path it must stay under, pages already fetched), and marked as seen. */
function checkNext(next: string, current: URL, baseUrl: URL, seen: Set<string>, response: ApiResponse): NextUrl {
  const followed = follow(next, current, baseUrl, seen);
  if (!(followed instanceof URL))
    throw new PaginationError(followed.reason, followed.detail, { ...contextOf(response), cause: followed.cause });
  seen.add(loopKey(followed));
  return followed;
}

/** Where `next` leads, or why it is not followed; `seen` is only read. */
function follow(
  next: string,
  current: URL,
  baseUrl: URL,
  seen: ReadonlySet<string>,
): NextUrl | { reason: PaginationFailure; detail: string; cause?: unknown } {
  let named: URL;
  try {
    named = new URL(next, current);
  } catch (cause) {
    return { reason: 'invalid_next', detail: 'next is not a URL', cause };
  }
  const prefix = baseUrl.pathname.endsWith('/') ? baseUrl.pathname : `${baseUrl.pathname}/`;
  // A scheme other than http(s) names no web origin to read the page from: no service behind a proxy writes one.
  const web = named.protocol === 'https:' || named.protocol === 'http:';
  if (!web || !named.pathname.startsWith(prefix) || named.username !== '' || named.password !== '') {
    // Name the foreign place by origin and path only: its query could carry anything.
    return { reason: 'foreign_next', detail: `next leaves ${baseUrl.origin}${prefix} for ${named.origin}${named.pathname}; not followed` };
  }
  let url: NextUrl = named;
  if (named.origin !== baseUrl.origin) {
    // Built from the base origin and then given the path: a path such as `//other.host/…` (under a
    // base path of `/`) parsed as a reference would name a host of its own.
    url = new URL(baseUrl.origin);
    url.pathname = named.pathname;
    url.search = named.search;
    url.rebasedFrom = named.origin;
  }
  if (seen.has(loopKey(url))) return { reason: 'next_loop', detail: 'next points to a page already fetched' };
  return url;
}
