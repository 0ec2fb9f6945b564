import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseJson, useCliState } from '../helpers/cli';

const MONTH = '2026-10';

/** The keys every row of `export --json` has, whatever its status (README: an absent value is null). */
const ROW_KEYS = [
  'athenaEmpty',
  'companyId',
  'defaultCurrency',
  'duplicatesDropped',
  'error',
  'manifestUrl',
  'records',
  'runId',
  'staleSymlinks',
  'status',
  'taxReportsWithoutCurrency',
  'totals',
  'transactionsDateTo',
  'transactionsOutsidePeriod',
  'transactionsWithDefaultCurrency',
  'undatedTaxReports',
];

interface Row {
  companyId: string;
  status: string;
  error: { code: string; exitCode: number; hint: string | null } | null;
}

/**
 * `acctops export` in the local mode when it cannot do its work: a target it cannot write and a
 * refused narrower re-export are one error of the command (README, "Exit codes"); what fails for
 * one company, or a registry entry it cannot read, leaves the report and exit 5.
 */
describe('acctops export: errors of the command, of a company, of a registry entry', () => {
  const state = useCliState({ cwd: (dir) => dir });
  const { acctops } = state;
  let companies: string[];

  beforeAll(async () => {
    const listed = parseJson<{ companies: { companyId: string }[] }>(await acctops('--json', 'companies', 'list'));
    companies = listed.companies.map((c) => c.companyId).sort();
    expect(companies).toHaveLength(3);
    await writeFile(join(state.dir, 'a-file'), 'not a directory');
    await symlink('loop', join(state.dir, 'loop'));
  });

  it.each([
    ['a regular file', 'a-file', /: a part of the path is a file, not a directory \(ENOTDIR\)/],
    ['a path under a device', '/dev/null/x', /: a part of the path is a file, not a directory \(ENOTDIR\)/],
    ['a directory under /proc', '/proc/acctops-forbidden', /: no such file or directory, .* \(ENOENT\)/],
    // Said in words, the path shortened once: Node's own message repeated the 300 bytes twice.
    [
      'a path component over 255 bytes',
      'x'.repeat(300),
      // The head shown is the path's first 60 characters: how many x's it keeps depends on the temp directory's path.
      /x*…x{10,40}\/exports: the path or a name in it is too long \(ENAMETOOLONG\) \(name a shorter path/,
    ],
    // The parent is made before the name fails: it goes again, and the tree is as it was.
    [
      'a new directory whose name is over 255 bytes',
      `new-parent/${'y'.repeat(300)}`,
      /: the path or a name in it is too long \(ENAMETOOLONG\)/,
    ],
    [
      'a symbolic link that points to itself',
      'loop/sub',
      /: too many levels of symbolic links, .* \(ELOOP\) \(name a real directory: a symbolic link on the path leads back to itself\)/,
    ],
  ])('--out on %s: one error line for the whole command, exit 3, nothing on stdout', async (_what, target, cause) => {
    const before = (await readdir(state.dir, { recursive: true })).sort();
    const result = await acctops('export', '--month', MONTH, '--out', target);
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toEqual([expect.stringMatching(/^acctops: error: --out cannot be written at \/\S+: .+ \(name a .*\)$/)]);
    expect(lines[0]).toMatch(cause);
    // Found before any company was read: no company is named, and no export of the state appeared.
    for (const company of companies) expect(result.stderr).not.toContain(company);
    expect((await readdir(state.dir, { recursive: true })).sort()).toEqual(before);
    expect(await readFile(join(state.dir, 'a-file'), 'utf8')).toBe('not a directory');
  });

  it.each([
    ['unset', undefined],
    ['empty', ''],
  ])('--out s3://… with AWS_REGION %s (and no profile): one error naming AWS_REGION, exit 3, before any company', async (_what, region) => {
    const result = await state.run(['export', '--month', MONTH, '--out', 's3://some-bucket/x'], {
      env: { AWS_REGION: region, AWS_ACCESS_KEY_ID: 'AKIALOCALPEER000000', AWS_SECRET_ACCESS_KEY: 'local-peer-not-a-secret' },
    });
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toEqual([
      'acctops: error: --out cannot be written at s3://some-bucket/x/exports: no AWS region is set (pass --region, set AWS_REGION, or give the profile a region)',
    ]);
  });

  it('--json: the same error is one JSON object on stderr', async () => {
    const result = await acctops('--json', 'export', '--month', MONTH, '--out', '/dev/null/x');
    expect(result.code).toBe(3);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      error: {
        exitCode: 3,
        code: 'export_target_unwritable',
        message: expect.stringMatching(/^--out cannot be written/),
        hint: expect.any(String),
      },
    });
  });

  it('a narrower re-export refused for every company is exit 2, one error line, no table', async () => {
    expect((await acctops('export', '--month', MONTH, '--out', 'all')).code).toBe(0);
    for (const json of [false, true]) {
      const result = await acctops(...(json ? ['--json'] : []), 'export', '--month', MONTH, '--out', 'all', '--format', 'csv');
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      if (json) expect(JSON.parse(lines[0]!)).toMatchObject({ error: { exitCode: 2, code: 'export_formats_dropped' } });
      else
        expect(lines[0]).toMatch(
          /^acctops: error: every company's period would lose formats, the first \([0-9a-f-]{36}\): the period's current export also has jsonl and parquet of categories, tax_reports and transactions \(run [^)]+\), which this re-export would delete \(ask for the period's formats with --format, or add --replace-formats to delete the others' files\)$/,
        );
    }
  });

  it('refused for one company only: the others are exported, the report shows it, its line has the error form, exit 5; every row has every key', async () => {
    const [first, ...others] = companies;
    expect((await acctops('export', '--month', MONTH, '--out', 'mixed', '--company', first!)).code).toBe(0);
    const result = await acctops('--json', 'export', '--month', MONTH, '--out', 'mixed', '--format', 'csv');
    expect(result.code).toBe(5);
    const rows = parseJson<{ companies: Row[]; skipped: unknown[] }>(result).companies;
    expect(rows.map((r) => [r.companyId, r.status])).toEqual([[first, 'failed'], ...others.map((c) => [c, 'completed'])]);
    for (const row of rows) expect(Object.keys(row).sort()).toEqual(ROW_KEYS);
    expect(rows[0]).toMatchObject({ manifestUrl: null, runId: null, records: null, totals: null, undatedTaxReports: null });
    expect(rows[0]!.error).toMatchObject({ code: 'export_formats_dropped', exitCode: 2, hint: expect.stringMatching(/--replace-formats/) });
    expect(rows[1]).toMatchObject({ error: null, undatedTaxReports: 0 });
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ error: { companyId: first, code: 'export_formats_dropped', exitCode: 2 } });

    const text = await acctops('export', '--month', MONTH, '--out', 'mixed', '--format', 'csv');
    expect(text.code).toBe(5);
    expect(text.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^acctops: error: company ${first}: .* \\(.*\\)$`))]);
    expect(text.stdout).toMatch(/failed/);
  });

  it('registry entries it cannot read are named on stderr (by id, or by position), listed in --json, exit 5', async () => {
    const path = join(state.dir, 'companies.json');
    const original = await readFile(path, 'utf8');
    const file = JSON.parse(original) as { items: Record<string, { formats: string[] } & Record<string, unknown>> };
    const broken = companies[1]!;
    // A string where the list belongs: zod also finds it "too big", which only follows from that.
    (file.items[broken] as Record<string, unknown>).formats = 'xlsx';
    file.items['hand-edit'] = { companyId: 'sk_live_pastedbymistake', formats: ['csv'] };
    await writeFile(path, JSON.stringify(file), { mode: 0o600 });
    try {
      const result = await acctops('export', '--month', MONTH, '--out', 'skips');
      expect(result.code).toBe(5);
      expect(result.stdout).toContain(companies[0]);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines).toContainEqual(
        `acctops: error: company registry entry ${broken}: not exported: formats: expected array (\`acctops local repair\` sets the entry aside, then \`acctops companies add --company <id>\` registers the company again)`,
      );
      expect(lines).toContainEqual(
        expect.stringMatching(/^acctops: error: company registry entry at position \d+: not exported: companyId/),
      );
      expect(`${result.stdout}${result.stderr}`).not.toContain('sk_live');

      const json = await acctops('--json', 'export', '--month', MONTH, '--out', 'skips');
      expect(json.code).toBe(5);
      const report = parseJson<{ companies: Row[]; skipped: { key: string; position: number; issues: { path: string }[] }[] }>(json);
      expect(report.companies.map((c) => c.companyId)).toEqual([companies[0], companies[2]]);
      expect(report.skipped).toEqual(
        expect.arrayContaining([
          // --json keeps every issue; only the line drops the one that follows from the first.
          {
            key: broken,
            position: expect.any(Number),
            issues: [{ path: 'formats', message: 'expected array' }, expect.objectContaining({ path: 'formats' })],
          },
          {
            key: '(malformed key)',
            position: expect.any(Number),
            issues: expect.arrayContaining([expect.objectContaining({ path: 'companyId' })]),
          },
        ]),
      );
      expect(
        json.stderr
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as unknown),
      ).toHaveLength(2);
    } finally {
      await writeFile(path, original, { mode: 0o600 });
    }
  });
});
