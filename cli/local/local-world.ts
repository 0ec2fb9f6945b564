import { randomBytes } from 'node:crypto';
import { rename, rm, stat } from 'node:fs/promises';
import * as z from 'zod';
import { AwsSecretProvisioner } from '../../src/adapters/aws/secret-provisioner';
import { AwsSecretStore } from '../../src/adapters/aws/secrets-manager';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import { FileRegistryTable, MemoryRegistryTable } from '../../src/adapters/local/file-company-registry';
import { FileTokenStore } from '../../src/adapters/local/file-token-store';
import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { FileRevocationQueue, MemoryRevocationQueue } from '../../src/adapters/local/revocation-queue';
import { apiKeyAuth, createAccountingClient, type AccountingClient, type CredentialProvider } from '../../src/core/accounting-api';
import {
  COMPANY_KEY_TAGS,
  CompanyApiKeys,
  type CompanyKeyDirectory,
  type CompanyKeySecret,
  KeyRotation,
  matchListedKey,
  KeyRotationError,
  PURPOSE_COMPANY_KEY,
  type RevokeDeps,
  rotationEventSchema,
  rotationSettings,
  runDueRevocations,
  serializeCompanyKeySecret,
  taggedKeyDirectory,
  type DueRevocationsResult,
  type StepOutcome,
} from '../../src/core/api-keys';
import {
  cachedInstitutionCredential,
  parseInstitutionCredential,
  type InstitutionCredential,
} from '../../src/core/credentials/institution-credential';
import { institutionCredentialProvider } from '../../src/core/credentials/institution-provider';
import {
  companyIdSchema,
  registeredCompanySchema,
  type CompanyRegistry,
  type RegistryTable,
} from '../../src/core/companies/company-registry';
import { registryRemovedAt } from '../../src/core/companies/company-removal';
import { FORMATS } from '../../src/core/exports/formats/datasets';
import type { TaxReportFieldNames } from '../../src/core/exports/formats/tax-report-fields';
import { checkHealth, type HealthReport } from '../../src/core/health/check-health';
import { institutionCredentialProbe, serviceReachableProbe } from '../../src/core/health/probes';
import { SecretStage } from '../../src/core/ports/secrets';
import { issuesFromZod, issuesText, ValidationError, parseWith, type FieldIssue } from '../../src/core/shared/errors';
import type { Logger } from '../../src/core/shared/logger';
import { lazySchema } from '../../src/core/shared/lazy-schema';
import { noMetrics } from '../../src/core/shared/metrics';
import { keyPrefix } from '../../src/core/shared/redact';
import { TokenLifecycle } from '../../src/core/tokens/token-lifecycle';
import {
  DIALECTS,
  hasSeededDemoCredentials,
  MINIMAL_TAX_REPORT_FIELDS,
  startSandbox,
  type Dialect,
  type RunningSandbox,
} from '../../sandbox';
import { startSecretsManager, type RunningSecretsManager } from '../../sandbox/secrets-manager';
import { CliConfigError } from '../errors';
import { isFsError } from '../fs-failure';
import { onForcedExit, onInterrupt } from '../interrupt';
import { readJsonFile, removeStaleTemporaries, writePrivateJsonFile } from '../../src/adapters/local/private-json-file';
import { NamedCompanyRegistry } from '../operations/named-company-registry';
import type { InterruptedWork, OnInterrupted, StoppedRotation } from '../operations/operations';
import { LeaseHoldingStore, leaseOwnerPrefix, type ReclaimedLeases } from './held-leases';
import {
  createStateDir,
  DamagedStateFileError,
  LocalClock,
  lockStateDir,
  type TakenOverLock,
  STATE_FILES,
  stateDirExists,
  StateFileUnreadableError,
  StateNotSavedError,
  statePath,
  type StateFileName,
} from './state-dir';
import { sandboxSnapshotSchema } from '../../sandbox';
import { secretsSnapshotSchema } from '../../sandbox/secrets-manager';

/**
 * The local embedded mode: one command's world, loaded from the state directory and saved back
 * when the command ends (docs/cli.md, "The local mode").
 *
 *   sandbox.json  -> the embedded service (the sandbox, restored from its snapshot)
 *   secrets.json  -> the Secrets Manager emulator (restored), read through the real SDK adapter
 *   tokens.json, revocations.json, companies.json, exports/ -> the local adapters, written as they change
 *
 * Everything runs the real use cases against real HTTP peers on 127.0.0.1, on one LocalClock.
 */

const LOCAL_STATE_FORMAT = 'acctops.local-state';
const stateSchema = z.object({
  format: z.literal(LOCAL_STATE_FORMAT),
  formatVersion: z.literal(1),
  createdAt: z.iso.datetime(),
  /** LocalClock's offset from the system clock. */
  clockOffsetMs: z.int(),
  /** Grace period of rotated keys, as a stage's `apiKeys.revocationGraceMinutes`. */
  revocationGraceMinutes: z.int().min(1),
  /** Days between automatic rotations, as a stage's `apiKeys.rotationDays`. */
  rotationDays: z.int().min(1),
  institutionSecret: z.string().min(1),
  /**
   * The embedded service's dialect (sandbox/dialect.ts), chosen when the state is created
   * (`npm start -- --dialect minimal`) and kept, so every later command talks to the same service.
   * States from before dialects existed are `default`.
   */
  dialect: z.enum(DIALECTS).default('default'),
  /**
   * Lifetime of an access token the service states nothing about (no JWT `exp`, no expiry field),
   * as a stage's `accessTokenLifetimeSeconds`; `acctops local set --access-lifetime` changes it.
   */
  accessTokenLifetimeSeconds: z.int().min(60).max(86_400).default(1800),
});
export type LocalState = z.output<typeof stateSchema>;

/** The rotation function's ARN as the emulator knows it: our KeyRotation, registered in process. */
export const LOCAL_ROTATION_LAMBDA = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-local-rotate-api-key';
export const LOCAL_INSTITUTION_SECRET = 'acctops/local/institution';
const SANDBOX_SEED = 1;
/** Local consumers cache a key this long; the grace period must outlast it (rotationSettings). */
const KEY_CACHE_TTL_MS = 5 * 60_000;
/**
 * Chosen at random per process, and the emulator accepts no other key id: while a command runs its
 * emulator listens on loopback, where any account of the host could otherwise read every secret
 * in it (docs/security.md). Explicit credentials also keep the SDK off the default chain.
 */
const EMULATOR_CREDENTIALS = {
  accessKeyId: `AKIA${randomBytes(8).toString('hex').toUpperCase()}`,
  secretAccessKey: randomBytes(30).toString('base64url'),
};

export const companySecretName = (companyId: string) => `acctops/local/company/${companyId}/api-key`;

/**
 * How long an interrupted command lets a rotation step or a refresh under way end by itself, and
 * how long it gives the rollback of a stopped rotation: together well inside the interrupt steps'
 * 10 s (cli/interrupt.ts), which must still leave the world time to save.
 */
const IN_FLIGHT_WAIT_MS = 3_000;
const ROLLBACK_WAIT_MS = 3_000;

export interface LocalWorldOptions {
  stateDir: string;
  logger: Logger;
  env: NodeJS.ProcessEnv;
  /**
   * The dialect asked for. A new state takes it (else `default`); an existing state must already
   * have it: the saved service cannot change its shapes under the tokens it issued.
   */
  dialect?: Dialect;
  /**
   * The doctor's mode: a damaged state file is recorded in `damaged` and stood in for (empty, in
   * memory, never saved over the damaged file) instead of failing the command, so that the doctor
   * reports the rest. Every other command refuses a damaged file (DamagedStateFileError, exit 3).
   */
  tolerateDamage?: boolean;
  /**
   * The command only reads (`users list`, `keys status`, `companies list`, `doctor` without
   * --repair, `local status`): it leaves the state directory as it found it. What the service and
   * the emulator record of its own requests (a key's last use, a secret's last access) is not saved;
   * anything else it changes (a revocation that fell due and ran) is, as by every command. A state
   * without companies.json gets its seeded registry in memory only. A state the command creates is
   * written as for any command.
   */
  readOnly?: boolean;
  /**
   * The command's line for an interrupt (`onInterrupted`), registered as the world registers its
   * step: a signal while the world still opens gets it too, not a silent exit.
   */
  onInterrupted?: OnInterrupted;
}

/** The default settings of a new local state (`acctops local repair` also rebuilds state.json with them). */
export function defaultLocalState(dialect: Dialect = 'default'): LocalState {
  return {
    format: LOCAL_STATE_FORMAT,
    formatVersion: 1,
    createdAt: new Date().toISOString(),
    clockOffsetMs: 0,
    revocationGraceMinutes: 30,
    rotationDays: 30,
    institutionSecret: LOCAL_INSTITUTION_SECRET,
    dialect,
    accessTokenLifetimeSeconds: 1800,
  };
}

/** Reads one state file; a file that does not parse is a DamagedStateFileError, thrown or collected. */
async function readStateFile<S extends z.ZodType>(
  stateDir: string,
  file: StateFileName,
  schema: S,
  damaged: DamagedStateFileError[] | undefined,
) {
  try {
    return await readJsonFile(statePath(stateDir, file), schema);
  } catch (error) {
    if (isFsError(error)) throw new StateFileUnreadableError(statePath(stateDir, file), error);
    if (!(error instanceof ValidationError)) throw error;
    const damage = new DamagedStateFileError(file, statePath(stateDir, file), error);
    if (!damaged) throw damage;
    damaged.push(damage);
    return undefined;
  }
}

/**
 * The state files a local adapter owns, each with one read through that adapter: the adapter holds
 * the file's schema, so a read that fails validation is what a damaged file is.
 */
const STORE_FILES = {
  tokens: (path: string) => new FileTokenStore({ path }).list({ limit: 1, cursor: null }),
  revocations: (path: string) => new FileRevocationQueue({ path }).due(0),
  // The file's own schema only: an entry that fails its schema is the registry's finding, not damage.
  companies: (path: string) => new FileRegistryTable({ path }).scanPage({ cursor: null, limit: 1 }),
} as const;

/** The adapter-owned state files that do not parse (STORE_FILES), in a fixed order. */
async function checkStoreFiles(stateDir: string): Promise<DamagedStateFileError[]> {
  const found: DamagedStateFileError[] = [];
  for (const [file, read] of Object.entries(STORE_FILES) as [keyof typeof STORE_FILES, (path: string) => Promise<unknown>][]) {
    try {
      await read(statePath(stateDir, file));
    } catch (error) {
      if (isFsError(error)) throw new StateFileUnreadableError(statePath(stateDir, file), error);
      if (!(error instanceof ValidationError)) throw error;
      found.push(new DamagedStateFileError(file, statePath(stateDir, file), error));
    }
  }
  return found;
}

export class LocalWorld {
  readonly kind = 'local';
  /** The rotation function `keys install` turns on: our KeyRotation, registered with the emulator. */
  readonly rotationLambdaArn = LOCAL_ROTATION_LAMBDA;
  readonly baseUrl: string;
  readonly secrets: AwsSecretStore;
  readonly directory: CompanyKeyDirectory;
  readonly companyKeys: CompanyApiKeys;
  /** tokens.json, knowing the leases this command holds (released on an interrupt). */
  readonly tokens: LeaseHoldingStore;
  /** Leases of dead acctops processes this command released when it opened the state (none for a read-only one). */
  reclaimedLeases: ReclaimedLeases = { users: [], holders: [] };
  /**
   * The state was made before the demo's credentials were random (decision 97): its institution
   * secret, and the demo keys not yet rotated away, follow from the public seed. Kept working (its
   * tokens, exports and registry are the operator's); the command says so, `local reset` ends it.
   */
  seededCredentials = false;
  /**
   * The state lock this command took over from a process that no longer runs, with the files of
   * that process's cut-short save it completed (saving.json; none when it left no save under way).
   */
  takenOverLock: (TakenOverLock & { completedSave: string[] }) | undefined;
  readonly revocations: FileRevocationQueue | MemoryRevocationQueue;
  /** The company registry's table: companies.json, or an empty stand-in when it is damaged (doctor only). */
  readonly companies: RegistryTable;
  /** State files found damaged (doctor only, see LocalWorldOptions.tolerateDamage); they are not saved over. */
  readonly damaged: DamagedStateFileError[] = [];
  /** Exports land in the state directory: `<stateDir>/exports/company=…/period=…/`. */
  readonly exportStore: DirObjectStore;
  readonly events = new MemoryEventPublisher();
  readonly rotation: KeyRotation;
  readonly graceMs: number;
  /** The state's `accessTokenLifetimeSeconds`, changed by `local set` and saved with the state. */
  accessTokenLifetimeSeconds: number;
  /** Where the institution credential comes from: ACCTOPS_INSTITUTION, or the local secret. */
  readonly institutionSource: 'environment' | 'secret';
  private readonly institution: CredentialProvider;
  private closing: Promise<void> | undefined;
  /** Set once a signal is being handled: the rollback and lease release run before any save. */
  private interruptCleanup: Promise<void> | undefined;
  private readonly interruptListeners: OnInterrupted[] = [];
  /** The rotation steps under way in this process (the emulator runs them inside RotateSecret). */
  private readonly rotationSteps = new Set<Promise<void>>();
  /** Each secret's rotation this command's emulator ran a step of: secret ARN -> its version. */
  private readonly rotationsRun = new Map<string, string>();
  private rotationsStopped = false;
  /** Each snapshot file's content as loaded or last written (`fingerprint`): save() writes only what differs. */
  private readonly saved: Partial<Record<SnapshotFile, string>> = {};
  /**
   * How far the save under way has come, for a second signal's line (`forcedExitPart`): `writing`
   * before saving.json is in place (the files are still the last save's), `journaled` after (the
   * next command completes the save), `saved` once close() has saved.
   */
  private savePhase: 'idle' | 'writing' | 'journaled' | 'saved' = 'idle';
  /**
   * The names the embedded service gives our tax-report fields where they are not ours: the minimal
   * dialect's (sandbox/dialect.ts). Without them the exports of a minimal-dialect state read no
   * period or date of a report and keep each in every month, so `npm start -- --dialect minimal`
   * would not be the same demo (decision 88 in docs/architecture.md).
   */
  taxReportFields(): TaxReportFieldNames | undefined {
    return this.state.dialect === 'minimal' ? MINIMAL_TAX_REPORT_FIELDS : undefined;
  }

  /** The registry is an in-memory stand-in, seeded by seedRegistry, for a read-only command on a state without companies.json. */
  private readonly registryInMemory: boolean;
  private registrySeeded = false;

  private constructor(
    readonly stateDir: string,
    readonly clock: LocalClock,
    readonly state: LocalState,
    readonly sandbox: RunningSandbox,
    readonly sm: RunningSecretsManager,
    readonly logger: Logger,
    /** True when this command created the state directory's world. */
    readonly created: boolean,
    private readonly unlock: () => Promise<void>,
    env: NodeJS.ProcessEnv,
    damaged: DamagedStateFileError[],
    private readonly readOnly: boolean,
    registryInMemory: boolean,
  ) {
    this.damaged = damaged;
    this.registryInMemory = registryInMemory && !this.isDamaged('companies');
    this.baseUrl = sandbox.baseUrl;
    this.secrets = new AwsSecretStore({ endpoint: sm.endpoint, region: sm.region, credentials: EMULATOR_CREDENTIALS, maxAttempts: 2 });
    this.directory = taggedKeyDirectory(this.secrets);
    this.companyKeys = new CompanyApiKeys(this.secrets, this.directory, { ttlMs: KEY_CACHE_TTL_MS, clock, logger });
    this.tokens = new LeaseHoldingStore(new FileTokenStore({ path: statePath(stateDir, 'tokens') }));
    this.revocations = this.isDamaged('revocations')
      ? new MemoryRevocationQueue()
      : new FileRevocationQueue({ path: statePath(stateDir, 'revocations') });
    this.companies =
      this.isDamaged('companies') || this.registryInMemory
        ? new MemoryRegistryTable()
        : new FileRegistryTable({ path: statePath(stateDir, 'companies') });
    this.exportStore = new DirObjectStore(stateDir);
    this.graceMs = state.revocationGraceMinutes * 60_000;
    this.accessTokenLifetimeSeconds = state.accessTokenLifetimeSeconds;
    const companies = this.companies;
    this.rotation = new KeyRotation({
      store: this.secrets,
      // As the deployed rotation function: createSecret refuses a company companies.json says was removed.
      companyRemovedAt: registryRemovedAt((companyId) => companies.getItem(companyId)),
      clientFor: (key) => this.clientForKey(key),
      scheduler: this.revocations,
      settings: rotationSettings({ graceMs: this.graceMs, consumerCacheTtlMs: KEY_CACHE_TTL_MS }),
      clock,
      logger,
      metrics: noMetrics,
    });
    sm.admin.registerRotationHandler(LOCAL_ROTATION_LAMBDA, (event) => this.runRotationStep(event));
    const fromEnv = env.ACCTOPS_INSTITUTION;
    if (fromEnv !== undefined && fromEnv.trim() !== '') {
      const credential = parseInstitutionOverride(fromEnv);
      this.institutionSource = 'environment';
      this.institution = { get: () => Promise.resolve({ kind: 'institution', ...credential }) };
    } else {
      this.institutionSource = 'secret';
      this.institution = institutionCredentialProvider(
        cachedInstitutionCredential(this.secrets, state.institutionSecret, { clock, logger }),
      );
    }
  }

  /** Loads the world of `stateDir`, creating it (seeded sandbox, provisioned secrets) on first use. */
  static async open(options: LocalWorldOptions): Promise<LocalWorld> {
    const { stateDir, logger } = options;
    await createStateDir(stateDir);
    // Until the world has its own step (saveOnSignals), a signal gets the command's line (nothing
    // was undone: nothing had started) and the lock is released (lockStateDir), not a silent exit
    // that left the lock behind.
    const { onInterrupted } = options;
    const stopOpening = onInterrupted
      ? onInterrupt((signal) => onInterrupted(signal, { rotations: [], releasedLeases: [], refresh: null }))
      : () => undefined;
    let unlock: () => Promise<void>;
    let takenOver: TakenOverLock | undefined;
    try {
      unlock = await lockStateDir(stateDir, { onTakeOver: (lock) => (takenOver = lock) });
    } catch (error) {
      stopOpening();
      throw error;
    }
    let sandbox: RunningSandbox | undefined;
    let sm: RunningSecretsManager | undefined;
    let world: LocalWorld | undefined;
    try {
      // A process killed mid-write (kill -9) left its temporary file, which may hold every token; the lock makes it stale.
      for (const file of Object.keys(STATE_FILES) as StateFileName[]) await removeStaleTemporaries(statePath(stateDir, file));
      const completedSave = await completeInterruptedSave(stateDir, logger);
      const damaged = options.tolerateDamage === true ? ([] as DamagedStateFileError[]) : undefined;
      const saved = await readStateFile(stateDir, 'state', stateSchema, damaged);
      const stateDamaged = damaged?.some((d) => d.file === 'state') === true;
      const created = saved === undefined && !stateDamaged;
      if (created && (await exists(statePath(stateDir, 'sandbox')))) {
        throw new CliConfigError(
          `${statePath(stateDir, 'state')} is missing but the state directory has other files`,
          '`acctops local repair` rebuilds it; `acctops local reset --yes` starts again',
        );
      }
      const fromEnv = dialectFromEnv(options.env);
      const state: LocalState = saved ?? defaultLocalState(options.dialect ?? fromEnv);
      if (options.dialect !== undefined && options.dialect !== state.dialect) {
        throw new CliConfigError(
          `the local state in ${stateDir} runs the ${state.dialect} dialect, not ${options.dialect}`,
          `start again with \`npm start -- --reset --dialect ${options.dialect}\`, or leave out --dialect`,
        );
      }
      // Refused as --dialect is (the flag wins over the variable): ignored, the command would talk to
      // a service of the other dialect than the operator set out to try.
      if (options.dialect === undefined && fromEnv !== undefined && fromEnv !== state.dialect) {
        throw new CliConfigError(
          `the local state in ${stateDir} runs the ${state.dialect} dialect, not the ${fromEnv} one ACCTOPS_DIALECT names`,
          `nothing was run: unset ACCTOPS_DIALECT (the state keeps its dialect), or start a ${fromEnv} state: \`acctops local reset --yes\`, then run again`,
        );
      }
      const clock = new LocalClock(state.clockOffsetMs);
      const sandboxState = created ? undefined : await readStateFile(stateDir, 'sandbox', sandboxSnapshotSchema, damaged);
      const secretsState = created ? undefined : await readStateFile(stateDir, 'secrets', secretsSnapshotSchema, damaged);
      const lost = (file: StateFileName) => damaged?.some((d) => d.file === file) === true;
      if (!created && ((!sandboxState && !lost('sandbox')) || (!secretsState && !lost('secrets')))) {
        throw new CliConfigError(
          `the state directory ${stateDir} is incomplete (sandbox.json or secrets.json missing)`,
          'run `acctops local reset --yes` to start again',
        );
      }
      const storeDamage = await checkStoreFiles(stateDir);
      if (storeDamage.length > 0 && !damaged) throw storeDamage[0];
      damaged?.push(...storeDamage);
      // A damaged sandbox.json: an empty service stands in, so the doctor's probes fail and say so.
      sandbox = await startSandbox({
        port: 0,
        clock,
        dialect: state.dialect,
        // The command drives its sandbox in process: no admin door on loopback (docs/security.md).
        adminHttp: false,
        // The data from the fixed seed, the credentials from node:crypto: the seed is in the repository.
        ...(sandboxState ? { state: sandboxState } : { seed: SANDBOX_SEED, demo: !lost('sandbox'), seededCredentials: false }),
      });
      sm = await startSecretsManager({
        port: 0,
        clock,
        rotationMode: 'sync',
        accessKeyId: EMULATOR_CREDENTIALS.accessKeyId,
        ...(secretsState ? { state: secretsState } : {}),
      });
      const readOnly = options.readOnly === true;
      const registryInMemory = readOnly && !created && !(await exists(statePath(stateDir, 'companies')));
      world = new LocalWorld(
        stateDir,
        clock,
        state,
        sandbox,
        sm,
        logger,
        created,
        unlock,
        options.env,
        damaged ?? [],
        readOnly,
        registryInMemory,
      );
      world.seededCredentials = sandboxState !== undefined && hasSeededDemoCredentials(sandboxState);
      if (takenOver !== undefined) world.takenOverLock = { ...takenOver, completedSave };
      if (onInterrupted) world.onInterrupted(onInterrupted);
      // In one go, no signal can land between them: the world's step takes over from the opening's.
      world.saveOnSignals();
      stopOpening();
      if (!readOnly && !world.isDamaged('tokens')) world.reclaimedLeases = await world.reclaimAbandonedLeases();
      if (created) {
        await world.provision();
        await world.save();
      } else {
        // What the files hold now: unchanged at the end, they are not written again.
        for (const [file, snapshot] of world.snapshots()) world.saved[file] = fingerprint(snapshot(), readOnly);
      }
      return world;
    } catch (error) {
      await sm?.stop().catch(() => undefined);
      await sandbox?.stop().catch(() => undefined);
      await unlock();
      world?.removeSignalHandlers();
      stopOpening();
      throw error;
    }
  }

  /**
   * Takes back the leases that acctops processes of this host, now dead, left in tokens.json
   * (LeaseHoldingStore.reclaimAbandoned); the state lock proves no command of this directory runs.
   * A read-only command does not: it writes no state file. Never fails the command: a lease it
   * could not take back runs out on its own, as before.
   */
  private async reclaimAbandonedLeases(): Promise<ReclaimedLeases> {
    try {
      const reclaimed = await this.tokens.reclaimAbandoned(this.clock.now());
      if (reclaimed.users.length > 0) this.logger.info('leases of dead acctops processes released', { ...reclaimed });
      return reclaimed;
    } catch (error) {
      this.logger.warn('leases of dead acctops processes not released; they run out on their own', { error });
      return { users: [], holders: [] };
    }
  }

  /**
   * What a deployment provides, done locally: the institution credential secret and one secret per
   * company holding its full-access demo key, tagged and with rotation configured (as the stack's
   * RotationSchedule would), from the sandbox's demo credentials.
   */
  private async provision(): Promise<void> {
    const demo = this.sandbox.demo;
    if (!demo) throw new CliConfigError('the embedded sandbox has no demo data to provision from');
    const provisioner = new AwsSecretProvisioner({
      endpoint: this.sm.endpoint,
      region: this.sm.region,
      credentials: EMULATOR_CREDENTIALS,
      maxAttempts: 2,
    });
    await provisioner.createSecret({
      name: this.state.institutionSecret,
      value: demo.institution.header,
      description: 'acctops local mode: the institution credential (sandbox demo institution)',
    });
    for (const company of demo.companies) {
      const key = company.apiKeys.find((k) => k.permissions.includes('full_access'));
      if (!key) continue;
      const match = matchListedKey(await this.sandbox.admin.listApiKeys({ companyId: company.publicId }), key.key);
      if (match.kind !== 'found') continue;
      const listed = match.key;
      const secret: CompanyKeySecret = {
        apiKey: key.key,
        apiKeyId: listed.publicId,
        keyPrefix: keyPrefix(key.key),
        companyId: company.publicId,
        permissions: listed.permissions,
        createdAt: listed.createdAt,
      };
      const { arn } = await provisioner.createSecret({
        name: companySecretName(company.publicId),
        value: serializeCompanyKeySecret(secret),
        description: `acctops local mode: API key of ${company.name}`,
        tags: { [COMPANY_KEY_TAGS.purpose]: PURPOSE_COMPANY_KEY, [COMPANY_KEY_TAGS.company]: company.publicId },
      });
      this.sm.admin.configureRotation(arn, {
        lambdaArn: LOCAL_ROTATION_LAMBDA,
        rules: { AutomaticallyAfterDays: this.state.rotationDays },
      });
    }
  }

  /** Creation, retirement and restore of secrets in the emulator (`keys install`, `companies remove|restore`). */
  secretLifecycle(): AwsSecretProvisioner {
    return new AwsSecretProvisioner({
      endpoint: this.sm.endpoint,
      region: this.sm.region,
      credentials: EMULATOR_CREDENTIALS,
      maxAttempts: 2,
    });
  }

  /** The institution client (user tokens): credential from ACCTOPS_INSTITUTION or the local secret. */
  institutionClient(): AccountingClient {
    return this.client(this.institution);
  }

  /** A client with the institution credential as stored now (no cache, ACCTOPS_INSTITUTION ignored): to verify the secret. */
  storedInstitutionClient(): AccountingClient {
    return this.client(
      institutionCredentialProvider(
        cachedInstitutionCredential(this.secrets, this.state.institutionSecret, { ttlMs: 0, clock: this.clock }),
      ),
    );
  }

  /** The health probes against the stored institution credential (what check-health runs in AWS). */
  checkStoredInstitution(): Promise<HealthReport> {
    return checkHealth({ clock: this.clock, logger: this.logger }, [
      institutionCredentialProbe({ get: () => this.readInstitutionCredential() }),
      serviceReachableProbe(this.storedInstitutionClient()),
    ]);
  }

  /**
   * The doctor's probes: the stored credential, and, when ACCTOPS_INSTITUTION overrides it, the
   * override too, since that is what `users onboard` would send. A wrong override must not pass.
   */
  async checkInstitution(): Promise<HealthReport> {
    const stored = await this.checkStoredInstitution();
    if (this.institutionSource !== 'environment') return stored;
    const override = await checkHealth({ clock: this.clock, logger: this.logger }, [serviceReachableProbe(this.institutionClient())]);
    const probes = [...stored.probes, ...override.probes.map((p) => ({ ...p, name: `${p.name} (ACCTOPS_INSTITUTION)` }))];
    return { ...stored, ok: probes.every((p) => p.ok), probes };
  }

  /** A fresh read of the institution credential, for the doctor (no cache). */
  readInstitutionCredential(): Promise<InstitutionCredential> {
    return cachedInstitutionCredential(this.secrets, this.state.institutionSecret, { ttlMs: 0, clock: this.clock }).get();
  }

  clientForKey(key: Pick<CompanyKeySecret, 'apiKey' | 'companyId'>): AccountingClient {
    return this.client(apiKeyAuth(key.apiKey, { companyId: key.companyId }));
  }

  /** A client acting for `companyId` with its stored key (re-read after a 401: a rotation in between is fine). */
  companyClient(companyId: string): AccountingClient {
    return this.client(this.companyKeys.credentials(companyId));
  }

  lifecycle(): TokenLifecycle {
    return new TokenLifecycle({
      store: this.tokens,
      institution: this.institutionClient().institution,
      events: this.events,
      clock: this.clock,
      logger: this.logger,
      metrics: noMetrics,
      // Names this process, so that a later command can take back a lease it leaves by dying.
      ownerPrefix: leaseOwnerPrefix(),
      settings: { accessTokenLifetimeMs: this.accessTokenLifetimeSeconds * 1000 },
    });
  }

  revokeDeps(): RevokeDeps {
    return { store: this.secrets, clientFor: (key) => this.clientForKey(key), clock: this.clock, logger: this.logger, metrics: noMetrics };
  }

  /** The company registry over `companies` (inside the world's lock, so two commands never write it at once). */
  registry(logger?: Logger): CompanyRegistry {
    return new NamedCompanyRegistry(this.companies, { defaultFormats: FORMATS, ...(logger ? { logger } : {}) }, 'local');
  }

  /**
   * Seeds a registry that has no `companies.json` with the companies whose key secrets the world
   * holds (as the stack seeds cdk.json's companies); after that `acctops companies add|remove`
   * decides. Every local command runs it when it opens the world, so `companies list` and `export`
   * see the same companies from the first command on: seeded only by `export`, a `companies add`
   * before it left the demo companies out of every export. `local repair` runs it after setting a
   * damaged companies.json aside. Not with a damaged state file, whose empty stand-in would seed an
   * empty registry for good. Returns the companies seeded; undefined when the file was there.
   */
  async seedRegistry(): Promise<string[] | undefined> {
    if (this.damaged.length > 0) return undefined;
    if (this.registryInMemory) {
      // A read-only command: the same companies as a seeded file, written by the first command that changes something.
      if (this.registrySeeded) return undefined;
      this.registrySeeded = true;
    } else {
      const present = await stat(statePath(this.stateDir, 'companies')).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'ENOENT') return false;
          throw error;
        },
      );
      if (present) return undefined;
    }
    const registry = this.registry();
    const seeded: string[] = [];
    for await (const entry of this.directory.list()) {
      await registry.add({ companyId: entry.companyId }, this.clock.now());
      seeded.push(entry.companyId);
    }
    return seeded;
  }

  /** The local stand-in for the one-time schedules: revokes the old keys whose grace period is over. */
  runDueRevocations(): Promise<DueRevocationsResult> {
    return runDueRevocations({ ...this.revokeDeps(), queue: this.revocations });
  }

  private client(credentials: CredentialProvider): AccountingClient {
    return createAccountingClient({
      baseUrl: this.baseUrl,
      credentials,
      clock: this.clock,
      logger: this.logger,
      timeoutMs: 10_000,
      retry: { maxAttempts: 3, maxElapsedMs: 15_000 },
    });
  }

  isDamaged(file: StateFileName): boolean {
    return this.damaged.some((d) => d.file === file);
  }

  /**
   * Writes the embedded service, the secrets and the clock back to the state directory, each file
   * only when what it would hold changed since it was loaded or last written (for a read-only
   * command, beyond the usage records of its own requests: `fingerprint`). A damaged file is left
   * as it is (its stand-in is empty), for `acctops local repair` or a backup.
   */
  async save(): Promise<void> {
    const changed: { file: SnapshotFile; value: unknown; print: string }[] = [];
    for (const [file, snapshot] of this.snapshots()) {
      if (this.isDamaged(file)) continue;
      const value = snapshot();
      const print = fingerprint(value, this.readOnly);
      if (print !== this.saved[file]) changed.push({ file, value, print });
    }
    // The files go one by one: a process killed between two of them (kill -9, a second Ctrl-C) left
    // a service and secrets from different moments, e.g. the old key revoked in sandbox.json while
    // secrets.json still stored it. Written first, saving.json holds them all, and the next command
    // completes the save (completeInterruptedSave).
    const journal = changed.length > 1 ? statePath(this.stateDir, 'saving') : undefined;
    let journaled = false;
    let path = journal;
    try {
      if (changed.length > 0) this.savePhase = 'writing';
      if (journal !== undefined) {
        await writePrivateJsonFile(journal, { format: SAVING_FORMAT, files: Object.fromEntries(changed.map((c) => [c.file, c.value])) });
        journaled = true;
        this.savePhase = 'journaled';
      }
      for (const { file, value, print } of changed) {
        path = statePath(this.stateDir, file);
        await writePrivateJsonFile(path, value);
        this.saved[file] = print;
      }
      path = journal;
      if (journal !== undefined) await rm(journal, { force: true });
      this.savePhase = 'idle';
    } catch (error) {
      // A raw ENOSPC would leave the operator guessing whether the command happened and what the
      // directory holds now; the line says both.
      if (isFsError(error) && path !== undefined) throw new StateNotSavedError(path, error, journaled);
      throw error;
    }
  }

  /** The files save() writes, in its order, each with what it would write now. */
  private snapshots(): [SnapshotFile, () => unknown][] {
    return [
      ['sandbox', () => this.sandbox.snapshot()],
      ['secrets', () => this.sm.admin.exportState()],
      ['state', () => ({ ...this.state, clockOffsetMs: this.clock.offsetMs, accessTokenLifetimeSeconds: this.accessTokenLifetimeSeconds })],
    ];
  }

  /**
   * Ctrl+C or a SIGTERM in the middle of a command: first undo what must not outlive the command
   * (a rotation half done, leases it holds: `cleanUpInterrupted`), then save what the embedded peers
   * hold (a key the service created is in sandbox.json as well as in secrets.json) before the
   * process ends, so the state directory stays consistent. An export's own step (stop its writes,
   * remove what they staged) runs before this one: it registered first (cli/interrupt.ts).
   */
  private saveOnSignals(): void {
    const stopSaving = onInterrupt(async (signal) => {
      this.interruptCleanup ??= this.cleanUpInterrupted(signal);
      await this.interruptCleanup;
      await this.close();
    });
    const stopSaying = onForcedExit(() => this.forcedExitPart());
    this.removeSignalHandlers = () => {
      stopSaving();
      stopSaying();
    };
  }

  /**
   * A second signal's part of its line (cli/interrupt.ts): what became of this command's state. The
   * embedded service, the secrets and the clock live in memory until the save: unsaved, the next
   * command finds them as the last save left them, while tokens.json and revocations.json, written
   * as they change, keep what this command wrote (the use cases heal the difference, docs/cli.md).
   */
  private forcedExitPart(): string {
    if (this.savePhase === 'saved') return 'the local state was saved';
    if (this.savePhase === 'journaled') return 'its save was cut short after saving.json was written: the next command completes it';
    const held = this.tokens.holding().length;
    const leases = held > 0 ? `; the next command takes back the token lease(s) it held on ${held} user(s)` : '';
    return `the local state was not saved: the next command finds the service, the keys and the clock as the last save left them (tokens.json and revocations.json keep what it wrote as it went)${leases}`;
  }

  private removeSignalHandlers: () => void = () => undefined;

  /**
   * Calls `listener` with what the interrupt undid, once it is undone and before the world saves:
   * the command says in one line what became of its work (`keys rotate`, `tokens refresh`).
   */
  onInterrupted(listener: OnInterrupted): void {
    this.interruptListeners.push(listener);
  }

  private async cleanUpInterrupted(signal: NodeJS.Signals): Promise<void> {
    // First: the work of this command that goes in steps (a refresh of the due users) starts no further step.
    this.interruptController.abort();
    const cleanup: InterruptedWork = { rotations: [], releasedLeases: [], refresh: null };
    try {
      cleanup.rotations = await this.stopRotations();
      cleanup.releasedLeases = await this.tokens.release(IN_FLIGHT_WAIT_MS);
    } catch (error) {
      this.logger.warn('undoing the interrupted work failed', { error });
    }
    for (const listener of this.interruptListeners) {
      try {
        // A listener may wait for the work it reports on (a refresh's users under way): not for long.
        await within(IN_FLIGHT_WAIT_MS, Promise.resolve(listener(signal, cleanup)));
      } catch {
        // The line is a courtesy; the state must still be saved.
      }
    }
  }

  private readonly interruptController = new AbortController();

  /**
   * Aborted when a signal is being handled, before the rotations are stopped and the leases
   * released: work that goes in steps (a refresh of the due users) starts no further step.
   */
  get interrupting(): AbortSignal {
    return this.interruptController.signal;
  }

  /** Runs a rotation step for the emulator, unless the command is being interrupted. */
  private runRotationStep(raw: unknown): Promise<StepOutcome> {
    const event = parseWith(rotationEventSchema, raw, 'rotation event');
    if (this.rotationsStopped) {
      // A failed invocation stops the emulator's rotation before its next step; stopRotations rolls it back.
      return Promise.reject(new KeyRotationError('the command was interrupted', { code: 'interrupted', step: event.Step }));
    }
    this.rotationsRun.set(event.SecretId, event.ClientRequestToken);
    const step = this.rotation.runStep(event);
    const tracked: Promise<void> = step.then(
      () => undefined,
      () => undefined,
    );
    this.rotationSteps.add(tracked);
    void tracked.then(() => this.rotationSteps.delete(tracked));
    return step;
  }

  /**
   * An interrupt's part in the rotations this command ran: no further step starts; once the step
   * under way has ended (it is given IN_FLIGHT_WAIT_MS), each rotation still AWSPENDING is rolled
   * back as a failed step would be (`KeyRotation.rollBack`: the keys it created revoked, AWSPENDING
   * removed), so that `keys rotate` works again at once instead of an hour later, when the doctor
   * would give it up. Nothing else can be running it: the steps run in this process, which holds
   * the state lock. A step that does not end in time is left alone, since it could still store or
   * promote after a rollback, and its rotation is reported `pending`.
   */
  async stopRotations(): Promise<StoppedRotation[]> {
    this.rotationsStopped = true;
    const stepsEnded = (await within(IN_FLIGHT_WAIT_MS, Promise.all([...this.rotationSteps]))) !== TIMED_OUT;
    const stopped: StoppedRotation[] = [];
    for (const [secretId, versionId] of this.rotationsRun) stopped.push(await this.stopRotation(secretId, versionId, stepsEnded));
    return stopped;
  }

  private async stopRotation(secretId: string, versionId: string, stepsEnded: boolean): Promise<StoppedRotation> {
    const stopped = (state: StoppedRotation['state'], revokedKeyPrefixes: string[] = []): StoppedRotation => ({
      secretId,
      versionId,
      state,
      revokedKeyPrefixes,
    });
    try {
      const stages = (await this.secrets.describeSecret(secretId)).versionStages[versionId] ?? [];
      if (stages.includes(SecretStage.current)) return stopped('completed');
      if (!stages.includes(SecretStage.pending)) return stopped('rolled_back');
      if (!stepsEnded) return stopped('pending');
      const undone = await within(ROLLBACK_WAIT_MS, this.rotation.rollBack(secretId, versionId));
      if (undone === TIMED_OUT) return stopped('pending');
      if (undone.result === 'already_current') return stopped('completed');
      return stopped('rolled_back', undone.revokedKeys === 'not_listed' ? [] : undone.revokedKeys.map((k) => k.keyPrefix));
    } catch (error) {
      this.logger.warn('the interrupted rotation could not be rolled back', { secretId, versionId, error });
      return stopped('pending');
    }
  }

  /**
   * Saves, stops the embedded peers and releases the state directory. Safe to call twice, and from
   * the command and an interrupt at once: both wait for the one close, and the command's waits for
   * the interrupt's cleanup, which must come before the save.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.interruptCleanup) await this.interruptCleanup;
      try {
        await this.sm.admin.settled();
        await this.save();
        this.savePhase = 'saved';
      } finally {
        await this.sm.stop().catch(() => undefined);
        await this.sandbox.stop().catch(() => undefined);
        await this.unlock();
        // Only now: a signal while the world saved had Node's default end the process with the
        // files half written and the lock left. Until here the interrupt's step waits for this close.
        this.removeSignalHandlers();
      }
    })();
    return this.closing;
  }
}

const TIMED_OUT = Symbol('timed out');

/** `work`'s value, or TIMED_OUT once `ms` have passed (the work goes on; nobody waits for it). */
async function within<T>(ms: number, work: Promise<T>): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The state files a LocalWorld writes from its snapshots (the file stores write their own). */
type SnapshotFile = 'sandbox' | 'secrets' | 'state';
const SNAPSHOT_FILES = ['sandbox', 'secrets', 'state'] as const satisfies readonly SnapshotFile[];

const SAVING_FORMAT = 'acctops.local-save';
const savingSchema = lazySchema(() =>
  z.object({
    format: z.literal(SAVING_FORMAT),
    files: z.partialRecord(z.enum(SNAPSHOT_FILES), z.unknown()),
  }),
);

/**
 * Completes the save that a killed command left half done: writes every file saving.json holds,
 * then removes it. Under the lock, before anything is read, read-only commands too (as the stale
 * temporary files): what the files hold must be one moment's state. A saving.json that does not
 * parse was never complete (it is renamed into place whole), so the files are still the previous
 * save's: it is removed. Returns the files it wrote (none when no save was left under way).
 */
async function completeInterruptedSave(stateDir: string, logger: Logger): Promise<string[]> {
  const path = statePath(stateDir, 'saving');
  let saving: z.output<typeof savingSchema> | undefined;
  try {
    saving = await readJsonFile(path, savingSchema);
  } catch (error) {
    if (isFsError(error)) throw new StateFileUnreadableError(path, error);
    if (!(error instanceof ValidationError)) throw error;
    logger.warn('an unreadable saving.json removed; the state files are those of the save before it', { path });
    await rm(path, { force: true });
    return [];
  }
  if (saving === undefined) return [];
  const written: string[] = [];
  for (const file of SNAPSHOT_FILES) {
    if (!(file in saving.files)) continue;
    await writePrivateJsonFile(statePath(stateDir, file), saving.files[file]);
    written.push(STATE_FILES[file]);
  }
  logger.info('completed the save of a command that was killed while it saved', { files: Object.keys(saving.files) });
  await rm(path, { force: true });
  return written;
}

/**
 * What the service and the emulator record of a request itself: an API key's last use (the
 * sandbox) and a secret's and a version's last access (the emulator, as Secrets Manager's
 * LastAccessedDate). A read-only command's own requests change only these.
 */
const USAGE_RECORDS: ReadonlySet<string> = new Set(['lastUsedAt', 'lastAccessedAt']);

/**
 * A snapshot as its file would hold it, with every object's keys in order (a restored object may
 * list them in another order than one that was changed in place), and without USAGE_RECORDS when
 * `withoutUsage`: two snapshots with the same fingerprint need not be written twice.
 */
function fingerprint(value: unknown, withoutUsage: boolean): string {
  return JSON.stringify(value, (key, v: unknown) => {
    if (withoutUsage && USAGE_RECORDS.has(key)) return undefined;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/**
 * `ACCTOPS_DIALECT` picks the dialect of a state that a plain `npx acctops …` command creates (the
 * CLI has no --dialect flag of its own: the dialect belongs to the state, not to one command).
 * Undefined when unset or empty (a new state is then `default`). Checked by every local command,
 * not only the one that creates the state: a value nobody reads would say nothing of its typo.
 */
function dialectFromEnv(env: NodeJS.ProcessEnv): Dialect | undefined {
  const raw = env.ACCTOPS_DIALECT;
  if (raw === undefined || raw === '') return undefined;
  if (!(DIALECTS as readonly string[]).includes(raw)) {
    throw new CliConfigError(
      `ACCTOPS_DIALECT must be one of ${DIALECTS.join(', ')}`,
      'nothing was run: set it to default or minimal, or unset it (a state keeps the dialect it was created with)',
    );
  }
  return raw as Dialect;
}

export interface RepairReport {
  stateDir: string;
  repaired: { file: string; keptAs: string; rebuiltAs: string }[];
  /** Damaged files that hold the service or the keys: only a reset or a backup helps. */
  unrepairable: { file: string; remedy: string }[];
  /**
   * Entries of a companies.json that parses, each failing the registry's schema: moved into `keptAs`
   * (the registry file's own format). `companyId` null when the entry's key is no company id (never
   * repeated: it could be anything). `removed`: the entry had a `removedAt`, readable or not.
   * `next`: the commands that register the company again, null without an id.
   */
  entriesSetAside: { companyId: string | null; issues: FieldIssue[]; removed: boolean; keptAs: string; next: string | null }[];
}

const REBUILT_AS: Record<'state' | 'tokens' | 'revocations', string> = {
  state: 'default settings, local clock back at the system clock',
  tokens: "empty: `acctops users onboard` retrieves each user's tokens again",
  revocations: 'empty: `acctops doctor --repair` finds old keys whose revocation was lost',
};

/** What a set-aside companies.json costs, said wherever it is rebuilt. */
const REGISTRY_LOSS =
  'what `acctops companies add|remove` registered (companies without a key secret, formats, rotation days, removals) was lost with the damaged file: compare with it and redo those';

/**
 * `acctops local repair`: each damaged state file that can be rebuilt is renamed to
 * `<file>.damaged-<time>` and rebuilt; sandbox.json and secrets.json cannot be (they are the service
 * and the keys) and are reported with their remedy. Holds the state directory's lock; a set-aside
 * companies.json is then seeded again in a world of its own (LocalWorld.seedRegistry), which needs
 * the service and the keys.
 */
export async function repairStateDir(
  stateDir: string,
  env: NodeJS.ProcessEnv,
  logger: Logger,
  options: { onTakeOver?: (lock: TakenOverLock & { completedSave: string[] }) => void } = {},
): Promise<RepairReport> {
  const report: RepairReport = { stateDir, repaired: [], unrepairable: [], entriesSetAside: [] };
  if (!(await stateDirExists(stateDir))) return report;
  let takenOver: TakenOverLock | undefined;
  const unlock = await lockStateDir(stateDir, { onTakeOver: (lock) => (takenOver = lock) });
  let registrySetAside: RepairReport['repaired'][number] | undefined;
  try {
    const completedSave = await completeInterruptedSave(stateDir, logger);
    // As every local command says it (LocalOperations), once it is known whether the holder's save was completed.
    if (takenOver !== undefined) options.onTakeOver?.({ ...takenOver, completedSave });
    const damaged: DamagedStateFileError[] = [];
    await readStateFile(stateDir, 'state', stateSchema, damaged);
    await readStateFile(stateDir, 'sandbox', sandboxSnapshotSchema, damaged);
    await readStateFile(stateDir, 'secrets', secretsSnapshotSchema, damaged);
    damaged.push(...(await checkStoreFiles(stateDir)));
    for (const d of damaged) {
      if (d.file === 'sandbox' || d.file === 'secrets') {
        report.unrepairable.push({ file: d.path, remedy: d.hint ?? '' });
        continue;
      }
      const keptAs = `${d.path}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(d.path, keptAs);
      // tokens.json and revocations.json: absent means empty to their stores.
      if (d.file === 'companies') {
        registrySetAside = { file: d.path, keptAs, rebuiltAs: '' };
        report.repaired.push(registrySetAside);
        continue;
      }
      // The dialect is not in the other files: a state created with --dialect minimal needs ACCTOPS_DIALECT=minimal here.
      const dialect = dialectFromEnv(env) ?? 'default';
      if (d.file === 'state') await writePrivateJsonFile(d.path, defaultLocalState(dialect));
      const rebuiltAs = d.file === 'state' ? `${REBUILT_AS.state}, the ${dialect} dialect (ACCTOPS_DIALECT)` : REBUILT_AS[d.file];
      report.repaired.push({ file: d.path, keptAs, rebuiltAs });
    }
    if (!damaged.some((d) => d.file === 'companies')) report.entriesSetAside = await setAsideDamagedEntries(stateDir);
  } finally {
    await unlock();
  }
  if (registrySetAside) registrySetAside.rebuiltAs = await reseedRegistry(stateDir, env, logger, report.unrepairable.length === 0);
  return report;
}

/**
 * The local counterpart of the AWS runbook's "delete the item, then `companies add`": an entry that
 * fails the registry's schema is moved out of companies.json into `companies.json.damaged-entries-<time>`
 * (kept first, then dropped, so a crash between leaves it twice, never lost), and the command that
 * registers the company again is named. Nothing is rewritten by guess: which of the entry's settings
 * were meant is for the operator to read from the kept copy.
 */
async function setAsideDamagedEntries(stateDir: string): Promise<RepairReport['entriesSetAside']> {
  const path = statePath(stateDir, 'companies');
  if (!(await exists(path))) return [];
  const table = new FileRegistryTable({ path });
  const items = await table.rawItems();
  const damaged = Object.entries(items).flatMap(([key, raw]) => {
    const parsed = registeredCompanySchema.safeParse(raw);
    return parsed.success ? [] : [{ key, raw, issues: issuesFromZod(parsed.error) }];
  });
  if (damaged.length === 0) return [];
  const keptAs = `${path}.damaged-entries-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  await writePrivateJsonFile(
    keptAs,
    { format: 'acctops.company-registry', formatVersion: 1, items: Object.fromEntries(damaged.map((d) => [d.key, d.raw])) },
    { pretty: true },
  );
  await table.deleteItems(damaged.map((d) => d.key));
  return damaged.map(({ key, raw, issues }) => {
    const companyId = companyIdSchema.safeParse(key.toLowerCase()).success ? key.toLowerCase() : null;
    const removed = typeof raw === 'object' && raw !== null && 'removedAt' in raw;
    const add = companyId === null ? null : `acctops companies add --company ${companyId}`;
    return {
      companyId,
      issues,
      removed,
      keptAs,
      next:
        add === null
          ? null
          : removed
            ? `\`${add}\`, then \`acctops companies remove --company ${companyId}\` to keep it removed, or \`acctops companies restore --company ${companyId}\` to bring back its key secret and rotation`
            : `\`${add}\` with the settings to keep (the kept copy shows the ones it had)`,
    };
  });
}

/**
 * Seeds companies.json again from the key secrets, as for a new state. Only in a complete state: a
 * world opened without sandbox.json or secrets.json would be a new one, provisioned over the old.
 */
async function reseedRegistry(stateDir: string, env: NodeJS.ProcessEnv, logger: Logger, intact: boolean): Promise<string> {
  const complete = intact && (await exists(statePath(stateDir, 'sandbox'))) && (await exists(statePath(stateDir, 'secrets')));
  if (!complete) return `not yet: the first command that can open the state seeds it from the company key secrets; ${REGISTRY_LOSS}`;
  // The institution credential plays no part in seeding: a malformed override must not stop the repair.
  const { ACCTOPS_INSTITUTION: _ignored, ...worldEnv } = env;
  const seeded = await withLocalWorld({ stateDir, logger, env: worldEnv }, (world) => world.seedRegistry());
  const companies =
    seeded === undefined ? 'as another command already did' : `with the ${seeded.length} company(ies) whose key secrets the state holds`;
  return `seeded ${companies}; ${REGISTRY_LOSS}`;
}

/** ACCTOPS_INSTITUTION that does not parse is configuration (exit 3), named, never echoed. */
export function parseInstitutionOverride(raw: string): InstitutionCredential {
  try {
    return parseInstitutionCredential(raw);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new CliConfigError(
      `ACCTOPS_INSTITUTION is not an institution credential (${issuesText(error.issues)})`,
      'set it to <institution_id>:<secret_key> or a JSON object with institutionId and secretKey, or unset it to use the stored secret',
    );
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Runs `work` in the world of `stateDir` and always saves and closes it. */
export async function withLocalWorld<T>(options: LocalWorldOptions, work: (world: LocalWorld) => Promise<T>): Promise<T> {
  const world = await LocalWorld.open(options);
  try {
    return await work(world);
  } finally {
    await world.close();
  }
}
