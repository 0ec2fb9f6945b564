import { GeneratedDataset, type GeneratedDatasetSpec } from '../../../sandbox/transactions';

/**
 * A generated transaction takes a category of its own cashflow type: an income filed under Rent
 * made the demo's data look wrong (83 of Demo Consulting's 211 transactions of a month). A
 * dataset of a state saved before the rule has no categoryTypes, and draws as it did.
 */
describe('sandbox: generated transactions and their categories', () => {
  const spec: GeneratedDatasetSpec = {
    seed: 'categories',
    companyId: '6f1c2a3b-0000-4000-8000-000000000000',
    currency: 'EUR',
    month: '2026-10',
    count: 2_000,
    categories: ['in-1', 'ex-1', 'in-2', 'ex-2', 'ex-3'],
    bankAccounts: ['acct'],
  };
  const types = { 'in-1': 'INCOME', 'in-2': 'INCOME', 'ex-1': 'EXPENSE', 'ex-2': 'EXPENSE', 'ex-3': 'EXPENSE' } as const;
  const records = (dataset: GeneratedDataset) => Array.from({ length: dataset.count }, (_, i) => dataset.recordAt(i));
  const mismatched = (dataset: GeneratedDataset) =>
    records(dataset).filter((r) => r.category !== null && types[r.category as keyof typeof types] !== r.cashflowType).length;

  it('every category is of its transaction cashflow type, every category is drawn, and as many stay without one', () => {
    const typed = new GeneratedDataset({ ...spec, categoryTypes: spec.categories.map((c) => types[c as keyof typeof types]) });
    const old = new GeneratedDataset(spec);
    expect(mismatched(typed)).toBe(0);
    expect(new Set(records(typed).map((r) => r.category))).toEqual(new Set([null, ...spec.categories]));
    // Only the category changes: amounts, dates and which records have none are as before.
    const strip = (r: ReturnType<GeneratedDataset['recordAt']>) => ({ ...r, category: r.category === null });
    expect(records(typed).map(strip)).toEqual(records(old).map(strip));
  });

  it('a company without categories of a type leaves those transactions without one', () => {
    const expensesOnly = new GeneratedDataset({ ...spec, categories: ['ex-1'], categoryTypes: ['EXPENSE'] });
    const all = records(expensesOnly);
    expect(all.filter((r) => r.cashflowType === 'INCOME').every((r) => r.category === null)).toBe(true);
    expect(all.some((r) => r.cashflowType === 'EXPENSE' && r.category === 'ex-1')).toBe(true);
  });

  it('a dataset saved without categoryTypes draws from every category, as it did', () => {
    expect(mismatched(new GeneratedDataset(spec))).toBeGreaterThan(0);
  });
});
