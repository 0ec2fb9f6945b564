import { keyStatus, revokePendingKeys, type Revocation, type RevokeNowDeps } from '../../../src/core/api-keys';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { MINUTE, RotationWorld } from './support';

/**
 * `revokePendingKeys` (keys revoke-pending, keys rotate --revoke-previous-now) against the sandbox
 * and the Secrets Manager emulator: two rotations leave two old keys pending, as a plain `keys
 * rotate` before the leaked-key procedure does.
 */
describe('revokePendingKeys: every old key of the company pending revocation, revoked now', () => {
  let world: RotationWorld;
  let done: string[];

  beforeEach(async () => {
    world = await RotationWorld.start();
    done = [];
  });
  afterEach(async () => {
    const lines = world.logger.lines.join('\n');
    for (const key of world.fullKeys()) expect(lines).not.toContain(key);
    await world.stop();
    forgetRegisteredSecrets();
  });

  /** A scheduler that lists what the world's queue holds, as the stack's schedule group (AWS: nothing is taken off it). */
  const deps = (options: { done?: boolean } = {}): RevokeNowDeps => ({
    store: world.store,
    clientFor: (key) => world.clientFor(key),
    clock: world.clock,
    logger: world.logger,
    metrics: world.metrics,
    scheduler: world.queue,
    ...(options.done === false
      ? {}
      : {
          done: async (apiKeyId: string) => {
            done.push(apiKeyId);
            await world.queue.complete(apiKeyId);
          },
        }),
  });

  /** Two rotations: the leaked (initial) key and the one the first rotation made are both pending. */
  async function twoRotations(): Promise<{ leaked: Revocation; innocent: Revocation }> {
    await world.startRotation();
    world.clock.advance(MINUTE);
    await world.startRotation();
    const pending = await world.queue.due(Number.MAX_SAFE_INTEGER);
    expect(pending).toHaveLength(2);
    const leaked = pending.find((r) => r.apiKeyId === world.initialKey.apiKeyId)!;
    return { leaked, innocent: pending.find((r) => r !== leaked)! };
  }

  it('deletes the schedule of each pending key it revoked (cancel, AWS mode); a cancel that fails leaves the key revoked with its scheduleError, never failed', async () => {
    const { leaked, innocent } = await twoRotations();
    const cancelled: string[] = [];
    const refused = new Error('EventBridge Scheduler DeleteSchedule failed for revoke-x: AccessDeniedException: not allowed');
    const result = await revokePendingKeys(
      {
        ...deps({ done: false }),
        cancel: async (apiKeyId) => {
          cancelled.push(apiKeyId);
          if (apiKeyId === innocent.apiKeyId) throw refused;
        },
      },
      { secretId: world.secretArn, companyId: world.companyId },
    );
    expect(result.keys).toEqual([
      { apiKeyId: leaked.apiKeyId, keyPrefix: leaked.keyPrefix, outcome: 'revoked', error: null, scheduleError: null },
      { apiKeyId: innocent.apiKeyId, keyPrefix: innocent.keyPrefix, outcome: 'revoked', error: null, scheduleError: refused },
    ]);
    expect(cancelled).toEqual([leaked.apiKeyId, innocent.apiKeyId]);
    expect(await world.statusWith(world.initialKey.apiKey)).toMatchObject({ status: 401 });
    expect((await world.liveKeys()).map((k) => k.publicId)).not.toContain(innocent.apiKeyId);
    // A prefix no pending revocation has (the key list answers): no schedule was found, so none is deleted.
    await world.queue.complete(leaked.apiKeyId);
    const again = await revokePendingKeys(
      {
        ...deps({ done: false }),
        scheduler: { pending: async function* () {} },
        cancel: async (apiKeyId) => void cancelled.push(apiKeyId),
      },
      { secretId: world.secretArn, companyId: world.companyId, prefix: leaked.keyPrefix },
    );
    expect(again.keys).toEqual([
      { apiKeyId: leaked.apiKeyId, keyPrefix: leaked.keyPrefix, outcome: 'already_revoked', error: null, scheduleError: null },
    ]);
    expect(cancelled).toEqual([leaked.apiKeyId, innocent.apiKeyId]);
  });

  it('revokes each pending old key, oldest first, skips what the caller revoked, and takes each off the queue', async () => {
    const { leaked, innocent } = await twoRotations();
    const result = await revokePendingKeys(deps(), { secretId: world.secretArn, companyId: world.companyId, skip: [innocent.apiKeyId] });
    expect(result).toEqual({
      keys: [{ apiKeyId: leaked.apiKeyId, keyPrefix: leaked.keyPrefix, outcome: 'revoked', error: null, scheduleError: null }],
      unmatched: false,
    });
    expect(done).toEqual([leaked.apiKeyId]);
    expect(await world.statusWith(world.initialKey.apiKey)).toMatchObject({ status: 401 });
    // The skipped key is the caller's: untouched and still queued.
    const live = (await world.liveKeys()).map((k) => k.publicId);
    expect(live).toContain(innocent.apiKeyId);
    expect((await world.queue.due(Number.MAX_SAFE_INTEGER)).map((r) => r.apiKeyId)).toEqual([innocent.apiKeyId]);
    // The current key is never among them.
    expect(live).toContain((await world.current()).apiKeyId);
  });

  it('a key the service lists as revoked is already_revoked, asked nothing; with the schedule left (AWS), a repeat says so again', async () => {
    const { leaked, innocent } = await twoRotations();
    await world.sandbox.admin.revokeApiKey({ publicId: leaked.apiKeyId });
    const first = await revokePendingKeys(deps({ done: false }), { secretId: world.secretArn, companyId: world.companyId });
    expect(first.keys.map((k) => [k.keyPrefix, k.outcome])).toEqual([
      [leaked.keyPrefix, 'already_revoked'],
      [innocent.keyPrefix, 'revoked'],
    ]);
    const again = await revokePendingKeys(deps({ done: false }), { secretId: world.secretArn, companyId: world.companyId });
    expect(again.keys.map((k) => k.outcome)).toEqual(['already_revoked', 'already_revoked']);
    expect(world.metrics.sum('KeysRevoked')).toBe(1);
    // keys status tells such a key from a valid one while its schedule waits.
    const [row] = await keyStatus({
      store: world.store,
      directory: world.directory,
      scheduler: world.queue,
      clientFor: (key) => world.clientFor(key),
      clock: world.clock,
    });
    expect(row!.pendingRevocations.map((r) => [r.keyPrefix, r.revokedAt === null])).toEqual([
      [leaked.keyPrefix, false],
      [innocent.keyPrefix, false],
    ]);
  });

  it('a prefix whose revocation was carried out is already_revoked from the key list; an unknown or live prefix is unmatched', async () => {
    const { leaked } = await twoRotations();
    const once = await revokePendingKeys(deps(), { secretId: world.secretArn, companyId: world.companyId, prefix: leaked.keyPrefix });
    expect(once.keys).toEqual([
      { apiKeyId: leaked.apiKeyId, keyPrefix: leaked.keyPrefix, outcome: 'revoked', error: null, scheduleError: null },
    ]);
    // Off the queue now: found among the company's keys the service lists, revoked.
    const twice = await revokePendingKeys(deps(), { secretId: world.secretArn, companyId: world.companyId, prefix: leaked.keyPrefix });
    expect(twice).toEqual({
      keys: [{ apiKeyId: leaked.apiKeyId, keyPrefix: leaked.keyPrefix, outcome: 'already_revoked', error: null, scheduleError: null }],
      unmatched: false,
    });
    const current = await world.current();
    for (const prefix of ['sbx_zzzzzzzz', current.keyPrefix]) {
      await expect(revokePendingKeys(deps(), { secretId: world.secretArn, companyId: world.companyId, prefix })).resolves.toEqual({
        keys: [],
        unmatched: true,
      });
    }
    expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
  });

  it('a failure of one key is its row, and the others are still revoked; the failed one stays queued', async () => {
    const { leaked, innocent } = await twoRotations();
    await world.sandbox.admin.faults.add({
      route: 'DELETE /api-keys/{publicId}/',
      times: 1,
      fault: { type: 'status', status: 503 },
    });
    const result = await revokePendingKeys(deps(), { secretId: world.secretArn, companyId: world.companyId });
    expect(result.keys.map((k) => [k.keyPrefix, k.outcome])).toEqual([
      [leaked.keyPrefix, 'failed'],
      [innocent.keyPrefix, 'revoked'],
    ]);
    expect(result.keys[0]!.error).toBeInstanceOf(Error);
    expect((await world.queue.due(Number.MAX_SAFE_INTEGER)).map((r) => r.apiKeyId)).toEqual([leaked.apiKeyId]);
    expect(await world.statusWith(world.initialKey.apiKey)).toEqual({ status: 200 });
  });
});
