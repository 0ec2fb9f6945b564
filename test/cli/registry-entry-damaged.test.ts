import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson, useCliState, type CliResult } from '../helpers/cli';

interface RegistryFile {
  format: string;
  formatVersion: number;
  items: Record<string, Record<string, unknown>>;
}

const MONTH = '2026-10';
/** Well-formed, never sent: each command here is refused before the key is checked. */
const UNUSED_KEY = `sbx_${'A1b2C3d4'.repeat(4)}`;

/**
 * A company whose local registry entry fails its schema (written past the CLI): every command that
 * names it says so, with the field and the repair, exit 3; `local repair` sets the entry aside and
 * `companies add` (then `restore` for a removed one) brings the company back (decision 86).
 */
describe('acctops: a company whose registry entry is damaged (local mode)', () => {
  // Commands run in the state directory, so that `--out one` goes where the suite's cleanup reaches.
  const state = useCliState({ cwd: (dir) => dir });
  const { acctops } = state;
  let company: string;
  const registryPath = () => join(state.dir, 'companies.json');
  const editEntry = async (change: (entry: Record<string, unknown>) => void) => {
    const file = JSON.parse(await readFile(registryPath(), 'utf8')) as RegistryFile;
    change(file.items[company]!);
    await writeFile(registryPath(), JSON.stringify(file), { mode: 0o600 });
  };
  const expectDamaged = (result: CliResult, field: string) => {
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 3, stdout: '' });
    expect(result.stderr).toMatch(
      new RegExp(`^acctops: error: --company ${company}: its company registry entry is damaged \\(${field}: [^)]*\\); nothing was done`),
    );
    expect(result.stderr).toContain(
      `\`acctops local repair\` sets the entry aside into a file of its own, then \`acctops companies add --company ${company}\` registers the company again`,
    );
    expect(result.stderr).not.toMatch(/no secret tagged|is not an argument of this command|keys install --company/);
  };

  beforeAll(async () => {
    await acctops('local', 'status');
    const sandbox = JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: { companies: { publicId: string }[] } };
    company = sandbox.demo.companies[0]!.publicId.toLowerCase();
  });

  it('an active company: export --company and keys rotate are refused (exit 3), as the full export skips it; nothing rotates', async () => {
    await editEntry((entry) => {
      entry.formats = ['xml'];
    });
    const secretsBefore = await readFile(join(state.dir, 'secrets.json'), 'utf8');
    expectDamaged(await acctops('export', '--company', company, '--month', MONTH, '--out', 'one'), 'formats\\[0\\]');
    expectDamaged(await acctops('keys', 'rotate', '--company', company), 'formats\\[0\\]');
    expect(await readFile(join(state.dir, 'secrets.json'), 'utf8')).toBe(secretsBefore);
    const json = await acctops('--json', 'keys', 'rotate', '--company', company);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { exitCode: 3, code: 'company_entry_damaged' } });

    const doctor = parseJson<{ findings: string[] }>(await acctops('--json', 'doctor'));
    expect(doctor.findings).toContainEqual(
      `company registry entry ${company} is unreadable (formats[0]); the monthly export skips it and no command acts on it: \`acctops local repair\` sets it aside, then \`acctops companies add\` registers the company again`,
    );
  });

  it('a removed one: every command naming it reports the damaged entry, never the key hint; local repair sets it aside; add and restore bring it back', async () => {
    await editEntry((entry) => {
      entry.formats = ['csv'];
    });
    expect((await acctops('companies', 'remove', '--company', company)).code).toBe(0);
    await editEntry((entry) => {
      entry.rotationDays = 'thirty';
    });

    expectDamaged(await acctops('export', '--company', company, '--month', MONTH, '--out', 'one'), 'rotationDays');
    for (const command of [
      ['keys', 'rotate'],
      ['keys', 'status'],
      ['keys', 'revoke-pending'],
      ['keys', 'cancel-rotation'],
      ['companies', 'add'],
      ['companies', 'remove'],
      ['companies', 'restore'],
    ]) {
      expectDamaged(await acctops(...command, '--company', company), 'rotationDays');
    }
    expectDamaged(await state.run(['keys', 'install', '--company', company], { env: { ACCTOPS_API_KEY: UNUSED_KEY } }), 'rotationDays');

    const repair = await acctops('local', 'repair');
    expect(repair.code).toBe(0);
    const keptName = (await readdir(state.dir)).find((name) => name.startsWith('companies.json.damaged-entries-'));
    expect(keptName).toBeDefined();
    const keptAs = join(state.dir, keptName!);
    expect(repair.stdout).toBe(
      `Set aside the damaged registry entry of company ${company} (rotationDays: expected number; it was removed) into ${keptAs}.\n` +
        `  Register it again: \`acctops companies add --company ${company}\`, then \`acctops companies remove --company ${company}\` to keep it removed, ` +
        `or \`acctops companies restore --company ${company}\` to bring back its key secret and rotation.\n`,
    );
    // The entry moved as it was, into a file of the registry's own format; companies.json no longer holds it.
    const kept = JSON.parse(await readFile(keptAs, 'utf8')) as RegistryFile;
    expect(kept).toMatchObject({ format: 'acctops.company-registry', formatVersion: 1 });
    expect(kept.items[company]).toMatchObject({ companyId: company, rotationDays: 'thirty', removedAt: expect.any(String) });
    expect(Object.keys((JSON.parse(await readFile(registryPath(), 'utf8')) as RegistryFile).items)).not.toContain(company);
    expect((await acctops('local', 'repair')).stdout).toBe(`No damaged state file or registry entry in ${state.dir}.\n`);

    expect((await acctops('companies', 'add', '--company', company)).code).toBe(0);
    const restored = await acctops('companies', 'restore', '--company', company);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain('Key secret restored');
    const exported = await acctops('--json', 'export', '--company', company, '--month', MONTH, '--out', 'one');
    expect(exported.code).toBe(0);
    expect(parseJson<{ companies: { companyId: string; status: string }[] }>(exported).companies).toEqual([
      expect.objectContaining({ companyId: company, status: 'completed' }),
    ]);
  });

  it('an entry whose key is no company id is set aside without repeating the key', async () => {
    const file = JSON.parse(await readFile(registryPath(), 'utf8')) as RegistryFile;
    file.items['hand-edit'] = { companyId: 'sk_live_pastedbymistake', formats: ['csv'] };
    await writeFile(registryPath(), JSON.stringify(file), { mode: 0o600 });
    const repair = await acctops('--json', 'local', 'repair');
    expect(repair.code).toBe(0);
    const report = parseJson<{ entriesSetAside: { companyId: string | null; removed: boolean; next: string | null }[] }>(repair);
    expect(report.entriesSetAside).toEqual([expect.objectContaining({ companyId: null, removed: false, next: null })]);
    expect(`${repair.stdout}${repair.stderr}`).not.toMatch(/sk_live|hand-edit/);
    expect((await acctops('companies', 'list')).code).toBe(0);
  });
});

/**
 * The doctor's `revocation_overdue` (an old key the secret still holds, live, with no revocation
 * queued: here the demo key that `keys install` replaced) names the command that fixes it, and
 * `keys revoke-pending --prefix` of that key, which has nothing queued to revoke, names it too.
 */
describe('acctops doctor: revocation_overdue names `doctor --repair` (local mode)', () => {
  const state = useCliState({ cwd: (dir) => dir });
  const { acctops } = state;

  it('the finding line and the revoke-pending refusal name `acctops doctor --repair`, which revokes the key', async () => {
    await acctops('local', 'status');
    const sandbox = JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: { companies: { publicId: string }[] } };
    const company = sandbox.demo.companies[1]!.publicId;
    expect((await acctops('local', 'issue-key', '--company', company, '--out', 'k.txt')).code).toBe(0);
    const key = (await readFile(join(state.dir, 'k.txt'), 'utf8')).trim();
    expect((await state.run(['keys', 'install', '--company', company], { env: { ACCTOPS_API_KEY: key } })).code).toBe(0);
    expect((await acctops('keys', 'rotate', '--company', company)).code).toBe(0);
    expect((await acctops('local', 'advance-clock', '--by', '3h')).code).toBe(0);

    const doctor = await acctops('--json', 'doctor');
    expect(doctor.code).toBe(5);
    const report = parseJson<{ rotations: { findings: { type: string; keyPrefix: string }[] }; findings: string[] }>(doctor);
    const overdue = report.rotations.findings.find((f) => f.type === 'revocation_overdue');
    expect(overdue).toBeDefined();
    expect(report.findings).toContainEqual(
      `rotation revocation_overdue for company ${company}: the previous key is still live after its grace period: \`acctops doctor --repair\` revokes it now`,
    );

    const refused = await acctops('keys', 'revoke-pending', '--company', company, '--prefix', overdue!.keyPrefix);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(
      // The key the install replaced is no longer AWSPREVIOUS after the rotation: the doctor's, not --prefix's (decision 105).
      "another old key still live with no revocation pending is `acctops doctor`'s `revocation_overdue` or `orphan_key`, which `acctops doctor --repair` revokes",
    );

    expect((await acctops('doctor', '--repair')).stdout).toMatch(/repaired revocation_overdue/);
    const after = parseJson<{ rotations: { findings: { type: string }[] } }>(await acctops('--json', 'doctor'));
    expect(after.rotations.findings.map((f) => f.type)).not.toContain('revocation_overdue');
  });
});
