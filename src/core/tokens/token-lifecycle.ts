import { ALARMED_METRICS } from '../../../contract/metrics';
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import {
  AccountingApiError,
  AuthenticationError,
  InvalidGrantError,
  NotFoundError,
  UserExistsError,
  refusesUser,
  type AccountingClient,
  type TokenPair,
} from '../accounting-api';
import { EventPublishError, type EventPublisher } from '../ports/events';
import type { Clock } from '../shared/clock';
import { mapWithConcurrency } from '../shared/concurrency';
import { parseWith } from '../shared/errors';
import type { Logger } from '../shared/logger';
import type { Metrics } from '../shared/metrics';
import { onboardInputSchema, type OnboardInput } from './onboard-input';
import { ExpiryNotConfirmedError, OnboardConflictError, RevocationIncompleteError, TokenBusyError, UserRevokedError } from './errors';
import { tokenRefreshFailed } from './token-events';
import { accessTokenExpiry } from './token-expiry';
import { describeFailure, failureCode, isInstitutionRefusal, loggedFailure, serviceFailure } from './token-failures';
import {
  TokenExistsError,
  TokenNotFoundError,
  VersionConflictError,
  isDue,
  type TokenRecord,
  type TokenStatus,
  type TokenStore,
} from './token-store';
import { lazySchema } from '../shared/lazy-schema';

/** The institution operations the use cases call; `client.institution` of an AccountingClient. */
export type InstitutionApi = Pick<
  AccountingClient['institution'],
  'createUser' | 'refreshToken' | 'retrieveToken' | 'verifyToken' | 'expireToken'
>;

const MINUTE = 60_000;
/** saveTokens of a rotated pair: attempts, the first wait (doubling), and lease time kept back. */
const SAVE_ATTEMPTS = 4;
const SAVE_RETRY_BASE_MS = 500;
const SAVE_RETRY_RESERVE_MS = 10_000;

const settingsSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    /** Refresh this long before the deadline (access-token expiry or keep-alive). */
    marginMs: z
      .int()
      .min(0)
      .default(15 * MINUTE),
    /** Used when a response gives neither a JWT `exp` nor `expiresIn` (spec §5.2: "usually 30 minutes"). */
    accessTokenLifetimeMs: z
      .int()
      .positive()
      .default(30 * MINUTE),
    /**
     * How long a lease protects a user. Longer than the longest a holder can take (the worker's
     * invocation timeout): otherwise a second worker could take the lease from a live holder and
     * refresh with a token the first is rotating.
     */
    leaseMs: z
      .int()
      .positive()
      .default(3 * MINUTE),
    /** Users refreshed at once inside one batch: with the number of workers, the cap on requests in flight. */
    concurrency: z.int().min(1).max(100).default(10),
  }),
);
export type TokenLifecycleSettings = z.output<typeof settingsSchema>;

export interface TokenLifecycleDeps {
  store: TokenStore;
  institution: InstitutionApi;
  /**
   * Where TokenRefreshFailed goes. Only refreshes publish; a function that never refreshes (onboard,
   * revoke) has no bus and omits it.
   */
  events?: EventPublisher;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  settings?: z.input<typeof settingsSchema>;
  /**
   * Start of every lease owner id (`<prefix>:<uuid>`, one per attempt), so that a lease seen in the
   * table says who took it: e.g. `refresh-tokens:<request id>`.
   * @default 'acctops'
   */
  ownerPrefix?: string;
}

export type { OnboardInput } from './onboard-input';

/**
 * What happened to one user in a refresh run:
 * - `refreshed`: new pair from the refresh operation, stored; `recovered`: from retrieve, stored;
 * - `needs_attention`: refresh and retrieve both refused; out of the schedule, event published;
 * - `not_due`: refreshed meanwhile, or not active (revoked, needs_attention): nothing done;
 * - `busy`: someone else holds the lease; `not_found`: no record (a stale message);
 * - `lost_race`: our lease was taken over while we worked; the new holder recovers the user;
 * - `failed` (batches only): not done, retry later (`errorClass` says why).
 */
export type RefreshResult = 'refreshed' | 'recovered' | 'needs_attention' | 'not_due' | 'busy' | 'not_found' | 'lost_race' | 'failed';

export interface RefreshOutcome {
  externalId: string;
  result: RefreshResult;
  errorClass?: string;
  /** For `needs_attention`: the code the record keeps (`lastErrorCode`), when there is one. */
  errorCode?: string;
  /** For `failed`: the service refused the institution credential (not this user); present only then. */
  credentialRefused?: true;
}

const RESULT_METRIC: Record<RefreshResult, string> = {
  refreshed: 'TokenRefreshed',
  recovered: 'TokenRecovered',
  needs_attention: ALARMED_METRICS.tokenNeedsAttention.name,
  not_due: 'TokenRefreshSkipped',
  busy: 'TokenRefreshSkipped',
  not_found: 'TokenRefreshSkipped',
  lost_race: 'TokenLostRace',
  failed: ALARMED_METRICS.tokenRefreshDeferred.name,
};

export interface OnboardResult {
  externalId: string;
  result: 'created' | 'retrieved' | 'already_onboarded';
  status: TokenStatus;
  accessTokenExpiresAt: number;
}

export interface VerifyResult {
  externalId: string;
  status: TokenStatus;
  accessTokenExpiresAt: number;
  /** The service's verdict on the stored access token. */
  service: { valid: true; expiresAt: string | null } | { valid: false; reason: string };
}

export interface RecoverResult {
  externalId: string;
  /** `already_active`: the user was active and `force` not asked, so nothing was retrieved or stored (decision 103). */
  result: 'recovered' | 'already_active';
  previousStatus: TokenStatus;
  /** The stored access token's expiry: the new one, or for `already_active` the one it has. */
  accessTokenExpiresAt: number;
  /** Whether a new token pair was retrieved and stored: true for `recovered` only. */
  changed: boolean;
}

export interface RevokeResult {
  externalId: string;
  result: 'revoked' | 'already_revoked';
}

/**
 * The user-token use cases, written against ports: onboard, refresh (one user or a batch, single
 * flight per user), verify, recover and revoke. See docs/tokens.md.
 *
 * Every change to an existing record happens under the user's lease and ends it with a
 * compare-and-swap (TokenStore), so a refresh, a recovery and a revocation never interleave.
 * Nothing here logs a token: the client registers every token with the redactor, and the records
 * that reach a log line are the use cases' own summaries.
 */
export class TokenLifecycle {
  private readonly settings: TokenLifecycleSettings;
  private readonly ownerPrefix: string;

  constructor(private readonly deps: TokenLifecycleDeps) {
    this.settings = parseWith(settingsSchema, deps.settings ?? {}, 'token lifecycle settings');
    this.ownerPrefix = deps.ownerPrefix ?? 'acctops';
  }

  // ------------------------------------------------------------------ onboard

  /**
   * Registers the user with the service and stores its first pair. A user the service already
   * knows (409 user_exists, or a create whose answer was lost) gets a pair through retrieve
   * instead. Idempotent: a user acctops already holds is returned as it is, except one in
   * `needs_attention`, which is registered again under its lease: the runbook's way back for a user
   * the service no longer knows (retrieve answered 404), where `recover` cannot help.
   */
  async onboard(input: OnboardInput): Promise<OnboardResult> {
    const user = parseWith(onboardInputSchema, input, 'onboard input');
    const log = this.deps.logger.child({ externalId: user.externalId });
    const existing = await this.deps.store.get(user.externalId);
    if (existing?.status === 'needs_attention') {
      this.alreadyOnboarded(existing, user);
      return this.onboardAgain(user, log);
    }
    if (existing) return this.alreadyOnboarded(existing, user);

    const issuedAt = this.deps.clock.now();
    const { pair, result } = await this.register(user, log);
    const { expiresAt } = accessTokenExpiry(pair, issuedAt, this.settings.accessTokenLifetimeMs);
    try {
      const record = await this.deps.store.create(
        { ...user, accessToken: pair.accessToken, refreshToken: pair.refreshToken, accessTokenExpiresAt: expiresAt },
        this.deps.clock.now(),
      );
      this.deps.metrics.add('UserOnboarded', 1);
      log.info('user onboarded', { result, accessTokenExpiresAt: expiresAt });
      return { externalId: record.externalId, result, status: record.status, accessTokenExpiresAt: expiresAt };
    } catch (error) {
      // A concurrent onboarding stored its pair first; ours stays valid at the service until it expires.
      if (!(error instanceof TokenExistsError)) throw error;
      const winner = await this.deps.store.get(user.externalId);
      if (!winner) throw error;
      return this.alreadyOnboarded(winner, user);
    }
  }

  /** A held `needs_attention` user, registered with the service again and made `active` with the new pair. */
  private async onboardAgain(user: z.output<typeof onboardInputSchema>, log: Logger): Promise<OnboardResult> {
    const owner = this.newOwner();
    const record = await this.lease(user.externalId, owner);
    return this.underLease(user.externalId, owner, async () => {
      // Taken meanwhile by a recovery or a revocation: that is the state to report.
      if (record.status !== 'needs_attention') return this.alreadyOnboarded(record, user);
      const issuedAt = this.deps.clock.now();
      // The service knows the user by the spelling it was created with: upper case for a record the older code stored so.
      const { pair, result } = await this.register({ ...user, externalId: record.externalId }, log);
      const { expiresAt } = accessTokenExpiry(pair, issuedAt, this.settings.accessTokenLifetimeMs);
      await this.saveWhileLeased(record, owner, {
        accessToken: pair.accessToken,
        refreshToken: pair.refreshToken,
        accessTokenExpiresAt: expiresAt,
      });
      this.deps.metrics.add('UserOnboarded', 1);
      log.info('user onboarded again', { result, previousStatus: record.status, accessTokenExpiresAt: expiresAt });
      return { externalId: user.externalId, result, status: 'active', accessTokenExpiresAt: expiresAt };
    });
  }

  /** Creates the user at the service, or retrieves the pair of one it already knows. */
  private async register(
    user: z.output<typeof onboardInputSchema>,
    log: Logger,
  ): Promise<{ pair: TokenPair; result: 'created' | 'retrieved' }> {
    let createdAtService = false;
    try {
      const created = await this.deps.institution.createUser(user);
      createdAtService = true;
      if (created.refreshToken === null) {
        // Spec §4.1: create's result "carries an accessToken"; retrieve generates the pair we can keep
        // fresh. The user is still ours to report as `created`.
        log.info('create returned no refresh token; retrieving a pair');
        return { pair: await this.deps.institution.retrieveToken(user), result: 'created' };
      }
      return { pair: { ...created, refreshToken: created.refreshToken }, result: 'created' };
    } catch (error) {
      if (createdAtService) throw error;
      // The spec shows no conflict body (§7), so any 409 of create may mean "already registered",
      // whatever its text; retrieve with the same identity decides.
      const conflict = error instanceof UserExistsError || (error instanceof AccountingApiError && error.status === 409);
      if (!conflict && serviceFailure(error) !== 'ambiguous') throw error;
      log.info('the service may already know the user; retrieving its tokens', loggedFailure(error));
      try {
        return { pair: await this.deps.institution.retrieveToken(user), result: 'retrieved' };
      } catch (retrieveError) {
        // A disabled user is known to the service: that refusal says all (it is not a conflict).
        if (
          conflict &&
          serviceFailure(retrieveError) === 'refused' &&
          !(retrieveError instanceof AccountingApiError && refusesUser(retrieveError))
        ) {
          // Both answers, as the client worded them: request, status and the service's scrubbed text, never a token.
          const answers = `create answered: ${messageOf(error)}; retrieve answered: ${messageOf(retrieveError)}`;
          const why =
            retrieveError instanceof NotFoundError
              ? 'the service has a user with this external_id or username, but not with this username, email and external_id together'
              : 'the service refused to create the user (409) and refused to retrieve its tokens';
          throw new OnboardConflictError(user.externalId, `${why} (${answers})`, retrieveError);
        }
        throw retrieveError;
      }
    }
  }

  private alreadyOnboarded(record: TokenRecord, user: z.output<typeof onboardInputSchema>): OnboardResult {
    if (record.username !== user.username || record.email !== user.email) {
      throw new OnboardConflictError(user.externalId, 'acctops already holds this external_id with another username or email');
    }
    return {
      externalId: record.externalId,
      result: 'already_onboarded',
      status: record.status,
      accessTokenExpiresAt: record.accessTokenExpiresAt,
    };
  }

  // ------------------------------------------------------------------ refresh

  /**
   * Refreshes a batch (an SQS batch of the worker) with at most `concurrency` users at once. Never
   * throws for one user: a user that could not be done now is `failed`, for the caller to retry.
   * No user is started after `deadline` (epoch ms), so that the invocation ends before its timeout
   * with every started user finished.
   *
   * Once `signal` is aborted (a caller that is stopping: the CLI's Ctrl-C), no further user is
   * started and those not started are left out of the result, still due; the users under way end
   * as usual. `onOutcome` is told of each user's outcome as it ends, so that a caller stopping
   * before the whole batch has ended can say what was done so far.
   */
  async refreshBatch(
    externalIds: readonly string[],
    options: { deadline?: number; signal?: AbortSignal; onOutcome?: (outcome: RefreshOutcome) => void } = {},
  ): Promise<RefreshOutcome[]> {
    const unique = [...new Set(externalIds)];
    const outcomes = await mapWithConcurrency(
      unique,
      this.settings.concurrency,
      async (externalId): Promise<RefreshOutcome | undefined> => {
        if (options.signal?.aborted === true) return undefined;
        const outcome = await this.refreshInBatch(externalId, options.deadline);
        options.onOutcome?.(outcome);
        return outcome;
      },
    );
    const byId = new Map(outcomes.filter((o) => o !== undefined).map((o) => [o.externalId, o]));
    return externalIds.flatMap((id) => {
      const outcome = byId.get(id);
      return outcome === undefined ? [] : [outcome];
    });
  }

  private async refreshInBatch(externalId: string, deadline: number | undefined): Promise<RefreshOutcome> {
    if (deadline !== undefined && this.deps.clock.now() >= deadline) {
      this.count('failed');
      return { externalId, result: 'failed', errorClass: 'DeadlineReached' };
    }
    try {
      return await this.refresh(externalId);
    } catch (error) {
      const failure = loggedFailure(error);
      this.deps.logger.warn('user token refresh deferred; it will be retried', { externalId, ...failure });
      // Not the user's failure but our credential's: a caller reports it as such (the CLI's exit 4).
      const credentialRefused = error instanceof AuthenticationError && isInstitutionRefusal(error);
      return { externalId, result: 'failed', errorClass: failure.errorClass, ...(credentialRefused ? { credentialRefused } : {}) };
    }
  }

  /**
   * Single-flight refresh of one user: take the lease, re-check `isDue` on the record read under
   * it, refresh (or recover through retrieve), and store the pair with compare-and-swap before the
   * lease ends. Throws (after releasing the lease) when the work must be retried later: the
   * service is rate limiting or unreachable, the institution credential is refused, the store failed.
   */
  async refresh(externalId: string): Promise<RefreshOutcome> {
    try {
      const outcome = await this.attemptRefresh(externalId);
      this.count(outcome.result);
      return outcome;
    } catch (error) {
      this.count('failed');
      throw error;
    }
  }

  private async attemptRefresh(externalId: string): Promise<RefreshOutcome> {
    const owner = this.newOwner();
    const now = this.deps.clock.now();
    let record: TokenRecord | null;
    try {
      record = await this.deps.store.acquireLease(externalId, owner, now + this.settings.leaseMs, now);
    } catch (error) {
      if (error instanceof TokenNotFoundError) return { externalId, result: 'not_found' };
      throw error;
    }
    if (!record) return { externalId, result: 'busy' };
    if (!isDue(record, now, this.settings.marginMs)) {
      await this.deps.store.releaseLease(externalId, owner);
      return { externalId, result: 'not_due' };
    }
    return this.underLease(externalId, owner, () => this.renew(record, owner));
  }

  /** Refresh; on an ambiguous or refused refresh, recover through retrieve. */
  private async renew(record: TokenRecord, owner: string): Promise<RefreshOutcome> {
    const log = this.deps.logger.child({ externalId: record.externalId });
    let refreshError: unknown;
    const refreshSentAt = this.deps.clock.now();
    try {
      const pair = await this.deps.institution.refreshToken(record.refreshToken);
      return await this.store(record, owner, pair, refreshSentAt, 'refreshed');
    } catch (error) {
      // `later`: the service did nothing for this user; not the service's error: ours to surface.
      const kind = serviceFailure(error);
      if (kind === undefined || kind === 'later') throw error;
      refreshError = error;
      log.warn(
        error instanceof InvalidGrantError
          ? 'refresh token refused; recovering through retrieve'
          : 'refresh outcome unknown; recovering through retrieve',
        loggedFailure(error),
      );
    }

    const retrieveSentAt = this.deps.clock.now();
    let pair: TokenPair;
    try {
      pair = await this.retrieve(record);
    } catch (error) {
      // Only a definite refusal needs a human; anything that may pass is retried later.
      if (serviceFailure(error) !== 'refused') throw error;
      return this.needsAttention(record, owner, { retrieveError: error, refreshError });
    }
    return this.store(record, owner, pair, retrieveSentAt, 'recovered');
  }

  private async store(
    record: TokenRecord,
    owner: string,
    pair: TokenPair,
    sentAt: number,
    result: 'refreshed' | 'recovered',
  ): Promise<RefreshOutcome> {
    const { expiresAt, source } = accessTokenExpiry(pair, sentAt, this.settings.accessTokenLifetimeMs);
    const now = this.deps.clock.now();
    try {
      await this.saveWhileLeased(record, owner, {
        accessToken: pair.accessToken,
        refreshToken: pair.refreshToken,
        accessTokenExpiresAt: expiresAt,
      });
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      // The lease ran out and another worker took it: it holds our old refresh token (now dead if
      // this was a refresh) and will recover through retrieve. Our pair is dropped, never stored.
      this.deps.logger.warn('lease lost before the new pair was stored; the new holder recovers the user', {
        externalId: record.externalId,
        reason: error.reason,
      });
      return { externalId: record.externalId, result: 'lost_race' };
    }
    if (expiresAt - this.settings.marginMs <= now) {
      this.deps.logger.warn('the new access token is due already: its lifetime is shorter than the refresh margin', {
        externalId: record.externalId,
        accessTokenExpiresAt: expiresAt,
        expirySource: source,
      });
    }
    this.deps.logger.debug('user token stored', {
      externalId: record.externalId,
      result,
      accessTokenExpiresAt: expiresAt,
      expirySource: source,
    });
    return { externalId: record.externalId, result };
  }

  private async needsAttention(
    record: TokenRecord,
    owner: string,
    failure: { retrieveError: unknown; refreshError: unknown },
  ): Promise<RefreshOutcome> {
    const { errorClass } = describeFailure(failure.retrieveError);
    const errorCode = failureCode(failure.retrieveError);
    let marked: TokenRecord;
    try {
      marked = await this.deps.store.markStatus(
        record.externalId,
        { status: 'needs_attention', errorClass, ...(errorCode === undefined ? {} : { errorCode }) },
        { expectedVersion: record.version, owner, now: this.deps.clock.now() },
      );
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      return { externalId: record.externalId, result: 'lost_race' };
    }
    this.deps.logger.error('user token needs attention: refresh and retrieve both failed', {
      externalId: record.externalId,
      ...loggedFailure(failure.retrieveError),
      refreshErrorClass: describeFailure(failure.refreshError).errorClass,
      consecutiveFailures: marked.consecutiveFailures,
    });
    try {
      if (!this.deps.events) throw new EventPublishError('no event publisher configured', { failed: 1 });
      await this.deps.events.publish([tokenRefreshFailed(marked, failure, this.deps.clock.now())]);
    } catch (error) {
      // The record is the truth and the metric alarms; a lost event must not undo either.
      this.deps.metrics.add('TokenEventPublishFailed', 1);
      this.deps.logger.error('TokenRefreshFailed event not published', { externalId: record.externalId, ...loggedFailure(error) });
    }
    return { externalId: record.externalId, result: 'needs_attention', errorClass, ...(errorCode === undefined ? {} : { errorCode }) };
  }

  // ------------------------------------------------------------------ verify, recover, revoke

  /** The stored record's state and the service's verdict on its access token. Changes nothing. */
  async verify(externalId: string): Promise<VerifyResult> {
    const record = await this.deps.store.get(externalId);
    if (!record) throw new TokenNotFoundError(externalId);
    const verdict = await this.deps.institution.verifyToken(record.accessToken);
    return {
      externalId,
      status: record.status,
      accessTokenExpiresAt: record.accessTokenExpiresAt,
      service: verdict.valid ? { valid: true, expiresAt: verdict.expiresAt ?? null } : { valid: false, reason: verdict.reason },
    };
  }

  /**
   * Retrieves a new pair and stores it, making the user `active` again: the runbook for a user in
   * `needs_attention`. A revoked user comes back only with `reactivate`. An active user is left as
   * it is (`already_active`): it is on the schedule, and a retrieve would only replace a working
   * pair, which "recovered (was active)" then reported as if something had been wrong. `force`
   * retrieves for an active user all the same: our record can say `active` while the service has
   * revoked or disabled its tokens (an incident there), and a refresh, not due, never asks it. It
   * does not stand in for `reactivate`: a revocation is undone only on purpose.
   */
  async recover(externalId: string, options: { reactivate?: boolean; force?: boolean } = {}): Promise<RecoverResult> {
    const owner = this.newOwner();
    const record = await this.lease(externalId, owner);
    return this.underLease(externalId, owner, async () => {
      if (record.status === 'revoked' && options.reactivate !== true) throw new UserRevokedError(externalId);
      if (record.status === 'active' && options.force !== true) {
        await this.deps.store.releaseLease(externalId, owner);
        return {
          externalId,
          result: 'already_active',
          previousStatus: record.status,
          accessTokenExpiresAt: record.accessTokenExpiresAt,
          changed: false,
        };
      }
      const sentAt = this.deps.clock.now();
      const pair = await this.retrieve(record);
      const { expiresAt } = accessTokenExpiry(pair, sentAt, this.settings.accessTokenLifetimeMs);
      await this.deps.store.saveTokens(
        externalId,
        { accessToken: pair.accessToken, refreshToken: pair.refreshToken, accessTokenExpiresAt: expiresAt },
        { expectedVersion: record.version, owner, now: this.deps.clock.now() },
      );
      this.deps.metrics.add('TokenRecovered', 1);
      this.deps.logger.info('user token recovered', { externalId, previousStatus: record.status, accessTokenExpiresAt: expiresAt });
      return { externalId, result: 'recovered', previousStatus: record.status, accessTokenExpiresAt: expiresAt, changed: true };
    });
  }

  /**
   * Marks the record `revoked` (out of the due index: never refreshed, never exported again), then
   * expires the user's tokens at the service. In that order: done the other way, a crash or a
   * failed write between the two left an `active` record holding tokens the service had killed,
   * and the next scheduled refresh "recovered" it through retrieve, undoing the revocation. A
   * service call that fails after the mark is a RevocationIncompleteError, and revoking again
   * expires again (so `already_revoked` still calls the service). When the service does not know
   * the stored refresh token (invalid_grant), a fresh pair is retrieved and expired instead:
   * expire kills all of the user's tokens, so no pair issued by a lost response survives.
   */
  async revoke(externalId: string): Promise<RevokeResult> {
    const owner = this.newOwner();
    const record = await this.lease(externalId, owner);
    const already = record.status === 'revoked';
    await this.underLease(externalId, owner, async () => {
      if (already) await this.deps.store.releaseLease(externalId, owner);
      else
        await this.deps.store.markStatus(
          externalId,
          { status: 'revoked' },
          { expectedVersion: record.version, owner, now: this.deps.clock.now() },
        );
    });
    try {
      await this.expireAtService(record);
    } catch (error) {
      this.deps.logger.error('user revoked here; the service did not confirm the expiry', { externalId, ...loggedFailure(error) });
      throw new RevocationIncompleteError(externalId, error);
    }
    if (already) return { externalId, result: 'already_revoked' };
    this.deps.metrics.add('UserRevoked', 1);
    this.deps.logger.info('user revoked', { externalId, previousStatus: record.status });
    return { externalId, result: 'revoked' };
  }

  /**
   * saveTokens, tried again while the lease lasts. Once the service has rotated the refresh token,
   * this pair is the only one that works: dropped on a transient store error (throttling past the
   * SDK's own retries), the spent token would be sent next time, which the service takes for reuse
   * and answers by killing the user's tokens (decision 14). A VersionConflictError is final: the
   * lease is gone.
   */
  private async saveWhileLeased(record: TokenRecord, owner: string, tokens: Parameters<TokenStore['saveTokens']>[1]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.deps.store.saveTokens(record.externalId, tokens, { expectedVersion: record.version, owner, now: this.deps.clock.now() });
        return;
      } catch (error) {
        if (error instanceof VersionConflictError) throw error;
        const delayMs = SAVE_RETRY_BASE_MS * 2 ** (attempt - 1);
        const leaseLeftMs = (record.leaseUntil ?? 0) - this.deps.clock.now();
        if (attempt >= SAVE_ATTEMPTS || leaseLeftMs < delayMs + SAVE_RETRY_RESERVE_MS) {
          this.deps.logger.error('new token pair not stored; the user recovers through retrieve next time', {
            externalId: record.externalId,
            attempts: attempt,
            ...loggedFailure(error),
          });
          throw error;
        }
        this.deps.logger.warn('new token pair not stored yet; trying again while the lease lasts', {
          externalId: record.externalId,
          attempt,
          ...loggedFailure(error),
        });
        await this.deps.clock.sleep(delayMs);
      }
    }
  }

  private async expireAtService(record: TokenRecord): Promise<void> {
    try {
      return await this.expire(record, record.refreshToken);
    } catch (error) {
      // The stored refresh token refused (4xx `invalid_grant`) or answered with a 2xx "not expired"
      // (a rotated or blacklisted token): either way it is no handle on the user's tokens any more,
      // and asking with it again would fail the same way on every revoke. A fresh pair is one.
      if (!(error instanceof InvalidGrantError) && !(error instanceof ExpiryNotConfirmedError)) throw error;
    }
    let fresh: TokenPair;
    try {
      fresh = await this.retrieve(record);
    } catch (error) {
      // The service does not know the user at all: no token of it can work anywhere.
      if (error instanceof NotFoundError) return;
      throw error;
    }
    await this.expire(record, fresh.refreshToken);
  }

  /** A 2xx whose body says "not expired" leaves the tokens working: not a confirmation (token-verdicts.ts). */
  private async expire(record: TokenRecord, refreshToken: string): Promise<void> {
    const { expired } = await this.deps.institution.expireToken(refreshToken);
    if (!expired) throw new ExpiryNotConfirmedError(record.externalId);
  }

  // ------------------------------------------------------------------ helpers

  private retrieve(record: TokenRecord): Promise<TokenPair> {
    return this.deps.institution.retrieveToken({ username: record.username, email: record.email, externalId: record.externalId });
  }

  /** The lease for a runbook operation, which cannot skip the user: busy is an error. */
  private async lease(externalId: string, owner: string): Promise<TokenRecord> {
    const now = this.deps.clock.now();
    const record = await this.deps.store.acquireLease(externalId, owner, now + this.settings.leaseMs, now);
    if (!record) throw new TokenBusyError(externalId);
    return record;
  }

  /**
   * Runs `work` under `owner`'s lease; if it throws, the lease is released so that the next attempt
   * need not wait for it to run out (a successful saveTokens or markStatus has ended it already).
   */
  private async underLease<R>(externalId: string, owner: string, work: () => Promise<R>): Promise<R> {
    try {
      return await work();
    } catch (error) {
      await this.deps.store.releaseLease(externalId, owner).catch((releaseError: unknown) => {
        this.deps.logger.warn('lease not released; it runs out on its own', { externalId, ...loggedFailure(releaseError) });
      });
      throw error;
    }
  }

  private newOwner(): string {
    return `${this.ownerPrefix}:${randomUUID()}`;
  }

  private count(result: RefreshResult): void {
    this.deps.metrics.add(RESULT_METRIC[result], 1);
  }
}

/** An error's message for another message; the client's messages are redacted already. */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
