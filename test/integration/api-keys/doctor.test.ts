import { randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import {
  COMPANY_KEY_TAGS,
  PURPOSE_COMPANY_KEY,
  serializeCompanyKeySecret,
  checkKeyRotations,
  type DoctorSettings,
  FINDING_EVENT_TYPE,
  keyStatus,
  parseCompanyKeySecret,
  rotateNow,
  rotationKeyName,
  runDueRevocations,
  checkQueuedCompanies,
  sweepKeyRotations,
  type QueuedCheck,
} from '../../../src/core/api-keys';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { client } from '../../helpers/secrets-manager';
import { GRACE_MS, MINUTE, RotationWorld } from './support';
import { TEST_DIALECTS } from '../../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  const HOUR = 60 * MINUTE;
  const DAY = 24 * HOUR;

  describe('the rotation doctor', () => {
    let world: RotationWorld;

    beforeEach(async () => {
      world = await RotationWorld.start(undefined, dialect);
    });
    afterEach(async () => {
      const lines = world.logger.lines.join('\n');
      for (const key of world.fullKeys()) expect(lines).not.toContain(key);
      for (const event of world.events.published) for (const key of world.fullKeys()) expect(JSON.stringify(event)).not.toContain(key);
      await world.stop();
      forgetRegisteredSecrets();
    });

    const doctorDeps = () => world.doctorDeps();
    const doctor = (settings: Partial<DoctorSettings> = {}) => checkKeyRotations(doctorDeps(), { graceMs: GRACE_MS, ...settings });

    it('finds nothing on a healthy, freshly rotated secret', async () => {
      await world.startRotation();
      const report = await doctor();
      expect(report).toMatchObject({ companies: 1, findings: [] });
      expect(world.metrics.sum('UnrepairedRotationFindings')).toBe(0);
      expect(world.events.published).toEqual([]);
    });

    it('repairs a rotation that crashed after createSecret: removes the stale AWSPENDING, and revokes its orphan key at a later run', async () => {
      await world.startRotation(); // one good rotation first, so AWSPREVIOUS exists too
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation();
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      const current = await world.current();
      const orphan = (await world.keys()).find((k) => k.name === rotationKeyName(versionId))!;

      // Within the hour a rotation may legitimately take, the doctor leaves it alone.
      world.clock.advance(20 * MINUTE);
      expect((await doctor()).findings).toEqual([]);
      expect(world.stages()[versionId]).toEqual(['AWSPENDING']);

      world.clock.advance(2 * HOUR);
      await runDueRevocations({ ...doctorDeps(), metrics: world.metrics, queue: world.queue }); // the first rotation's schedule fired
      const report = await doctor();
      // The key is left live for now: a finishSecret of this rotation may still be running.
      expect(report.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', true]]);
      expect(report.findings[0]).toMatchObject({
        versionId,
        apiKeyId: orphan.publicId,
        keyPrefix: orphan.prefix,
        companyId: world.companyId,
      });
      expect(world.stages()[versionId]).toEqual([expect.stringMatching(/^ACCTOPS_GIVEN_UP_/)]);
      expect((await world.keys()).find((k) => k.publicId === orphan.publicId)!.revokedAt).toBeNull();

      // The next hourly run revokes it.
      world.clock.advance(HOUR);
      const next = await doctor();
      expect(next.findings.map((f) => [f.type, f.repaired])).toEqual([['orphan_key', true]]);
      expect(next.findings[0]).toMatchObject({ apiKeyId: orphan.publicId, keyPrefix: orphan.prefix, companyId: world.companyId });
      expect(world.stages()[versionId]).toBeUndefined();
      expect((await world.keys()).find((k) => k.publicId === orphan.publicId)!.revokedAt).not.toBeNull();
      // AWSCURRENT is untouched and works.
      expect((await world.current()).versionId).toBe(current.versionId);
      expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
      expect(world.metrics.sum('RotationRepairs')).toBe(2);
      expect(world.metrics.sum('UnrepairedRotationFindings')).toBe(0);
      expect(world.events.published.map((e) => [e.type, e.detail.type])).toEqual([
        [FINDING_EVENT_TYPE, 'stuck_pending'],
        [FINDING_EVENT_TYPE, 'orphan_key'],
      ]);

      // Repaired for good: the next run finds nothing, and the next rotation goes through.
      expect((await doctor()).findings).toEqual([]);
      world.sm.admin.setRotationMode('sync');
      const next2 = await world.startRotation();
      expect((await world.current()).versionId).toBe(next2.versionId);
    });

    it("a dry run past the window reports the given-up rotation's key as the orphan a repairing run revokes", async () => {
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation();
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      const orphan = (await world.keys()).find((k) => k.name === rotationKeyName(versionId))!;
      world.clock.advance(2 * HOUR);
      expect((await doctor()).findings.map((f) => f.type)).toEqual(['stuck_pending']);

      world.clock.advance(5 * MINUTE);
      expect((await doctor({ repair: false })).findings).toEqual([]); // inside the window: nothing to do yet
      world.clock.advance(HOUR);
      const dry = await doctor({ repair: false });
      expect(dry.findings).toEqual([expect.objectContaining({ type: 'orphan_key', apiKeyId: orphan.publicId, repaired: false })]);
      expect(world.stages()[versionId]).toEqual([expect.stringMatching(/^ACCTOPS_GIVEN_UP_/)]);
      expect((await world.keys()).find((k) => k.publicId === orphan.publicId)!.revokedAt).toBeNull();
    });

    it('revokes an orphan key of rotation only once past the grace period, and never a key rotation did not make', async () => {
      const orphan = await world.sandbox.admin.createApiKey({
        companyId: world.companyId,
        permissions: ['read_transactions'],
        name: rotationKeyName('1b4e28ba-2fa1-41d2-883f-0016d3cca427'),
      });
      const handmade = await world.sandbox.admin.createApiKey({
        companyId: world.companyId,
        permissions: ['read_transactions'],
        name: 'bookkeeper',
      });
      await world.startRotation();

      world.clock.advance(GRACE_MS - MINUTE);
      expect((await doctor()).findings).toEqual([]);
      world.clock.advance(2 * MINUTE);
      const report = await doctor();
      expect(report.findings).toEqual([expect.objectContaining({ type: 'orphan_key', apiKeyId: orphan.publicId, repaired: true })]);
      expect(await world.statusWith(orphan.key)).toMatchObject({ status: 401 });
      expect(await world.statusWith(handmade.key)).toEqual({ status: 200 });
    });

    it('against a service that lists keys without a name, leaves a key it cannot prove its own and says so, and still revokes a previous key', async () => {
      // The spec names no key name (§5.1.2): the same sandbox, its names taken out of the reply.
      const named = doctorDeps();
      const nameless: typeof named = {
        ...named,
        clientFor: (key) => {
          const client = named.clientFor(key);
          const apiKeys = Object.assign(Object.create(client.apiKeys) as typeof client.apiKeys, {
            list: () => {
              const list = client.apiKeys.list();
              return Object.assign(Object.create(list) as typeof list, {
                all: async () => (await list.all()).map((item) => ({ ...item, parsed: { ...item.parsed, name: null } })),
              });
            },
            revoke: (publicId: string) => client.apiKeys.revoke(publicId),
          });
          return Object.assign(Object.create(client) as typeof client, { apiKeys });
        },
      };
      const orphan = await world.sandbox.admin.createApiKey({
        companyId: world.companyId,
        permissions: ['read_transactions'],
        name: rotationKeyName('1b4e28ba-2fa1-41d2-883f-0016d3cca427'),
      });
      await world.startRotation();
      await world.queue.complete(world.initialKey.apiKeyId); // the previous key's schedule vanished
      world.clock.advance(GRACE_MS + HOUR);
      const report = await checkKeyRotations(nameless, { graceMs: GRACE_MS });
      expect(report.findings).toEqual([
        expect.objectContaining({ type: 'revocation_overdue', apiKeyId: world.initialKey.apiKeyId, repaired: true }),
      ]);
      expect(await world.statusWith(orphan.key)).toEqual({ status: 200 });
      const warning = world.logger.lines.find((line) => line.includes('keys listed without a name'));
      expect(warning).toContain(orphan.key.slice(0, orphan.key.indexOf('_') + 9));
      expect(warning).not.toContain(orphan.key);
    });

    it('revokes the previous key when its scheduled revocation was lost', async () => {
      await world.startRotation();
      await world.queue.complete(world.initialKey.apiKeyId); // the schedule vanished
      world.clock.advance(GRACE_MS);
      expect((await doctor()).findings).toEqual([]); // not overdue yet: the slack
      world.clock.advance(HOUR);
      const report = await doctor();
      expect(report.findings).toEqual([
        expect.objectContaining({ type: 'revocation_overdue', apiKeyId: world.initialKey.apiKeyId, repaired: true }),
      ]);
      expect(await world.statusWith(world.initialKey.apiKey)).toMatchObject({ status: 401 });
    });

    it('finds an old key whose revocation was lost even two rotations later, when no label and no name mark it', async () => {
      await world.startRotation();
      await world.queue.complete(world.initialKey.apiKeyId); // the revocation failed all its attempts
      world.clock.advance(10 * MINUTE);
      await world.startRotation(); // the initial key is now in a version without a label
      world.clock.advance(GRACE_MS + HOUR);
      const report = await doctor();
      expect(report.findings).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: 'revocation_overdue', apiKeyId: world.initialKey.apiKeyId, repaired: true }),
        ]),
      );
      expect(await world.statusWith(world.initialKey.apiKey)).toMatchObject({ status: 401 });
    });

    it('leaves a previous key alone while its revocation is scheduled', async () => {
      await world.startRotation();
      const [revocation] = await world.queue.due(Number.MAX_SAFE_INTEGER);
      await world.queue.complete(revocation!.apiKeyId);
      await world.queue.schedule({ ...revocation!, revokeAt: world.clock.now() + 3 * HOUR }); // a longer grace, say
      world.clock.advance(2 * HOUR);
      expect((await doctor()).findings).toEqual([]);
    });

    it('reports, without repairing, keys close to expiry, overdue and disabled rotations; and a dry run repairs nothing', async () => {
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation(); // enables rotation every 30 days
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      world.clock.advance(32 * DAY);
      // A dry run: the stuck label stays, so its key is still referenced and not (yet) an orphan.
      const dry = await doctor({ repair: false });
      expect(dry.findings.map((f) => [f.type, f.repaired]).sort()).toEqual([
        ['rotation_overdue', false],
        ['stuck_pending', false],
      ]);
      expect(world.stages()[versionId]).toEqual(['AWSPENDING']);
      expect((await world.liveKeys()).length).toBe(2);
      expect(world.metrics.sum('UnrepairedRotationFindings')).toBe(2);
      expect(world.events.published).toHaveLength(2);

      const expiring = await world.sandbox.admin.createApiKey({
        companyId: world.companyId,
        permissions: ['manage_api_keys', 'read_transactions'],
        expiresAt: new Date(world.clock.now() + 3 * DAY).toISOString(),
      });
      await client(world.sm).send(
        new CreateSecretCommand({
          Name: 'expiring',
          SecretString: serializeCompanyKeySecret({
            apiKey: expiring.key,
            apiKeyId: expiring.publicId,
            keyPrefix: expiring.prefix,
            companyId: world.companyId,
            permissions: expiring.permissions,
            createdAt: expiring.createdAt,
          }),
          Tags: [
            { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
            { Key: COMPANY_KEY_TAGS.company, Value: world.companyId },
          ],
        }),
      );
      const report = await doctor({ repair: false });
      const second = report.findings
        .filter((f) => f.secret === 'expiring')
        .map((f) => f.type)
        .sort();
      expect(second).toEqual(['key_expiring', 'rotation_disabled']);
      // The finding's line names the secret as `secretName`, which the redactor lets through (decision 77).
      const logged = world.logger.entries().filter((e) => e.message === 'rotation doctor finding' && e.secretName === 'expiring');
      expect(logged.map((e) => e.type).sort()).toEqual(['key_expiring', 'rotation_disabled']);
      expect(world.logger.lines.filter((l) => l.includes('[REDACTED]'))).toEqual([]);
    });

    it('reports a company it cannot check, and goes on with the others', async () => {
      await world.sandbox.admin.revokeApiKey({ publicId: world.initialKey.apiKeyId });
      const report = await doctor();
      const failed = report.findings.filter((f) => f.type === 'check_failed');
      expect(failed).toEqual([expect.objectContaining({ repaired: false })]);
      expect(failed[0]!.detail).toContain(dialect === 'default' ? 'key_revoked' : 'The API key has been revoked.');
      expect(world.logger.entries().find((e) => e.message === 'rotation doctor finding' && e.type === 'check_failed')).toMatchObject({
        secretName: failed[0]!.secret,
      });
    });

    it("reports a secret that holds another company's key, naming both companies, in a dry run too", async () => {
      const other = world.otherCompanyId.toLowerCase();
      await client(world.sm).send(
        new CreateSecretCommand({
          Name: `acctops/test/company/${other}/api-key`,
          SecretString: serializeCompanyKeySecret(world.initialKey),
          Tags: [
            { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
            { Key: COMPANY_KEY_TAGS.company, Value: other },
          ],
        }),
      );
      const report = await doctor({ repair: false });
      const failed = report.findings.filter((f) => f.type === 'check_failed');
      expect(failed).toEqual([
        expect.objectContaining({ companyId: other, secret: `acctops/test/company/${other}/api-key`, repaired: false }),
      ]);
      // Rotation is not enabled on either secret of this world: that is the only other finding.
      expect(report.findings.filter((f) => f.type !== 'check_failed').map((f) => f.type)).toEqual([
        'rotation_disabled',
        'rotation_disabled',
      ]);
      const detail = failed[0]!.detail;
      expect(detail).toContain('SecretCompanyMismatchError');
      expect(detail).toContain(`is for company ${other} but holds a key of company ${world.companyId.toLowerCase()}`);
      expect(detail).not.toContain(world.initialKey.apiKey);
    });

    it('keeps the grace period of a previous key that a second rotation unlabelled before its revocation fired', async () => {
      await world.startRotation();
      const first = await world.current();
      world.clock.advance(DAY);
      await world.startRotation(); // first is AWSPREVIOUS, revoked by its schedule in GRACE_MS
      world.clock.advance(5 * MINUTE);
      await world.startRotation(); // a manual rotation right after: first's version loses its label
      world.clock.advance(5 * MINUTE);
      expect(Object.values(world.stages()).flat()).not.toContain(first.versionId);

      expect((await doctor()).findings).toEqual([]);
      expect(await world.statusWith(first.apiKey)).toEqual({ status: 200 });
      // Once the schedule has fired, nothing is left for the doctor either.
      world.clock.advance(GRACE_MS);
      await runDueRevocations({ ...doctorDeps(), queue: world.queue });
      expect(await world.statusWith(first.apiKey)).toMatchObject({ status: 401 });
      expect((await doctor()).findings).toEqual([]);
    });

    it('does not revoke the previous key of a rotation that finishes while the doctor reads the secret', async () => {
      await world.startRotation();
      world.clock.advance(GRACE_MS + MINUTE);
      await runDueRevocations({ ...doctorDeps(), queue: world.queue });
      world.clock.advance(30 * DAY);
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation();
      for (const step of ['createSecret', 'setSecret', 'testSecret'] as const) await world.sm.admin.runRotationStep(world.secretArn, step);
      const old = await world.current();
      // finishSecret runs after the doctor read the pending revocations and described the secret,
      // before it lists the versions: it schedules the old key's revocation, then promotes.
      let finished = false;
      const store = world.store;
      const racing: typeof store = Object.create(store) as typeof store;
      racing.listVersions = async (secretId) => {
        if (!finished) {
          finished = true;
          await world.sm.admin.runRotationStep(world.secretArn, 'finishSecret');
        }
        return store.listVersions(secretId);
      };
      const report = await checkKeyRotations({ ...doctorDeps(), store: racing }, { graceMs: GRACE_MS });
      expect(finished).toBe(true);
      expect((await world.current()).versionId).toBe(versionId);
      expect(report.findings).toEqual([]);
      expect(await world.statusWith(old.apiKey)).toEqual({ status: 200 });
    });

    it('the sweep examines a company whose rotation it gave up again at its next run, then leaves it to its mark', async () => {
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation();
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      const orphan = (await world.keys()).find((k) => k.name === rotationKeyName(versionId))!;
      world.clock.advance(2 * HOUR);

      const marks = new Map<string, number>();
      const described: string[] = [];
      const sweep = () =>
        sweepKeyRotations(
          {
            ...doctorDeps(),
            index: {
              pages: async function* () {
                const checkAfter = marks.get(world.companyId);
                yield [checkAfter === undefined ? { companyId: world.companyId } : { companyId: world.companyId, checkAfter }];
              },
              setCheckAfter: async (companyId, at) => void marks.set(companyId, at),
            },
            describeCompanySecret: async (companyId) => {
              described.push(companyId);
              const description = await world.store.describeSecret(world.secretArn);
              return { entry: { companyId, secretId: world.secretArn, name: description.name }, description };
            },
          },
          { graceMs: GRACE_MS },
        );

      const first = await sweep();
      expect(first).toMatchObject({ companies: 1, due: { in_progress: 1 } });
      expect(first.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', true]]);
      expect(marks.size).toBe(0);

      // An hour later DescribeSecret shows no AWSPENDING, but the doctor's label: still due.
      world.clock.advance(HOUR);
      const second = await sweep();
      expect(second).toMatchObject({ companies: 1, due: { in_progress: 1 } });
      expect(second.findings.map((f) => [f.type, f.repaired, f.apiKeyId])).toEqual([['orphan_key', true, orphan.publicId]]);

      // Then the steady state: one DescribeSecret that sets the mark, and none while it holds.
      const third = await sweep();
      expect(third).toMatchObject({ companies: 0, described: 1, findings: [] });
      expect(marks.get(world.companyId)).toBeGreaterThan(world.clock.now());
      const fourth = await sweep();
      expect(fourth).toMatchObject({ companies: 0, described: 0 });
      expect(described).toHaveLength(3);
    });

    it('a dry run stays dry for the companies it queues', async () => {
      await world.startRotation();
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation();
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      world.clock.advance(2 * HOUR);
      await runDueRevocations({ ...doctorDeps(), queue: world.queue }); // the first rotation's schedule fired
      const orphan = (await world.keys()).find((k) => k.name === rotationKeyName(versionId))!;

      const queued: QueuedCheck[] = [];
      const sweep = await sweepKeyRotations(
        {
          ...doctorDeps(),
          index: {
            pages: async function* () {
              yield [{ companyId: world.companyId }];
            },
            setCheckAfter: async () => {},
          },
          describeCompanySecret: async (companyId) => {
            const description = await world.store.describeSecret(world.secretArn);
            return { entry: { companyId, secretId: world.secretArn, name: description.name }, description };
          },
          queue: { enqueue: async (checks) => void queued.push(...checks) },
        },
        { graceMs: GRACE_MS, inlineLimit: 0, repair: false },
      );
      expect(sweep.queued).toBe(1);
      expect(queued[0]).toMatchObject({ companyId: world.companyId, reason: 'in_progress', repair: false });

      // The worker runs the queued check with its own settings, which carry no repair flag.
      const result = await checkQueuedCompanies(doctorDeps(), { graceMs: GRACE_MS }, [
        { messageId: 'm1', body: JSON.stringify(queued[0]) },
      ]);
      // Reported, not repaired: the label stays, so its key is still referenced and no orphan yet.
      expect(result.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', false]]);
      expect(world.stages()[versionId]).toEqual(['AWSPENDING']);
      expect((await world.keys()).find((k) => k.publicId === orphan.publicId)!.revokedAt).toBeNull();

      // The same message without the flag (a repairing sweep's) repairs.
      const { repair: _repair, ...repairing } = queued[0]!;
      const repaired = await checkQueuedCompanies(doctorDeps(), { graceMs: GRACE_MS }, [
        { messageId: 'm2', body: JSON.stringify(repairing) },
      ]);
      expect(repaired.findings.map((f) => [f.type, f.repaired])).toEqual([['stuck_pending', true]]);
    });
  });

  describe('keyStatus and rotateNow (for the CLI)', () => {
    let world: RotationWorld;
    beforeEach(async () => {
      world = await RotationWorld.start(undefined, dialect);
    });
    afterEach(async () => {
      await world.stop();
      forgetRegisteredSecrets();
    });

    it('rotateNow rotates through the store; keyStatus shows prefix, permissions, use, rotation dates and pending revocations', async () => {
      // The emulator needs the rotation function once, as the stack's RotationSchedule configures it.
      await world.startRotation();
      const deps = { store: world.store, directory: world.directory, scheduler: world.queue, clientFor: world.clientFor.bind(world) };
      const result = await rotateNow(deps, world.companyId);
      expect(result).toMatchObject({ companyId: world.companyId, state: 'completed' });
      const current = await world.current();
      expect(current.versionId).toBe(result.versionId);

      const [row, ...rest] = await keyStatus(deps);
      expect(rest).toEqual([]);
      expect(row).toMatchObject({
        companyId: world.companyId,
        keyPrefix: current.keyPrefix,
        apiKeyId: current.apiKeyId,
        rotationEnabled: true,
        rotationDays: 30,
        lastRotatedAt: world.clock.now(),
        nextRotationAt: world.clock.now() + 30 * DAY,
        rotationInProgress: false,
      });
      expect(row!.permissions!.sort()).toEqual([...world.initialKey.permissions].sort());
      expect(row!.lastUsedAt).toEqual(expect.any(String));
      expect(row!.pendingRevocations.map((r) => r.keyPrefix).sort()).toEqual(
        [
          world.initialKey.keyPrefix,
          (await world.store.readSecret(world.secretArn, { stage: 'AWSPREVIOUS' })).value.match(/"keyPrefix":"([^"]+)"/)![1],
        ].sort(),
      );
      expect(JSON.stringify(row)).not.toContain(current.apiKey);
    });

    it("keyStatus tells the old key's use by its own rotation from a consumer's use after it", async () => {
      await world.startRotation();
      const deps = { store: world.store, directory: world.directory, scheduler: world.queue, clientFor: world.clientFor.bind(world) };
      world.clock.advance(MINUTE);
      const previous = parseCompanyKeySecret((await world.store.readSecret(world.secretArn, { stage: 'AWSCURRENT' })).value);
      await rotateNow(deps, world.companyId);
      const pendingOf = async (keyPrefix: string) => (await keyStatus(deps))[0]!.pendingRevocations.find((r) => r.keyPrefix === keyPrefix)!;

      // The rotation listed and created keys with the old key: a use, but not a consumer's.
      const justRotated = await pendingOf(previous.keyPrefix);
      expect(justRotated.lastUsedAt).toEqual(expect.any(String));
      expect(justRotated.usedSinceRotation).toBe(false);
      // The key of the rotation before: the secret no longer dates that rotation.
      expect((await pendingOf(world.initialKey.keyPrefix)).usedSinceRotation).toBeNull();

      world.clock.advance(2 * MINUTE);
      expect(await world.statusWith(previous.apiKey)).toEqual({ status: 200 });
      const used = await pendingOf(previous.keyPrefix);
      expect(used.usedSinceRotation).toBe(true);
      expect(Date.parse(used.lastUsedAt!)).toBe(world.clock.now());
    });

    it('keyStatus lists a queued revocation of the current key apart from the pending ones: it revokes nothing (decision 83)', async () => {
      // As a rotation that did not take effect leaves it: its old key's revocation queued, the key still current.
      const current = await world.current();
      await world.queue.schedule({
        secretId: world.secretArn,
        companyId: world.companyId,
        apiKeyId: current.apiKeyId,
        keyPrefix: current.keyPrefix,
        revokeAt: world.clock.now() + GRACE_MS,
        rotationToken: randomUUID(),
      });
      const deps = { store: world.store, directory: world.directory, scheduler: world.queue, clientFor: world.clientFor.bind(world) };
      const [row] = await keyStatus(deps);
      expect(row).toMatchObject({ apiKeyId: current.apiKeyId, pendingRevocations: [], error: null });
      expect(row!.currentKeyRevocations).toEqual([
        { apiKeyId: current.apiKeyId, keyPrefix: current.keyPrefix, revokeAt: world.clock.now() + GRACE_MS },
      ]);
    });

    it('rotateNow reports a rotation that failed and was rolled back', async () => {
      await world.startRotation();
      await world.sandbox.admin.faults.add({
        route: 'GET /companies/',
        fault: { type: 'extra_fields', fields: { publicId: world.otherCompanyId } },
      });
      const result = await rotateNow({ store: world.store, directory: world.directory }, world.companyId);
      expect(result.state).toBe('failed');
    });
  });
});
