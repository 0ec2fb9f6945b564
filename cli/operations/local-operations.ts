import { resolve } from 'node:path';
import { MemoryRefreshQueue } from '../../src/adapters/local/memory-refresh-queue';
import { ApiValidationError, NotFoundError } from '../../src/core/accounting-api';
import {
  checkKeyRotations,
  keyMissingFinding,
  keyStatus,
  parseCompanyKeySecret,
  rotateNow,
  type Finding,
  type RevokeNowDeps,
} from '../../src/core/api-keys';
import { activeCompanyPages, type CompanyRegistry } from '../../src/core/companies/company-registry';
import { DEFAULT_EXPORT_DEADLINE } from '../../src/core/exports/pipeline/export-deadline';
import { SecretStage, versionWithStage, type SecretDescription } from '../../src/core/ports/secrets';
import { noMetrics } from '../../src/core/shared/metrics';
import { keyPrefix, redactString, registerSecret } from '../../src/core/shared/redact';
import type { OnboardInput, RefreshOutcome } from '../../src/core/tokens/token-lifecycle';
import { planTokenRefresh } from '../../src/core/tokens/plan-refresh';
import { SandboxAdminError, type Permission } from '../../sandbox';
import { rejectAwsModeOptions } from '../args';
import {
  CliError,
  onboardInputRefused,
  refreshOfRevokedUser,
  refreshOfUserNeedingAttention,
  UnknownNameError,
  unknownUser,
  userGoneAtService,
} from '../errors';
import { ExitCode } from '../exit-codes';
import { counts, iso } from '../format';
import { createKeyFile } from '../local/key-file';
import { withLocalWorld, type LocalWorld } from '../local/local-world';
import { takenOverLockNote } from '../local/state-dir';
import type {
  CancelRotationReport,
  ClockAdvanced,
  ClockReset,
  CompanyInput,
  DoctorReport,
  ExportRequest,
  KeyStatusReport,
  LocalKeyIssued,
  LocalStatus,
  OnInterrupted,
  Operations,
  OperationsContext,
  RefreshOutcomeRow,
  RefreshReport,
  RotateReport,
} from './operations';
import { applyRotationDays, installKey, removeCompany, restoreCompany, type CompanyKeyContext } from './company-keys';
import { setInstitutionSecret } from './secret-changes';
import {
  companyKeyOf,
  companyRow,
  findingRow,
  findingsOf,
  forKnownUser,
  listCompanies,
  listUsers,
  oneCompanyDirectory,
  outcomeRow,
  probeRow,
  REFRESH_MARGIN_MS,
  refuseFutureMonth,
  registryHealth,
  removedCompanies,
  revokedKeys,
  revokeOlderKeysAfterRotation,
  revokePendingNow,
  revokePreviousAfterRotation,
  tokenHealth,
  withKeyMissingRows,
} from './shared';

/**
 * A state made before decision 97 keeps working (its users, tokens, exports and registry are the
 * operator's work), so it is named on every command rather than replaced behind the operator's back.
 */
export const SEEDED_CREDENTIALS_NOTE =
  "acctops: note: this local state was made before the demo's credentials were random: its institution secret and demo API keys follow from the public seed, so another account of this host can call its sandbox while a command runs; `acctops local reset --yes` starts a state with random ones (its users, tokens and exports go with it)";

/**
 * The local mode: every operation opens the embedded world of the state directory (the sandbox,
 * the Secrets Manager emulator, the file stores; docs/cli.md, "The local mode"), runs the
 * real use cases in it and saves it. Loaded by the Session only in local mode, with `import()`: the
 * world brings in the SDK and the sandbox, which `--help` does not need.
 *
 * The functions over a `LocalWorld` are exported for the demo (cli/demo.ts), which runs several
 * operations in one world.
 */
export class LocalOperations implements Operations {
  constructor(private readonly context: OperationsContext) {}

  /**
   * Runs `work` in the world (created on first use), saved when it ends: what changed is written,
   * and nothing of a `readOnly` command's own requests (LocalWorldOptions.readOnly).
   */
  private async world<T>(
    work: (world: LocalWorld) => Promise<T>,
    options: { tolerateDamage?: boolean; readOnly?: boolean; regionUsed?: boolean; noWait?: boolean; onInterrupted?: OnInterrupted } = {},
  ): Promise<T> {
    const { context } = this;
    const { regionUsed, noWait, ...worldOptions } = options;
    // Before the state is opened: a command refused for its options neither creates nor locks it.
    rejectAwsModeOptions(context.flags, 'local', { regionUsed, noWait });
    return withLocalWorld(
      { stateDir: context.stateDir, logger: context.out.logger(), env: context.env, ...worldOptions },
      async (world) => {
        if (world.created)
          context.out.note(
            `acctops: created the local state in ${world.stateDir} (embedded sandbox with demo data, ${world.state.dialect} dialect)`,
          );
        if (world.seededCredentials) context.out.note(SEEDED_CREDENTIALS_NOTE);
        if (world.takenOverLock !== undefined) context.out.note(takenOverLockNote(world.takenOverLock));
        const reclaimed = world.reclaimedLeases;
        if (reclaimed.users.length > 0)
          context.out.note(
            `acctops: note: released the token lease(s) on ${reclaimed.users.length} user(s) left by ${reclaimed.holders.length === 1 ? 'acctops process' : 'acctops processes'} ${reclaimed.holders.join(', ')}, which no longer ${reclaimed.holders.length === 1 ? 'runs' : 'run'} (killed or crashed while holding them); those users are not busy any more`,
          );
        await world.seedRegistry();
        return work(world);
      },
    );
  }

  onboardUser(input: OnboardInput) {
    return this.world(async (world) => {
      try {
        return await world.lifecycle().onboard(input);
      } catch (error) {
        if (error instanceof ApiValidationError) throw onboardInputRefused(error.param, error.message, error);
        throw error;
      }
    });
  }

  listUsers() {
    return this.world((world) => listUsers(world.tokens, world.clock.now()), { readOnly: true });
  }

  revokeUser(externalId: string) {
    return this.world((world) => forKnownUser(externalId, () => world.lifecycle().revoke(externalId)));
  }

  recoverUser(externalId: string, options: { reactivate: boolean; force: boolean }) {
    return this.world((world) =>
      forKnownUser(externalId, async () => {
        try {
          return await world.lifecycle().recover(externalId, options);
        } catch (error) {
          if (error instanceof NotFoundError) throw userGoneAtService(externalId, error.message, error);
          throw error;
        }
      }),
    );
  }

  refreshDue(options: { onInterrupted?: OnInterrupted } = {}) {
    const progress = new RefreshProgress();
    return this.world((world) => refreshDueLocal(world, progress), { onInterrupted: progress.reportedTo(options.onInterrupted) });
  }

  refreshUser(externalId: string, options: { onInterrupted?: OnInterrupted } = {}) {
    const progress = new RefreshProgress();
    return this.world(
      async (world): Promise<RefreshReport> => {
        const status = (await world.tokens.get(externalId))?.status;
        if (status === 'revoked') throw refreshOfRevokedUser(externalId);
        if (status === 'needs_attention') throw refreshOfUserNeedingAttention(externalId);
        const refreshing = world.lifecycle().refresh(externalId);
        progress.started(
          world,
          1,
          refreshing.then((o) => progress.ended(o)),
        );
        const outcome = await refreshing;
        // Named by --user: a user the store does not hold is the command's error, not a result (README, "Exit codes").
        if (outcome.result === 'not_found') throw unknownUser(externalId);
        return { mode: 'local', planned: 1, outcomes: await withLeases(world, [outcome]), counts: { [outcome.result]: 1 } };
      },
      { onInterrupted: progress.reportedTo(options.onInterrupted) },
    );
  }

  /** The rotation completes in the command (the emulator runs the four steps): --no-wait is refused, as the AWS mode's own. */
  rotateKey(companyId: string, options: { wait: boolean; revokePreviousNow: boolean; onInterrupted?: OnInterrupted }) {
    return this.world((world) => rotateLocal(world, companyId, { revokePreviousNow: options.revokePreviousNow }), {
      noWait: !options.wait,
      onInterrupted: options.onInterrupted,
    });
  }

  cancelRotation(companyId: string) {
    return this.world((world) => cancelRotationLocal(world, companyId));
  }

  revokePending(companyId: string, options: { prefix?: string }) {
    return this.world(async (world) => revokePendingNow(await localCompanyKey(world, companyId), revokeNowDeps(world), options.prefix));
  }

  keyStatus(options: { company?: string } = {}) {
    return this.world((world) => keyStatusLocal(world, options), { readOnly: true });
  }

  installCompanyKey(companyId: string, apiKey: string) {
    return this.world((world) => installKey(localKeyContext(world), world.registry(), companyId, apiKey));
  }

  setInstitutionSecret(value: string | undefined) {
    return this.world((world) =>
      setInstitutionSecret(
        {
          store: world.secrets,
          secretId: world.state.institutionSecret,
          verify: async () => (await world.checkStoredInstitution()).probes,
        },
        value,
      ),
    );
  }

  addCompany(input: CompanyInput) {
    return this.world(async (world) => {
      const { result, company } = await world.registry(this.context.out.logger()).add(input, world.clock.now());
      const keyRotation = input.rotationDays === undefined ? null : await applyRotationDays(localKeyContext(world), company);
      return { result, company: companyRow(company), keyRotation };
    });
  }

  listCompanies(options: { active: boolean }) {
    return this.world((world) => listCompanies(world.registry(this.context.out.logger()), options, 'local'), { readOnly: true });
  }

  removeCompany(companyId: string, options: { recoveryDays: number; revokeKeys?: boolean }) {
    return this.world((world) =>
      removeCompany(
        world.registry(),
        world.clock.now(),
        () => ({ stage: 'local', lifecycle: world.secretLifecycle(), directory: world.directory }),
        companyId,
        options.recoveryDays,
        () => Promise.resolve({ find: (id: string) => world.directory.find(id), deps: revokeNowDeps(world) }),
        options.revokeKeys === true,
      ),
    );
  }

  restoreCompany(companyId: string) {
    return this.world((world) =>
      restoreCompany(world.registry(), world.clock.now(), () => Promise.resolve(localKeyContext(world)), companyId),
    );
  }

  exportMonth(request: ExportRequest) {
    // The export runs in the command (--no-wait is the AWS mode's); --region is read by the S3 client of --out s3://….
    return this.world(
      async (world) => {
        refuseFutureMonth(request.month, world.clock.now());
        const run = await import('./export-run.ts');
        return run.exportLocal(world, {
          month: request.month,
          company: request.company,
          store: request.out && run.storeFor(this.context, request.out),
          formats: request.formats,
          replaceFormats: request.replaceFormats,
          csvDialect: request.csvDialect,
          taxReportFields: request.taxReportFields,
          defaultCurrency: request.defaultCurrency,
          onProgress: request.onProgress,
          onWarning: run.nextRebasedNotes((line) => this.context.out.note(line)),
        });
      },
      { regionUsed: request.out?.kind === 's3', noWait: !request.wait },
    );
  }

  doctor(options: { repair: boolean }) {
    return this.world((world) => doctorLocal(world, options), { tolerateDamage: true, readOnly: !options.repair });
  }

  setLocal(settings: { accessTokenLifetimeSeconds?: number }) {
    return this.world(async (world): Promise<LocalStatus> => {
      if (settings.accessTokenLifetimeSeconds !== undefined) world.accessTokenLifetimeSeconds = settings.accessTokenLifetimeSeconds;
      return localStatusOf(world);
    });
  }

  localStatus() {
    return this.world(localStatusOf, { readOnly: true });
  }

  advanceClock(ms: number) {
    return this.world(async (world): Promise<ClockAdvanced> => {
      world.clock.advance(ms);
      return { now: iso(world.clock.now())!, revoked: revokedKeys(await world.runDueRevocations()) };
    });
  }

  resetClock() {
    return this.world(async (world): Promise<ClockReset> => {
      const undoneMs = world.clock.offsetMs;
      world.clock.advance(-undoneMs);
      return { now: iso(world.clock.now())!, undoneMs };
    });
  }

  issueLocalKey(companyId: string, out: string) {
    const path = resolve(this.context.runtime.cwd, out);
    return this.world((world) => issueKeyLocal(world, companyId, path));
  }
}

/**
 * What an issued key may do: exactly what `keys install` requires (`verifyCompanyKey`:
 * `manage_api_keys`, with which rotation creates the key's replacement and lists the keys) and what
 * the exports read; docs/runbooks.md, "Install a company API key", step 1. Nothing more, so that
 * the rehearsal installs the key a company should hand over, not a `full_access` one.
 */
export const ISSUED_KEY_PERMISSIONS: readonly Permission[] = [
  'manage_api_keys',
  'read_transactions',
  'read_tax_reports',
  'read_categories',
];

/**
 * `local issue-key`: the embedded sandbox's admin creates the key (the local stand-in for the
 * service's UI, where a company creates one), and the key goes to `out` alone. The company is
 * checked and `out` created before the key exists, so a refusal creates nothing at the service; a
 * key whose file could not be written is revoked and the file removed.
 */
export async function issueKeyLocal(world: LocalWorld, companyId: string, out: string): Promise<LocalKeyIssued> {
  const { admin } = world.sandbox;
  try {
    await admin.listApiKeys({ companyId });
  } catch (error) {
    if (error instanceof SandboxAdminError && error.status === 404) throw await unknownToSandbox(world, companyId);
    throw error;
  }
  const file = await createKeyFile(out);
  let created: { publicId: string; key: string } | undefined;
  try {
    created = await admin.createApiKey({ companyId, permissions: [...ISSUED_KEY_PERMISSIONS], name: 'acctops local issue-key' });
    // Any log or error that would carry it from here on shows [REDACTED].
    registerSecret(created.key);
    await file.write(created.key);
  } catch (error) {
    await file.discard();
    if (created) await admin.revokeApiKey({ publicId: created.publicId }).catch(() => undefined);
    throw error;
  }
  return { companyId, keyPrefix: keyPrefix(created.key), out };
}

/**
 * The embedded sandbox does not know the company. `companies add` registers any id (its key comes
 * later), so a company `companies list` lists may still be one the service does not know: the
 * message says which of the two it is, and the hint names the companies the sandbox does know.
 */
async function unknownToSandbox(world: LocalWorld, companyId: string): Promise<UnknownNameError> {
  const known = (world.sandbox.demo?.companies ?? []).map((c) => `${c.publicId} (${c.name})`);
  const demo =
    known.length > 0
      ? `the embedded sandbox, the local mode's service, knows only its demo companies: ${known.join(', ')}`
      : "the embedded sandbox, the local mode's service, knows no company";
  // A damaged registry entry or file is not this command's concern: the sandbox's answer is the refusal.
  const registered =
    !world.isDamaged('companies') &&
    (await world
      .registry()
      .get(companyId)
      .then((c) => c !== null)
      .catch(() => false));
  if (!registered)
    return new UnknownNameError(
      '--company',
      companyId,
      'the embedded sandbox has no company of that id',
      `${demo}; rehearse with one of them`,
    );
  return new UnknownNameError(
    '--company',
    companyId,
    'registered with acctops, unknown to the service',
    `${demo}; rehearse with one of them (\`acctops local issue-key --company <one of them> --out <file>\`). A company of your own gets its key from its service, in a deployment; \`acctops companies remove --company ${companyId}\` unregisters this one if it was added only to try the local mode`,
    `--company ${companyId}: registered with acctops (\`acctops companies add\`, which accepts a company before its key), but unknown to the service: the embedded sandbox has no company of that id, so it cannot issue its key`,
  );
}

async function localStatusOf(world: LocalWorld): Promise<LocalStatus> {
  let companies = 0;
  // Each company's current key, to count its queued revocations apart, as `keys status` lists them
  // (decision 83(b)): they revoke nothing. A secret that cannot be read leaves its entries pending.
  const currentKeys = new Set<string>();
  for await (const entry of world.directory.list()) {
    companies++;
    try {
      const current = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
      currentKeys.add(`${entry.companyId.toLowerCase()} ${current.apiKeyId}`);
    } catch {
      // `keys status` and `doctor` name an unreadable secret; the count does not.
    }
  }
  let pending = 0;
  let ofCurrentKey = 0;
  for await (const r of world.revocations.pending()) {
    if (currentKeys.has(`${r.companyId.toLowerCase()} ${r.apiKeyId}`)) ofCurrentKey++;
    else pending++;
  }
  const users = (await world.tokens.list({ limit: 1000, cursor: null })).items.length;
  return {
    stateDir: world.stateDir,
    createdAt: world.state.createdAt,
    now: iso(world.clock.now())!,
    clockOffsetMs: world.clock.offsetMs,
    baseUrl: '(embedded sandbox, started per command on 127.0.0.1)',
    dialect: world.state.dialect,
    companies,
    users,
    pendingRevocations: pending,
    currentKeyRevocations: ofCurrentKey,
    exportsDir: (await import('./export-run.ts')).exportsDirOf(world.stateDir),
    revocationGraceMinutes: world.state.revocationGraceMinutes,
    rotationDays: world.state.rotationDays,
    accessTokenLifetimeSeconds: world.accessTokenLifetimeSeconds,
  };
}

export function localKeyContext(world: LocalWorld): CompanyKeyContext {
  return {
    lifecycle: world.secretLifecycle(),
    store: world.secrets,
    directory: world.directory,
    clientFor: (key) => world.clientForKey(key),
    clock: world.clock,
    // The local mode is one stage, `local`: its secrets are named acctops/local/company/<id>/api-key.
    target: { stage: 'local', rotationLambdaArn: world.rotationLambdaArn },
    defaultRotationDays: world.state.rotationDays,
  };
}

/**
 * One refresh cycle of the local mode: the planner over the due index, then the worker over what it
 * enqueued. A signal stops it between users (`world.interrupting`): the users under way end, no
 * further one starts, and `progress` holds what was done, for the interrupt's line.
 */
export async function refreshDueLocal(world: LocalWorld, progress?: RefreshProgress): Promise<RefreshReport> {
  const queue = new MemoryRefreshQueue();
  const plan = await planTokenRefresh(
    { store: world.tokens, queue, clock: world.clock, logger: world.logger, metrics: noMetrics },
    { marginMs: REFRESH_MARGIN_MS },
  );
  const ids = queue.take(queue.size).map((r) => r.externalId);
  const batch = world.lifecycle().refreshBatch(ids, { signal: world.interrupting, onOutcome: (o) => progress?.ended(o) });
  progress?.started(world, plan.enqueued, batch);
  const outcomes = await batch;
  return {
    mode: 'local',
    planned: plan.enqueued,
    outcomes: await withLeases(world, outcomes),
    counts: counts(outcomes.map((o) => o.result)),
  };
}

/** How long an interrupt's line waits for a refresh's users under way, after the leases were waited for (LocalWorld). */
const REFRESH_SETTLE_MS = 1_000;

/**
 * What a local `tokens refresh` has done so far. An interrupt stops it between users; its line (and
 * `--json`'s report) says what was done before, where it used to say "stopped" of a run that had
 * refreshed every due user (decision 102).
 */
export class RefreshProgress {
  private planned: number | undefined;
  private world: LocalWorld | undefined;
  private work: Promise<unknown> | undefined;
  private readonly outcomes: RefreshOutcome[] = [];

  /** The refresh has found its `planned` users and started on them; `work` settles when it ends. */
  started(world: LocalWorld, planned: number, work: Promise<unknown>): void {
    this.world = world;
    this.planned = planned;
    this.work = work.catch(() => undefined);
  }

  ended(outcome: RefreshOutcome): void {
    this.outcomes.push(outcome);
  }

  /** `listener`, told of what the refresh did by the time the interrupt stopped it (InterruptedWork.refresh). */
  reportedTo(listener: OnInterrupted | undefined): OnInterrupted | undefined {
    if (listener === undefined) return undefined;
    return async (signal, undone) => listener(signal, { ...undone, refresh: await this.report() });
  }

  private async report(): Promise<RefreshReport | null> {
    if (this.planned === undefined || this.world === undefined) return null;
    // The users under way have ended their leases by now (or had them released); their outcomes follow at once.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.work, new Promise((resolve) => (timer = setTimeout(resolve, REFRESH_SETTLE_MS)))]);
    clearTimeout(timer);
    const outcomes = [...this.outcomes];
    return {
      mode: 'local',
      planned: this.planned,
      outcomes: await withLeases(this.world, outcomes),
      counts: counts(outcomes.map((o) => o.result)),
    };
  }
}

/** The outcomes' rows, a `busy` user's with the end of the lease that another (killed) command left on it. */
async function withLeases(world: LocalWorld, outcomes: readonly RefreshOutcome[]): Promise<RefreshOutcomeRow[]> {
  return Promise.all(
    outcomes.map(async (o) => outcomeRow(o, o.result === 'busy' ? ((await world.tokens.get(o.externalId))?.leaseUntil ?? null) : null)),
  );
}

/** `keys rotate` in the local mode: the real protocol, run by the emulator against the embedded service. */
export async function rotateLocal(
  world: LocalWorld,
  companyId: string,
  options: { revokePreviousNow?: boolean } = {},
): Promise<RotateReport> {
  const revokedBefore = revokedKeys(await world.runDueRevocations());
  const entry = await localCompanyKey(world, companyId);
  const left = pendingVersion(await world.secrets.describeSecret(entry.secretId));
  if (left !== undefined) {
    // The emulator would refuse it ("A previous rotation isn't complete") with nothing to do about it for an hour.
    throw new CliError(
      `a previous rotation of ${entry.name} isn't complete: version ${left} is AWSPENDING and no process runs it (an interrupted or failed \`keys rotate\`); AWSCURRENT is unchanged`,
      {
        code: 'rotation_pending',
        exitCode: ExitCode.failure,
        hint: `\`acctops keys cancel-rotation --company ${companyId}\` rolls it back now, revoking any key that rotation created; then rotate again`,
      },
    );
  }
  const before = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
  // The emulator runs the four steps inside RotateSecret: a version still AWSPENDING after it is a failure.
  const result = await rotateNow({ store: world.secrets, directory: world.directory, logger: world.logger, synchronous: true }, companyId);
  const after = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
  let revokedNow: Pick<RotateReport, 'previousKeyRevoked' | 'previousKeyRevokeError'> = {
    previousKeyRevoked: null,
    previousKeyRevokeError: null,
  };
  let older: Pick<RotateReport, 'olderKeysRevoked' | 'olderKeysRevokeError'> = { olderKeysRevoked: null, olderKeysRevokeError: null };
  if (options.revokePreviousNow && result.state === 'completed') {
    const { apiKeyId, ...outcome } = await revokePreviousAfterRotation(entry.secretId, world.revokeDeps(), before, 'acctops');
    revokedNow = outcome;
    if (apiKeyId !== null) await world.revocations.complete(apiKeyId);
    older = await revokeOlderKeysAfterRotation(entry, revokeNowDeps(world), before.apiKeyId, 'acctops');
  }
  let revokeAt: number | undefined;
  for await (const r of world.revocations.pending()) if (r.apiKeyId === before.apiKeyId) revokeAt = r.revokeAt;
  return {
    ...result,
    previousKeyPrefix: before.keyPrefix,
    keyPrefix: after.keyPrefix,
    previousKeyRevokeAt: revokeAt === undefined ? null : iso(revokeAt)!,
    revokedBefore,
    ...revokedNow,
    // The local queue entry is taken off above; there is no schedule to delete.
    previousKeyScheduleError: null,
    ...older,
  };
}

/** The local queue is the scheduler; a revocation carried out now leaves it. */
function revokeNowDeps(world: LocalWorld): RevokeNowDeps {
  return { ...world.revokeDeps(), scheduler: world.revocations, done: (apiKeyId) => world.revocations.complete(apiKeyId) };
}

/**
 * The version of a rotation that has not finished: AWSPENDING on a version that is not AWSCURRENT.
 * In the local mode nothing runs it while a command holds the state lock (the emulator runs the
 * steps inside the RotateSecret of the command that started it), so such a version was left by an
 * interrupted or failed `keys rotate`: `keys cancel-rotation` rolls it back.
 */
function pendingVersion(description: Pick<SecretDescription, 'versionStages'>): string | undefined {
  const pending = versionWithStage(description, SecretStage.pending);
  return pending !== undefined && !(description.versionStages[pending] ?? []).includes(SecretStage.current) ? pending : undefined;
}

/** `keys cancel-rotation`: the company's pending rotation rolled back (KeyRotation.rollBack), if it has one. */
export async function cancelRotationLocal(world: LocalWorld, companyId: string): Promise<CancelRotationReport> {
  const entry = await localCompanyKey(world, companyId);
  const versionId = pendingVersion(await world.secrets.describeSecret(entry.secretId)) ?? null;
  const report = { companyId: entry.companyId, secret: entry.name, versionId };
  if (versionId === null) return { ...report, result: 'nothing_pending', revokedKeyPrefixes: [] };
  let undone;
  try {
    undone = await world.rotation.rollBack(entry.secretId, versionId);
  } catch (error) {
    throw new CliError(
      `the pending rotation of ${entry.name} (version ${versionId}) could not be rolled back: ${error instanceof Error ? error.message : String(error)}`,
      {
        code: 'rotation_not_rolled_back',
        exitCode: ExitCode.failure,
        hint: 'nothing was changed that a repeat would not finish: run it again once the service answers',
        cause: error,
      },
    );
  }
  // `already_current` cannot be: the version was found pending, and nothing else runs it.
  return {
    ...report,
    result: 'rolled_back',
    revokedKeyPrefixes: undone.revokedKeys === 'not_listed' ? [] : undone.revokedKeys.map((k) => k.keyPrefix),
  };
}

/**
 * The key secret of a company named by --company, or why there is none (an unknown company, a
 * removed one: `companyKeyOf`), from the world's registry.
 */
export function localCompanyKey(world: LocalWorld, companyId: string) {
  return companyKeyOf(
    (id) => world.directory.find(id),
    () => Promise.resolve(world.isDamaged('companies') ? undefined : world.registry()),
    companyId,
    world.clock.now(),
  );
}

/** `keys status`: every company key secret, or only the one of `company` (exit 3 when it has none). */
export async function keyStatusLocal(world: LocalWorld, options: { company?: string } = {}): Promise<KeyStatusReport> {
  const revokedBefore = revokedKeys(await world.runDueRevocations());
  const only = options.company === undefined ? undefined : await localCompanyKey(world, options.company);
  const companies = await keyStatus({
    store: world.secrets,
    directory: only === undefined ? world.directory : oneCompanyDirectory(only),
    scheduler: world.revocations,
    clientFor: (key) => world.clientForKey(key),
    clock: world.clock,
  });
  return {
    now: iso(world.clock.now())!,
    companies: only === undefined ? await withKeyMissingRows(companies, world.registry()) : companies,
    revokedBefore,
  };
}

/** The local mode's doctor: the same checks as the deployed check-health and rotation doctor, plus tokens and exports. */
export async function doctorLocal(world: LocalWorld, options: { repair: boolean }): Promise<DoctorReport> {
  const now = () => world.clock.now();
  // A damaged file never stops the doctor: it is a finding, and the checks that need it are skipped.
  const damagedStateFiles = world.damaged.map((d) => ({ file: d.path, problem: d.message, remedy: d.hint ?? '' }));
  const revoked = revokedKeys(await world.runDueRevocations());
  const health = await world.checkInstitution();
  const companySecrets: NonNullable<DoctorReport['companySecrets']> = [];
  for await (const entry of world.directory.list()) {
    try {
      parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
      companySecrets.push({ companyId: entry.companyId, secret: entry.name, ok: true, error: null });
    } catch (error) {
      companySecrets.push({
        companyId: entry.companyId,
        secret: entry.name,
        ok: false,
        error: redactString(error instanceof Error ? error.message : String(error)),
      });
    }
  }
  const tokens = world.isDamaged('tokens')
    ? { skipped: 'tokens.json is damaged' }
    : tokenHealth((await listUsers(world.tokens, now())).rows, now());
  // Before the rotation doctor: with --repair it rolls them back, which the doctor would only give up after an hour.
  const abandoned = await abandonedRotations(world, options.repair);
  // As the deployed sweep and the monthly planner: a removed company's secret that outlived the
  // removal (one the stack imports) is neither checked for rotation nor expected to be exported.
  const removed = world.isDamaged('companies') ? new Set<string>() : await removedCompanies(world.registry());
  const rotations = await checkKeyRotations(
    {
      store: world.secrets,
      directory: {
        list: async function* () {
          for await (const entry of world.directory.list()) if (!removed.has(entry.companyId)) yield entry;
        },
      },
      scheduler: world.revocations,
      clientFor: (key) => world.clientForKey(key),
      clock: world.clock,
      logger: world.logger,
      metrics: noMetrics,
    },
    { graceMs: world.graceMs, repair: options.repair },
  );
  const withKey = companySecrets.map((s) => s.companyId);
  const keysMissing = world.isDamaged('companies') ? [] : await activeWithoutKey(world.registry(), withKey);
  const exported = withKey.filter((companyId) => !removed.has(companyId));
  const exports = await (
    await import('./export-run.ts')
  ).exportHealth(
    world.exportStore,
    exported,
    now(),
    DEFAULT_EXPORT_DEADLINE,
    undefined,
    keysMissing.map((f) => f.companyId),
  );
  const partial = {
    mode: 'local' as const,
    checkedAt: iso(now())!,
    health: { probes: health.probes.map(probeRow) },
    companySecrets,
    tokens,
    rotations: {
      companies: rotations.companies,
      findings: [...abandoned, ...withoutAbandoned(rotations.findings, abandoned), ...keysMissing].map(findingRow),
    },
    exports,
    registry: world.isDamaged('companies') ? { skipped: 'companies.json is damaged' } : await registryHealth(world.registry()),
    revokedKeys: revoked,
    damagedStateFiles,
  };
  return { ...partial, findings: findingsOf(partial) };
}

/**
 * The local mode's rotations left AWSPENDING (`pendingVersion`): the doctor holds the state lock,
 * so no process runs them, and there is no reason to wait the rotation doctor's hour
 * (`stuckPendingAfterMs`, for a deployed rotation Secrets Manager may still retry). Each is a
 * `stuck_pending` finding at once; with `repair`, rolled back as `keys cancel-rotation` does.
 */
async function abandonedRotations(world: LocalWorld, repair: boolean): Promise<Finding[]> {
  const found: Finding[] = [];
  for await (const entry of world.directory.list()) {
    let versionId: string | undefined;
    try {
      versionId = pendingVersion(await world.secrets.describeSecret(entry.secretId));
    } catch {
      continue; // The rotation doctor reports a secret it cannot read (`check_failed`).
    }
    if (versionId === undefined) continue;
    const finding = { type: 'stuck_pending' as const, companyId: entry.companyId, secret: entry.name, versionId };
    const cancel = `\`acctops keys cancel-rotation --company ${entry.companyId}\``;
    const left = `version ${versionId} is AWSPENDING and no process runs it (an interrupted or failed \`keys rotate\`; every rotation is refused until it is rolled back)`;
    if (!repair) {
      found.push({ ...finding, repaired: false, detail: `${left}: ${cancel} or \`acctops doctor --repair\` rolls it back now` });
      continue;
    }
    try {
      const undone = await world.rotation.rollBack(entry.secretId, versionId);
      const revoked = undone.revokedKeys === 'not_listed' ? [] : undone.revokedKeys.map((k) => `${k.keyPrefix}…`);
      found.push({
        ...finding,
        repaired: true,
        detail: `${left}: rolled back${revoked.length > 0 ? `, the key it created (${revoked.join(', ')}) revoked` : ''}`,
      });
    } catch (error) {
      found.push({
        ...finding,
        repaired: false,
        detail: `${left}; rolling it back failed (${redactString(error instanceof Error ? error.message : String(error))}): run ${cancel} again`,
      });
    }
  }
  return found;
}

/** The rotation doctor's own `stuck_pending` of a version `abandonedRotations` reported already (one past its hour). */
function withoutAbandoned(findings: readonly Finding[], abandoned: readonly Finding[]): Finding[] {
  const versions = new Set(abandoned.map((f) => f.versionId));
  return findings.filter((f) => !(f.type === 'stuck_pending' && !f.repaired && versions.has(f.versionId)));
}

/**
 * The rotation check examines the key secrets there are (found by tag), so an active registered
 * company without one, whose every export fails, is found only from the registry (as the deployed
 * sweep does).
 */
async function activeWithoutKey(registry: Pick<CompanyRegistry, 'pages'>, withKey: readonly string[]): Promise<Finding[]> {
  const held = new Set(withKey);
  const missing: Finding[] = [];
  for await (const page of activeCompanyPages(registry)) {
    for (const company of page.items) if (!held.has(company.companyId)) missing.push(keyMissingFinding(company.companyId));
  }
  return missing;
}
