import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { abandonedBy, LeaseHoldingStore, leaseOwnerPrefix } from '../../../cli/local/held-leases';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { ownIdentity, startOf, type ProcessIdentity } from '../../../src/adapters/local/process-identity';

const MINUTE = 60_000;
const NOW = Date.now();
const LEASE_UNTIL = NOW + 3 * MINUTE;

/**
 * A lease a local command left by dying (kill -9, a crash) is taken back by the next command when
 * its holder is provably dead, and only then (docs/tokens.md, "File store"). The holders are real
 * processes (HOLDER) that take the lease as a command does.
 */
describe('LeaseHoldingStore.reclaimAbandoned: leases of dead local holders', () => {
  const HOLDER = join(__dirname, '..', '..', 'helpers', 'lease-holder-child.ts');
  let dir: string;
  let file: FileTokenStore;
  let store: LeaseHoldingStore;
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-leases-'));
    file = new FileTokenStore({ path: join(dir, 'tokens.json') });
    store = new LeaseHoldingStore(file);
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  const user = async () => {
    const externalId = randomUUID();
    await file.create(
      {
        externalId,
        username: 'ada',
        email: 'ada@example.test',
        accessToken: `access-${randomUUID()}`,
        refreshToken: `refresh-${randomUUID()}`,
        accessTokenExpiresAt: NOW + 30 * MINUTE,
      },
      NOW - MINUTE,
    );
    return externalId;
  };

  /** A live process that took `externalId`'s lease, as a local command does. */
  const holder = async (externalId: string): Promise<{ child: ChildProcess; owner: string }> => {
    const child = fork(HOLDER, [], { execArgv: ['--import', 'tsx'] });
    children.push(child);
    const owner = await new Promise<string | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('message', (m) => resolve((m as { owner: string | null }).owner));
      child.send({ path: file.path, externalId, now: NOW, leaseUntil: LEASE_UNTIL });
    });
    if (owner === null) throw new Error('the holder did not get the lease');
    return { child, owner };
  };
  const killed = async (child: ChildProcess) => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  const leaseOf = async (externalId: string) => {
    const record = (await file.get(externalId))!;
    return { owner: record.leaseOwner, until: record.leaseUntil };
  };
  /** A lease taken with an owner id of this format, for holders only a made-up field can describe (another host). */
  const leaseAs = async (externalId: string, identity: ProcessIdentity, host = hostname()) => {
    const owner = `${leaseOwnerPrefix(identity, host)}:${randomUUID()}`;
    expect(await file.acquireLease(externalId, owner, LEASE_UNTIL, NOW)).not.toBeNull();
    return owner;
  };

  it('releases the lease of a holder killed with SIGKILL, naming the user and its pid; another owner takes it at once', async () => {
    const id = await user();
    const { child, owner } = await holder(id);
    expect(owner.startsWith(`acctops-cli@`)).toBe(true);
    expect(owner).toContain(`/${child.pid}/`);
    await killed(child);

    expect(await store.reclaimAbandoned(NOW)).toEqual({ users: [id], holders: [child.pid] });
    expect(await leaseOf(id)).toEqual({ owner: null, until: null });
    expect(await store.acquireLease(id, `acctops-cli:${randomUUID()}`, LEASE_UNTIL, NOW)).not.toBeNull();
  });

  it('leaves the lease of a live holder; takes it back once that holder is killed', async () => {
    const id = await user();
    const { child, owner } = await holder(id);

    expect(await store.reclaimAbandoned(NOW)).toEqual({ users: [], holders: [] });
    expect(await leaseOf(id)).toEqual({ owner, until: LEASE_UNTIL });
    expect(await store.acquireLease(id, `acctops-cli:${randomUUID()}`, LEASE_UNTIL, NOW)).toBeNull();

    await killed(child);
    expect(await store.reclaimAbandoned(NOW)).toEqual({ users: [id], holders: [child.pid] });
  });

  it('a live pid that is now another process (pid reused): its recorded start time differs, so the holder is dead', async () => {
    const { child } = await holder(await user());
    const start = startOf(child.pid!);
    if (start === undefined) return; // No /proc: a live pid cannot be told apart, and is left alone (next case).
    const id = await user();
    await leaseAs(id, { ...ownIdentity(), pid: child.pid!, start: String(Number(start) + 1) });
    expect(await store.reclaimAbandoned(NOW)).toEqual({ users: [id], holders: [child.pid] });
  });

  it('keeps the lease whenever the holder is not provably dead: another host, a live pid it cannot verify, an id without a holder', async () => {
    const first = await user();
    const { child } = await holder(first);
    const dead = { ...ownIdentity(), pid: child.pid!, start: startOf(child.pid!) };
    await killed(child);

    // Another host's pids and boots mean nothing here, even where the same pid is dead on this one.
    const otherHost = await user();
    const otherOwner = await leaseAs(otherHost, dead, `not-${hostname()}`.slice(0, 64));
    // A live pid whose start time was not recorded (no /proc where it ran): the same process or not, nobody can tell.
    const unverified = await user();
    const unverifiedOwner = await leaseAs(unverified, { pid: process.pid, boot: ownIdentity().boot });
    // An older acctops's id, and a deployed worker's: no holder named.
    const legacy = await user();
    const legacyOwner = `acctops-cli:${randomUUID()}`;
    await file.acquireLease(legacy, legacyOwner, LEASE_UNTIL, NOW);
    const worker = await user();
    const workerOwner = `refresh-tokens:${randomUUID()}`;
    await file.acquireLease(worker, workerOwner, LEASE_UNTIL, NOW);

    // Only the dead holder's own lease, on this host, is taken back.
    expect(await store.reclaimAbandoned(NOW)).toEqual({ users: [first], holders: [dead.pid] });
    expect(await leaseOf(otherHost)).toEqual({ owner: otherOwner, until: LEASE_UNTIL });
    expect(await leaseOf(unverified)).toEqual({ owner: unverifiedOwner, until: LEASE_UNTIL });
    expect(await leaseOf(legacy)).toEqual({ owner: legacyOwner, until: LEASE_UNTIL });
    expect(await leaseOf(worker)).toEqual({ owner: workerOwner, until: LEASE_UNTIL });
  });

  it('an expired lease is free already: not counted, left as it is', async () => {
    const id = await user();
    const { child, owner } = await holder(id);
    await killed(child);
    expect(await store.reclaimAbandoned(LEASE_UNTIL)).toEqual({ users: [], holders: [] });
    expect(await leaseOf(id)).toEqual({ owner, until: LEASE_UNTIL });
  });

  it('a hostname the owner id cannot hold is named by its digest, and still recognised as this host', async () => {
    const { child } = await holder(await user());
    const dead = { ...ownIdentity(), pid: child.pid!, start: startOf(child.pid!) };
    await killed(child);
    const long = `${'a'.repeat(70)}.example`;
    const prefix = leaseOwnerPrefix(dead, long);
    expect(prefix).toMatch(/^acctops-cli@h-[0-9a-f]{16}\//);
    const owner = `${prefix}:${randomUUID()}`;
    expect(owner.length).toBeLessThanOrEqual(256);
    expect(abandonedBy(owner, long)).toBe(dead.pid);
    expect(abandonedBy(owner, 'other')).toBeUndefined();
  });
});
