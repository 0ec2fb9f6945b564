import { REGISTERED_CURRENCY, REGISTERED_CURRENCY_EXPECTED } from '../../companies/company-registry';
import { ValidationError } from '../../shared/errors';

/**
 * The currency of the transactions a company's service sends without one, as the company's
 * registry entry names it (`acctops companies add --default-currency`, docs/fleet.md); undefined
 * when it names none or the company is not registered (reached through a user only): then
 * DEFAULT_CURRENCY, EUR. Asked once per export, when it starts, so `companies add` takes effect
 * from the next export on.
 */
export type CompanyCurrency = (companyId: string) => Promise<string | undefined>;

/**
 * The registry's answer, from the raw entry (`getItem`: RegistryTable.getItem, or the DynamoDB
 * adapter's registryEntryReader). Only `defaultCurrency` is read, by the registry schema's rule,
 * not the whole entry through CompanyRegistry, whose class the export worker's bundle, near its
 * bound (BENCHMARKS.md), does without. The deployed worker refuses an entry that fails its schema
 * on any field before this is asked (registryExportStanding, company-entry.ts). A malformed
 * `defaultCurrency` throws a ValidationError naming the entry and the field (as
 * RegistryItemInvalidError would, without its class in the bundle): the currency cannot be known,
 * and labelling the month EUR might be the very mistake the entry was written to prevent; the
 * export fails naming the field, and is not retried.
 */
export function registryCurrency(getItem: (companyId: string) => Promise<unknown>): CompanyCurrency {
  return async (companyId) => {
    const key = companyId.toLowerCase();
    const entry = await getItem(key);
    if (typeof entry !== 'object' || entry === null) return undefined;
    const value = (entry as Record<string, unknown>).defaultCurrency;
    // null is absent, as `companies list --json` shows a company without one.
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'string' && REGISTERED_CURRENCY.test(value)) return value;
    // The field's path only, never its value (a hand edit may have pasted anything there).
    throw new ValidationError(`company registry item ${key}`, [{ path: 'defaultCurrency', message: REGISTERED_CURRENCY_EXPECTED }]);
  };
}
