import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { ownIdentity, processState, type ProcessIdentity } from '../../src/adapters/local/process-identity';
import { AcctopsError } from '../../src/core/shared/errors';
import {
  MAX_PAGE_SIZE,
  type DueQuery,
  type IssuedTokens,
  type NewToken,
  type PageRequest,
  type StatusChange,
  type TokenStore,
  type WriteGuard,
} from '../../src/core/tokens/token-store';

/** A lease refused because the command is being interrupted: the user is left for the next run. */
export class InterruptedError extends AcctopsError {
  override readonly name: string = 'InterruptedError';

  constructor(what: string) {
    super(`${what}: the command is being interrupted`, { code: 'interrupted' });
  }
}

const OWNER = 'acctops-cli';
/** `acctops-cli@<host>/<pid>/<start ticks or ->/<boot id or ->:<uuid>`, as leaseOwnerPrefix and TokenLifecycle write it. */
const OWNER_ID = /^acctops-cli@([A-Za-z0-9.-]{1,64})\/([1-9]\d{0,9})\/(\d{1,20}|-)\/([0-9A-Fa-f-]{1,64}|-):[0-9A-Fa-f-]{36}$/;

/**
 * This host as a lease owner names it: the hostname, or a digest of one that holds characters the
 * owner id uses as separators, or is too long for the store's 256-character owner.
 */
function hostTag(name: string): string {
  return /^[A-Za-z0-9.-]{1,64}$/.test(name) ? name : `h-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/**
 * The start of the lease owner ids of the local mode's commands (TokenLifecycle's `ownerPrefix`; it
 * appends `:<uuid>`): `acctops-cli@<host>/<pid>/<start>/<boot>`. A lease a command killed with
 * kill -9 left then names its holder, so that a later command can prove the holder dead
 * (abandonedBy) instead of reporting the user `busy` until the lease runs out.
 */
export function leaseOwnerPrefix(identity: ProcessIdentity = ownIdentity(), host: string = hostname()): string {
  return `${OWNER}@${hostTag(host)}/${identity.pid}/${identity.start ?? '-'}/${identity.boot ?? '-'}`;
}

/**
 * The pid of the holder of a lease whose owner id is `owner`, when that holder is provably dead: a
 * local command of this host (by its id) whose process is gone (no such pid, another boot, or the
 * pid now another process's: the state lock's own test, processState). Undefined for anything
 * else, the lease then left to run out: an id of another host (its pids mean nothing here), of an
 * older acctops or of a deployed worker (no identity), and a holder alive or not verifiable (a live
 * pid where /proc gives no start time).
 */
export function abandonedBy(owner: string, host: string = hostname()): number | undefined {
  const match = OWNER_ID.exec(owner);
  if (!match || match[1] !== hostTag(host)) return undefined;
  const [, , pid, start, boot] = match;
  const identity: ProcessIdentity = {
    pid: Number(pid),
    ...(start !== '-' ? { start } : {}),
    ...(boot !== '-' ? { boot } : {}),
  };
  return processState(identity) === 'gone' ? identity.pid : undefined;
}

/** Leases a later command took back from dead holders (LeaseHoldingStore.reclaimAbandoned). */
export interface ReclaimedLeases {
  /** The users whose lease was released. */
  users: string[];
  /** The pids of the dead processes that held them. */
  holders: number[];
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

  /**
   * Releases every live lease whose holder is provably dead (abandonedBy): a command killed with
   * kill -9, or a crash, while it held them; without this, its users were `busy` to every run for
   * the rest of the lease (3 minutes), their tokens perhaps expired. Any other lease is left alone.
   * Only under the state directory's lock, so that no command of this directory is running; a
   * release is still conditional on the dead owner holding the lease.
   */
  async reclaimAbandoned(now: number): Promise<ReclaimedLeases> {
    const reclaimed: ReclaimedLeases = { users: [], holders: [] };
    let cursor: string | null = null;
    do {
      const page = await this.store.list({ limit: MAX_PAGE_SIZE, cursor });
      for (const user of page.items) {
        if (user.leaseOwner === null || user.leaseUntil === null || user.leaseUntil <= now) continue;
        const holder = abandonedBy(user.leaseOwner);
        if (holder === undefined || !(await this.store.releaseLease(user.externalId, user.leaseOwner))) continue;
        reclaimed.users.push(user.externalId);
        if (!reclaimed.holders.includes(holder)) reclaimed.holders.push(holder);
      }
      cursor = page.nextCursor;
    } while (cursor);
    return reclaimed;
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
