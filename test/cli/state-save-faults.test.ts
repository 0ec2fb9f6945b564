import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withLocalWorld } from '../../cli/local/local-world';
import { StateNotSavedError } from '../../cli/local/state-dir';
import { silentLogger } from '../../src/core/shared/logger';
import { ACCTOPS_BIN, cliEnv, parseJson, useCliState, type CliResult } from '../helpers/cli';

/**
 * The final save of a local command fails (a full disk, a quota, a file too large for the file
 * system): the command has acted, so it is exit 1, in one line that names the file, the cause in
 * words with its errno code, and what the state directory holds now (README, "Exit codes"). It was
 * Node's raw `Error: EFBIG: file too large, write`.
 */
describe('acctops: a local state that cannot be saved at the end of a command', () => {
  const state = useCliState();

  /** The binary under `ulimit -f <kib>`: a write past that size fails with EFBIG (Node ignores SIGXFSZ). */
  const underFileSizeLimit = (kib: number, args: readonly string[]): Promise<CliResult> =>
    new Promise((resolve, reject) => {
      execFile(
        'bash',
        ['-c', `ulimit -f ${kib} && exec "$0" "$@"`, process.execPath, ACCTOPS_BIN, '--state-dir', state.dir, ...args],
        { env: cliEnv(), cwd: tmpdir(), timeout: 60_000 },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== 'number') return reject(error);
          const result = { code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr };
          state.outputs.push(result);
          resolve(result);
        },
      );
    });

  interface StatusBody {
    companies: {
      companyId: string;
      keyPrefix: string;
      apiKeyId: string;
      pendingRevocations: { keyPrefix: string }[];
      currentKeyRevocations: { apiKeyId: string; keyPrefix: string; revokeAt: string }[];
    }[];
  }

  it('keys rotate whose save does not fit: exit 1, one line naming saving.json and EFBIG; the directory keeps the state from before', async () => {
    const before = parseJson<StatusBody>(await state.acctops('--json', 'keys', 'status')).companies[0]!;
    const files = async () => (await readdir(state.dir)).sort();
    const sandboxBefore = await readFile(join(state.dir, 'sandbox.json'), 'utf8');
    // sandbox.json is ~32 KiB and the journal of a rotation holds it and secrets.json: 16 KiB
    // lets the lock and the small files be written and stops the journal.
    expect(sandboxBefore.length).toBeGreaterThan(16 * 1024);

    const rotated = await underFileSizeLimit(16, ['keys', 'rotate', '--company', before.companyId]);

    expect(rotated.code).toBe(1);
    const lines = rotated.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `acctops: error: the command ran, but its local state could not be saved: ${join(state.dir, 'saving.json')}: the file is too large for the file system (EFBIG) (the state directory still holds the state from before this command, which is not kept: fix the cause, then run the command again)`,
    );
    expect(await files()).not.toContain('saving.json');
    expect((await files()).filter((f) => f.includes('.tmp') || f.startsWith('.'))).toEqual([]);
    expect(await readFile(join(state.dir, 'sandbox.json'), 'utf8')).toBe(sandboxBefore);
    // What the next command sees: the key from before, still the one stored and the one the service takes.
    const after = parseJson<StatusBody>(await state.acctops('--json', 'keys', 'status', '--company', before.companyId)).companies[0]!;
    expect(after.keyPrefix).toBe(before.keyPrefix);
    expect((await state.acctops('users', 'list')).code).toBe(0);
  });

  it('keys status after that refused save: the revocation the rotation queued for the key that stayed current is not shown pending', async () => {
    // The first test's rotation queued its old key's revocation (revocations.json is written as it
    // changes) and then lost the secrets' save: that key is still the current one (decisions 82, 83).
    const status = await state.acctops('--json', 'keys', 'status');
    expect(status.code).toBe(0);
    const row = parseJson<StatusBody>(status).companies[0]!;
    expect(row.pendingRevocations).toEqual([]);
    expect(row.currentKeyRevocations).toEqual([{ apiKeyId: row.apiKeyId, keyPrefix: row.keyPrefix, revokeAt: expect.any(String) }]);

    const text = await state.acctops('keys', 'status', '--company', row.companyId);
    expect(text.code).toBe(0);
    const [, , line] = text.stdout.split('\n');
    // Its row: the prefix only under KEY, and PENDING REVOCATIONS empty.
    expect(line!.split(row.keyPrefix)).toHaveLength(2);
    expect(line!.trimEnd()).toMatch(/ -$/);
    expect(text.stdout).toContain(`${row.companyId}: a revocation of the current key ${row.keyPrefix}… is queued (due in `);
    expect(text.stdout).toContain('it revokes nothing: when it runs, the key is kept (kept_current)');

    // `local status` counts it apart too, not as pending.
    const local = await state.acctops('--json', 'local', 'status');
    expect(parseJson<{ pendingRevocations: number; currentKeyRevocations: number }>(local)).toMatchObject({
      pendingRevocations: 0,
      currentKeyRevocations: 1,
    });
    expect((await state.acctops('local', 'status')).stdout).toContain(
      'Revocations   0 pending; 1 more queued of a current key, which revoke nothing (`acctops keys status` names them)\n',
    );
  });

  it("--json says it as the error's code, state_not_saved", async () => {
    const company = parseJson<StatusBody>(await state.acctops('--json', 'keys', 'status')).companies[0]!;
    const rotated = await underFileSizeLimit(16, ['--json', 'keys', 'rotate', '--company', company.companyId]);
    expect(rotated.code).toBe(1);
    expect(JSON.stringify(JSON.parse(rotated.stdout || rotated.stderr))).toContain('"state_not_saved"');
  });

  it('a save that failed after its journal was written: the error says so, and the next command completes it', async () => {
    const company = parseJson<StatusBody>(await state.acctops('--json', 'keys', 'status')).companies[0]!;
    const blocked = join(state.dir, 'state.json');
    let offset = 0;
    const error = await withLocalWorld({ stateDir: state.dir, logger: silentLogger, env: cliEnv() }, async (world) => {
      // Two snapshots change (the service's clock and the local settings), so the save journals
      // both; then a directory takes state.json's place and its rename fails.
      world.clock.advance(60_000);
      offset = world.clock.offsetMs;
      await world.sandbox.admin.addCategory({ companyId: company.companyId, name: 'Journal test' });
      await rm(blocked);
      await mkdir(join(blocked, 'in-the-way'), { recursive: true });
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StateNotSavedError);
    expect((error as StateNotSavedError).path).toBe(blocked);
    expect((error as StateNotSavedError).hint).toBe(
      'the whole save is in saving.json, which the next command completes: fix the cause, then run any command (acctops doctor)',
    );
    expect(await readdir(state.dir)).toContain('saving.json');

    await rm(blocked, { recursive: true });
    await writeFile(blocked, '{}\n');
    expect((await state.acctops('users', 'list')).code).toBe(0);
    expect(await readdir(state.dir)).not.toContain('saving.json');
    const saved = JSON.parse(await readFile(blocked, 'utf8')) as { clockOffsetMs: number };
    expect(saved.clockOffsetMs).toBe(offset);
    expect(await readFile(join(state.dir, 'sandbox.json'), 'utf8')).toContain('Journal test');
  });
});
