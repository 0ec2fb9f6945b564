import type { Transport, TransportRequest, TransportResponse } from '../../../src/core/accounting-api';

/**
 * An in-memory Accounting API: no sockets, no sleeps. Each test routes requests to a handler and
 * reads back exactly what went out (`requests`), headers included.
 */
export type Handler = (request: TransportRequest, url: URL) => TransportResponse | Promise<TransportResponse>;

export const BASE_URL = 'https://api.test:4010/api/v1';

export interface FakeTransport {
  transport: Transport;
  requests: TransportRequest[];
  urls(): URL[];
}

export function fakeTransport(handler: Handler): FakeTransport {
  const requests: TransportRequest[] = [];
  return {
    requests,
    transport: async (request) => {
      requests.push(request);
      return handler(request, new URL(request.url));
    },
    urls: () => requests.map((r) => new URL(r.url)),
  };
}

/** A handler that answers the n-th request with the n-th entry (then repeats the last one). */
export function sequence(...steps: (TransportResponse | Error)[]): Handler {
  let n = 0;
  return () => {
    const step = steps[Math.min(n++, steps.length - 1)]!;
    if (step instanceof Error) throw step;
    return step;
  };
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): TransportResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': 'req_0123abcd', ...headers },
    body: JSON.stringify(body),
  };
}

export function apiError(
  status: number,
  type: string,
  code: string,
  extra: { param?: string; permission?: string; message?: string } = {},
  headers: Record<string, string> = {},
): TransportResponse {
  return json(
    status,
    {
      error: {
        type,
        code,
        message: extra.message ?? `${code} happened`,
        param: extra.param ?? null,
        permission: extra.permission ?? null,
        requestId: 'req_0123abcd',
      },
    },
    headers,
  );
}

/**
 * Serves `items` as a list under `path`, paginated the way the sandbox does: `next` is an
 * absolute URL repeating the request's query with `page` changed. `sizeParam` is the spelling
 * the resource reads; the other spelling is ignored, as the sandbox does.
 */
export function listHandler(
  path: string,
  items: unknown[],
  options: { sizeParam?: string; defaultSize?: number; count?: number } = {},
): Handler {
  const sizeParam = options.sizeParam ?? 'page_size';
  return (_request, url) => {
    if (url.pathname !== new URL(BASE_URL).pathname + path) return apiError(404, 'not_found_error', 'not_found');
    const size = Math.min(Number(url.searchParams.get(sizeParam) ?? options.defaultSize ?? 10), 1000);
    const page = Number(url.searchParams.get('page') ?? '1');
    const start = (page - 1) * size;
    const link = (p: number) => {
      const copy = new URL(url);
      copy.searchParams.set('page', String(p));
      return copy.href;
    };
    return json(200, {
      count: options.count ?? items.length,
      next: start + size < items.length ? link(page + 1) : null,
      previous: page > 1 ? link(page - 1) : null,
      results: items.slice(start, start + size),
    });
  };
}

export const COMPANY_A = '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
export const COMPANY_B = '9a8b7c6d-5e4f-4321-8fed-cba987654321';

export function transaction(i: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const hex = i.toString(16).padStart(12, '0');
  return {
    publicId: `00000000-0000-4000-8000-${hex}`,
    amount: -(1000 + i),
    currency: 'EUR',
    cashflowType: 'EXPENSE',
    valueDate: '2026-10-31T23:30:00-02:00',
    description: `purchase ${i}`,
    category: null,
    bankAccount: '11111111-2222-4333-8444-555555555555',
    ...overrides,
  };
}

export function category(i: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const hex = i.toString(16).padStart(12, '0');
  return {
    publicId: `10000000-0000-4000-8000-${hex}`,
    name: `Category ${i}`,
    parent: null,
    cashflowType: 'EXPENSE',
    vatApplied: 'YES',
    metadata: '{"code": 42}',
    description: 'office things',
    examples: '',
    ...overrides,
  };
}
