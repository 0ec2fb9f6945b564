import { randomUUID } from 'node:crypto';
import { OperatorClients } from '../../src/adapters/aws/operator-clients';
import { apiKeyAuth, createAccountingClient, USER_REFUSAL_CODES } from '../../src/core/accounting-api';
import {
  blockedRevocations,
  companyKeySecretName,
  CompanyKeyNotFoundError,
  describeByNameOrTag,
  keyStatus,
  parseCompanyKeySecret,
  registeredKeyDirectory,
  rotateNow,
  rotationState,
  taggedKeyDirectory,
  type CompanyKeyDirectory,
  type DoctorReport as RotationReport,
  type RevokeDeps,
  type RevokeNowDeps,
  type SecretLifecycle,
} from '../../src/core/api-keys';
import { activeCompanyPages, type CompanyRegistry, type RegistryFinding } from '../../src/core/companies/company-registry';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import { previousMonth } from '../../src/core/exports/formats/period';
import { assertExportDeadline, DEFAULT_EXPORT_DEADLINE, type ExportDeadline } from '../../src/core/exports/pipeline/export-deadline';
import { FORMATS } from '../../src/core/exports/formats/datasets';
import type { HealthReport } from '../../src/core/health/check-health';
import { SecretStage } from '../../src/core/ports/secrets';
import { AcctopsError, ValidationError } from '../../src/core/shared/errors';
import { systemClock } from '../../src/core/shared/clock';
import { noMetrics } from '../../src/core/shared/metrics';
import { encodeRefreshRequest } from '../../src/core/tokens/refresh-queue';
import type { TokenRecord } from '../../src/core/tokens/token-store';
import type { PlanReport } from '../../src/core/tokens/plan-refresh';
import { awsRegion, baseUrlFromEnv, configuredUrl } from '../args';
import {
  CliConfigError,
  CliError,
  CompanyEntryDamagedError,
  CompanyRemovedError,
  onboardInputRefused,
  refreshOfRevokedUser,
  refreshOfUserNeedingAttention,
  UnknownNameError,
  unknownUser,
  UsageError,
  userDisabled,
  userGoneAtService,
} from '../errors';
import { ExitCode } from '../exit-codes';
import { iso } from '../format';
import type {
  CompanyExportRow,
  CompanyInput,
  DoctorReport,
  ExportReport,
  ExportRequest,
  InstitutionSecretReport,
  KeysInstallReport,
  KeyStatusReport,
  OnboardInput,
  OnboardResult,
  Operations,
  OperationsContext,
  RecoverResult,
  RefreshOutcome,
  RefreshReport,
  RefreshResult,
  RevokeResult,
  RevokePendingReport,
  RotateReport,
  Skipped,
  UserList,
} from './operations';
import { isSkipped } from './operations';
import { applyRotationDays, installKey, removeCompany, restoreCompany, type CompanyKeyContext } from './company-keys';
import { setInstitutionSecret } from './secret-changes';
import {
  blockedRevocationRows,
  companyKeyOf,
  companyRegistry,
  companyRow,
  findingRow,
  findingsOf,
  listCompanies,
  listUsers,
  localModeOnly,
  oneCompanyDirectory,
  outcomeRow,
  probeRow,
  monthOpen,
  refuseFutureMonth,
  EARLIEST_TIME_ZONE,
  registryHealth,
  removedCompanies,
  revokeOlderKeysAfterRotation,
  revokePendingNow,
  scheduleDeleteError,
  revokePreviousAfterRotation,
  tokenHealth,
  withKeyMissingRows,
  NO_EXPORT_RESULT,
} from './shared';

/**
 * The stack outputs the AWS mode reads, by key (docs/infrastructure.md, "Outputs"). Each can be named
 * with `--output <Key>=<value>` instead, e.g. when a construct does not export it (yet).
 */
export const OUTPUTS = {
  onboardUser: 'OnboardUserFunctionName',
  revokeUser: 'RevokeUserFunctionName',
  recoverUser: 'RecoverUserFunctionName',
  planRefresh: 'PlanTokenRefreshFunctionName',
  refreshTokens: 'RefreshTokensFunctionName',
  tokenTable: 'TokenTableName',
  checkHealth: 'CheckHealthFunctionName',
  checkKeyRotations: 'CheckKeyRotationsFunctionName',
  institutionSecret: 'InstitutionSecretArn',
  exportBucket: 'ExportBucketName',
  exportBus: 'ExportEventBusName',
  revocationGroup: 'KeyRevocationScheduleGroup',
  serviceBaseUrl: 'ServiceBaseUrl',
  /** lib/constructs/company-registry.ts */
  companyRegistry: 'CompanyRegistryTableName',
  rotateApiKeyFunction: 'RotateApiKeyFunctionArn',
  secretsKey: 'SecretsKeyArn',
  companyKeyRotationDays: 'CompanyKeyRotationDays',
  exportTimeZone: 'ExportTimeZone',
  exportDueAfterHours: 'ExportDueAfterHours',
} as const;

/** How long `export` waits for the deployed pipeline, and how often it looks. */
const EXPORT_WAIT_MS = 15 * 60_000;

/**
 * A requested export whose manifest did not appear while the command waited: still `requested`
 * (the pipeline may yet publish it, and a split month takes longer), with an error saying so, so
 * that it gets the `!` line on stdout and the error line on stderr every other mode gives a failed
 * company. It used to show only as `requested` in the table, with exit 5 and no word on stderr.
 */
export function notSeenInTime(row: CompanyExportRow, month: string, stack: string): CompanyExportRow {
  return {
    ...row,
    error: {
      code: 'export_not_seen',
      message: `no manifest of ${month} appeared within ${EXPORT_WAIT_MS / 60_000} min of the request: the pipeline may still be exporting it (a large month is split and takes longer), or its export failed`,
      exitCode: ExitCode.partial,
      hint: `\`acctops --stack ${stack} doctor\` shows the company's last complete export; a failure is an ExportFailed event and an "export failed" line in /acctops/<stage>/export-period (docs/runbooks.md, "The monthly export failed for one company")`,
    },
  };
}
const EXPORT_POLL_MS = 5000;

/** How long `keys rotate` waits for Secrets Manager to finish the four steps. */
const ROTATION_WAIT_MS = 120_000;

/**
 * AWS mode: the named stack's deployed functions, tables, secrets and buses, found by its outputs.
 * Loaded by the Session only when a stack is named, with `import()`: the SDK clients are not for
 * local commands.
 */
export class AwsOperations implements Operations {
  private outputs?: Promise<Record<string, string>>;
  private preflight?: Promise<unknown>;

  constructor(
    private readonly context: OperationsContext,
    private readonly stack: string,
    private readonly clients: OperatorClients,
    private readonly overrides: Record<string, string>,
  ) {}

  /** Key lookups see only the secrets of the stack's stage (`acctops-<stage>`, the `acctops:stage` tag). */
  private get directoryOptions(): { stage?: string } {
    return /^acctops-(.+)$/.test(this.stack) ? { stage: this.stack.slice('acctops-'.length) } : {};
  }

  /**
   * The region and the credentials, resolved once before the first AWS call (OperatorClients.preflight):
   * a missing one is said once, not once per call, and only after the command's own checks of its
   * flags (a usage error stays exit 2 without credentials).
   */
  private async ready(): Promise<void> {
    await (this.preflight ??= this.clients.preflight());
  }

  /** An output's value: from --output, else from DescribeStacks (read once); undefined if the stack has none. */
  private async optionalOutput(key: string): Promise<string | undefined> {
    await this.ready();
    if (this.overrides[key] !== undefined) return this.overrides[key];
    this.outputs ??= this.clients.stackOutputs(this.stack);
    return (await this.outputs)[key];
  }

  private async output(key: string, purpose: string): Promise<string> {
    const value = await this.optionalOutput(key);
    if (value === undefined) {
      throw new CliConfigError(
        `stack ${this.stack} has no output ${key} (needed to ${purpose})`,
        `pass --output ${key}=<value>, or deploy a stack version that exports it`,
      );
    }
    return value;
  }

  private async invoke<T>(key: string, purpose: string, payload: unknown): Promise<T> {
    return this.clients.functions().invoke<T>(await this.output(key, purpose), payload);
  }

  async onboardUser(input: OnboardInput): Promise<OnboardResult> {
    try {
      return await this.invoke<OnboardResult>(OUTPUTS.onboardUser, 'onboard a user', input);
    } catch (error) {
      throw refusedOnboardRemote(error);
    }
  }

  revokeUser(externalId: string): Promise<RevokeResult> {
    return forKnownUserRemote(externalId, this.invoke(OUTPUTS.revokeUser, 'revoke a user', { externalId }));
  }

  async recoverUser(externalId: string, options: { reactivate: boolean; force: boolean }): Promise<RecoverResult> {
    type Answer = Omit<RecoverResult, 'changed'> & { changed?: boolean };
    const recover = (force: boolean) =>
      forKnownUserRemote(
        externalId,
        this.invoke<Answer>(OUTPUTS.recoverUser, 'recover a user', {
          externalId,
          ...(options.reactivate ? { reactivate: true } : {}),
          ...(force ? { force: true } : {}),
        }),
      );
    try {
      let result: Answer;
      try {
        result = await recover(options.force);
      } catch (error) {
        if (!options.force || !refusesForceField(error)) throw error;
        // A function deployed before `force` refuses the field (its event schema is strict) before it
        // does anything; one deployed before `already_active` too retrieves for an active user anyway.
        result = await recover(false);
        if (result.result === 'already_active') throw forceNotDeployed(externalId);
      }
      // A function deployed before `changed` existed retrieved a new pair whatever the status: `recovered` always changed the user.
      return { ...result, changed: result.changed ?? result.result === 'recovered' };
    } catch (error) {
      throw refusedUserRemote(externalId, error);
    }
  }

  async listUsers(): Promise<UserList> {
    const store = this.clients.tokenStore(await this.output(OUTPUTS.tokenTable, 'list the users'));
    return listUsers(store, systemClock.now());
  }

  /** The planner, invoked as its schedule invokes it: it enqueues the due users for the workers. */
  async refreshDue(): Promise<RefreshReport> {
    const now = new Date(systemClock.now()).toISOString();
    const plan = await this.invoke<PlanReport>(OUTPUTS.planRefresh, 'plan a refresh', {
      source: 'acctops.scheduler',
      schedule: 'token-refresh',
      scheduledAt: now,
      executionId: `acctops-cli-${randomUUID()}`,
    });
    return { mode: 'enqueued', planned: plan.enqueued, outcomes: [], counts: {} };
  }

  /**
   * The refresh worker, invoked with one queue message for the user, as SQS would deliver it. The
   * worker reports only a failed user (a batch item failure, whose reason only its logs hold); what
   * it did otherwise (refreshed, or skipped as not due or leased) shows in the user's record, read
   * before and after. A user the table does not hold is exit 3 (unknownUser), without invoking anything.
   */
  async refreshUser(externalId: string): Promise<RefreshReport> {
    const functionName = await this.output(OUTPUTS.refreshTokens, 'refresh a user');
    const store = this.clients.tokenStore(await this.output(OUTPUTS.tokenTable, 'see what the refresh did'));
    const before = await store.get(externalId);
    if (before === null) throw unknownUser(externalId);
    if (before.status === 'revoked') throw refreshOfRevokedUser(externalId);
    if (before.status === 'needs_attention') throw refreshOfUserNeedingAttention(externalId);
    let outcome: RefreshOutcome;
    const messageId = `acctops-cli-${randomUUID()}`;
    const functions = this.clients.functions();
    const response = await functions.invoke<{ batchItemFailures?: { itemIdentifier: string }[] }>(functionName, {
      Records: [{ messageId, body: encodeRefreshRequest({ externalId, dueAt: systemClock.now() }), eventSource: 'aws:sqs' }],
    });
    if ((response?.batchItemFailures ?? []).some((f) => f.itemIdentifier === messageId)) {
      const logGroup = await functions.logGroupOf(functionName);
      outcome = { externalId, result: 'failed', errorClass: `see the log group ${logGroup ?? `of ${functionName}`}` };
    } else {
      const after = await store.get(externalId);
      const result = refreshResultOf(before, after, systemClock.now());
      // The worker answers only failures: what made the user needs_attention is on its record.
      outcome =
        result === 'needs_attention' && after?.lastErrorClass
          ? { externalId, result, errorClass: after.lastErrorClass, ...(after.lastErrorCode ? { errorCode: after.lastErrorCode } : {}) }
          : { externalId, result };
    }
    return { mode: 'local', planned: 1, outcomes: [outcomeRow(outcome, before.leaseUntil)], counts: { [outcome.result]: 1 } };
  }

  async rotateKey(companyId: string, options: { wait: boolean; revokePreviousNow: boolean }): Promise<RotateReport> {
    await this.ready();
    // Known before anything changes: without it the previous key could not be revoked after the rotation.
    const revokeBaseUrl = options.revokePreviousNow ? await this.baseUrl() : undefined;
    const { store, directory, entry } = await this.companyKeySecret(companyId);
    // The schedule group too: the other old keys pending revocation are listed after the rotation.
    const revokeNow = revokeBaseUrl === undefined ? undefined : await this.revokeNowDeps(store, revokeBaseUrl);
    const before = parseCompanyKeySecret((await store.readSecret(entry.secretId, { stage: SecretStage.current })).value);
    const result = await rotateNow({ store, directory, logger: this.context.out.logger() }, companyId);
    let { state, rolledBack } = result;
    const deadline = systemClock.now() + ROTATION_WAIT_MS;
    const bar = this.context.out.progress('rotation');
    while (options.wait && state === 'in_progress' && systemClock.now() < deadline) {
      bar.update(0, undefined, 'Secrets Manager is running the rotation steps');
      await systemClock.sleep(2000);
      const stages = (await store.describeSecret(entry.secretId)).versionStages[result.versionId] ?? [];
      ({ state, rolledBack } = rotationState(stages, false));
    }
    bar.finish();
    const after = parseCompanyKeySecret((await store.readSecret(entry.secretId, { stage: SecretStage.current })).value);
    let revokedNow: Pick<RotateReport, 'previousKeyRevoked' | 'previousKeyRevokeError'> = {
      previousKeyRevoked: null,
      previousKeyRevokeError: null,
    };
    let older: Pick<RotateReport, 'olderKeysRevoked' | 'olderKeysRevokeError'> = { olderKeysRevoked: null, olderKeysRevokeError: null };
    let previousKeyScheduleError: RotateReport['previousKeyScheduleError'] = null;
    if (revokeNow !== undefined && state === 'completed') {
      // Each key revoked now has its schedule deleted (decision 107), as `revokeNow.cancel` does for the older ones.
      const command = `acctops --stack ${this.stack}`;
      const { apiKeyId, previousKeyRevoked, previousKeyRevokeError } = await revokePreviousAfterRotation(
        entry.secretId,
        revokeNow,
        before,
        command,
      );
      revokedNow = { previousKeyRevoked, previousKeyRevokeError };
      // A key kept as current was not revoked: its schedule, if any, stays (it ends kept_current too).
      if (apiKeyId !== null && previousKeyRevoked !== 'failed' && previousKeyRevoked !== 'kept_current') {
        try {
          await revokeNow.cancel(apiKeyId);
        } catch (error) {
          previousKeyScheduleError = scheduleDeleteError(
            { companyId: entry.companyId, command, keyPrefix: before.keyPrefix, apiKeyId, outcome: previousKeyRevoked },
            error,
          );
        }
      }
      older = await revokeOlderKeysAfterRotation(entry, revokeNow, before.apiKeyId, command);
    }
    return {
      ...result,
      state,
      rolledBack,
      previousKeyPrefix: before.keyPrefix,
      keyPrefix: after.keyPrefix,
      // The stack's revocation schedule holds the time; this command does not read it.
      previousKeyRevokeAt: null,
      revokedBefore: null,
      ...revokedNow,
      previousKeyScheduleError,
      ...older,
    };
  }

  /** The deps of `revokeApiKey` from the CLI: the company's current key, sent to the service at `baseUrl`. */
  private revokeDeps(store: RevokeDeps['store'], baseUrl: string): RevokeDeps {
    const logger = this.context.out.logger();
    return {
      store,
      clientFor: (key) => createAccountingClient({ baseUrl, credentials: apiKeyAuth(key.apiKey, { companyId: key.companyId }), logger }),
      clock: systemClock,
      logger,
      metrics: noMetrics,
    };
  }

  async revokePending(companyId: string, options: { prefix?: string }): Promise<RevokePendingReport> {
    await this.ready();
    const { store, entry } = await this.companyKeySecret(companyId);
    const baseUrl = await this.baseUrl();
    return revokePendingNow(entry, await this.revokeNowDeps(store, baseUrl), options.prefix);
  }

  /**
   * The deps of `revokePendingKeys`: the stack's schedule group lists the pending revocations, and
   * a key revoked now has its schedule deleted with the operator's credentials (DeleteSchedule, as
   * `companies remove --revoke-keys` does; decision 107): left, it would fail into the dead-letter
   * queue once the company is removed, and the doctor would name the revoked key as blocked.
   */
  private async revokeNowDeps(
    store: RevokeDeps['store'],
    baseUrl: string,
  ): Promise<RevokeNowDeps & Required<Pick<RevokeNowDeps, 'cancel'>>> {
    const scheduler = this.clients.revocationScheduler(await this.output(OUTPUTS.revocationGroup, 'list pending revocations'));
    return { ...this.revokeDeps(store, baseUrl), scheduler, cancel: (apiKeyId) => scheduler.cancel(apiKeyId) };
  }

  /** The company's key secret by its tag, or why it has none (unknown, removed, no key yet: exit 3). */
  private async companyKeySecret(companyId: string) {
    const store = this.clients.secrets();
    const directory = taggedKeyDirectory(store, this.directoryOptions);
    const entry = await companyKeyOf(
      (id) => directory.find(id),
      () => this.optionalRegistry(),
      companyId,
      systemClock.now(),
    );
    return { store, directory, entry };
  }

  async keyStatus(options: { company?: string } = {}): Promise<KeyStatusReport> {
    await this.ready();
    const store = this.clients.secrets();
    // The registry a page at a time, each company's secret by DescribeSecret of its name: no listing of every secret.
    const stage = this.directoryOptions.stage;
    // A stack from before the registry (no CompanyRegistryTableName output): the tag listing, as before.
    const registry = stage === undefined ? undefined : await this.optionalRegistry();
    const tagged = taggedKeyDirectory(store, this.directoryOptions);
    const describe =
      stage === undefined ? undefined : describeByNameOrTag({ store, directory: tagged, nameOf: (id) => companyKeySecretName(stage, id) });
    // --company: that company's secret, or why it has none (unknown, removed, no key yet), before the service is needed.
    const only =
      options.company === undefined
        ? undefined
        : await companyKeyOf(
            async (id) => {
              if (describe === undefined) return tagged.find(id);
              const found = await describe(id);
              if (found === undefined) throw new CompanyKeyNotFoundError(id, 0);
              return found.entry;
            },
            () => Promise.resolve(registry),
            options.company,
            systemClock.now(),
          );
    const baseUrl = await this.baseUrl();
    const scheduler = this.clients.revocationScheduler(await this.output(OUTPUTS.revocationGroup, 'list pending revocations'));
    const directory =
      only !== undefined
        ? oneCompanyDirectory(only)
        : describe === undefined || registry === undefined
          ? tagged
          : registeredKeyDirectory({
              pages: async function* () {
                for await (const page of registry.pages()) yield page.items;
              },
              describeCompanySecret: describe,
            });
    const companies = await keyStatus({
      store,
      directory,
      scheduler,
      clientFor: (key) =>
        createAccountingClient({
          baseUrl,
          credentials: apiKeyAuth(key.apiKey, { companyId: key.companyId }),
          logger: this.context.out.logger(),
        }),
    });
    // The stack's one-time schedules revoke old keys: this command runs none.
    return {
      now: iso(systemClock.now())!,
      companies: only === undefined ? await withKeyMissingRows(companies, registry) : companies,
      revokedBefore: null,
    };
  }

  async doctor(options: { repair: boolean }): Promise<DoctorReport> {
    // Before the sections, which report their own failures as skipped: no region or credentials is the command's.
    await this.ready();
    const now = systemClock.now();
    const skipped = (error: unknown): Skipped => ({ skipped: error instanceof Error ? error.message : String(error) });
    const health = await this.invoke<HealthReport>(OUTPUTS.checkHealth, 'check secrets and the service', {}).then(
      (r) => ({ probes: r.probes.map(probeRow) }),
      skipped,
    );
    const rotations = await this.invoke<RotationReport>(OUTPUTS.checkKeyRotations, 'check key rotations', { repair: options.repair }).then(
      (r) => ({ companies: r.companies, findings: r.findings.map(findingRow) }),
      skipped,
    );
    const tokens = await this.listUsers().then((r) => tokenHealth(r.rows, now), skipped);
    const exports = await this.exportStore()
      .then(async (store) => {
        const run = await import('./export-run.ts');
        // The stack's functions may be publishing while the doctor reads: a moment's lag of the symlinks is not a finding.
        // Registered companies without a key secret, as the rotation check found them: listed, marked, not exported.
        const keyMissing = isSkipped(rotations) ? [] : rotations.findings.filter((f) => f.type === 'key_missing').map((f) => f.companyId);
        return run.exportHealth(
          store,
          await this.exportedCompanies(),
          now,
          await this.exportDeadline(),
          run.deployedPublishes(),
          keyMissing,
        );
      })
      .catch(skipped);
    const registry = await this.registry()
      .then((r) => registryHealth(r))
      .catch(skipped);
    // The schedules carry the revocations out, so none is run here: the ones that will fail are named.
    const revokedKeys = await this.output(OUTPUTS.revocationGroup, 'check pending revocations')
      .then(async (group) =>
        blockedRevocationRows(
          await blockedRevocations({ scheduler: this.clients.revocationScheduler(group), store: this.clients.secrets() }),
        ),
      )
      .catch(skipped);
    // The local mode's sections, absent here: null in --json (README, "Global options").
    const partial = {
      mode: 'aws' as const,
      checkedAt: iso(now)!,
      health,
      companySecrets: null,
      tokens,
      rotations,
      exports,
      revokedKeys,
      damagedStateFiles: null,
      registry,
    };
    return { ...partial, findings: findingsOf(partial) };
  }

  async setInstitutionSecret(value: string | undefined): Promise<InstitutionSecretReport> {
    return setInstitutionSecret(
      {
        store: this.clients.secrets(),
        secretId: await this.output(OUTPUTS.institutionSecret, 'store the institution credential'),
        verify: async () => (await this.invoke<HealthReport>(OUTPUTS.checkHealth, 'check the stored credential', {})).probes,
      },
      value,
    );
  }

  async installCompanyKey(companyId: string, apiKey: string): Promise<KeysInstallReport> {
    return installKey(await this.companyKeyContext(), await this.registry(), companyId, apiKey);
  }

  /** ExportRequested per company to the stack's exports bus; with `wait`, until each company's manifest of the month is this request's. */
  async exportMonth(request: ExportRequest): Promise<ExportReport> {
    if (request.out)
      throw new UsageError(
        "--out is for the local and direct modes: the deployed pipeline writes to the stack's export bucket",
        'drop --out, or use direct mode (--base-url with ACCTOPS_API_KEY, no stack named)',
      );
    if (request.taxReportFields)
      throw new UsageError(
        "--tax-report-fields is for the local and direct modes: the deployed pipeline reads the stage's exports.taxReportFields",
        'set exports.taxReportFields for the stage in cdk.json and deploy, or use direct mode (--base-url with ACCTOPS_API_KEY, no stack named)',
      );
    if (request.csvDialect !== undefined && request.csvDialect !== 'standard')
      throw new UsageError(
        `--csv-dialect ${request.csvDialect} is for exports to a local directory (local and direct modes): the deployed pipeline writes the standard CSV into the stack's bucket, where programs read every period alike (docs/exports.md, "CSV dialects")`,
        `drop --csv-dialect, or export to a directory in the local or direct mode: \`acctops export --base-url <url> --out ./dir --csv-dialect ${request.csvDialect}\` with ACCTOPS_API_KEY, no stack named`,
      );
    if (request.defaultCurrency)
      throw new UsageError(
        "--default-currency is for the local and direct modes: the deployed pipeline labels transactions without a currency with the company's registered default currency (EUR when it has none)",
        `register it once, for the monthly and on-demand exports alike: \`acctops --stack ${this.stack} companies add --company ${request.company ?? '<id>'} --default-currency <ISO code>\`, then export again`,
      );
    // Refused at once where no zone has begun the month; then by the stage's own zone (a stage in
    // Auckland has begun a month Berlin has not), as request-export will judge it.
    refuseFutureMonth(request.month, Date.now(), EARLIEST_TIME_ZONE);
    await this.ready();
    const { timeZone } = await this.exportDeadline();
    refuseFutureMonth(request.month, Date.now(), timeZone);
    if (request.company !== undefined) await this.requireExportable(request.company);
    const options = { ...request, month: request.month ?? previousMonth(Date.now(), timeZone).text };
    const { companies, skipped } = options.company ? { companies: [options.company], skipped: [] } : await this.registeredCompanies();
    const store = await this.exportStore();
    const events = this.clients.events(await this.output(OUTPUTS.exportBus, 'request exports'), 'acctops.cli');
    const requestedAt = systemClock.now();
    // Ours to choose, so the wait can tell this request's manifests from any other published meanwhile.
    const requestId = `cli-${randomUUID()}`;
    await events.publish(
      companies.map((companyId) => ({
        type: 'ExportRequested',
        time: requestedAt,
        detail: {
          companyId,
          period: options.month,
          requestId,
          ...(options.formats ? { formats: options.formats } : {}),
          ...(options.replaceFormats ? { replaceFormats: true } : {}),
        },
      })),
    );
    const rows = new Map<string, CompanyExportRow>(
      companies.map((companyId) => [companyId, { ...NO_EXPORT_RESULT, companyId, status: 'requested' }]),
    );
    const deadline = requestedAt + EXPORT_WAIT_MS;
    const bar = this.context.out.progress('waiting for the export pipeline');
    while (options.wait && [...rows.values()].some((r) => r.status === 'requested') && systemClock.now() < deadline) {
      bar.update([...rows.values()].filter((r) => r.status !== 'requested').length, rows.size, 'companies exported');
      await systemClock.sleep(EXPORT_POLL_MS);
      for (const [companyId, row] of rows) {
        if (row.status !== 'requested') continue;
        const found = await (await import('./export-run.ts')).manifestSince(store, companyId, options.month, requestedAt, requestId);
        if (found) rows.set(companyId, found);
      }
    }
    bar.finish();
    if (options.wait)
      for (const [companyId, row] of rows)
        if (row.status === 'requested') rows.set(companyId, notSeenInTime(row, options.month, this.stack));
    return {
      month: options.month,
      mode: 'aws',
      out: store.url('exports'),
      formats: options.formats ?? [...FORMATS],
      csvDialect: (options.formats ?? FORMATS).includes('csv') ? 'standard' : null,
      defaultCurrency: null,
      companies: [...rows.values()],
      skipped,
      monthOpen: monthOpen(options.month, Date.now(), timeZone),
    };
  }

  async addCompany(input: CompanyInput) {
    const { result, company } = await (await this.registry()).add(input, Date.now());
    const keyRotation =
      input.rotationDays === undefined ? null : await applyRotationDays(await this.companyKeyContext({ service: false }), company);
    return { result, company: companyRow(company), keyRotation };
  }

  async listCompanies(options: { active: boolean }) {
    return listCompanies(await this.registry(), options, 'aws');
  }

  async removeCompany(companyId: string, options: { recoveryDays: number; revokeKeys?: boolean }) {
    return removeCompany(
      await this.registry(),
      Date.now(),
      () => this.companySecrets(),
      companyId,
      options.recoveryDays,
      async () => {
        const store = this.clients.secrets();
        const directory = taggedKeyDirectory(store, this.directoryOptions);
        const scheduler = this.clients.revocationScheduler(await this.output(OUTPUTS.revocationGroup, 'list pending revocations'));
        return {
          find: (id: string) => directory.find(id),
          deps: { ...this.revokeDeps(store, await this.baseUrl()), scheduler },
          // --revoke-keys deletes the schedules of the keys it revoked (decision 107); keys revoke-pending leaves them.
          cancelSchedule: (apiKeyId: string) => scheduler.cancel(apiKeyId),
          scheduleOf: (apiKeyId: string) => scheduler.scheduleOf(apiKeyId),
        };
      },
      options.revokeKeys === true,
    );
  }

  async restoreCompany(companyId: string) {
    return restoreCompany(await this.registry(), Date.now(), () => this.companyKeyContext({ service: false }), companyId);
  }

  localStatus(): Promise<never> {
    return Promise.reject(localModeOnly());
  }

  /** A deployed stage's lifetime is its `accessTokenLifetimeSeconds` in cdk.json. */
  setLocal(): Promise<never> {
    return Promise.reject(localModeOnly());
  }

  /**
   * Not here: a deployed rotation runs in Lambda, and Secrets Manager retries it when it likes, so
   * nothing proves it stopped; the rotation doctor gives up a stuck one (docs/key-rotation.md).
   */
  cancelRotation(): Promise<never> {
    return Promise.reject(
      new CliConfigError(
        'keys cancel-rotation needs the local mode, but a stack is named: a deployed rotation may still be retried by Secrets Manager',
        'the rotation doctor gives up a rotation pending for over an hour: `acctops doctor --repair`; see docs/runbooks.md, "A rotation stuck in AWSPENDING"',
      ),
    );
  }

  advanceClock(): Promise<never> {
    return Promise.reject(localModeOnly());
  }

  resetClock(): Promise<never> {
    return Promise.reject(localModeOnly());
  }

  /**
   * A usage error, not configuration: nothing is missing. A deployment's key is created in the
   * service by the company (docs/runbooks.md, "Install a company API key", step 1); acctops has no
   * way to create one there, and never shows one.
   */
  issueLocalKey(): Promise<never> {
    return Promise.reject(
      // Exit 3 as for every other local-mode command named with a stack (localModeOnly), with the runbook's way instead.
      new CliConfigError(
        'local issue-key creates keys only in the local sandbox, but a stack is named: in AWS mode the key comes from the company',
        'nothing was run: get the key from the company (docs/runbooks.md, "Install a company API key", step 1), or drop --stack / ACCTOPS_STACK to rehearse it locally',
      ),
    );
  }

  /** The stage, the secret lifecycle and the tag directory only (`companies remove`: no call to the service). */
  private companySecrets(): { stage: string; lifecycle: SecretLifecycle; directory: CompanyKeyDirectory } {
    const stage = this.directoryOptions.stage;
    if (stage === undefined)
      throw new CliConfigError(
        `stack ${this.stack} is not named acctops-<stage>`,
        'pass --stack acctops-<stage>: company key secrets are named and tagged by stage',
      );
    return {
      stage,
      lifecycle: this.clients.secretLifecycle(),
      directory: taggedKeyDirectory(this.clients.secrets(), this.directoryOptions),
    };
  }

  /**
   * What `keys install`, `companies add --rotation-days` and `companies restore` need of the stack:
   * its stage, rotation function, secrets key, stores. Only `keys install` calls the service (to
   * check the key), so only it needs the service's base URL: `{ service: false }` leaves it out.
   */
  private async companyKeyContext(options: { service: boolean } = { service: true }): Promise<CompanyKeyContext> {
    await this.ready();
    const { stage } = this.companySecrets();
    const store = this.clients.secrets();
    const baseUrl = options.service ? await this.baseUrl() : undefined;
    const days = await this.optionalOutput(OUTPUTS.companyKeyRotationDays);
    return {
      lifecycle: this.clients.secretLifecycle(),
      store,
      directory: taggedKeyDirectory(store, this.directoryOptions),
      clientFor: (key) => {
        if (baseUrl === undefined) throw new Error('companyKeyContext({ service: false }) has no service client');
        return createAccountingClient({
          baseUrl,
          credentials: apiKeyAuth(key.apiKey, { companyId: key.companyId }),
          logger: this.context.out.logger(),
        });
      },
      clock: systemClock,
      target: {
        stage,
        rotationLambdaArn: await this.output(OUTPUTS.rotateApiKeyFunction, 'turn on the rotation of a company key'),
        kmsKeyId: await this.output(OUTPUTS.secretsKey, 'encrypt a company key secret with the stack key'),
      },
      defaultRotationDays: days === undefined ? 30 : Number(days),
    };
  }

  /**
   * `export --company`: the deployed pipeline exports with the company's key secret, so a company
   * neither registered (and active) nor holding a key secret is refused before anything is requested,
   * as unknown, as removed or as holding a damaged registry entry (exit 3, companyKeyOf), rather
   * than waited for. An active registered
   * company is requested on its registry entry alone (one GetItem); the others cost a ListSecrets by
   * tag, and one with a key secret is requested (the pipeline finds its key by tag too).
   */
  private async requireExportable(companyId: string): Promise<void> {
    try {
      const registry = await this.optionalRegistry();
      const entry = await registry?.get(companyId);
      if (entry && entry.removedAt === undefined) return;
      const directory = taggedKeyDirectory(this.clients.secrets(), this.directoryOptions);
      await companyKeyOf(
        (id) => directory.find(id),
        () => Promise.resolve(registry),
        companyId,
        systemClock.now(),
      );
    } catch (error) {
      // Only a definite answer refuses (unknown, removed, no key secret). A check the operator's role
      // may not be allowed (the registry's GetItem or its key, ListSecrets) must not stop an export
      // that needs neither: the request goes out, and the pipeline reports what it finds.
      if (
        error instanceof UnknownNameError ||
        error instanceof CompanyRemovedError ||
        error instanceof CompanyEntryDamagedError ||
        error instanceof CompanyKeyNotFoundError
      )
        throw error;
    }
  }

  /** The registry, or undefined for a stack from before it (no CompanyRegistryTableName output). */
  private async optionalRegistry(): Promise<CompanyRegistry | undefined> {
    return this.registry().catch((error: unknown) => {
      if (error instanceof CliConfigError) return undefined;
      throw error;
    });
  }

  /** The stack's company registry table, found as the token table is for `users list`. */
  private async registry(): Promise<CompanyRegistry> {
    const value = await this.optionalOutput(OUTPUTS.companyRegistry);
    if (value === undefined) {
      throw new CliConfigError(
        `stack ${this.stack} has no output ${OUTPUTS.companyRegistry} (needed to read the company registry)`,
        `pass --output ${OUTPUTS.companyRegistry}=<table>, or deploy a stack version that has the registry`,
      );
    }
    return companyRegistry(this.clients.registryTable(value), this.context.out.logger());
  }

  private async exportStore(): Promise<ObjectStore> {
    return (await import('./export-run.ts')).storeForBucket(await this.output(OUTPUTS.exportBucket, 'read the exports'), this.context);
  }

  /**
   * The stage's active companies from the company registry, read a page at a time: what the
   * monthly planner exports (a company with a key secret but not registered is not exported).
   */
  private async registeredCompanies(): Promise<{ companies: string[]; skipped: RegistryFinding[] }> {
    const registry = await this.registry();
    const companies: string[] = [];
    const skipped: RegistryFinding[] = [];
    for await (const page of activeCompanyPages(registry)) {
      companies.push(...page.items.map((c) => c.companyId));
      skipped.push(...page.skipped);
    }
    return { companies: companies.sort(), skipped };
  }

  /** The deadline the stack's overdue check judges by (its outputs), so the doctor expects the same month. */
  private async exportDeadline(): Promise<ExportDeadline> {
    return exportDeadlineOf(await this.optionalOutput(OUTPUTS.exportTimeZone), await this.optionalOutput(OUTPUTS.exportDueAfterHours));
  }

  /**
   * The companies whose exports the doctor expects: those whose keys the stack holds (their secrets,
   * found by tag), less the ones the registry says were removed, which the monthly planner leaves
   * out (a secret the stack imports outlives `companies remove`).
   */
  private async exportedCompanies(): Promise<string[]> {
    await this.ready();
    const removed = await removedCompanies(await this.optionalRegistry().catch(() => undefined));
    const out: string[] = [];
    for await (const entry of taggedKeyDirectory(this.clients.secrets(), this.directoryOptions).list())
      if (!removed.has(entry.companyId)) out.push(entry.companyId);
    return out.sort();
  }

  /**
   * ACCTOPS_BASE_URL (to point at another service; an empty one is refused, not read as unset), else
   * the stack's ServiceBaseUrl output. Neither is
   * an argument, so a malformed one is configuration (exit 3) naming which it was.
   */
  private async baseUrl(): Promise<string> {
    const fromEnv = baseUrlFromEnv(
      this.context.env,
      `set it to the stage's baseUrl ending in /api/v1, or unset it to use the stack's ${OUTPUTS.serviceBaseUrl} output`,
    );
    if (fromEnv !== undefined) return fromEnv;
    const raw = await this.optionalOutput(OUTPUTS.serviceBaseUrl);
    if (raw === undefined || raw === '') {
      throw new CliConfigError(
        'this command calls the service with a company key and needs its base URL',
        `set ACCTOPS_BASE_URL to the stage's baseUrl (cdk.json), or deploy a stack version with the ${OUTPUTS.serviceBaseUrl} output`,
      );
    }
    return configuredUrl(
      raw,
      `the stack output ${OUTPUTS.serviceBaseUrl}`,
      `set ACCTOPS_BASE_URL to the stage's baseUrl, or pass --output ${OUTPUTS.serviceBaseUrl}=<url>`,
    );
  }
}

/**
 * The export deadline from the stack's outputs. A stack deployed before it had them gets the
 * defaults, which are its deadline unless its stage set `schedules.timeZone` or `dueAfterHours`
 * (`--output` names them then). A value that is no deadline is the stack's configuration (exit 3).
 */
export function exportDeadlineOf(timeZone: string | undefined, dueAfterHours: string | undefined): ExportDeadline {
  const deadline = {
    timeZone: timeZone ?? DEFAULT_EXPORT_DEADLINE.timeZone,
    // Number('') and Number(' 12') are numbers too: only digits are hours.
    dueAfterHours:
      dueAfterHours === undefined ? DEFAULT_EXPORT_DEADLINE.dueAfterHours : /^\d+$/.test(dueAfterHours) ? Number(dueAfterHours) : NaN,
  };
  try {
    assertExportDeadline(deadline);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const [key, what, setting] =
      error.field === 'timeZone'
        ? [OUTPUTS.exportTimeZone, 'an IANA time zone', 'schedules.timeZone']
        : [OUTPUTS.exportDueAfterHours, 'whole hours from 0 to 648', 'dueAfterHours'];
    throw new CliConfigError(`the stack output ${key} is not ${what}`, `pass --output ${key}=<value> with the stage's ${setting}`, error);
  }
  return deadline;
}

const KNOWN_OUTPUTS: ReadonlySet<string> = new Set(Object.values(OUTPUTS));

/**
 * The `--output Key=value` pairs, refused (exit 2, before any AWS call) when a key is none the CLI
 * reads or is given two values: either was dropped without a word, a mistyped key leaving the
 * stack's own output in use, and a repeated one the last value, as commander does with a repeated
 * option (decision 87's reason for refusing those).
 */
export function outputOverrides(pairs: readonly string[]): Record<string, string> {
  const overrides: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const key = pair.slice(0, at);
    const value = pair.slice(at + 1);
    if (!KNOWN_OUTPUTS.has(key)) {
      throw new UsageError(
        `--output ${key}: no stack output of that name is read by acctops`,
        `nothing was run: name one of ${[...KNOWN_OUTPUTS].join(', ')}`,
      );
    }
    if (Object.hasOwn(overrides, key) && overrides[key] !== value)
      throw new UsageError(`--output ${key} given twice with different values`, 'nothing was run: give each output once');
    overrides[key] = value;
  }
  return overrides;
}

export function openAwsOperations(context: OperationsContext): AwsOperations {
  const stack = context.stack!;
  const overrides = outputOverrides(context.flags.output ?? []);
  const region = awsRegion(context.flags, context.env, ['AWS_REGION', 'AWS_DEFAULT_REGION']);
  return new AwsOperations(context, stack, new OperatorClients({ region }), overrides);
}

/**
 * What the worker did to a user it did not report as failed, read from the record before and after:
 * a new pair (`refreshedAt` moved) is refreshed, or recovered when the user had been out of the
 * schedule; a user moved out of it is needs_attention; otherwise it was skipped, as busy when
 * another lease was live at the start, else as not due (the worker's own rule, decided there).
 */
export function refreshResultOf(before: TokenRecord, after: TokenRecord | null, now: number): RefreshResult {
  if (after === null) return 'not_found';
  if (after.refreshedAt !== before.refreshedAt) return before.status === 'needs_attention' ? 'recovered' : 'refreshed';
  if (after.status === 'needs_attention' && before.status !== 'needs_attention') return 'needs_attention';
  if (before.leaseOwner !== null && before.leaseUntil !== null && before.leaseUntil > now) return 'busy';
  return 'not_due';
}

/** The deployed recover-user function's refusal of `force` as a field it does not know: one older than it. */
function refusesForceField(error: unknown): boolean {
  return (
    error instanceof AcctopsError &&
    error.code === 'function_failed' &&
    (error as { errorType?: string }).errorType === 'ValidationError' &&
    /unknown field\(s\)[^;]*\bforce\b/.test(error.message)
  );
}

/**
 * `--force` against a deployed recover-user function that knows `already_active` but not `force`:
 * it left the active user as it is, which is not what was asked.
 */
function forceNotDeployed(externalId: string): CliError {
  return new CliError(
    `--user ${externalId}: the deployed recover-user function does not know --force and left the active user as it is; nothing was changed`,
    {
      code: 'force_not_deployed',
      exitCode: ExitCode.failure,
      hint: 'deploy the current stack (`npx cdk deploy -c stage=<stage>`, README "Deploying"), then run the command again',
    },
  );
}

/**
 * The recover-user function's refusals that are about the user, as the local mode reports them: the
 * service's 404 (it no longer knows the user) and a disabled user (401 `user_disabled`, whose code
 * the client's message carries in its parentheses). Anything else stays the function's failure.
 */
function refusedUserRemote(externalId: string, error: unknown): unknown {
  if (!(error instanceof AcctopsError) || error.code !== 'function_failed') return error;
  const errorType = (error as { errorType?: string }).errorType;
  if (errorType === 'NotFoundError') return userGoneAtService(externalId, error.message, error);
  const userCode = [...USER_REFUSAL_CODES].some((code) => new RegExp(`\\(401, ${code}\\b`).test(error.message));
  if (errorType === 'AuthenticationError' && userCode) return userDisabled(error.message, error);
  return error;
}

/**
 * The onboard-user function's failure on the service's 400, as the local mode reports it
 * (`onboardInputRefused`): its error type is the client's `ApiValidationError`, whose message names
 * the field (`…: field username: …`). Anything else stays the function's failure.
 */
function refusedOnboardRemote(error: unknown): unknown {
  if (!(error instanceof AcctopsError) || error.code !== 'function_failed') return error;
  if ((error as { errorType?: string }).errorType !== 'ApiValidationError') return error;
  const field = /\): field ([A-Za-z_][A-Za-z0-9_.]*)(?::|$)/.exec(error.message)?.[1];
  return onboardInputRefused(field, error.message, error);
}

/**
 * A deployed token function's answer for a user a command names (`--user`): the function's own
 * TokenNotFoundError (its error type: every error class declares its name, which Lambda reports) is an unknown user, exit 3, as in
 * the local mode. Known by code and type, so that the Lambda client is not loaded for it.
 */
async function forKnownUserRemote<T>(externalId: string, invoked: Promise<T>): Promise<T> {
  try {
    return await invoked;
  } catch (error) {
    if (
      error instanceof AcctopsError &&
      error.code === 'function_failed' &&
      (error as { errorType?: string }).errorType === 'TokenNotFoundError'
    )
      throw unknownUser(externalId);
    throw error;
  }
}
