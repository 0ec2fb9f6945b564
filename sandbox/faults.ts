import * as z from 'zod';

/**
 * Faults injected on demand, per route and per count. A rule counts the requests that match its
 * route (and query, when given); requests `after + 1` to `after + times` get the fault. Every
 * matching rule counts every request, so rules compose: a `slow` and a `status` rule on the same
 * request give a slow error.
 *
 * Faults act in one of two places:
 * - before the request is handled: `status`, `slow`, `reset` with phase `before`;
 * - on the response of a handled request (its state change has happened): `reset` with phase
 *   `after` or `partial`, `malformed_json`, the pagination anomalies and the schema drifts, which
 *   change only list responses or object bodies, and `revoke_credential`.
 */
export const faultSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('status'),
    status: z.int().min(400).max(599),
    /** Sent as `Retry-After`; 429 gets 1 when absent. A string is sent as is (an HTTP date, garbage). */
    retryAfter: z.union([z.int().nonnegative(), z.string()]).optional(),
    /** `envelope` (default): the documented error body; `html`: a proxy's page; `empty`: no body. */
    body: z.enum(['envelope', 'html', 'empty']).optional(),
    /** This JSON instead of the dialect's body, in either dialect: another service's error shape (JSON:API, problem+json). */
    json: z.unknown().optional(),
    /** With `json`: its `Content-Type` (`application/json` when absent), e.g. `application/problem+json`. */
    contentType: z.string().min(1).optional(),
  }),
  z.strictObject({
    type: z.literal('slow'),
    delayMs: z.int().positive(),
    /** Wait on the real clock instead of the sandbox clock (which a manual clock only moves when told). */
    realTime: z.boolean().optional(),
  }),
  z.strictObject({
    type: z.literal('reset'),
    /** `before`: nothing happens at the service; `after`: it acts, then the connection dies; `partial`: it dies mid-body. */
    phase: z.enum(['before', 'after', 'partial']).optional(),
  }),
  z.strictObject({ type: z.literal('malformed_json') }),
  z.strictObject({
    type: z.literal('foreign_next'),
    url: z.url().optional(),
    /** The page's own `next` (null stays null) on this origin: a service behind a proxy that hides the public one. */
    origin: z.url().optional(),
  }),
  z.strictObject({ type: z.literal('next_loop'), to: z.enum(['self', 'first']).optional() }),
  z.strictObject({ type: z.literal('count_mismatch'), delta: z.int().optional() }),
  z.strictObject({ type: z.literal('drop_field'), field: z.string().min(1) }),
  z.strictObject({ type: z.literal('extra_fields'), fields: z.record(z.string(), z.unknown()).optional() }),
  z.strictObject({ type: z.literal('unknown_enum'), field: z.string().min(1), value: z.string().optional() }),
  z.strictObject({ type: z.literal('result_set_change'), insert: z.int().positive().max(1000).optional() }),
  z.strictObject({ type: z.literal('page_overlap'), items: z.int().positive().max(1000).optional() }),
  z.strictObject({ type: z.literal('revoke_credential') }),
  /** A token reply with its tokens (and expiry fields) moved one level down: `{"user": …, "<key>": {"accessToken", …}}`. */
  z.strictObject({ type: z.literal('nest_tokens'), key: z.string().min(1).optional() }),
  /** An object answer (a one-item list's item) wrapped in a single property: `{"company": {…}}`. */
  z.strictObject({ type: z.literal('wrap_object'), key: z.string().min(1) }),
  /**
   * A token reply that states the access token's expiry (at the sandbox) in `field` instead of
   * `expiresIn`: an ISO timestamp for an absolute field, seconds for `expires_in`/`accessTokenExpiresIn`.
   */
  z.strictObject({
    type: z.literal('expiry_field'),
    field: z.enum(['accessTokenExpiresAt', 'expiresAt', 'expires_at', 'accessExpires', 'expires_in', 'accessTokenExpiresIn']),
  }),
]);
export type Fault = z.infer<typeof faultSchema>;
export type FaultType = Fault['type'];

export const faultRuleSchema = z.strictObject({
  /** `METHOD /path/template/` as the sandbox names routes (see `routes` in the README), or `*`. */
  route: z.string().min(1),
  /** Only requests whose query has these values count. */
  query: z.record(z.string(), z.string()).optional(),
  after: z.int().nonnegative().optional(),
  times: z.union([z.int().positive(), z.literal('always')]).optional(),
  fault: faultSchema,
});
export type FaultRule = z.input<typeof faultRuleSchema>;

export interface FaultRuleState {
  id: string;
  route: string;
  query: Record<string, string> | undefined;
  after: number;
  times: number | 'always';
  fault: Fault;
  /** Matching requests seen so far. */
  seen: number;
  fired: number;
}

export class FaultRegistry {
  private rules: FaultRuleState[] = [];
  private counter = 0;

  constructor(private readonly knownRoutes: ReadonlySet<string>) {}

  add(input: FaultRule): FaultRuleState {
    const rule = faultRuleSchema.parse(input);
    if (rule.route !== '*' && !this.knownRoutes.has(rule.route)) {
      throw new RangeError(`unknown route "${rule.route}"; known: ${[...this.knownRoutes].join(', ')}`);
    }
    const state: FaultRuleState = {
      id: `fault_${++this.counter}`,
      route: rule.route,
      query: rule.query,
      after: rule.after ?? 0,
      times: rule.times ?? 1,
      fault: rule.fault,
      seen: 0,
      fired: 0,
    };
    this.rules.push(state);
    return { ...state };
  }

  list(): FaultRuleState[] {
    return this.rules.map((r) => ({ ...r }));
  }

  remove(id: string): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter((r) => r.id !== id);
    return this.rules.length < before;
  }

  clear(): void {
    this.rules = [];
  }

  /** Counts the request against every matching rule and returns the faults that fire, in rule order. */
  take(route: string, query: URLSearchParams): Fault[] {
    const fired: Fault[] = [];
    for (const rule of this.rules) {
      if (rule.route !== '*' && rule.route !== route) continue;
      if (rule.query && !Object.entries(rule.query).every(([k, v]) => query.get(k) === v)) continue;
      rule.seen++;
      if (rule.seen > rule.after && (rule.times === 'always' || rule.fired < rule.times)) {
        rule.fired++;
        fired.push(rule.fault);
      }
    }
    return fired;
  }
}
