import type { SecretStore, SecretVersionSelector } from '../ports/secrets';
import { type Clock, systemClock } from './clock';
import { type Logger, silentLogger } from './logger';

export interface CachedSecretOptions<T> {
  /** Turns the secret string into what callers use; its errors must not quote the value. */
  parse: (raw: string) => T;
  /** How long a read is served from memory. Default 5 minutes. */
  ttlMs?: number;
  /**
   * After an authentication error triggered a read, further authentication errors within this
   * window reuse that read's outcome instead of reading again. Default 30 seconds.
   */
  authRefreshCooldownMs?: number;
  /** Default: the current version. */
  selector?: SecretVersionSelector;
  clock?: Clock;
  logger?: Logger;
}

interface Entry<T> {
  value: T;
  versionId: string;
  fetchedAt: number;
}

/**
 * One secret (the institution credential, a webhook secret, a company API key) read through a
 * TTL cache. Concurrent readers share one read.
 *
 * `refreshAfterAuthError()` is for the moment a credential is refused: it reads the secret again
 * once, and tells the caller whether a different version came back, i.e. whether a retry can
 * succeed. So a changed secret is picked up without a redeploy, and a burst of authentication
 * errors (every in-flight request failing at once, or a secret that is simply wrong) costs one
 * read per cooldown window, not one per error.
 */
export class CachedSecret<T> {
  private entry?: Entry<T>;
  /** The version of the latest successful read; survives `invalidate()` so a refresh can compare. */
  private lastVersionId?: string;
  private inflight?: Promise<Entry<T>>;
  private authRefresh?: { at: number; changed: Promise<boolean> };
  private readonly ttlMs: number;
  private readonly cooldownMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(
    private readonly store: Pick<SecretStore, 'readSecret'>,
    readonly secretId: string,
    private readonly options: CachedSecretOptions<T>,
  ) {
    this.ttlMs = options.ttlMs ?? 5 * 60_000;
    this.cooldownMs = options.authRefreshCooldownMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ secretId });
  }

  async get(): Promise<T> {
    const entry = this.entry;
    if (entry && this.clock.now() - entry.fetchedAt < this.ttlMs) return entry.value;
    return (await this.read()).value;
  }

  /** The next `get()` reads the secret again. */
  invalidate(): void {
    this.entry = undefined;
  }

  /**
   * Resolves true when the secret has changed since the value that was refused, so the request
   * is worth sending once more with `get()`'s new value; false otherwise (including when the
   * store cannot be read: the authentication error is the one worth reporting).
   */
  refreshAfterAuthError(): Promise<boolean> {
    const now = this.clock.now();
    if (this.authRefresh && now - this.authRefresh.at < this.cooldownMs) return this.authRefresh.changed;
    const before = this.lastVersionId;
    // The cached entry stays until the read succeeds: if the store is down, get() keeps serving it.
    const changed = this.read().then(
      (entry) => {
        this.logger.info('secret re-read after an authentication error', { changed: entry.versionId !== before });
        return entry.versionId !== before;
      },
      (error: unknown) => {
        this.logger.warn('secret re-read after an authentication error failed', { error });
        return false;
      },
    );
    this.authRefresh = { at: now, changed };
    return changed;
  }

  private read(): Promise<Entry<T>> {
    this.inflight ??= (async () => {
      try {
        const secret = await this.store.readSecret(this.secretId, this.options.selector);
        const entry = { value: this.options.parse(secret.value), versionId: secret.versionId, fetchedAt: this.clock.now() };
        this.entry = entry;
        this.lastVersionId = entry.versionId;
        return entry;
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
  }
}
