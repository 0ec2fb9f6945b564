import { type AccountingClientOptions, DataClient } from './data-client';
import { InstitutionResource } from './resources/institution';

export { type AccountingClientOptions, DEFAULT_MAX_RESPONSE_BYTES } from './data-client';

/**
 * The typed client of the Accounting API: the company-data operations (DataClient) and the
 * institution's user-token operations. One instance per credential; derive variants with
 * `withOptions` (another company, another credential) sharing transport and settings.
 */
export class AccountingClient extends DataClient {
  readonly institution: InstitutionResource = new InstitutionResource(this.engine);

  override withOptions(overrides: Partial<AccountingClientOptions>): AccountingClient {
    return new AccountingClient({ ...this.options, ...overrides });
  }
}

export function createAccountingClient(options: AccountingClientOptions): AccountingClient {
  return new AccountingClient(options);
}
