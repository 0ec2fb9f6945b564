import { AcctopsError } from '../../src/core/shared/errors';
import type {
  DueQuery,
  IssuedTokens,
  NewToken,
  PageRequest,
  StatusChange,
  TokenStore,
  WriteGuard,
} from '../../src/core/tokens/token-store';

/** A lease refused because the command is being interrupted: the user is left for the next run. */
export class InterruptedError extends AcctopsError {
  override readonly name: string = 'InterruptedError';

  constructor(what: string) {
    super(`${what}: the command is being interrupted`, { code: 'interrupted' });
  }
}

/**
 * The local mode's token store, knowing which leases this command holds. A lease protects a user
 * for minutes (TokenLifecycle's `leaseMs`), longer than any refresh, so that a second worker never
 * refreshes with a token the first is rotating; a command interrupted while it held some left
 * those users `busy` to every run until the leases ran out, their access tokens expired meanwhile.
 * On an interrupt (`release`) no lease is taken any more, the refreshes under way get a moment to
 * store their pairs, and the leases still held are released: only this command's, by their owner
 * ids, under the store's usual condition (the owner must still hold it).
 */
export class LeaseHoldingStore implements TokenStore {
  /** externalId -> the owner id of the lease this command holds on it. */
  private readonly held = new Map<string, string>();
  private stopped = false;

  constructor(private readonly store: TokenStore) {}

  get(externalId: string) {
    return this.store.get(externalId);
  }

  list(page: PageRequest) {
    return this.store.list(page);
  }

  create(token: NewToken, now: number) {
    return this.store.create(token, now);
  }

  queryDue(query: DueQuery) {
    return this.store.queryDue(query);
  }

  async acquireLease(externalId: string, owner: string, leaseUntil: number, now: number) {
    if (this.stopped) throw new InterruptedError(`user ${externalId} not leased`);
    const record = await this.store.acquireLease(externalId, owner, leaseUntil, now);
    if (record) this.held.set(externalId, owner);
    return record;
  }

  async saveTokens(externalId: string, tokens: IssuedTokens, guard: WriteGuard) {
    const record = await this.store.saveTokens(externalId, tokens, guard);
    this.ended(externalId, guard.owner);
    return record;
  }

  async markStatus(externalId: string, change: StatusChange, guard: WriteGuard) {
    const record = await this.store.markStatus(externalId, change, guard);
    this.ended(externalId, guard.owner);
    return record;
  }

  async releaseLease(externalId: string, owner: string) {
    const released = await this.store.releaseLease(externalId, owner);
    // False: the owner no longer held it (it ran out and another took it); ours is over either way.
    this.ended(externalId, owner);
    return released;
  }

  /** The users whose lease this command holds now. */
  holding(): string[] {
    return [...this.held.keys()];
  }

  /**
   * Takes no lease from now on, waits up to `waitMs` for the work under way to end its leases
   * (a refresh stores its pair and ends its lease in one write), then releases the leases still
   * held. Returns the users whose lease it released.
   */
  async release(waitMs: number): Promise<string[]> {
    this.stopped = true;
    for (const deadline = Date.now() + waitMs; this.held.size > 0 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const released: string[] = [];
    for (const [externalId, owner] of [...this.held]) {
      if (await this.releaseLease(externalId, owner).catch(() => false)) released.push(externalId);
    }
    return released;
  }

  private ended(externalId: string, owner: string): void {
    if (this.held.get(externalId) === owner) this.held.delete(externalId);
  }
}
