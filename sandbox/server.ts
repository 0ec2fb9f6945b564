import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Clock } from '../src/core/shared/clock';
import type { Logger } from '../src/core/shared/logger';
import { header } from './auth';
import { drfError } from './dialect';
import { SandboxApiError, errorForStatus, methodNotAllowed, notFound, payloadTooLarge, rateLimited } from './errors';
import type { Fault, FaultRegistry } from './faults';
import { spacedJson, stringifyJson } from './json';
import { readPage } from './pagination';
import type { RateLimiter } from './rate-limit';
import { authenticateRequest, matchRoute, routeKey, routesAt, type RouteContext, type RouteDef, type SandboxSettings } from './routes';
import type { SandboxState } from './state';
import type { RequestLogEntry, StatsRecorder } from './stats';

/**
 * node:http plumbing: one pipeline for every API request.
 *
 *   read body -> added latency -> rate limit -> faults before handling -> credential
 *   -> body size, JSON, page size -> route -> faults on the response -> serialise -> send
 *   (or break the connection)
 *
 * The credential is checked before anything about the request itself: an anonymous caller gets
 * 401 whatever its body, page size or method. Every response carries `X-Request-Id`; every
 * refusal is the envelope of the sandbox's dialect (sandbox/dialect.ts).
 */

export const API_PREFIX = '/api/v1';
export const ADMIN_PREFIX = '/__sandbox/';
const MAX_BODY_BYTES = 1 << 20;

export interface AdminHttpHandler {
  (method: string, name: string, body: unknown): Promise<{ status: number; body?: unknown }>;
}

export interface ServerDeps {
  state: SandboxState;
  stats: StatsRecorder;
  faults: FaultRegistry;
  limiter: RateLimiter;
  settings: SandboxSettings;
  clock: Clock;
  logger: Logger;
  /** Null: no admin API over HTTP, its paths are unknown routes like any other. */
  admin: AdminHttpHandler | null;
}

interface Outgoing {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** Replaces the JSON serialisation of `body` (HTML pages, empty bodies). */
  raw?: { contentType: string; text: string };
}

class ConnectionDropped extends Error {
  override readonly name: string = 'ConnectionDropped';
  constructor() {
    super('connection dropped by a fault');
  }
}

export class SandboxServer {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stopping = new AbortController();
  private readonly stopped: Promise<void>;

  constructor(private readonly deps: ServerDeps) {
    this.server = createServer((req, res) => void this.dispatch(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.stopped = new Promise((resolve) => this.stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops at once: parked responses and open connections are cut, timers cleared. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort(new Error('sandbox stopped'));
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.server.closeAllConnections();
    await closed;
  }

  /** A real-time wait that `stop` cuts short. */
  private realDelay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
      this.stopping.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = `req_${randomBytes(8).toString('hex')}`;
    res.setHeader('X-Request-Id', requestId);
    const host = req.headers.host ?? '127.0.0.1';
    let url: URL;
    try {
      url = new URL(req.url ?? '/', `http://${host}`);
    } catch {
      url = new URL('http://127.0.0.1/');
    }
    if (url.pathname.startsWith(ADMIN_PREFIX) && this.deps.admin !== null) {
      await this.dispatchAdmin(req, res, url, requestId, this.deps.admin);
      return;
    }
    await this.dispatchApi(req, res, url, requestId);
  }

  private async dispatchAdmin(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    requestId: string,
    admin: AdminHttpHandler,
  ): Promise<void> {
    let out: Outgoing;
    try {
      const body = parseJsonBody(await readBody(req));
      const result = await admin(req.method ?? 'GET', url.pathname.slice(ADMIN_PREFIX.length), body);
      out = { status: result.status, headers: {}, body: result.body };
    } catch (error) {
      out = this.errorResponse(error, requestId);
    }
    this.send(res, out, serialise(out));
  }

  private async dispatchApi(req: IncomingMessage, res: ServerResponse, url: URL, requestId: string): Promise<void> {
    const { stats, settings, clock } = this.deps;
    const method = req.method ?? 'GET';
    const relative = url.pathname.startsWith(`${API_PREFIX}/`) ? url.pathname.slice(API_PREFIX.length) : undefined;
    const matched = relative === undefined ? undefined : matchRoute(method, relative);
    const entry: RequestLogEntry = {
      requestId,
      at: new Date(clock.now()).toISOString(),
      method,
      route: matched ? routeKey(matched.route) : `${method} (unmatched)`,
      path: url.pathname,
      query: url.search,
      status: 0,
      credential: null,
      faults: [],
    };
    stats.started();
    const started = Date.now();
    try {
      let out: Outgoing;
      let faults: Fault[] = [];
      try {
        const body = await readBody(req);
        if (settings.latencyMs > 0) await this.realDelay(settings.latencyMs);
        if (!matched) {
          const there = relative === undefined ? [] : routesAt(relative);
          if (there.length === 0) throw notFound(`No route for ${method} ${url.pathname}.`);
          this.checkRateLimit(req);
          entry.credential = authenticateRequest(there[0]!.auth, this.deps.state, req.headers).label;
          throw methodNotAllowed(
            method,
            there.map((r) => r.method),
          );
        }
        this.checkRateLimit(req);
        faults = this.deps.faults.take(entry.route, url.searchParams);
        entry.faults = faults.map((f) => f.type);
        out = (await this.before(faults, req, requestId)) ?? this.handle(matched.route, matched.params, url, req, body, entry, faults);
      } catch (error) {
        if (error instanceof ConnectionDropped) throw error;
        out = this.errorResponse(error, requestId);
      }
      if (this.stopping.signal.aborted) throw new ConnectionDropped();
      let text = serialise(out);
      // The minimal dialect spells its JSON as Python does by default; a body a fault made up keeps its text.
      if (text !== undefined && out.raw === undefined && settings.dialect === 'minimal') text = spacedJson(text);
      if (text !== undefined && faults.some((f) => f.type === 'malformed_json')) text = truncateJson(text);
      const reset = faults.find((f) => f.type === 'reset');
      if (reset?.type === 'reset' && reset.phase === 'after') throw new ConnectionDropped();
      if (reset?.type === 'reset' && reset.phase === 'partial') {
        entry.status = 'reset';
        this.sendPartial(res, out, text ?? '');
        return;
      }
      entry.status = out.status;
      this.send(res, out, text);
    } catch (error) {
      entry.status = 'reset';
      if (!(error instanceof ConnectionDropped)) this.deps.logger.error('sandbox request failed', { requestId, error });
      req.socket.destroy();
    } finally {
      stats.finished(entry);
      this.deps.logger.debug('sandbox request', {
        requestId,
        route: entry.route,
        status: entry.status,
        faults: entry.faults,
        ms: Date.now() - started,
      });
    }
  }

  private handle(
    route: RouteDef,
    params: Record<string, string>,
    url: URL,
    req: IncomingMessage,
    raw: RawBody,
    entry: RequestLogEntry,
    faults: Fault[],
  ): Outgoing {
    const { state, settings, stats } = this.deps;
    const who = authenticateRequest(route.auth, state, req.headers);
    entry.credential = who.label;
    const body = parseJsonBody(raw);
    const ctx: RouteContext = {
      url,
      params,
      query: url.searchParams,
      headers: req.headers,
      body,
      state,
      settings,
      stats,
      page: route.list ? readPage(url.searchParams, route.list, settings.maxPageSize, settings.pageSizeAboveMax) : undefined,
      principal: who.principal,
      identify: (label) => (entry.credential = label),
    };
    const result = route.handle(ctx);
    return this.after(faults, { status: result.status, headers: {}, body: result.body }, ctx, route);
  }

  private checkRateLimit(req: IncomingMessage): void {
    const config = this.deps.settings.rateLimit;
    if (!config) return;
    const credential =
      header(req.headers, 'authorization') ?? header(req.headers, 'institution') ?? `addr:${req.socket.remoteAddress ?? ''}`;
    const taken = this.deps.limiter.take(credential, config);
    if (!taken.ok) {
      this.deps.stats.rateLimited();
      throw rateLimited(taken.retryAfterSeconds);
    }
  }

  /** Faults that act before the request is handled: delays, then a refusal or a reset. */
  private async before(faults: Fault[], req: IncomingMessage, requestId: string): Promise<Outgoing | undefined> {
    for (const fault of faults) {
      if (fault.type === 'slow') await this.park(fault.delayMs, fault.realTime === true);
    }
    for (const fault of faults) {
      if (fault.type === 'reset' && (fault.phase ?? 'before') === 'before') {
        req.socket.destroy();
        throw new ConnectionDropped();
      }
      if (fault.type === 'status') return statusFault(fault, requestId, this.deps.settings.dialect === 'minimal');
    }
    return undefined;
  }

  private async park(ms: number, realTime: boolean): Promise<void> {
    this.deps.stats.parkedChange(+1);
    try {
      await Promise.race([realTime ? this.realDelay(ms) : this.deps.clock.sleep(ms), this.stopped]);
    } finally {
      this.deps.stats.parkedChange(-1);
    }
    if (this.stopping.signal.aborted) throw new ConnectionDropped();
  }

  /** Faults that change the response of a handled request. */
  private after(faults: Fault[], out: Outgoing, ctx: RouteContext, route: RouteDef): Outgoing {
    const body = out.body as Record<string, unknown> | undefined;
    const isList = body !== undefined && Array.isArray(body.results) && 'next' in body;
    const targets = (): Record<string, unknown>[] =>
      body === undefined ? [] : isList ? (body.results as Record<string, unknown>[]) : [body];
    for (const fault of faults) {
      switch (fault.type) {
        case 'foreign_next':
          if (isList && fault.origin !== undefined) {
            if (typeof body.next === 'string') {
              const own = new URL(body.next);
              body.next = `${new URL(fault.origin).origin}${own.pathname}${own.search}`;
            }
          } else if (isList) {
            const next = new URL((body.next as string | null) ?? ctx.url.toString());
            // Outside the base path as well as on another host: a client rebases a `next` under
            // its base path onto its own origin (decision 108), so only this one must be refused.
            body.next = fault.url ?? `http://foreign.invalid/outside${next.pathname}${next.search}`;
          }
          break;
        case 'next_loop':
          if (isList) {
            const target = new URL(ctx.url);
            if (fault.to === 'first') target.searchParams.set('page', '1');
            body.next = target.toString();
          }
          break;
        case 'count_mismatch':
          if (isList) body.count = (body.count as number) + (fault.delta ?? 1);
          break;
        case 'drop_field':
          for (const item of targets()) delete item[fault.field];
          break;
        case 'extra_fields':
          for (const item of targets())
            Object.assign(item, fault.fields ?? { sandboxExtra: 'unexpected', internalScore: 0.5, links: { self: null } });
          break;
        case 'unknown_enum':
          for (const item of targets()) item[fault.field] = fault.value ?? 'TRANSFER';
          break;
        case 'result_set_change':
          if (out.status < 300) route.shift?.(ctx, fault.insert ?? 1);
          break;
        case 'page_overlap':
          if (isList && ctx.page && ctx.page.offset > 0) {
            // The previous page's tail, read again through the route itself, so every dialect's view applies.
            const items = Math.min(fault.items ?? 1, ctx.page.offset);
            const tail = route.handle({ ...ctx, page: { ...ctx.page, offset: ctx.page.offset - items, pageSize: items } });
            body.results = [...(tail.body as { results: unknown[] }).results, ...(body.results as unknown[])];
          }
          break;
        case 'expiry_field':
          if (body !== undefined && typeof body.accessToken === 'string') {
            const check = ctx.state.tokens.check(body.accessToken, 'access');
            if (check.ok) {
              delete body.expiresIn;
              const relative = fault.field === 'expires_in' || fault.field === 'accessTokenExpiresIn';
              const at = check.record.expiresAt;
              body[fault.field] = relative ? Math.round((at - this.deps.clock.now()) / 1000) : new Date(at).toISOString();
            }
          }
          break;
        case 'nest_tokens':
          if (body !== undefined && !isList && 'accessToken' in body) {
            const nested: Record<string, unknown> = {};
            for (const field of Object.keys(body)) {
              if (/token|expire/i.test(field)) {
                nested[field] = body[field];
                delete body[field];
              }
            }
            body[fault.key ?? 'tokens'] = nested;
          }
          break;
        case 'wrap_object':
          if (body !== undefined) {
            const item = isList ? (body.results as unknown[])[0] : body;
            if (item !== undefined) out.body = { [fault.key]: item };
          }
          break;
        case 'revoke_credential':
          if (ctx.principal?.kind === 'api_key') ctx.state.revokeApiKey(ctx.principal.key.publicId);
          if (ctx.principal?.kind === 'user') ctx.state.tokens.revokeUser(ctx.principal.user.userId);
          break;
        default:
          break;
      }
    }
    return out;
  }

  private errorResponse(error: unknown, requestId: string): Outgoing {
    const minimal = this.deps.settings.dialect === 'minimal';
    if (error instanceof SandboxApiError) {
      if (minimal) {
        const drf = drfError(error);
        return { status: drf.status, headers: error.headers, body: drf.body };
      }
      return { status: error.status, headers: error.headers, body: error.body(requestId) };
    }
    this.deps.logger.error('sandbox handler failed', { requestId, error });
    const failure = errorForStatus(500);
    return { status: 500, headers: {}, body: minimal ? drfError(failure).body : failure.body(requestId) };
  }

  private send(res: ServerResponse, out: Outgoing, text: string | undefined): void {
    const headers: Record<string, string | number> = { ...out.headers };
    if (text !== undefined) {
      headers['Content-Type'] = out.raw?.contentType ?? 'application/json; charset=utf-8';
      headers['Content-Length'] = Buffer.byteLength(text);
    }
    res.writeHead(out.status, headers);
    res.end(text);
  }

  /** Headers and half the body, then the connection dies: a response lost mid-way. */
  private sendPartial(res: ServerResponse, out: Outgoing, text: string): void {
    const bytes = Buffer.from(text);
    res.writeHead(out.status, { ...out.headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': bytes.length });
    res.write(bytes.subarray(0, Math.max(1, Math.floor(bytes.length / 2))), () => res.socket?.destroy());
  }
}

function statusFault(fault: Extract<Fault, { type: 'status' }>, requestId: string, minimal: boolean): Outgoing {
  const error = errorForStatus(fault.status);
  const retryAfter = fault.retryAfter ?? (fault.status === 429 ? 1 : undefined);
  const headers: Record<string, string> = retryAfter === undefined ? {} : { 'Retry-After': String(retryAfter) };
  // A fault keeps the status it asks for in either dialect; only the body takes the dialect's shape.
  const out: Outgoing = { status: fault.status, headers, body: minimal ? drfError(error).body : error.body(requestId) };
  if (fault.body === 'html') {
    out.raw = {
      contentType: 'text/html; charset=utf-8',
      text: `<html><body><h1>${fault.status} Error</h1><p>upstream proxy</p></body></html>`,
    };
  }
  if (fault.body === 'empty') out.raw = { contentType: 'text/plain; charset=utf-8', text: '' };
  if (fault.json !== undefined) out.raw = { contentType: fault.contentType ?? 'application/json', text: JSON.stringify(fault.json) };
  return out;
}

/** The text to send, or undefined for no body. A status fault may ask for a body that is not the envelope. */
function serialise(out: Outgoing): string | undefined {
  if (out.raw) return out.raw.text;
  if (out.status === 204 || out.body === undefined) return undefined;
  return stringifyJson(out.body);
}

/** A strict prefix of a JSON object or array is never valid JSON. */
function truncateJson(text: string): string {
  return text.length < 2 ? '{"truncated":' : text.slice(0, Math.floor(text.length / 2));
}

interface RawBody {
  bytes: Buffer | undefined;
  /** More than MAX_BODY_BYTES came: the rest was read and dropped, so the answer still reaches the caller. */
  tooLarge: boolean;
}

/** Reads the whole body but keeps at most MAX_BODY_BYTES: judging it waits until the credential is checked. */
async function readBody(req: IncomingMessage): Promise<RawBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  if (size > MAX_BODY_BYTES) return { bytes: undefined, tooLarge: true };
  return { bytes: size === 0 ? undefined : Buffer.concat(chunks), tooLarge: false };
}

function parseJsonBody(raw: RawBody): unknown {
  if (raw.tooLarge) throw payloadTooLarge(MAX_BODY_BYTES);
  if (raw.bytes === undefined) return undefined;
  try {
    return JSON.parse(raw.bytes.toString('utf8')) as unknown;
  } catch (error) {
    throw new SandboxApiError(400, 'validation_error', 'invalid_request', 'The body is not valid JSON.', { param: 'body', cause: error });
  }
}
