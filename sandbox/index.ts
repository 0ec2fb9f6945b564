import * as z from 'zod';
import { systemClock, type Clock } from '../src/core/shared/clock';
import { parseWith } from '../src/core/shared/errors';
import { silentLogger, type Logger } from '../src/core/shared/logger';
import { AdminRegistry, type DemoCredentials, type SandboxAdmin } from './admin';
import { AMOUNT_ENCODINGS, DIALECTS, type Dialect } from './choices';
import { SandboxApiError } from './errors';
import { FaultRegistry, faultRuleSchema, type FaultRule } from './faults';
import { RateLimiter } from './rate-limit';
import { routeKeys, type SandboxSettings } from './routes';
import { seedDemo } from './seed';
import { API_PREFIX, SandboxServer } from './server';
import { sandboxSnapshotSchema, type SandboxStateSnapshot } from './snapshot';
import { DEFAULT_SPELLING, SandboxState } from './state';
import { StatsRecorder } from './stats';

/**
 * startSandbox: a local simulator of the Accounting & Invoicing Service over plain node:http.
 * See sandbox/README.md for what it simulates, its options, faults and the admin API.
 */

export { AMOUNT_ENCODINGS };

const optionsSchema = z.object({
  port: z.int().min(0).max(65_535).default(0),
  host: z.string().default('127.0.0.1'),
  seed: z.union([z.int(), z.string()]).default(1),
  demo: z.boolean().default(true),
  /**
   * The demo's API keys and institution secret from the seed as well, instead of `node:crypto`
   * (the data is the seed's either way). For tests that compare two sandboxes' credentials: anyone
   * who knows the seed holds them. Never for a sandbox that outlives a test (decision 97).
   */
  seededCredentials: z.boolean().default(false),
  clock: z.custom<Clock>((v) => typeof v === 'object' && v !== null && typeof (v as Clock).now === 'function').optional(),
  faults: z.array(faultRuleSchema).default([]),
  amountEncoding: z.enum(AMOUNT_ENCODINGS).default('integer'),
  displayLabels: z.boolean().default(false),
  transactionCurrency: z.boolean().default(true),
  rateLimit: z
    .object({ requestsPerSecond: z.number().positive(), burst: z.number().min(1).optional() })
    .nullable()
    .default(null),
  latencyMs: z.int().min(0).max(60_000).default(0),
  maxPageSize: z.int().min(1).default(1000),
  /** `clamp` (DRF's max_page_size) or `refuse`: a page size above `maxPageSize` is 400 naming the parameter. */
  pageSizeAboveMax: z.enum(['clamp', 'refuse']).default('clamp'),
  accessTokenTtlSeconds: z.int().positive().default(1800),
  refreshTokenTtlSeconds: z
    .int()
    .positive()
    .default(7 * 24 * 3600),
  requestLogSize: z.int().min(0).default(1000),
  /**
   * `default`: the shapes of docs/assumptions.md and docs/openapi.yaml. `minimal`: only what the spec
   * promises, in DRF + simplejwt shapes (docs/assumptions.md, "The minimal dialect").
   */
  dialect: z.enum(DIALECTS).default('default'),
  /**
   * The case of the companies' publicIds this sandbox makes. `upper`: a service that spells them in
   * upper case and, like every comparison here, compares them exactly (paths, `X-Company-Id`, bodies).
   */
  companyIdCase: z.enum(['lower', 'upper']).default('lower'),
  /**
   * Keys this sandbox makes: `servicePrefix` before the underscore (it may hold one itself,
   * `sk_live`), and how many characters after it the key list's `prefix` shows.
   */
  apiKeys: z
    .strictObject({
      servicePrefix: z
        .string()
        .regex(/^[A-Za-z0-9]+(_[A-Za-z0-9]+)*$/)
        .default(DEFAULT_SPELLING.keyServicePrefix),
      listedChars: z.int().min(1).max(40).default(DEFAULT_SPELLING.listedKeyChars),
    })
    .default({ servicePrefix: DEFAULT_SPELLING.keyServicePrefix, listedChars: DEFAULT_SPELLING.listedKeyChars }),
  logger: z.custom<Logger>((v) => typeof v === 'object' && v !== null && typeof (v as Logger).info === 'function').optional(),
  /**
   * Start where a previous sandbox stopped (`snapshot()`): its data, users, keys, tokens and demo
   * credentials. `seed` and `demo` are then taken from the snapshot, and so are the credentials
   * (`seededCredentials` plays no part).
   */
  state: sandboxSnapshotSchema.optional(),
  /**
   * Serve the admin API over HTTP (`/__sandbox/`). Off where the sandbox runs inside a command that
   * drives it in process (local mode): an open admin door on loopback would hand every demo
   * credential to any account of the host while the command runs (docs/security.md).
   */
  adminHttp: z.boolean().default(true),
});

export type SandboxOptions = Omit<z.input<typeof optionsSchema>, 'faults'> & { faults?: FaultRule[] };

export interface RunningSandbox {
  /** `http://127.0.0.1:<port>/api/v1` */
  baseUrl: string;
  /** `http://127.0.0.1:<port>/__sandbox/`: the admin API over HTTP. */
  adminUrl: string;
  port: number;
  /** The shapes this sandbox answers in. */
  dialect: Dialect;
  admin: SandboxAdmin;
  /** The demo credentials when `demo` is on (the default), else null. SANDBOX ONLY. */
  demo: DemoCredentials | null;
  /** The state as JSON-safe data, for the `state` option of a later sandbox. Holds credentials: store it like one. */
  snapshot(): SandboxStateSnapshot;
  stop(): Promise<void>;
}

/**
 * The system clock plus an offset that `admin.advanceClock` moves: so a sandbox in another
 * process can be sent forward in time (token expiry, key expiry) without a manual clock.
 */
class OffsetClock implements Clock {
  private offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  sleep(ms: number): Promise<void> {
    return systemClock.sleep(ms);
  }
  advance(ms: number): void {
    this.offset += ms;
  }
}

const canAdvance = (clock: Clock): clock is Clock & { advance(ms: number): void } =>
  typeof (clock as { advance?: unknown }).advance === 'function';

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const o = parseWith(optionsSchema, options, 'sandbox options');
  const clock = o.clock ?? new OffsetClock();
  const logger = o.logger ?? silentLogger;
  const lifetimes = {
    accessSeconds: o.accessTokenTtlSeconds,
    refreshSeconds: o.refreshTokenTtlSeconds,
    format: o.dialect === 'minimal' ? ('opaque' as const) : ('jwt' as const),
  };
  const state = o.state ? SandboxState.restore(o.state, clock, lifetimes) : new SandboxState(String(o.seed), clock, lifetimes);
  state.spelling = { companyIdCase: o.companyIdCase, keyServicePrefix: o.apiKeys.servicePrefix, listedKeyChars: o.apiKeys.listedChars };
  const settings: SandboxSettings = {
    amountEncoding: o.amountEncoding,
    displayLabels: o.displayLabels,
    transactionCurrency: o.transactionCurrency,
    rateLimit: o.rateLimit,
    latencyMs: o.latencyMs,
    maxPageSize: o.maxPageSize,
    pageSizeAboveMax: o.pageSizeAboveMax,
    dialect: o.dialect,
  };
  const stats = new StatsRecorder(o.requestLogSize);
  const faults = new FaultRegistry(routeKeys);
  for (const rule of o.faults) faults.add(rule);
  const limiter = new RateLimiter(clock);
  const demo: DemoCredentials | null = o.state
    ? o.state.demo
    : o.demo
      ? seedDemo(state, clock.now(), { seededCredentials: o.seededCredentials })
      : null;

  // The admin door of the server needs the registry, and the registry needs the server's stop signal.
  const server: SandboxServer = new SandboxServer({
    state,
    stats,
    faults,
    limiter,
    settings,
    clock,
    logger,
    admin: o.adminHttp ? (m, n, b) => registry.http(m, n, b) : null,
  });
  const registry: AdminRegistry = new AdminRegistry({
    state,
    stats,
    faults,
    limiter,
    settings,
    demo: () => demo,
    advanceClock: (ms) => {
      if (!canAdvance(clock)) {
        throw new SandboxApiError(400, 'validation_error', 'clock_not_controllable', 'The clock given to the sandbox cannot be advanced.');
      }
      clock.advance(ms);
    },
    signal: server.signal,
  });
  const port = await server.listen(o.port, o.host);
  const origin = `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`;
  return {
    baseUrl: `${origin}${API_PREFIX}`,
    adminUrl: `${origin}/__sandbox/`,
    port,
    dialect: o.dialect,
    admin: registry.admin(),
    demo,
    snapshot: () => state.snapshot(demo),
    stop: () => server.stop(),
  };
}

export { SandboxAdminError, type DemoCredentials, type SandboxAdmin } from './admin';
export { connectSandboxAdmin } from './admin-client';
export { SANDBOX_SNAPSHOT_FORMAT, sandboxSnapshotSchema, type SandboxStateSnapshot } from './snapshot';
export type { Fault, FaultRule, FaultRuleState } from './faults';
export { PERMISSIONS, type Permission } from './schemas';
export type { RequestLogEntry, SandboxStats } from './stats';
export { routeKeys } from './routes';
export { hasSeededDemoCredentials } from './seed';
export { DIALECTS, MINIMAL_TAX_REPORT_FIELDS, type Dialect } from './dialect';
