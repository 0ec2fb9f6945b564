import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';

interface Demo {
  companies: { publicId: string; apiKeys: { key: string; permissions: string[] }[] }[];
}

const UNKNOWN = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

/** `keys install`, `companies remove` and `companies restore` in local mode (the Secrets Manager emulator), through the real binary. */
describe('acctops keys install / companies remove|restore (local mode)', () => {
  let state: { dir: string; remove(): Promise<void> };
  let demo: Demo;
  const outputs: CliResult[] = [];
  const acctops = async (args: string[], env: Record<string, string> = {}) => {
    const result = await runAcctops(['--state-dir', state.dir, ...args], { env });
    outputs.push(result);
    return result;
  };

  beforeAll(async () => {
    state = await tempStateDir();
    await acctops(['local', 'status']);
    demo = (JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: Demo }).demo;
  });
  afterAll(async () => {
    await state.remove();
  });

  it('refuses a malformed id (exit 2, naming the flag) and a company neither registered nor holding a key (exit 3)', async () => {
    const key = demo.companies[0]!.apiKeys.find((k) => k.permissions.includes('full_access'))!.key;
    const bad = await acctops(['keys', 'install', '--company', 'not-a-company'], { ACCTOPS_API_KEY: key });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--company');
    const unknown = await acctops(['keys', 'install', '--company', UNKNOWN], { ACCTOPS_API_KEY: key });
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/no such company in this deployment \(not in the company registry, and no key secret holds its key\)/);
    expect(unknown.stderr).toContain(`\`acctops companies add --company ${UNKNOWN.toLowerCase()}\` registers a new one`);
  });

  it('a key the service refuses is exit 4, nothing stored, and the hint names only ACCTOPS_API_KEY', async () => {
    const company = demo.companies[0]!;
    const key = company.apiKeys.find((k) => k.permissions.includes('full_access'))!.key;
    const secrets = await readFile(join(state.dir, 'secrets.json'), 'utf8');
    const refused = await acctops(['keys', 'install', '--company', company.publicId], { ACCTOPS_API_KEY: `${key.slice(0, -4)}zzzz` });
    expect(refused.code).toBe(4);
    expect(refused.stdout).toBe('');
    const line = refused.stderr.trim();
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toMatch(
      /^acctops: error: authentication failed \(401, .*\(check ACCTOPS_API_KEY: the service refused the key to install .*; nothing was stored\)$/,
    );
    expect(line).not.toMatch(/ACCTOPS_INSTITUTION|stored secret|doctor/);
    expect(await readFile(join(state.dir, 'secrets.json'), 'utf8')).toBe(secrets);
  });

  it('installs idempotently, stops rotation and schedules deletion on remove, and restore undoes it; the key is never printed', async () => {
    const company = demo.companies[0]!;
    const key = company.apiKeys.find((k) => k.permissions.includes('full_access'))!.key;
    // The demo secret rotates every 30 days; registering 10 sets it at once.
    const added = await acctops(['--json', 'companies', 'add', '--company', company.publicId, '--rotation-days', '10']);
    expect(parseJson(added)).toMatchObject({ keyRotation: { result: 'updated', rotationDays: 10 } });

    const first = await acctops(['--json', 'keys', 'install', '--company', company.publicId], { ACCTOPS_API_KEY: key });
    expect(first.code).toBe(0);
    // The demo secret holds this key already, rotating on the registry's 10 days.
    expect(parseJson(first)).toMatchObject({
      companyId: company.publicId,
      secretResult: 'unchanged',
      rotation: 'already_on',
      rotationDays: 10,
      noop: true,
      // The local emulator's secrets name no key (nothing is encrypted): what AWS says of aws/secretsmanager.
      encryption: { kmsKeyId: null, awsManagedKey: true, stageMustNameKey: false },
    });
    const again = await acctops(['keys', 'install', '--company', company.publicId], { ACCTOPS_API_KEY: key });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /already installed .* rotates every 10 days; nothing changed\.\n {2}encrypted with the AWS managed key aws\/secretsmanager\.\n$/,
    );
    expect(again.stderr).not.toContain('warning');

    // Days the registry got past the CLI (edited here in the file) reach the secret at the next install.
    const registryFile = join(state.dir, 'companies.json');
    const edited = JSON.parse(await readFile(registryFile, 'utf8')) as { items: Record<string, { rotationDays?: number }> };
    edited.items[company.publicId]!.rotationDays = 12;
    await writeFile(registryFile, JSON.stringify(edited));
    const installed = await acctops(['--json', 'keys', 'install', '--company', company.publicId], { ACCTOPS_API_KEY: key });
    expect(parseJson(installed)).toMatchObject({ secretResult: 'unchanged', rotation: 'updated', rotationDays: 12, noop: false });
    expect(parseJson(await acctops(['--json', 'companies', 'add', '--company', company.publicId, '--rotation-days', '10']))).toMatchObject({
      keyRotation: { result: 'updated', rotationDays: 10 },
    });

    const removed = await acctops(['--json', 'companies', 'remove', '--company', company.publicId, '--recovery-days', '7']);
    expect(removed.code).toBe(0);
    expect(parseJson(removed)).toMatchObject({
      result: 'removed',
      key: { result: 'scheduled', rotationStopped: true, recoveryWindowDays: 7 },
      undo: `acctops companies restore --company ${company.publicId}`,
    });
    // Removed: the key secret is out of the directory, so a rotation finds no secret.
    expect((await acctops(['keys', 'rotate', '--company', company.publicId])).code).not.toBe(0);
    // A second remove (with the flag's default window) tells the deletion the first one scheduled.
    const { deletionDate } = parseJson<{ key: { deletionDate: string } }>(removed).key;
    const twice = await acctops(['--json', 'companies', 'remove', '--company', company.publicId]);
    expect(parseJson(twice)).toMatchObject({
      result: 'already_removed',
      key: { result: 'already_scheduled', deletionDate, recoveryWindowDays: 7 },
    });
    const askedAt = parseJson<{ key: { scheduledAt: string } }>(twice).key.scheduledAt;
    expect(Date.parse(deletionDate) - Date.parse(askedAt)).toBe(7 * 86_400_000);
    const text = await acctops(['companies', 'remove', '--company', company.publicId]);
    expect(text.stdout).toContain(`deleted for good on ${deletionDate} (recovery window 7 days)`);
    // Removed before the registry recorded the deletion: its date is not known, and no window is claimed.
    const path = join(state.dir, 'companies.json');
    const registry = JSON.parse(await readFile(path, 'utf8')) as { items: Record<string, { keyDeletion?: unknown }> };
    expect(registry.items[company.publicId]!.keyDeletion).toEqual({ deletionDate, recoveryWindowDays: 7 });
    delete registry.items[company.publicId]!.keyDeletion;
    await writeFile(path, JSON.stringify(registry));
    const unrecorded = parseJson<{ key: Record<string, unknown> }>(
      await acctops(['--json', 'companies', 'remove', '--company', company.publicId]),
    );
    expect(unrecorded.key).toMatchObject({ result: 'already_scheduled', scheduledAt: askedAt, recoveryWindowDays: null });
    // Not known is null, not a missing key (README, "Global options").
    expect(unrecorded.key).toHaveProperty('deletionDate', null);

    const restored = await acctops(['--json', 'companies', 'restore', '--company', company.publicId]);
    expect(restored.code).toBe(0);
    expect(parseJson(restored)).toMatchObject({ result: 'readded', key: 'restored', rotationDays: 10 });
    expect(JSON.parse(await readFile(path, 'utf8'))).not.toHaveProperty(['items', company.publicId, 'keyDeletion']);
    const afterRestore = await acctops(['--json', 'keys', 'install', '--company', company.publicId], { ACCTOPS_API_KEY: key });
    expect(parseJson(afterRestore)).toMatchObject({ noop: true, secretResult: 'unchanged', rotation: 'already_on' });
    expect((await acctops(['keys', 'rotate', '--company', company.publicId])).code).toBe(0);

    for (const o of outputs) expect(`${o.stdout}${o.stderr}`).not.toContain(key);
  });

  it('remove of an unknown company is exit 3', async () => {
    const unknown = await acctops(['companies', 'remove', '--company', UNKNOWN]);
    expect(unknown.code).toBe(3);
  });
});
