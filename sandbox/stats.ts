/**
 * What tests and benchmarks observe about the traffic: counters per route and status, refreshes
 * per user (a double refresh is the bug that kills a user), fired faults, and a bounded log of
 * recent requests. Nothing here holds a secret: a credential appears as a key prefix, a user's
 * external_id or an institution id.
 */

export type CredentialLabel =
  | { kind: 'api_key'; prefix: string; companyId: string }
  | { kind: 'user'; userId: string; externalId: string | null }
  | { kind: 'institution'; institutionId: string };

export interface RequestLogEntry {
  requestId: string;
  /** ISO time on the sandbox clock. */
  at: string;
  method: string;
  /** The route template, e.g. `GET /accounting/transactions/`, or `GET (unmatched)`. */
  route: string;
  path: string;
  query: string;
  /** The status sent, or `reset` when the connection was destroyed instead. */
  status: number | 'reset';
  credential: CredentialLabel | null;
  /** Types of the faults that fired on this request. */
  faults: string[];
}

export interface SandboxStats {
  requests: number;
  byRoute: Record<string, number>;
  byStatus: Record<string, number>;
  byRouteAndStatus: Record<string, Record<string, number>>;
  /** Successful refreshes per user, keyed by external_id. */
  refreshesPerUser: Record<string, number>;
  /** Refused refreshes (invalid_grant) per user, where the token named one. */
  refusedRefreshesPerUser: Record<string, number>;
  retrievesPerUser: Record<string, number>;
  usersCreated: number;
  faultsFired: Record<string, number>;
  rateLimited: number;
  /** Requests being handled right now. */
  inFlight: number;
  /** Responses held by a `slow` fault right now. */
  parked: number;
}

const bump = (map: Record<string, number>, key: string, by = 1) => {
  map[key] = (map[key] ?? 0) + by;
};

export class StatsRecorder {
  private stats!: SandboxStats;
  private log: RequestLogEntry[] = [];
  private parkedListeners: (() => void)[] = [];

  constructor(private readonly logSize: number) {
    this.reset();
  }

  reset(): void {
    const { inFlight = 0, parked = 0 } = this.stats ?? {};
    this.stats = {
      requests: 0,
      byRoute: {},
      byStatus: {},
      byRouteAndStatus: {},
      refreshesPerUser: {},
      refusedRefreshesPerUser: {},
      retrievesPerUser: {},
      usersCreated: 0,
      faultsFired: {},
      rateLimited: 0,
      inFlight,
      parked,
    };
    this.log = [];
  }

  started(): void {
    this.stats.inFlight++;
  }

  finished(entry: RequestLogEntry): void {
    const s = this.stats;
    s.inFlight--;
    s.requests++;
    bump(s.byRoute, entry.route);
    bump(s.byStatus, String(entry.status));
    bump((s.byRouteAndStatus[entry.route] ??= {}), String(entry.status));
    for (const type of entry.faults) bump(s.faultsFired, type);
    this.log.push(entry);
    if (this.log.length > this.logSize) this.log.splice(0, this.log.length - this.logSize);
  }

  refreshed(externalId: string | null): void {
    if (externalId !== null) bump(this.stats.refreshesPerUser, externalId);
  }

  refreshRefused(externalId: string | null): void {
    if (externalId !== null) bump(this.stats.refusedRefreshesPerUser, externalId);
  }

  retrieved(externalId: string | null): void {
    if (externalId !== null) bump(this.stats.retrievesPerUser, externalId);
  }

  rateLimited(): void {
    this.stats.rateLimited++;
  }

  userCreated(): void {
    this.stats.usersCreated++;
  }

  parkedChange(delta: number): void {
    this.stats.parked += delta;
    const listeners = this.parkedListeners;
    this.parkedListeners = [];
    for (const listener of listeners) listener();
  }

  /** Resolves once at least `count` responses are parked: then advancing a manual clock releases them. */
  async waitForParked(count: number, signal: AbortSignal): Promise<number> {
    while (this.stats.parked < count) {
      if (signal.aborted) throw signal.reason;
      await new Promise<void>((resolve) => {
        this.parkedListeners.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    return this.stats.parked;
  }

  snapshot(): SandboxStats {
    return structuredClone(this.stats);
  }

  requestLog(limit?: number): RequestLogEntry[] {
    return structuredClone(limit === undefined ? this.log : this.log.slice(-limit));
  }
}
