import { registeredCompanySchema } from '../../companies/company-registry';
import type { CompanyRemovedAt } from '../../companies/company-removal';
import { issuesFromZod } from '../../shared/errors';
import { CompanyEntryDamagedExportError } from './pipeline-errors';

/**
 * The export worker's reading of a company's registry entry before it exports: the entry's
 * `removedAt`, like registryRemovedAt, but only from an entry that passes the registry's whole
 * schema. An entry that fails it on any field (`rotationDays: "thirty"`) is refused with
 * CompanyEntryDamagedExportError: the planner skips such an entry and the CLI refuses it
 * (decision 86), so an `ExportRequested` from another producer must not export it either; a
 * `removedAt` beside a damaged field cannot be trusted to be the whole story. No entry (a company
 * reached through a user only) is not refused, as before. The rotation function keeps
 * registryRemovedAt: its bundle carries no registry schema.
 */
export function registryExportStanding(getItem: (companyId: string) => Promise<unknown>): CompanyRemovedAt {
  return async (companyId) => {
    const key = companyId.toLowerCase();
    const entry = await getItem(key);
    if (entry === undefined || entry === null) return undefined;
    const parsed = registeredCompanySchema.safeParse(entry);
    if (!parsed.success) throw new CompanyEntryDamagedExportError(key, issuesFromZod(parsed.error));
    return parsed.data.removedAt;
  };
}
