import {
  CompanyRegistry,
  RegistryItemInvalidError,
  type CompanyRegistryOptions,
  type RegisteredCompany,
  type RegistryTable,
} from '../../src/core/companies/company-registry';
import { CompanyEntryDamagedError } from '../errors';

/**
 * The CLI's company registry: an entry that fails its schema, read for a company a command names
 * (`get`, and so `add`, `remove`, `restore`, `keys install`, `companyKeyOf`), is that command's
 * configuration error with the repair of its mode (CompanyEntryDamagedError, exit 3), not a
 * validation error of an argument. Pages still skip such entries with a finding, as the planner does.
 */
export class NamedCompanyRegistry extends CompanyRegistry {
  constructor(
    table: RegistryTable,
    options: CompanyRegistryOptions,
    private readonly mode: 'local' | 'aws',
  ) {
    super(table, options);
  }

  override async get(companyId: string): Promise<RegisteredCompany | null> {
    try {
      return await super.get(companyId);
    } catch (error) {
      if (error instanceof RegistryItemInvalidError) throw new CompanyEntryDamagedError(companyId.toLowerCase(), error.issues, this.mode);
      throw error;
    }
  }
}
