import { spawn, type ChildProcess } from 'node:child_process';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { monthOf } from '../../sandbox/seed';
import { startOf } from '../../src/adapters/local/process-identity';
import { ACCTOPS_BIN, cliEnv, runAcctops, tempStateDir } from '../helpers/cli';
import { startS3, type LocalS3 } from '../helpers/s3rver';

const SIGNAL_AT_STAGING = resolve(__dirname, '..', 'helpers', 'signal-at-staging-preload.cjs');

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

  /** Starts an export into `dir`, sends `signal` once it streams the month, and returns how it ended. */
  async function interruptedMidExport(dir: string, signal: NodeJS.Signals): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [ACCTOPS_BIN, ...exportArgs(dir)], { env: cliEnv({ ACCTOPS_API_KEY: key }) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      await streaming(dir, child);
      child.kill(signal);
      return { code: await exited, stderr };
    } finally {
      child.kill('SIGKILL');
    }
  }

  it('Ctrl-C while it waits out a Retry-After: exit 130 at once, nothing published', async () => {
    await sandbox.admin.configure({ latencyMs: 0 });
    await sandbox.admin.faults.add({
      route: 'GET /accounting/transactions/',
      times: 'always',
      fault: { type: 'status', status: 429, retryAfter: 60 },
    });
    const dir = join(out.dir, 'waiting');
    const child = spawn(process.execPath, [ACCTOPS_BIN, ...exportArgs(dir)], { env: cliEnv({ ACCTOPS_API_KEY: key }) });
    let stderr = '';
    const waiting = new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('waiting 60 s as it asked (Ctrl-C to stop)')) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      await Promise.race([waiting, exited]);
      expect(stderr).toContain('acctops: the service limits the rate; waiting 60 s as it asked (Ctrl-C to stop)');
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/acctops: error: interrupted \(SIGINT\): .*nothing was published/);
      expect(await manifests(dir)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await sandbox.admin.faults.clear();
    }
  });

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s mid-export: exit %i, one line, nothing staged left and nothing published', async (signal, code) => {
    await sandbox.admin.configure({ latencyMs: 150 });
    // Two parents the export creates as well: all three go again, as after a failed run.
    const dir = join(out.dir, signal, 'deep', 'dir');
    const { code: exitCode, stderr } = await interruptedMidExport(dir, signal);
    expect(exitCode).toBe(code);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^acctops: error: interrupted \\(${signal}\\): .*files of its unfinished run removed; nothing was published, and the --out directory it had created was removed`,
      ),
    );
    // Categories and tax reports were complete before the transactions streamed: removed as well,
    // so that no reader globbing the folder finds a run that was never published; then the folders
    // of that run, and --out with the parents the export made, all empty by then.
    await expect(stat(join(out.dir, signal))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('Ctrl-C mid-export into a directory that was there: the directory and what it held are kept, the folders the export made are not', async () => {
    await sandbox.admin.configure({ latencyMs: 150 });
    const dir = join(out.dir, 'existing');
    await mkdir(join(dir, 'exports', 'mine'), { recursive: true });
    await writeFile(join(dir, 'notes.txt'), 'not the export');
    const { code, stderr } = await interruptedMidExport(dir, 'SIGINT');
    expect(code).toBe(130);
    expect(stderr).toMatch(/nothing was published \(run the export again\)/);
    // exports/ and exports/mine/ were there (empty, as a user may have made them): kept; company=… was the export's.
    expect(((await readdir(dir, { recursive: true })) as string[]).sort()).toEqual(['exports', 'exports/mine', 'notes.txt']);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s between the first write starting and its staging directory being made: no empty .acctops-tmp is left',
    async (signal) => {
      await sandbox.admin.configure({ latencyMs: 0 });
      const dir = join(out.dir, `staging-${signal}`);
      // The preload sends the signal at the export's first mkdir of .acctops-tmp and holds that mkdir
      // back until the process exits, unless the handler waits for it (test/helpers/signal-at-staging-preload.cjs).
      const result = await runAcctops(exportArgs(dir), {
        env: { ACCTOPS_API_KEY: key, NODE_OPTIONS: `--require ${SIGNAL_AT_STAGING}`, ACCTOPS_TEST_SIGNAL_AT_STAGING: signal },
      });
      expect(result.code).toBe(signal === 'SIGINT' ? 130 : 143);
      expect(result.stderr).toMatch(new RegExp(`acctops: error: interrupted \\(${signal}\\): .*nothing was published`));
      await expect(stat(staging(dir))).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await manifests(dir)).toEqual([]);
    },
  );

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

/**
 * The same to `--out s3://…`: the multipart uploads under way are aborted before the exit, and the
 * line says whether that worked. s3rver implements neither AbortMultipartUpload nor
 * ListMultipartUploads; the helper adds both (`multipartUploads`); `aborts: 'refuse'` leaves the
 * abort to s3rver, which refuses it, and `aborts: 'hold'` never answers it (a dead network).
 */
describe('acctops export --out s3://…: interrupted', () => {
  const month = monthOf(Date.now(), -2);
  const BUCKET = 'acctops-exports';
  let sandbox: RunningSandbox;
  let key: string;
  let companyId: string;
  const servers = {} as Record<'answer' | 'refuse' | 'hold', LocalS3>;

  beforeAll(async () => {
    let answer, refuse, hold;
    [sandbox, answer, refuse, hold] = await Promise.all([
      startSandbox({ port: 0, seed: 1, demo: false }),
      startS3([BUCKET], { multipartUploads: true }),
      startS3([BUCKET], { multipartUploads: true, aborts: 'refuse' }),
      startS3([BUCKET], { multipartUploads: true, aborts: 'hold' }),
    ]);
    Object.assign(servers, { answer, refuse, hold });
    const company = await sandbox.admin.createCompany({ currency: 'EUR' });
    companyId = company.publicId;
    await sandbox.admin.addCategory({ companyId, name: 'Rent', cashflowType: 'EXPENSE', vatApplied: 'YES' });
    // ~220 bytes a CSV row: about 9 MB of transactions, so the first 5 MiB part goes up well before the end.
    await sandbox.admin.generateTransactions({ companyId, month, count: 40_000 });
    key = (
      await sandbox.admin.createApiKey({
        companyId,
        permissions: ['read_transactions', 'read_categories', 'read_tax_reports'],
        name: 'interrupt-s3',
      })
    ).key;
  });
  afterAll(async () => {
    await Promise.all([sandbox.stop(), ...Object.values(servers).map((s) => s.stop())]);
  });
  afterEach(() => sandbox.admin.configure({ latencyMs: 0 }));

  /**
   * Starts the export to `target` and resolves once its first part is stored there, the service
   * then made slow, so that the export is surely still running when the test signals it.
   */
  async function exportingPartOne(target: LocalS3, prefix: string) {
    await sandbox.admin.configure({ latencyMs: 20 });
    const child = spawn(
      process.execPath,
      [ACCTOPS_BIN, 'export', '--base-url', sandbox.baseUrl, '--month', month, '--format', 'csv', '--out', `s3://${BUCKET}/${prefix}`],
      {
        env: cliEnv({
          ACCTOPS_API_KEY: key,
          AWS_ENDPOINT_URL_S3: target.endpoint,
          AWS_REGION: 'eu-central-1',
          AWS_ACCESS_KEY_ID: 'S3RVER',
          AWS_SECRET_ACCESS_KEY: 'S3RVER',
        }),
      },
    );
    const output = { stdout: '', stderr: '' };
    child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    try {
      await Promise.race([
        target.answered(
          (r) => r.method === 'PUT' && r.path.startsWith(`/${BUCKET}/${prefix}/`) && r.query.partNumber === '1' && r.status === 200,
        ),
        exited.then(() => Promise.reject(new Error(`the export ended before its first part was stored: ${output.stderr}`))),
      ]);
      await sandbox.admin.configure({ latencyMs: 5_000 });
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
    return { child, exited, output };
  }

  const uploadsLeft = async (target: LocalS3, prefix: string) =>
    (await target.client().send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: `${prefix}/` }))).Uploads ?? [];

  /** Counts only: neither the object keys (they name the company) nor the bucket, nor the S3 credentials. */
  const expectNothingNamed = (stderr: string) => {
    for (const secretish of [companyId, BUCKET, 'S3RVER', key]) expect(stderr).not.toContain(secretish);
  };

  it.each([
    ['SIGINT', 130, 'answer'],
    ['SIGTERM', 143, 'refuse'],
  ] as const)(
    '%s once the first part is stored: exit %i, one line saying whether the abort worked (S3: %s)',
    async (signal, code, server) => {
      const target = servers[server];
      const prefix = `interrupt-${signal}`;
      const { child, exited, output } = await exportingPartOne(target, prefix);
      try {
        child.kill(signal);
        expect(await exited).toBe(code);
      } finally {
        child.kill('SIGKILL');
      }

      expect(output.stdout).toBe('');
      const lines = output.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      if (server === 'answer') {
        expect(lines[0]).toMatch(
          new RegExp(
            `^acctops: error: interrupted \\(${signal}\\): the export was stopped and its [1-9]\\d* unfinished multipart upload\\(s\\) aborted \\(`,
          ),
        );
        expect(await uploadsLeft(target, prefix)).toEqual([]);
      } else {
        expect(lines[0]).toMatch(
          new RegExp(
            `^acctops: error: interrupted \\(${signal}\\): the export was stopped; ([1-9]\\d*) of \\1 unfinished multipart upload\\(s\\) could not be aborted \\(.*lifecycle rule`,
          ),
        );
        expect((await uploadsLeft(target, prefix)).length).toBeGreaterThan(0);
      }
      expectNothingNamed(output.stderr);
    },
  );

  it('an abort with no answer holds the exit only until its deadline, and a second SIGINT ends it at once', async () => {
    const target = servers.hold;
    const abortReceived = (prefix: string) =>
      target.received((r) => r.method === 'DELETE' && r.path.startsWith(`/${BUCKET}/${prefix}/`) && typeof r.query.uploadId === 'string');

    // One signal: the line comes once the deadline (ABANDON_DEADLINE_MS, 4 s) has passed, well inside the steps' 10 s.
    const once = await exportingPartOne(target, 'hold-once');
    try {
      const signalled = Date.now();
      once.child.kill('SIGINT');
      expect(await once.exited).toBe(130);
      expect(Date.now() - signalled).toBeLessThan(9_000);
    } finally {
      once.child.kill('SIGKILL');
    }
    expect(once.output.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^acctops: error: interrupted \(SIGINT\): the export was stopped; 1 of 1 unfinished multipart upload\(s\) could not be aborted/,
      ),
    ]);
    expectNothingNamed(once.output.stderr);

    // Two: the second arrives while the abort waits for its answer, and the process goes without waiting for the deadline.
    const twice = await exportingPartOne(target, 'hold-twice');
    try {
      twice.child.kill('SIGINT');
      await abortReceived('hold-twice');
      const second = Date.now();
      twice.child.kill('SIGINT');
      expect(await twice.exited).toBe(130);
      expect(Date.now() - second).toBeLessThan(2_000);
    } finally {
      twice.child.kill('SIGKILL');
    }
    // Not in silence: one line says what the second signal cut short, which is nothing visible.
    expect(twice.output.stderr.trim().split('\n')).toEqual([
      "acctops: error: stopped at once by a second signal (SIGINT), before the clean-up after the first had finished: the export's clean-up was cut short: nothing was published; the files of its unfinished run, which no manifest lists, may be left until a later export of the period collects them, and its unfinished S3 uploads until the bucket's lifecycle rule, if it has one, removes them",
    ]);
    expectNothingNamed(twice.output.stderr);
  });
});
