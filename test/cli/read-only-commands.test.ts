import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson, runAcctops, tempStateDir, useCliState } from '../helpers/cli';

/**
 * Every file under the state directory (the exports too): its inode, nanosecond mtime and content
 * hash. A file written again, even with the same bytes, gets a new inode (they are replaced by a
 * rename) and a new mtime.
 */
async function stateFiles(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of (await readdir(dir, { recursive: true })).sort()) {
    const info = await stat(join(dir, entry), { bigint: true });
    if (!info.isFile()) {
      files[entry] = 'directory';
      continue;
    }
    const hash = createHash('sha256')
      .update(await readFile(join(dir, entry)))
      .digest('hex');
    files[entry] = `ino ${info.ino} mtime ${info.mtimeNs} sha256 ${hash}`;
  }
  return files;
}

/** The commands that only read, each for people and with --json (README, "Local mode"). */
const READ_ONLY = [['users', 'list'], ['keys', 'status'], ['companies', 'list'], ['doctor'], ['local', 'status']].flatMap((command) => [
  command,
  ['--json', ...command],
]);

/**
 * A command that only reads leaves the state directory as it found it: no state file written
 * again (not even with the same content), none created. Every local command saves its world; what
 * changed is written, and the service's and the emulator's record of a read-only command's own
 * requests (a key's last use, a secret's last access) is not kept.
 */
describe('acctops CLI: read-only local commands do not write the state directory', () => {
  const state = useCliState();
  const { acctops, outputs } = state;
  let company: string;

  beforeAll(async () => {
    // A state with every file: users (tokens.json), a rotation whose old key waits for its grace
    // period (revocations.json), the registry (companies.json) and an export (exports/).
    expect(
      (await acctops('users', 'onboard', '--external-id', randomUUID(), '--username', 'reader', '--email', 'r@example.com')).code,
    ).toBe(0);
    company = parseJson<{ companies: { companyId: string }[] }>(await acctops('--json', 'companies', 'list')).companies[0]!.companyId;
    expect((await acctops('keys', 'rotate', '--company', company)).code).toBe(0);
    expect((await acctops('export', '--company', company, '--format', 'csv')).code).toBe(0);
  });

  it('a state the first command creates is written by it, read-only or not (README: first use provisions)', async () => {
    const fresh = await tempStateDir();
    try {
      const dir = join(fresh.dir, 'new');
      const created = await runAcctops(['--state-dir', dir, 'companies', 'list']);
      outputs.push(created);
      expect(created.code).toBe(0);
      expect(created.stderr).toMatch(/created the local state/);
      expect((await readdir(dir)).sort()).toEqual(['companies.json', 'sandbox.json', 'secrets.json', 'state.json']);
    } finally {
      await fresh.remove();
    }
  });

  it('users list, keys status, companies list, doctor and local status change no file of an existing state', async () => {
    const before = await stateFiles(state.dir);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining(['companies.json', 'revocations.json', 'sandbox.json', 'secrets.json', 'state.json', 'tokens.json']),
    );
    expect(Object.keys(before).some((file) => file.endsWith('_manifest.json'))).toBe(true);
    for (const command of READ_ONLY) {
      const result = await acctops(...command);
      // Each check names the command: doctor may have findings (exit 5), nothing may fail.
      const name = command.join(' ');
      expect({ name, exit: result.code === 5 ? 0 : result.code }).toEqual({ name, exit: 0 });
      expect({ name, files: await stateFiles(state.dir) }).toEqual({ name, files: before });
    }
    // keys status read the pending revocation from the files it left alone.
    const status = parseJson<{ companies: { companyId: string; pendingRevocations: unknown[] }[] }>(
      await acctops('--json', 'keys', 'status'),
    );
    expect(status.companies.find((c) => c.companyId === company)!.pendingRevocations).toHaveLength(1);
  });

  it('a state without companies.json (from before the registry): read-only commands seed it in memory, the first change writes it', async () => {
    const registry = await readFile(join(state.dir, 'companies.json'), 'utf8');
    await rm(join(state.dir, 'companies.json'));
    try {
      const before = await stateFiles(state.dir);
      const listed = parseJson<{ companies: { companyId: string }[] }>(await acctops('--json', 'companies', 'list'));
      expect(listed.companies).toHaveLength(3);
      expect((await acctops('doctor')).code).not.toBe(1);
      expect(await stateFiles(state.dir)).toEqual(before);

      const added = await acctops('companies', 'add', '--company', randomUUID());
      expect(added.code).toBe(0);
      const written = JSON.parse(await readFile(join(state.dir, 'companies.json'), 'utf8')) as { items: Record<string, unknown> };
      expect(Object.keys(written.items)).toHaveLength(4);
    } finally {
      await writeFile(join(state.dir, 'companies.json'), registry);
    }
  });

  it('what a read-only command does change is saved: a revocation that fell due, run by keys status', async () => {
    // The grace period (30 minutes) is over by the state's clock, without a command that runs it.
    const statePath = join(state.dir, 'state.json');
    const saved = JSON.parse(await readFile(statePath, 'utf8')) as { clockOffsetMs: number };
    await writeFile(statePath, JSON.stringify({ ...saved, clockOffsetMs: saved.clockOffsetMs + 31 * 60_000 }));
    const before = await stateFiles(state.dir);

    const status = parseJson<{ revokedBefore: { keyPrefix: string; outcome: string }[] }>(await acctops('--json', 'keys', 'status'));
    expect(status.revokedBefore).toEqual([expect.objectContaining({ outcome: 'revoked' })]);
    const after = await stateFiles(state.dir);
    // The service now refuses the old key (sandbox.json) and the revocation is done (revocations.json).
    expect(after['sandbox.json']).not.toBe(before['sandbox.json']);
    expect(after['revocations.json']).not.toBe(before['revocations.json']);

    const again = parseJson<{ revokedBefore: unknown[]; companies: { pendingRevocations: unknown[] }[] }>(
      await acctops('--json', 'keys', 'status'),
    );
    expect(again.revokedBefore).toEqual([]);
    expect(again.companies.every((c) => c.pendingRevocations.length === 0)).toBe(true);
    expect(await stateFiles(state.dir)).toEqual(after);
  });
});
