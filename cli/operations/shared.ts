import {
  CompanyKeyNotFoundError,
  isAcctopsKeySecretName,
  parseCompanyKeySecret,
  type KeyStatus,
  revokeApiKey,
  type CompanyKeyEntry,
  type DueRevocationsResult,
  type Finding,
  type RevocationOutcome,
  type RevokeDeps,
  type RevokedNowKey,
  type RevokeNowDeps,
  revokePendingKeys,
  RevocationBlockedError,
  type BlockedRevocation,
} from '../../src/core/api-keys';
import {
  activeCompanyPages,
  type CompanyRegistry,
  type RegisteredCompany,
  type RegistryTable,
} from '../../src/core/companies/company-registry';
import { DEFAULT_TIME_ZONE, FuturePeriodError, periodOpen, refuseFuturePeriod } from '../../src/core/exports/formats/period';
import { FORMATS } from '../../src/core/exports/formats/datasets';
import { SecretNotFoundError, SecretStage, type SecretStore } from '../../src/core/ports/secrets';
import type { ProbeResult } from '../../src/core/health/check-health';
import type { Logger } from '../../src/core/shared/logger';
import { redactString } from '../../src/core/shared/redact';
import { isDue, TokenNotFoundError, type TokenStore, type TokenSummary } from '../../src/core/tokens/token-store';
import {
  CliConfigError,
  CliError,
  CompanyEntryDamagedError,
  CompanyRemovedError,
  describeError,
  unknownCompany,
  unknownUser,
  UsageError,
} from '../errors';
import { ExitCode } from '../exit-codes';
import { iso } from '../format';
import {
  isSkipped,
  type CompanyList,
  type CompanyRow,
  type DoctorReport,
  type FindingRow,
  type KeyStatusRow,
  type ProbeRow,
  type RefreshOutcome,
  type RefreshOutcomeRow,
  type RegistryHealth,
  type ReportedError,
  type RevokedKey,
  type RevokedNowRow,
  type RevokePendingReport,
  type RotateReport,
  type TokenHealth,
  type UserList,
  type UserRow,
} from './operations';
import { NamedCompanyRegistry } from './named-company-registry';

/**
 * What both implementations of Operations compute the same way: rows and reports from the use
 * cases' results. Nothing here picks a mode or prints.
 */

/**
 * A company's export row before anything is known of its result: every report field present and
 * null (--json promises a fixed key set). A failed row and a requested one start from it, so a
 * field added to the report is added here once.
 */
export const NO_EXPORT_RESULT = {
  manifestUrl: null,
  runId: null,
  records: null,
  totals: null,
  undatedTaxReports: null,
  taxReportsWithoutCurrency: null,
  transactionsWithDefaultCurrency: null,
  duplicatesDropped: null,
  transactionsOutsidePeriod: null,
  transactionsDateTo: null,
  defaultCurrency: null,
  staleSymlinks: null,
  athenaEmpty: null,
  error: null,
} as const;

/** The refresh margin of the schedule (TokenLifecycle's default): "due" in listings means the same as for the planner. */
export const REFRESH_MARGIN_MS = 15 * 60_000;

/** A refresh outcome with its fixed key set for --json. */
/** `leaseUntil`: the user's record's, shown for a `busy` user only (the lease that made it busy). */
export function outcomeRow(outcome: RefreshOutcome, leaseUntil: number | null = null): RefreshOutcomeRow {
  return {
    ...outcome,
    errorClass: outcome.errorClass ?? null,
    errorCode: outcome.errorCode ?? null,
    credentialRefused: outcome.credentialRefused === true,
    leaseUntil: outcome.result === 'busy' ? (iso(leaseUntil) ?? null) : null,
  };
}

export function userRow(record: TokenSummary, now: number): UserRow {
  return {
    externalId: record.externalId,
    username: record.username,
    email: record.email,
    status: record.status,
    accessTokenExpiresAt: iso(record.accessTokenExpiresAt)!,
    refreshedAt: iso(record.refreshedAt)!,
    due: isDue(record, now, REFRESH_MARGIN_MS),
    consecutiveFailures: record.consecutiveFailures,
    lastErrorClass: record.lastErrorClass,
    lastErrorCode: record.lastErrorCode,
  };
}

/** Every record of a TokenStore (the file store or the stack's table), page by page. */
export async function listUsers(store: Pick<TokenStore, 'list'>, now: number): Promise<UserList> {
  const rows: UserRow[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.list({ limit: 1000, cursor });
    rows.push(...page.items.map((r) => userRow(r, now)));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { rows, now };
}

/**
 * Runs a use case on the user a command names (`--user`): a user the token store has no record of
 * is exit 3 (`unknownUser`), as in every command, not the store's TokenNotFoundError (exit 1).
 */
export async function forKnownUser<T>(externalId: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof TokenNotFoundError && error.externalId === externalId) throw unknownUser(externalId);
    throw error;
  }
}

/**
 * The key secret of the company a command names (`--company`), for `keys rotate`, `keys status
 * --company`, `keys revoke-pending`, `keys cancel-rotation` and `export --company`. When no secret
 * holds its key, the registry says why: a company it does not hold either is unknown (exit 3,
 * `unknownCompany`), a removed one is said to be removed, with the restore (CompanyRemovedError,
 * exit 3); for an active one (its key not installed yet), or when the registry cannot be read, the
 * directory's own CompanyKeyNotFoundError stands (exit 3). A removed company is refused also when
 * its secret is found: `companies remove` keeps a secret the stack imports, and a removed company
 * is not acted on; so is one whose registry entry is damaged (CompanyEntryDamagedError, exit 3),
 * which the monthly export skips.
 */
export async function companyKeyOf(
  find: (companyId: string) => Promise<CompanyKeyEntry>,
  registry: () => Promise<Pick<CompanyRegistry, 'get'> | undefined>,
  companyId: string,
  now: number,
): Promise<CompanyKeyEntry> {
  let found: CompanyKeyEntry;
  try {
    found = await find(companyId);
  } catch (error) {
    if (!(error instanceof CompanyKeyNotFoundError) || error.code !== 'company_key_not_found') throw error;
    throw await whyNoCompanyKey(registry, companyId, now, error);
  }
  const entry = await registryEntry(registry, companyId);
  if (entry?.removedAt !== undefined)
    throw new CompanyRemovedError(entry, now, { secret: found.name, imported: !isAcctopsKeySecretName(found.name, companyId) });
  return found;
}

/** The company's registry entry; null when it has none, undefined when there is no registry or it cannot be read. */
async function registryEntry(
  registry: () => Promise<Pick<CompanyRegistry, 'get'> | undefined>,
  companyId: string,
): Promise<RegisteredCompany | null | undefined> {
  try {
    return await (await registry())?.get(companyId);
  } catch (error) {
    // A damaged entry is the named company's own fault, said as such; a registry this stack version
    // lacks, or cannot be read: what the key secret says stands.
    if (error instanceof CompanyEntryDamagedError) throw error;
    return undefined;
  }
}

/** A key directory that lists one company's secret (`keys status --company`). */
export function oneCompanyDirectory(entry: CompanyKeyEntry): { list(): AsyncIterable<CompanyKeyEntry> } {
  return {
    list: async function* () {
      yield entry;
    },
  };
}

/** The error to report for a company without a key secret (companyKeyOf), from its registry entry. */
export async function whyNoCompanyKey(
  registry: () => Promise<Pick<CompanyRegistry, 'get'> | undefined>,
  companyId: string,
  now: number,
  noKey: Error,
): Promise<Error> {
  const entry = await registryEntry(registry, companyId);
  // A registry this stack version lacks, or cannot read: the missing key is still the fact to report.
  if (entry === undefined) return noKey;
  if (entry === null) return unknownCompany(companyId.toLowerCase());
  if (entry.removedAt !== undefined) return new CompanyRemovedError(entry, now);
  return noKey;
}

/**
 * Revokes the secret's AWSPREVIOUS key now instead of after the grace period (a leaked key): the
 * same `revokeApiKey` the scheduled revocation runs, so it never revokes the current key and a key
 * already gone is fine. Our own consumers holding the old key get a 401, read the secret again and
 * retry with the new key; the schedule, when it fires later, finds the key revoked.
 */
export async function revokePreviousNow(
  secretId: string,
  deps: RevokeDeps,
): Promise<{ outcome: RevocationOutcome; apiKeyId: string; keyPrefix: string } | undefined> {
  const store = deps.store as Pick<SecretStore, 'readSecret'>;
  const current = await store.readSecret(secretId, { stage: SecretStage.current });
  let previous;
  try {
    previous = parseCompanyKeySecret((await store.readSecret(secretId, { stage: SecretStage.previous })).value);
  } catch (error) {
    if (error instanceof SecretNotFoundError) return undefined;
    throw error;
  }
  const outcome = await revokeApiKey(deps, {
    secretId,
    companyId: previous.companyId,
    apiKeyId: previous.apiKeyId,
    keyPrefix: previous.keyPrefix,
    revokeAt: deps.clock.now(),
    rotationToken: current.versionId,
  });
  return { outcome, apiKeyId: previous.apiKeyId, keyPrefix: previous.keyPrefix };
}

/**
 * `--revoke-previous-now` after a rotation that completed. A failure to revoke is part of the
 * report, not the command's error: the rotation happened, and a report lost to the error left the
 * operator to run `keys rotate` again, which rotated once more and revoked the key that had just
 * replaced the leaked one, while the leaked key stayed valid. The hint names the command that
 * revokes that key and rotates nothing (`command`: how the operator calls acctops in this mode).
 */
export async function revokePreviousAfterRotation(
  secretId: string,
  deps: RevokeDeps,
  previous: { companyId: string; keyPrefix: string },
  command: string,
): Promise<{ apiKeyId: string | null } & Pick<RotateReport, 'previousKeyRevoked' | 'previousKeyRevokeError'>> {
  try {
    const revoked = await revokePreviousNow(secretId, deps);
    return { apiKeyId: revoked?.apiKeyId ?? null, previousKeyRevoked: revoked?.outcome ?? null, previousKeyRevokeError: null };
  } catch (error) {
    deps.logger.error('the rotation completed, but revoking the previous key now failed', { keyPrefix: previous.keyPrefix, error });
    const { code, message } = describeError(error);
    return {
      apiKeyId: null,
      previousKeyRevoked: 'failed',
      previousKeyRevokeError: {
        code,
        message: `the rotation completed, but the previous key ${previous.keyPrefix}… could not be revoked and is still valid: ${message}`,
        exitCode: ExitCode.partial,
        hint: `revoke it without rotating again: ${revokePendingCommand(command, previous.companyId, previous.keyPrefix)}; not \`keys rotate\` again, which would rotate once more`,
      },
    };
  }
}

export function revokePendingCommand(command: string, companyId: string, keyPrefix: string): string {
  return `\`${command} keys revoke-pending --company ${companyId} --prefix ${keyPrefix}\``;
}

/**
 * `keys revoke-pending`: carries out now the company's pending revocations (all, or the one of
 * `prefix`) through `revokePendingKeys`, so the current key is never revoked (`kept_current`). A
 * key revoked already (a repeat, or a schedule left in AWS) is `already_revoked`, exit 0. A prefix
 * that names no pending revocation and no revoked key of the company is exit 3: a typo must not
 * pass for a revoked leaked key.
 */
export async function revokePendingNow(
  entry: CompanyKeyEntry,
  deps: RevokeNowDeps,
  prefix: string | undefined,
): Promise<RevokePendingReport> {
  const result = await revokePendingKeys(deps, {
    secretId: entry.secretId,
    companyId: entry.companyId,
    ...(prefix === undefined ? {} : { prefix }),
  });
  if (prefix !== undefined && result.unmatched) {
    throw new CliError(
      `--prefix ${prefix}: no old key of company ${entry.companyId} with that prefix is pending revocation, revoked, or the secret's previous key`,
      {
        code: 'no_pending_revocation',
        exitCode: ExitCode.config,
        // The previous key (AWSPREVIOUS: the key `keys install` replaced) is revoked above; other old
        // keys live with no revocation queued are the doctor's to judge, not this command's.
        hint: `\`acctops keys status --company ${entry.companyId}\` lists the pending revocations and the current key, which this command never revokes; another old key still live with no revocation pending is \`acctops doctor\`'s \`revocation_overdue\` or \`orphan_key\`, which \`acctops doctor --repair\` revokes`,
      },
    );
  }
  return {
    companyId: entry.companyId,
    secret: entry.name,
    keys: result.keys.map((k) => revokedNowRow(k, { companyId: entry.companyId, command: 'acctops' })),
  };
}

/** A key revoked now, for --json: its failure as README's "Exit codes" prints it; `said` words it for `keys rotate`. */
function revokedNowRow(
  key: RevokedNowKey,
  context: { companyId: string; command: string },
  said?: { message(keyPrefix: string, cause: string): string; hint(keyPrefix: string): string },
): RevokedNowRow {
  const { apiKeyId, keyPrefix, outcome } = key;
  const scheduleError =
    key.scheduleError === null ? null : scheduleDeleteError({ ...context, keyPrefix, apiKeyId, outcome }, key.scheduleError);
  if (outcome !== 'failed') return { keyPrefix, apiKeyId, outcome, error: null, scheduleError };
  const { code, message, exitCode, hint } = describeError(key.error);
  if (said === undefined) return { keyPrefix, apiKeyId, outcome, error: { code, message, exitCode, hint: hint ?? null }, scheduleError };
  return {
    keyPrefix,
    apiKeyId,
    outcome,
    error: { code, message: said.message(keyPrefix, message), exitCode: ExitCode.partial, hint: said.hint(keyPrefix) },
    scheduleError,
  };
}

/**
 * A key revoked now whose one-time revocation schedule could not be deleted (AWS mode, decision
 * 107): the revocation stands, so this is a partial success (exit 5), never the row's failure. The
 * schedule is named (the cause is the adapter's `DeleteSchedule failed for revoke-<id>`) and so is
 * the IAM action, since a refusal is the likely cause and a repeat without it meets it again. A
 * refusal is said as such in the message itself (decision 113): the operator reads first that the
 * key is revoked and that only a permission is missing, not that the command failed.
 */
export function scheduleDeleteError(
  key: { companyId: string; command: string; keyPrefix: string; apiKeyId: string; outcome?: string | null },
  error: unknown,
): ReportedError {
  const revoked = key.outcome === 'already_revoked' || key.outcome === 'already_gone' ? 'was revoked already' : 'was revoked';
  const denied = refusedByIam(error);
  const why = denied
    ? `the operator's credentials lack scheduler:DeleteSchedule on revoke-${key.apiKeyId} (${describeError(error).message})`
    : describeError(error).message;
  return {
    code: 'schedule_delete_failed',
    message: `key ${key.keyPrefix}… ${revoked}, but its revocation schedule could not be deleted: ${why}; it stays in the schedule group, and if the company is removed before it fires, it fails into the dead-letter queue and the doctor names the key as blocked`,
    exitCode: ExitCode.partial,
    hint: `the operator needs scheduler:DeleteSchedule on the stack's KeyRevocationScheduleGroup; then ${revokePendingCommand(key.command, key.companyId, key.keyPrefix)} deletes it (the key is already_revoked)`,
  };
}

/** Whether an AWS call failed because IAM refused the caller the action (anywhere down the cause chain). */
function refusedByIam(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'AccessDeniedException' || e.name === 'AccessDenied') return true;
  }
  return false;
}

/**
 * `--revoke-previous-now`, after the previous key: every other old key of the company still
 * pending revocation, revoked now too. A leaked key is not always the one this rotation replaced:
 * after a plain `keys rotate`, the leaked key is the one before, still valid for its grace period,
 * and revoking only the previous key left it so with a clean report. A failure here is part of the
 * report (exit 5), as the previous key's is: the rotation happened.
 */
export async function revokeOlderKeysAfterRotation(
  entry: CompanyKeyEntry,
  deps: RevokeNowDeps,
  previousApiKeyId: string,
  command: string,
): Promise<Pick<RotateReport, 'olderKeysRevoked' | 'olderKeysRevokeError'>> {
  const said = {
    message: (keyPrefix: string, cause: string) =>
      `the rotation completed, but the older key ${keyPrefix}…, pending revocation, could not be revoked and is still valid: ${cause}`,
    hint: (keyPrefix: string) =>
      `revoke it without rotating again: ${revokePendingCommand(command, entry.companyId, keyPrefix)}; not \`keys rotate\` again, which would rotate once more`,
  };
  try {
    const result = await revokePendingKeys(deps, { secretId: entry.secretId, companyId: entry.companyId, skip: [previousApiKeyId] });
    return {
      olderKeysRevoked: result.keys.map((k) => revokedNowRow(k, { companyId: entry.companyId, command }, said)),
      olderKeysRevokeError: null,
    };
  } catch (error) {
    deps.logger.error('the rotation completed, but the pending revocations could not be read or carried out', { error });
    const { code, message } = describeError(error);
    return {
      olderKeysRevoked: null,
      olderKeysRevokeError: {
        code,
        message: `the rotation completed, but the company's other old keys still pending revocation could not be revoked now and may be valid: ${message}`,
        exitCode: ExitCode.partial,
        hint: `revoke them without rotating again: \`${command} keys revoke-pending --company ${entry.companyId}\`; \`${command} keys status --company ${entry.companyId}\` lists them`,
      },
    };
  }
}

export function revokedKeys(result: DueRevocationsResult): RevokedKey[] {
  return [
    ...result.outcomes.map((o) => ({ keyPrefix: o.keyPrefix, outcome: o.outcome, error: null, code: null })),
    // The reason is the client's message (request, status, the service's scrubbed text), redacted once more.
    ...result.failed.map((f) => ({
      keyPrefix: f.keyPrefix,
      outcome: 'failed (stays queued)',
      error: redactString(f.error instanceof RevocationBlockedError ? blockedRevocationText(f.error) : describeError(f.error).message),
      code: describeError(f.error).code,
    })),
  ];
}

/**
 * AWS mode's doctor: the pending revocations that will fail when their schedule fires (their
 * company's key secret is scheduled for deletion), as rows whose error and code are the local
 * doctor's for a due revocation that failed so, and so is the finding `findingsOf` makes of them.
 */
export function blockedRevocationRows(blocked: readonly BlockedRevocation[]): RevokedKey[] {
  return blocked.map(({ revocation, error }) => ({
    keyPrefix: revocation.keyPrefix,
    outcome: `blocked (its schedule fires ${iso(revocation.revokeAt)!} and fails)`,
    error: redactString(blockedRevocationText(error)),
    code: error.code,
  }));
}

/**
 * A revocation of a removed company's old key: no retry can succeed while the secret is scheduled
 * for deletion, so the text says the way out. `companies remove --revoke-keys` revokes the pending
 * old keys and the current key before removing the company again (decision 105).
 */
function blockedRevocationText(error: RevocationBlockedError): string {
  const c = error.companyId;
  return (
    `${error.message}; it stays valid at the service: \`acctops companies restore --company ${c}\` (within the recovery window), ` +
    `then \`acctops companies remove --company ${c} --revoke-keys\`, which revokes it and the company's current key before removing the company again`
  );
}

// Companies

/** The registry over the stack's table (AWS mode; the local mode's is LocalWorld.registry). */
export function companyRegistry(table: RegistryTable, logger?: Logger): CompanyRegistry {
  return new NamedCompanyRegistry(table, { defaultFormats: FORMATS, ...(logger ? { logger } : {}) }, 'aws');
}

export function companyRow(c: RegisteredCompany): CompanyRow {
  return {
    companyId: c.companyId,
    status: c.removedAt === undefined ? 'active' : 'removed',
    formats: c.formats,
    rotationDays: c.rotationDays ?? null,
    defaultCurrency: c.defaultCurrency ?? null,
    addedAt: c.addedAt ?? null,
    removedAt: c.removedAt ?? null,
    seededFrom: c.seededFrom ?? null,
  };
}

const REGISTRY_PAGE = 500;

/** The registry a page at a time (removed companies too, unless `active`), sorted by id. */
export async function listCompanies(
  registry: Pick<CompanyRegistry, 'pages'>,
  options: { active: boolean },
  mode: CompanyList['mode'],
): Promise<CompanyList> {
  const companies: CompanyRow[] = [];
  const skipped: CompanyList['skipped'] = [];
  for await (const page of registry.pages(REGISTRY_PAGE)) {
    companies.push(...page.items.map(companyRow).filter((r) => !options.active || r.status === 'active'));
    skipped.push(...page.skipped);
  }
  companies.sort((a, b) => a.companyId.localeCompare(b.companyId));
  return { mode, companies, skipped };
}

/** Reads the whole registry a page at a time, keeping counts and the findings only. */
export async function registryHealth(registry: Pick<CompanyRegistry, 'pages'>): Promise<RegistryHealth> {
  const health: RegistryHealth = { companies: 0, active: 0, unreadable: [] };
  for await (const page of registry.pages(REGISTRY_PAGE)) {
    health.companies += page.items.length;
    health.active += page.items.filter((c) => c.removedAt === undefined).length;
    health.unreadable.push(...page.skipped);
  }
  return health;
}

/**
 * The companies the registry says were removed, read a page at a time; an empty set when it cannot
 * be read (the doctor then judges every company with a key secret, as before the registry).
 */
export async function removedCompanies(registry: Pick<CompanyRegistry, 'pages'> | undefined): Promise<ReadonlySet<string>> {
  const removed = new Set<string>();
  try {
    for await (const page of registry?.pages(REGISTRY_PAGE) ?? []) {
      for (const company of page.items) if (company.removedAt !== undefined) removed.add(company.companyId);
    }
  } catch {
    return new Set();
  }
  return removed;
}

// Exports

/**
 * A month after the current one (in `timeZone`, on the mode's clock) has no data yet: its export
 * would "complete" empty and then count as the company's latest. The current month is allowed (a
 * partial month, replaced by the monthly run). The local and direct modes judge in Europe/Berlin;
 * the AWS mode in the stage's `schedules.timeZone` (its ExportTimeZone output), as request-export
 * will, so that a month the CLI lets through is never one the pipeline refuses.
 */
export function refuseFutureMonth(month: string | undefined, now: number, timeZone: string = DEFAULT_TIME_ZONE): void {
  if (month === undefined) return;
  try {
    // The pipeline's rule (request-export, the webhook), worded for the flag.
    refuseFuturePeriod(month, now, timeZone, '--month');
  } catch (error) {
    if (!(error instanceof FuturePeriodError)) throw error;
    throw new UsageError(
      `--month is after the current month (${error.currentPeriod})`,
      'export a month that has begun; the default is the previous month',
    );
  }
}

/** Whether `month` has not ended yet at `now` (the month refuseFutureMonth measures by). */
export function monthOpen(month: string, now: number, timeZone: string = DEFAULT_TIME_ZONE): boolean {
  return periodOpen(month, now, timeZone);
}

/**
 * The zone whose month begins first (UTC+14): a month after the current one there is after it in
 * every zone, so the AWS mode refuses it before it reads the stack for the stage's own zone.
 */
export const EARLIEST_TIME_ZONE = 'Pacific/Kiritimati';

// Doctor

/**
 * A probe with its fixed key set (README: an absent value is null). In AWS mode the probes are the
 * check-health function's JSON answer, which has no key for an absent field.
 */
export function probeRow(probe: ProbeResult): ProbeRow {
  const error = probe.error;
  return {
    name: probe.name,
    ok: probe.ok,
    durationMs: probe.durationMs,
    detail: probe.detail ?? null,
    error: error ? { name: error.name, code: error.code ?? null, message: error.message } : null,
  };
}

/** A rotation finding with its fixed key set: the local doctor's, or the check-key-rotations function's JSON answer. */
export function findingRow(finding: Finding): FindingRow {
  return { ...finding, apiKeyId: finding.apiKeyId ?? null, keyPrefix: finding.keyPrefix ?? null, versionId: finding.versionId ?? null };
}

export function tokenHealth(rows: readonly UserRow[], now: number): TokenHealth {
  const active = rows.filter((r) => r.status === 'active');
  return {
    total: rows.length,
    active: active.length,
    due: active.filter((r) => r.due).length,
    expired: active.filter((r) => Date.parse(r.accessTokenExpiresAt) <= now).map((r) => r.externalId),
    needsAttention: rows.filter((r) => r.status === 'needs_attention').map((r) => r.externalId),
    revoked: rows.filter((r) => r.status === 'revoked').length,
  };
}

/** The doctor's revoked-key rows; none when the section is absent (null) or could not be read. */
export function revokedKeyRows(report: Pick<DoctorReport, 'revokedKeys'>): RevokedKey[] {
  const rows = report.revokedKeys ?? [];
  return isSkipped(rows) ? [] : rows;
}

export function findingsOf(report: Omit<DoctorReport, 'findings'>): string[] {
  const out: string[] = [];
  for (const d of report.damagedStateFiles ?? []) out.push(`${d.problem}: ${d.remedy}`);
  if (isSkipped(report.health)) out.push(`health probes not run: ${report.health.skipped}`);
  else for (const p of report.health.probes) if (!p.ok) out.push(`probe ${p.name} failed: ${p.error?.message ?? 'no detail'}`);
  for (const s of report.companySecrets ?? []) if (!s.ok) out.push(`company key secret ${s.secret} unreadable: ${s.error ?? ''}`);
  for (const r of revokedKeyRows(report)) {
    if (r.error !== null && r.code === 'revocation_secret_deleted') out.push(r.error);
    else if (r.error !== null)
      out.push(
        `old key ${r.keyPrefix}… is past its grace period but could not be revoked (${r.error}); it stays queued and is tried again by every command that runs due revocations; \`acctops keys status\` names its company, and \`acctops keys revoke-pending --company <id>\` tries it now`,
      );
  }
  if (!isSkipped(report.tokens)) {
    for (const id of report.tokens.needsAttention)
      out.push(`user ${id} needs attention (refresh and retrieve failed): \`acctops users recover --user ${id}\``);
    for (const id of report.tokens.expired) out.push(`user ${id} has an expired access token: \`acctops tokens refresh --user ${id}\``);
  }
  if (!isSkipped(report.rotations)) {
    for (const f of report.rotations.findings) {
      const remedy = rotationRemedy(f);
      if (!f.repaired) out.push(`rotation ${f.type} for company ${f.companyId}: ${f.detail}${remedy === undefined ? '' : `: ${remedy}`}`);
    }
  }
  if (!isSkipped(report.registry)) {
    for (const f of report.registry.unreadable) {
      out.push(
        `company registry entry ${f.key} is unreadable (${f.issues.map((i) => i.path || '(root)').join(', ')}); the monthly export skips it and no command acts on it: ${report.mode === 'local' ? '`acctops local repair` sets it aside, then `acctops companies add` registers the company again' : 'docs/runbooks.md, "Add or remove a company"'}`,
      );
    }
  }
  if (!isSkipped(report.exports)) {
    for (const c of report.exports.companies) {
      if (c.manifestError)
        out.push(
          `company ${c.companyId}: the manifest of ${c.lastPeriod} is unreadable (${c.manifestError}); restore it, or delete it (the period is then not published) and run \`acctops export --month ${c.lastPeriod} --company ${c.companyId}\``,
        );
      for (const empty of c.athenaEmpty)
        out.push(
          `company ${c.companyId}: Athena shows no rows of ${empty.datasets.join(', ')} of ${empty.period}: its export has no Parquet of ${empty.datasets.length === 1 ? 'it' : 'them'} (a re-export with --replace-formats dropped it), so ${empty.datasets.length === 1 ? 'its symlink lists' : 'their symlinks list'} nothing: \`acctops export --month ${empty.period} --company ${c.companyId}\` (every format, Parquet included) fills ${empty.datasets.length === 1 ? 'it' : 'them'}`,
        );
      for (const stale of c.staleSymlinks)
        out.push(
          `company ${c.companyId}: Athena shows an earlier export of ${stale.datasets.join(', ')} of ${stale.period} than its manifest (their symlinks differ from the ones it records): \`acctops export --month ${stale.period} --company ${c.companyId}\` rewrites them`,
        );
      // Its key_missing finding says why and what to do: an export cannot run before its key is installed.
      if (c.overdue && !c.keyMissing)
        out.push(
          `company ${c.companyId} has no export of ${report.exports.expectedPeriod} (last: ${c.lastPeriod ?? 'none'}): \`acctops export --month ${report.exports.expectedPeriod} --company ${c.companyId}\``,
        );
    }
  }
  return out;
}

/**
 * The command that fixes a rotation finding, as every other finding line names one (docs/runbooks.md,
 * "The rotation doctor reports findings"); undefined when the detail names it already (`key_missing`).
 */
function rotationRemedy(f: Pick<FindingRow, 'type' | 'companyId'>): string | undefined {
  const rotate = `\`acctops keys rotate --company ${f.companyId}\``;
  switch (f.type) {
    case 'stuck_pending':
      return '`acctops doctor --repair` removes the label (docs/runbooks.md, "A rotation stuck in AWSPENDING" if it comes back)';
    case 'orphan_key':
    case 'revocation_overdue':
      return '`acctops doctor --repair` revokes it now';
    case 'key_expiring':
    case 'rotation_overdue':
      return `${rotate} replaces the key now`;
    case 'check_failed':
      return `\`acctops keys status --company ${f.companyId}\` shows why (docs/runbooks.md, "The rotation doctor reports findings")`;
    case 'rotation_disabled':
      return 'turn it on again: docs/runbooks.md, "The rotation doctor reports findings"';
    case 'key_missing':
      return undefined;
  }
}

// The local mode

/** What AWS mode answers to the local mode's own commands (`acctops local status|advance-clock|reset-clock`). */
export function localModeOnly(): CliConfigError {
  return new CliConfigError('this command needs the local mode, but a stack is named', 'drop --stack / ACCTOPS_STACK');
}

/**
 * `keys status` of every company: the key secrets' rows, then a row for each active registered
 * company that has none. The key secrets alone left such a company out silently, although every
 * export of it fails until its key is installed (the doctor's `key_missing`).
 */
export async function withKeyMissingRows(
  rows: readonly KeyStatus[],
  registry: Pick<CompanyRegistry, 'pages'> | undefined,
): Promise<KeyStatusRow[]> {
  const out: KeyStatusRow[] = [...rows];
  if (registry === undefined) return out;
  const held = new Set(rows.map((r) => r.companyId));
  for await (const page of activeCompanyPages(registry)) {
    for (const company of page.items) if (!held.has(company.companyId)) out.push(keyMissingRow(company.companyId));
  }
  return out;
}

export function keyMissingRow(companyId: string): KeyStatusRow {
  return {
    companyId,
    secret: null,
    keyPrefix: null,
    apiKeyId: null,
    permissions: null,
    lastUsedAt: null,
    lastUsedByThisCheck: null,
    expiresAt: null,
    rotationEnabled: false,
    rotationDays: null,
    lastRotatedAt: null,
    nextRotationAt: null,
    rotationInProgress: false,
    pendingRevocations: [],
    currentKeyRevocations: [],
    replacedKey: null,
    earlierKeys: [],
    error: `registered, but no key secret holds its key, so its exports fail: \`acctops keys install --company ${companyId}\` stores it (ACCTOPS_API_KEY)`,
  };
}
