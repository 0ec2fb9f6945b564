import {
  type CompanyKeySecret,
  KeyRotation,
  type KeyRotationDeps,
  KeyRotationError,
  parseCompanyKeySecret,
  RotationGuardError,
  rotationSettings,
  serializeCompanyKeySecret,
} from '../../../src/core/api-keys';
import { apiKeyAuth, createAccountingClient } from '../../../src/core/accounting-api';
import type { Revocation } from '../../../src/core/api-keys/revocation';
import {
  type MoveSecretStageInput,
  type PutSecretValueInput,
  type SecretDescription,
  type SecretStore,
  SecretNotFoundError,
  SecretStage,
  type SecretVersionSelector,
} from '../../../src/core/ports/secrets';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { BASE_URL, type Handler, fakeTransport, json } from '../accounting-api/fake-transport';

const ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acctops/test/company/x/api-key-AbCdEf';
const NAME = 'acctops/test/company/0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d/api-key';
const COMPANY = '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d';
const OLD_VERSION = '11111111-1111-4111-8111-111111111111';
const TOKEN = '22222222-2222-4222-8222-222222222222';
const GRACE_MS = 30 * 60_000;

const key = (id: string, rest: string): CompanyKeySecret => ({
  apiKey: `sbx_${rest}`,
  apiKeyId: id,
  keyPrefix: `sbx_${rest.slice(0, 8)}`,
  companyId: COMPANY,
  permissions: ['manage_api_keys', 'read_transactions'],
  createdAt: '2026-11-02T09:00:00.000Z',
});
const OLD_KEY = key('1b4e28ba-2fa1-41d2-883f-0016d3cca427', 'OldKeyAa0123456789abcdefghijklmnop');
const NEW_KEY = key('6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b', 'NewKeyBb0123456789abcdefghijklmnop');

/**
 * Secrets Manager's staging labels as the port describes them: a stage is on one version at most,
 * moving it needs the version it is on (fromVersionId), and moving AWSCURRENT puts AWSPREVIOUS on
 * the version it left.
 */
class StagedStore implements Pick<SecretStore, 'describeSecret' | 'readSecret' | 'putSecretValue' | 'moveStage'> {
  readonly versions = new Map<string, { value: string | undefined; stages: string[] }>();
  rotationEnabled = true;
  readonly moves: MoveSecretStageInput[] = [];

  describeSecret(): Promise<SecretDescription> {
    const versionStages = Object.fromEntries(
      [...this.versions].filter(([, v]) => v.stages.length > 0).map(([id, v]) => [id, [...v.stages]]),
    );
    return Promise.resolve({ secretArn: ARN, name: NAME, versionStages, rotation: { enabled: this.rotationEnabled }, tags: {} });
  }

  readSecret(_secretId: string, selector: SecretVersionSelector = {}) {
    const stage = selector.stage ?? (selector.versionId === undefined ? SecretStage.current : undefined);
    const found = [...this.versions].find(
      ([id, v]) => (selector.versionId === undefined || id === selector.versionId) && (stage === undefined || v.stages.includes(stage)),
    );
    if (!found || found[1].value === undefined) return Promise.reject(new SecretNotFoundError('no such version', { secretId: ARN }));
    return Promise.resolve({ secretArn: ARN, name: NAME, versionId: found[0], value: found[1].value, stages: [...found[1].stages] });
  }

  putSecretValue(_secretId: string, input: PutSecretValueInput) {
    const stages = input.stages ?? [SecretStage.current];
    this.versions.set(input.clientRequestToken, { value: input.value, stages: [...stages] });
    return Promise.resolve({ versionId: input.clientRequestToken, stages });
  }

  moveStage(_secretId: string, input: MoveSecretStageInput): Promise<void> {
    this.moves.push(input);
    const holder = [...this.versions].find(([, v]) => v.stages.includes(input.stage))?.[0];
    if (holder !== undefined && holder !== input.toVersionId && input.fromVersionId !== holder) {
      return Promise.reject(new Error(`${input.stage} is on ${holder}: fromVersionId must name it`));
    }
    if (holder !== undefined && holder !== input.toVersionId) {
      const from = this.versions.get(holder)!;
      from.stages = from.stages.filter((s) => s !== input.stage);
      if (input.stage === SecretStage.current) {
        for (const v of this.versions.values()) v.stages = v.stages.filter((s) => s !== SecretStage.previous);
        from.stages.push(SecretStage.previous);
      }
    }
    if (input.toVersionId !== undefined) {
      const to = this.versions.get(input.toVersionId)!;
      if (!to.stages.includes(input.stage)) to.stages.push(input.stage);
    }
    return Promise.resolve();
  }

  stagesOf(versionId: string): string[] {
    return [...(this.versions.get(versionId)?.stages ?? [])].sort();
  }
}

function world(pending: CompanyKeySecret | undefined, pendingStages: string[] = [SecretStage.pending]) {
  const store = new StagedStore();
  store.versions.set(OLD_VERSION, { value: serializeCompanyKeySecret(OLD_KEY), stages: [SecretStage.current] });
  store.versions.set(TOKEN, { value: pending && serializeCompanyKeySecret(pending), stages: pendingStages });
  const scheduled: Revocation[] = [];
  const clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0, 0));
  const deps: KeyRotationDeps = {
    store,
    // The steps under test here never reach the service; one that does fails as an unreachable service would.
    clientFor: () => {
      throw new Error('service unreachable');
    },
    scheduler: {
      schedule: (revocation) => {
        scheduled.push(revocation);
        return Promise.resolve();
      },
      pending: async function* () {},
    },
    settings: rotationSettings({ graceMs: GRACE_MS, consumerCacheTtlMs: 5 * 60_000 }),
    clock,
    logger: new MemoryLogger(),
    metrics: new MemoryMetrics(),
  };
  return { store, scheduled, clock, deps, rotation: new KeyRotation(deps) };
}

const event = (Step: 'createSecret' | 'setSecret' | 'testSecret' | 'finishSecret') => ({ SecretId: ARN, ClientRequestToken: TOKEN, Step });

describe('KeyRotation: version-stage guards and finishSecret', () => {
  afterEach(() => forgetRegisteredSecrets());

  it('refuses a secret whose rotation is off, a version with no stage and a version that is not AWSPENDING, touching nothing', async () => {
    const off = world(NEW_KEY);
    off.store.rotationEnabled = false;
    await expect(off.rotation.runStep(event('finishSecret'))).rejects.toMatchObject({
      name: 'RotationGuardError',
      code: 'rotation_not_enabled',
    });

    const unknown = world(NEW_KEY);
    unknown.store.versions.delete(TOKEN);
    await expect(unknown.rotation.runStep(event('finishSecret'))).rejects.toMatchObject({ code: 'version_not_found' });

    const previous = world(NEW_KEY, [SecretStage.previous]);
    const refused = await previous.rotation.runStep(event('finishSecret')).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RotationGuardError);
    expect(refused).toMatchObject({ code: 'version_not_pending', step: 'finishSecret' });

    for (const w of [off, unknown, previous]) {
      expect(w.store.moves).toEqual([]);
      expect(w.scheduled).toEqual([]);
      expect(w.store.stagesOf(OLD_VERSION)).toEqual([SecretStage.current]);
    }
  });

  it('does nothing for a version that is AWSCURRENT already, pending label or not (a retried finished rotation)', async () => {
    for (const stages of [[SecretStage.current], [SecretStage.current, SecretStage.pending]]) {
      const w = world(NEW_KEY, stages);
      w.store.versions.get(OLD_VERSION)!.stages = [SecretStage.previous];
      await expect(w.rotation.runStep(event('finishSecret'))).resolves.toBe('already_current');
      expect(w.store.moves).toEqual([]);
      expect(w.scheduled).toEqual([]);
    }
  });

  it('finishSecret schedules the old key revoked after the grace period, then promotes: AWSCURRENT on the new version, AWSPENDING gone', async () => {
    const w = world(NEW_KEY);
    await expect(w.rotation.runStep(event('finishSecret'))).resolves.toBe('done');
    expect(w.scheduled).toEqual([
      {
        secretId: ARN,
        companyId: COMPANY,
        apiKeyId: OLD_KEY.apiKeyId,
        keyPrefix: OLD_KEY.keyPrefix,
        revokeAt: w.clock.now() + GRACE_MS,
        rotationToken: TOKEN,
      },
    ]);
    expect(w.store.stagesOf(TOKEN)).toEqual([SecretStage.current]);
    expect(w.store.stagesOf(OLD_VERSION)).toEqual([SecretStage.previous]);
  });

  it('finishSecret schedules no revocation when the pending value holds the current key itself', async () => {
    const w = world(OLD_KEY);
    await expect(w.rotation.runStep(event('finishSecret'))).resolves.toBe('done');
    expect(w.scheduled).toEqual([]);
    expect(w.store.stagesOf(TOKEN)).toEqual([SecretStage.current]);
  });

  it('finishSecret promotes nothing when the revocation cannot be scheduled', async () => {
    const w = world(NEW_KEY);
    w.deps.scheduler.schedule = () => Promise.reject(new Error('scheduler down'));
    await expect(w.rotation.runStep(event('finishSecret'))).rejects.toThrow('scheduler down');
    expect(w.store.stagesOf(OLD_VERSION)).toEqual([SecretStage.current]);
    expect(w.store.versions.get(TOKEN)!.stages).not.toContain(SecretStage.current);
  });

  it('a step that finds no pending value fails and rolls back: AWSPENDING is removed, AWSCURRENT stays', async () => {
    // No value stored and no key asked for: the rollback may remove the label though the keys cannot be listed.
    const w = world(undefined);
    const error = await w.rotation.runStep(event('setSecret')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyRotationError);
    expect(error).toMatchObject({ code: 'pending_value_missing', step: 'setSecret' });
    expect(w.store.stagesOf(TOKEN)).toEqual([]);
    expect(w.store.stagesOf(OLD_VERSION)).toEqual([SecretStage.current]);
    // What "A key rotation failed" starts from: the company (from the secret's name), the step, the error's class and code.
    expect(
      (w.deps.logger as MemoryLogger).entries().find((e) => e.message === 'rotation step failed; rolling the rotation back'),
    ).toMatchObject({
      level: 'error',
      companyId: COMPANY,
      secretId: ARN,
      versionId: TOKEN,
      step: 'setSecret',
      error: expect.objectContaining({ name: 'KeyRotationError', code: 'pending_value_missing' }),
    });
  });

  it('takes a grace period only when it outlasts the consumers’ cache', () => {
    expect(() => rotationSettings({ graceMs: 5 * 60_000, consumerCacheTtlMs: 5 * 60_000 })).toThrow('cache TTL');
    expect(rotationSettings({ graceMs: 5 * 60_000 + 1, consumerCacheTtlMs: 5 * 60_000 }).graceMs).toBe(5 * 60_000 + 1);
  });
});

const OTHER_COMPANY = '9a8e5d6f-7a8b-4c0d-8b7e-4c9a3f1d4c2b';

/** The service's side of a company's keys: what the key list shows, what was asked of it. */
class KeyService {
  readonly keys: { publicId: string; name: string | null; prefix: string; permissions: string[]; revokedAt: string | null }[] = [
    { publicId: OLD_KEY.apiKeyId, name: 'installed', prefix: 'sbx_OldK', permissions: [...OLD_KEY.permissions], revokedAt: null },
  ];
  actsFor = COMPANY;
  readonly created: { name: string; permissions: string[] }[] = [];
  readonly revoked: string[] = [];

  readonly handler: Handler = (request, url) => {
    const page = (results: unknown[]) => json(200, { count: results.length, next: null, previous: null, results });
    if (url.pathname.endsWith('/companies/')) return page([{ publicId: this.actsFor }]);
    if (request.method === 'GET') return page(this.keys.map((k) => ({ ...k, createdAt: '2026-11-02T09:00:00Z', expiresAt: null })));
    if (request.method === 'POST') {
      const body = JSON.parse(request.body!) as { name: string; permissions: string[] };
      this.created.push(body);
      const listed = { publicId: NEW_KEY.apiKeyId, name: body.name, prefix: 'sbx_NewK', permissions: body.permissions, revokedAt: null };
      this.keys.push(listed);
      return json(201, { ...listed, createdAt: '2026-11-02T09:00:00Z', expiresAt: null, key: NEW_KEY.apiKey });
    }
    const id = url.pathname.split('/').at(-2)!;
    this.revoked.push(id);
    for (const k of this.keys) if (k.publicId === id) k.revokedAt = '2026-11-02T09:00:00Z';
    return { status: 204, headers: { 'x-request-id': 'req_0123abcd' }, body: '' };
  };
}

function serviceWorld(pending: CompanyKeySecret | undefined) {
  const w = world(pending);
  const service = new KeyService();
  w.deps.clientFor = (secret) =>
    createAccountingClient({
      baseUrl: BASE_URL,
      credentials: apiKeyAuth(secret.apiKey),
      transport: fakeTransport(service.handler).transport,
    });
  return { ...w, service };
}

describe('KeyRotation: createSecret and testSecret against the service', () => {
  afterEach(() => forgetRegisteredSecrets());

  it('createSecret makes one key named after the rotation with the current key’s permissions, and stores it as AWSPENDING', async () => {
    const w = serviceWorld(undefined);
    await expect(w.rotation.runStep(event('createSecret'))).resolves.toBe('done');
    expect(w.service.created).toEqual([{ name: `acctops-rotation-${TOKEN}`, permissions: OLD_KEY.permissions }]);
    const stored = await w.store.readSecret(ARN, { versionId: TOKEN, stage: SecretStage.pending });
    expect(parseCompanyKeySecret(stored.value)).toMatchObject({ apiKeyId: NEW_KEY.apiKeyId, companyId: COMPANY });
    expect(w.store.stagesOf(OLD_VERSION)).toEqual([SecretStage.current]);
  });

  it('createSecret makes no second key when one of this rotation exists unstored: it revokes that one and fails', async () => {
    const w = serviceWorld(undefined);
    w.service.keys.push({
      publicId: NEW_KEY.apiKeyId,
      name: `acctops-rotation-${TOKEN}`,
      prefix: 'sbx_NewK',
      permissions: [],
      revokedAt: null,
    });
    await expect(w.rotation.runStep(event('createSecret'))).rejects.toMatchObject({ code: 'replacement_key_lost' });
    expect(w.service.created).toEqual([]);
    expect(w.service.revoked).toEqual([NEW_KEY.apiKeyId]);
    expect(w.store.stagesOf(TOKEN)).toEqual([]);
  });

  it('createSecret makes no key from a current key the service lists as revoked', async () => {
    const w = serviceWorld(undefined);
    w.service.keys[0]!.revokedAt = '2026-11-01T09:00:00Z';
    await expect(w.rotation.runStep(event('createSecret'))).rejects.toMatchObject({ code: 'current_key_unknown' });
    expect(w.service.created).toEqual([]);
  });

  it('testSecret passes a pending key that acts for the company with exactly the expected permissions', async () => {
    const w = serviceWorld(NEW_KEY);
    w.service.keys.push({
      publicId: NEW_KEY.apiKeyId,
      name: `acctops-rotation-${TOKEN}`,
      prefix: 'sbx_NewK',
      permissions: ['read_transactions', 'manage_api_keys'],
      revokedAt: null,
    });
    await expect(w.rotation.runStep(event('testSecret'))).resolves.toBe('done');
    expect(w.service.revoked).toEqual([]);
  });

  it.each([
    ['holds other permissions', (s: KeyService) => (s.keys[1]!.permissions = ['read_transactions']), 'permissions_differ'],
    ['acts for another company', (s: KeyService) => (s.actsFor = OTHER_COMPANY), 'wrong_company'],
  ])('testSecret refuses a pending key that %s, and the rollback revokes it', async (_, change, code) => {
    const w = serviceWorld(NEW_KEY);
    w.service.keys.push({
      publicId: NEW_KEY.apiKeyId,
      name: `acctops-rotation-${TOKEN}`,
      prefix: 'sbx_NewK',
      permissions: [...NEW_KEY.permissions],
      revokedAt: null,
    });
    change(w.service);
    await expect(w.rotation.runStep(event('testSecret'))).rejects.toMatchObject({ code, step: 'testSecret' });
    expect(w.service.revoked).toEqual([NEW_KEY.apiKeyId]);
    expect(w.store.stagesOf(TOKEN)).toEqual([]);
    expect(w.store.stagesOf(OLD_VERSION)).toEqual([SecretStage.current]);
  });
});
