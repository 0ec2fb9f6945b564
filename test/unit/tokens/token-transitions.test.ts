import fc from 'fast-check';
import { z } from 'zod';
import { ValidationError } from '../../../src/core/shared/errors';
import { KEEP_ALIVE_MS, VersionConflictError, isDue, refreshDeadline, type StoredTokenItem } from '../../../src/core/tokens/token-store';
import { TOKEN_TABLE, dueShardOf } from '../../../src/core/tokens/token-table';
import {
  applyPatch,
  conditionFailure,
  decodeCursor,
  encodeCursor,
  guardedWriteError,
  leasePatch,
  newItem,
  releasePatch,
  statusPatch,
  tokensPatch,
} from '../../../src/core/tokens/token-transitions';
import { toRecord } from '../../../src/core/tokens/token-item';

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 10, 1, 9, 0, 0);
const ID = '6f1c1e1a-8a7e-4d7b-9c55-2b0d5a0c9e11';

function item(overrides: Partial<StoredTokenItem> = {}): StoredTokenItem {
  return {
    ...newItem(
      {
        externalId: ID,
        username: 'ada',
        email: 'ada@example.test',
        accessToken: 'a-token',
        refreshToken: 'r-token',
        accessTokenExpiresAt: NOW + 30 * MINUTE,
      },
      NOW,
    ),
    ...overrides,
  };
}

describe('refresh deadline and isDue', () => {
  it('is the access token expiry, or the keep-alive deadline when that comes first', () => {
    expect(refreshDeadline({ accessTokenExpiresAt: NOW + 30 * MINUTE, refreshedAt: NOW })).toBe(NOW + 30 * MINUTE);
    expect(refreshDeadline({ accessTokenExpiresAt: NOW + 3 * KEEP_ALIVE_MS, refreshedAt: NOW })).toBe(NOW + KEEP_ALIVE_MS);
  });

  it('is due from deadline minus margin on, and only while active', () => {
    const token = { status: 'active' as const, accessTokenExpiresAt: NOW + 30 * MINUTE, refreshedAt: NOW };
    expect(isDue(token, NOW + 15 * MINUTE - 1, 15 * MINUTE)).toBe(false);
    expect(isDue(token, NOW + 15 * MINUTE, 15 * MINUTE)).toBe(true);
    expect(isDue({ ...token, status: 'needs_attention' }, NOW + 60 * MINUTE, 15 * MINUTE)).toBe(false);
    expect(isDue({ ...token, status: 'revoked' }, NOW + 60 * MINUTE, 15 * MINUTE)).toBe(false);
  });

  it('agrees with the stored dueAt that the index serves, after any write', () => {
    const epoch = fc.integer({ min: NOW - 2 * KEEP_ALIVE_MS, max: NOW + 2 * KEEP_ALIVE_MS });
    fc.assert(
      fc.property(
        epoch,
        epoch,
        epoch,
        fc.integer({ min: 0, max: 2 * KEEP_ALIVE_MS }),
        fc.boolean(),
        (expiry, writtenAt, now, margin, viaSave) => {
          const created = newItem(
            { externalId: ID, username: 'u', email: 'e', accessToken: 'a', refreshToken: 'r', accessTokenExpiresAt: expiry },
            writtenAt,
          );
          const stored = viaSave
            ? applyPatch(created, tokensPatch({ accessToken: 'a2', refreshToken: 'r2', accessTokenExpiresAt: expiry }, writtenAt))
            : created;
          const inIndex = stored.dueAt !== undefined && stored.dueAt <= now + margin;
          expect(isDue(toRecord(stored), now, margin)).toBe(inIndex);
        },
      ),
    );
  });
});

describe('patches', () => {
  it('a status change leaves the due index and ends the lease; needs_attention counts the failure', () => {
    const leased = applyPatch(item(), leasePatch('worker-a', NOW + MINUTE, NOW));
    expect(leased).toMatchObject({ leaseOwner: 'worker-a', leaseUntil: NOW + MINUTE, version: 1 });
    const failed = applyPatch(leased, statusPatch({ status: 'needs_attention', errorClass: 'InvalidGrantError' }, NOW + 1));
    expect(failed).toMatchObject({
      status: 'needs_attention',
      consecutiveFailures: 1,
      lastErrorClass: 'InvalidGrantError',
      version: 2,
      updatedAt: NOW + 1,
    });
    for (const gone of ['dueAt', 'leaseOwner', 'leaseUntil']) expect(failed).not.toHaveProperty(gone);
    const revoked = applyPatch(failed, statusPatch({ status: 'revoked' }, NOW + 2));
    expect(revoked).toMatchObject({ status: 'revoked', consecutiveFailures: 1, version: 3 });
  });

  it('needs_attention records the code when there is one, and removes an earlier one when there is not', () => {
    const coded = applyPatch(
      item(),
      statusPatch({ status: 'needs_attention', errorClass: 'AuthenticationError', errorCode: 'user_disabled' }, NOW),
    );
    expect(coded).toMatchObject({ lastErrorClass: 'AuthenticationError', lastErrorCode: 'user_disabled' });
    const uncoded = applyPatch(coded, statusPatch({ status: 'needs_attention', errorClass: 'TimeoutError' }, NOW + 1));
    expect(uncoded).toMatchObject({ lastErrorClass: 'TimeoutError' });
    expect(uncoded).not.toHaveProperty('lastErrorCode');
    expect(() => statusPatch({ status: 'needs_attention', errorClass: 'AuthenticationError', errorCode: 'not a code' }, NOW)).toThrow(
      /errorCode/,
    );
  });

  it('saving a pair rejoins the index, resets the failure count and clears the last error class and code', () => {
    const failed = applyPatch(
      item(),
      statusPatch({ status: 'needs_attention', errorClass: 'InvalidGrantError', errorCode: 'token_not_valid' }, NOW),
    );
    const saved = applyPatch(
      failed,
      tokensPatch({ accessToken: 'a2', refreshToken: 'r2', accessTokenExpiresAt: NOW + 90 * MINUTE }, NOW + 60 * MINUTE),
    );
    expect(saved).toMatchObject({
      status: 'active',
      consecutiveFailures: 0,
      dueAt: NOW + 90 * MINUTE,
      refreshedAt: NOW + 60 * MINUTE,
      version: 3,
    });
    for (const gone of ['lastErrorClass', 'lastErrorCode']) expect(saved).not.toHaveProperty(gone);
  });

  it('release removes only the lease', () => {
    const leased = applyPatch(item(), leasePatch('worker-a', NOW + MINUTE, NOW));
    expect(applyPatch(leased, releasePatch)).toEqual(item());
  });
});

describe('conditionFailure', () => {
  const leased = { ...item(), leaseOwner: 'worker-a', leaseUntil: NOW + MINUTE };
  it.each([
    ['absent on a record', item(), { kind: 'absent' } as const, 'exists'],
    ['absent on nothing', null, { kind: 'absent' } as const, null],
    ['lease_free on nothing', null, { kind: 'lease_free', now: NOW } as const, 'not_found'],
    ['lease_free on a live lease', leased, { kind: 'lease_free', now: NOW + MINUTE - 1 } as const, 'lease_held'],
    ['lease_free at the lease end', leased, { kind: 'lease_free', now: NOW + MINUTE } as const, null],
    ['lease_holder, other owner', leased, { kind: 'lease_holder', owner: 'worker-b' } as const, 'lease_not_held'],
    ['holder_at_version, stale', leased, { kind: 'holder_at_version', owner: 'worker-a', version: 2 } as const, 'version_changed'],
    ['holder_at_version, other owner', leased, { kind: 'holder_at_version', owner: 'worker-b', version: 1 } as const, 'lease_not_held'],
    ['holder_at_version, expired but still ours', leased, { kind: 'holder_at_version', owner: 'worker-a', version: 1 } as const, null],
  ])('%s', (_name, current, condition, expected) => {
    expect(conditionFailure(current, condition)).toBe(expected);
  });

  it('a failure that explains itself away is reported as a version change', () => {
    const error = guardedWriteError(ID, null, 4);
    expect(error).toBeInstanceOf(VersionConflictError);
    expect(error).toMatchObject({ reason: 'version_changed', expectedVersion: 4, externalId: ID });
  });
});

describe('cursors', () => {
  const schema = z.object({ after: z.string() });
  it('round-trip, and a foreign or damaged cursor is a ValidationError on `cursor`', () => {
    expect(decodeCursor(schema, encodeCursor({ after: 'x' }))).toEqual({ after: 'x' });
    for (const bad of ['%%%', encodeCursor({ before: 1 }), 'e30']) {
      let error: unknown;
      try {
        decodeCursor(schema, bad);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe('cursor');
    }
  });
});

describe('dueShardOf', () => {
  it('is stable and spreads keys evenly over every shard', () => {
    expect(dueShardOf(ID)).toBe(dueShardOf(ID));
    const counts = new Array<number>(TOKEN_TABLE.dueShardCount).fill(0);
    for (let i = 0; i < 16_000; i++) counts[dueShardOf(crypto.randomUUID())]! += 1;
    // 1,000 expected per shard; a hot shard would be far outside this band.
    for (const count of counts) expect(count).toBeGreaterThan(800);
    for (const count of counts) expect(count).toBeLessThan(1200);
  });
});
