import { randomBytes } from 'node:crypto';
import type { DemoCredentials } from './admin';
import { secureBase62 } from './random';
import type { Permission } from './schemas';
import type { Company, SandboxState } from './state';

/**
 * The demo dataset: three companies, the institution `inst_demo`, a few users, two API keys per
 * company, categories, tax reports and a couple of hundred transactions in each of the three
 * months before the clock's month. The data comes from the seed, so the same seed and the same
 * month give the same data. The credentials (API keys, institution secret) come from `node:crypto`:
 * the seed is public (the repository, `--seed`), and anyone who knows it could otherwise compute the
 * keys of a sandbox listening on the host's loopback (decision 97 in docs/architecture.md). With
 * `seededCredentials` they follow from the seed too, as before that decision: for tests that
 * compare two sandboxes' credentials. The credentials are SANDBOX ONLY.
 */

export const DEMO_INSTITUTION_ID = 'inst_demo';
/** The institution secret of a demo with `seededCredentials`, and of every demo made before decision 97. */
export const DEMO_INSTITUTION_SECRET = 'sandbox-only-demo-secret-NOT-FOR-PRODUCTION';
export const DEMO_NOTICE = 'SANDBOX ONLY: these demo credentials work against this local sandbox and nowhere else.';

const COMPANIES = [
  { name: 'Demo Bakery GmbH', country: 'DE', currency: 'EUR' },
  { name: 'Demo Studio SARL', country: 'FR', currency: 'EUR' },
  { name: 'Demo Consulting Ltd', country: 'GB', currency: 'GBP' },
];

const EXPORT_PERMISSIONS: Permission[] = ['read_transactions', 'read_categories', 'read_tax_reports'];

/** `YYYY-MM` of the month `delta` months from the month of `epochMs` (UTC). */
export function monthOf(epochMs: number, delta = 0): string {
  const d = new Date(epochMs);
  const shifted = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + delta, 1));
  return shifted.toISOString().slice(0, 7);
}

function lastDay(month: string): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return `${month}-${String(new Date(Date.UTC(y, m, 0)).getUTCDate()).padStart(2, '0')}`;
}

function seedCategories(state: SandboxState, company: Company): void {
  const { prng } = state;
  const expenses = state.addCategory(company.publicId, {
    publicId: prng.uuid(),
    name: 'Operating expenses',
    metadata: '{"accountCode":"4900"}',
    description: 'Costs of running the business',
  });
  const revenue = state.addCategory(company.publicId, {
    publicId: prng.uuid(),
    name: 'Revenue',
    cashflowType: 'INCOME',
    metadata: '{"accountCode":"8400"}',
    description: 'Sales and fees',
  });
  const children = [
    { name: 'Software', parent: expenses, metadata: '{"accountCode":"4964","taxKey":"9"}', examples: 'Cloud hosting, licences' },
    { name: 'Travel', parent: expenses, metadata: '{"accountCode":"4670","reimbursable":true}', examples: 'Train tickets, hotels' },
    { name: 'Office supplies', parent: expenses, metadata: '{"accountCode":"4930"}', examples: '' },
    { name: 'Rent', parent: expenses, metadata: '{"accountCode":"4210"}', examples: 'Office rent', vatApplied: 'NO' as const },
    // Invalid JSON on purpose: the client keeps it raw with a warning (docs/assumptions.md).
    { name: 'Bank fees', parent: expenses, metadata: '{"accountCode": "4970",', examples: '', vatApplied: 'NO' as const },
    {
      name: 'Consulting income',
      parent: revenue,
      metadata: '{"accountCode":"8401"}',
      examples: 'Day rates',
      cashflowType: 'INCOME' as const,
    },
    { name: 'Product sales', parent: revenue, metadata: '{"accountCode":"8402"}', examples: '', cashflowType: 'INCOME' as const },
  ];
  for (const child of children) {
    state.addCategory(company.publicId, {
      publicId: prng.uuid(),
      name: child.name,
      parent: child.parent.publicId,
      cashflowType: child.cashflowType ?? 'EXPENSE',
      vatApplied: child.vatApplied ?? 'YES',
      metadata: child.metadata,
      description: `${child.name} (demo)`,
      examples: child.examples,
    });
  }
}

function seedMonth(state: SandboxState, company: Company, month: string): void {
  state.generateTransactions(company.publicId, month, 180 + state.prng.int(60));
  // Hand-written month-boundary cases on top of the generated ones.
  const edges = [
    { valueDate: `${lastDay(month)}T23:30:00-02:00`, amount: -4999n, description: 'Late card payment (next month in UTC)' },
    { valueDate: `${month}-01T00:15:00+05:30`, amount: 125_000n, description: 'Early transfer (previous month in UTC)' },
    { valueDate: `${month}-15T12:00:00Z`, amount: -50n, description: 'Bank fee' },
  ];
  for (const edge of edges) state.addTransaction(company.publicId, { ...edge, publicId: state.prng.uuid() });
}

function seedTaxReports(state: SandboxState, company: Company, now: number): void {
  for (let back = 6; back >= 1; back--) {
    const month = monthOf(now, -back);
    const next = monthOf(now, -back + 1);
    state.addTaxReport(company.publicId, {
      pk: state.prng.uuid(),
      periodStart: `${month}-01`,
      periodEnd: lastDay(month),
      status: back === 1 ? 'draft' : 'submitted',
      amountDue: BigInt(10_000 + state.prng.int(490_000)),
      createdAt: Date.parse(`${next}-10T08:00:00Z`),
    });
  }
}

/**
 * Whether a saved sandbox was seeded with the credentials every demo had before they were random:
 * the institution secret it was given (or still has) is the fixed one, and its demo keys then
 * follow from the seed as well.
 */
export function hasSeededDemoCredentials(snapshot: {
  institutions: readonly { id: string; secret: string }[];
  demo: { institution: { secret: string } } | null;
}): boolean {
  return (
    snapshot.demo?.institution.secret === DEMO_INSTITUTION_SECRET ||
    snapshot.institutions.some((i) => i.id === DEMO_INSTITUTION_ID && i.secret === DEMO_INSTITUTION_SECRET)
  );
}

export function seedDemo(state: SandboxState, now: number, options: { seededCredentials?: boolean } = {}): DemoCredentials {
  const { prng } = state;
  const seeded = options.seededCredentials === true;
  const institution = state.createInstitution({
    id: DEMO_INSTITUTION_ID,
    // Without a secret the institution gets one from node:crypto, and nothing is drawn from the seeded sequence.
    ...(seeded ? { secret: DEMO_INSTITUTION_SECRET } : {}),
    name: 'Demo institution',
  });
  const companies = COMPANIES.map((c) => state.createCompany({ ...c, publicId: prng.uuid() }));
  const credentials: DemoCredentials = {
    notice: DEMO_NOTICE,
    institution: { ...institution, header: `${institution.id}:${institution.secret}` },
    companies: [],
    users: [],
  };
  for (const company of companies) {
    seedCategories(state, company);
    seedTaxReports(state, company, now);
    for (let back = 3; back >= 1; back--) seedMonth(state, company, monthOf(now, -back));
    const keys = [
      { name: 'demo full access', permissions: ['full_access'] as Permission[] },
      { name: 'demo export (read only)', permissions: EXPORT_PERMISSIONS },
    ].map(({ name, permissions }) => {
      // Drawn either way: the data after it (the next companies' categories, reports, transactions)
      // must not depend on where the key came from, so it is the same as with seeded keys and as
      // in states saved before the keys were random.
      const fromSeed = `sbx_${prng.base62(32)}`;
      const key = seeded ? fromSeed : `sbx_${secureBase62(randomBytes(32))}`;
      state.createApiKey({ companyId: company.publicId, name, permissions, key });
      return { name, key, permissions };
    });
    credentials.companies.push({ publicId: company.publicId, name: company.name, currency: company.currency, apiKeys: keys });
  }
  const [bakery, studio, consulting] = companies as [Company, Company, Company];
  const users = [
    { username: 'alice', companies: [bakery.publicId] },
    { username: 'bob', companies: [studio.publicId, consulting.publicId] },
    { username: 'carol', companies: [] },
  ];
  for (const u of users) {
    const user = state.createUser({
      username: u.username,
      email: `${u.username}@demo.example.test`,
      externalId: prng.uuid(),
      institutionId: institution.id,
      companies: u.companies,
    });
    credentials.users.push({
      userId: user.userId,
      username: user.username,
      email: user.email,
      externalId: user.externalId!,
      companies: u.companies,
    });
  }
  return credentials;
}
