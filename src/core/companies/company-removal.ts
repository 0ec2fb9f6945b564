import { ValidationError } from '../shared/errors';

/**
 * When the company registry says a company was removed (`acctops companies remove`): its entry's
 * `removedAt`; undefined when it is active or not registered at all (a company with a key secret
 * the registry never listed is not refused for that). Throws when the registry cannot be read, so
 * that a caller that must not act on a removed company can refuse rather than guess.
 */
export type CompanyRemovedAt = (companyId: string) => Promise<string | undefined>;

/**
 * The registry's answer from the raw entry (`getItem`: RegistryTable.getItem, or the DynamoDB
 * adapter's registryEntryReader), reading `removedAt` alone: the rotation function's bundle then
 * carries neither CompanyRegistry nor its schema, and a fault in another field does not hide a
 * removal (the export worker reads the whole entry instead: registryExportStanding). A
 * `removedAt` that is not a time is a ValidationError naming the field: the entry may well say
 * removed, and acting on it would be the mistake.
 */
export function registryRemovedAt(getItem: (companyId: string) => Promise<unknown>): CompanyRemovedAt {
  return async (companyId) => {
    const key = companyId.toLowerCase();
    return removedAtOf(key, await getItem(key));
  };
}

/**
 * A company's standing in the registry when something queued for it earlier is about to act:
 * `removed` (`companies remove` set `removedAt`; the item stays as the record of it), or
 * `not_registered` (no item: never added, or deleted by hand). Read from the raw entry as
 * registryRemovedAt reads it, with its rules: a `removedAt` that is not a time is a
 * ValidationError, and an unreadable registry throws.
 */
export type CompanyStanding = { state: 'active' } | { state: 'removed'; removedAt: string } | { state: 'not_registered' };

export function registryStanding(getItem: (companyId: string) => Promise<unknown>): (companyId: string) => Promise<CompanyStanding> {
  return async (companyId) => {
    const key = companyId.toLowerCase();
    const entry = await getItem(key);
    if (typeof entry !== 'object' || entry === null) return { state: 'not_registered' };
    const removedAt = removedAtOf(key, entry);
    return removedAt === undefined ? { state: 'active' } : { state: 'removed', removedAt };
  };
}

function removedAtOf(key: string, entry: unknown): string | undefined {
  if (typeof entry !== 'object' || entry === null) return undefined;
  const value = (entry as Record<string, unknown>).removedAt;
  // null is absent, as `companies list --json` shows an active company.
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && !Number.isNaN(Date.parse(value))) return value;
  // The field's path only, never its value.
  throw new ValidationError(`company registry item ${key}`, [{ path: 'removedAt', message: 'expected an ISO 8601 time' }]);
}
