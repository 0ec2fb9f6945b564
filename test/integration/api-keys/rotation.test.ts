import { CreateSecretCommand, DescribeSecretCommand, RotateSecretCommand } from '@aws-sdk/client-secrets-manager';
import {
  COMPANY_KEY_TAGS,
  PURPOSE_COMPANY_KEY,
  revokeApiKey,
  runDueRevocations,
  rotationKeyName,
  serializeCompanyKeySecret,
  type RevokeDeps,
} from '../../../src/core/api-keys';
import { SecretStage } from '../../../src/core/ports/secrets';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { client } from '../../helpers/secrets-manager';
import { GRACE_MS, MINUTE, ROTATION_LAMBDA, RotationWorld } from './support';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  /**
   * The rotation protocol end to end: the emulator invokes our handler exactly as Secrets Manager
   * invokes the Lambda, the handler talks to the sandbox over HTTP, and time is a manual clock.
   */
  describe('API key rotation through Secrets Manager', () => {
    let world: RotationWorld;

    beforeEach(async () => {
      world = await RotationWorld.start(undefined, dialect);
    });
    afterEach(async () => {
      // The canary scan of docs/security.md: no full key in any log line, ever.
      const lines = world.logger.lines.join('\n');
      for (const key of world.fullKeys()) expect(lines).not.toContain(key);
      await world.stop();
      forgetRegisteredSecrets();
    });

    const revokeDeps = (): RevokeDeps => ({
      store: world.store,
      clientFor: (key) => world.clientFor(key),
      clock: world.clock,
      logger: world.logger,
      metrics: world.metrics,
    });

    /** Exactly one key created for the rotation `token`; it is the secret's AWSCURRENT key. */
    async function expectOneReplacement(token: string) {
      const made = (await world.keys()).filter((k) => k.name === rotationKeyName(token));
      expect(made).toHaveLength(1);
      const current = await world.current();
      expect(current.apiKeyId).toBe(made[0]!.publicId);
      expect(current.versionId).toBe(token);
      expect(world.stages()).toEqual({ [token]: ['AWSCURRENT'], [world.initialVersionId]: ['AWSPREVIOUS'] });
      return current;
    }

    it('rotates: the new key works at once, the old one through the grace period, and is refused after it', async () => {
      const old = world.initialKey;
      const { versionId } = await world.startRotation();
      expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded' });

      const current = await expectOneReplacement(versionId);
      expect(current.apiKey).not.toBe(old.apiKey);
      expect(current.keyPrefix).toBe(current.apiKey.slice(0, 12));
      expect(current.permissions.sort()).toEqual([...old.permissions].sort());
      expect(current.companyId).toBe(world.companyId);
      expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });

      // The old key's revocation waits in the queue for the end of the grace period.
      const [queued, ...more] = await world.queue.due(Number.MAX_SAFE_INTEGER);
      expect(more).toEqual([]);
      expect(queued).toMatchObject({
        apiKeyId: old.apiKeyId,
        keyPrefix: old.keyPrefix,
        revokeAt: world.clock.now() + GRACE_MS,
        rotationToken: versionId,
      });

      world.clock.advance(GRACE_MS - MINUTE);
      expect((await runDueRevocations({ ...revokeDeps(), queue: world.queue })).outcomes).toEqual([]);
      expect(await world.statusWith(old.apiKey)).toEqual({ status: 200 });

      world.clock.advance(MINUTE);
      const run = await runDueRevocations({ ...revokeDeps(), queue: world.queue });
      expect(run.outcomes).toEqual([{ apiKeyId: old.apiKeyId, keyPrefix: old.keyPrefix, outcome: 'revoked' }]);
      expect(await world.statusWith(old.apiKey)).toEqual({ status: 401, code: dialect === 'default' ? 'key_revoked' : undefined });
      expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
      expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toEqual([]);

      // Only prefixes were logged.
      expect(world.logger.lines.some((l) => l.includes(current.keyPrefix))).toBe(true);
      // Every step's line names the secret and the version (not a secret, and not redacted as one: decision 77).
      const steps = world.logger.entries().filter((e) => typeof e.step === 'string');
      expect(steps.map((e) => e.step)).toEqual(expect.arrayContaining(['createSecret', 'setSecret', 'testSecret', 'finishSecret']));
      for (const entry of steps) {
        expect(entry).toMatchObject({ secretId: world.secretArn, versionId });
        expect(entry).not.toHaveProperty('token');
      }
      expect(world.metrics.sum('RotationsCompleted')).toBe(1);
      expect(world.metrics.sum('KeysRevoked')).toBe(1);
    });

    it('revokes idempotently: a second run of the same revocation, and a key already gone, are fine', async () => {
      const old = world.initialKey;
      await world.startRotation();
      const [revocation] = await world.queue.due(Number.MAX_SAFE_INTEGER);
      world.clock.advance(GRACE_MS);
      await expect(revokeApiKey(revokeDeps(), revocation!)).resolves.toBe('revoked');
      await expect(revokeApiKey(revokeDeps(), revocation!)).resolves.toBe('revoked');
      await expect(revokeApiKey(revokeDeps(), { ...revocation!, apiKeyId: '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d' })).resolves.toBe(
        'already_gone',
      );
      expect(await world.statusWith(old.apiKey)).toMatchObject({ status: 401 });
    });

    it('reads 410 Gone on a revoke as already revoked (done, off the queue); another refusal keeps it queued with its reason', async () => {
      await world.startRotation();
      world.clock.advance(GRACE_MS);
      await world.sandbox.admin.faults.add({
        route: 'DELETE /api-keys/{publicId}/',
        times: 1,
        fault: { type: 'status', status: 503 },
      });
      const failed = await runDueRevocations({ ...revokeDeps(), queue: world.queue });
      expect(failed.outcomes).toEqual([]);
      expect(failed.failed).toHaveLength(1);
      expect(String(failed.failed[0]!.error)).toMatch(/503/);
      expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toHaveLength(1);

      await world.sandbox.admin.faults.add({
        route: 'DELETE /api-keys/{publicId}/',
        times: 1,
        fault: { type: 'status', status: 410, json: { detail: 'This key was revoked already.' } },
      });
      const gone = await runDueRevocations({ ...revokeDeps(), queue: world.queue });
      expect(gone.outcomes).toEqual([expect.objectContaining({ outcome: 'already_gone' })]);
      expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toEqual([]);
    });

    it('never revokes the current key, even when a revocation for it comes due', async () => {
      const current = await world.current();
      const outcome = await revokeApiKey(revokeDeps(), {
        secretId: world.secretArn,
        companyId: world.companyId,
        apiKeyId: current.apiKeyId,
        keyPrefix: current.keyPrefix,
        revokeAt: 0,
        rotationToken: 'x'.repeat(36),
      });
      expect(outcome).toBe('kept_current');
      expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
    });

    describe('every step can run again', () => {
      beforeEach(() => world.sm.admin.setRotationMode('manual'));

      it('twice in a row: one new key, consistent stages, one revocation', async () => {
        const { versionId } = await world.startRotation();
        for (const step of ['createSecret', 'setSecret', 'testSecret', 'finishSecret'] as const) {
          await world.sm.admin.runRotationStep(world.secretArn, step);
          await world.sm.admin.runRotationStep(world.secretArn, step);
        }
        await expectOneReplacement(versionId);
        expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toHaveLength(1);
        expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded' });
      });

      it.each([
        ['createSecret', ['createSecret']],
        ['setSecret', ['createSecret', 'setSecret']],
        ['testSecret', ['createSecret', 'setSecret', 'testSecret']],
      ] as const)(
        "after a crash following %s, Secrets Manager's retry (all four steps, same token) finishes with one new key",
        async (_label, ran) => {
          const { versionId } = await world.startRotation();
          for (const step of ran) await world.sm.admin.runRotationStep(world.secretArn, step);
          // The function died here; AWS retries the rotation from createSecret with the same token.
          const retried = await world.sm.admin.retryRotation(world.secretArn);
          expect(retried.status).toBe('succeeded');
          await expectOneReplacement(versionId);
          expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toHaveLength(1);
        },
      );

      it('after a crash inside finishSecret (promoted, AWSPENDING not yet removed), a re-run returns at once', async () => {
        const { versionId } = await world.startRotation();
        for (const step of ['createSecret', 'setSecret', 'testSecret'] as const)
          await world.sm.admin.runRotationStep(world.secretArn, step);
        const before = await world.current();
        // The first half of finishSecret, done by hand: AWSCURRENT moved, AWSPENDING left behind.
        await world.store.moveStage(world.secretArn, {
          stage: SecretStage.current,
          toVersionId: versionId,
          fromVersionId: before.versionId,
        });
        await expect(
          world.rotation.runStep({ SecretId: world.secretArn, ClientRequestToken: versionId, Step: 'finishSecret' }),
        ).resolves.toBe('already_current');
        expect((await world.current()).versionId).toBe(versionId);
      });
    });

    it('passes the configuration test of RotateImmediately=false (a deploy) without creating a key', async () => {
      await client(world.sm).send(
        new RotateSecretCommand({
          SecretId: world.secretArn,
          RotationLambdaARN: ROTATION_LAMBDA,
          RotationRules: { AutomaticallyAfterDays: 30 },
          RotateImmediately: false,
        }),
      );
      expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ kind: 'configuration-test', status: 'succeeded' });
      expect(await world.keys()).toHaveLength(1);
      expect(world.stages()).toEqual({ [world.initialVersionId]: ['AWSCURRENT'] });
    });

    describe('guards of the AWS template', () => {
      it('refuses a token that is not a version, a version that is not AWSPENDING, and a secret without rotation', async () => {
        const secretId = world.secretArn;
        const current = await world.current();
        await expect(
          world.rotation.runStep({ SecretId: secretId, ClientRequestToken: 'f'.repeat(36), Step: 'createSecret' }),
        ).rejects.toMatchObject({
          code: 'rotation_not_enabled',
        });
        await world.startRotation();
        await expect(
          world.rotation.runStep({ SecretId: secretId, ClientRequestToken: 'f'.repeat(36), Step: 'createSecret' }),
        ).rejects.toMatchObject({
          code: 'version_not_found',
        });
        const previous = Object.entries(world.stages()).find(([, s]) => s.includes('AWSPREVIOUS'))![0];
        expect(previous).toBe(current.versionId);
        await expect(world.rotation.runStep({ SecretId: secretId, ClientRequestToken: previous, Step: 'setSecret' })).rejects.toMatchObject(
          {
            code: 'version_not_pending',
          },
        );
        // A guard refusal touches nothing: no key revoked, no label moved.
        expect(await world.liveKeys()).toHaveLength(2);
      });
    });

    describe('failures leave AWSCURRENT working and nothing behind', () => {
      beforeEach(() => world.sm.admin.setRotationMode('manual'));

      async function expectRolledBack(token: string) {
        const current = await world.current();
        expect(current.apiKeyId).toBe(world.initialKey.apiKeyId);
        expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
        const made = (await world.keys()).filter((k) => k.name === rotationKeyName(token));
        for (const key of made) expect(key.revokedAt).not.toBeNull();
        expect(await world.liveKeys()).toEqual([expect.objectContaining({ publicId: world.initialKey.apiKeyId })]);
        expect(Object.values(world.stages()).flat()).not.toContain('AWSPENDING');
        expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toEqual([]);
        return made;
      }

      /** A secret named and tagged for the other company, holding `value`, with a rotation started (AWSPENDING, no value). */
      async function otherCompanySecret(value: string) {
        const other = world.otherCompanyId.toLowerCase();
        const { ARN } = await client(world.sm).send(
          new CreateSecretCommand({
            Name: `acctops/test/company/${other}/api-key`,
            SecretString: value,
            Tags: [
              { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
              { Key: COMPANY_KEY_TAGS.company, Value: other },
            ],
          }),
        );
        const { versionId } = await world.store.startRotation(ARN!, { lambdaArn: ROTATION_LAMBDA, automaticallyAfterDays: 30 });
        return { arn: ARN!, versionId, other };
      }

      it("createSecret: a secret holding another company's key is refused before any key is made, naming both companies", async () => {
        const keysBefore = await world.keys();
        const { arn, versionId, other } = await otherCompanySecret(serializeCompanyKeySecret(world.initialKey));
        const refused = world.sm.admin.runRotationStep(arn, 'createSecret');
        await expect(refused).rejects.toMatchObject({
          name: 'SecretCompanyMismatchError',
          code: 'secret_company_mismatch',
          step: 'createSecret',
          secretCompanyId: other,
          keyCompanyId: world.companyId.toLowerCase(),
        });
        const message = await refused.catch((error: Error) => error.message);
        expect(message).toContain(`acctops keys install --company ${other}`);
        expect(message).not.toContain(world.initialKey.apiKey);
        // Nothing minted for the key's company, nothing stored in the other's secret.
        expect((await world.keys()).map((k) => [k.publicId, k.revokedAt])).toEqual(keysBefore.map((k) => [k.publicId, k.revokedAt]));
        expect((await world.store.readSecret(arn, { stage: 'AWSCURRENT' })).value).toBe(serializeCompanyKeySecret(world.initialKey));
        expect((await world.store.describeSecret(arn)).versionStages[versionId] ?? []).not.toContain('AWSPENDING');
        expect(await world.sandbox.admin.listApiKeys({ companyId: world.otherCompanyId })).toEqual([]);
      });

      it("createSecret: the stack's placeholder is refused as a secret with no key yet, naming the install runbook", async () => {
        const placeholder = 'Zx9!placeholderRandom#Value$0123';
        const { arn } = await otherCompanySecret(placeholder);
        const message = await world.sm.admin.runRotationStep(arn, 'createSecret').then(
          () => 'resolved',
          (error: Error) => error.message,
        );
        expect(message).toMatch(/holds no key yet/);
        expect(message).toContain('acctops keys install');
        expect(message).toContain('"Install a company API key"');
        expect(message).not.toContain('placeholderRandom');
      });

      it('testSecret: a key that lacks a permission is not promoted, and is revoked', async () => {
        const { versionId } = await world.startRotation();
        await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
        await world.sm.admin.runRotationStep(world.secretArn, 'setSecret');
        // The service reports the new key with one permission fewer than asked.
        await world.sandbox.admin.faults.add({
          route: 'GET /api-keys/',
          fault: { type: 'extra_fields', fields: { permissions: ['manage_api_keys', 'read_transactions'] } },
        });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'testSecret')).rejects.toMatchObject({ code: 'permissions_differ' });
        expect(await expectRolledBack(versionId)).toHaveLength(1);
        expect(world.metrics.sum('RotationsRolledBack')).toBe(1);

        // AWS's retry of that token now stops at the guard, and creates nothing.
        const retried = await world.sm.admin.retryRotation(world.secretArn);
        expect(retried).toMatchObject({ status: 'failed', failedStep: 'createSecret' });
        expect(await expectRolledBack(versionId)).toHaveLength(1);

        // The next rotation (a new token) goes through.
        world.sm.admin.setRotationMode('sync');
        const next = await world.startRotation();
        expect((await world.current()).versionId).toBe(next.versionId);
      });

      it('testSecret: a key that acts for another company is not promoted, and is revoked', async () => {
        const { versionId } = await world.startRotation();
        await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
        await world.sm.admin.runRotationStep(world.secretArn, 'setSecret');
        await world.sandbox.admin.faults.add({
          route: 'GET /companies/',
          fault: { type: 'extra_fields', fields: { publicId: world.otherCompanyId } },
        });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'testSecret')).rejects.toMatchObject({ code: 'wrong_company' });
        expect(await expectRolledBack(versionId)).toHaveLength(1);
      });

      it('testSecret: a pending key the service refuses is not promoted', async () => {
        const { versionId } = await world.startRotation();
        await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
        await world.sm.admin.runRotationStep(world.secretArn, 'setSecret');
        const made = (await world.keys()).find((k) => k.name === rotationKeyName(versionId))!;
        await world.sandbox.admin.revokeApiKey({ publicId: made.publicId });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'testSecret')).rejects.toMatchObject({
          status: 401,
          code: dialect === 'default' ? 'key_revoked' : 'authentication_failed',
        });
        await expectRolledBack(versionId);
      });

      it('createSecret: storing the new key fails, so the key it just created is revoked', async () => {
        const { versionId } = await world.startRotation();
        world.sm.admin.injectFault({ operation: 'PutSecretValue', type: 'InternalServiceError', status: 500 });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'createSecret')).rejects.toMatchObject({
          code: 'secrets_manager_InternalServiceError',
        });
        expect(await expectRolledBack(versionId)).toHaveLength(1);
      });

      it('createSecret: a key of this rotation that was created but never stored is revoked, never duplicated', async () => {
        const { versionId } = await world.startRotation();
        // A run that died between creating the key and storing it: the full key is lost.
        await world.sandbox.admin.createApiKey({
          companyId: world.companyId,
          permissions: ['read_transactions'],
          name: rotationKeyName(versionId),
        });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'createSecret')).rejects.toMatchObject({
          code: 'replacement_key_lost',
        });
        expect(await expectRolledBack(versionId)).toHaveLength(1);
      });

      it('finishSecret: scheduling the revocation fails, so nothing is promoted and the new key is revoked', async () => {
        const { versionId } = await world.startRotation();
        for (const step of ['createSecret', 'setSecret', 'testSecret'] as const)
          await world.sm.admin.runRotationStep(world.secretArn, step);
        jest.spyOn(world.queue, 'schedule').mockRejectedValueOnce(new Error('scheduler unavailable'));
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'finishSecret')).rejects.toThrow('scheduler unavailable');
        await expectRolledBack(versionId);
      });

      it('a rollback that cannot complete leaves only what the doctor repairs', async () => {
        const { versionId } = await world.startRotation();
        await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
        // testSecret fails, and so does every call to the service afterwards (the rollback too).
        await world.sandbox.admin.faults.add({ route: '*', times: 'always', fault: { type: 'status', status: 503 } });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'testSecret')).rejects.toMatchObject({ code: 'server_error' });
        expect(world.metrics.sum('RotationRollbacksFailed')).toBe(1);
        expect(world.stages()[versionId]).toEqual(['AWSPENDING']);
        expect((await world.current()).apiKeyId).toBe(world.initialKey.apiKeyId);
      });

      /** The labels as Secrets Manager answers DescribeSecret, through the real SDK client. */
      async function describedStages(): Promise<Record<string, string[]>> {
        return (await client(world.sm).send(new DescribeSecretCommand({ SecretId: world.secretArn }))).VersionIdsToStages ?? {};
      }

      it.each([
        [
          'the service fails listing the keys',
          () => world.sandbox.admin.faults.add({ route: 'GET /api-keys/', times: 'always', fault: { type: 'status', status: 503 } }),
          { code: 'server_error' },
        ],
        [
          'the current key was revoked at the service',
          () => world.sandbox.admin.revokeApiKey({ publicId: world.initialKey.apiKeyId }),
          { status: 401 },
        ],
      ])('createSecret: %s before any key was made, so AWSPENDING is removed all the same', async (_case, breakIt, error) => {
        const { versionId } = await world.startRotation();
        await breakIt();
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'createSecret')).rejects.toMatchObject(error);
        expect(Object.values(await describedStages()).flat()).not.toContain('AWSPENDING');
        expect((await describedStages())[world.initialVersionId]).toEqual(['AWSCURRENT']);
        expect((await world.keys()).filter((k) => k.name === rotationKeyName(versionId))).toEqual([]);
        expect(world.metrics.sum('RotationsRolledBack')).toBe(1);
        expect(world.metrics.sum('RotationRollbacksFailed')).toBe(0);
        if (!('code' in error)) return;

        // Not blocked: once the service is back, the next rotation goes through at once.
        await world.sandbox.admin.faults.clear();
        world.sm.admin.setRotationMode('sync');
        const next = await world.startRotation();
        expect((await world.current()).versionId).toBe(next.versionId);
        expect((await describedStages())[next.versionId]).toEqual(['AWSCURRENT']);
      });

      it('rollBack on request (a rotation nothing runs any more): its key revoked and AWSPENDING removed; a promoted one left alone', async () => {
        const { versionId } = await world.startRotation();
        await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
        const undone = await world.rotation.rollBack(world.secretArn, versionId);
        const made = await expectRolledBack(versionId);
        expect(made).toHaveLength(1);
        expect(undone).toEqual({ result: 'rolled_back', revokedKeys: [{ apiKeyId: made[0]!.publicId, keyPrefix: made[0]!.prefix }] });
        expect(world.metrics.sum('RotationsRolledBack')).toBe(1);

        world.sm.admin.setRotationMode('sync');
        const next = await world.startRotation();
        expect(await world.rotation.rollBack(world.secretArn, next.versionId)).toEqual({ result: 'already_current', revokedKeys: [] });
        expect((await world.current()).versionId).toBe(next.versionId);
      });

      it('rollBack on request: keys that cannot be listed are its error, AWSPENDING stays; once listed, the key made but never stored is revoked', async () => {
        const { versionId } = await world.startRotation();
        // An interrupted attempt that created its key and died before storing it: whether it did is not known.
        await world.sandbox.admin.createApiKey({
          companyId: world.companyId,
          permissions: ['read_transactions'],
          name: rotationKeyName(versionId),
        });
        await world.sandbox.admin.faults.add({ route: 'GET /api-keys/', times: 'always', fault: { type: 'status', status: 503 } });
        await expect(world.rotation.rollBack(world.secretArn, versionId)).rejects.toMatchObject({ code: 'server_error' });
        expect(world.stages()[versionId]).toEqual(['AWSPENDING']);

        await world.sandbox.admin.faults.clear();
        expect((await world.rotation.rollBack(world.secretArn, versionId)).revokedKeys).toHaveLength(1);
        expect(await expectRolledBack(versionId)).toHaveLength(1);
      });

      it('createSecret: when the key may have been made and the keys cannot be listed, AWSPENDING stays for the doctor', async () => {
        const { versionId } = await world.startRotation();
        // The first list (createSecret's) works; the creation fails, and so does the rollback's list.
        await world.sandbox.admin.faults.add({
          route: 'GET /api-keys/',
          after: 1,
          times: 'always',
          fault: { type: 'status', status: 503 },
        });
        await world.sandbox.admin.faults.add({ route: 'POST /api-keys/', times: 'always', fault: { type: 'status', status: 503 } });
        await expect(world.sm.admin.runRotationStep(world.secretArn, 'createSecret')).rejects.toMatchObject({ code: 'server_error' });
        expect((await describedStages())[versionId]).toEqual(['AWSPENDING']);
        expect(world.metrics.sum('RotationRollbacksFailed')).toBe(1);
      });
    });
  });
});
