import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KEY_STATUS_ROW_FIELDS, parseJson, runAcctops, tempStateDir } from '../helpers/cli';

const COMPANY = '6F1C2A3B-0000-4000-8000-0000000000C1';
const OTHER = '6f1c2a3b-0000-4000-8000-0000000000c2';

/** The demo companies of a local state (its embedded service's demo data). */
async function demoCompanies(stateDir: string): Promise<string[]> {
  const sandbox = JSON.parse(await readFile(join(stateDir, 'sandbox.json'), 'utf8')) as { demo: { companies: { publicId: string }[] } };
  return sandbox.demo.companies.map((c) => c.publicId.toLowerCase());
}

/** `acctops companies` in local mode, through the real binary, in one state directory. */
describe('acctops companies (local mode)', () => {
  let state: { dir: string; remove(): Promise<void> };
  const acctops = (...args: string[]) => runAcctops(['--state-dir', state.dir, ...args]);
  /** The demo companies the registry is seeded with when the state is created. */
  let demo: string[];
  const notDemo = <C extends { companyId: string }>(companies: C[]) => companies.filter((c) => !demo.includes(c.companyId));

  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(async () => {
    await state.remove();
  });

  it('add registers a company (lower case) and is idempotent; other settings update it', async () => {
    const first = await acctops('--json', 'companies', 'add', '--company', COMPANY, '--formats', 'csv,parquet', '--rotation-days', '14');
    expect(first.code).toBe(0);
    demo = await demoCompanies(state.dir);
    expect(parseJson(first)).toMatchObject({
      result: 'added',
      company: { companyId: COMPANY.toLowerCase(), status: 'active', formats: ['csv', 'parquet'], rotationDays: 14 },
    });
    const again = await acctops('--json', 'companies', 'add', '--company', COMPANY, '--formats', 'parquet,csv', '--rotation-days', '14');
    expect(again.code).toBe(0);
    expect(parseJson(again)).toMatchObject({ result: 'unchanged' });
    const registry = JSON.parse(await readFile(join(state.dir, 'companies.json'), 'utf8')) as { items: Record<string, unknown> };
    expect(Object.keys(registry.items).sort()).toEqual([...demo, COMPANY.toLowerCase()].sort());
  });

  it('add --default-currency registers the currency of transactions sent without one; list shows it (JSON, text), an entry without it is EUR', async () => {
    const company = demo[1]!;
    type Row = { companyId: string; defaultCurrency: string | null };
    const set = await acctops('--json', 'companies', 'add', '--company', company, '--default-currency', 'jpy');
    expect(set.code).toBe(0);
    expect(parseJson(set)).toMatchObject({ result: 'updated', company: { companyId: company, defaultCurrency: 'JPY' } });
    // Without the flag the registered currency stays; the same one again changes nothing.
    expect(parseJson(await acctops('--json', 'companies', 'add', '--company', company))).toMatchObject({
      result: 'unchanged',
      company: { defaultCurrency: 'JPY' },
    });
    expect(parseJson(await acctops('--json', 'companies', 'add', '--company', company, '--default-currency', 'JPY'))).toMatchObject({
      result: 'unchanged',
    });
    const stored = JSON.parse(await readFile(join(state.dir, 'companies.json'), 'utf8')) as {
      items: Record<string, Record<string, unknown>>;
    };
    expect(stored.items[company]).toMatchObject({ defaultCurrency: 'JPY' });
    // The seeded demo entries were written before the field existed in this state: read as none (EUR).
    expect(stored.items[demo[2]!]).not.toHaveProperty('defaultCurrency');

    const rows = parseJson<{ companies: Row[] }>(await acctops('--json', 'companies', 'list')).companies;
    expect(rows.find((r) => r.companyId === company)?.defaultCurrency).toBe('JPY');
    expect(rows.find((r) => r.companyId === demo[2])).toHaveProperty('defaultCurrency', null);
    const text = await acctops('companies', 'list');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('DEFAULT CURRENCY');
    expect(text.stdout).toMatch(new RegExp(`${company} .* JPY`));
    expect(text.stdout).toMatch(new RegExp(`${demo[2]} .* EUR \\(default\\)`));
    const added = await acctops('companies', 'add', '--company', company, '--default-currency', 'chf');
    expect(added.stdout).toContain(`Company ${company}: updated (formats jsonl, csv, parquet; default currency CHF).`);

    for (const bad of ['EURO', 'XYZ', 'sk_live_x', '']) {
      const refused = await acctops('--json', 'companies', 'add', '--company', company, '--default-currency', bad);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('--default-currency');
      expect(refused.stderr).toContain('expected an ISO 4217 currency code');
      expect(refused.stderr).not.toContain('sk_live');
      expect(refused.stdout).toBe('');
    }
    expect(parseJson<{ companies: Row[] }>(await acctops('--json', 'companies', 'list')).companies).toContainEqual(
      expect.objectContaining({ companyId: company, defaultCurrency: 'CHF' }),
    );
  });

  it('add --rotation-days sets a rotating key secret to those days at once (no rotation now); without the flag the secret is not looked at', async () => {
    const company = demo[0]!;
    const statusOf = async () => {
      const status = parseJson<{ companies: { companyId: string; rotationDays: number; lastRotatedAt: string | null }[] }>(
        await acctops('--json', 'keys', 'status'),
      );
      return status.companies.find((c) => c.companyId === company)!;
    };
    const before = await statusOf();
    expect(before.rotationDays).not.toBe(9);
    const changed = await acctops('--json', 'companies', 'add', '--company', company, '--rotation-days', '9');
    expect(changed.code).toBe(0);
    expect(parseJson(changed)).toMatchObject({ keyRotation: { result: 'updated', rotationDays: 9 } });
    const after = await statusOf();
    expect(after.rotationDays).toBe(9);
    expect(after.lastRotatedAt).toBe(before.lastRotatedAt);
    expect(parseJson(await acctops('--json', 'companies', 'add', '--company', company, '--rotation-days', '9'))).toMatchObject({
      keyRotation: { result: 'unchanged', rotationDays: 9 },
    });
    expect(parseJson(await acctops('--json', 'companies', 'add', '--company', company))).toMatchObject({ keyRotation: null });
    expect(parseJson(await acctops('--json', 'companies', 'add', '--company', COMPANY, '--rotation-days', '14'))).toMatchObject({
      keyRotation: { result: 'no_secret', rotationDays: 14 },
    });
    const text = await acctops('companies', 'add', '--company', company, '--rotation-days', '12');
    expect(text.stdout).toContain('Key rotation: the key secret now rotates every 12 days (no rotation now).');
  });

  it('doctor names an active registered company without a key secret (its exports fail) and how to fix it, exit 5', async () => {
    const doctor = await acctops('--json', 'doctor');
    expect(doctor.code).toBe(5);
    const id = COMPANY.toLowerCase();
    const report = parseJson<{ findings: string[]; rotations: { findings: { type: string; companyId: string }[] } }>(doctor);
    expect(report.rotations.findings.filter((f) => f.type === 'key_missing').map((f) => f.companyId)).toEqual([id]);
    expect(report.findings).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `key_missing for company ${id}: .*\`acctops keys install --company ${id}\`.*\`acctops companies remove --company ${id}\``,
        ),
      ),
    );
    // The exports section lists it too, marked; its missing export is said by key_missing alone (no export runs without a key).
    const exports = (report as unknown as { exports: { companies: { companyId: string; keyMissing: boolean; overdue: boolean }[] } })
      .exports.companies;
    expect(exports.map((c) => c.companyId).sort()).toEqual([...demo, id].sort());
    expect(exports.filter((c) => c.keyMissing).map((c) => c.companyId)).toEqual([id]);
    expect(report.findings.filter((f) => f.includes(id))).toHaveLength(1);

    // The count says what was checked: the key secrets, and the registered company without one apart.
    const text = await acctops('doctor');
    expect(text.stdout).toContain(
      `  ${demo.length} company key(s) checked, 1 registered company(ies) without a key, ${report.rotations.findings.length} finding(s)`,
    );
    expect(text.stdout).toMatch(new RegExp(`^ +${id} +none +.*NO \\(no key\\)`, 'm'));
  });

  it('keys status lists an active registered company without a key secret, with `keys install`, in text and --json (exit 5)', async () => {
    const id = COMPANY.toLowerCase();
    const json = await acctops('--json', 'keys', 'status');
    expect(json.code).toBe(5);
    const rows = parseJson<{ companies: Record<string, unknown>[] }>(json).companies;
    expect(rows.map((r) => r.companyId).sort()).toEqual([...demo, id].sort());
    const row = rows.find((r) => r.companyId === id)!;
    expect(Object.keys(row).sort()).toEqual(KEY_STATUS_ROW_FIELDS);
    expect(row).toMatchObject({ secret: null, keyPrefix: null, permissions: null, rotationEnabled: false, pendingRevocations: [] });
    expect(row.error).toContain(`acctops keys install --company ${id}`);
    // The companies with a key are listed as before.
    expect(rows.filter((r) => r.companyId !== id).every((r) => r.error === null && typeof r.secret === 'string')).toBe(true);

    const text = await acctops('keys', 'status');
    expect(text.code).toBe(5);
    expect(text.stdout).toMatch(new RegExp(`${id} +no key secret`));
    expect(text.stdout).toContain(`! ${id}: registered, but no key secret holds its key`);
    expect(text.stdout).toContain(`\`acctops keys install --company ${id}\``);
  });

  it('refuses a malformed id or rotation, exit 2, naming the flag and not echoing the value', async () => {
    const bad = await acctops('companies', 'add', '--company', 'sk_live_notauuid');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--company');
    expect(bad.stderr).not.toContain('sk_live_notauuid');
    const days = await acctops('companies', 'add', '--company', OTHER, '--rotation-days', '0');
    expect(days.code).toBe(2);
    expect(days.stderr).toContain('--rotation-days');
    const removeBad = await acctops('companies', 'remove', '--company', 'nope');
    expect(removeBad.code).toBe(2);
  });

  it('remove marks the company removed (exit 0), a second time says so, an unknown company is exit 3', async () => {
    const removed = await acctops('--json', 'companies', 'remove', '--company', COMPANY);
    expect(removed.code).toBe(0);
    expect(parseJson(removed)).toMatchObject({ result: 'removed', company: { status: 'removed' } });
    const again = await acctops('companies', 'remove', '--company', COMPANY);
    expect(again.stdout).toMatch(/already removed/);
    // The undo is acctops's own in either mode, with the company filled in: no placeholder to edit.
    expect(again.stdout).toContain(`Undo: \`acctops companies restore --company ${COMPANY.toLowerCase()}\``);
    expect(again.stdout).not.toMatch(/<name>|restore-secret/);
    expect(parseJson(await acctops('--json', 'companies', 'remove', '--company', COMPANY))).toMatchObject({ result: 'already_removed' });
    // A removed company is not exported: its missing key is no finding.
    expect(parseJson<{ findings: string[] }>(await acctops('--json', 'doctor')).findings.filter((f) => /key_missing/.test(f))).toEqual([]);
    // Restored, it says so for people (the registry's `readded` stays in --json) and names its own keys install; then removed again.
    const restored = await acctops('companies', 'restore', '--company', COMPANY);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain(`Company ${COMPANY.toLowerCase()}: restored (active again).`);
    expect(restored.stdout).toContain(`\`acctops keys install --company ${COMPANY.toLowerCase()}\` creates one`);
    expect(restored.stdout).not.toMatch(/<id>|readded/);
    const removedAgain = await acctops('companies', 'remove', '--company', COMPANY);
    expect(removedAgain.code).toBe(0);
    // Nothing but the registry entry to undo: it has no key secret.
    expect(removedAgain.stdout).toContain(`Undo: \`acctops companies restore --company ${COMPANY.toLowerCase()}\` (the registry entry).`);
    const unknown = await acctops('companies', 'remove', '--company', OTHER);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(new RegExp(`^acctops: error: --company ${OTHER}: no such company .*not in the company registry`));
    expect(unknown.stderr).toMatch(/companies list/);
  });

  it('list shows active and removed companies; --active only the active ones; an unreadable entry is exit 5, named, not echoed', async () => {
    expect((await acctops('companies', 'add', '--company', OTHER)).code).toBe(0);
    const all = parseJson<{ companies: { companyId: string; status: string }[] }>(await acctops('--json', 'companies', 'list'));
    expect(notDemo(all.companies).map((c) => [c.companyId, c.status])).toEqual([
      [COMPANY.toLowerCase(), 'removed'],
      [OTHER, 'active'],
    ]);
    const active = parseJson<{ companies: { companyId: string }[] }>(await acctops('--json', 'companies', 'list', '--active'));
    expect(notDemo(active.companies).map((c) => c.companyId)).toEqual([OTHER]);

    const path = join(state.dir, 'companies.json');
    const file = JSON.parse(await readFile(path, 'utf8')) as { items: Record<string, unknown> };
    file.items['hand-edit'] = { companyId: 'sk_live_pastedbymistake', formats: ['csv'] };
    await writeFile(path, JSON.stringify(file), { mode: 0o600 });
    const listed = await acctops('companies', 'list');
    expect(listed.code).toBe(5);
    expect(listed.stdout).toContain('skipped an unreadable entry (malformed key)');
    // The repair decision 86 gave the doctor and export, named here too (local mode).
    expect(listed.stdout).toMatch(
      /skipped an unreadable entry \(malformed key\): [^\n]*; the monthly export skips it too: `acctops local repair` sets the entry aside, then `acctops companies add --company <id>` registers the company again\n/,
    );
    expect(listed.stdout).toContain(OTHER);
    expect(`${listed.stdout}${listed.stderr}`).not.toContain('sk_live');

    // `acctops doctor` lists it too (exit 5: findings).
    const doctor = await acctops('--json', 'doctor');
    expect(doctor.code).toBe(5);
    const report = parseJson<{ registry: { companies: number; active: number; unreadable: { key: string }[] }; findings: string[] }>(
      doctor,
    );
    expect(report.registry).toMatchObject({
      companies: 2 + demo.length,
      active: 1 + demo.length,
      unreadable: [{ key: '(malformed key)' }],
    });
    expect(report.findings).toContainEqual(expect.stringContaining('company registry entry (malformed key) is unreadable (companyId'));
    expect(`${doctor.stdout}${doctor.stderr}`).not.toContain('sk_live');
  });
});

describe('acctops companies (local mode): the demo companies are registered when the state is created', () => {
  it('companies list shows them from the first command on, and export still covers them after a companies add', async () => {
    const state = await tempStateDir();
    try {
      const acctops = (...args: string[]) => runAcctops(['--state-dir', state.dir, ...args]);
      const listed = await acctops('--json', 'companies', 'list');
      expect(listed.code).toBe(0);
      const demo = await demoCompanies(state.dir);
      expect(demo).toHaveLength(3);
      expect(parseJson<{ companies: { companyId: string; status: string }[] }>(listed).companies).toEqual(
        demo.sort().map((companyId) => expect.objectContaining({ companyId, status: 'active' }) as unknown),
      );

      expect((await acctops('companies', 'add', '--company', OTHER)).code).toBe(0);
      const exported = await acctops('--json', 'export', '--month', '2026-01', '--format', 'csv');
      const report = parseJson<{ companies: { companyId: string; status: string }[] }>(exported);
      const completed = report.companies.filter((c) => c.status === 'completed').map((c) => c.companyId.toLowerCase());
      expect(completed.sort()).toEqual(demo.sort());
      // The added company has no key yet: its row says so; the demo companies are not dropped for it.
      expect(report.companies.map((c) => c.companyId.toLowerCase())).toContain(OTHER);
    } finally {
      await state.remove();
    }
  });
});
