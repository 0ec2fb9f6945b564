import { MemoryRegistryTable } from '../../../src/adapters/local/file-company-registry';
import { CompanyRegistry, type RegisteredCompany } from '../../../src/core/companies/company-registry';
import { registryAllowlist } from '../../../src/core/exports/pipeline/company-allowlist';
import { ManualClock } from '../../../src/core/shared/clock';
import { MemoryLogger } from '../../../src/core/shared/logger';

const ACTIVE = 'aaaaaaaa-0000-4000-8000-000000000001';
const REMOVED = 'bbbbbbbb-0000-4000-8000-000000000002';
const BROKEN = 'cccccccc-0000-4000-8000-000000000003';
const UNKNOWN = 'dddddddd-0000-4000-8000-000000000004';

describe('registryAllowlist (the webhook tenant list from the company registry)', () => {
  async function setup() {
    const table = new MemoryRegistryTable();
    const registry = new CompanyRegistry(table, { defaultFormats: ['csv'] });
    await registry.add({ companyId: ACTIVE }, 0);
    await registry.add({ companyId: REMOVED }, 0);
    await registry.remove(REMOVED, 0);
    // Written by hand with a format acctops does not know: fails the schema.
    await table.putItem({ companyId: BROKEN, formats: ['xlsx'] } as unknown as RegisteredCompany);
    let gets = 0;
    const counted = { get: (id: string) => (gets++, registry.get(id)) };
    const clock = new ManualClock(Date.UTC(2026, 10, 1));
    return { allowlist: registryAllowlist(counted, { clock, ttlMs: 60_000 }), clock, gets: () => gets, registry };
  }

  it('allows registered, active companies only; a removed, unknown or unreadable one is refused', async () => {
    const { allowlist } = await setup();
    const logger = new MemoryLogger();
    expect(await allowlist.allows(ACTIVE.toUpperCase(), logger)).toBe(true);
    expect(await allowlist.allows(REMOVED, logger)).toBe(false);
    expect(await allowlist.allows(UNKNOWN, logger)).toBe(false);
    expect(await allowlist.allows(BROKEN, logger)).toBe(false);
    // The finding names the field, never the value.
    const line = logger.lines.find((l) => l.includes('fails its schema'))!;
    expect(line).toContain('formats');
    expect(line).not.toContain('xlsx');
  });

  it('asks the registry once per company within the TTL, and again after it (a removal takes effect)', async () => {
    const { allowlist, clock, gets, registry } = await setup();
    expect(await allowlist.allows(ACTIVE)).toBe(true);
    expect(await allowlist.allows(ACTIVE)).toBe(true);
    expect(gets()).toBe(1);
    await registry.remove(ACTIVE, clock.now());
    expect(await allowlist.allows(ACTIVE)).toBe(true);
    clock.advance(60_001);
    expect(await allowlist.allows(ACTIVE)).toBe(false);
    expect(gets()).toBe(2);
  });

  it('keeps at most maxEntries answers: past it the cache starts over, so an answer is read again', async () => {
    const { gets, registry } = await setup();
    let reads = 0;
    const counted = { get: (id: string) => (reads++, registry.get(id)) };
    const allowlist = registryAllowlist(counted, { clock: new ManualClock(Date.UTC(2026, 10, 1)), maxEntries: 2 });
    expect(await allowlist.allows(ACTIVE)).toBe(true);
    expect(await allowlist.allows(REMOVED)).toBe(false);
    expect(await allowlist.allows(ACTIVE)).toBe(true);
    expect(reads).toBe(2);
    // A third company: the cache is cleared before it is kept, and ACTIVE is asked for again.
    expect(await allowlist.allows(UNKNOWN)).toBe(false);
    expect(await allowlist.allows(ACTIVE)).toBe(true);
    expect(reads).toBe(4);
    expect(gets()).toBe(0);
  });

  it('propagates a registry failure (the webhook answers 503, not 403)', async () => {
    const allowlist = registryAllowlist({ get: () => Promise.reject(new Error('throttled')) }, { clock: new ManualClock(0) });
    await expect(allowlist.allows(ACTIVE)).rejects.toThrow('throttled');
  });
});
