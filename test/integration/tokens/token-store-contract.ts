import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import {
  KEEP_ALIVE_MS,
  TokenExistsError,
  TokenNotFoundError,
  VersionConflictError,
  isDue,
  type DueToken,
  type NewToken,
  type TokenStore,
} from '../../../src/core/tokens/token-store';

/** A store under test, plus a way to damage what it stored behind its back. */
export interface TokenStoreHarness {
  store: TokenStore;
  /** Overwrites one stored attribute of a record with `value`, bypassing the store's validation. */
  corrupt(externalId: string, attribute: string, value: unknown): Promise<void>;
  /** Moves a record under exactly `key` (its `externalId` too), as the code before decision 77 stored an id as typed. */
  rekey(externalId: string, key: string): Promise<void>;
  close(): Promise<void>;
}

const MINUTE = 60_000;
const ACCESS_LIFETIME = 30 * MINUTE;
const MARGIN = 15 * MINUTE;

/**
 * The one behaviour both adapters must have. Each test gets a fresh, empty store. Token values are
 * canaries: no error message may contain one.
 */
export function tokenStoreContract(name: string, makeHarness: () => Promise<TokenStoreHarness>): void {
  describe(`${name}: TokenStore contract`, () => {
    let harness: TokenStoreHarness;
    let store: TokenStore;
    let clock: ManualClock;
    const canaries: string[] = [];

    beforeEach(async () => {
      harness = await makeHarness();
      store = harness.store;
      clock = new ManualClock();
    });
    afterEach(async () => {
      await harness.close();
    });

    function newToken(overrides: Partial<NewToken> = {}): NewToken {
      const accessToken = `canary-access-${randomUUID()}`;
      const refreshToken = `canary-refresh-${randomUUID()}`;
      canaries.push(accessToken, refreshToken);
      return {
        externalId: randomUUID(),
        username: 'ada',
        email: 'ada@example.test',
        accessToken,
        refreshToken,
        accessTokenExpiresAt: clock.now() + ACCESS_LIFETIME,
        ...overrides,
      };
    }

    function freshPair(expiresAt = clock.now() + ACCESS_LIFETIME) {
      const pair = { accessToken: `canary-access-${randomUUID()}`, refreshToken: `canary-refresh-${randomUUID()}` };
      canaries.push(pair.accessToken, pair.refreshToken);
      return { ...pair, accessTokenExpiresAt: expiresAt };
    }

    async function caught(promise: Promise<unknown>): Promise<Error> {
      try {
        await promise;
      } catch (error) {
        return error as Error;
      }
      throw new Error('expected a rejection');
    }

    function expectNoCanary(text: string): void {
      for (const canary of canaries) expect(text).not.toContain(canary);
    }

    async function walkDue(now: number, marginMs: number, limit: number): Promise<DueToken[][]> {
      const pages: DueToken[][] = [];
      let cursor: string | null = null;
      do {
        const page = await store.queryDue({ now, marginMs, limit, cursor });
        pages.push(page.items);
        cursor = page.nextCursor;
      } while (cursor !== null && pages.length < 1000);
      return pages;
    }

    async function dueIds(marginMs = MARGIN): Promise<string[]> {
      return (await walkDue(clock.now(), marginMs, 100)).flat().map((d) => d.externalId);
    }

    describe('create and get', () => {
      it('stores a new user active at version 1, with no lease and no failures', async () => {
        const input = newToken();
        const created = await store.create(input, clock.now());
        expect(created).toEqual({
          ...input,
          refreshedAt: clock.now(),
          version: 1,
          leaseOwner: null,
          leaseUntil: null,
          status: 'active',
          consecutiveFailures: 0,
          lastErrorClass: null,
          lastErrorCode: null,
          createdAt: clock.now(),
          updatedAt: clock.now(),
        });
        expect(await store.get(input.externalId)).toEqual(created);
      });

      it('returns null for an unknown user', async () => {
        expect(await store.get(randomUUID())).toBeNull();
      });

      it('refuses a second create of the same external_id and keeps the first pair', async () => {
        const first = newToken();
        await store.create(first, clock.now());
        const second = newToken({ externalId: first.externalId });
        const error = await caught(store.create(second, clock.now()));
        expect(error).toBeInstanceOf(TokenExistsError);
        expectNoCanary(error.message);
        expect((await store.get(first.externalId))?.refreshToken).toBe(first.refreshToken);
      });

      it('refuses a malformed new record naming the field, not the tokens', async () => {
        const bad = newToken({ externalId: 'not-a-uuid', accessTokenExpiresAt: 1.5 });
        const error = await caught(store.create(bad, clock.now()));
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).issues.map((i) => i.path).sort()).toEqual(['accessTokenExpiresAt', 'externalId']);
        expectNoCanary(error.message);
        expect(await store.list({ limit: 10 })).toEqual({ items: [], nextCursor: null });
      });
    });

    describe('leases (single-flight)', () => {
      it('acquireLease returns the record read under the lease, and shuts out other owners', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        const leased = await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        expect(leased).toMatchObject({ externalId, version: 1, leaseOwner: 'worker-a', leaseUntil: clock.now() + MINUTE });
        expect(await store.acquireLease(externalId, 'worker-b', clock.now() + MINUTE, clock.now())).toBeNull();
        // Not re-entrant: a second flight of the same owner is refused too.
        expect(await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now())).toBeNull();
        expect(await store.get(externalId)).toMatchObject({ leaseOwner: 'worker-a', version: 1 });
      });

      it('lets exactly one of two racing owners in', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        const results = await Promise.all(
          ['worker-a', 'worker-b'].map((owner) => store.acquireLease(externalId, owner, clock.now() + MINUTE, clock.now())),
        );
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        expect((await store.get(externalId))?.leaseOwner).toBe(winners[0]!.leaseOwner);
      });

      it('lets exactly one of many concurrent attempts in, per user', async () => {
        const users = await Promise.all([0, 1, 2].map(() => store.create(newToken(), clock.now())));
        const attempts = users.flatMap((u) => Array.from({ length: 12 }, (_, i) => ({ externalId: u.externalId, owner: `worker-${i}` })));
        const results = await Promise.all(
          attempts.map((a) => store.acquireLease(a.externalId, a.owner, clock.now() + MINUTE, clock.now())),
        );
        for (const user of users) {
          const won = results.filter((r) => r?.externalId === user.externalId);
          expect(won).toHaveLength(1);
          expect((await store.get(user.externalId))?.leaseOwner).toBe(won[0]!.leaseOwner);
        }
      });

      it('lets another owner in once the lease time has passed, and not a millisecond before', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        const until = clock.now() + 2 * MINUTE;
        await store.acquireLease(externalId, 'worker-a', until, clock.now());
        clock.set(until - 1);
        expect(await store.acquireLease(externalId, 'worker-b', clock.now() + MINUTE, clock.now())).toBeNull();
        clock.set(until);
        const taken = await store.acquireLease(externalId, 'worker-b', clock.now() + MINUTE, clock.now());
        expect(taken).toMatchObject({ leaseOwner: 'worker-b', leaseUntil: until + MINUTE });
      });

      it('releaseLease frees the record for the next owner, and only the holder can release', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        expect(await store.releaseLease(externalId, 'worker-b')).toBe(false);
        expect((await store.get(externalId))?.leaseOwner).toBe('worker-a');
        expect(await store.releaseLease(externalId, 'worker-a')).toBe(true);
        expect(await store.get(externalId)).toMatchObject({ leaseOwner: null, leaseUntil: null, version: 1 });
        expect(await store.releaseLease(externalId, 'worker-a')).toBe(false);
        expect(await store.acquireLease(externalId, 'worker-b', clock.now() + MINUTE, clock.now())).not.toBeNull();
        expect(await store.releaseLease(randomUUID(), 'worker-b')).toBe(false);
      });

      it('acquireLease on an unknown user is TokenNotFoundError; a lease ending before now is refused', async () => {
        await expect(store.acquireLease(randomUUID(), 'worker-a', clock.now() + MINUTE, clock.now())).rejects.toBeInstanceOf(
          TokenNotFoundError,
        );
        const { externalId } = await store.create(newToken(), clock.now());
        const error = await caught(store.acquireLease(externalId, 'worker-a', clock.now(), clock.now()));
        expect(error).toBeInstanceOf(ValidationError);
        expect(error.message).toContain('leaseUntil: must be after now');
        expect((await store.get(externalId))?.leaseOwner).toBeNull();
      });
    });

    describe('saveTokens (compare-and-swap)', () => {
      it('stores the rotated pair, bumps the version and releases the lease', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        clock.advance(20 * MINUTE);
        const leased = await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const pair = freshPair();
        const saved = await store.saveTokens(externalId, pair, { expectedVersion: leased!.version, owner: 'worker-a', now: clock.now() });
        expect(saved).toMatchObject({
          ...pair,
          refreshedAt: clock.now(),
          updatedAt: clock.now(),
          version: 2,
          leaseOwner: null,
          leaseUntil: null,
          status: 'active',
        });
        expect(await store.get(externalId)).toEqual(saved);
        expect(await store.acquireLease(externalId, 'worker-b', clock.now() + MINUTE, clock.now())).not.toBeNull();
      });

      it('refuses a stale version and writes nothing', async () => {
        const input = newToken();
        await store.create(input, clock.now());
        await store.acquireLease(input.externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const first = await store.saveTokens(input.externalId, freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() });
        await store.acquireLease(input.externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const error = await caught(
          store.saveTokens(input.externalId, freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() }),
        );
        expect(error).toBeInstanceOf(VersionConflictError);
        expect(error).toMatchObject({ reason: 'version_changed', expectedVersion: 1, code: 'version_conflict' });
        expectNoCanary(error.message);
        expect(await store.get(input.externalId)).toMatchObject({ refreshToken: first.refreshToken, version: 2, leaseOwner: 'worker-a' });
      });

      it('refuses a writer whose lease expired and was taken by another owner', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        clock.advance(MINUTE);
        await store.acquireLease(externalId, 'worker-b', clock.now() + MINUTE, clock.now());
        const error = await caught(store.saveTokens(externalId, freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() }));
        expect(error).toMatchObject({ name: 'VersionConflictError', reason: 'lease_not_held' });
        expect(await store.get(externalId)).toMatchObject({ version: 1, leaseOwner: 'worker-b' });
      });

      it('refuses a writer that never took the lease', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        const error = await caught(store.saveTokens(externalId, freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() }));
        expect(error).toMatchObject({ name: 'VersionConflictError', reason: 'lease_not_held' });
        expect((await store.get(externalId))?.version).toBe(1);
      });

      it('accepts the holder after its lease time ran out when nobody else took it: its pair is the newest', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        clock.advance(5 * MINUTE);
        const pair = freshPair();
        const saved = await store.saveTokens(externalId, pair, { expectedVersion: 1, owner: 'worker-a', now: clock.now() });
        expect(saved).toMatchObject({ refreshToken: pair.refreshToken, version: 2, leaseOwner: null });
      });

      it('is TokenNotFoundError for an unknown user, and refuses a malformed pair without echoing it', async () => {
        await expect(
          store.saveTokens(randomUUID(), freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() }),
        ).rejects.toBeInstanceOf(TokenNotFoundError);
        const { externalId } = await store.create(newToken(), clock.now());
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const error = await caught(
          store.saveTokens(externalId, { ...freshPair(), accessToken: '' }, { expectedVersion: 1, owner: 'worker-a', now: clock.now() }),
        );
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).field).toBe('accessToken');
        expectNoCanary(error.message);
        expect((await store.get(externalId))?.version).toBe(1);
      });
    });

    describe('markStatus', () => {
      it('needs_attention counts the failure, records its class and code, releases the lease and leaves the due query', async () => {
        const { externalId } = await store.create(newToken({ accessTokenExpiresAt: clock.now() + 5 * MINUTE }), clock.now());
        expect(await dueIds()).toEqual([externalId]);
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const marked = await store.markStatus(
          externalId,
          { status: 'needs_attention', errorClass: 'AuthenticationError', errorCode: 'user_disabled' },
          { expectedVersion: 1, owner: 'worker-a', now: clock.now() },
        );
        expect(marked).toMatchObject({
          status: 'needs_attention',
          consecutiveFailures: 1,
          lastErrorClass: 'AuthenticationError',
          lastErrorCode: 'user_disabled',
          version: 2,
          leaseOwner: null,
        });
        expect(await store.get(externalId)).toEqual(marked);
        expect((await store.list({ limit: 10 })).items).toEqual([
          expect.objectContaining({ externalId, lastErrorClass: 'AuthenticationError', lastErrorCode: 'user_disabled' }),
        ]);
        expect(await dueIds()).toEqual([]);
        clock.advance(3 * KEEP_ALIVE_MS);
        expect(await dueIds()).toEqual([]);

        // A second failed recovery counts again, and a failure without a code leaves none of the first's.
        await store.acquireLease(externalId, 'runbook', clock.now() + MINUTE, clock.now());
        const again = await store.markStatus(
          externalId,
          { status: 'needs_attention', errorClass: 'NotFoundError' },
          { expectedVersion: 2, owner: 'runbook', now: clock.now() },
        );
        expect(again).toMatchObject({ consecutiveFailures: 2, lastErrorClass: 'NotFoundError', lastErrorCode: null, version: 3 });

        // A successful recovery resets the count, clears the error (it would read as current) and rejoins the schedule.
        await store.acquireLease(externalId, 'runbook', clock.now() + MINUTE, clock.now());
        await store.markStatus(
          externalId,
          { status: 'needs_attention', errorClass: 'InvalidGrantError', errorCode: 'token_not_valid' },
          { expectedVersion: 3, owner: 'runbook', now: clock.now() },
        );
        await store.acquireLease(externalId, 'runbook', clock.now() + MINUTE, clock.now());
        const recovered = await store.saveTokens(externalId, freshPair(clock.now() + 5 * MINUTE), {
          expectedVersion: 4,
          owner: 'runbook',
          now: clock.now(),
        });
        expect(recovered).toMatchObject({
          status: 'active',
          consecutiveFailures: 0,
          lastErrorClass: null,
          lastErrorCode: null,
          version: 5,
        });
        expect(await store.get(externalId)).toEqual(recovered);
        expect((await store.list({ limit: 10 })).items[0]).toMatchObject({ lastErrorClass: null, lastErrorCode: null });
        expect(await dueIds()).toEqual([externalId]);
      });

      it('refuses an error code that is no short identifier, and changes nothing', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        for (const errorCode of ['', 'user disabled', `sbx_${'A1b2C3d4'.repeat(4)}`, 'x'.repeat(65)]) {
          await expect(
            store.markStatus(
              externalId,
              { status: 'needs_attention', errorClass: 'AuthenticationError', errorCode },
              { expectedVersion: 1, owner: 'worker-a', now: clock.now() },
            ),
          ).rejects.toBeInstanceOf(ValidationError);
        }
        expect(await store.get(externalId)).toMatchObject({ status: 'active', version: 1, lastErrorCode: null });
      });

      it('reads an item stored before error codes were (a class, no code) as having no code', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        await harness.corrupt(externalId, 'status', 'needs_attention');
        await harness.corrupt(externalId, 'lastErrorClass', 'AuthenticationError');
        expect(await store.get(externalId)).toMatchObject({ lastErrorClass: 'AuthenticationError', lastErrorCode: null });
        expect((await store.list({ limit: 10 })).items).toEqual([
          expect.objectContaining({ externalId, lastErrorClass: 'AuthenticationError', lastErrorCode: null }),
        ]);
      });

      it('revoked leaves the due query for good, however old the token gets', async () => {
        const a = await store.create(newToken(), clock.now());
        const b = await store.create(newToken(), clock.now());
        await store.acquireLease(a.externalId, 'revoker', clock.now() + MINUTE, clock.now());
        const revoked = await store.markStatus(
          a.externalId,
          { status: 'revoked' },
          { expectedVersion: 1, owner: 'revoker', now: clock.now() },
        );
        expect(revoked).toMatchObject({ status: 'revoked', version: 2, consecutiveFailures: 0, leaseOwner: null });
        clock.advance(2 * KEEP_ALIVE_MS);
        expect(await dueIds()).toEqual([b.externalId]);
        expect(isDue(revoked, clock.now(), MARGIN)).toBe(false);
      });

      it('is a compare-and-swap like saveTokens', async () => {
        const { externalId } = await store.create(newToken(), clock.now());
        await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const stale = await caught(
          store.markStatus(externalId, { status: 'revoked' }, { expectedVersion: 7, owner: 'worker-a', now: clock.now() }),
        );
        expect(stale).toMatchObject({ name: 'VersionConflictError', reason: 'version_changed' });
        const notHolder = await caught(
          store.markStatus(externalId, { status: 'revoked' }, { expectedVersion: 1, owner: 'worker-b', now: clock.now() }),
        );
        expect(notHolder).toMatchObject({ name: 'VersionConflictError', reason: 'lease_not_held' });
        expect(await store.get(externalId)).toMatchObject({ status: 'active', version: 1 });
      });

      it('takes an error class name, not a message that could carry a token', async () => {
        const input = newToken();
        await store.create(input, clock.now());
        await store.acquireLease(input.externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        const error = await caught(
          store.markStatus(
            input.externalId,
            { status: 'needs_attention', errorClass: `refresh failed for ${input.refreshToken}` },
            { expectedVersion: 1, owner: 'worker-a', now: clock.now() },
          ),
        );
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).field).toBe('errorClass');
        expect(error.message).toContain('expected an error class name');
        expectNoCanary(error.message);
        expect((await store.get(input.externalId))?.status).toBe('active');
      });
    });

    describe('queryDue', () => {
      it('finds tokens whose expiry falls within the margin, and those idle for the keep-alive period', async () => {
        const now = clock.now();
        const expiring = await store.create(newToken({ accessTokenExpiresAt: now + 10 * MINUTE }), now);
        const expired = await store.create(newToken({ accessTokenExpiresAt: now - MINUTE }), now);
        const fresh = await store.create(newToken({ accessTokenExpiresAt: now + 29 * MINUTE }), now);
        // A long-lived access token is still refreshed once a day, so that its refresh token stays alive.
        const longLived = await store.create(
          newToken({ accessTokenExpiresAt: now + 7 * KEEP_ALIVE_MS }),
          now - KEEP_ALIVE_MS + 12 * MINUTE,
        );
        const due = await walkDue(now, MARGIN, 100);
        expect(due.flat()).toEqual([
          { externalId: expired.externalId, dueAt: now - MINUTE },
          { externalId: expiring.externalId, dueAt: now + 10 * MINUTE },
          { externalId: longLived.externalId, dueAt: now + 12 * MINUTE },
        ]);
        expect(due.flat().map((d) => d.externalId)).not.toContain(fresh.externalId);
        for (const record of [expiring, expired, longLived]) expect(isDue(record, now, MARGIN)).toBe(true);
        expect(isDue(fresh, now, MARGIN)).toBe(false);
      });

      it('applies a changed margin at once, without rewriting records', async () => {
        const { externalId } = await store.create(newToken({ accessTokenExpiresAt: clock.now() + 18 * MINUTE }), clock.now());
        expect(await dueIds(15 * MINUTE)).toEqual([]);
        expect(await dueIds(20 * MINUTE)).toEqual([externalId]);
      });

      it('drops a refreshed token until it is due again', async () => {
        const { externalId } = await store.create(newToken({ accessTokenExpiresAt: clock.now() + 5 * MINUTE }), clock.now());
        const leased = await store.acquireLease(externalId, 'worker-a', clock.now() + MINUTE, clock.now());
        // A held lease does not hide a record: the worker that loses the race simply skips it.
        expect(await dueIds()).toEqual([externalId]);
        const saved = await store.saveTokens(externalId, freshPair(), {
          expectedVersion: leased!.version,
          owner: 'worker-a',
          now: clock.now(),
        });
        expect(await dueIds()).toEqual([]);
        expect(isDue(saved, clock.now(), MARGIN)).toBe(false);
        clock.advance(ACCESS_LIFETIME - MARGIN);
        expect(await dueIds()).toEqual([externalId]);
      });

      it('pages through many due tokens, most urgent first, each exactly once', async () => {
        const now = clock.now();
        const expected = new Map<string, number>();
        // Offsets repeat, so equal dueAt values straddle page boundaries.
        for (let i = 0; i < 41; i++) {
          const expiresAt = now - 30 * MINUTE + (i % 9) * 3 * MINUTE;
          const record = await store.create(newToken({ accessTokenExpiresAt: expiresAt }), now);
          expected.set(record.externalId, expiresAt);
        }
        for (let i = 0; i < 5; i++) await store.create(newToken({ accessTokenExpiresAt: now + 25 * MINUTE }), now);

        const pages = await walkDue(now, MARGIN, 4);
        const flat = pages.flat();
        for (const page of pages) expect(page.length).toBeLessThanOrEqual(4);
        expect(pages.slice(0, -1).every((page) => page.length === 4)).toBe(true);
        expect(flat).toHaveLength(expected.size);
        expect(new Set(flat.map((d) => d.externalId)).size).toBe(expected.size);
        for (const entry of flat) expect(entry.dueAt).toBe(expected.get(entry.externalId));
        for (let i = 1; i < flat.length; i++) expect(flat[i]!.dueAt).toBeGreaterThanOrEqual(flat[i - 1]!.dueAt);
      });

      it('returns an empty last page with no cursor when nothing is due', async () => {
        await store.create(newToken(), clock.now());
        expect(await store.queryDue({ now: clock.now(), marginMs: MARGIN, limit: 10 })).toEqual({ items: [], nextCursor: null });
      });

      it('refuses a bad limit or a cursor it did not make', async () => {
        const limit = await caught(store.queryDue({ now: clock.now(), marginMs: MARGIN, limit: 0 }));
        expect(limit).toBeInstanceOf(ValidationError);
        expect((limit as ValidationError).field).toBe('limit');
        const cursor = await caught(store.queryDue({ now: clock.now(), marginMs: MARGIN, limit: 5, cursor: 'bm90LWEtY3Vyc29y' }));
        expect(cursor).toBeInstanceOf(ValidationError);
        expect((cursor as ValidationError).field).toBe('cursor');
      });
    });

    describe('list', () => {
      it('pages through every record, without tokens', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 7; i++) ids.add((await store.create(newToken(), clock.now())).externalId);
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page = await store.list({ limit: 3, cursor });
          expect(page.items.length).toBeLessThanOrEqual(3);
          expectNoCanary(JSON.stringify(page));
          for (const item of page.items) {
            expect(item).not.toHaveProperty('accessToken');
            expect(item).not.toHaveProperty('refreshToken');
            expect(item).toMatchObject({ status: 'active', version: 1, username: 'ada' });
          }
          seen.push(...page.items.map((i) => i.externalId));
          cursor = page.nextCursor;
          pages++;
        } while (cursor !== null && pages < 20);
        expect(seen.sort()).toEqual([...ids].sort());
        expect(seen).toHaveLength(7);
      });
    });

    describe('the case of external_id (decision 77)', () => {
      it('stores a new record under the lower-case key and finds it by any case', async () => {
        const upper = randomUUID().toUpperCase();
        const created = await store.create(newToken({ externalId: upper }), clock.now());
        expect(created.externalId).toBe(upper.toLowerCase());
        expect((await store.get(upper))?.externalId).toBe(upper.toLowerCase());
        expect((await store.get(upper.toLowerCase()))?.externalId).toBe(upper.toLowerCase());
        expect((await store.list({ limit: 10 })).items.map((i) => i.externalId)).toEqual([upper.toLowerCase()]);
        const error = await caught(store.create(newToken({ externalId: upper.toLowerCase() }), clock.now()));
        expect(error).toBeInstanceOf(TokenExistsError);
        const leased = await store.acquireLease(upper, 'worker-a', clock.now() + MINUTE, clock.now());
        expect(leased?.leaseOwner).toBe('worker-a');
        const saved = await store.saveTokens(upper, freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() });
        expect(saved).toMatchObject({ externalId: upper.toLowerCase(), version: 2, leaseOwner: null });
      });

      it('finds a record the older code stored in upper case by its lower-case id, and keeps it under its key', async () => {
        const lower = randomUUID();
        const upper = lower.toUpperCase();
        const input = newToken({ externalId: lower, accessTokenExpiresAt: clock.now() + MARGIN / 2 });
        await store.create(input, clock.now());
        await harness.rekey(lower, upper);

        expect(await store.get(lower)).toMatchObject({ externalId: upper, refreshToken: input.refreshToken });
        const error = await caught(store.create(newToken({ externalId: lower }), clock.now()));
        expect(error).toBeInstanceOf(TokenExistsError);

        // The due index hands out the stored key, which finds the record too.
        const due = await store.queryDue({ now: clock.now(), marginMs: MARGIN, limit: 10 });
        expect(due.items.map((d) => d.externalId)).toEqual([upper]);

        const leased = await store.acquireLease(lower, 'worker-a', clock.now() + MINUTE, clock.now());
        expect(leased).toMatchObject({ externalId: upper, leaseOwner: 'worker-a', version: 1 });
        expect(await store.releaseLease(lower, 'worker-a')).toBe(true);
        await store.acquireLease(lower, 'worker-b', clock.now() + MINUTE, clock.now());
        const pair = freshPair();
        const saved = await store.saveTokens(lower, pair, { expectedVersion: 1, owner: 'worker-b', now: clock.now() });
        expect(saved).toMatchObject({ externalId: upper, version: 2, refreshToken: pair.refreshToken, leaseOwner: null });
        await store.acquireLease(due.items[0]!.externalId, 'worker-c', clock.now() + MINUTE, clock.now());
        const revoked = await store.markStatus(lower, { status: 'revoked' }, { expectedVersion: 2, owner: 'worker-c', now: clock.now() });
        expect(revoked).toMatchObject({ externalId: upper, status: 'revoked', version: 3 });
        // Written in place: still one record, under its old key.
        expect((await store.list({ limit: 10 })).items.map((i) => i.externalId)).toEqual([upper]);
      });

      it('an unknown id of either case is still not found', async () => {
        const upper = randomUUID().toUpperCase();
        expect(await store.get(upper)).toBeNull();
        await expect(store.acquireLease(upper, 'worker-a', clock.now() + MINUTE, clock.now())).rejects.toBeInstanceOf(TokenNotFoundError);
        await expect(
          store.saveTokens(upper, freshPair(), { expectedVersion: 1, owner: 'worker-a', now: clock.now() }),
        ).rejects.toBeInstanceOf(TokenNotFoundError);
        expect(await store.releaseLease(upper, 'worker-a')).toBe(false);
      });
    });

    describe('a damaged stored record', () => {
      it('is a ValidationError naming the attribute, never a token', async () => {
        const input = newToken();
        await store.create(input, clock.now());
        await harness.corrupt(input.externalId, 'refreshToken', 12345);
        const error = await caught(store.get(input.externalId));
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).field).toBe('refreshToken');
        expect(error.message).toContain(input.externalId);
        expectNoCanary(error.message);
        expectNoCanary(JSON.stringify((error as ValidationError).issues));
      });

      it('does not echo a token written into the wrong attribute', async () => {
        const input = newToken();
        await store.create(input, clock.now());
        await harness.corrupt(input.externalId, 'status', input.accessToken);
        await harness.corrupt(input.externalId, 'version', input.refreshToken);
        for (const attempt of [
          () => store.get(input.externalId),
          () => store.acquireLease(input.externalId, 'worker-a', clock.now() + MINUTE, clock.now()),
          () => store.list({ limit: 10 }),
        ]) {
          const error = await caught(attempt());
          expect(error).toBeInstanceOf(ValidationError);
          expect((error as ValidationError).issues.map((i) => i.path).sort()).toEqual(['status', 'version']);
          expectNoCanary(error.message);
        }
      });
    });
  });
}
