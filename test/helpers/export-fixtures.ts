import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { categorySchema, taxReportSchema, transactionSchema } from '../../src/core/accounting-api';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import type { ExportCategory, ExportTaxReport, ExportTransaction } from '../../src/core/exports/formats/datasets';

/**
 * Items as the client's lists yield them: `raw` as the API sent it, `parsed` by the client's own
 * schemas (display labels mapped, amounts as bigint, absent fields null).
 */
export const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
export const CATEGORY_IDS = ['0a0a0a0a-0000-4000-8000-000000000001', '0a0a0a0a-0000-4000-8000-000000000002'];

export function category(i: number, name: string): ExportCategory {
  const raw = {
    publicId: CATEGORY_IDS[i] ?? `0a0a0a0a-0000-4000-8000-${String(i).padStart(12, '0')}`,
    name,
    parent: null,
    cashflowType: 'EXPENSE',
    vatApplied: 'YES',
    metadata: i === 1 ? '{not json' : '{"code":"4400"}',
    description: `Category ${name}`,
    examples: '',
  };
  return { raw, parsed: categorySchema.parse(raw) };
}

export const CATEGORIES = [category(0, 'Office supplies'), category(1, 'Travel')];

export interface TransactionShape {
  publicId?: string;
  amount?: number | string;
  currency?: string | null;
  cashflowType?: string | null;
  valueDate?: string;
  description?: string | null;
  category?: string | null;
}

/** One transaction; `amount` as the API sends it (integer minor units or a decimal string). */
export function transaction(i: number, shape: TransactionShape = {}): ExportTransaction {
  const amount = shape.amount ?? (i % 2 === 0 ? -(1000 + i * 7) : `${100 + i}.${String(i % 100).padStart(2, '0')}`);
  const raw: Record<string, unknown> = {
    publicId: shape.publicId ?? `7e57da7a-0000-4000-8000-${String(i).padStart(12, '0')}`,
    amount,
    currency: shape.currency === undefined ? 'EUR' : shape.currency,
    cashflowType: shape.cashflowType === undefined ? (typeof amount === 'number' && amount < 0 ? 'EXPENSE' : 'INCOME') : shape.cashflowType,
    valueDate: shape.valueDate ?? `2026-10-${String((i % 28) + 1).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:15:00+02:00`,
    description: shape.description === undefined ? `Payment ${i}` : shape.description,
    category: shape.category === undefined ? (CATEGORY_IDS[i % 3] ?? null) : shape.category,
    bankAccount: 'b0b0b0b0-0000-4000-8000-000000000001',
  };
  return { raw, parsed: transactionSchema.parse(raw) };
}

export function* transactions(count: number, shape: (i: number) => TransactionShape = () => ({})): Generator<ExportTransaction> {
  for (let i = 0; i < count; i++) yield transaction(i, shape(i));
}

export function taxReport(i: number, amountDue: number | string = 123456): ExportTaxReport {
  const raw = {
    pk: `3a3a3a3a-0000-4000-8000-${String(i).padStart(12, '0')}`,
    type: 'VAT_RETURN',
    periodStart: '2026-10-01',
    periodEnd: '2026-10-31',
    status: 'submitted',
    amountDue,
    currency: 'EUR',
    createdAt: '2026-11-02T10:00:00.123456+01:00',
  };
  return { raw, parsed: taxReportSchema.parse(raw) };
}

/** An async source, as the client's paginated iterators will be. */
export async function* asAsync<T>(items: Iterable<T>): AsyncGenerator<T> {
  for (const item of items) yield item;
}

/** A source that yields `count` items and then fails, as an API stream that gives up would. */
export async function* failingAfter<T>(
  items: Iterable<T>,
  count: number,
  error = new Error('upstream 503 after retries'),
): AsyncGenerator<T> {
  let n = 0;
  for (const item of items) {
    if (n++ === count) throw error;
    yield item;
  }
}

export async function listKeys(store: ObjectStore, prefix = ''): Promise<string[]> {
  const keys: string[] = [];
  for await (const object of store.list(prefix)) keys.push(object.key);
  return keys;
}

export async function sha256Of(store: ObjectStore, key: string): Promise<string> {
  const bytes = await store.get(key);
  if (!bytes) throw new Error(`missing ${key}`);
  return createHash('sha256').update(bytes).digest('hex');
}

/** Every object under `prefix` with its checksum: a snapshot to compare before and after. */
export async function snapshot(store: ObjectStore, prefix = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const key of await listKeys(store, prefix)) out[key] = await sha256Of(store, key);
  return out;
}

/** Decompressors for hyparquet's reader: the exports write GZIP pages (parquet-writer.ts), which it does not read by itself. */
export const PARQUET_DECOMPRESSORS = { GZIP: (input: Uint8Array): Uint8Array => gunzipSync(input) };
