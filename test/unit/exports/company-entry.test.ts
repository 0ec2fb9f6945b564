import { MemoryRegistryTable } from '../../../src/adapters/local/file-company-registry';
import { CompanyRegistry, type RegisteredCompany } from '../../../src/core/companies/company-registry';
import { registryExportStanding } from '../../../src/core/exports/pipeline/company-entry';
import { isRetryableExportFailure } from '../../../src/core/exports/pipeline/export-company-period';
import { CompanyEntryDamagedExportError } from '../../../src/core/exports/pipeline/pipeline-errors';

const ACTIVE = 'aaaaaaaa-0000-4000-8000-000000000001';
const REMOVED = 'bbbbbbbb-0000-4000-8000-000000000002';
const DAMAGED = 'cccccccc-0000-4000-8000-000000000003';
const UNKNOWN = 'dddddddd-0000-4000-8000-000000000004';
// What a hand edit may paste into a field; the error must never repeat it.
const PASTED = 'sk_live_pasted_by_hand';

describe("registryExportStanding (the export worker's reading of a registry entry)", () => {
  async function setup() {
    const table = new MemoryRegistryTable();
    const registry = new CompanyRegistry(table, { defaultFormats: ['csv'] });
    await registry.add({ companyId: ACTIVE }, 0);
    await registry.add({ companyId: REMOVED }, 0);
    await registry.remove(REMOVED, Date.UTC(2026, 9, 3));
    // removedAt and defaultCurrency are readable: only the whole schema finds the fault.
    await table.putItem({
      companyId: DAMAGED,
      formats: ['csv'],
      rotationDays: PASTED,
      defaultCurrency: 'EUR',
    } as unknown as RegisteredCompany);
    return registryExportStanding((id) => table.getItem(id));
  }

  it('answers removedAt for a readable entry and nothing for an active or unregistered company', async () => {
    const standing = await setup();
    await expect(standing(ACTIVE)).resolves.toBeUndefined();
    await expect(standing(UNKNOWN)).resolves.toBeUndefined();
    await expect(standing(REMOVED.toUpperCase())).resolves.toBe('2026-10-03T00:00:00.000Z');
  });

  it('refuses an entry that fails its schema on any field, naming the company and the field, never the value, not retryable', async () => {
    const standing = await setup();
    const error = await standing(DAMAGED.toUpperCase()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompanyEntryDamagedExportError);
    expect(error).toMatchObject({ name: 'CompanyEntryDamagedExportError', code: 'company_entry_damaged', companyId: DAMAGED });
    const damaged = error as CompanyEntryDamagedExportError;
    expect(damaged.issues.map((i) => i.path)).toEqual(['rotationDays']);
    expect(damaged.message).toContain(`company ${DAMAGED}`);
    expect(damaged.message).toContain('rotationDays');
    expect(damaged.message).toContain(`acctops companies add --company ${DAMAGED}`);
    expect(damaged.message).not.toContain(PASTED);
    expect(isRetryableExportFailure(damaged)).toBe(false);
  });
});
