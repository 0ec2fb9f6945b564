import type { CredentialProvider } from '../../accounting-api';
import type { Clock } from '../../shared/clock';
import type { Logger } from '../../shared/logger';
import { createExportClient, EXPORT_PAGE_SIZE, type ExportClientSettings } from './export-sources';

export interface ServiceCompanyIdDeps {
  baseUrl: string;
  client?: ExportClientSettings;
  credentials: CredentialProvider;
  clock: Clock;
  logger: Logger;
}

/**
 * The company's id as the service spells it, for its paths and `X-Company-Id` (spec §4.2 rule 1:
 * `{company_pk}` is the company's `publicId`, and a service may compare it exactly). Our own
 * records (object keys, the registry, the ledger, key secrets) hold the id in lower case
 * (docs/architecture.md, decision 68), so the spelling is read from `GET /companies/`, compared
 * without case. That request goes out without `X-Company-Id`: our spelling there could be refused.
 * A company the credential does not list keeps our spelling, and the service's own answer to the
 * request that names it is what the export reports.
 */
export async function serviceCompanyId(deps: ServiceCompanyIdDeps, companyId: string): Promise<string> {
  const client = createExportClient({
    ...deps.client,
    baseUrl: deps.baseUrl,
    credentials: deps.credentials,
    clock: deps.clock,
    logger: deps.logger,
  });
  const wanted = companyId.toLowerCase();
  // A credential that names another company is refused by the export's first request before it is
  // sent (CompanyMismatchError): asking the service anything with it first would be a request too many.
  const credential = await deps.credentials.get();
  const stated = credential.kind === 'institution' ? undefined : credential.companyId;
  if (stated !== undefined && stated.toLowerCase() !== wanted) return companyId;
  for await (const item of client.companies.list({ pageSize: EXPORT_PAGE_SIZE })) {
    if (item.parsed.publicId.toLowerCase() === wanted) return item.parsed.publicId;
  }
  return companyId;
}
