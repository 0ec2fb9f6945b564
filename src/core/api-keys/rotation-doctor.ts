import { ALARMED_METRICS } from '../../../contract/metrics';
import { type AccountingClient, type ApiKey, timestampMillis } from '../accounting-api';
import type { DomainEvent, EventPublisher } from '../ports/events';
import { type SecretDescription, type SecretStore, SecretStage, type SecretVersionInfo } from '../ports/secrets';
import { type Clock } from '../shared/clock';
import { type Logger } from '../shared/logger';
import { type Metrics } from '../shared/metrics';
import { redactString } from '../shared/redact';
import { type CompanyKeySecret, parseCompanyKeySecret } from './company-key-secret';
import type { CompanyKeyDirectory, CompanyKeyEntry } from './key-directory';
import type { Revocation, RevocationScheduler } from './revocation';
import { shownPrefix } from './listed-key';
import { listKeys, rotationTokenOf, SecretCompanyMismatchError } from './rotation';
import { ROTATION_LATE_FINISH_MS } from '../../../contract/key-rotation';

/**
 * The rotation doctor: a scheduled check of every company key secret against the service. It
 * repairs what is safe to repair and reports the rest (an event per finding, a metric that an
 * alarm watches). See docs/key-rotation.md, "The rotation doctor".
 */

export type FindingType =
  /**
   * AWSPENDING on a version that is not AWSCURRENT, older than `stuckPendingAfterMs`. Repaired: the
   * label is removed, and the version's key left to a later run (`givenUpLabel`).
   */
  | 'stuck_pending'
  /**
   * A live key that rotation created and no labelled version references. Repaired once past the
   * grace period (and, for a rotation the doctor gave up, past `lateFinishMs`): revoked.
   */
  | 'orphan_key'
  /** The AWSPREVIOUS key is still live although its grace period is long over and no revocation is pending. Repaired: revoked. */
  | 'revocation_overdue'
  /** The current key expires within `expiryWarningMs` (or has expired). Reported. */
  | 'key_expiring'
  /** Rotation is enabled but the next rotation is late by more than `overdueAfterMs`. Reported. */
  | 'rotation_overdue'
  /** Rotation is not enabled on the secret. Reported. */
  | 'rotation_disabled'
  /** The company could not be checked (unreadable secret, current key refused, service down). Reported. */
  | 'check_failed'
  /** A registered, active company has no key secret of this stage (`acctops keys install` not run). Reported. */
  | 'key_missing';

export interface Finding {
  type: FindingType;
  companyId: string;
  /** The secret's name; null for `key_missing`, where the company has none. */
  secret: string | null;
  apiKeyId?: string;
  keyPrefix?: string;
  versionId?: string;
  /** True when the doctor fixed it in this run. */
  repaired: boolean;
  /** One line for people; ids and prefixes only. */
  detail: string;
}

export interface DoctorReport {
  checkedAt: number;
  companies: number;
  findings: Finding[];
}

export interface DoctorSettings {
  /** The rotation's grace period: an orphan younger than this may belong to a rotation in progress. */
  graceMs: number;
  /** @default 1 hour */
  stuckPendingAfterMs?: number;
  /** @default 14 days */
  expiryWarningMs?: number;
  /** @default 1 day */
  overdueAfterMs?: number;
  /** How late a scheduled revocation may fire before the doctor does it instead. @default 15 minutes */
  revocationSlackMs?: number;
  /**
   * How long the key of a rotation the doctor gave up stays live: a finishSecret that passed its
   * guard before the label went may promote the version until its invocation ends. At least the
   * rotation function's timeout. @default 20 minutes (Lambda's longest timeout, 15 minutes, plus
   * the calls between the stamp and the removal)
   */
  lateFinishMs?: number;
  /** False: report only (a dry run). @default true */
  repair?: boolean;
}

export interface DoctorDeps {
  store: Pick<SecretStore, 'describeSecret' | 'readSecret' | 'listVersions' | 'moveStage'>;
  directory: Pick<CompanyKeyDirectory, 'list'>;
  scheduler: Pick<RevocationScheduler, 'pending'>;
  clientFor(key: CompanyKeySecret): AccountingClient;
  /** Where findings go as `ApiKeyRotationFinding` events; omitted: logs and metrics only. */
  events?: EventPublisher;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
}

export const FINDING_EVENT_TYPE = 'ApiKeyRotationFinding';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

const GIVEN_UP_PREFIX = 'ACCTOPS_GIVEN_UP_';
const GIVEN_UP_LABEL = new RegExp(`^${GIVEN_UP_PREFIX}(\\d{4})(\\d{2})(\\d{2})T(\\d{2})(\\d{2})(\\d{2})Z$`);

/**
 * The staging label the doctor puts on a version before it removes its stuck AWSPENDING: when it
 * gave the rotation up (UTC, to the second, ISO 8601 basic format: `ACCTOPS_GIVEN_UP_20261102T090000Z`).
 * It keeps the version's key referenced, so no run revokes it while a late finishSecret may still
 * promote the version, and DescribeSecret shows it, so the sweep examines the company until a run
 * past `lateFinishMs` takes the label off (docs/key-rotation.md, "finishSecret and the doctor").
 */
export function givenUpLabel(at: number): string {
  return `${GIVEN_UP_PREFIX}${new Date(at)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '')}`;
}

/** When the doctor gave the version up, for a label of `givenUpLabel`; undefined for any other label. */
export function givenUpAt(stage: string): number | undefined {
  const m = GIVEN_UP_LABEL.exec(stage);
  if (!m) return undefined;
  const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return Number.isNaN(at) ? undefined : at;
}

export async function checkKeyRotations(deps: DoctorDeps, settings: DoctorSettings): Promise<DoctorReport> {
  const now = deps.clock.now();
  // Keys belong to companies, not to secrets: a key is an orphan only if no secret of its company
  // references it, so the secrets are checked company by company.
  const byCompany = new Map<string, CompanyKeyEntry[]>();
  for await (const entry of deps.directory.list()) byCompany.set(entry.companyId, [...(byCompany.get(entry.companyId) ?? []), entry]);
  const findings = await examineCompanies(deps, settings, byCompany, now);
  return reportDoctorRun(deps, { checkedAt: now, companies: byCompany.size, findings });
}

/** The full check of the given companies' secrets (values included): the findings, not yet reported. */
export async function examineCompanies(
  deps: Omit<DoctorDeps, 'directory'>,
  settings: DoctorSettings,
  byCompany: ReadonlyMap<string, CompanyKeyEntry[]>,
  now: number = deps.clock.now(),
): Promise<Finding[]> {
  const s = resolveSettings(settings);
  const pendingRevocations = new Map<string, Revocation>();
  if (byCompany.size > 0) for await (const revocation of deps.scheduler.pending()) pendingRevocations.set(revocation.apiKeyId, revocation);
  const findings: Finding[] = [];
  for (const [companyId, entries] of byCompany) {
    const found: Finding[] = [];
    const refreshed = { value: false };
    await checkCompany(entries, { deps, settings: s, now, pendingRevocations, refreshed, found, log: deps.logger.child({ companyId }) });
    findings.push(...found);
  }
  return findings;
}

/**
 * A finding as a log line writes it: the secret's name as `secretName`, a field the redactor lets
 * through (src/core/shared/redact.ts), where `secret` would be blanked as a secret's value. The
 * finding itself (the report, the event, the CLI's JSON) keeps `secret`.
 */
function loggedFinding(finding: Finding): Record<string, unknown> {
  const { secret, ...rest } = finding;
  return { ...rest, secretName: secret };
}

/** Metrics, logs and events of a run's findings; the report as given. */
export async function reportDoctorRun<R extends DoctorReport>(
  deps: Pick<DoctorDeps, 'events' | 'logger' | 'metrics'>,
  report: R,
): Promise<R> {
  const { findings } = report;
  const unrepaired = findings.filter((f) => !f.repaired);
  for (const finding of findings) deps.metrics.withDimensions({ Finding: finding.type }).add('RotationFindings', 1);
  // Emitted every run, zero included, so that the alarm on it sees data rather than a gap.
  deps.metrics.add(ALARMED_METRICS.unrepairedRotationFindings.name, unrepaired.length);
  deps.metrics.add('RotationRepairs', findings.length - unrepaired.length);
  for (const finding of findings) {
    if (finding.repaired) deps.logger.info('rotation doctor repaired', loggedFinding(finding));
    else deps.logger.warn('rotation doctor finding', loggedFinding(finding));
  }
  if (deps.events && findings.length > 0) {
    const events: DomainEvent[] = findings.map((f) => ({ type: FINDING_EVENT_TYPE, time: report.checkedAt, detail: { ...f } }));
    await deps.events.publish(events);
  }
  deps.logger.info('rotation doctor finished', { companies: report.companies, findings: findings.length, unrepaired: unrepaired.length });
  return report;
}

function resolveSettings(settings: DoctorSettings): Required<DoctorSettings> {
  return {
    graceMs: settings.graceMs,
    stuckPendingAfterMs: settings.stuckPendingAfterMs ?? HOUR,
    expiryWarningMs: settings.expiryWarningMs ?? 14 * DAY,
    overdueAfterMs: settings.overdueAfterMs ?? DAY,
    revocationSlackMs: settings.revocationSlackMs ?? 15 * 60_000,
    lateFinishMs: settings.lateFinishMs ?? ROTATION_LATE_FINISH_MS,
    repair: settings.repair ?? true,
  };
}

interface CheckContext {
  deps: Omit<DoctorDeps, 'directory'>;
  settings: Required<DoctorSettings>;
  now: number;
  pendingRevocations: Map<string, Revocation>;
  /** Whether this company's check has re-read the pending revocations already. */
  refreshed: { value: boolean };
  found: Finding[];
  log: Logger;
}

/** A key a version of the secret holds, and that version (for a rotation's version, its token). */
type HeldKey = CompanyKeySecret & { versionId: string };

interface SecretState {
  entry: CompanyKeyEntry;
  description: SecretDescription;
  current: CompanyKeySecret;
  /** The key each labelled version holds, by stage. */
  referenced: Map<string, CompanyKeySecret>;
  /**
   * Every key any version of the secret ever held, labelled or not, by key id: an old key is known
   * to be ours by having been in the secret, whatever its name (an installed key has no rotation
   * name), so a revocation that was lost is found even two rotations later.
   */
  held: Map<string, HeldKey>;
  /**
   * Versions the doctor gave up (`givenUpLabel`), by version id (= the rotation's token): when, and
   * whether `lateFinishMs` is over. A key of a rotation still inside it is never revoked.
   */
  givenUp: Map<string, { at: number; over: boolean }>;
}

async function checkCompany(entries: CompanyKeyEntry[], ctx: CheckContext): Promise<void> {
  const states: SecretState[] = [];
  for (const entry of entries) {
    try {
      states.push(await checkSecret(entry, ctx));
    } catch (error) {
      ctx.log.error('company key secret check failed', { secretName: entry.name, error });
      ctx.found.push({
        type: 'check_failed',
        companyId: entry.companyId,
        secret: entry.name,
        repaired: false,
        detail: describeDoctorError(error),
      });
    }
  }
  // Without every secret's references, no key can be known to be unreferenced.
  if (states.length === 0 || states.length < entries.length) return;
  try {
    await checkKeys(states, ctx);
  } catch (error) {
    ctx.log.error('company keys check failed', { error });
    ctx.found.push({
      type: 'check_failed',
      companyId: entries[0]!.companyId,
      secret: entries[0]!.name,
      repaired: false,
      detail: describeDoctorError(error),
    });
  }
}

/** One secret: stuck AWSPENDING (repaired), the rotation schedule; returns what it references. */
async function checkSecret(entry: CompanyKeyEntry, ctx: CheckContext): Promise<SecretState> {
  const { deps, settings, now, found } = ctx;
  const { store } = deps;
  const base = { companyId: entry.companyId, secret: entry.name };
  const secretId = entry.secretId;
  const description = await store.describeSecret(secretId);

  let versions = await store.listVersions(secretId);
  for (const version of versions) {
    if (!version.stages.includes(SecretStage.pending) || version.stages.includes(SecretStage.current)) continue;
    const age = version.createdAt === undefined ? Infinity : now - version.createdAt;
    if (age <= settings.stuckPendingAfterMs) continue; // a rotation in progress
    const key = await versionKey(store, secretId, version.versionId);
    const stamp = deps.clock.now();
    if (settings.repair && !(await giveUp(store, secretId, version.versionId, stamp, ctx.log))) continue;
    const keyText = key
      ? `; its key ${key.keyPrefix} is revoked by a run after ${isoSeconds(stamp + settings.lateFinishMs)}, unless a late finishSecret made it current`
      : '';
    found.push({
      ...base,
      type: 'stuck_pending',
      versionId: version.versionId,
      ...(key ? { apiKeyId: key.apiKeyId, keyPrefix: key.keyPrefix } : {}),
      repaired: settings.repair,
      detail: `AWSPENDING on version ${version.versionId}, which is not AWSCURRENT, since ${ageText(age)}${settings.repair ? `; label removed${keyText}` : ''}`,
    });
  }

  // The label of a rotation given up longer than lateFinishMs ago has done its work: no finishSecret
  // that passed its guard is still running, so the version's key is what the labels say it is. The
  // listing is the one from before this run's repairs: a version given up just now still shows
  // AWSPENDING there, and a version that carries AWSPENDING again is the stuck check's business.
  const givenUp = new Map<string, { at: number; over: boolean }>();
  const released = new Set<string>();
  for (const version of versions) {
    const times = version.stages.map(givenUpAt).filter((t) => t !== undefined);
    if (times.length === 0) continue;
    const at = Math.max(...times);
    const over = !version.stages.includes(SecretStage.pending) && now - at >= settings.lateFinishMs;
    givenUp.set(version.versionId, { at, over });
    if (!over) continue;
    released.add(version.versionId);
    if (version.stages.includes(SecretStage.current)) {
      ctx.log.info('a rotation the doctor gave up was promoted by a late finishSecret; its key is current', {
        versionId: version.versionId,
        givenUpAt: isoSeconds(at),
      });
    }
    if (!settings.repair) continue;
    for (const stage of version.stages.filter((s) => givenUpAt(s) !== undefined)) {
      await store.moveStage(secretId, { stage, fromVersionId: version.versionId });
    }
  }
  if (settings.repair) {
    versions = await store.listVersions(secretId);
    for (const version of versions) {
      const times = version.stages.map(givenUpAt).filter((t) => t !== undefined);
      if (times.length > 0 && !givenUp.has(version.versionId)) givenUp.set(version.versionId, { at: Math.max(...times), over: false });
    }
  } else {
    // A dry run reports what a repairing run would do: a label past its time references nothing.
    versions = versions.map((v) => (released.has(v.versionId) ? { ...v, stages: v.stages.filter((s) => givenUpAt(s) === undefined) } : v));
  }

  const rotation = description.rotation;
  if (!rotation.enabled) {
    found.push({ ...base, type: 'rotation_disabled', repaired: false, detail: 'rotation is not enabled on the secret' });
  } else {
    const interval = rotation.automaticallyAfterDays === undefined ? undefined : rotation.automaticallyAfterDays * DAY;
    const dueAt =
      rotation.nextRotationAt ??
      (rotation.lastRotatedAt !== undefined && interval !== undefined ? rotation.lastRotatedAt + interval : undefined);
    if (dueAt !== undefined && now - dueAt > settings.overdueAfterMs) {
      found.push({
        ...base,
        type: 'rotation_overdue',
        repaired: false,
        detail: `the rotation due ${new Date(dueAt).toISOString()} has not happened`,
      });
    }
  }

  const current = parseCompanyKeySecret((await store.readSecret(secretId, { stage: SecretStage.current })).value);
  // The entry's company is the secret's tag: a key of another company there is a `check_failed`, and
  // the company's keys are not judged against it (its key lists another company's keys).
  if (current.companyId.toLowerCase() !== entry.companyId.toLowerCase()) {
    throw new SecretCompanyMismatchError(entry.name, entry.companyId.toLowerCase(), current.companyId.toLowerCase());
  }
  const referenced = await referencedKeys(store, secretId, versions);
  const held = await heldKeys(store, secretId, versions);
  return { entry, description, current, referenced, held, givenUp };
}

/**
 * Gives a stuck rotation up: labels the version `givenUpLabel(at)`, then removes its AWSPENDING.
 * In that order, so that the version is never without a label that keeps its key from being
 * revoked: a finishSecret that passed its guard before the removal may still promote the version
 * and then stop before it reads the label again (a timeout between two calls, a failed read), and
 * the key it promoted must still be live. False if a late finishSecret removed AWSPENDING first
 * (the rotation is not stuck); the label then comes off again.
 */
async function giveUp(
  store: CheckContext['deps']['store'],
  secretId: string,
  versionId: string,
  at: number,
  log: Logger,
): Promise<boolean> {
  const label = givenUpLabel(at);
  await store.moveStage(secretId, { stage: label, toVersionId: versionId });
  if (await removeStuckPending(store, secretId, versionId)) return true;
  try {
    await store.moveStage(secretId, { stage: label, fromVersionId: versionId });
  } catch (error) {
    // Harmless where it stays: the next run past lateFinishMs takes it off.
    log.warn('given-up label not removed from a version a late finishSecret promoted', { versionId, error });
  }
  return false;
}

/**
 * Removes a stuck AWSPENDING (RemoveFromVersionId names the version). A late finishSecret (Secrets
 * Manager retries a rotation with its token) removes the same label after promoting the version;
 * if it did so since the listing, the removal fails, and the rotation is not stuck: false. The
 * caller lists the versions again after this removal and before revoking anything, and finishSecret
 * reads the label after its promotion; the given-up label covers a finishSecret that stops between
 * the two (docs/key-rotation.md, "finishSecret and the doctor").
 */
async function removeStuckPending(store: CheckContext['deps']['store'], secretId: string, versionId: string): Promise<boolean> {
  try {
    await store.moveStage(secretId, { stage: SecretStage.pending, fromVersionId: versionId });
    return true;
  } catch (error) {
    const stages = (await store.describeSecret(secretId)).versionStages[versionId] ?? [];
    if (stages.includes(SecretStage.pending) && !stages.includes(SecretStage.current)) throw error;
    return false;
  }
}

/** The key a version holds, or undefined (no value yet, or one that does not parse). */
async function versionKey(
  store: Pick<SecretStore, 'readSecret'>,
  secretId: string,
  versionId: string,
): Promise<CompanyKeySecret | undefined> {
  try {
    return parseCompanyKeySecret((await store.readSecret(secretId, { versionId })).value);
  } catch {
    return undefined;
  }
}

/** The company's keys at the service against what its secrets reference. */
async function checkKeys(states: SecretState[], ctx: CheckContext): Promise<void> {
  const { deps, settings, now, found } = ctx;
  const first = states[0]!;
  const client = deps.clientFor(first.current);
  const keys = await listKeys(client);
  const referencedIds = new Set(states.flatMap((s) => [...s.referenced.values()].map((k) => k.apiKeyId)));
  // Keys some secret hands out (or is bringing in): never revoked by the doctor.
  const inUse = new Set(
    states.flatMap((s) => [s.current.apiKeyId, s.referenced.get(SecretStage.pending)?.apiKeyId].filter((id) => id !== undefined)),
  );

  for (const { entry, current } of states) {
    const base = { companyId: entry.companyId, secret: entry.name, apiKeyId: current.apiKeyId, keyPrefix: current.keyPrefix };
    const listed = keys.find((k) => k.publicId === current.apiKeyId);
    if (!listed || listed.revokedAt !== null) {
      found.push({ ...base, type: 'check_failed', repaired: false, detail: 'the current key is not a live key of its company' });
      continue;
    }
    const expiresAt = millis(listed.expiresAt);
    if (expiresAt !== undefined && expiresAt - now <= settings.expiryWarningMs) {
      const detail = expiresAt <= now ? 'the current key has expired' : `the current key expires in ${ageText(expiresAt - now)}`;
      found.push({ ...base, type: 'key_expiring', repaired: false, detail });
    }
  }

  // A key rotation created is recognised by its name; a service that keeps no names leaves an
  // orphan looking like any other key of the company (a person's, another tool's). Those are never
  // revoked: the doctor says it cannot tell, and still repairs the keys the secret held.
  const unnamed = keys.filter(
    (k) => k.revokedAt === null && k.name === null && !inUse.has(k.publicId) && !states.some((s) => s.held.has(k.publicId)),
  );
  if (unnamed.length > 0) {
    ctx.log.warn('keys listed without a name: whether one is an orphan of a failed rotation cannot be told; left alone', {
      companyId: first.entry.companyId,
      keyPrefixes: unnamed.map((k) => shownPrefix(k.prefix)),
    });
  }

  for (const key of keys) {
    if (key.revokedAt !== null || inUse.has(key.publicId)) continue;
    const base = { companyId: first.entry.companyId, apiKeyId: key.publicId, keyPrefix: shownPrefix(key.prefix) };
    const token = rotationTokenOf(key);
    // Given up too recently: a finishSecret may still make it current (its version may hold no
    // value, so the label's reference alone does not cover it). A key listed without a name is
    // known by the version that holds it: the version id is its rotation's token.
    const heldIn = states.map((s) => s.held.get(key.publicId)?.versionId).find((v) => v !== undefined);
    const recentlyGivenUp = (version: string | undefined) =>
      version !== undefined && states.some((s) => s.givenUp.get(version)?.over === false);
    if (recentlyGivenUp(token) || recentlyGivenUp(heldIn)) continue;
    if (token !== undefined && !referencedIds.has(key.publicId)) {
      const created = millis(key.createdAt);
      // Younger than the grace period: it may be the key a rotation is creating right now.
      if (created === undefined || now - created <= settings.graceMs) continue;
      // A previous key whose label a second rotation took inside its grace period looks the same
      // as a key no rotation finished; its scheduled revocation tells them apart, and keeps the
      // grace period it promised.
      if (await revocationScheduled(key, ctx)) continue;
      await revokeIf(settings.repair, client, key);
      const givenUp = states.map((s) => s.givenUp.get(token)).find((g) => g !== undefined);
      found.push({
        ...base,
        secret: first.entry.name,
        type: 'orphan_key',
        repaired: settings.repair,
        detail: `key of rotation ${token}${givenUp ? ` (given up ${isoSeconds(givenUp.at)})` : ''} is referenced by no version of the company's secrets${settings.repair ? '; revoked' : ''}`,
      });
      continue;
    }
    // AWSPREVIOUS, or an older version without a label: a key the secret handed out before, whose
    // revocation (a run-time schedule) may have failed all its attempts or been lost.
    const holder =
      states.find((s) => s.referenced.get(SecretStage.previous)?.apiKeyId === key.publicId) ??
      states.find((s) => s.held.has(key.publicId) && ![...s.referenced.values()].some((k) => k.apiKeyId === key.publicId));
    if (holder && (await revocationOverdue(key, holder, ctx))) {
      await revokeIf(settings.repair, client, key);
      found.push({
        ...base,
        secret: holder.entry.name,
        type: 'revocation_overdue',
        repaired: settings.repair,
        detail: `the previous key is still live after its grace period${settings.repair ? '; revoked' : ''}`,
      });
    }
  }
}

/** The key of every version, labelled or not, by key id. A version whose value does not parse holds nothing. */
async function heldKeys(
  store: Pick<SecretStore, 'readSecret'>,
  secretId: string,
  versions: SecretVersionInfo[],
): Promise<Map<string, HeldKey>> {
  const out = new Map<string, HeldKey>();
  for (const version of versions) {
    try {
      const value = parseCompanyKeySecret((await store.readSecret(secretId, { versionId: version.versionId })).value);
      out.set(value.apiKeyId, { ...value, versionId: version.versionId });
    } catch {
      continue; // a placeholder without a value, a damaged version, or one Secrets Manager has deleted
    }
  }
  return out;
}

/** The key each labelled version holds, by stage. A version whose value does not parse references nothing. */
async function referencedKeys(
  store: Pick<SecretStore, 'readSecret'>,
  secretId: string,
  versions: SecretVersionInfo[],
): Promise<Map<string, CompanyKeySecret>> {
  const out = new Map<string, CompanyKeySecret>();
  for (const version of versions) {
    if (version.stages.length === 0) continue;
    let value: CompanyKeySecret;
    try {
      value = parseCompanyKeySecret((await store.readSecret(secretId, { versionId: version.versionId })).value);
    } catch {
      continue; // an AWSPENDING placeholder without a value, or a damaged version
    }
    for (const stage of version.stages) out.set(stage, value);
  }
  return out;
}

/**
 * Whether the previous key's grace period is over with no revocation to come. Decided twice: on
 * the run's snapshot, then (only if that says overdue) on a fresh read of the schedules and of the
 * secret's rotation. The snapshot of schedules predates this secret's versions, and a rotation
 * finishing in between schedules its previous key's revocation and then promotes (rotation.ts,
 * finishSecret), while LastRotatedAt moves only after it returns: on the snapshot alone the doctor
 * would revoke a key that has just begun its grace period.
 */
async function revocationOverdue(key: ApiKey, holder: SecretState, ctx: CheckContext): Promise<boolean> {
  if (!isRevocationOverdue(key, holder.description.rotation.lastRotatedAt, ctx)) return false;
  await refreshPendingRevocations(ctx);
  const fresh = await ctx.deps.store.describeSecret(holder.entry.secretId);
  return isRevocationOverdue(key, fresh.rotation.lastRotatedAt, ctx);
}

/** Whether a revocation of the key is scheduled and not yet late, on a fresh read of the schedules. */
async function revocationScheduled(key: ApiKey, ctx: CheckContext): Promise<boolean> {
  await refreshPendingRevocations(ctx);
  return scheduledInTime(key, ctx);
}

function scheduledInTime(key: ApiKey, ctx: CheckContext): boolean {
  const scheduled = ctx.pendingRevocations.get(key.publicId);
  return scheduled !== undefined && ctx.now <= scheduled.revokeAt + ctx.settings.revocationSlackMs;
}

function isRevocationOverdue(key: ApiKey, lastRotatedAt: number | undefined, ctx: CheckContext): boolean {
  if (scheduledInTime(key, ctx)) return false;
  // Without the promotion time the grace period cannot be known to be over.
  if (lastRotatedAt === undefined) return false;
  return ctx.now > lastRotatedAt + ctx.settings.graceMs + ctx.settings.revocationSlackMs;
}

/** Re-reads the pending revocations into the run's map, once per company at most. */
async function refreshPendingRevocations(ctx: CheckContext): Promise<void> {
  if (ctx.refreshed.value) return;
  ctx.refreshed.value = true;
  const fresh = new Map<string, Revocation>();
  for await (const revocation of ctx.deps.scheduler.pending()) fresh.set(revocation.apiKeyId, revocation);
  ctx.pendingRevocations.clear();
  for (const [id, revocation] of fresh) ctx.pendingRevocations.set(id, revocation);
}

async function revokeIf(repair: boolean, client: AccountingClient, key: ApiKey): Promise<void> {
  if (repair) await client.apiKeys.revoke(key.publicId);
}

function millis(timestamp: string | null): number | undefined {
  return timestamp === null ? undefined : timestampMillis(timestamp);
}

function isoSeconds(at: number): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function ageText(ms: number): string {
  if (!Number.isFinite(ms)) return 'an unknown time';
  if (ms >= DAY) return `${Math.floor(ms / DAY)} d`;
  if (ms >= HOUR) return `${Math.floor(ms / HOUR)} h`;
  return `${Math.max(0, Math.floor(ms / 60_000))} min`;
}

export function describeDoctorError(error: unknown): string {
  // Our errors never hold a key, but the detail also goes into events, which the logger does not redact.
  if (error instanceof Error) return redactString(`${error.name}: ${error.message}`);
  return 'unknown error';
}
