import type { SecretStore, SecretValue, SecretVersionSelector } from '../../../src/core/ports/secrets';
import { SecretStoreError } from '../../../src/core/ports/secrets';
import { CachedSecret } from '../../../src/core/shared/cached-secret';
import { ManualClock } from '../../../src/core/shared/clock';
import { ValidationError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { canarySecret } from '../../helpers/canary';

const CANARY = canarySecret('cached-secret-value');

/** A store that counts reads and can hold them back, so concurrency is explicit rather than timed. */
class FakeStore implements Pick<SecretStore, 'readSecret'> {
  reads = 0;
  selectors: (SecretVersionSelector | undefined)[] = [];
  version = { id: 'v1', value: CANARY };
  failure?: Error;
  private gate?: Promise<void>;
  private open?: () => void;

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  release(): void {
    this.open?.();
    this.gate = undefined;
  }
  change(id: string, value: string): void {
    this.version = { id, value };
  }

  async readSecret(secretId: string, selector?: SecretVersionSelector): Promise<SecretValue> {
    this.reads += 1;
    this.selectors.push(selector);
    if (this.gate) await this.gate;
    if (this.failure) throw this.failure;
    return { secretArn: `arn:${secretId}`, name: secretId, versionId: this.version.id, value: this.version.value, stages: ['AWSCURRENT'] };
  }
}

describe('CachedSecret', () => {
  let clock: ManualClock;
  let store: FakeStore;
  let logger: MemoryLogger;
  const make = (options: { ttlMs?: number; authRefreshCooldownMs?: number } = {}) =>
    new CachedSecret(store, 'acctops/test', { parse: (raw) => ({ raw }), clock, logger, ...options });

  beforeEach(() => {
    clock = new ManualClock();
    store = new FakeStore();
    logger = new MemoryLogger();
  });

  it('serves reads from memory for the TTL and reads again after it', async () => {
    const secret = make({ ttlMs: 60_000 });
    expect(await secret.get()).toEqual({ raw: CANARY });
    clock.advance(59_999);
    await secret.get();
    expect(store.reads).toBe(1);
    store.change('v2', 'second');
    clock.advance(1);
    expect(await secret.get()).toEqual({ raw: 'second' });
    expect(store.reads).toBe(2);
  });

  it('shares one read among concurrent callers', async () => {
    const secret = make();
    store.hold();
    const all = Promise.all(Array.from({ length: 20 }, () => secret.get()));
    store.release();
    expect(new Set((await all).map((v) => v.raw))).toEqual(new Set([CANARY]));
    expect(store.reads).toBe(1);
  });

  it('reads again after invalidate()', async () => {
    const secret = make();
    await secret.get();
    secret.invalidate();
    await secret.get();
    expect(store.reads).toBe(2);
  });

  it('passes the selector to the store (default: current)', async () => {
    await make().get();
    await new CachedSecret(store, 'acctops/test', { parse: String, selector: { stage: 'AWSPENDING' } }).get();
    expect(store.selectors).toEqual([undefined, { stage: 'AWSPENDING' }]);
  });

  it('after an authentication error, reads once and says whether the secret changed', async () => {
    const secret = make();
    await secret.get();
    store.change('v2', 'rotated');
    // Within the TTL the cache still serves the old value: the refusal is what reveals the change.
    expect(await secret.get()).toEqual({ raw: CANARY });
    expect(await secret.refreshAfterAuthError()).toBe(true);
    expect(await secret.get()).toEqual({ raw: 'rotated' });
    expect(store.reads).toBe(2);
  });

  it('says false when the secret did not change, so the caller raises the error', async () => {
    const secret = make();
    await secret.get();
    expect(await secret.refreshAfterAuthError()).toBe(false);
    expect(store.reads).toBe(2);
  });

  it('a burst of authentication errors costs one read per cooldown window', async () => {
    const secret = make({ authRefreshCooldownMs: 30_000 });
    await secret.get();
    store.change('v2', 'rotated');
    store.hold();
    const burst = Promise.all(Array.from({ length: 50 }, () => secret.refreshAfterAuthError()));
    store.release();
    // Every request that failed with the old value may retry once with the new one.
    expect(await burst).toEqual(Array.from({ length: 50 }, () => true));
    expect(store.reads).toBe(2);

    // A wrong secret keeps failing: still no more reads until the window has passed.
    clock.advance(29_999);
    await secret.refreshAfterAuthError();
    expect(store.reads).toBe(2);
    clock.advance(1);
    expect(await secret.refreshAfterAuthError()).toBe(false);
    expect(store.reads).toBe(3);
  });

  it('a store failure during the refresh resolves false and keeps serving the cached value', async () => {
    const secret = make({ ttlMs: 60_000 });
    await secret.get();
    store.failure = new SecretStoreError('Secrets Manager GetSecretValue failed for acctops/test: ThrottlingException', {
      secretId: 'acctops/test',
      retryable: true,
    });
    expect(await secret.refreshAfterAuthError()).toBe(false);
    expect(await secret.get()).toEqual({ raw: CANARY });
    expect(store.reads).toBe(2);
    expect(logger.entries().map((e) => e.message)).toContain('secret re-read after an authentication error failed');
    expect(logger.lines.join('\n')).not.toContain(CANARY);
  });

  it('a parse error reaches the caller and nothing is cached', async () => {
    const secret = new CachedSecret(store, 'acctops/test', {
      clock,
      parse: () => {
        throw new ValidationError('test secret', [{ path: 'secretKey', message: 'expected string' }]);
      },
    });
    await expect(secret.get()).rejects.toBeInstanceOf(ValidationError);
    await expect(secret.get()).rejects.toBeInstanceOf(ValidationError);
    expect(store.reads).toBe(2);
  });
});
