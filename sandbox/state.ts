import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../src/core/shared/clock';
import { authError, conflict, invalidRequest, notFound, permissionDenied } from './errors';
import { Prng, hashString, secureBase62 } from './random';
import type { Permission } from './schemas';
import { TokenIssuer, type TokenFormat } from './tokens';
import {
  ArraySource,
  GeneratedDataset,
  compareKeys,
  inDateRange,
  keyOf,
  parseValueDate,
  type CashflowType,
  type DateFilter,
  type TransactionRecord,
  type TransactionSource,
} from './transactions';
import { SANDBOX_SNAPSHOT_FORMAT, type SandboxStateSnapshot } from './snapshot';

/**
 * Everything the simulated service knows, in memory, and the rules that do not depend on HTTP:
 * who may do what, which key is alive, which token rotates. The routes and the admin API are thin
 * layers over this.
 */

export const KEY_SERVICE_PREFIX = 'sbx';

/**
 * How this service spells what the spec leaves open (sandbox options `companyIdCase`, `apiKeys`):
 * a company's publicId in lower or upper case (every comparison of it stays exact, as a service
 * may make them), a key's service prefix (it may hold an underscore itself, `sk_live`) and how
 * many characters after it the key list's `prefix` shows.
 */
export interface ServiceSpelling {
  companyIdCase: 'lower' | 'upper';
  keyServicePrefix: string;
  listedKeyChars: number;
}

export const DEFAULT_SPELLING: ServiceSpelling = { companyIdCase: 'lower', keyServicePrefix: KEY_SERVICE_PREFIX, listedKeyChars: 8 };

export interface Institution {
  id: string;
  secret: string;
  name: string;
}

export interface User {
  userId: string;
  username: string;
  email: string;
  /** The partner-side id; set for users of an institution. */
  externalId: string | null;
  institutionId: string | null;
  companies: Set<string>;
  permissions: Permission[];
  disabled: boolean;
}

export interface Company {
  publicId: string;
  name: string;
  country: string;
  currency: string;
  ownerUserId: string;
  bankAccounts: string[];
}

export interface ApiKeyRecord {
  publicId: string;
  companyId: string;
  creatorUserId: string;
  name: string;
  prefix: string;
  hash: Buffer;
  permissions: Permission[];
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface CategoryRecord {
  publicId: string;
  companyId: string;
  name: string;
  parent: string | null;
  cashflowType: CashflowType;
  vatApplied: 'YES' | 'NO';
  metadata: string;
  description: string;
  examples: string;
}

export interface TaxReportRecord {
  pk: string;
  companyId: string;
  periodStart: string;
  periodEnd: string;
  status: 'draft' | 'submitted';
  amountDue: bigint;
  currency: string;
  createdAt: number;
}

export const covers = (held: readonly Permission[], needed: Permission): boolean => held.includes('full_access') || held.includes(needed);

const hashKey = (key: string) => createHash('sha256').update(key).digest();

/** Keeps `list` sorted by `compare` while inserting `item`. */
function insertSorted<T>(list: T[], item: T, compare: (a: T, b: T) => number): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(list[mid]!, item) < 0) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, item);
}

const byPublicId = (a: { publicId: string }, b: { publicId: string }) => (a.publicId < b.publicId ? -1 : a.publicId > b.publicId ? 1 : 0);

export interface CreateUserInput {
  username?: string | undefined;
  email?: string | undefined;
  externalId?: string | undefined;
  institutionId?: string | undefined;
  companies?: string[] | undefined;
  permissions?: Permission[] | undefined;
}

export interface NewTransaction {
  publicId?: string | undefined;
  amount: bigint;
  valueDate: string;
  cashflowType?: CashflowType | undefined;
  currency?: string | undefined;
  description?: string | undefined;
  category?: string | null | undefined;
  bankAccount?: string | undefined;
}

export class SandboxState {
  readonly prng: Prng;
  readonly tokens: TokenIssuer;
  readonly institutions = new Map<string, Institution>();
  readonly users = new Map<string, User>();
  /** Users of institutions by `<institution>:id:<external_id>` and `<institution>:name:<username>`: both are unique. */
  private readonly institutionUsers = new Map<string, User>();
  readonly companies = new Map<string, Company>();
  readonly apiKeys = new Map<string, ApiKeyRecord>();
  private readonly keysByHash = new Map<string, ApiKeyRecord>();
  private readonly categories = new Map<string, CategoryRecord[]>();
  private readonly taxReports = new Map<string, TaxReportRecord[]>();
  private readonly transactions = new Map<string, TransactionRecord[]>();
  private readonly datasets = new Map<string, GeneratedDataset>();
  private userCounter = 0;
  private phantomCounter = 0;
  spelling: ServiceSpelling = DEFAULT_SPELLING;

  constructor(
    readonly seed: string,
    readonly clock: Clock,
    lifetimes: { accessSeconds: number; refreshSeconds: number; format?: TokenFormat },
    /** Where a restored state continues: the seeded sequence's position and the token signing key. */
    resume?: { prng: number; signingKey: Buffer },
  ) {
    this.prng = new Prng(resume ? resume.prng : seed);
    this.tokens = new TokenIssuer(clock, lifetimes, resume?.signingKey, lifetimes.format);
  }

  // ------------------------------------------------------------ snapshot and restore

  /** Everything this state holds as JSON-safe data (sandbox/snapshot.ts), with the demo credentials it was seeded with. */
  snapshot(demo: SandboxStateSnapshot['demo']): SandboxStateSnapshot {
    const all = <T>(map: Map<string, T[]>) => [...map.values()].flat();
    return {
      format: SANDBOX_SNAPSHOT_FORMAT,
      formatVersion: 1,
      seed: this.seed,
      prng: this.prng.position,
      userCounter: this.userCounter,
      phantomCounter: this.phantomCounter,
      tokens: this.tokens.snapshot(),
      institutions: [...this.institutions.values()].map((i) => ({ ...i })),
      users: [...this.users.values()].map((u) => ({ ...u, companies: [...u.companies], permissions: [...u.permissions] })),
      companies: [...this.companies.values()].map((c) => ({ ...c, bankAccounts: [...c.bankAccounts] })),
      apiKeys: [...this.apiKeys.values()].map((k) => ({ ...k, hash: k.hash.toString('hex'), permissions: [...k.permissions] })),
      categories: all(this.categories).map((c) => ({ ...c })),
      taxReports: all(this.taxReports).map((r) => ({ ...r, amountDue: r.amountDue.toString() })),
      transactions: all(this.transactions).map((t) => ({
        publicId: t.publicId,
        companyId: t.companyId,
        amount: t.amount.toString(),
        currency: t.currency,
        cashflowType: t.cashflowType,
        valueDate: t.valueDate,
        description: t.description,
        category: t.category,
        bankAccount: t.bankAccount,
      })),
      demo,
      datasets: [...this.datasets.values()].map(({ spec: { categoryTypes, ...spec } }) => ({
        ...spec,
        categories: [...spec.categories],
        ...(categoryTypes ? { categoryTypes: [...categoryTypes] } : {}),
        bankAccounts: [...spec.bankAccounts],
      })),
    };
  }

  /** A state exactly as `snapshot()` saw it, on `clock`. */
  static restore(
    snapshot: SandboxStateSnapshot,
    clock: Clock,
    lifetimes: { accessSeconds: number; refreshSeconds: number; format?: TokenFormat },
  ): SandboxState {
    const state = new SandboxState(snapshot.seed, clock, lifetimes, {
      prng: snapshot.prng,
      signingKey: Buffer.from(snapshot.tokens.signingKey, 'base64'),
    });
    state.userCounter = snapshot.userCounter;
    state.phantomCounter = snapshot.phantomCounter;
    state.tokens.restore(snapshot.tokens.records);
    for (const institution of snapshot.institutions) state.institutions.set(institution.id, { ...institution });
    for (const u of snapshot.users) {
      const user: User = { ...u, companies: new Set(u.companies), permissions: u.permissions as Permission[] };
      state.users.set(user.userId, user);
      if (user.institutionId !== null && user.externalId !== null) {
        state.institutionUsers.set(`${user.institutionId}:id:${user.externalId}`, user);
        state.institutionUsers.set(`${user.institutionId}:name:${user.username}`, user);
      }
    }
    for (const company of snapshot.companies)
      state.companies.set(company.publicId, { ...company, bankAccounts: [...company.bankAccounts] });
    for (const k of snapshot.apiKeys) {
      const record: ApiKeyRecord = { ...k, hash: Buffer.from(k.hash, 'hex'), permissions: k.permissions as Permission[] };
      state.apiKeys.set(record.publicId, record);
      state.keysByHash.set(k.hash, record);
    }
    // The add* methods keep each list sorted and recompute what is derived; every id is given, so
    // they draw nothing from the seeded sequence.
    for (const { companyId, ...category } of snapshot.categories) state.addCategory(companyId, category);
    for (const { companyId, ...report } of snapshot.taxReports)
      state.addTaxReport(companyId, { ...report, amountDue: BigInt(report.amountDue) });
    for (const { companyId, ...t } of snapshot.transactions) state.addTransaction(companyId, { ...t, amount: BigInt(t.amount) });
    for (const spec of snapshot.datasets) state.datasets.set(`${spec.companyId}:${spec.month}`, new GeneratedDataset(spec));
    return state;
  }

  // ------------------------------------------------------------ institutions and users

  createInstitution(input: { id?: string | undefined; secret?: string | undefined; name?: string | undefined }): Institution {
    const id = input.id ?? `inst_${this.prng.base62(10)}`;
    if (this.institutions.has(id)) throw conflict('institution_exists', `Institution ${id} exists.`);
    const institution = { id, secret: input.secret ?? `sbxsecret_${secureBase62(randomBytes(24))}`, name: input.name ?? id };
    this.institutions.set(id, institution);
    return institution;
  }

  /** The institution named by an `Institution: <id>:<secret>` header. */
  authenticateInstitution(header: string | undefined): Institution {
    if (header === undefined || header === '') throw authError('missing_credentials', 'The Institution header is missing.');
    const colon = header.indexOf(':');
    const institution = colon > 0 ? this.institutions.get(header.slice(0, colon)) : undefined;
    const given = Buffer.from(header.slice(colon + 1));
    const expected = Buffer.from(institution?.secret ?? '');
    if (!institution || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw authError('institution_invalid', 'The Institution credential is not valid.');
    }
    return institution;
  }

  createUser(input: CreateUserInput): User {
    const n = ++this.userCounter;
    const institutionId = input.institutionId ?? null;
    if (institutionId !== null && !this.institutions.has(institutionId)) throw notFound(`Institution ${institutionId} not found.`);
    const user: User = {
      userId: `usr_${n}`,
      username: input.username ?? `user-${n}`,
      email: input.email ?? `user-${n}@example.test`,
      externalId: input.externalId ?? (institutionId === null ? null : this.prng.uuid()),
      institutionId,
      companies: new Set(),
      permissions: input.permissions ?? ['full_access'],
      disabled: false,
    };
    const byId = institutionId === null ? undefined : `${institutionId}:id:${user.externalId}`;
    const byName = institutionId === null ? undefined : `${institutionId}:name:${user.username}`;
    if (byId !== undefined && byName !== undefined) {
      if (this.institutionUsers.has(byId) || this.institutionUsers.has(byName)) {
        throw conflict('user_exists', 'A user with this external_id or username exists.');
      }
    }
    for (const companyId of input.companies ?? []) {
      this.company(companyId);
      user.companies.add(companyId);
    }
    this.users.set(user.userId, user);
    if (byId !== undefined && byName !== undefined) {
      this.institutionUsers.set(byId, user);
      this.institutionUsers.set(byName, user);
    }
    return user;
  }

  user(userId: string): User {
    const user = this.users.get(userId);
    if (!user) throw notFound(`User ${userId} not found.`);
    return user;
  }

  /** The institution's user matching all three fields (retrieve), if any. */
  findInstitutionUser(institutionId: string, match: { username: string; email: string; externalId: string }): User | undefined {
    const user = this.institutionUsers.get(`${institutionId}:id:${match.externalId}`);
    return user && user.username === match.username && user.email === match.email ? user : undefined;
  }

  issueTokens(user: User) {
    if (user.institutionId === null || user.externalId === null) {
      throw invalidRequest('userId', 'Only users of an institution hold tokens.');
    }
    return this.tokens.issuePair({ userId: user.userId, institutionId: user.institutionId, subject: user.externalId });
  }

  // ------------------------------------------------------------ companies and data

  createCompany(input: {
    publicId?: string | undefined;
    name?: string | undefined;
    country?: string | undefined;
    currency?: string | undefined;
  }): Company {
    const id = input.publicId ?? this.prng.uuid();
    const publicId = this.spelling.companyIdCase === 'upper' ? id.toUpperCase() : id;
    if (this.companies.has(publicId)) throw conflict('company_exists', `Company ${publicId} exists.`);
    const owner = this.createUser({ username: `owner-${publicId.slice(0, 8)}`, email: `owner-${publicId.slice(0, 8)}@example.test` });
    const company: Company = {
      publicId,
      name: input.name ?? `Company ${publicId.slice(0, 8)}`,
      country: input.country ?? 'DE',
      currency: input.currency ?? 'EUR',
      ownerUserId: owner.userId,
      bankAccounts: [this.prng.uuid(), this.prng.uuid()],
    };
    this.companies.set(publicId, company);
    owner.companies.add(publicId);
    return company;
  }

  company(companyId: string): Company {
    const company = this.companies.get(companyId);
    if (!company) throw notFound(`Company ${companyId} not found.`);
    return company;
  }

  addCategory(companyId: string, input: Partial<Omit<CategoryRecord, 'companyId'>> & { name: string }): CategoryRecord {
    this.company(companyId);
    const category: CategoryRecord = {
      publicId: input.publicId ?? this.prng.uuid(),
      companyId,
      name: input.name,
      parent: input.parent ?? null,
      cashflowType: input.cashflowType ?? 'EXPENSE',
      vatApplied: input.vatApplied ?? 'YES',
      metadata: input.metadata ?? '{}',
      description: input.description ?? '',
      examples: input.examples ?? '',
    };
    const list = this.categories.get(companyId) ?? [];
    insertSorted(list, category, byPublicId);
    this.categories.set(companyId, list);
    return category;
  }

  categoriesOf(companyId: string): readonly CategoryRecord[] {
    return this.categories.get(companyId) ?? [];
  }

  addTaxReport(
    companyId: string,
    input: Partial<Omit<TaxReportRecord, 'companyId'>> & { periodStart: string; periodEnd: string },
  ): TaxReportRecord {
    const company = this.company(companyId);
    const report: TaxReportRecord = {
      pk: input.pk ?? this.prng.uuid(),
      companyId,
      periodStart: input.periodStart,
      periodEnd: input.periodEnd,
      status: input.status ?? 'draft',
      amountDue: input.amountDue ?? 0n,
      currency: input.currency ?? company.currency,
      createdAt: input.createdAt ?? this.clock.now(),
    };
    const list = this.taxReports.get(companyId) ?? [];
    insertSorted(list, report, (a, b) => (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0));
    this.taxReports.set(companyId, list);
    return report;
  }

  taxReportsOf(companyId: string): readonly TaxReportRecord[] {
    return this.taxReports.get(companyId) ?? [];
  }

  addTransaction(companyId: string, input: NewTransaction): TransactionRecord {
    const company = this.company(companyId);
    const parsed = parseValueDate(input.valueDate);
    if (!parsed) throw invalidRequest('valueDate', 'valueDate must be an ISO 8601 timestamp with an offset.');
    const publicId = input.publicId ?? this.prng.uuid();
    const record: TransactionRecord = {
      publicId,
      companyId,
      amount: input.amount,
      currency: input.currency ?? company.currency,
      cashflowType: input.cashflowType ?? (input.amount < 0n ? 'EXPENSE' : 'INCOME'),
      valueDate: input.valueDate,
      instant: parsed.instant,
      localDate: parsed.localDate,
      description: input.description ?? '',
      category: input.category ?? null,
      bankAccount: input.bankAccount ?? company.bankAccounts[0]!,
      variant: hashString(publicId),
    };
    const list = this.transactions.get(companyId) ?? [];
    insertSorted(list, record, (a, b) => compareKeys(keyOf(a), keyOf(b)));
    this.transactions.set(companyId, list);
    return record;
  }

  /** Registers (or replaces) the generated dataset of a company's month. */
  generateTransactions(companyId: string, month: string, count: number): GeneratedDataset {
    const company = this.company(companyId);
    const dataset = new GeneratedDataset({
      seed: this.seed,
      companyId,
      currency: company.currency,
      month,
      count,
      categories: this.categoriesOf(companyId).map((c) => c.publicId),
      categoryTypes: this.categoriesOf(companyId).map((c) => c.cashflowType),
      bankAccounts: company.bankAccounts,
    });
    this.datasets.set(`${companyId}:${month}`, dataset);
    return dataset;
  }

  /** The sources whose union is the company's transactions within the filter. */
  transactionSources(companyId: string, filter: DateFilter): TransactionSource[] {
    const held = (this.transactions.get(companyId) ?? []).filter((t) => inDateRange(t.localDate, filter));
    const sources: TransactionSource[] = [new ArraySource(held)];
    for (const dataset of this.datasets.values()) {
      if (dataset.companyId === companyId) sources.push(dataset.source(filter));
    }
    return sources;
  }

  /** An id that sorts before every other: for the `result_set_change` fault. */
  phantomId(): string {
    return `00000000-0000-4000-8000-${(++this.phantomCounter).toString(16).padStart(12, '0')}`;
  }

  // ------------------------------------------------------------ API keys

  createApiKey(input: {
    companyId: string;
    creatorUserId?: string | undefined;
    name?: string | undefined;
    permissions: Permission[];
    expiresAt?: number | null | undefined;
    /** Only for the demo's keys (seedDemo chooses them); otherwise the key is random. */
    key?: string | undefined;
  }): { record: ApiKeyRecord; key: string } {
    const company = this.company(input.companyId);
    const creator = this.user(input.creatorUserId ?? company.ownerUserId);
    if (!creator.companies.has(company.publicId)) throw invalidRequest('creatorUserId', 'The creator has no access to the company.');
    const missing = input.permissions.find((p) => !covers(creator.permissions, p));
    if (missing) throw permissionDenied(missing);
    if (input.expiresAt != null && input.expiresAt <= this.clock.now())
      throw invalidRequest('expiresAt', 'expiresAt must be in the future.');
    const { keyServicePrefix, listedKeyChars } = this.spelling;
    const key = input.key ?? `${keyServicePrefix}_${secureBase62(randomBytes(32))}`;
    const record: ApiKeyRecord = {
      publicId: this.prng.uuid(),
      companyId: company.publicId,
      creatorUserId: creator.userId,
      name: input.name ?? 'sandbox key',
      prefix: key.slice(0, key.startsWith(`${keyServicePrefix}_`) ? keyServicePrefix.length + 1 + listedKeyChars : key.indexOf('_') + 9),
      hash: hashKey(key),
      permissions: [...new Set(input.permissions)],
      createdAt: this.clock.now(),
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
      lastUsedAt: null,
    };
    this.apiKeys.set(record.publicId, record);
    this.keysByHash.set(record.hash.toString('hex'), record);
    return { record, key };
  }

  revokeApiKey(publicId: string, companyId?: string): ApiKeyRecord {
    const record = this.apiKeys.get(publicId);
    if (!record || (companyId !== undefined && record.companyId !== companyId)) throw notFound(`API key ${publicId} not found.`);
    record.revokedAt ??= this.clock.now();
    return record;
  }

  apiKeysOf(companyId: string): ApiKeyRecord[] {
    return [...this.apiKeys.values()].filter((k) => k.companyId === companyId).sort(byPublicId);
  }

  /** The live key behind a bearer value, or the refusal of docs/assumptions.md. Marks its last use. */
  authenticateApiKey(key: string): { record: ApiKeyRecord; creator: User } {
    const record = this.keysByHash.get(hashKey(key).toString('hex'));
    if (!record) throw authError('invalid_credentials', 'The API key is not valid.');
    const now = this.clock.now();
    if (record.revokedAt !== null) throw authError('key_revoked', 'The API key has been revoked.');
    if (record.expiresAt !== null && now >= record.expiresAt) throw authError('key_expired', 'The API key has expired.');
    const creator = this.user(record.creatorUserId);
    if (creator.disabled) throw authError('creator_disabled', "The API key's creator is disabled.");
    if (!creator.companies.has(record.companyId))
      throw authError('company_access_removed', "The API key's creator lost access to the company.");
    record.lastUsedAt = now;
    return { record, creator };
  }
}
