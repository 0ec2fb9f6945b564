import { randomUUID } from 'node:crypto';
import {
  type AccountingClient,
  type AccountingClientOptions,
  apiKeyAuth,
  createAccountingClient,
  institutionAuth,
} from '../../../src/core/accounting-api';
import { type Clock, ManualClock } from '../../../src/core/shared/clock';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../../../sandbox';

/**
 * The real client (default fetch transport) against the real sandbox over HTTP, on one manual
 * clock. Client and sandbox share time: a client that backs off or honours Retry-After moves the
 * sandbox's clock by exactly that much, so "the retry after Retry-After succeeds" is a fact the
 * sandbox's token bucket checks, not an assumption of the test.
 */

const START = Date.UTC(2026, 10, 1, 9, 0, 0);
export const MINUTE = 60_000;

/** The client's clock: the sandbox's time, where every sleep advances it and is recorded. */
export class SteppingClock implements Clock {
  readonly sleeps: number[] = [];
  constructor(private readonly base: ManualClock) {}
  now(): number {
    return this.base.now();
  }
  sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.base.advance(Math.max(0, ms));
    return Promise.resolve();
  }
}

export interface World {
  clock: ManualClock;
  sandbox: RunningSandbox;
  companyId: string;
  /** The user who owns the company and created `key`. */
  ownerUserId: string;
  /** A `full_access` key of the company. */
  key: string;
  institutionId: string;
  institutionSecret: string;
  /** A client with `key`, a stepping clock and no jitter; `overrides` replace any option. */
  client(overrides?: Partial<AccountingClientOptions>): AccountingClient;
  /** A client with the institution credential. */
  institutionClient(overrides?: Partial<AccountingClientOptions>): AccountingClient;
  /** API requests the sandbox has seen on `route` (e.g. `GET /companies/`) since the last resetStats. */
  requests(route?: string): Promise<number>;
}

export async function startWorld(options: SandboxOptions = {}): Promise<World> {
  const clock = new ManualClock(START);
  const sandbox = await startSandbox({ port: 0, demo: false, clock, ...options });
  const company = await sandbox.admin.createCompany({ name: 'Client Tests GmbH', country: 'DE', currency: 'EUR' });
  const { key } = await sandbox.admin.createApiKey({ companyId: company.publicId, permissions: ['full_access'], name: 'tests' });
  const institution = await sandbox.admin.createInstitution({ id: `inst_${randomUUID().slice(0, 8)}` });
  const client = (overrides: Partial<AccountingClientOptions> = {}) =>
    createAccountingClient({
      baseUrl: sandbox.baseUrl,
      credentials: apiKeyAuth(key),
      clock: new SteppingClock(clock),
      random: () => 0,
      ...overrides,
    });
  return {
    clock,
    sandbox,
    companyId: company.publicId,
    ownerUserId: company.ownerUserId,
    key,
    institutionId: institution.id,
    institutionSecret: institution.secret,
    client,
    institutionClient: (overrides = {}) =>
      client({ credentials: institutionAuth({ institutionId: institution.id, secretKey: institution.secret }), ...overrides }),
    requests: async (route) => {
      const stats = await sandbox.admin.stats();
      return route === undefined ? stats.requests : (stats.byRoute[route] ?? 0);
    },
  };
}

/** A fresh identity for `institution.createUser` / `retrieveToken`. */
export function newIdentity(): { username: string; email: string; externalId: string } {
  const externalId = randomUUID();
  return { username: `user-${externalId.slice(0, 8)}`, email: `${externalId.slice(0, 8)}@example.com`, externalId };
}

/** The error `work` rejects with; fails the test when it resolves. */
export async function rejectionOf(work: Promise<unknown>): Promise<Error> {
  const outcome = await work.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error))
    throw new Error(`expected a rejection with an Error, got ${outcome === undefined ? 'a success' : String(outcome)}`);
  return outcome;
}
