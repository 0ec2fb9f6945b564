import type {
  Finding,
  InstallOutcome,
  KeyStatus,
  RetireOutcome,
  RevocationOutcome,
  RevokeNowOutcome,
  RotateNowResult,
} from '../../src/core/api-keys';
import type { AddResult, RegistryFinding, RemoveResult } from '../../src/core/companies/company-registry';
import type { ExportProgress } from '../../src/core/exports/pipeline/export-sources';
import type { AmountTotal } from '../../src/core/exports/formats/totals';
import type { CsvDialect, ExportFormat } from '../../src/core/exports/formats/datasets';
import type { TokenStatus } from '../../src/core/tokens/token-store';
import type {
  OnboardInput,
  OnboardResult,
  RecoverResult,
  RefreshOutcome,
  RefreshResult,
  RevokeResult,
} from '../../src/core/tokens/token-lifecycle';
import type { ExportTarget } from '../args';
import type { TaxReportFieldNames } from '../../src/core/exports/formats/tax-report-fields';
import type { Output } from '../output';
import type { Clock } from '../../src/core/shared/clock';

// The port's vocabulary for the token operations: each implementation imports it from here.
export type { OnboardInput, OnboardResult, RecoverResult, RefreshOutcome, RefreshResult, RevokeResult };

/**
 * The CLI's one port: a method per runbook action, each returning a report that the command prints
 * (text or --json). LocalOperations (the embedded world of the state directory) and AwsOperations
 * (the named stack) implement it; the Session picks one, so no command branches on the mode.
 *
 * Types (and one type guard) only: commands import it, and loading it costs no start-up.
 */
export interface Operations {
  onboardUser(input: OnboardInput): Promise<OnboardResult>;
  listUsers(): Promise<UserList>;
  /**
   * The methods that take a user or company a command names (`--user`, `--company`) reject one the
   * deployment does not know with UnknownNameError (exit 3, cli/errors.ts), and a removed company,
   * where its key is needed, with CompanyRemovedError (exit 3).
   */
  revokeUser(externalId: string): Promise<RevokeResult>;
  recoverUser(externalId: string, options: { reactivate: boolean; force: boolean }): Promise<RecoverResult>;

  /** The due users now: refreshed here (local), or enqueued by the deployed planner (AWS). */
  refreshDue(options?: { onInterrupted?: OnInterrupted }): Promise<RefreshReport>;
  refreshUser(externalId: string, options?: { onInterrupted?: OnInterrupted }): Promise<RefreshReport>;

  rotateKey(
    companyId: string,
    options: { wait: boolean; revokePreviousNow: boolean; onInterrupted?: OnInterrupted },
  ): Promise<RotateReport>;
  /**
   * Rolls back the company's rotation left AWSPENDING with nothing running it (an interrupted or
   * failed local `keys rotate`): its keys revoked, AWSPENDING removed. `keys cancel-rotation`; the
   * local mode only, where the state lock proves no process runs it (AWS mode refuses, exit 3).
   */
  cancelRotation(companyId: string): Promise<CancelRotationReport>;
  /**
   * Revokes now the company's old keys whose revocation is pending (their grace period not over),
   * or only the one of `prefix`; never the current key. Nothing is rotated. `keys revoke-pending`.
   */
  revokePending(companyId: string, options: { prefix?: string }): Promise<RevokePendingReport>;
  /** Every company key secret, or only the one of `company`. */
  keyStatus(options?: { company?: string }): Promise<KeyStatusReport>;
  /**
   * Checks the key at the service, then stores it as the company's key: creates the company's
   * secret if it has none and turns its rotation on (`keys install`).
   */
  installCompanyKey(companyId: string, apiKey: string): Promise<KeysInstallReport>;
  /** Stores the institution credential (undefined: rolls back to AWSPREVIOUS), then checks it. */
  setInstitutionSecret(value: string | undefined): Promise<InstitutionSecretReport>;

  /** The registry entry; with `rotationDays`, also the schedule of a rotating key secret (never a rotation now). */
  addCompany(input: CompanyInput): Promise<CompanyAddition>;
  listCompanies(options: { active: boolean }): Promise<CompanyList>;
  /** The registry marks it removed; its key secret stops rotating and is scheduled for deletion. UnknownNameError when not registered. */
  removeCompany(companyId: string, options: { recoveryDays: number; revokeKeys?: boolean }): Promise<CompanyRemoval>;
  /** Undoes removeCompany within the recovery window. UnknownNameError when not registered. */
  restoreCompany(companyId: string): Promise<CompanyRestore>;

  /** A month's export: run here (local), or requested from the deployed pipeline (AWS). */
  exportMonth(request: ExportRequest): Promise<ExportReport>;
  doctor(options: { repair: boolean }): Promise<DoctorReport>;

  /** The local mode's state and clock; AWS mode refuses them (a configuration error). */
  localStatus(): Promise<LocalStatus>;
  /** Changes the local state's settings; what is not given stays. */
  setLocal(settings: { accessTokenLifetimeSeconds?: number }): Promise<LocalStatus>;
  advanceClock(ms: number): Promise<ClockAdvanced>;
  resetClock(): Promise<ClockReset>;
  /**
   * Creates in the embedded sandbox an API key of `companyId` with the permissions `keys install`
   * and the exports need, and writes it to `out` (a new file, mode 0600): the local stand-in for
   * the runbook's "get a key from the company". AWS mode refuses it (a usage error): there the key
   * comes from the company.
   */
  issueLocalKey(companyId: string, out: string): Promise<LocalKeyIssued>;
}

export type Mode = 'local' | 'aws';

/**
 * What an implementation needs of the invocation; the Session is one. (Declared here rather than
 * importing Session, so that no module of cli/operations refers back to the one that loads it.)
 */
export interface OperationsContext {
  readonly out: Output;
  readonly env: NodeJS.ProcessEnv;
  /** The local mode's state directory, absolute. */
  readonly stateDir: string;
  /** The stack AWS mode acts on. */
  readonly stack: string | undefined;
  readonly flags: { readonly region?: string; readonly output?: readonly string[] };
  readonly runtime: { readonly cwd: string; readonly clock?: Clock; readonly requestTimeoutMs?: number };
}

// Users and tokens

export interface UserRow {
  externalId: string;
  username: string;
  email: string;
  status: TokenStatus;
  accessTokenExpiresAt: string;
  refreshedAt: string;
  due: boolean;
  consecutiveFailures: number;
  /** The failure that made the user `needs_attention`; both null once a pair is stored again. */
  lastErrorClass: string | null;
  /** Its code: the service's (`user_disabled`) where it gave one, else ours; null when none. */
  lastErrorCode: string | null;
}

export interface UserList {
  rows: UserRow[];
  /** The mode's clock when the list was read: "expires in" is relative to it. */
  now: number;
}

/** A user's outcome as --json prints it: `errorClass` and `errorCode` (the ERROR column) always there, null when none. */
export interface RefreshOutcomeRow extends Omit<RefreshOutcome, 'errorClass' | 'errorCode' | 'credentialRefused'> {
  errorClass: string | null;
  errorCode: string | null;
  /** For `failed`: the service refused the institution credential, not the user (the command exits 4). */
  credentialRefused: boolean;
  /** For `busy`: when the lease another run holds on the user runs out; null otherwise. */
  leaseUntil: string | null;
}

export interface RefreshReport {
  /** `local`: refreshed here, now; `enqueued`: handed to the deployed workers. */
  mode: 'local' | 'enqueued';
  /** Users found due (local), or enqueued by the deployed planner. */
  planned: number;
  outcomes: RefreshOutcomeRow[];
  counts: Partial<Record<RefreshResult, number>>;
}

// Interrupts

/**
 * A rotation this command's emulator ran, as an interrupt left it (`LocalWorld.stopRotations`):
 * `completed` (promoted before the signal), `rolled_back` (its keys revoked, AWSPENDING removed, by
 * the interrupt or by a step that failed before it), or `pending` (still AWSPENDING: a step did not
 * end in time, or the rollback failed; `acctops keys cancel-rotation` rolls it back).
 */
export interface StoppedRotation {
  secretId: string;
  versionId: string;
  state: 'completed' | 'rolled_back' | 'pending';
  /** Prefixes of the keys the interrupt revoked (the rotation's own; never AWSCURRENT's). */
  revokedKeyPrefixes: string[];
}

/** What a local command's interrupt undid before it saved the state (LocalWorld.cleanUpInterrupted). */
export interface InterruptedWork {
  rotations: StoppedRotation[];
  /** Users whose lease this command held and released. */
  releasedLeases: string[];
  /**
   * A local `tokens refresh` stopped by the interrupt: what it had done (`planned`: the users it was
   * to refresh; `outcomes`: those it started and that ended; the rest are still due). Null for
   * other commands, and before the refresh had found its users.
   */
  refresh: RefreshReport | null;
}

/**
 * Called once a local command's interrupt has undone its work, before the state is saved: the
 * command prints its one line (cli/interrupt.ts `speak`). AWS mode never calls it.
 */
export type OnInterrupted = (signal: NodeJS.Signals, undone: InterruptedWork) => void | Promise<void>;

// Keys and credentials

export interface RevokedKey {
  keyPrefix: string;
  outcome: string;
  /** Why a revocation failed and stays queued: the service's status and words, redacted; null when it did not fail. */
  error: string | null;
  /** The failure's code (`revocation_secret_deleted`: the company was removed, see the error); null when it did not fail. */
  code: string | null;
}

/** Every key is always there (null when it does not apply): --json promises a fixed key set. */
export interface RotateReport extends RotateNowResult {
  previousKeyPrefix: string;
  keyPrefix: string;
  /** When the previous key stops working (its revocation is scheduled for then); null when it is not scheduled (revoked now, or AWS mode, where the schedule is the stack's). */
  previousKeyRevokeAt: string | null;
  /** Old keys whose grace period had ended, revoked before this rotation (local mode; null in AWS mode). */
  revokedBefore: RevokedKey[] | null;
  /**
   * With --revoke-previous-now: what became of the previous key; null without it, or when there was
   * none to revoke. `failed`: the rotation completed, but the previous key could not be revoked and
   * is still valid (`previousKeyRevokeError` says why and names `keys revoke-pending`).
   */
  previousKeyRevoked: RevocationOutcome | 'failed' | null;
  /** Why the previous key could not be revoked now; null unless `previousKeyRevoked` is `failed`. */
  previousKeyRevokeError: ReportedError | null;
  /**
   * AWS mode: the previous key was revoked now, but its one-time revocation schedule could not be
   * deleted (`schedule_delete_failed`, exit 5; decision 107); null otherwise, and always locally.
   */
  previousKeyScheduleError: ReportedError | null;
  /**
   * With --revoke-previous-now, once the rotation completed: the company's other old keys that were
   * still pending revocation (from earlier rotations: a leaked key one plain `keys rotate` had
   * already replaced), each revoked now; `[]` when there were none; null without the option, when
   * the rotation did not complete, or when they could not be listed (`olderKeysRevokeError`).
   */
  olderKeysRevoked: RevokedNowRow[] | null;
  /** Why the other pending old keys could not be listed or read; null when they were (or not asked). */
  olderKeysRevokeError: ReportedError | null;
}

/** An old key revoked now (`keys revoke-pending`, `keys rotate --revoke-previous-now`), by prefix and id. */
export interface RevokedNowRow {
  keyPrefix: string;
  apiKeyId: string;
  /** `already_revoked`: the service lists it as revoked, nothing was asked of it; `failed`: still valid (`error`). */
  outcome: RevokeNowOutcome | 'failed';
  error: ReportedError | null;
  /**
   * AWS mode: the key is revoked (`outcome`), but its one-time revocation schedule could not be
   * deleted (`schedule_delete_failed`, exit 5; decision 107); null otherwise, and always locally.
   */
  scheduleError: ReportedError | null;
}

/** An error a command went on past, in its report: as README's "Exit codes" prints it. */
export interface ReportedError {
  code: string;
  message: string;
  exitCode: number;
  hint: string | null;
}

/** `keys cancel-rotation`: the pending rotation rolled back, or none found. */
export interface CancelRotationReport {
  companyId: string;
  secret: string;
  /** `nothing_pending`: no version of the secret was AWSPENDING (the rotation was over, or never started). */
  result: 'rolled_back' | 'nothing_pending';
  /** The version that was AWSPENDING; null when none was. */
  versionId: string | null;
  /** The keys the rotation had created, revoked now, by prefix. */
  revokedKeyPrefixes: string[];
}

/** `keys revoke-pending`: each old key whose pending revocation was carried out now. */
export interface RevokePendingReport {
  companyId: string;
  secret: string;
  keys: RevokedNowRow[];
}

/**
 * A row of `keys status`: a company key secret's status, or an active registered company that has
 * no key secret (`secret` null, every key field null, `error` saying so with `keys install`).
 */
export interface KeyStatusRow extends Omit<KeyStatus, 'secret'> {
  /** The secret's name; null when the company has none. */
  secret: string | null;
}

export interface KeyStatusReport {
  now: string;
  companies: KeyStatusRow[];
  /** Old keys whose grace period had ended, revoked before the check (local mode; null in AWS mode, where the stack's schedule revokes them). */
  revokedBefore: RevokedKey[] | null;
}

export interface SecretChange {
  secret: string;
  versionId: string;
  /** The version that was AWSCURRENT before; null when the secret had none. */
  previousVersionId: string | null;
}

/**
 * A health probe's result with its fixed key set for --json: the probes come from the use case
 * (local) or the check-health function's answer (AWS), where an absent field is a missing key.
 */
export interface ProbeRow {
  name: string;
  ok: boolean;
  durationMs: number;
  /** Safe detail of a healthy probe; null when none. */
  detail: string | null;
  /** Why it failed (error class, stable code or null, redacted message); null when it passed. */
  error: { name: string; code: string | null; message: string } | null;
}

export interface InstitutionSecretReport extends SecretChange {
  /** The institution of the value stored; null after --rollback (the value is not read). */
  institutionId: string | null;
  /** The health probes run against the stored value after the change. */
  probes: ProbeRow[];
  verified: boolean;
  /** True for --rollback: AWSPREVIOUS made current again. */
  rolledBack: boolean;
  /**
   * True for a --rollback that found the rollback done (AWSPREVIOUS is the version the last one
   * rolled away from): nothing changed, `versionId` is the version that rollback restored and
   * `previousVersionId` the one it rolled away from.
   */
  alreadyRolledBack: boolean;
}

export interface KeyInstallReport extends SecretChange {
  companyId: string;
  keyPrefix: string;
  apiKeyId: string;
  permissions: string[];
}

export interface KeysInstallReport extends Omit<InstallOutcome, 'rotation' | 'encryption' | 'replacedKey'> {
  /**
   * The key the install replaced (now AWSPREVIOUS), by prefix and id; null when none. `live`: the
   * service lists it not revoked (null: the list could not be read). No revocation is scheduled for
   * it: `keys revoke-pending --prefix` revokes it now, else the doctor once it is overdue.
   */
  replacedKey: { apiKeyId: string; keyPrefix: string; live: boolean | null } | null;
  /** `stack_managed`: an imported secret (cdk.json existingSecretArn), whose rotation the stack's RotationSchedule owns. */
  rotation: InstallOutcome['rotation'] | 'stack_managed';
  encryption: InstallOutcome['encryption'] & {
    /**
     * An imported secret under a key other than the AWS managed one: the stack grants that key only
     * if the stage names it (`companies[].existingSecretKmsKeyArn`), else rotation fails with KMS
     * AccessDenied. The CLI does not read the stage, so this says "check", not "missing".
     */
    stageMustNameKey: boolean;
  };
  keyPrefix: string;
  apiKeyId: string;
  permissions: string[];
}

// Companies

export interface CompanyInput {
  companyId: string;
  formats?: ExportFormat[];
  rotationDays?: number;
  /** ISO 4217 code (`--default-currency`). */
  defaultCurrency?: string;
}

export interface CompanyRow {
  companyId: string;
  status: 'active' | 'removed';
  formats: ExportFormat[];
  /** null: the stage's `apiKeys.rotationDays`. */
  rotationDays: number | null;
  /** The currency of transactions the service sends without one; null: EUR, the default (docs/exports.md). */
  defaultCurrency: string | null;
  addedAt: string | null;
  removedAt: string | null;
  seededFrom: string | null;
}

export interface CompanyChange<R extends string = AddResult | RemoveResult> {
  /** What the registry did. */
  result: R;
  company: CompanyRow;
}

/**
 * `companies add`: with `--rotation-days`, what became of the key secret's rotation schedule; null
 * without it (the secret is not looked at).
 */
export interface CompanyAddition extends CompanyChange<AddResult> {
  keyRotation: KeyRotationChange | null;
}

/** `updated`: set to the registry's days; `not_rotating`: a key secret whose rotation is off (left so); `no_secret`: none, or one scheduled for deletion. */
export type KeyRotationChange = { result: 'updated' | 'unchanged' | 'not_rotating' | 'no_secret'; rotationDays: number };

export interface CompanyRemoval extends CompanyChange<RemoveResult> {
  /** What became of the company's key secret. */
  key: RetireOutcome;
  /**
   * The company's keys valid at the service when it was removed (decision 105): the current key and
   * the old keys pending revocation (null / empty when it has no key secret); `revoked`: what
   * `--revoke-keys` revoked (null without it); `unread`: why they could not be read (null if they were).
   */
  keys: {
    current: { keyPrefix: string; apiKeyId: string } | null;
    /**
     * `schedule`: the revocation's one-time schedule (AWS mode; null locally), which a plain remove
     * leaves to fire and fail into the dead-letter queue (decision 113); `revokedAt`: when the
     * service lists the key revoked already (a command revoked it but could not delete its
     * schedule), null when valid or the list could not be read.
     */
    pending: {
      keyPrefix: string;
      apiKeyId: string;
      revokeAt: string;
      schedule: { name: string; group: string } | null;
      revokedAt: string | null;
    }[];
    revoked: RevokedNowRow[] | null;
    unread: string | null;
  };
}

export interface CompanyRestore extends CompanyChange<AddResult> {
  /** `kept_imported`: a secret the stack imports, which `remove` kept and whose rotation it stopped. */
  key: 'restored' | 'not_deleted' | 'no_secret' | 'kept_imported';
  /** The key secret's name; null when the company has none. */
  secret: string | null;
  rotationDays: number;
}

export interface CompanyList {
  /** Which repair a skipped entry's line names (decision 86); not part of the command's `--json`. */
  mode: Mode;
  companies: CompanyRow[];
  /** Entries that fail their schema: the planner skips them. */
  skipped: RegistryFinding[];
}

/** What `acctops doctor` reports of the registry: how many entries, and the unreadable ones. */
export interface RegistryHealth {
  companies: number;
  active: number;
  /** Entries that fail their schema (not `skipped`: that name marks a check that did not run). */
  unreadable: RegistryFinding[];
}

// Exports

export type CompanyProgress = (companyId: string, progress: ExportProgress) => void;

export interface ExportRequest {
  /** Default: the previous month in Europe/Berlin on the mode's clock. */
  month?: string;
  /** Default: every company the mode holds a key for. */
  company?: string;
  /** Local mode only: where to write instead of the state directory. */
  out?: ExportTarget;
  formats?: ExportFormat[];
  replaceFormats?: boolean;
  /** Local mode (and direct) only, and only to a directory: `excel-de` (decision 95). AWS mode refuses it. */
  csvDialect?: CsvDialect;
  /** Local mode only: the service's names of our tax-report fields (AWS mode: the stage's exports.taxReportFields). */
  taxReportFields?: TaxReportFieldNames;
  /** Local mode only: the currency of transactions the service sends without one, over each company's registered one. */
  defaultCurrency?: string;
  /** AWS mode: wait for the manifests of the requested exports. */
  wait: boolean;
  onProgress?: CompanyProgress;
}

/**
 * One company's line of the export report. Every key is always there (null when it does not
 * apply): --json promises a fixed key set, and `| null` rather than `?` lets the compiler hold
 * every place that builds a row to it.
 */
export interface CompanyExportRow {
  /** Null only in direct mode, when the export failed before the key's company was learned. */
  companyId: string | null;
  /** `requested`: handed to the deployed pipeline (AWS mode), its manifest not seen yet. */
  status: 'completed' | 'failed' | 'requested';
  /** Where the period's manifest is (`file://…` or `s3://…`). */
  manifestUrl: string | null;
  runId: string | null;
  records: Partial<Record<string, number>> | null;
  /** Transactions per currency and cashflow type, exact decimals. */
  totals: AmountTotal[] | null;
  /** Tax reports kept in every month because no date of theirs could be read (docs/exports.md); 0 when none, null when not exported. */
  undatedTaxReports: number | null;
  /** Tax reports with an amount but no currency acctops could read: no currency, no decimal amount, not in the totals (docs/exports.md); 0 when none, null when not exported. */
  taxReportsWithoutCurrency: number | null;
  /** Transactions the service sent without a currency, labelled with the row's `defaultCurrency` (docs/exports.md); 0 when none, null when not exported. */
  transactionsWithDefaultCurrency: number | null;
  /**
   * Per dataset of the manifest, the records the service sent again on a later page (the list moved
   * while it was read), written once (docs/exports.md, "Records repeated across pages"); 0 when
   * none, null when there is no manifest of the run.
   */
  duplicatesDropped: Partial<Record<string, number>> | null;
  /**
   * Transactions the service returned for the month dated outside it, kept (docs/exports.md,
   * "Transactions dated outside the month"); 0 when none, null when there is no manifest of the run.
   */
  transactionsOutsidePeriod: number | null;
  /**
   * How the service's `date_to` was read for the transactions, as the manifest records it
   * (`datasets.transactions.dateTo`; docs/exports.md, "The last day of a range"): the setting, the
   * reading, the records the last day's own read returned and, of them, the repeats dropped. Null
   * when there is no manifest of the run or it does not say (written before it was recorded).
   */
  transactionsDateTo: TransactionsDateTo | null;
  /**
   * The currency they were labelled with: `--default-currency`, else the company's registered one
   * (local mode), else EUR; null when the CLI did not run the export itself (AWS mode) or it failed.
   */
  defaultCurrency: string | null;
  /**
   * Datasets whose Athena symlink could not be rewritten after the publish: the period is published,
   * but Athena shows their previous export until the month is exported again ([] when none); null when
   * the CLI did not run the export itself (AWS mode: the worker logs it, `doctor` finds it) or it failed.
   */
  staleSymlinks: string[] | null;
  /**
   * Datasets whose Athena symlink this export left listing no Parquet (a re-export with
   * --replace-formats dropped it): Athena shows no rows of them for the month until it is exported
   * with Parquet again ([] when none); null when there is no manifest of the run.
   */
  athenaEmpty: string[] | null;
  error: CompanyExportError | null;
}

export interface TransactionsDateTo {
  /** `detect`: a probe decided; otherwise the setting (`--date-to`, `exports.dateTo`) did. */
  setting: 'detect' | 'inclusive' | 'exclusive';
  read: 'inclusive' | 'exclusive' | 'undetermined';
  lastDayRecords: number;
  lastDayRepeats: number;
  /** Records of the day after the month (the next month's) that an inclusive `date_to` read as exclusive returned, dropped; 0 when none. */
  nextDayDropped: number;
}

export interface CompanyExportError {
  code: string;
  message: string;
  exitCode: number;
  hint: string | null;
}

export interface ExportReport {
  month: string;
  /** `local` (the embedded world), `direct` (ACCTOPS_BASE_URL + ACCTOPS_API_KEY), `aws` (ExportRequested to the stack). */
  mode: 'local' | 'direct' | 'aws';
  out: string;
  formats: ExportFormat[];
  /** The dialect of the CSV files written (`standard` in AWS mode); null when `formats` has no csv. */
  csvDialect: CsvDialect | null;
  /**
   * The currency of transactions sent without one when one applies to every company: --default-currency,
   * or EUR in direct mode (no registry). Null in the local mode without the flag and in AWS mode, where
   * each company's registered one applies (each row's `defaultCurrency`).
   */
  defaultCurrency: string | null;
  companies: CompanyExportRow[];
  /** Registry entries that fail their schema: not exported, and the run is partly done (exit 5). */
  skipped: RegistryFinding[];
  /**
   * The month had not ended (Europe/Berlin) when the export ran: its files hold the month so far,
   * and neither `acctops doctor` nor the overdue alarm counts it as the month's export.
   */
  monthOpen: boolean;
}

// Doctor

export interface Skipped {
  skipped: string;
}

export const isSkipped = (value: object): value is Skipped => 'skipped' in value;

export interface TokenHealth {
  total: number;
  active: number;
  /** Active users due for a refresh now (the schedule takes them on its next run). */
  due: number;
  /** Active users whose access token has expired: the schedule is behind. */
  expired: string[];
  needsAttention: string[];
  revoked: number;
}

export interface ExportHealth {
  /** The month every company should have by now. */
  expectedPeriod: string;
  /**
   * lastPeriod, generatedAt and manifestUrl are null for a company without any export;
   * manifestError says why the last period's manifest could not be read (null when it could).
   * staleSymlinks: of the last period and the expected one, each whose Athena symlinks differ from
   * what its manifest records, with those datasets (Athena shows an earlier export of them).
   * publishing: the same, where the manifest was committed so recently that a publish may still be
   * writing them (AWS mode: SYMLINK_PUBLISH_WINDOW_MS); not a finding. [] in the local mode.
   * athenaEmpty: of the same periods, each whose manifest records a symlink listing no Parquet (a
   * re-export with --replace-formats dropped it), with those datasets: Athena shows no rows of them.
   */
  companies: {
    companyId: string;
    lastPeriod: string | null;
    generatedAt: string | null;
    manifestUrl: string | null;
    overdue: boolean;
    manifestError: string | null;
    staleSymlinks: SymlinksBehind[];
    publishing: SymlinksPublishing[];
    athenaEmpty: SymlinksBehind[];
    /**
     * An active registered company without a key secret (the rotation check's `key_missing`): listed
     * so the table counts every company the monthly export should cover; it cannot be exported.
     */
    keyMissing: boolean;
  }[];
}

/** A period whose Athena symlinks of `datasets` differ from its manifest's. */
export interface SymlinksBehind {
  period: string;
  datasets: string[];
}

/** Symlinks behind a manifest committed at `committedAt` (the manifest object's last modification), moments ago. */
export interface SymlinksPublishing extends SymlinksBehind {
  committedAt: string;
}

/** A rotation doctor's finding with its fixed key set for --json (null: the finding names no key or version). */
export interface FindingRow extends Omit<Finding, 'apiKeyId' | 'keyPrefix' | 'versionId'> {
  apiKeyId: string | null;
  keyPrefix: string | null;
  versionId: string | null;
}

/**
 * Every key is always there: a section the mode does not have is null (README, "Global options"),
 * one that could not run is `{ skipped }`.
 */
export interface DoctorReport {
  mode: Mode;
  checkedAt: string;
  /** Secrets readable and service reachable (the check-health probes). */
  health: { probes: ProbeRow[] } | Skipped;
  /** Each company key secret's current version reads and parses (local mode; null in AWS mode, where the rotation check covers it). */
  companySecrets: { companyId: string; secret: string; ok: boolean; error: string | null }[] | null;
  tokens: TokenHealth | Skipped;
  rotations: { companies: number; findings: FindingRow[] } | Skipped;
  exports: ExportHealth | Skipped;
  /** The company registry: entries, and the ones the planner skips because they fail their schema. */
  registry: RegistryHealth | Skipped;
  /**
   * Local mode: old keys whose grace period had ended, revoked as the schedule would. AWS mode, where
   * the schedules run them: the pending revocations that will fail when their schedule fires, their
   * company's key secret being scheduled for deletion (`revocation_secret_deleted`; decision 107);
   * `{ skipped }` when the schedule group could not be read.
   */
  revokedKeys: RevokedKey[] | Skipped | null;
  /** Local state files that do not parse, each with what to do (local mode, [] when none; null in AWS mode). */
  damagedStateFiles: { file: string; problem: string; remedy: string }[] | null;
  /** One line per thing to look at; empty means healthy. */
  findings: string[];
}

// The local mode's state

export interface LocalStatus {
  stateDir: string;
  createdAt: string;
  now: string;
  clockOffsetMs: number;
  baseUrl: string;
  /** The embedded service's dialect, fixed when the state was created (`npm start -- --dialect`, ACCTOPS_DIALECT). */
  dialect: string;
  companies: number;
  users: number;
  /** Queued revocations of old keys, to be carried out when due. */
  pendingRevocations: number;
  /** Queued revocations of a key that is current (KeyStatus.currentKeyRevocations): they revoke nothing. */
  currentKeyRevocations: number;
  exportsDir: string;
  revocationGraceMinutes: number;
  rotationDays: number;
  /** Lifetime given to an access token the service states nothing about. */
  accessTokenLifetimeSeconds: number;
}

export interface ClockAdvanced {
  now: string;
  revoked: RevokedKey[];
}

/** `local issue-key`: the key itself is only in the file, never in the report. */
export interface LocalKeyIssued {
  companyId: string;
  keyPrefix: string;
  /** The file the key was written to, absolute. */
  out: string;
}

export interface ClockReset {
  now: string;
  undoneMs: number;
}
