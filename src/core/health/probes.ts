import type { AccountingClient } from '../accounting-api';
import type { InstitutionCredential } from '../credentials/institution-credential';
import { PROBES, type HealthProbe } from './check-health';

/** A value that is not a token: the service answers `valid: false`, which is all we need to hear. */
export const PROBE_TOKEN = 'acctops-health-check';

/**
 * The institution credential can be read from its store and has the expected form. Pass a
 * source that reads afresh (a CachedSecret with no TTL): a health check must not answer from a
 * cache.
 */
export function institutionCredentialProbe(source: { get(): Promise<InstitutionCredential> }): HealthProbe {
  return {
    name: PROBES.institutionCredential,
    check: async () => `institution ${(await source.get()).institutionId}`,
  };
}

/**
 * The service answers an institution operation with our credential. Token verify changes nothing
 * at the service and is safe to repeat; an unknown token is `valid: false` (a 200 saying so, or a
 * refusal about the token such as simplejwt's 401 `token_not_valid`: the client reads both as the
 * verdict), while a refused credential, a 5xx or a connection failure is the client's typed error.
 * Reading a token refusal as a credential refusal here would page on-call for nothing.
 */
export function serviceReachableProbe(client: Pick<AccountingClient, 'institution'>): HealthProbe {
  return {
    name: PROBES.service,
    check: async () => {
      await client.institution.verifyToken(PROBE_TOKEN);
      return 'institution token verify answered';
    },
  };
}
