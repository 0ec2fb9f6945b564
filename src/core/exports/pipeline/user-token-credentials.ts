import type { CredentialProvider } from '../../accounting-api';
import type { Clock } from '../../shared/clock';
import { type Logger, silentLogger } from '../../shared/logger';
import { registerSecret } from '../../shared/redact';
import type { TokenStore } from '../../tokens/token-store';
import { UserTokenUnavailableError } from './pipeline-errors';

export interface UserTokenCredentialsOptions {
  clock: Clock;
  /** The company the export acts for: sent as `X-Company-Id` and enforced as the client's scope. */
  companyId?: string;
  /**
   * Read the store again when the held token expires within this margin, instead of sending a
   * token the service is about to refuse.
   * @default 60 s
   */
  expirySkewMs?: number;
  logger?: Logger;
}

interface Held {
  accessToken: string;
  expiresAt: number;
}

/**
 * An institution user's access token as the accounting client's CredentialProvider, for exports
 * acting on the user's behalf. The token comes from the token store, which the refresh worker
 * keeps current; this provider never refreshes anything itself (that would race the worker's
 * single-flight refresh and rotate the refresh token under it).
 *
 * A long export can outlive its access token (30 minutes). Before expiry the provider re-reads the
 * store on its own; after a 401 it re-reads the store once for the refused token, and the request
 * is repeated only when the store holds a different token. A user that is revoked, in
 * needs_attention or unknown is a UserTokenUnavailableError.
 */
export function userTokenCredentials(
  store: Pick<TokenStore, 'get'>,
  externalId: string,
  options: UserTokenCredentialsOptions,
): CredentialProvider {
  const skew = options.expirySkewMs ?? 60_000;
  const logger = (options.logger ?? silentLogger).child({ externalId });
  let held: Held | undefined;
  /**
   * The one re-read of the store for a refused token, shared by every request that token had in
   * flight (a list has up to two); once settled, a later 401 with that token gets its answer again.
   */
  let reread: { refused: string; changed: Promise<boolean> } | undefined;

  const read = async (): Promise<Held> => {
    const record = await store.get(externalId);
    if (!record) throw new UserTokenUnavailableError(externalId, 'not_found');
    registerSecret(record.accessToken);
    if (record.status !== 'active') throw new UserTokenUnavailableError(externalId, record.status);
    return { accessToken: record.accessToken, expiresAt: record.accessTokenExpiresAt };
  };

  const rereadFor = async (refused: string): Promise<boolean> => {
    try {
      held = await read();
    } catch (error) {
      // The 401 is the error worth reporting; the store's answer goes to the log.
      logger.warn('token store re-read after an authentication error failed', { error });
      return false;
    }
    const changed = held.accessToken !== refused;
    logger.info('user token re-read from the store after an authentication error', { changed });
    return changed;
  };

  return {
    get: async () => {
      if (!held || held.expiresAt - skew <= options.clock.now()) held = await read();
      return { kind: 'accessToken', accessToken: held.accessToken, ...(options.companyId ? { companyId: options.companyId } : {}) };
    },
    onAuthenticationError: async (_error, credential) => {
      const refused = credential.kind === 'accessToken' ? credential.accessToken : held?.accessToken;
      if (refused === undefined) return false;
      // The store was re-read (or the token renewed) since this request went out: retry with that.
      if (held !== undefined && held.accessToken !== refused) return true;
      if (reread?.refused !== refused) reread = { refused, changed: rereadFor(refused) };
      return reread.changed;
    },
  };
}
