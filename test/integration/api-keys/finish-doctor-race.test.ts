import { checkKeyRotations, rotationKeyName, runDueRevocations } from '../../../src/core/api-keys';
import { type MoveSecretStageInput, SecretStage } from '../../../src/core/ports/secrets';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import type { AwsSecretStore } from '../../../src/adapters/aws/secrets-manager';
import { GRACE_MS, MINUTE, RotationWorld } from './support';

/**
 * finishSecret against the rotation doctor's repair of a stuck rotation (docs/key-rotation.md,
 * "finishSecret and the doctor"). Secrets Manager retries a failed rotation with the same token,
 * as late as it likes, so a retry's finishSecret can run on a version the doctor already counts as
 * stuck. Each interleaving is forced by a hook on one stage move, never by timing.
 */
describe('finishSecret racing the rotation doctor', () => {
  const HOUR = 60 * MINUTE;
  let world: RotationWorld;

  beforeEach(async () => {
    world = await RotationWorld.start();
    // One good rotation first, its old key revoked: AWSPREVIOUS exists, and nothing else is live.
    await world.startRotation();
    world.clock.advance(GRACE_MS + MINUTE);
    await runDueRevocations({ ...doctorDeps(), queue: world.queue });
  });
  afterEach(async () => {
    const lines = world.logger.lines.join('\n');
    for (const key of world.fullKeys()) expect(lines).not.toContain(key);
    await world.stop();
    forgetRegisteredSecrets();
  });

  function doctorDeps() {
    return {
      store: world.store,
      directory: world.directory,
      scheduler: world.queue,
      clientFor: (key: Parameters<RotationWorld['clientFor']>[0]) => world.clientFor(key),
      events: world.events,
      clock: world.clock,
      logger: world.logger,
      metrics: world.metrics,
    };
  }

  /** The store with `before` run ahead of the first stage move that `matches`. */
  function hooked(
    store: AwsSecretStore,
    matches: (input: MoveSecretStageInput) => boolean,
    before: (move: () => Promise<void>) => Promise<void>,
  ) {
    let fired = false;
    const wrapped: AwsSecretStore = Object.create(store) as AwsSecretStore;
    wrapped.moveStage = async (secretId, input) => {
      if (fired || !matches(input)) return store.moveStage(secretId, input);
      fired = true;
      await before(() => store.moveStage(secretId, input));
    };
    return { store: wrapped, fired: () => fired };
  }

  /** A rotation that stopped after createSecret (a crash, say) and has been stuck for two hours. */
  async function stuckRotation() {
    world.sm.admin.setRotationMode('manual');
    const { versionId } = await world.startRotation();
    await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
    const old = await world.current();
    const replacement = (await world.keys()).find((k) => k.name === rotationKeyName(versionId))!;
    world.clock.advance(2 * HOUR);
    return { versionId, old, replacement };
  }

  /** AWSCURRENT holds a key the service accepts. */
  async function expectCurrentWorks() {
    const current = await world.current();
    expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
    return current;
  }

  it('a repair between the guard and the promotion: the promotion is undone, and the current key keeps working', async () => {
    const { versionId, old, replacement } = await stuckRotation();
    let report: Awaited<ReturnType<typeof checkKeyRotations>> | undefined;
    // Secrets Manager's retry of the stuck rotation; the doctor runs in full after finishSecret's
    // guard and reads, right before it moves AWSCURRENT.
    const race = hooked(
      world.store,
      (input) => input.stage === SecretStage.current,
      async (move) => {
        report = await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS });
        await move();
      },
    );
    world.rotation = world.rotationOver(race.store);
    await world.sm.admin.retryRotation(world.secretArn);
    expect(race.fired()).toBe(true);

    // The doctor did what it always does with a stuck rotation: label removed, its key revoked.
    expect(report!.findings.map((f) => [f.type, f.repaired])).toEqual([
      ['stuck_pending', true],
      ['orphan_key', true],
    ]);
    expect((await world.keys()).find((k) => k.publicId === replacement.publicId)!.revokedAt).not.toBeNull();

    // finishSecret must not leave that revoked key in AWSCURRENT.
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'failed', failedStep: 'finishSecret' });
    const current = await expectCurrentWorks();
    expect(current.versionId).toBe(old.versionId);
    // AWSPREVIOUS is back where it was too.
    expect(world.stages()).toEqual({ [old.versionId]: ['AWSCURRENT'], [world.initialVersionId]: ['AWSPREVIOUS'] });
    expect((await world.liveKeys()).map((k) => k.publicId)).toEqual([old.apiKeyId]);

    // The old key's revocation, scheduled before the promotion, keeps it: it is current again.
    world.clock.advance(GRACE_MS + MINUTE);
    const due = await runDueRevocations({ ...doctorDeps(), queue: world.queue });
    expect(due.outcomes).toEqual([expect.objectContaining({ apiKeyId: old.apiKeyId, outcome: 'kept_current' })]);
    await expectCurrentWorks();
    expect((await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS })).findings).toEqual([]);

    // Nothing blocks the next rotation.
    world.sm.admin.setRotationMode('sync');
    const next = await world.startRotation();
    expect((await expectCurrentWorks()).versionId).toBe(next.versionId);
    expect(versionId).not.toBe(next.versionId);
  });

  it('a repair the doctor decided before the promotion and makes after it: undone as well, never a revoked current key', async () => {
    const { versionId, old, replacement } = await stuckRotation();
    // The doctor lists the versions (the rotation is stuck), then Secrets Manager's retry runs up to
    // the promotion, then the doctor removes the label, then finishSecret tries to.
    let doctorsMove: (() => Promise<void>) | undefined;
    const rotation = hooked(
      world.store,
      (input) => input.stage === SecretStage.pending && input.toVersionId === undefined,
      async (move) => {
        await doctorsMove!();
        await move();
      },
    );
    world.rotation = world.rotationOver(rotation.store);
    const doctor = hooked(
      world.store,
      (input) => input.stage === SecretStage.pending,
      async (move) => {
        doctorsMove = move;
        await world.sm.admin.retryRotation(world.secretArn);
      },
    );
    const report = await checkKeyRotations({ ...doctorDeps(), store: doctor.store }, { graceMs: GRACE_MS });
    expect(rotation.fired()).toBe(true);

    // finishSecret cannot tell this removal from one before its promotion, so it undoes it too.
    expect(report.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', true]]);
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'failed', failedStep: 'finishSecret' });
    expect((await expectCurrentWorks()).versionId).toBe(old.versionId);
    expect(world.stages()).toEqual({ [old.versionId]: ['AWSCURRENT'], [world.initialVersionId]: ['AWSPREVIOUS'] });
    expect((await world.keys()).find((k) => k.publicId === replacement.publicId)!.revokedAt).not.toBeNull();
    expect(world.stages()[versionId]).toBeUndefined();
  });

  it('a finishSecret that removes the label first: the rotation completes, and the late repair finds nothing to do', async () => {
    const { versionId, old } = await stuckRotation();
    // The doctor lists the versions, Secrets Manager's retry runs to its end, then the doctor tries
    // to remove a label that is gone.
    const doctor = hooked(
      world.store,
      (input) => input.stage === SecretStage.pending,
      async (move) => {
        await world.sm.admin.retryRotation(world.secretArn);
        await move();
      },
    );
    const report = await checkKeyRotations({ ...doctorDeps(), store: doctor.store }, { graceMs: GRACE_MS });
    expect(doctor.fired()).toBe(true);

    expect(report.findings).toEqual([]);
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded' });
    const current = await expectCurrentWorks();
    expect(current.versionId).toBe(versionId);
    expect(world.stages()).toEqual({ [versionId]: ['AWSCURRENT'], [old.versionId]: ['AWSPREVIOUS'] });
    expect(await world.statusWith(old.apiKey)).toEqual({ status: 200 }); // its grace period
  });
});
