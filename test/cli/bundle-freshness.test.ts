import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

/**
 * bin/acctops.cjs runs dist/acctops.cjs only while every file it was built from is unchanged
 * (dist/acctops.meta.json); else the sources through tsx. Checked in a copy of the bin with a
 * stand-in bundle and sources that say which one ran.
 */
describe('bin/acctops.cjs: the bundle runs only while it matches the sources', () => {
  let root: string;

  const run = (env: Record<string, string> = {}) =>
    new Promise<string>((done, fail) => {
      execFile(
        process.execPath,
        [join(root, 'bin', 'acctops.cjs')],
        { env: { PATH: process.env.PATH, ...env }, cwd: root },
        (error, stdout) => (error ? fail(error) : done(stdout.trim())),
      );
    });
  const writeMeta = async (files: string[]) => {
    const inputs = await Promise.all(
      files.map(async (file) => {
        const s = await stat(join(root, file));
        return { file, size: s.size, mtimeMs: s.mtimeMs };
      }),
    );
    await writeFile(join(root, 'dist', 'acctops.meta.json'), JSON.stringify({ builtAt: new Date().toISOString(), inputs }));
  };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'acctops-bin-'));
    await mkdir(join(root, 'bin'));
    await mkdir(join(root, 'dist'));
    await mkdir(join(root, 'cli'));
    await copyFile(join(ROOT, 'bin', 'acctops.cjs'), join(root, 'bin', 'acctops.cjs'));
    await copyFile(join(ROOT, 'bin', 'ts-import-hooks.mjs'), join(root, 'bin', 'ts-import-hooks.mjs'));
    await copyFile(join(ROOT, 'bin', 'hold-signals.cjs'), join(root, 'bin', 'hold-signals.cjs'));
    await symlink(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    await writeFile(join(root, 'bin', 'acctops.ts'), "import './../cli/program';\nprocess.stdout.write('source');\n");
    await writeFile(join(root, 'cli', 'program.ts'), 'export const version = 1;\n');
    await writeFile(join(root, 'dist', 'acctops.cjs'), "process.stdout.write('bundle');\n");
    await writeMeta(['bin/acctops.ts', 'cli/program.ts']);
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('runs the bundle while every input matches its size and mtime', async () => {
    expect(await run()).toBe('bundle');
  });

  it('runs the sources after an edit that keeps the size (git pull without npm ci)', async () => {
    await writeFile(join(root, 'cli', 'program.ts'), 'export const version = 2;\n');
    expect(await run()).toBe('source');
  });

  it('runs the sources when an input only has a new mtime, or is gone', async () => {
    const later = new Date(Date.now() + 60_000);
    await utimes(join(root, 'cli', 'program.ts'), later, later);
    expect(await run()).toBe('source');
    await writeMeta(['bin/acctops.ts', 'cli/program.ts']);
    expect(await run()).toBe('bundle');
    await rm(join(root, 'cli', 'program.ts'));
    await writeFile(join(root, 'bin', 'acctops.ts'), "process.stdout.write('source');\n");
    expect(await run()).toBe('source');
  });

  it('runs the sources without a build record, and when ACCTOPS_FROM_SOURCE=1', async () => {
    expect(await run({ ACCTOPS_FROM_SOURCE: '1' })).toBe('source');
    await rm(join(root, 'dist', 'acctops.meta.json'));
    expect(await run()).toBe('source');
  });
});
