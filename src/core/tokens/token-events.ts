import type { DomainEvent } from '../ports/events';
import { describeFailure } from './token-failures';
import type { TokenRecord } from './token-store';

/** The EventBridge `source` of every token event. */
export const TOKEN_EVENT_SOURCE = 'acctops.tokens';

/** `detail-type`s of token events; rules and runbooks match on them. */
export const TOKEN_EVENT_TYPES = { refreshFailed: 'TokenRefreshFailed' } as const;

/**
 * A user could not be refreshed nor recovered and is now `needs_attention`: out of the schedule
 * until a runbook recovers it. The detail names the user by external_id and the failure by class
 * and codes; no token, no username or e-mail.
 */
export interface TokenRefreshFailedDetail {
  externalId: string;
  /** Class of the error that made the recovery fail, e.g. `NotFoundError`. */
  errorClass: string;
  errorCode?: string;
  /** The service's error code, e.g. `not_found`. */
  apiCode?: string;
  status?: number;
  requestId?: string;
  /** Class of the refresh failure that led to the recovery, e.g. `InvalidGrantError`. */
  refreshErrorClass: string;
  consecutiveFailures: number;
  /** ISO time the stored access token expires (it may still work until then). */
  accessTokenExpiresAt: string;
}

export function tokenRefreshFailed(
  record: Pick<TokenRecord, 'externalId' | 'consecutiveFailures' | 'accessTokenExpiresAt'>,
  failure: { retrieveError: unknown; refreshError: unknown },
  time: number,
): DomainEvent {
  const detail: TokenRefreshFailedDetail = {
    externalId: record.externalId,
    ...describeFailure(failure.retrieveError),
    refreshErrorClass: describeFailure(failure.refreshError).errorClass,
    consecutiveFailures: record.consecutiveFailures,
    accessTokenExpiresAt: new Date(record.accessTokenExpiresAt).toISOString(),
  };
  return { type: TOKEN_EVENT_TYPES.refreshFailed, time, detail: { ...detail } };
}
