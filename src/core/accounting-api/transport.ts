/**
 * With http-transport.ts, the only place that touches the network. Everything above it (auth,
 * retries, pagination, parsing) is written against the `Transport` function type, so tests swap
 * in an in-memory fake and a benchmark can compare the client with a bare fetch loop over the same
 * wire. The default transport is `httpTransport` (Node's own client); `fetchTransport` takes any
 * `fetch`, for a caller that brings its own.
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
  /**
   * Stop reading a body longer than this many bytes and throw `TransportFailure('too_large')`.
   * The engine checks again after any transport, so a custom one may ignore it.
   */
  maxBodyBytes?: number;
  /**
   * Called at most once, with the first bytes of a 2xx body as they arrive, before the rest is
   * read: a list reads its `next` there and requests the following page while this body is still
   * arriving and being parsed (pagination.ts). A transport may never call it; nothing depends on it
   * but speed, so the default transport ignores a hook that throws.
   */
  onBodyStart?: (head: Uint8Array) => void;
}

export interface TransportResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  /**
   * The body's bytes as received, when the transport has them (the default one does): `body` is
   * their UTF-8 text. A list that hands out each item's JSON text (`itemJson`) cuts it from these
   * instead of encoding `body` again.
   */
  bytes?: Uint8Array;
}

export type Transport = (request: TransportRequest) => Promise<TransportResponse>;

/**
 * How a request failed below HTTP. The distinction decides whether a non-idempotent request may
 * be repeated:
 * - `refused`: no connection was made (refused, DNS failure, unreachable, a failed TLS handshake):
 *   the service never saw it;
 * - `reset`: the connection broke after the request may have been sent: the service may have acted;
 * - `timeout`: no complete answer in time: the service may have acted.
 * A custom transport throws this; anything else it throws is treated as `reset`. A `refused` failure
 * may also be `final` (below): no repeat can succeed, so the client does not retry it.
 */
export type TransportFailureKind = 'refused' | 'reset' | 'timeout' | 'too_large';

export class TransportFailure extends Error {
  /** For `too_large`: the limit, and the status of the response that exceeded it. */
  readonly limitBytes: number | undefined;
  readonly status: number | undefined;
  /**
   * The low-level cause, when known: Node's or undici's code (`ECONNREFUSED`, `ENOTFOUND`,
   * `ERR_SSL_WRONG_VERSION_NUMBER`, `UND_ERR_SOCKET`), or `bad port`. An operator fixes a URL by it.
   */
  readonly code: string | undefined;
  /**
   * True when repeating the exchange cannot help until someone changes a URL, a certificate or a
   * TLS setting: a handshake refused for the server's certificate, for want of a common protocol,
   * or because the server does not speak TLS there, and a URL refused before any connection (a port
   * fetch never connects to, an invalid URL, a scheme other than http and https)
   * (`isFinalTransportCode`). Read from the code, so
   * a custom transport that names one of these codes gets the same treatment.
   */
  readonly final: boolean;
  constructor(
    readonly kind: TransportFailureKind,
    options?: { cause?: unknown; limitBytes?: number; status?: number; code?: string },
  ) {
    super(`transport failure: ${kind}${options?.code ? ` (${options.code})` : ''}`, options);
    this.name = 'TransportFailure';
    this.limitBytes = options?.limitBytes;
    this.status = options?.status;
    this.code = options?.code;
    this.final = kind === 'refused' && isFinalTransportCode(options?.code);
  }
}

/** Connection-level codes (Node and undici) that mean the request never left this process. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * A TLS handshake that failed because the server does not speak TLS there (an http:// server
 * behind an https:// URL answers with bytes that are no TLS record).
 */
const NOT_TLS = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG']);
/**
 * A TLS handshake that failed because the two sides share no protocol version or cipher: a server
 * that speaks only TLS 1.0 or 1.1, or whose ciphers we do not offer. Each is a handshake alert,
 * sent before the server completes its handshake, so the service never read the request. Left out,
 * such a server was `reset` ("may have been processed") and an unsafe POST was not retried.
 */
const NO_COMMON_PROTOCOL = new Set([
  'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
  'ERR_SSL_UNSUPPORTED_PROTOCOL',
  'ERR_SSL_NO_PROTOCOLS_AVAILABLE',
  'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
]);
/**
 * A TLS handshake the server refused for want of a client certificate (mutual TLS), which acctops
 * never presents. Under TLS 1.3 the client's side of the handshake is done before the server's
 * alert arrives, so Node may have written the request already, but the server ends the handshake
 * without reading it: nothing was processed, and the same server refuses again a second later.
 * Left out, it was `reset` ("may have been processed"), retried, and told nobody why. (Under TLS
 * 1.2 the same refusal is a handshake_failure alert, NO_COMMON_PROTOCOL's.)
 */
const CLIENT_CERTIFICATE_REQUIRED = new Set(['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED']);
/**
 * A TLS handshake that failed on the server's certificate: Node's check of the host name, and every
 * X.509 verification code Node documents (its tls docs, "X509 certificate error codes") but
 * OUT_OF_MEM, which says nothing about the certificate. A code left out here fell through to
 * `reset` ("may have been processed"): a revoked or untrusted certificate made an unsafe POST
 * ambiguous and was retried.
 */
const CERTIFICATE_REFUSED = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
]);

/**
 * Codes of requests refused before any connection because of the URL itself: fetch's "bad ports"
 * and httpTransport's own checks. The same URL is refused the same way a second later.
 */
const URL_REFUSED = /^(bad port|invalid url|unsupported protocol .*)$/;

/**
 * Whether a failure with this code is one no retry can fix (decision 74 in docs/architecture.md).
 * A failed handshake is a verdict on what the server presented: the same certificate, the same
 * protocol versions and the same plain-http listener get the same verdict a second later, as does a
 * URL refused before connecting, so backing off and asking again only delays the message the
 * operator needs. Not final, though they may be
 * configuration too: `ENOTFOUND` (a resolver that cannot reach its upstream can report a name it
 * did not find, and a record just created may not have reached it yet), `EAI_AGAIN`,
 * `ECONNREFUSED` (a service restarting), the unreachable ones and a reset: each can pass.
 */
function isFinalTransportCode(code: string | undefined): boolean {
  return (
    code !== undefined &&
    (NOT_TLS.has(code) ||
      NO_COMMON_PROTOCOL.has(code) ||
      CLIENT_CERTIFICATE_REQUIRED.has(code) ||
      CERTIFICATE_REFUSED.has(code) ||
      URL_REFUSED.test(code))
  );
}

/**
 * Whether the failure is a TLS handshake refused for the server's certificate: what an operator
 * fixes by renewing it or by trusting its CA (`NODE_EXTRA_CA_CERTS`), not by checking the URL.
 */
export function certificateRefused(failure: TransportFailure): boolean {
  return failure.code !== undefined && CERTIFICATE_REFUSED.has(failure.code);
}

type ErrorWithCodes = { code?: unknown; message?: unknown; errors?: { code?: unknown }[] } | null | undefined;

/**
 * A failure of either transport as a TransportFailure: fetch wraps Node's error in `cause` (and
 * several addresses' errors in `cause.errors`); Node's own client throws it as it is.
 */
export function classifyTransportError(error: unknown): TransportFailure {
  if (error instanceof TransportFailure) return error;
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError') return new TransportFailure('timeout', { cause: error });
  const cause = (error as { cause?: ErrorWithCodes } | null)?.cause;
  const own = error as ErrorWithCodes;
  const codes = [own?.code, ...(own?.errors ?? []).map((e) => e.code), cause?.code, ...(cause?.errors ?? []).map((e) => e.code)].filter(
    (c): c is string => typeof c === 'string',
  );
  const notSent = codes.find((c) => NOT_SENT.has(c));
  if (notSent) return new TransportFailure('refused', { cause: error, code: notSent });
  // The request is written only once the handshake is done, so a failed handshake sent nothing.
  const handshake = codes.find(
    (c) => NOT_TLS.has(c) || NO_COMMON_PROTOCOL.has(c) || CLIENT_CERTIFICATE_REQUIRED.has(c) || CERTIFICATE_REFUSED.has(c),
  );
  if (handshake) return new TransportFailure('refused', { cause: error, code: handshake });
  // fetch refuses the Fetch standard's "bad ports" (1, 6000, …) before connecting, with no code.
  if (cause?.message === 'bad port') return new TransportFailure('refused', { cause: error, code: 'bad port' });
  return new TransportFailure('reset', { cause: error, code: codes[0] });
}

const CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (ECONNREFUSED): nothing listens on that port',
  ENOTFOUND: 'host not found (ENOTFOUND)',
  EAI_AGAIN: 'host name lookup failed for now (EAI_AGAIN)',
  EHOSTUNREACH: 'host unreachable (EHOSTUNREACH)',
  ENETUNREACH: 'network unreachable (ENETUNREACH)',
  UND_ERR_CONNECT_TIMEOUT: 'no connection in time (UND_ERR_CONNECT_TIMEOUT)',
  'bad port': 'a port fetch never connects to (bad port)',
  ECONNRESET: 'connection reset (ECONNRESET)',
  UND_ERR_SOCKET: 'connection closed by the other side (UND_ERR_SOCKET)',
};

/**
 * The failure's low-level cause for people: a refused connection, an unknown host, a server that
 * does not speak TLS. Undefined when the transport gave no code (a timeout, a custom transport).
 */
export function transportCause(failure: TransportFailure): string | undefined {
  const { code } = failure;
  if (code === undefined) return undefined;
  if (NOT_TLS.has(code)) return `TLS handshake failed (${code}): the server does not answer in TLS there (an http:// server?)`;
  if (NO_COMMON_PROTOCOL.has(code)) return `TLS handshake failed (${code}): no TLS version or cipher both sides accept`;
  if (CLIENT_CERTIFICATE_REQUIRED.has(code)) {
    return `TLS handshake failed (${code}): the server requires a client certificate (mutual TLS), which acctops does not present`;
  }
  if (CERTIFICATE_REFUSED.has(code)) return `TLS handshake failed (${code}): the server's certificate was refused`;
  return CAUSES[code] ?? code;
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
      const bytes = request.maxBodyBytes === undefined ? undefined : await readBounded(response, request.maxBodyBytes, request.onBodyStart);
      const body = bytes ? bytes.toString('utf8') : await response.text();
      const headers: Record<string, string> = {};
      response.headers.forEach((value, key) => {
        headers[key] = value;
      });
      return bytes ? { status: response.status, headers, body, bytes } : { status: response.status, headers, body };
    } catch (error) {
      if (error instanceof TransportFailure) throw error;
      throw classifyTransportError(signal.aborted ? signal.reason : error);
    }
  };
}

/**
 * The body's bytes, read as a stream and cut at `limit` bytes: a peer that sends an endless or
 * huge body costs at most `limit` bytes of memory. A `Content-Length` above the limit is refused
 * before reading.
 */
async function readBounded(response: Response, limit: number, onBodyStart?: (head: Uint8Array) => void): Promise<Buffer> {
  const tooLarge = () => new TransportFailure('too_large', { limitBytes: limit, status: response.status });
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const head = bodyStartNotifier(onBodyStart, response.status);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
    head?.(value);
  }
  return Buffer.concat(chunks, size);
}

/**
 * TransportRequest.onBodyStart as a transport calls it: with the first bytes of a 2xx body, once;
 * undefined when there is nothing to call. A hook that throws changes nothing.
 */
export function bodyStartNotifier(
  onBodyStart: ((head: Uint8Array) => void) | undefined,
  status: number,
): ((chunk: Uint8Array) => void) | undefined {
  if (onBodyStart === undefined || status < 200 || status >= 300) return undefined;
  let pending: ((head: Uint8Array) => void) | undefined = onBodyStart;
  return (chunk) => {
    if (pending === undefined || chunk.byteLength === 0) return;
    const hook = pending;
    pending = undefined;
    try {
      hook(chunk);
    } catch {
      // Only speed depends on the hook: its fault must not fail (or retry) this exchange.
    }
  };
}
