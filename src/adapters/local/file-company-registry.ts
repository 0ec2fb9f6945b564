import * as z from 'zod';
import {
  RegistryChangedError,
  sameRegistryVersion,
  type RegisteredCompany,
  type RegistryTable,
} from '../../core/companies/company-registry';
import { decodeCursor, encodeCursor } from '../../core/tokens/token-transitions';
import { readJsonFile, writePrivateJsonFile } from './private-json-file';
import { lazySchema } from '../../core/shared/lazy-schema';

const cursorSchema = /* @__PURE__ */ lazySchema(() => z.object({ after: z.string().min(1) }));

/**
 * Raw items are kept as they were written: the registry, not the table, decides whether an item
 * is valid, so a hand-edited bad item reaches the registry's findings as it would from DynamoDB.
 */
const fileSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    format: z.literal('acctops.company-registry'),
    formatVersion: z.literal(1),
    items: z.record(z.string(), z.unknown()),
  }),
);

/** Pages in key order after a cursor, as DynamoDB's Scan does (in its own order). */
function pageOf(items: Record<string, unknown>, request: { cursor: string | null; limit: number }) {
  const after = request.cursor === null ? null : decodeCursor(cursorSchema, request.cursor).after;
  const keys = Object.keys(items)
    .sort()
    .filter((k) => after === null || k > after);
  const taken = keys.slice(0, request.limit);
  const nextCursor = keys.length > request.limit ? encodeCursor({ after: taken[taken.length - 1] }) : null;
  return { items: taken.map((k) => items[k]), nextCursor };
}

/** The registry table of tests and benchmarks. `items` is exposed so a test can plant a bad one. */
export class MemoryRegistryTable implements RegistryTable {
  readonly items: Record<string, unknown> = {};

  getItem(companyId: string): Promise<unknown> {
    return Promise.resolve(this.items[companyId] ?? null);
  }

  putItem(item: RegisteredCompany, expected?: RegisteredCompany | null): Promise<void> {
    if (expected !== undefined && !sameRegistryVersion(this.items[item.companyId], expected))
      return Promise.reject(new RegistryChangedError(item.companyId));
    this.items[item.companyId] = structuredClone(item);
    return Promise.resolve();
  }

  scanPage(request: { cursor: string | null; limit: number }): Promise<{ items: unknown[]; nextCursor: string | null }> {
    return Promise.resolve(pageOf(this.items, request));
  }
}

/**
 * The registry table of the local mode: `<stateDir>/companies.json`, replaced atomically on each
 * write (the state directory is locked to one command at a time, so read-modify-write is safe).
 */
export class FileRegistryTable implements RegistryTable {
  constructor(private readonly options: { path: string }) {}

  private async read(): Promise<Record<string, unknown>> {
    const file = await readJsonFile(this.options.path, fileSchema, 'company registry file');
    return file?.items ?? {};
  }

  async getItem(companyId: string): Promise<unknown> {
    return (await this.read())[companyId] ?? null;
  }

  async putItem(item: RegisteredCompany, expected?: RegisteredCompany | null): Promise<void> {
    const items = await this.read();
    // The state lock makes this command the file's only writer; checked all the same, as DynamoDB checks it.
    if (expected !== undefined && !sameRegistryVersion(items[item.companyId], expected)) throw new RegistryChangedError(item.companyId);
    items[item.companyId] = item;
    await writePrivateJsonFile(this.options.path, { format: 'acctops.company-registry', formatVersion: 1, items }, { pretty: true });
  }

  async scanPage(request: { cursor: string | null; limit: number }): Promise<{ items: unknown[]; nextCursor: string | null }> {
    return pageOf(await this.read(), request);
  }

  /** Every raw item by its key in the file: what `acctops local repair` judges with the registry's schema. */
  rawItems(): Promise<Record<string, unknown>> {
    return this.read();
  }

  /** Drops the items of these keys (`acctops local repair`, once it has kept them elsewhere). */
  async deleteItems(keys: readonly string[]): Promise<void> {
    const items = await this.read();
    for (const key of keys) delete items[key];
    await writePrivateJsonFile(this.options.path, { format: 'acctops.company-registry', formatVersion: 1, items }, { pretty: true });
  }
}
