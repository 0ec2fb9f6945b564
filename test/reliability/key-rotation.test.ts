import { AwsSecretStore } from '../../src/adapters/aws/secrets-manager';
import { checkKeyRotations, rotationKeyName } from '../../src/core/api-keys';
import { createAccountingClient, type AccountingClientOptions } from '../../src/core/accounting-api';
import { forgetRegisteredSecrets } from '../../src/core/shared/redact';
import type { Fault } from '../../sandbox';
import { LOCAL_REGION, localCredentials } from '../helpers/aws-credentials';
import { expectNoCanaries } from '../helpers/canary';
import { startRecordingServer } from '../helpers/recording-server';
import { GRACE_MS, MINUTE, RotationWorld } from '../integration/api-keys/support';
import { matrixColumn } from './harness';
import { firstRequestTimesOut, sleepingClock, type SleepingClock } from './support';
import { TEST_DIALECTS } from '../helpers/dialects';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  /**
   * The key rotation column of the fault matrix (docs/reliability.md): RotateSecret on the Secrets
   * Manager emulator invokes our KeyRotation for each step, exactly as Secrets Manager invokes the
   * rotation Lambda; the steps talk to the sandbox, where the faults are injected.
   */

  const KEYS = 'GET /api-keys/';
  const CREATE = 'POST /api-keys/';

  let world: RotationWorld;
  let clientClock: SleepingClock;

  /**
   * The world's clients with the production retry policy (the support's clients never retry), the
   * sleeping clock, and `overrides` for one cell.
   */
  function useClients(overrides: Partial<AccountingClientOptions> = {}): void {
    world.clientFor = (key) =>
      createAccountingClient({
        baseUrl: world.sandbox.baseUrl,
        credentials: { get: () => Promise.resolve({ kind: 'apiKey', apiKey: key.apiKey, companyId: key.companyId }) },
        clock: clientClock,
        logger: world.logger,
        ...overrides,
      });
  }

  beforeEach(async () => {
    world = await RotationWorld.start(['manage_api_keys', 'read_transactions', 'read_categories', 'read_tax_reports'], dialect);
    clientClock = sleepingClock(world.clock);
    useClients();
  });

  afterEach(async () => {
    // Only prefixes may reach a log line or a metric: every key any version ever held is a canary.
    const text = world.logger.lines.join('\n');
    for (const key of world.fullKeys()) expect(text).not.toContain(key);
    expectNoCanaries(world.logger.lines, 'rotation log');
    await world.stop();
    forgetRegisteredSecrets();
  });

  const fault = (route: string, f: Fault, times: number | 'always' = 1) => world.sandbox.admin.faults.add({ route, times, fault: f });

  /** The rotation `versionId` made exactly one key; it is AWSCURRENT, the initial version AWSPREVIOUS. */
  async function expectOneReplacement(versionId: string): Promise<void> {
    expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded', token: versionId });
    const made = (await world.keys()).filter((k) => k.name === rotationKeyName(versionId));
    expect(made).toHaveLength(1);
    const current = await world.current();
    expect(current).toMatchObject({ apiKeyId: made[0]!.publicId, versionId });
    expect(world.stages()).toEqual({ [versionId]: ['AWSCURRENT'], [world.initialVersionId]: ['AWSPREVIOUS'] });
    expect(await world.statusWith(current.apiKey)).toEqual({ status: 200 });
  }

  /**
   * A failed rotation changed nothing that matters: AWSCURRENT is the initial version and works, no
   * version is AWSPENDING, and the only live key is the initial one (a key the rotation made is revoked).
   */
  async function expectRolledBack(step: string): Promise<string> {
    const attempt = world.sm.admin.rotation(world.secretArn)!;
    expect(attempt).toMatchObject({ status: 'failed', failedStep: step });
    expect(world.stages()).toEqual({ [world.initialVersionId]: ['AWSCURRENT'] });
    expect((await world.liveKeys()).map((k) => k.publicId)).toEqual([world.initialKey.apiKeyId]);
    expect(await world.statusWith(world.initialKey.apiKey)).toEqual({ status: 200 });
    expect(world.metrics.sum('RotationStepsFailed')).toBe(1);
    expect(world.metrics.sum('RotationsCompleted')).toBe(0);
    return attempt.token;
  }

  /** The service created the key but its answer was lost or unusable: the rollback finds it by name and revokes it. */
  async function createdKeyRevoked(f: Fault): Promise<'consistent'> {
    await fault(CREATE, f);
    const { versionId } = await world.startRotation();
    await expectRolledBack('createSecret');
    const made = (await world.keys()).filter((k) => k.name === rotationKeyName(versionId));
    expect(made).toHaveLength(1);
    expect(made[0]!.revokedAt).not.toBeNull();
    expect(world.metrics.sum('RotationsRolledBack')).toBe(1);
    return 'consistent';
  }

  matrixColumn('keyRotation', {
    'rate-limit': async () => {
      await fault(CREATE, { type: 'status', status: 429, retryAfter: 3 });
      const { versionId } = await world.startRotation();
      await expectOneReplacement(versionId);
      expect(clientClock.sleeps).toEqual([3000]);
      return 'recovered';
    },

    'status-500': async () => {
      await fault(CREATE, { type: 'status', status: 500 });
      await world.startRotation();
      await expectRolledBack('createSecret');
      expect(clientClock.sleeps).toEqual([]);
      // Nothing stuck: a new rotation goes ahead at once.
      const { versionId } = await world.startRotation();
      await expectOneReplacement(versionId);
      return 'consistent';
    },

    'status-502': async () => {
      await fault(KEYS, { type: 'status', status: 502 });
      const { versionId } = await world.startRotation();
      await expectOneReplacement(versionId);
      expect(clientClock.sleeps).toHaveLength(1);
      return 'recovered';
    },

    'status-503': async () => {
      await fault('GET /companies/', { type: 'status', status: 503 }, 'always');
      const { versionId } = await world.startRotation();
      await world.sandbox.admin.faults.clear();
      await expectRolledBack('testSecret');
      // The client tried every attempt of its policy before the step gave up.
      expect((await world.sandbox.admin.stats()).byRouteAndStatus['GET /companies/']?.['503']).toBe(4);
      const made = (await world.keys()).filter((k) => k.name === rotationKeyName(versionId));
      expect(made.map((k) => k.revokedAt !== null)).toEqual([true]);
      return 'typed_failure';
    },

    timeout: async () => {
      // One transport for every client of the rotation, so the short timeout hits the creation once.
      useClients({ transport: firstRequestTimesOut((r) => r.method === 'POST' && r.url.endsWith('/api-keys/')) });
      // The service holds the creation on its clock; the client gives up first (ambiguous).
      await fault(CREATE, { type: 'slow', delayMs: 10 * MINUTE });
      const { versionId } = await world.startRotation();
      await expectRolledBack('createSecret');

      // Later the service carries the creation out: a live key no secret references.
      world.clock.advance(10 * MINUTE);
      const orphan = async () => (await world.keys()).find((k) => k.name === rotationKeyName(versionId));
      for (let i = 0; i < 500 && !(await orphan()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await orphan())?.revokedAt).toBeNull();

      world.clock.advance(GRACE_MS + MINUTE);
      const report = await checkKeyRotations(
        {
          store: world.store,
          directory: world.directory,
          scheduler: world.queue,
          clientFor: (key) => world.clientFor(key),
          events: world.events,
          clock: world.clock,
          logger: world.logger,
          metrics: world.metrics,
        },
        { graceMs: GRACE_MS },
      );
      expect(report.findings).toEqual([
        expect.objectContaining({ type: 'orphan_key', apiKeyId: (await orphan())!.publicId, repaired: true }),
      ]);
      expect((await world.liveKeys()).map((k) => k.publicId)).toEqual([world.initialKey.apiKeyId]);
      expect(world.stages()).toEqual({ [world.initialVersionId]: ['AWSCURRENT'] });
      return 'consistent';
    },

    reset: () => createdKeyRevoked({ type: 'reset', phase: 'after' }),
    'malformed-json': () => createdKeyRevoked({ type: 'malformed_json' }),
    'drift-missing-field': () => createdKeyRevoked({ type: 'drop_field', field: 'key' }),

    'drift-extra-fields': async () => {
      await fault(KEYS, { type: 'extra_fields', fields: { rotatedBy: 'someone', quota: { perMinute: 60 } } }, 'always');
      await fault(CREATE, { type: 'extra_fields' }, 'always');
      const { versionId } = await world.startRotation();
      await expectOneReplacement(versionId);
      return 'recovered';
    },

    'page-loop': async () => {
      await fault(KEYS, { type: 'next_loop' });
      const { versionId } = await world.startRotation();
      await expectRolledBack('createSecret');
      expect(world.sm.admin.rotation(world.secretArn)!.error).toMatchObject({ name: 'PaginationError', reason: 'next_loop' });
      expect((await world.keys()).filter((k) => k.name === rotationKeyName(versionId))).toEqual([]);
      return 'typed_failure';
    },

    'page-count-mismatch': async () => {
      await fault(KEYS, { type: 'count_mismatch', delta: 2 }, 'always');
      const { versionId } = await world.startRotation();
      await expectOneReplacement(versionId);
      expect(world.logger.entries().some((e) => e.message === 'accounting api warning' && e.type === 'count_mismatch')).toBe(true);
      return 'recovered';
    },

    'page-foreign-next': async () => {
      const foreign = await startRecordingServer();
      try {
        await fault(KEYS, { type: 'foreign_next', url: `${foreign.origin}/elsewhere/api/v1/api-keys/?page=2` });
        await world.startRotation();
        await expectRolledBack('createSecret');
        expect(world.sm.admin.rotation(world.secretArn)!.error).toMatchObject({ name: 'PaginationError', reason: 'foreign_next' });
        expect(foreign.requests).toEqual([]);
      } finally {
        await foreign.stop();
      }
      return 'typed_failure';
    },

    'key-revoked-mid-export': async () => {
      // The current key is revoked right after it listed the company's keys in createSecret.
      await fault(KEYS, { type: 'revoke_credential' });
      const { versionId } = await world.startRotation();
      const attempt = world.sm.admin.rotation(world.secretArn)!;
      expect(attempt).toMatchObject({
        status: 'failed',
        failedStep: 'createSecret',
        error: expect.objectContaining({ name: dialect === 'default' ? 'KeyRevokedError' : 'AuthenticationError' }),
      });
      expect(world.metrics.sum('RotationStepsFailed')).toBe(1);
      expect(await world.liveKeys()).toEqual([]);
      expect((await world.keys()).filter((k) => k.name === rotationKeyName(versionId))).toEqual([]);
      // AWSCURRENT is untouched: the revoked key is the doctor's and the runbook's to replace.
      expect((await world.current()).versionId).toBe(world.initialVersionId);
      return 'typed_failure';
    },

    'secrets-throttling': async () => {
      // The production store: the SDK's default (standard) retry strategy, not the tests' single attempt.
      const store = new AwsSecretStore({ endpoint: world.sm.endpoint, region: LOCAL_REGION, credentials: localCredentials });
      world.rotation = world.rotationOver(store);
      world.sm.admin.resetStats();
      world.sm.admin.injectFault({ operation: 'GetSecretValue', count: 1 });
      const { versionId } = await world.startRotation();
      await expectOneReplacement(versionId);
      expect(world.sm.admin.stats().errors.ThrottlingException).toBe(1);
      return 'recovered';
    },

    'lambda-timeout-rotation': async () => {
      world.sm.admin.setRotationMode('manual');
      const { versionId } = await world.startRotation();
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      await world.sm.admin.runRotationStep(world.secretArn, 'setSecret');
      // The function timed out here. Secrets Manager retries the rotation: every step, the same token.
      await world.sm.admin.retryRotation(world.secretArn);
      await expectOneReplacement(versionId);
      expect(await world.queue.due(Number.MAX_SAFE_INTEGER)).toHaveLength(1);
      return 'consistent';
    },
  });
});
