import * as z from 'zod';
import { REGISTRY_TABLE } from '../../../contract/tables';
import { CURRENCY_CODE_EXPECTED, isoCurrencyCode } from '../../../contract/currency';
import { FORMATS, type ExportFormat } from '../exports/formats/datasets';
import { AcctopsError, issuesFromZod, parseWith, ValidationError, type FieldIssue } from '../shared/errors';
import type { Logger } from '../shared/logger';
import { lazySchema } from '../shared/lazy-schema';

/**
 * The company registry (issue 15, docs/fleet.md): the companies a stage
 * exports and rotates keys for, added and removed at run time by `acctops companies`, not by a
 * deploy. DynamoDB in AWS (one item per company), a JSON file in local mode.
 *
 * The registry is read a page at a time so that a planner's memory and time grow with one page,
 * never with the fleet. An item that fails its schema (written by hand, by an older or newer
 * version) is skipped with a finding that names its fields, never its values: one bad item must not
 * stop a month's exports for every other company.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Secrets Manager accepts rotation every 1 to 1000 days. */
export const ROTATION_DAYS = { min: 1, max: 1000 } as const;
export const DEFAULT_REGISTRY_PAGE = 500;
export const MAX_REGISTRY_PAGE = 1000;

export const companyIdSchema = /* @__PURE__ */ lazySchema(() => z.string().regex(UUID, 'expected a lower-case UUID'));

/**
 * How a registered `defaultCurrency` is read: by its shape only. `add` checked it against Intl's
 * list, and an entry must not become unreadable on a runtime whose ICU lists fewer codes.
 */
export const REGISTERED_CURRENCY = /^[A-Z]{3}$/;
export const REGISTERED_CURRENCY_EXPECTED = 'expected an ISO 4217 currency code in upper case';

/**
 * One registry item. Unknown attributes are tolerated (a newer version may add some); `companyId`
 * must already be lower case, since it is the table's key and two spellings would be two items.
 */
export const registeredCompanySchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    companyId: companyIdSchema,
    formats: z.array(z.enum(FORMATS)).min(1).max(FORMATS.length),
    /** Days between automatic key rotations; absent: the stage's `apiKeys.rotationDays`. */
    rotationDays: z.int().min(ROTATION_DAYS.min).max(ROTATION_DAYS.max).optional(),
    /**
     * The currency of the transactions the service sends without one (docs/exports.md, "A
     * transaction's currency"); absent (items from before it, or never set): EUR, DEFAULT_CURRENCY.
     * Read by its shape (REGISTERED_CURRENCY), as the export worker reads it (registryCurrency).
     */
    // null as absent: `companies list --json` prints a company without one as null, and a tool that
    // writes that JSON back must not break the company.
    defaultCurrency: z
      .string()
      .regex(REGISTERED_CURRENCY, REGISTERED_CURRENCY_EXPECTED)
      .nullish()
      .transform((code) => code ?? undefined)
      .optional(),
    /** Absent on an item the stack seeded from the stage config (a deploy knows no time to write). */
    addedAt: z.iso.datetime({ offset: true }).optional(),
    /** Set by `companies remove`: exports and rotation stop; the item stays as the record of it. */
    removedAt: z.iso.datetime({ offset: true }).optional(),
    /**
     * Set by `companies remove` once it has scheduled the key secret's deletion: DeleteSecret's
     * answer, which nothing else keeps (DescribeSecret's DeletedDate is when the deletion was asked,
     * not when it happens), so that a second `remove` can say when the key goes. Dropped when the
     * company comes back.
     */
    keyDeletion: z.object({ deletionDate: z.iso.datetime({ offset: true }), recoveryWindowDays: z.int().min(1) }).optional(),
    /**
     * Set by `companies remove --revoke-keys` once it has revoked every key of the company at the
     * service, by prefix and id (never a key): once the key secret is scheduled for deletion nothing
     * can read them again, so a repeat of that remove reports them from here instead of refusing.
     * Dropped when the company comes back.
     */
    keysRevoked: z
      .object({
        revokedAt: z.iso.datetime({ offset: true }),
        current: z.object({ keyPrefix: z.string().min(1), apiKeyId: z.string().min(1) }),
        older: z.array(z.object({ keyPrefix: z.string().min(1), apiKeyId: z.string().min(1) })),
      })
      .optional(),
    updatedAt: z.iso.datetime({ offset: true }).optional(),
    /** `stage-config`: written once by the stack from cdk.json `companies` (lib/constructs/company-registry.ts). */
    seededFrom: z.literal('stage-config').optional(),
  }),
);
export type RegisteredCompany = z.output<typeof registeredCompanySchema>;

/** An item the registry skipped; what `acctops doctor` and the planner's log report. */
export interface RegistryFinding {
  /** The item's key when it is a well-formed id, else a placeholder: the key itself may be the fault. */
  key: string;
  /**
   * 1-based place of the entry in the scan (from the start when read through `pages`, within the
   * page from `listPage`): the only way to point at an entry whose key is itself malformed.
   */
  position: number;
  issues: FieldIssue[];
}

export interface RegistryPage {
  items: RegisteredCompany[];
  skipped: RegistryFinding[];
  nextCursor: string | null;
}

/**
 * The storage under the registry: raw items by key, and the table a page at a time. Adapters hold
 * no rules; `CompanyRegistry` parses and decides, so that DynamoDB and the local file agree.
 */
export interface RegistryTable {
  getItem(companyId: string): Promise<unknown>;
  /**
   * Writes the item. With `expected`, only over the entry as it was read (`null`: none), else
   * RegistryChangedError: another command wrote the company in between (decision 109). Without it,
   * unconditionally (seeding, tests).
   */
  putItem(item: RegisteredCompany, expected?: RegisteredCompany | null): Promise<void>;
  /** Up to `limit` raw items after `cursor` (an opaque string the table returned), and the next cursor. */
  scanPage(request: { cursor: string | null; limit: number }): Promise<{ items: unknown[]; nextCursor: string | null }>;
}

/**
 * The company's entry changed between a command's read and its write (another operator's command):
 * nothing was written. CompanyRegistry reads it again and decides on what it finds.
 */
export class RegistryChangedError extends AcctopsError {
  override readonly name: string = 'RegistryChangedError';
  readonly companyId: string;

  constructor(companyId: string, cause?: unknown) {
    super(`company ${companyId}'s registry entry was changed by another command while this one wrote it; run it again`, {
      code: 'registry_changed',
      cause,
    });
    this.companyId = companyId;
  }
}

/** What a conditional write compares: an entry written by acctops changes `updatedAt` on every write, a removal `removedAt`. */
export function registryVersionOf(item: RegisteredCompany): { updatedAt?: string; removedAt?: string } {
  return {
    ...(item.updatedAt !== undefined ? { updatedAt: item.updatedAt } : {}),
    ...(item.removedAt !== undefined ? { removedAt: item.removedAt } : {}),
  };
}

/** Whether a raw stored item is still the entry `expected` (null: none) by what a conditional write compares. */
export function sameRegistryVersion(raw: unknown, expected: RegisteredCompany | null): boolean {
  if (raw === undefined || raw === null) return expected === null;
  if (expected === null) return false;
  const item = raw as { updatedAt?: unknown; removedAt?: unknown };
  const version = registryVersionOf(expected);
  return item.updatedAt === version.updatedAt && item.removedAt === version.removedAt;
}

/** Reads and writes of one company tried again on RegistryChangedError: each attempt decides on a fresh read. */
const WRITE_ATTEMPTS = 5;

export class CompanyNotRegisteredError extends AcctopsError {
  override readonly name: string = 'CompanyNotRegisteredError';
  readonly companyId: string;

  constructor(companyId: string) {
    super(`company ${companyId} is not in the registry`, { code: 'company_not_registered' });
    this.companyId = companyId;
  }
}

/** A registry item exists but fails its schema: `get` and `remove` will not act on it. */
export class RegistryItemInvalidError extends ValidationError {
  override readonly name: string = 'RegistryItemInvalidError';
  constructor(finding: RegistryFinding) {
    super(`company registry item ${finding.key}`, finding.issues);
    Object.defineProperty(this, 'code', { value: 'registry_item_invalid' });
  }
}

export interface AddCompanyInput {
  companyId: string;
  /** Absent: the formats of an existing entry, or `defaults.formats` for a new one. */
  formats?: readonly ExportFormat[];
  rotationDays?: number;
  /** ISO 4217 code (any case); absent: the existing entry's, or none (EUR). */
  defaultCurrency?: string;
}

export type AddResult = 'added' | 'unchanged' | 'updated' | 'readded';
export type RemoveResult = 'removed' | 'already_removed';

export interface CompanyRegistryOptions {
  /** Formats of a company added without `formats` (the stage's `exports.formats`). */
  defaultFormats: readonly ExportFormat[];
  logger?: Logger;
}

const addInputSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    companyId: z
      .string()
      .transform((s) => s.toLowerCase())
      .pipe(companyIdSchema),
    formats: z.array(z.enum(FORMATS)).min(1).max(FORMATS.length).optional(),
    rotationDays: z.int().min(ROTATION_DAYS.min).max(ROTATION_DAYS.max).optional(),
    // Checked by `add` itself (isoCurrencyCode): this schema is in every bundle that reads the registry.
    defaultCurrency: z.string().optional(),
  }),
);

export class CompanyRegistry {
  private readonly defaultFormats: ExportFormat[];

  constructor(
    private readonly table: RegistryTable,
    private readonly options: CompanyRegistryOptions,
  ) {
    this.defaultFormats = [...new Set(options.defaultFormats)];
    if (this.defaultFormats.length === 0)
      throw new ValidationError('company registry options', [{ path: 'defaultFormats', message: 'expected at least one format' }]);
  }

  /** The company, removed or not; null when it was never added. Throws on an item that fails its schema. */
  async get(companyId: string): Promise<RegisteredCompany | null> {
    const id = parseWith(companyIdSchema, companyId.toLowerCase(), 'company id');
    const raw = await this.table.getItem(id);
    if (raw === undefined || raw === null) return null;
    const parsed = parseItem(raw, 1);
    if ('finding' in parsed) throw new RegistryItemInvalidError(parsed.finding);
    return parsed.company;
  }

  /**
   * Idempotent: adding an active company with the same settings changes nothing; with other
   * settings it updates them; a removed company comes back (`readded`) with its first `addedAt`.
   * Two concurrent adds of one company both succeed, the last one's settings stay.
   */
  async add(input: AddCompanyInput, now: number): Promise<{ result: AddResult; company: RegisteredCompany }> {
    const { companyId, formats, rotationDays, defaultCurrency: currency } = parseWith(addInputSchema, input, 'companies add');
    // The rule of `acctops export --default-currency`: an ISO 4217 code the runtime's Intl lists, upper-cased.
    const defaultCurrency = currency === undefined ? undefined : isoCurrencyCode(currency);
    if (currency !== undefined && defaultCurrency === undefined)
      throw new ValidationError('companies add', [{ path: 'defaultCurrency', message: CURRENCY_CODE_EXPECTED }]);
    return this.untilUnchanged(companyId, () => this.addOnce({ companyId, formats, rotationDays, defaultCurrency }, now));
  }

  private async addOnce(
    input: { companyId: string; formats?: readonly ExportFormat[]; rotationDays?: number; defaultCurrency?: string },
    now: number,
  ): Promise<{ result: AddResult; company: RegisteredCompany }> {
    const { companyId, formats, rotationDays, defaultCurrency } = input;
    const existing = await this.get(companyId);
    const at = new Date(now).toISOString();
    const next: RegisteredCompany = {
      companyId,
      formats: formats ? [...new Set(formats)] : (existing?.formats ?? this.defaultFormats),
      ...(rotationDays !== undefined
        ? { rotationDays }
        : existing?.rotationDays !== undefined
          ? { rotationDays: existing.rotationDays }
          : {}),
      ...(defaultCurrency !== undefined
        ? { defaultCurrency }
        : existing?.defaultCurrency !== undefined
          ? { defaultCurrency: existing.defaultCurrency }
          : {}),
      addedAt: existing?.addedAt ?? at,
      updatedAt: at,
      ...(existing?.seededFrom ? { seededFrom: existing.seededFrom } : {}),
    };
    let result: AddResult;
    if (!existing) result = 'added';
    else if (existing.removedAt !== undefined) result = 'readded';
    else if (sameSettings(existing, next)) return { result: 'unchanged', company: existing };
    else result = 'updated';
    await this.table.putItem(next, existing);
    return { result, company: next };
  }

  /**
   * Runs a read-and-write of one company again when another command wrote it in between: two
   * operators' `add` and `remove` of one company, or a restore during a removal's key deletion,
   * each lost the other's write (decision 109).
   */
  private async untilUnchanged<R>(companyId: string, attempt: () => Promise<R>): Promise<R> {
    for (let n = 1; ; n++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof RegistryChangedError) || n >= WRITE_ATTEMPTS) throw error;
        this.options.logger?.info('company registry entry changed by another command meanwhile; reading it again', {
          companyId,
          attempt: n,
        });
      }
    }
  }

  /** Marks the company removed: the planner and rotation skip it from now on. CompanyNotRegisteredError if it was never added. */
  async remove(companyId: string, now: number): Promise<{ result: RemoveResult; company: RegisteredCompany }> {
    return this.untilUnchanged(companyId, async () => {
      const existing = await this.get(companyId);
      if (!existing) throw new CompanyNotRegisteredError(companyId.toLowerCase());
      if (existing.removedAt !== undefined) return { result: 'already_removed' as const, company: existing };
      const at = new Date(now).toISOString();
      const company: RegisteredCompany = { ...existing, removedAt: at, updatedAt: at };
      await this.table.putItem(company, existing);
      return { result: 'removed' as const, company };
    });
  }

  /**
   * Records when the removed company's key secret is deleted for good (RegisteredCompany.keyDeletion).
   * Nothing happens when the company is not removed (a restore came in between): the record would be
   * about a deletion that no longer stands.
   */
  async recordKeyDeletion(companyId: string, keyDeletion: NonNullable<RegisteredCompany['keyDeletion']>, now: number): Promise<void> {
    await this.untilUnchanged(companyId, async () => {
      const existing = await this.get(companyId);
      if (existing?.removedAt === undefined) return;
      await this.table.putItem({ ...existing, keyDeletion, updatedAt: new Date(now).toISOString() }, existing);
    });
  }

  /**
   * Records the keys `companies remove --revoke-keys` revoked (RegisteredCompany.keysRevoked). As for
   * recordKeyDeletion, nothing happens when the company is not removed.
   */
  async recordKeysRevoked(companyId: string, keysRevoked: NonNullable<RegisteredCompany['keysRevoked']>, now: number): Promise<void> {
    const existing = await this.get(companyId);
    if (existing?.removedAt === undefined) return;
    await this.table.putItem({ ...existing, keysRevoked, updatedAt: new Date(now).toISOString() });
  }

  /** One page of the registry, removed companies included; bad items are skipped, logged and returned as findings. */
  async listPage(request: { cursor?: string | null; limit?: number } = {}): Promise<RegistryPage> {
    const limit = request.limit ?? DEFAULT_REGISTRY_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_REGISTRY_PAGE) {
      throw new ValidationError('registry page request', [
        { path: 'limit', message: `expected an integer from 1 to ${MAX_REGISTRY_PAGE}` },
      ]);
    }
    const page = await this.table.scanPage({ cursor: request.cursor ?? null, limit });
    const items: RegisteredCompany[] = [];
    const skipped: RegistryFinding[] = [];
    for (const [index, raw] of page.items.entries()) {
      const parsed = parseItem(raw, index + 1);
      if ('company' in parsed) items.push(parsed.company);
      else skipped.push(parsed.finding);
    }
    for (const finding of skipped) {
      this.options.logger?.warn('company registry item skipped: it fails its schema', { key: finding.key, issues: finding.issues });
    }
    return { items, skipped, nextCursor: page.nextCursor };
  }

  /** The registry a page at a time, from the start. */
  async *pages(limit: number = DEFAULT_REGISTRY_PAGE): AsyncGenerator<RegistryPage> {
    let cursor: string | null = null;
    let before = 0;
    do {
      const page: RegistryPage = await this.listPage({ cursor, limit });
      yield { ...page, skipped: page.skipped.map((f) => ({ ...f, position: before + f.position })) };
      before += page.items.length + page.skipped.length;
      cursor = page.nextCursor;
    } while (cursor !== null);
  }
}

/** The companies that are active (not removed), a page at a time: what planners iterate. */
export async function* activeCompanyPages(registry: Pick<CompanyRegistry, 'pages'>, limit?: number): AsyncGenerator<RegistryPage> {
  for await (const page of registry.pages(limit)) {
    yield { ...page, items: page.items.filter((c) => c.removedAt === undefined) };
  }
}

function sameSettings(a: RegisteredCompany, b: RegisteredCompany): boolean {
  return (
    a.rotationDays === b.rotationDays &&
    a.defaultCurrency === b.defaultCurrency &&
    a.formats.length === b.formats.length &&
    a.formats.every((f) => b.formats.includes(f))
  );
}

function parseItem(raw: unknown, position: number): { company: RegisteredCompany } | { finding: RegistryFinding } {
  const result = registeredCompanySchema.safeParse(raw);
  if (result.success) return { company: result.data };
  const rawKey = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).companyId : undefined;
  // Only a well-formed id is repeated: a malformed key could be anything, a pasted key included.
  const key = typeof rawKey === 'string' && UUID.test(rawKey.toLowerCase()) ? rawKey.toLowerCase() : '(malformed key)';
  return { finding: { key, position, issues: issuesFromZod(result.error) } };
}

/** The registry table's shape, shared with the CDK construct (contract/tables.ts). */
export { REGISTRY_TABLE };
