import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson, runAcctops, trackStateSecrets, useCliState } from '../helpers/cli';
import { shellQuote } from '../../cli/format';

interface Demo {
  companies: { publicId: string }[];
}

const UNKNOWN = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

/**
 * `acctops local issue-key` through the real binary: the runbook "Install a company API key"
 * rehearsed in the local mode, its key going to a file alone (never to stdout, stderr or --json).
 */
describe('acctops local issue-key (local mode)', () => {
  const state = useCliState({ cwd: (dir) => join(dir, 'work') });
  const acctops = (args: string[], env: Record<string, string> = {}) => state.run(args, { env });
  let work: string;
  let company: string;
  const keyIn = async (file: string) => (await readFile(join(work, file), 'utf8')).trim();

  beforeAll(async () => {
    work = join(state.dir, 'work');
    await mkdir(work);
    await acctops(['local', 'status']);
    company = (JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: Demo }).demo.companies[0]!.publicId;
  });

  it('writes a 0600 file whose key `keys install` accepts; `keys status` then shows its prefix; the key is printed nowhere', async () => {
    const issued = await acctops(['local', 'issue-key', '--company', company, '--out', 'key.txt']);
    expect(issued.code).toBe(0);
    expect((await stat(join(work, 'key.txt'))).mode & 0o777).toBe(0o600);
    const key = await keyIn('key.txt');
    expect(key).toMatch(/^sbx_[A-Za-z0-9]{32,}$/);
    const prefix = key.slice(0, 'sbx_'.length + 8);
    expect(issued.stdout).toContain(`Issued key ${prefix}… for company ${company}, written to ${join(work, 'key.txt')} (mode 0600).`);
    // The next step names the file itself, quoted for the shell, so that it can be pasted; and the
    // state directory, which is not the working directory's .acctops here: without it the pasted
    // install would open another state, whose service never issued this key.
    expect(issued.stdout).toContain(
      `ACCTOPS_API_KEY="$(cat ${shellQuote(join(work, 'key.txt'))})" acctops --state-dir ${shellQuote(state.dir)} keys install --company ${company}`,
    );

    const installed = await acctops(['--json', 'keys', 'install', '--company', company], { ACCTOPS_API_KEY: key });
    expect(installed.code).toBe(0);
    const report = parseJson<{ keyPrefix: string; permissions: string[]; secretResult: string }>(installed);
    expect(report.keyPrefix).toBe(prefix);
    // Exactly what `keys install` requires and the exports read: no full_access.
    expect([...report.permissions].sort()).toEqual(['manage_api_keys', 'read_categories', 'read_tax_reports', 'read_transactions']);
    expect(report.secretResult).toBe('replaced');

    const status = await acctops(['--json', 'keys', 'status', '--company', company]);
    expect(status.code).toBe(0);
    expect(parseJson<{ companies: { keyPrefix: string }[] }>(status).companies.map((c) => c.keyPrefix)).toEqual([prefix]);

    const json = await acctops(['--json', 'local', 'issue-key', '--company', company, '--out', 'key2.txt']);
    expect(json.code).toBe(0);
    const key2 = await keyIn('key2.txt');
    expect(parseJson(json)).toEqual({ companyId: company, keyPrefix: key2.slice(0, 12), out: join(work, 'key2.txt') });
    expect(key2).not.toBe(key);

    for (const result of [issued, installed, status, json]) {
      for (const text of [result.stdout, result.stderr]) {
        expect(text).not.toContain(key);
        expect(text).not.toContain(key2);
      }
    }
  });

  it("names no --state-dir when the state is the working directory's .acctops", async () => {
    const local = await runAcctops(['local', 'issue-key', '--company', company, '--out', 'key-default.txt'], { cwd: work });
    state.outputs.push(local);
    await trackStateSecrets(join(work, '.acctops'));
    expect(local.code).toBe(0);
    expect(local.stdout).toContain(
      `ACCTOPS_API_KEY="$(cat ${shellQuote(join(work, 'key-default.txt'))})" acctops keys install --company ${company}, then delete the file.`,
    );
  });

  it('refuses an existing --out file (exit 3, naming it) and leaves it untouched; no key is created', async () => {
    await writeFile(join(work, 'taken.txt'), 'not yours\n', { mode: 0o644 });
    const sandboxBefore = await readFile(join(state.dir, 'sandbox.json'), 'utf8');
    const refused = await acctops(['local', 'issue-key', '--company', company, '--out', 'taken.txt']);
    expect(refused.code).toBe(3);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`--out ${join(work, 'taken.txt')} already exists`);
    expect(await readFile(join(work, 'taken.txt'), 'utf8')).toBe('not yours\n');
    expect((await stat(join(work, 'taken.txt'))).mode & 0o777).toBe(0o644);
    // The service's keys are as they were: the file is refused before the key exists.
    expect(await readFile(join(state.dir, 'sandbox.json'), 'utf8')).toBe(sandboxBefore);
  });

  it('an unknown company is exit 3 (unknown_company) and leaves no file', async () => {
    const unknown = await acctops(['--json', 'local', 'issue-key', '--company', UNKNOWN, '--out', 'ghost.txt']);
    expect(unknown.code).toBe(3);
    expect(JSON.parse(unknown.stderr.trim())).toMatchObject({ error: { code: 'unknown_company', exitCode: 3 } });
    await expect(stat(join(work, 'ghost.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a company registered with `companies add` but unknown to the service is refused as that, naming the companies the sandbox knows', async () => {
    const registeredOnly = '1b2c3d4e-5f60-4b7c-8d9e-0f1a2b3c4d5e';
    expect((await acctops(['companies', 'add', '--company', registeredOnly])).code).toBe(0);
    expect((await acctops(['companies', 'list'])).stdout).toContain(registeredOnly);

    const refused = await acctops(['local', 'issue-key', '--company', registeredOnly, '--out', 'registered.txt']);
    expect(refused.code).toBe(3);
    expect(refused.stdout).toBe('');
    // Not "no such company in this deployment": `companies list` lists it.
    expect(refused.stderr).not.toMatch(/no such company/);
    expect(refused.stderr).toMatch(
      new RegExp(`--company ${registeredOnly}: registered with acctops \\(\`acctops companies add\`.*\\), but unknown to the service`),
    );
    expect(refused.stderr).toContain(company);
    expect(refused.stderr).toContain(`acctops companies remove --company ${registeredOnly}`);
    await expect(stat(join(work, 'registered.txt'))).rejects.toMatchObject({ code: 'ENOENT' });

    const json = await acctops(['--json', 'local', 'issue-key', '--company', registeredOnly, '--out', 'registered.txt']);
    expect(JSON.parse(json.stderr.trim())).toMatchObject({ error: { code: 'unknown_company', exitCode: 3 } });
  });

  it('with a stack named it is exit 3, as every local-mode command: in AWS mode the key comes from the company; no file is written', async () => {
    for (const [args, env] of [
      [['--stack', 'acctops-production'], {}],
      [[], { ACCTOPS_STACK: 'acctops-production' }],
    ] as const) {
      const refused = await acctops([...args, 'local', 'issue-key', '--company', company, '--out', 'aws.txt'], env);
      expect(refused.code).toBe(3);
      expect(refused.stderr).toMatch(/creates keys only in the local sandbox.*the key comes from the company/);
      await expect(stat(join(work, 'aws.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    }
  });
});
