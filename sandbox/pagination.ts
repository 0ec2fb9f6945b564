import { invalidRequest, notFound } from './errors';

/**
 * Page-number pagination as docs/assumptions.md describes it (Django REST framework's
 * PageNumberPagination): each resource has its own page-size spelling and default, sizes above
 * the maximum are clamped, and `next`/`previous` repeat the request's parameters.
 */

export type PageSizeParam = 'page_size' | 'pageSize';

export interface ListSpec {
  pageSizeParam: PageSizeParam;
  defaultPageSize: number;
}

export interface PageRequest {
  page: number;
  pageSize: number;
  offset: number;
}

function positiveInt(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < 1) throw invalidRequest(name, `${name} must be a positive integer.`);
  return value;
}

export function readPage(query: URLSearchParams, spec: ListSpec, maxPageSize: number, aboveMax: 'clamp' | 'refuse' = 'clamp'): PageRequest {
  const page = positiveInt(query, 'page') ?? 1;
  const requested = positiveInt(query, spec.pageSizeParam);
  // A service configured below the client's size (spec §8: the maximum is "configured") may refuse it instead of clamping.
  if (aboveMax === 'refuse' && requested !== undefined && requested > maxPageSize) {
    throw invalidRequest(spec.pageSizeParam, `Ensure this value is less than or equal to ${maxPageSize}.`);
  }
  const pageSize = Math.min(requested ?? spec.defaultPageSize, maxPageSize);
  return { page, pageSize, offset: (page - 1) * pageSize };
}

export interface ListEnvelope<T = unknown> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** `requestUrl` is the absolute URL of the request as the caller addressed it. */
export function envelope<T>(results: T[], count: number, at: PageRequest, requestUrl: URL): ListEnvelope<T> {
  if (at.page > 1 && at.offset >= count) throw notFound('Invalid page.');
  const link = (page: number) => {
    const url = new URL(requestUrl);
    url.searchParams.set('page', String(page));
    return url.toString();
  };
  return {
    count,
    next: at.offset + results.length < count ? link(at.page + 1) : null,
    previous: at.page > 1 ? link(at.page - 1) : null,
    results,
  };
}
