import * as http from 'node:http';
import * as https from 'node:https';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { classifyTransportError, TransportFailure, type Transport, type TransportRequest, type TransportResponse } from './transport';

/**
 * The default transport, on Node's own HTTP client. `fetch` (undici, behind WHATWG streams, headers
 * and abort machinery) cost the export's busy thread ~2 ms of CPU a page of 1,000 transactions
 * beyond this, over a third of what the rest of the export spends on that page (BENCHMARKS.md,
 * "Exports"; measured 2026-11-26: 100 pages with their `JSON.parse`, 480-560 ms of CPU against
 * 280-320 ms). It behaves as the fetch transport does, so nothing above it can tell them apart:
 * - redirects are not followed (the `Institution` header must not go where a 3xx points);
 * - a compressed body (`gzip`, `deflate`, `br`) is decompressed, as fetch does, and asked for with
 *   the same `accept-encoding`; `maxBodyBytes` counts the decompressed bytes;
 * - connections are kept alive per origin, and an idle one is closed before the service's
 *   `Keep-Alive: timeout` hint runs out (Node's agent reads it), as undici does;
 * - failures are classified by the same rules (`classifyTransportError`): no connection is `refused`,
 *   a connection lost after sending is `reset`, the deadline is `timeout`.
 */
export function httpTransport(agents: { http: http.Agent; https: https.Agent } = DEFAULT_AGENTS): Transport {
  return (request) => exchange(request, agents);
}

const DEFAULT_AGENTS = {
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true }),
};

/** What fetch asks for, so that a service answers both transports alike. */
const ACCEPT_ENCODING = 'gzip, deflate, br';

function exchange(request: TransportRequest, agents: { http: http.Agent; https: https.Agent }): Promise<TransportResponse> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch (cause) {
    return Promise.reject(new TransportFailure('refused', { cause, code: 'invalid url' }));
  }
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:')
    return Promise.reject(new TransportFailure('refused', { code: `unsupported protocol ${url.protocol}` }));
  const signal = AbortSignal.timeout(request.timeoutMs);
  const headers: Record<string, string> = { 'accept-encoding': ACCEPT_ENCODING, 'user-agent': 'acctops', ...request.headers };
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
  return new Promise<TransportResponse>((resolve, reject) => {
    const req = (secure ? https : http).request(url, {
      method: request.method,
      headers,
      agent: secure ? agents.https : agents.http,
      signal,
    });
    let settled = false;
    // The first outcome wins: destroying the exchange after it (a body over the limit) raises
    // errors of its own, which must not replace the reason it was destroyed for.
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      reject(classifyTransportError(signal.aborted ? signal.reason : withTlsCode(error)));
      req.destroy();
    };
    req.on('error', fail);
    req.on('response', (res) => {
      readBody(res, request, fail, (bytes) => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: bytes.toString('utf8'), bytes });
      });
    });
    req.end(request.body);
  });
}

/**
 * Node's client reports a TLS handshake that failed while the request was queued as `EPROTO`, with
 * OpenSSL's reason only in the message; undici reports the reason as the code
 * (`ERR_SSL_WRONG_VERSION_NUMBER`). The same code for both, so that both are classified alike.
 */
function withTlsCode(error: unknown): unknown {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'EPROTO' || typeof message !== 'string') return error;
  const reason = /:SSL routines:[^:]*:([a-z ]+):/.exec(message)?.[1];
  return reason
    ? Object.assign(new Error(message, { cause: error }), { code: `ERR_SSL_${reason.toUpperCase().replace(/ /g, '_')}` })
    : error;
}

/** Reads the body, decompressed, to its end (`done`) or fails the exchange: over `maxBodyBytes`, cut short. */
function readBody(
  res: http.IncomingMessage,
  request: TransportRequest,
  fail: (error: unknown) => void,
  done: (bytes: Buffer) => void,
): void {
  const limit = request.maxBodyBytes;
  const status = res.statusCode ?? 0;
  const tooLarge = () => new TransportFailure('too_large', { limitBytes: limit, status });
  const declared = Number(res.headers['content-length'] ?? Number.NaN);
  if (limit !== undefined && declared > limit) return fail(tooLarge());
  const decoded = decoderFor(res, fail);
  const chunks: Buffer[] = [];
  let size = 0;
  let head = request.onBodyStart !== undefined && status >= 200 && status < 300 ? request.onBodyStart : undefined;
  decoded.on('data', (chunk: Buffer) => {
    size += chunk.byteLength;
    if (limit !== undefined && size > limit) {
      fail(tooLarge());
      decoded.destroy();
      return;
    }
    chunks.push(chunk);
    if (head !== undefined && chunk.byteLength > 0) {
      const hook = head;
      head = undefined;
      try {
        hook(chunk);
      } catch {
        // Only speed depends on the hook: its fault must not fail (or retry) this exchange.
      }
    }
  });
  decoded.on('end', () => {
    // A body the server broke off may end like a whole one; only `complete` tells them apart.
    if (!res.complete) fail(new TransportFailure('reset', { code: 'ECONNRESET' }));
    else done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
  res.on('error', fail);
  res.on('aborted', () => fail(new TransportFailure('reset', { code: 'ECONNRESET' })));
}

function decoderFor(res: http.IncomingMessage, fail: (error: unknown) => void): Readable {
  const encoding = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) return res;
  // A corrupt compressed body is a reset: the service answered, and what came is unreadable.
  decoder.on('error', (error) => fail(new TransportFailure('reset', { cause: error, code: 'invalid compressed body' })));
  return res.pipe(decoder);
}

/** Header names in lower case (Node's already are); repeated headers joined as fetch joins them. */
function headersOf(res: http.IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}
