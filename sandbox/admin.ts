import * as z from 'zod';
import { SandboxApiError, fromZod, invalidRequest, notFound } from './errors';
import { faultRuleSchema, type FaultRegistry, type FaultRule, type FaultRuleState } from './faults';
import type { RateLimiter } from './rate-limit';
import type { SandboxSettings } from './routes';
import { PERMISSIONS } from './schemas';
import type { Company, SandboxState, User } from './state';
import type { RequestLogEntry, SandboxStats, StatsRecorder } from './stats';
import { MAX_GENERATED, parseValueDate } from './transactions';
import { apiKeyView, categoryView, taxReportView } from './views';

/**
 * The admin API: sets up state, changes configuration, injects faults and reads what happened.
 * One table of operations serves two doors: `startSandbox().admin` in the same process, and
 * `POST /__sandbox/<operation>` (e.g. `/__sandbox/faults/add`) for a sandbox in another process
 * (benchmarks, the CLI), reached with `connectSandboxAdmin`. Both validate the input with the same
 * schemas and return the same JSON.
 */

export class SandboxAdminError extends Error {
  readonly status: number;
  readonly code: string;
  readonly param: string | null;

  constructor(status: number, code: string, message: string, options: { param?: string | null; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SandboxAdminError';
    this.status = status;
    this.code = code;
    this.param = options.param ?? null;
  }
}

const permissions = z.array(z.enum(PERMISSIONS));
const timestamp = z.iso.datetime({ offset: true });
const money = z.union([z.int(), z.string().regex(/^-?\d+$/), z.string().regex(/^-?\d+\.\d{2}$/)]);
const none = z.strictObject({}).optional();

const createUserInput = z.strictObject({
  username: z.string().min(1).optional(),
  email: z.email().optional(),
  externalId: z.uuid().optional(),
  institutionId: z.string().optional(),
  companies: z.array(z.string()).optional(),
  permissions: permissions.optional(),
  /** Also issue a token pair (users of an institution only): sets up token holders without the rate limit. */
  issueTokens: z.boolean().optional(),
});

const inputs = {
  createInstitution: z
    .strictObject({ id: z.string().min(1).optional(), secret: z.string().min(8).optional(), name: z.string().optional() })
    .optional(),
  /** Changes an institution's secret, as the service owner would: the old one stops working at once. */
  setInstitutionSecret: z.strictObject({ id: z.string().min(1), secret: z.string().min(8) }),
  createCompany: z
    .strictObject({
      publicId: z.uuid().optional(),
      name: z.string().optional(),
      country: z.string().length(2).optional(),
      currency: z.string().length(3).optional(),
    })
    .optional(),
  createUser: createUserInput.optional(),
  createUsers: z.strictObject({ users: z.array(createUserInput).max(100_000) }),
  disableUser: z.strictObject({ userId: z.string() }),
  enableUser: z.strictObject({ userId: z.string() }),
  grantCompanyAccess: z.strictObject({ userId: z.string(), companyId: z.string() }),
  removeCompanyAccess: z.strictObject({ userId: z.string(), companyId: z.string() }),
  findUser: z.strictObject({ institutionId: z.string().optional(), externalId: z.string().optional(), username: z.string().optional() }),
  issueTokens: z.strictObject({ userId: z.string() }),
  createApiKey: z.strictObject({
    companyId: z.string(),
    permissions,
    creatorUserId: z.string().optional(),
    name: z.string().optional(),
    expiresAt: timestamp.nullable().optional(),
  }),
  revokeApiKey: z.strictObject({ publicId: z.string() }),
  listApiKeys: z.strictObject({ companyId: z.string() }),
  addTransactions: z.strictObject({
    companyId: z.string(),
    transactions: z
      .array(
        z.strictObject({
          publicId: z.uuid().optional(),
          /** Minor units as an integer or a digit string (beyond 2^53), or a decimal string. */
          amount: money,
          // Any ISO 8601 form with an offset the client reads, so a test can have the service send one.
          valueDate: z.string().refine((v) => parseValueDate(v) !== undefined, 'expected an ISO 8601 timestamp with an offset'),
          cashflowType: z.enum(['EXPENSE', 'INCOME']).optional(),
          currency: z.string().length(3).optional(),
          description: z.string().optional(),
          category: z.uuid().nullable().optional(),
          bankAccount: z.uuid().optional(),
        }),
      )
      .max(100_000),
  }),
  generateTransactions: z.strictObject({
    companyId: z.string(),
    month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/),
    count: z.int().min(0).max(MAX_GENERATED),
  }),
  addCategory: z.strictObject({
    companyId: z.string(),
    publicId: z.uuid().optional(),
    name: z.string().min(1),
    parent: z.uuid().nullable().optional(),
    cashflowType: z.enum(['EXPENSE', 'INCOME']).optional(),
    vatApplied: z.enum(['YES', 'NO']).optional(),
    metadata: z.string().optional(),
    description: z.string().optional(),
    examples: z.string().optional(),
  }),
  addTaxReport: z.strictObject({
    companyId: z.string(),
    pk: z.uuid().optional(),
    periodStart: z.iso.date(),
    periodEnd: z.iso.date(),
    status: z.enum(['draft', 'submitted']).optional(),
    amountDue: money.optional(),
    currency: z.string().length(3).optional(),
  }),
  transactionSummary: z.strictObject({ companyId: z.string(), dateFrom: z.iso.date().optional(), dateTo: z.iso.date().optional() }),
  configure: z.strictObject({
    amountEncoding: z.enum(['integer', 'string', 'mixed']).optional(),
    displayLabels: z.boolean().optional(),
    transactionCurrency: z.boolean().optional(),
    rateLimit: z
      .strictObject({ requestsPerSecond: z.number().positive(), burst: z.number().min(1).optional() })
      .nullable()
      .optional(),
    latencyMs: z.int().min(0).max(60_000).optional(),
    maxPageSize: z.int().min(1).optional(),
    pageSizeAboveMax: z.enum(['clamp', 'refuse']).optional(),
  }),
  advanceClock: z.strictObject({ ms: z.int().min(0) }),
  now: none,
  stats: none,
  resetStats: none,
  requestLog: z.strictObject({ limit: z.int().positive().optional() }).optional(),
  waitForParked: z.strictObject({ count: z.int().positive(), timeoutMs: z.int().positive().max(600_000).optional() }),
  demoCredentials: none,
  'faults/add': faultRuleSchema,
  'faults/list': none,
  'faults/remove': z.strictObject({ id: z.string() }),
  'faults/clear': none,
} as const;

export type AdminOperation = keyof typeof inputs;
export const ADMIN_OPERATIONS = Object.keys(inputs) as AdminOperation[];
const READ_ONLY = new Set<AdminOperation>([
  'now',
  'stats',
  'requestLog',
  'demoCredentials',
  'faults/list',
  'listApiKeys',
  'findUser',
  'transactionSummary',
]);

// ------------------------------------------------------------------ results

export interface InstitutionView {
  id: string;
  secret: string;
  /** The value of the `Institution` header. */
  header: string;
  name: string;
}

export interface UserView {
  userId: string;
  username: string;
  email: string;
  externalId: string | null;
  institutionId: string | null;
  companies: string[];
  permissions: string[];
  disabled: boolean;
  /** Present when the user was created with `issueTokens`. */
  tokens?: TokenPairView;
}

export interface TokenPairView {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

export interface CompanyView {
  publicId: string;
  name: string;
  country: string;
  currency: string;
  ownerUserId: string;
  bankAccounts: string[];
}

export type ApiKeyView = ReturnType<typeof apiKeyView> & { companyId: string; creatorUserId: string };
export type ApiKeyCreatedView = ApiKeyView & { key: string };

export interface GeneratedDatasetView {
  companyId: string;
  month: string;
  count: number;
  firstValueDate: string | null;
  lastValueDate: string | null;
}

export interface TransactionSummary {
  count: number;
  /** Exact sums in minor units, as digit strings: currency -> cashflowType -> sum. */
  totals: Record<string, Record<string, string>>;
}

export interface DemoCredentials {
  notice: string;
  institution: InstitutionView;
  companies: { publicId: string; name: string; currency: string; apiKeys: { name: string; key: string; permissions: string[] }[] }[];
  users: { userId: string; username: string; email: string; externalId: string; companies: string[] }[];
}

export interface SandboxAdmin {
  createInstitution(input?: z.input<(typeof inputs)['createInstitution']>): Promise<InstitutionView>;
  setInstitutionSecret(input: { id: string; secret: string }): Promise<InstitutionView>;
  createCompany(input?: z.input<(typeof inputs)['createCompany']>): Promise<CompanyView>;
  createUser(input?: z.input<typeof createUserInput>): Promise<UserView>;
  createUsers(input: z.input<(typeof inputs)['createUsers']>): Promise<UserView[]>;
  disableUser(input: { userId: string }): Promise<UserView>;
  enableUser(input: { userId: string }): Promise<UserView>;
  grantCompanyAccess(input: { userId: string; companyId: string }): Promise<UserView>;
  removeCompanyAccess(input: { userId: string; companyId: string }): Promise<UserView>;
  findUser(input: { institutionId?: string; externalId?: string; username?: string }): Promise<UserView>;
  issueTokens(input: { userId: string }): Promise<TokenPairView>;
  createApiKey(input: z.input<(typeof inputs)['createApiKey']>): Promise<ApiKeyCreatedView>;
  revokeApiKey(input: { publicId: string }): Promise<ApiKeyView>;
  listApiKeys(input: { companyId: string }): Promise<ApiKeyView[]>;
  addTransactions(input: z.input<(typeof inputs)['addTransactions']>): Promise<{ publicIds: string[] }>;
  generateTransactions(input: z.input<(typeof inputs)['generateTransactions']>): Promise<GeneratedDatasetView>;
  addCategory(input: z.input<(typeof inputs)['addCategory']>): Promise<ReturnType<typeof categoryView>>;
  addTaxReport(input: z.input<(typeof inputs)['addTaxReport']>): Promise<ReturnType<typeof taxReportView>>;
  transactionSummary(input: z.input<(typeof inputs)['transactionSummary']>): Promise<TransactionSummary>;
  configure(input: z.input<(typeof inputs)['configure']>): Promise<SandboxSettings>;
  /** Moves a manual clock (or the sandbox's own clock) forward. */
  advanceClock(input: { ms: number }): Promise<{ now: string; epochMs: number }>;
  now(): Promise<{ now: string; epochMs: number }>;
  stats(): Promise<SandboxStats>;
  resetStats(): Promise<void>;
  requestLog(input?: { limit?: number }): Promise<RequestLogEntry[]>;
  /** Resolves when `count` responses are parked on a `slow` fault (real-time timeout, default 10 s). */
  waitForParked(input: { count: number; timeoutMs?: number }): Promise<{ parked: number }>;
  demoCredentials(): Promise<DemoCredentials | null>;
  faults: {
    add(rule: FaultRule): Promise<FaultRuleState>;
    list(): Promise<FaultRuleState[]>;
    remove(input: { id: string }): Promise<{ removed: boolean }>;
    clear(): Promise<void>;
  };
}

/** Builds the admin object over any transport: the in-process registry or HTTP. */
export function makeAdmin(invoke: (operation: AdminOperation, input: unknown) => Promise<unknown>): SandboxAdmin {
  const op =
    <R>(name: AdminOperation) =>
    (input?: unknown) =>
      invoke(name, input) as Promise<R>;
  return {
    createInstitution: op('createInstitution'),
    setInstitutionSecret: op('setInstitutionSecret'),
    createCompany: op('createCompany'),
    createUser: op('createUser'),
    createUsers: op('createUsers'),
    disableUser: op('disableUser'),
    enableUser: op('enableUser'),
    grantCompanyAccess: op('grantCompanyAccess'),
    removeCompanyAccess: op('removeCompanyAccess'),
    findUser: op('findUser'),
    issueTokens: op('issueTokens'),
    createApiKey: op('createApiKey'),
    revokeApiKey: op('revokeApiKey'),
    listApiKeys: op('listApiKeys'),
    addTransactions: op('addTransactions'),
    generateTransactions: op('generateTransactions'),
    addCategory: op('addCategory'),
    addTaxReport: op('addTaxReport'),
    transactionSummary: op('transactionSummary'),
    configure: op('configure'),
    advanceClock: op('advanceClock'),
    now: op('now'),
    stats: op('stats'),
    resetStats: op('resetStats'),
    requestLog: op('requestLog'),
    waitForParked: op('waitForParked'),
    demoCredentials: op('demoCredentials'),
    faults: { add: op('faults/add'), list: op('faults/list'), remove: op('faults/remove'), clear: op('faults/clear') },
  };
}

// ------------------------------------------------------------------ the registry

export interface AdminDeps {
  state: SandboxState;
  stats: StatsRecorder;
  faults: FaultRegistry;
  limiter: RateLimiter;
  settings: SandboxSettings;
  /** Moves the clock, or throws when the sandbox cannot. */
  advanceClock(ms: number): void;
  demo: () => DemoCredentials | null;
  /** Aborted when the sandbox stops. */
  signal: AbortSignal;
}

export const userView = (u: User): UserView => ({
  userId: u.userId,
  username: u.username,
  email: u.email,
  externalId: u.externalId,
  institutionId: u.institutionId,
  companies: [...u.companies].sort(),
  permissions: [...u.permissions],
  disabled: u.disabled,
});

export const companyAdminView = (c: Company): CompanyView => ({
  publicId: c.publicId,
  name: c.name,
  country: c.country,
  currency: c.currency,
  ownerUserId: c.ownerUserId,
  bankAccounts: [...c.bankAccounts],
});

/** Minor units from an integer, a digit string or a two-decimal string. */
export function minorUnits(value: number | string): bigint {
  if (typeof value === 'number') return BigInt(value);
  const decimal = /^(-?)(\d+)\.(\d{2})$/.exec(value);
  if (!decimal) return BigInt(value);
  const minor = BigInt(decimal[2]!) * 100n + BigInt(decimal[3]!);
  return decimal[1] === '-' ? -minor : minor;
}

type Handlers = { [K in AdminOperation]: (input: z.output<(typeof inputs)[K]>) => unknown };

export class AdminRegistry {
  private readonly handlers: Handlers;

  constructor(private readonly deps: AdminDeps) {
    const { state, stats, faults, settings } = deps;
    const apiKeyAdminView = (k: Parameters<typeof apiKeyView>[0]): ApiKeyView => ({
      ...apiKeyView(k),
      companyId: k.companyId,
      creatorUserId: k.creatorUserId,
    });
    const createUser = (input: z.output<typeof createUserInput> = {}): UserView => {
      const user = state.createUser(input);
      const view = userView(user);
      return input.issueTokens ? { ...view, tokens: pair(state.issueTokens(user)) } : view;
    };
    const pair = (p: TokenPairView): TokenPairView => ({
      accessToken: p.accessToken,
      refreshToken: p.refreshToken,
      expiresIn: p.expiresIn,
    });
    this.handlers = {
      createInstitution: (input = {}) => {
        const inst = state.createInstitution(input);
        return { ...inst, header: `${inst.id}:${inst.secret}` } satisfies InstitutionView;
      },
      setInstitutionSecret: ({ id, secret }) => {
        const inst = state.institutions.get(id);
        if (!inst) throw notFound(`Institution ${id} not found.`);
        inst.secret = secret;
        return { ...inst, header: `${inst.id}:${inst.secret}` } satisfies InstitutionView;
      },
      createCompany: (input = {}) => companyAdminView(state.createCompany(input)),
      createUser,
      createUsers: ({ users }) => users.map(createUser),
      disableUser: ({ userId }) => {
        const user = state.user(userId);
        user.disabled = true;
        return userView(user);
      },
      enableUser: ({ userId }) => {
        const user = state.user(userId);
        user.disabled = false;
        return userView(user);
      },
      grantCompanyAccess: ({ userId, companyId }) => {
        const user = state.user(userId);
        user.companies.add(state.company(companyId).publicId);
        return userView(user);
      },
      removeCompanyAccess: ({ userId, companyId }) => {
        const user = state.user(userId);
        user.companies.delete(companyId);
        return userView(user);
      },
      findUser: (match) => {
        const user = [...state.users.values()].find(
          (u) =>
            (match.institutionId === undefined || u.institutionId === match.institutionId) &&
            (match.externalId === undefined || u.externalId === match.externalId) &&
            (match.username === undefined || u.username === match.username),
        );
        if (!user) throw notFound('No user matches.');
        return userView(user);
      },
      issueTokens: ({ userId }) => pair(state.issueTokens(state.user(userId))),
      createApiKey: (input) => {
        const { record, key } = state.createApiKey({
          ...input,
          expiresAt: input.expiresAt == null ? null : Date.parse(input.expiresAt),
        });
        return { ...apiKeyAdminView(record), key } satisfies ApiKeyCreatedView;
      },
      revokeApiKey: ({ publicId }) => apiKeyAdminView(state.revokeApiKey(publicId)),
      listApiKeys: ({ companyId }) => state.apiKeysOf(state.company(companyId).publicId).map(apiKeyAdminView),
      addTransactions: ({ companyId, transactions }) => ({
        publicIds: transactions.map((t) => state.addTransaction(companyId, { ...t, amount: minorUnits(t.amount) }).publicId),
      }),
      generateTransactions: ({ companyId, month, count }) => {
        const dataset = state.generateTransactions(companyId, month, count);
        return {
          companyId,
          month,
          count,
          firstValueDate: count === 0 ? null : dataset.recordAt(0).valueDate,
          lastValueDate: count === 0 ? null : dataset.recordAt(count - 1).valueDate,
        } satisfies GeneratedDatasetView;
      },
      addCategory: ({ companyId, ...input }) => categoryView(state.addCategory(companyId, input), settings),
      addTaxReport: ({ companyId, amountDue, ...input }) =>
        taxReportView(
          state.addTaxReport(companyId, { ...input, ...(amountDue === undefined ? {} : { amountDue: minorUnits(amountDue) }) }),
          settings,
        ),
      transactionSummary: ({ companyId, dateFrom, dateTo }) => {
        const sums = new Map<string, Map<string, bigint>>();
        let count = 0;
        for (const source of state.transactionSources(state.company(companyId).publicId, { dateFrom, dateTo })) {
          for (let i = 0; i < source.size; i++) {
            const t = source.itemAt(i);
            const byType = sums.get(t.currency) ?? new Map<string, bigint>();
            byType.set(t.cashflowType, (byType.get(t.cashflowType) ?? 0n) + t.amount);
            sums.set(t.currency, byType);
            count++;
          }
        }
        const totals: TransactionSummary['totals'] = {};
        for (const [currency, byType] of sums) totals[currency] = Object.fromEntries([...byType].map(([k, v]) => [k, v.toString()]));
        return { count, totals } satisfies TransactionSummary;
      },
      configure: (input) => {
        const { rateLimit, ...rest } = input;
        for (const [k, v] of Object.entries(rest)) if (v !== undefined) Object.assign(settings, { [k]: v });
        if (rateLimit !== undefined) {
          settings.rateLimit = rateLimit;
          deps.limiter.reset();
        }
        return structuredClone(settings);
      },
      advanceClock: ({ ms }) => {
        deps.advanceClock(ms);
        return this.now();
      },
      now: () => this.now(),
      stats: () => stats.snapshot(),
      resetStats: () => stats.reset(),
      requestLog: (input = {}) => stats.requestLog(input.limit),
      waitForParked: async ({ count, timeoutMs = 10_000 }) => {
        const signal = AbortSignal.any([deps.signal, AbortSignal.timeout(timeoutMs)]);
        try {
          return { parked: await stats.waitForParked(count, signal) };
        } catch (error) {
          throw new SandboxApiError(408, 'timeout_error', 'timeout', `Fewer than ${count} responses parked in time.`, { cause: error });
        }
      },
      demoCredentials: () => deps.demo(),
      'faults/add': (rule) => faults.add(rule),
      'faults/list': () => faults.list(),
      'faults/remove': ({ id }) => ({ removed: faults.remove(id) }),
      'faults/clear': () => faults.clear(),
    };
  }

  private now() {
    const epochMs = this.deps.state.clock.now();
    return { now: new Date(epochMs).toISOString(), epochMs };
  }

  has(name: string): name is AdminOperation {
    return Object.hasOwn(inputs, name);
  }

  readOnly(name: AdminOperation): boolean {
    return READ_ONLY.has(name);
  }

  /** Validates the input and runs the operation; refusals are SandboxApiErrors. */
  async run(name: AdminOperation, input: unknown): Promise<unknown> {
    const parsed = inputs[name].safeParse(input ?? undefined);
    if (!parsed.success) throw fromZod(parsed.error);
    try {
      const handler = this.handlers[name] as (input: unknown) => unknown;
      return await handler(parsed.data);
    } catch (error) {
      if (error instanceof RangeError) throw invalidRequest('input', error.message);
      throw error;
    }
  }

  /** In-process door: the same operations, refusals as SandboxAdminError. */
  admin(): SandboxAdmin {
    return makeAdmin(async (name, input) => {
      try {
        return await this.run(name, input);
      } catch (error) {
        if (error instanceof SandboxApiError) {
          throw new SandboxAdminError(error.status, error.code, error.message, { param: error.param, cause: error });
        }
        throw error;
      }
    });
  }

  /** HTTP door: `POST /__sandbox/<operation>`; read-only operations also answer GET. */
  async http(method: string, name: string, body: unknown): Promise<{ status: number; body?: unknown }> {
    if (!this.has(name)) throw notFound(`No admin operation ${name}; see sandbox/README.md.`);
    if (method !== 'POST' && !(method === 'GET' && this.readOnly(name))) {
      throw new SandboxApiError(405, 'validation_error', 'method_not_allowed', `Use POST for ${name}.`);
    }
    const result = await this.run(name, body);
    return result === undefined ? { status: 204 } : { status: 200, body: result };
  }
}
