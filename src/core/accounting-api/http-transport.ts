import * as http from 'node:http';
import type * as https from 'node:https';
import type { Readable } from 'node:stream';
import type * as zlib from 'node:zlib';
import {
  bodyStartNotifier,
  classifyTransportError,
  TransportFailure,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from './transport';

/**
 * The default transport, on Node's own HTTP client. `fetch` (undici, behind WHATWG streams, headers
 * and abort machinery) cost the export's busy thread ~2 ms of CPU a page of 1,000 transactions
 * beyond this, about a fifth of that thread in a profile (decision 72; measured 2026-11-26: 100 pages
 * with their `JSON.parse`, 480-560 ms of CPU against 280-320 ms). It behaves as the fetch transport
 * does, so nothing above it can tell them apart:
 * - redirects are not followed (the `Institution` header must not go where a 3xx points);
 * - a compressed body (`gzip`, `deflate`, `br`) is decompressed, as fetch does, and asked for with
 *   the same `accept-encoding`; `maxBodyBytes` counts the decompressed bytes;
 * - connections are kept alive per origin, and an idle one is closed before the service's
 *   `Keep-Alive: timeout` hint runs out (Node's agent reads it), as undici does;
 * - failures are classified by the same rules (`classifyTransportError`): no connection is `refused`,
 *   a connection lost after sending is `reset`, the deadline is `timeout`.
 */
export function httpTransport(agents: { http?: http.Agent; https?: https.Agent } = {}): Transport {
  return async (request) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch (cause) {
      throw new TransportFailure('refused', { cause, code: 'invalid url' });
    }
    if (url.protocol === 'http:') return exchange(request, url, http, agents.http ?? DEFAULT_AGENTS.http);
    if (url.protocol !== 'https:') throw new TransportFailure('refused', { code: `unsupported protocol ${url.protocol}` });
    // TLS (and zlib) load on first use, as undici did: not at module init, which a Lambda cold start pays.
    const client = await httpsClient();
    return exchange(request, url, client, agents.https ?? (DEFAULT_AGENTS.https ??= new client.Agent({ keepAlive: true })));
  };
}

const DEFAULT_AGENTS: { http: http.Agent; https?: https.Agent } = { http: new http.Agent({ keepAlive: true }) };
let httpsModule: Promise<typeof https> | undefined;
const httpsClient = () => (httpsModule ??= import('node:https'));

/** What fetch asks for, so that a service answers both transports alike. */
const ACCEPT_ENCODING = 'gzip, deflate, br';

function exchange(request: TransportRequest, url: URL, client: typeof http | typeof https, agent: http.Agent): Promise<TransportResponse> {
  const signal = AbortSignal.timeout(request.timeoutMs);
  const headers: Record<string, string> = { 'accept-encoding': ACCEPT_ENCODING, 'user-agent': 'acctops', ...request.headers };
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
  return new Promise<TransportResponse>((resolve, reject) => {
    const req = client.request(url, { method: request.method, headers, agent, signal });
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
      res.on('error', fail);
      const done = (bytes: Buffer) => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: bytes.toString('utf8'), bytes });
      };
      const encoding = contentEncodingOf(res);
      // The body waits, paused, until a reader is attached.
      if (encoding === undefined) readBody(res, request, fail, done, res);
      else zlibModule().then((zlib) => readBody(res, request, fail, done, decoderFor(res, zlib, encoding, fail)), fail);
    });
    req.end(request.body);
  });
}

/**
 * Node's client reports a TLS handshake that failed while the request was queued as `EPROTO`, with
 * OpenSSL's reason only in the message; undici reports the reason as the code
 * (`ERR_SSL_WRONG_VERSION_NUMBER`). The same code for both, so that both are classified alike.
 * The reason is taken whole, digits included: a server's alert reads `tlsv1 alert protocol version`
 * or `sslv3 alert handshake failure`, and a letters-only match left those as a bare `EPROTO`
 * (classified `reset`) where undici says `ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION`.
 */
function withTlsCode(error: unknown): unknown {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'EPROTO' || typeof message !== 'string') return error;
  const reason = /:SSL routines:[^:]*:([a-z0-9 ]+):/.exec(message)?.[1];
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
  decoded: Readable,
): void {
  const limit = request.maxBodyBytes;
  const status = res.statusCode ?? 0;
  const tooLarge = () => new TransportFailure('too_large', { limitBytes: limit, status });
  const declared = Number(res.headers['content-length'] ?? Number.NaN);
  if (limit !== undefined && declared > limit) return fail(tooLarge());
  const chunks: Buffer[] = [];
  let size = 0;
  const head = bodyStartNotifier(request.onBodyStart, status);
  decoded.on('data', (chunk: Buffer) => {
    size += chunk.byteLength;
    if (limit !== undefined && size > limit) {
      fail(tooLarge());
      decoded.destroy();
      return;
    }
    chunks.push(chunk);
    head?.(chunk);
  });
  decoded.on('end', () => {
    // A body the server broke off may end like a whole one; only `complete` tells them apart.
    if (!res.complete) fail(new TransportFailure('reset', { code: 'ECONNRESET' }));
    else done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
  res.on('aborted', () => fail(new TransportFailure('reset', { code: 'ECONNRESET' })));
}

type Encoding = 'gzip' | 'deflate' | 'br';

/** The body's compression, if one this transport undoes (what fetch undoes). */
function contentEncodingOf(res: http.IncomingMessage): Encoding | undefined {
  const encoding = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip';
  return encoding === 'deflate' || encoding === 'br' ? encoding : undefined;
}

let zlibPromise: Promise<typeof zlib> | undefined;
const zlibModule = () => (zlibPromise ??= import('node:zlib'));

function decoderFor(res: http.IncomingMessage, z: typeof zlib, encoding: Encoding, fail: (error: unknown) => void): Readable {
  const decoder = encoding === 'gzip' ? z.createGunzip() : encoding === 'deflate' ? z.createInflate() : z.createBrotliDecompress();
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
