import { checkKeyRotations, rotationKeyName, runDueRevocations } from '../../../src/core/api-keys';
import { type MoveSecretStageInput, SecretStage, SecretStoreError } from '../../../src/core/ports/secrets';
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

  const doctorDeps = () => world.doctorDeps();

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

    // The doctor did what it always does with a stuck rotation: label removed, its key left to a
    // later run.
    expect(report!.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', true]]);

    // finishSecret sees AWSPENDING gone and undoes its promotion; its rollback revokes the key.
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'failed', failedStep: 'finishSecret' });
    const current = await expectCurrentWorks();
    expect(current.versionId).toBe(old.versionId);
    expect((await world.keys()).find((k) => k.publicId === replacement.publicId)!.revokedAt).not.toBeNull();
    // AWSPREVIOUS is back where it was too.
    expect(world.stages()).toEqual({
      [old.versionId]: ['AWSCURRENT'],
      [world.initialVersionId]: ['AWSPREVIOUS'],
      [versionId]: [expect.stringMatching(/^ACCTOPS_GIVEN_UP_/)],
    });
    expect((await world.liveKeys()).map((k) => k.publicId)).toEqual([old.apiKeyId]);

    // The old key's revocation, scheduled before the promotion, keeps it: it is current again.
    world.clock.advance(GRACE_MS + MINUTE);
    const due = await runDueRevocations({ ...doctorDeps(), queue: world.queue });
    expect(due.outcomes).toEqual([expect.objectContaining({ apiKeyId: old.apiKeyId, outcome: 'kept_current' })]);
    await expectCurrentWorks();
    // Past the window, the doctor takes its label off; the key is revoked already.
    expect((await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS })).findings).toEqual([]);
    expect(world.stages()).toEqual({ [old.versionId]: ['AWSCURRENT'], [world.initialVersionId]: ['AWSPREVIOUS'] });

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
    expect(world.stages()).toEqual({
      [old.versionId]: ['AWSCURRENT'],
      [world.initialVersionId]: ['AWSPREVIOUS'],
      [versionId]: [expect.stringMatching(/^ACCTOPS_GIVEN_UP_/)],
    });
    expect((await world.keys()).find((k) => k.publicId === replacement.publicId)!.revokedAt).not.toBeNull();
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
  it('a finishSecret that stops between its promotion and its read: the doctor revoked nothing, and the next run leaves the promoted key alone', async () => {
    const { versionId, old, replacement } = await stuckRotation();
    let report: Awaited<ReturnType<typeof checkKeyRotations>> | undefined;
    // The doctor runs in full right before finishSecret's promotion; the promotion lands, then the
    // step stops before it reads AWSPENDING again (a Lambda timeout between two calls, or a read
    // Secrets Manager fails: the error below).
    const race = hooked(
      world.store,
      (input) => input.stage === SecretStage.current,
      async (move) => {
        report = await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS });
        await move();
        throw new SecretStoreError('connection lost after UpdateSecretVersionStage', { secretId: world.secretArn, retryable: true });
      },
    );
    world.rotation = world.rotationOver(race.store);
    await world.sm.admin.retryRotation(world.secretArn);
    expect(race.fired()).toBe(true);

    // AWSCURRENT holds the replacement, and it works.
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'failed', failedStep: 'finishSecret' });
    expect((await expectCurrentWorks()).versionId).toBe(versionId);

    // The doctor gave the rotation up and left its key live, saying so; its label is on the version.
    expect(report!.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', true]]);
    expect(report!.findings[0]).toMatchObject({ versionId, apiKeyId: replacement.publicId, keyPrefix: replacement.prefix });
    expect(report!.findings[0]!.detail).toMatch(/is revoked by a run after .*, unless a late finishSecret made it current/);
    expect(world.metrics.sum('UnrepairedRotationFindings')).toBe(0);
    expect(world.stages()).toEqual({
      [versionId]: [expect.stringMatching(/^ACCTOPS_GIVEN_UP_\d{8}T\d{6}Z$/), 'AWSCURRENT'],
      [old.versionId]: ['AWSPREVIOUS'],
    });
    // Secrets Manager's retry stops at the guard: the version is AWSCURRENT.
    await world.sm.admin.retryRotation(world.secretArn);
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded' });

    // An hour later: the old key's scheduled revocation fires (it is AWSPREVIOUS now), and the
    // doctor finds the version AWSCURRENT, takes its label off and revokes nothing.
    world.clock.advance(HOUR);
    const due = await runDueRevocations({ ...doctorDeps(), queue: world.queue });
    expect(due.outcomes).toEqual([expect.objectContaining({ apiKeyId: old.apiKeyId, outcome: 'revoked' })]);
    expect((await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS })).findings).toEqual([]);
    expect((await expectCurrentWorks()).apiKeyId).toBe(replacement.publicId);
    expect(world.stages()).toEqual({ [versionId]: ['AWSCURRENT'], [old.versionId]: ['AWSPREVIOUS'] });
    expect((await world.liveKeys()).map((k) => k.publicId)).toEqual([replacement.publicId]);
  });

  it('a rotation given up for good: its key outlives a run inside the window, and a later run revokes it', async () => {
    const { versionId, old, replacement } = await stuckRotation();
    const first = await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS });
    expect(first.findings.map((f) => [f.type, f.repaired, f.apiKeyId])).toEqual([['stuck_pending', true, replacement.publicId]]);
    expect(
      await world.statusWith((await world.store.readSecret(world.secretArn, { versionId })).value.match(/"apiKey":"([^"]+)"/)![1]!),
    ).toEqual({
      status: 200,
    });

    // A second run inside the window (an operator's `doctor --repair`, a queued check delivered
    // twice) leaves the key alone and reports nothing.
    world.clock.advance(10 * MINUTE);
    expect((await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS })).findings).toEqual([]);
    expect((await world.liveKeys()).map((k) => k.publicId).sort()).toEqual([old.apiKeyId, replacement.publicId].sort());
    // Secrets Manager's retry of the given-up rotation stops at its guard (no AWSPENDING): nothing moves.
    await world.sm.admin.retryRotation(world.secretArn);
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'failed' });
    expect((await world.current()).versionId).toBe(old.versionId);

    // The next hourly run: nothing promoted the version, so its key is an orphan, revoked.
    world.clock.advance(HOUR);
    const next = await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS });
    expect(next.findings.map((f) => [f.type, f.repaired, f.apiKeyId])).toEqual([['orphan_key', true, replacement.publicId]]);
    expect(next.findings[0]!.detail).toMatch(/^key of rotation \S+ \(given up \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\) .*; revoked$/);
    expect(world.metrics.sum('UnrepairedRotationFindings')).toBe(0);
    expect((await world.liveKeys()).map((k) => k.publicId)).toEqual([old.apiKeyId]);
    expect((await expectCurrentWorks()).versionId).toBe(old.versionId);
    expect(world.stages()).toEqual({ [old.versionId]: ['AWSCURRENT'], [world.initialVersionId]: ['AWSPREVIOUS'] });
    expect((await checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS })).findings).toEqual([]);
  });
});
