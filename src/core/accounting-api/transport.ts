/**
 * The only place that touches the network. Everything above it (auth, retries, pagination,
 * parsing) is written against the `Transport` function type, so tests swap in an in-memory fake
 * and a benchmark can compare the client with a bare fetch loop over the same wire.
 */

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface TransportRequest {
  method: HttpMethod;
  /** Absolute URL, query included. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** The transport gives up on the whole exchange (connect, send, read the body) after this long. */
  timeoutMs: number;
}

export interface TransportResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

export type Transport = (request: TransportRequest) => Promise<TransportResponse>;

/**
 * How a request failed below HTTP. The distinction decides whether a non-idempotent request may
 * be repeated:
 * - `refused`: no connection was made (refused, DNS failure, unreachable): the service never saw it;
 * - `reset`: the connection broke after the request may have been sent: the service may have acted;
 * - `timeout`: no complete answer in time: the service may have acted.
 * A custom transport throws this; anything else it throws is treated as `reset`.
 */
export type TransportFailureKind = 'refused' | 'reset' | 'timeout';

export class TransportFailure extends Error {
  constructor(
    readonly kind: TransportFailureKind,
    options?: { cause?: unknown },
  ) {
    super(`transport failure: ${kind}`, options);
    this.name = 'TransportFailure';
  }
}

/** Connection-level codes (Node and undici) that mean the request never left this process. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function classify(error: unknown): TransportFailure {
  if (error instanceof TransportFailure) return error;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError') return new TransportFailure('timeout', { cause: error });
  const cause = (error as { cause?: { code?: unknown; errors?: { code?: unknown }[] } } | null)?.cause;
  const codes = [cause?.code, ...(cause?.errors ?? []).map((e) => e.code)];
  if (codes.some((c) => typeof c === 'string' && NOT_SENT.has(c))) return new TransportFailure('refused', { cause: error });
  return new TransportFailure('reset', { cause: error });
}

/**
 * The default transport on the global fetch. Redirects are NOT followed: fetch would forward the
 * `Institution` header to wherever a 3xx points, so a redirect surfaces as an unexpected status.
 */
export function fetchTransport(fetchImpl: typeof fetch = globalThis.fetch): Transport {
  return async (request) => {
    const signal = AbortSignal.timeout(request.timeoutMs);
    try {
      const response = await fetchImpl(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        redirect: 'manual',
        signal,
      });
      // The body is read under the same signal, so a stalled body also times out.
      const body = await response.text();
      const headers: Record<string, string> = {};
      response.headers.forEach((value, key) => {
        headers[key] = value;
      });
      return { status: response.status, headers, body };
    } catch (error) {
      throw classify(signal.aborted ? signal.reason : error);
    }
  };
}
