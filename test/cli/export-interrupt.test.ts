import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { monthOf } from '../../sandbox/seed';
import { startOf } from '../../src/adapters/local/process-identity';
import { ACCTOPS_BIN, cliEnv, runAcctops, tempStateDir } from '../helpers/cli';

/**
 * Ctrl-C and SIGTERM during `acctops export` (direct mode, the real binary): the export stops, what
 * it staged in `.acctops-tmp/` is removed, one line says nothing was published, and the exit code
 * is the signal's. A later export removes what a killed process staged, and never a live one's.
 */
describe('acctops export: interrupted', () => {
  const month = monthOf(Date.now(), -2);
  let sandbox: RunningSandbox;
  let key: string;
  let out: { dir: string; remove(): Promise<void> };

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, seed: 1, demo: false });
    const company = await sandbox.admin.createCompany({ currency: 'EUR' });
    await sandbox.admin.addCategory({ companyId: company.publicId, name: 'Rent', cashflowType: 'EXPENSE', vatApplied: 'YES' });
    await sandbox.admin.generateTransactions({ companyId: company.publicId, month, count: 20_000 });
    key = (
      await sandbox.admin.createApiKey({
        companyId: company.publicId,
        permissions: ['read_transactions', 'read_categories', 'read_tax_reports'],
        name: 'interrupt',
      })
    ).key;
    out = await tempStateDir();
  });
  afterAll(async () => {
    await sandbox.stop();
    await out.remove();
  });

  const staging = (dir: string) => join(dir, '.acctops-tmp');
  const exportArgs = (dir: string) => ['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', dir];
  const manifests = async (dir: string): Promise<string[]> =>
    ((await readdir(dir, { recursive: true }).catch(() => [])) as string[]).filter((p) => p.endsWith('_manifest.json'));

  /** Resolves once the export has staged a file with data in it: it is then streaming the month. */
  async function streaming(dir: string, child: ChildProcess): Promise<void> {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && child.exitCode === null;) {
      const names = await readdir(staging(dir)).catch(() => [] as string[]);
      const sizes = await Promise.all(
        names.map((n) =>
          stat(join(staging(dir), n)).then(
            (s) => s.size,
            () => 0,
          ),
        ),
      );
      if (sizes.some((s) => s > 0)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the export never staged a file with data');
  }

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s mid-export: exit %i, one line, nothing staged left and nothing published', async (signal, code) => {
    await sandbox.admin.configure({ latencyMs: 150 });
    const dir = join(out.dir, signal);
    const child = spawn(process.execPath, [ACCTOPS_BIN, ...exportArgs(dir)], { env: cliEnv({ ACCTOPS_API_KEY: key }) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      await streaming(dir, child);
      child.kill(signal);
      expect(await exited).toBe(code);
    } finally {
      child.kill('SIGKILL');
    }
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^acctops: error: interrupted \\(${signal}\\): .*staged files removed; nothing was published`));
    await expect(stat(staging(dir))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await manifests(dir)).toEqual([]);
  });

  it("a later export removes a dead process's staged file and keeps a live writer's", async () => {
    await sandbox.admin.configure({ latencyMs: 0 });
    const dir = join(out.dir, 'later');
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((resolve) => dead.once('exit', resolve));
    // Another acctops exporting into the same directory at the same time (docs/exports.md allows it).
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      await mkdir(staging(dir), { recursive: true });
      const hex = 'f'.repeat(16);
      await writeFile(join(staging(dir), `${dead.pid}-0-${hex}.part`), 'left by a killed export');
      const liveName = `${live.pid}-${startOf(live.pid!) ?? 0}-${hex}.part`;
      await writeFile(join(staging(dir), liveName), 'being written');
      const result = await runAcctops(exportArgs(dir), { env: { ACCTOPS_API_KEY: key } });
      expect(result.code).toBe(0);
      expect(await manifests(dir)).toHaveLength(1);
      expect(await readdir(staging(dir))).toEqual([liveName]);
    } finally {
      live.kill();
    }
  });
});
