import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { MemoryRevocationQueue } from '../../../src/adapters/local/revocation-queue';
import {
  COMPANY_KEY_TAGS,
  type CompanyKeySecret,
  KeyRotation,
  type KeyRotationDeps,
  PURPOSE_COMPANY_KEY,
  parseCompanyKeySecret,
  rotationEventSchema,
  rotationSettings,
  serializeCompanyKeySecret,
  taggedKeyDirectory,
} from '../../../src/core/api-keys';
import { apiKeyAuth, createAccountingClient, type AccountingClient } from '../../../src/core/accounting-api';
import type { DomainEvent, EventPublisher } from '../../../src/core/ports/events';
import { SecretStage } from '../../../src/core/ports/secrets';
import { ManualClock } from '../../../src/core/shared/clock';
import { parseWith } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { keyPrefix } from '../../../src/core/shared/redact';
import { type Dialect, type Permission, type RunningSandbox, type SandboxOptions, startSandbox } from '../../../sandbox';
import { call } from '../sandbox/support';
import { client, type RunningSecretsManager, secretStore, startSecretsManager } from '../../helpers/secrets-manager';

export const ROTATION_LAMBDA = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-rotate-api-key';
export const MINUTE = 60_000;
export const GRACE_MS = 30 * MINUTE;
export const CACHE_TTL_MS = 5 * MINUTE;

export class MemoryEvents implements EventPublisher {
  readonly published: DomainEvent[] = [];
  publish(events: readonly DomainEvent[]): Promise<void> {
    this.published.push(...events);
    return Promise.resolve();
  }
}

/**
 * One world for a rotation test: the sandbox and the Secrets Manager emulator on one manual
 * clock, a company with a key, its secret (tagged as acctops tags them), and our rotation
 * handler registered with the emulator the way Secrets Manager invokes a Lambda.
 */
export class RotationWorld {
  readonly clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0, 0));
  readonly logger = new MemoryLogger();
  readonly metrics = new MemoryMetrics();
  readonly queue = new MemoryRevocationQueue();
  readonly events = new MemoryEvents();
  sandbox!: RunningSandbox;
  sm!: RunningSecretsManager;
  companyId!: string;
  otherCompanyId!: string;
  secretArn!: string;
  initialVersionId!: string;
  initialKey!: CompanyKeySecret;
  rotation!: KeyRotation;

  get store() {
    return secretStore(this.sm);
  }

  get directory() {
    return taggedKeyDirectory(this.store);
  }

  static async start(
    permissions: Permission[] = ['manage_api_keys', 'read_transactions', 'read_categories'],
    dialect: Dialect = 'default',
    /** How the service spells company ids and keys (sandbox options `companyIdCase`, `apiKeys`). */
    spelling: Pick<SandboxOptions, 'companyIdCase' | 'apiKeys'> = {},
  ): Promise<RotationWorld> {
    const world = new RotationWorld();
    world.sandbox = await startSandbox({ port: 0, clock: world.clock, demo: false, dialect, ...spelling });
    world.sm = await startSecretsManager({ port: 0, clock: world.clock });
    world.companyId = (await world.sandbox.admin.createCompany({ name: 'Rotating GmbH' })).publicId;
    world.otherCompanyId = (await world.sandbox.admin.createCompany({ name: 'Somebody Else SARL' })).publicId;
    const created = await world.sandbox.admin.createApiKey({ companyId: world.companyId, permissions, name: 'integration' });
    world.initialKey = {
      apiKey: created.key,
      apiKeyId: created.publicId,
      keyPrefix: keyPrefix(created.key),
      // acctops keeps its own records of a company in lower case (decision 68), whatever the service's spelling.
      companyId: world.companyId.toLowerCase(),
      permissions,
      createdAt: created.createdAt,
    };
    const out = await client(world.sm).send(
      new CreateSecretCommand({
        Name: `acctops/test/company/${world.companyId.toLowerCase()}/api-key`,
        SecretString: serializeCompanyKeySecret(world.initialKey),
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: world.companyId.toLowerCase() },
        ],
      }),
    );
    world.secretArn = out.ARN!;
    world.initialVersionId = out.VersionId!;
    world.rotation = world.rotationOver(world.store);
    world.sm.admin.registerRotationHandler(ROTATION_LAMBDA, (event) =>
      world.rotation.runStep(parseWith(rotationEventSchema, event, 'rotation event')),
    );
    return world;
  }

  /**
   * The rotation use case of this world over `store`; the registered handler runs whichever one
   * `rotation` holds, so a test may swap in one over another store.
   */
  rotationOver(store: KeyRotationDeps['store']): KeyRotation {
    return new KeyRotation({
      store,
      clientFor: (key) => this.clientFor(key),
      scheduler: this.queue,
      settings: rotationSettings({ graceMs: GRACE_MS, consumerCacheTtlMs: CACHE_TTL_MS }),
      clock: this.clock,
      logger: this.logger,
      metrics: this.metrics,
    });
  }

  async stop(): Promise<void> {
    await this.sm.stop();
    await this.sandbox.stop();
  }

  /** The rotation doctor's dependencies on this world (spread with `queue`: the revocation sweep's). */
  doctorDeps() {
    return {
      store: this.store,
      directory: this.directory,
      scheduler: this.queue,
      clientFor: (key: Pick<CompanyKeySecret, 'apiKey' | 'companyId'>) => this.clientFor(key),
      events: this.events,
      clock: this.clock,
      logger: this.logger,
      metrics: this.metrics,
    };
  }

  clientFor(key: Pick<CompanyKeySecret, 'apiKey' | 'companyId'>): AccountingClient {
    return createAccountingClient({
      baseUrl: this.sandbox.baseUrl,
      credentials: apiKeyAuth(key.apiKey, { companyId: key.companyId }),
      clock: this.clock,
      logger: this.logger,
      retry: { maxAttempts: 1 },
    });
  }

  /** RotateSecret as `acctops keys rotate` sends it. */
  startRotation(): Promise<{ versionId: string }> {
    return this.store.startRotation(this.secretArn, { lambdaArn: ROTATION_LAMBDA, automaticallyAfterDays: 30 });
  }

  /** Labels by version, straight from the emulator's state. */
  stages(): Record<string, string[]> {
    const snapshot = this.sm.admin.secret(this.secretArn)!;
    return Object.fromEntries(snapshot.versions.filter((v) => v.stages.length > 0).map((v) => [v.versionId, [...v.stages].sort()]));
  }

  async current(): Promise<CompanyKeySecret & { versionId: string }> {
    const secret = await this.store.readSecret(this.secretArn, { stage: SecretStage.current });
    return { ...parseCompanyKeySecret(secret.value), versionId: secret.versionId };
  }

  keys() {
    return this.sandbox.admin.listApiKeys({ companyId: this.companyId });
  }

  /** Live keys (not revoked) of the company. */
  async liveKeys() {
    return (await this.keys()).filter((k) => k.revokedAt === null);
  }

  /** The status of `GET /companies/` with `apiKey`: 200 while it works, 401 once revoked. */
  async statusWith(apiKey: string): Promise<{ status: number; code?: string }> {
    const res = await call(this.sandbox.baseUrl, '/companies/', { bearer: apiKey });
    return { status: res.status, code: res.body?.error?.code };
  }

  /** Every full key any version of the secret ever held, plus the initial one: the canaries. */
  fullKeys(): string[] {
    const snapshot = this.sm.admin.secret(this.secretArn)!;
    const fromVersions = snapshot.versions.flatMap((v) => {
      const value = v.secretString;
      if (!value) return [];
      try {
        return [parseCompanyKeySecret(value).apiKey];
      } catch {
        return [];
      }
    });
    return [...new Set([this.initialKey.apiKey, ...fromVersions])];
  }
}
