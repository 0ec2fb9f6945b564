import { formatMinorUnits } from '../src/core/accounting-api';
import { hashString } from './random';
import type { ApiKeyRecord, CategoryRecord, Company, TaxReportRecord } from './state';
import type { TransactionRecord } from './transactions';

/**
 * Records as the wire shows them. How amounts are encoded and whether some enums show display
 * labels is configuration (docs/assumptions.md); the choice per record comes from stable bits of
 * the record (a hash of its id), so a record looks the same on every page and every run.
 */

export type AmountEncoding = 'integer' | 'string' | 'mixed';

export interface WireSettings {
  amountEncoding: AmountEncoding;
  displayLabels: boolean;
  /**
   * Whether a transaction carries `currency`. The spec names no currency field of a transaction, so
   * a service may send none; `false` lets the exports be tested against one (docs/assumptions.md).
   */
  transactionCurrency: boolean;
}

const LABELS: Record<string, string> = { EXPENSE: 'Expense', INCOME: 'Income', draft: 'Draft', submitted: 'Submitted' };

export function amountOnWire(minor: bigint, variant: number, settings: WireSettings): number | bigint | string {
  const asString = settings.amountEncoding === 'string' || (settings.amountEncoding === 'mixed' && (variant & 1) === 1);
  if (asString) return formatMinorUnits(minor);
  const n = Number(minor);
  return Number.isSafeInteger(n) ? n : minor;
}

export function labelOnWire(value: string, variant: number, settings: WireSettings): string {
  return settings.displayLabels && (variant & 2) === 2 ? (LABELS[value] ?? value) : value;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const companyView = (c: Company) => ({ publicId: c.publicId, name: c.name, country: c.country, currency: c.currency });

export const transactionView = (t: TransactionRecord, s: WireSettings) => ({
  publicId: t.publicId,
  amount: amountOnWire(t.amount, t.variant, s),
  ...(s.transactionCurrency ? { currency: t.currency } : {}),
  cashflowType: labelOnWire(t.cashflowType, t.variant, s),
  valueDate: t.valueDate,
  description: t.description,
  category: t.category,
  bankAccount: t.bankAccount,
});

export const categoryView = (c: CategoryRecord, s: WireSettings) => ({
  publicId: c.publicId,
  name: c.name,
  parent: c.parent,
  cashflowType: labelOnWire(c.cashflowType, hashString(c.publicId), s),
  vatApplied: c.vatApplied,
  metadata: c.metadata,
  description: c.description,
  examples: c.examples,
});

export const taxReportView = (r: TaxReportRecord, s: WireSettings) => ({
  pk: r.pk,
  type: 'VAT_RETURN',
  periodStart: r.periodStart,
  periodEnd: r.periodEnd,
  status: labelOnWire(r.status, hashString(r.pk), s),
  amountDue: amountOnWire(r.amountDue, hashString(r.pk), s),
  currency: r.currency,
  createdAt: iso(r.createdAt)!,
});

export const apiKeyView = (k: ApiKeyRecord) => ({
  publicId: k.publicId,
  name: k.name,
  prefix: k.prefix,
  permissions: [...k.permissions],
  lastUsedAt: iso(k.lastUsedAt),
  createdAt: iso(k.createdAt)!,
  expiresAt: iso(k.expiresAt),
  revokedAt: iso(k.revokedAt),
});
