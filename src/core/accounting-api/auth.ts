import { ConfigError } from '../shared/errors';
import { registerSecret } from '../shared/redact';
import { type AuthenticationError, MalformedApiKeyError } from './errors';

/**
 * Credentials come from a provider, asked before every request, so that a long operation (an
 * export of millions of rows, a rotation) picks up a rotated key or a changed institution secret
 * without being rebuilt.
 */
export type Credential =
  /** A company's API key; `companyId`, when known, scopes every request (see the README). */
  | { kind: 'apiKey'; apiKey: string; companyId?: string }
  /** A user's access token, obtained by an institution. */
  | { kind: 'accessToken'; accessToken: string; companyId?: string }
  /** The institution credential, for the five institution operations only. */
  | { kind: 'institution'; institutionId: string; secretKey: string };

export interface CredentialProvider {
  get(): Promise<Credential>;
  /**
   * Called once per request when the service answers 401, with the credential that request went
   * out with; not for a 401 that refuses the user rather than the credential (`refusesUser`). Resolve true after fetching a fresh credential (the next `get()` returns it): the
   * request is then sent once more. Resolve false (or omit the method) to raise the error. Several
   * requests may be refused at once (a list has up to two in flight): each is called.
   */
  onAuthenticationError?(error: AuthenticationError, refused: Credential): Promise<boolean>;
}

function fixed(credential: Credential): CredentialProvider {
  return { get: () => Promise.resolve(credential) };
}

export function apiKeyAuth(apiKey: string, options: { companyId?: string } = {}): CredentialProvider {
  return fixed({ kind: 'apiKey', apiKey, companyId: options.companyId });
}

export function accessTokenAuth(accessToken: string, options: { companyId?: string } = {}): CredentialProvider {
  return fixed({ kind: 'accessToken', accessToken, companyId: options.companyId });
}

export function institutionAuth(credential: { institutionId: string; secretKey: string }): CredentialProvider {
  return fixed({ kind: 'institution', institutionId: credential.institutionId, secretKey: credential.secretKey });
}

/** `<service prefix>_<rest>` (spec §5.1.1); printable ASCII so that it is a valid header value. */
const API_KEY = /^[A-Za-z0-9]+_[\x21-\x7e]+$/;

/** Whether `key` has the form apiKeyAuth accepts; a caller that read it from a setting can name the setting. */
export function isWellFormedApiKey(key: string): boolean {
  return API_KEY.test(key);
}
const TOKEN = /^[\x21-\x7e]+$/;
const INSTITUTION_ID = /^[\x21-\x39\x3b-\x7e]+$/; // no colon: it separates id and secret

export type AuthScheme = 'institution' | 'bearer';

/**
 * The authentication header for `credential`, refusing before anything is sent a credential of
 * the wrong kind or form. Every secret is registered with the redactor on the way.
 */
export function authHeader(credential: Credential, scheme: AuthScheme): [name: string, value: string] {
  if (scheme === 'institution') {
    if (credential.kind !== 'institution') {
      throw new ConfigError([{ path: 'credentials', message: 'institution operations need institutionAuth(...)' }]);
    }
    registerSecret(credential.secretKey);
    if (!INSTITUTION_ID.test(credential.institutionId)) {
      throw new ConfigError([{ path: 'institutionId', message: 'must be printable ASCII without spaces or ":"' }]);
    }
    if (!TOKEN.test(credential.secretKey)) {
      throw new ConfigError([{ path: 'secretKey', message: 'must be printable ASCII without spaces' }]);
    }
    const value = `${credential.institutionId}:${credential.secretKey}`;
    registerSecret(value);
    return ['institution', value];
  }
  if (credential.kind === 'institution') {
    throw new ConfigError([{ path: 'credentials', message: 'this operation needs apiKeyAuth(...) or accessTokenAuth(...)' }]);
  }
  if (credential.kind === 'apiKey') {
    registerSecret(credential.apiKey);
    if (!API_KEY.test(credential.apiKey)) throw new MalformedApiKeyError(undefined);
    return ['authorization', `Bearer ${credential.apiKey}`];
  }
  // The service issued it: a value too short or too common to be a token is not registered.
  registerSecret(credential.accessToken, { from: 'service' });
  if (!TOKEN.test(credential.accessToken)) {
    throw new ConfigError([{ path: 'accessToken', message: 'must be printable ASCII without spaces' }]);
  }
  return ['authorization', `Bearer ${credential.accessToken}`];
}
