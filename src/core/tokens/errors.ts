import { AcctopsError } from '../shared/errors';

/** Base of the token use cases' own errors; `externalId` names the user (never a token). */
export class TokenLifecycleError extends AcctopsError {
  override readonly name: string = 'TokenLifecycleError';
  readonly externalId: string;

  constructor(message: string, options: { code: string; externalId: string; cause?: unknown }) {
    super(message, options);
    this.externalId = options.externalId;
  }
}

/** Someone else (a refresh worker, another runbook) holds the user's lease: try again shortly. */
export class TokenBusyError extends TokenLifecycleError {
  override readonly name: string = 'TokenBusyError';
  constructor(externalId: string) {
    super(`user ${externalId} is being worked on by someone else (lease held); try again in a few minutes`, {
      code: 'token_busy',
      externalId,
    });
  }
}

/** A recovery of a revoked user, which needs an explicit `reactivate`. */
export class UserRevokedError extends TokenLifecycleError {
  override readonly name: string = 'UserRevokedError';
  constructor(externalId: string) {
    super(`user ${externalId} is revoked; recover it with reactivate to bring it back`, { code: 'user_revoked', externalId });
  }
}

/**
 * Onboarding found a conflict it cannot resolve: the service has a user with this external_id or
 * username but not with all three of username, email and external_id, or the record acctops
 * holds names a different username or email.
 */
export class OnboardConflictError extends TokenLifecycleError {
  override readonly name: string = 'OnboardConflictError';
  constructor(externalId: string, detail: string, cause?: unknown) {
    super(`cannot onboard user ${externalId}: ${detail}`, { code: 'onboard_conflict', externalId, cause });
  }
}

/**
 * The service answered expire with a 2xx whose body says the tokens were not expired
 * (`expired: false`, `success: false`, a failed status): the cause of a RevocationIncompleteError.
 */
export class ExpiryNotConfirmedError extends TokenLifecycleError {
  override readonly name: string = 'ExpiryNotConfirmedError';
  constructor(externalId: string) {
    super(`the service answered the expire of user ${externalId}'s tokens, but its reply says they were not expired`, {
      code: 'expiry_not_confirmed',
      externalId,
    });
  }
}

/**
 * A revocation that took effect here (the record is `revoked`: never refreshed, never used for an
 * export) but that the service did not confirm: its tokens may still work there until they expire.
 * Revoking again finishes it.
 */
export class RevocationIncompleteError extends TokenLifecycleError {
  override readonly name: string = 'RevocationIncompleteError';
  constructor(externalId: string, cause: unknown) {
    super(`user ${externalId} is revoked here, but the service did not confirm expiring its tokens; revoke again to finish`, {
      code: 'revocation_incomplete',
      externalId,
      cause,
    });
  }
}
