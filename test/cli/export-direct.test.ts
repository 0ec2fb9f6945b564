import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ManualClock } from '../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { monthOf } from '../../sandbox/seed';
import { expectNoCanaries, trackSecret } from '../helpers/canary';
import { parseJson, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';
import { startS3, type LocalS3 } from '../helpers/s3rver';
import { TEST_DIALECTS } from '../helpers/dialects';
import { minor } from '../integration/sandbox/support';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  /**
   * `acctops export` in direct mode, through the real binary: a service at --base-url (the sandbox,
   * started here), the company key in ACCTOPS_API_KEY, files to a directory or to S3 (s3rver).
   */
  describe('acctops export: direct mode', () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 5, 9, 0, 0));
    const month = monthOf(clock.now(), -1);
    let sandbox: RunningSandbox;
    let s3: LocalS3;
    let out: { dir: string; remove(): Promise<void> };
    let key: string;
    let companyId: string;
    const outputs: CliResult[] = [];
    const acctops = async (args: string[], env: Record<string, string> = {}) => {
      const result = await runAcctops(args, { env, cwd: out.dir });
      outputs.push(result);
      return result;
    };

    beforeAll(async () => {
      sandbox = await startSandbox({ dialect, port: 0, clock, seed: 5 });
      s3 = await startS3(['acctops-exports']);
      out = await tempStateDir();
      const company = sandbox.demo!.companies[1]!;
      companyId = company.publicId;
      key = company.apiKeys.find((k) => k.name.includes('read only'))!.key;
      trackSecret(key);
      trackSecret(sandbox.demo!.institution.secret);
    });
    afterAll(async () => {
      expectNoCanaries(
        outputs.map((o) => `${o.stdout}\n${o.stderr}`),
        'acctops output',
      );
      await s3.stop();
      await sandbox.stop();
      await out.remove();
    });

    it('exports the key’s company for the month to --out, same layout and manifest as the pipeline', async () => {
      const result = await acctops(['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'files'], {
        ACCTOPS_API_KEY: key,
      });
      expect(result.code).toBe(0);
      const report = parseJson<{
        mode: string;
        companies: {
          companyId: string;
          status: string;
          manifestUrl: string;
          records: Record<string, number>;
          transactionsDateTo: {
            setting: string;
            read: string;
            lastDayRecords: number;
            lastDayRepeats: number;
            nextDayDropped: number;
          } | null;
        }[];
      }>(result);
      expect(report.mode).toBe('direct');
      expect(report.companies).toEqual([expect.objectContaining({ companyId, status: 'completed' })]);
      // How date_to was read, from the manifest: the minimal dialect's excludes its day, so the last day was read on its own.
      const dateTo = report.companies[0]!.transactionsDateTo!;
      expect(dateTo).toMatchObject({ setting: 'detect', read: dialect === 'minimal' ? 'exclusive' : 'inclusive', lastDayRepeats: 0 });
      expect(dateTo.lastDayRecords > 0).toBe(dialect === 'minimal');
      const manifestKey = `exports/company=${companyId}/period=${month}/_manifest.json`;
      expect(report.companies[0]!.manifestUrl).toBe(`file://${join(out.dir, 'files', manifestKey)}`);
      const manifest = JSON.parse(await readFile(join(out.dir, 'files', manifestKey), 'utf8')) as {
        source: { baseUrl: string };
        datasets: { transactions: { dateTo: unknown } };
        objects: { key: string; sha256: string }[];
      };
      expect(manifest.source.baseUrl).toBe(sandbox.baseUrl);
      // The report's JSON has every key (nextDayDropped 0); the manifest leaves a count of none out.
      expect(dateTo.nextDayDropped).toBe(0);
      const { nextDayDropped: _none, ...reported } = dateTo;
      expect(manifest.datasets.transactions.dateTo).toEqual(reported);
      for (const object of manifest.objects) {
        expect(
          createHash('sha256')
            .update(await readFile(join(out.dir, 'files', object.key)))
            .digest('hex'),
        ).toBe(object.sha256);
      }
      expect(report.companies[0]!.records.transactions).toBeGreaterThan(100);
      // Only the exports: the store's staging directory (.acctops-tmp) is gone once it is empty.
      expect(await readdir(join(out.dir, 'files'))).toEqual(['exports']);

      // The period is complete and its totals exact: the manifest's transaction totals equal the sum,
      // in minor units, of every transaction of the month read from the service over plain HTTP.
      const totals = (
        JSON.parse(await readFile(join(out.dir, 'files', manifestKey), 'utf8')) as {
          datasets: Record<string, { records: number; totals: { amountMinor: string; records: number }[] }>;
        }
      ).datasets.transactions!;
      const [year, mm] = month.split('-').map(Number) as [number, number];
      const last = new Date(Date.UTC(year, mm, 0)).getUTCDate();
      // The whole month: the minimal dialect's date_to is exclusive (docs/assumptions.md), so it ends on the 1st of the next.
      const to = dialect === 'minimal' ? new Date(Date.UTC(year, mm, 1)).toISOString().slice(0, 10) : `${month}-${last}`;
      let url: string | null = `${sandbox.baseUrl}/accounting/transactions/?date_from=${month}-01&date_to=${to}&page_size=1000`;
      let sum = 0n;
      let count = 0;
      while (url) {
        const page = (await (await fetch(url, { headers: { authorization: `Bearer ${key}` } })).json()) as {
          next: string | null;
          results: { amount: number | string }[];
        };
        for (const t of page.results) sum += minor(t.amount);
        count += page.results.length;
        url = page.next;
      }
      expect(totals.records).toBe(count);
      expect(totals.totals.reduce((n, t) => n + BigInt(t.amountMinor), 0n)).toBe(sum);
    });

    it("--tax-report-fields names the service's fields: each tax report lands in the month its period ends in", async () => {
      // The sandbox seeds one report a month for the six months before now. The minimal dialect
      // names the period startDate/endDate and the creation `created`, which nothing else tells us.
      const names =
        dialect === 'minimal'
          ? ['--tax-report-fields', 'periodStart=startDate,periodEnd=endDate,createdAt=created,amountDue=totalAmount,currency=currencyCode']
          : [];
      const run = async (target: string, extra: string[]) => {
        const result = await acctops(
          ['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--format', 'csv', '--out', target, ...extra],
          {
            ACCTOPS_API_KEY: key,
          },
        );
        expect(result.code).toBe(0);
        const row = parseJson<{ companies: { records: Record<string, number>; undatedTaxReports: number | null }[] }>(result).companies[0]!;
        return { records: row.records.tax_reports, undated: row.undatedTaxReports };
      };
      expect(await run('named', names)).toEqual({ records: 1, undated: 0 });
      const manifestKey = `exports/company=${companyId}/period=${month}/_manifest.json`;
      const manifest = JSON.parse(await readFile(join(out.dir, 'named', manifestKey), 'utf8')) as {
        objects: { key: string; dataset: string }[];
      };
      const csv = await readFile(join(out.dir, 'named', manifest.objects.find((o) => o.dataset === 'tax_reports')!.key), 'utf8');
      const [header, row] = csv
        .replace(/^\uFEFF/, '')
        .trimEnd()
        .split('\r\n') as [string, string];
      const cell = (name: string) => row.split(',')[header.split(',').indexOf(name)];
      expect(cell('period_end')!.slice(0, 7)).toBe(month);
      expect(cell('amount_due_minor')).toMatch(/^\d+$/);
      // Without the names, a service that spells them otherwise gets every report in every month.
      expect(await run('unnamed', [])).toEqual(dialect === 'minimal' ? { records: 6, undated: 6 } : { records: 1, undated: 0 });
      // The human report says it in a note that points at the flag.
      const human = await acctops(['export', '--base-url', sandbox.baseUrl, '--month', month, '--format', 'csv', '--out', 'unnamed'], {
        ACCTOPS_API_KEY: key,
      });
      // A note, on stderr (docs/cli.md): stdout is the report.
      expect(human.stderr.includes('acctops: note: ')).toBe(dialect === 'minimal');
      // The minimal dialect's date_to excludes its day: said, with the flag that skips the probe.
      expect(
        /note: .*: the service's date_to excludes its day \(as its probe found\): the last day of \d{4}-\d{2} was read on its own, \d+ transaction\(s\), and written with the month; --date-to exclusive skips the probe/.test(
          human.stderr,
        ),
      ).toBe(dialect === 'minimal');
      expect(human.stderr.includes('6 tax report(s) with no period or creation date')).toBe(dialect === 'minimal');
      expect(human.stderr.includes('--tax-report-fields')).toBe(dialect === 'minimal');
      expect(human.stdout).not.toContain('note:');

      const bad = await acctops(['export', '--base-url', sandbox.baseUrl, '--tax-report-fields', 'periodFinish=endDate'], {
        ACCTOPS_API_KEY: key,
      });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('periodFinish');
    });

    /** A CSV export of `month` in direct mode with `key`, into `target` under --out. */
    const exportCsv = (key: string, target: string, extra: string[], json: boolean) =>
      acctops(
        [
          ...(json ? ['--json'] : []),
          'export',
          '--base-url',
          sandbox.baseUrl,
          '--month',
          month,
          '--format',
          'csv',
          '--out',
          target,
          ...extra,
        ],
        { ACCTOPS_API_KEY: key },
      );

    it("labels a tax report with the service's currency or with none: never the default EUR", async () => {
      // The GBP company. The minimal dialect names the currency currencyCode; the spec names none.
      const gbp = sandbox.demo!.companies[2]!;
      const gbpKey = gbp.apiKeys.find((k) => k.name.includes('read only'))!.key;
      trackSecret(gbpKey);
      const period = 'periodStart=startDate,periodEnd=endDate,createdAt=created,amountDue=totalAmount';
      const exportTo = (target: string, extra: string[], json: boolean) => exportCsv(gbpKey, target, extra, json);
      const run = async (target: string, extra: string[]) => {
        const result = await exportTo(target, extra, true);
        expect(result.code).toBe(0);
        const row = parseJson<{ companies: { taxReportsWithoutCurrency: number | null }[] }>(result).companies[0]!;
        const manifestKey = `exports/company=${gbp.publicId}/period=${month}/_manifest.json`;
        const manifest = JSON.parse(await readFile(join(out.dir, target, manifestKey), 'utf8')) as {
          datasets: { tax_reports: { totals: { currency: string }[] } };
          objects: { key: string; dataset: string }[];
        };
        const csv = await readFile(join(out.dir, target, manifest.objects.find((o) => o.dataset === 'tax_reports')!.key), 'utf8');
        const [header, line] = csv
          .replace(/^\uFEFF/, '')
          .trimEnd()
          .split('\r\n') as [string, string];
        const cells = line.split(',');
        const cell = (name: string) => cells[header.split(',').indexOf(name)];
        return {
          withoutCurrency: row.taxReportsWithoutCurrency,
          totals: manifest.datasets.tax_reports.totals.map((t) => t.currency),
          currency: cell('currency'),
          amountDue: cell('amount_due'),
          minor: cell('amount_due_minor'),
        };
      };

      const named = await run('gbp-named', dialect === 'minimal' ? ['--tax-report-fields', `${period},currency=currencyCode`] : []);
      expect(named).toMatchObject({
        withoutCurrency: 0,
        totals: ['GBP'],
        currency: 'GBP',
        amountDue: expect.stringMatching(/^\d+\.\d\d$/),
      });

      if (dialect === 'minimal') {
        // The reviewer's case: the amount named, its currency not. Unknown, and said so.
        const unnamed = await run('gbp-no-currency', ['--tax-report-fields', period]);
        expect(unnamed).toEqual({ withoutCurrency: 1, totals: [], currency: '', amountDue: '', minor: named.minor });
        const result = await exportTo('gbp-no-currency', ['--tax-report-fields', period], false);
        expect(result.code).toBe(0);
        expect(result.stderr).toContain('1 tax report(s) with an amount but no currency');
        expect(result.stderr).toContain('--tax-report-fields currency=<its field>');
      }
    });

    it('labels transactions the service sends without a currency EUR, counts them and says how to name another: --default-currency', async () => {
      // The GBP company, from a service that sends no currency on a transaction (the spec names none).
      const gbp = sandbox.demo!.companies[2]!;
      expect(gbp.currency).toBe('GBP');
      const gbpKey = gbp.apiKeys.find((k) => k.name.includes('read only'))!.key;
      trackSecret(gbpKey);
      const exportTo = (target: string, extra: string[], json = true) => exportCsv(gbpKey, target, extra, json);
      const run = async (target: string, extra: string[]) => {
        const result = await exportTo(target, extra);
        expect(result.code).toBe(0);
        const report = parseJson<{
          defaultCurrency: string;
          companies: { records: { transactions: number }; transactionsWithDefaultCurrency: number; totals: { currency: string }[] }[];
        }>(result);
        const row = report.companies[0]!;
        return {
          defaultCurrency: report.defaultCurrency,
          records: row.records.transactions,
          defaulted: row.transactionsWithDefaultCurrency,
          currencies: [...new Set(row.totals.map((t) => t.currency))],
        };
      };

      // The service names the currency: nothing is defaulted.
      const named = await run('gbp-currency', []);
      expect(named).toMatchObject({ defaultCurrency: 'EUR', defaulted: 0, currencies: ['GBP'] });
      expect(named.records).toBeGreaterThan(0);

      await sandbox.admin.configure({ transactionCurrency: false });
      try {
        expect(await run('gbp-eur', [])).toEqual({ ...named, defaulted: named.records, currencies: ['EUR'] });
        const human = await exportTo('gbp-eur', [], false);
        expect(human.code).toBe(0);
        expect(human.stderr).toContain(`${named.records} transaction(s) without a currency from the service, labelled EUR`);
        expect(human.stderr).toContain('--default-currency <ISO code>');
        expect(human.stdout).not.toContain('note:');

        // Lower case is read as the code; the count stays, since the currency is still ours, not the service's.
        expect(await run('gbp-gbp', ['--default-currency', 'gbp'])).toEqual({
          ...named,
          defaultCurrency: 'GBP',
          defaulted: named.records,
        });
      } finally {
        await sandbox.admin.configure({ transactionCurrency: true });
      }

      for (const bad of ['EURO', 'XYZ', '€', '']) {
        const refused = await exportTo('gbp-bad', ['--default-currency', bad]);
        expect(refused.code).toBe(2);
        expect(refused.stderr).toContain('--default-currency');
        expect(refused.stderr).toContain('expected an ISO 4217 currency code');
        expect(refused.stdout).toBe('');
      }
    });

    it('ACCTOPS_BASE_URL works like --base-url, and --out s3://bucket/prefix writes to S3', async () => {
      const result = await acctops(['export', '--month', month, '--format', 'csv', '--out', 's3://acctops-exports/team-a'], {
        ACCTOPS_API_KEY: key,
        ACCTOPS_BASE_URL: sandbox.baseUrl,
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_REGION: 'eu-central-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      });
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/Export of .* \(direct mode, csv\) to s3:\/\/acctops-exports\/team-a\/exports/);
      const manifest = await s3
        .client()
        .send(
          new GetObjectCommand({ Bucket: 'acctops-exports', Key: `team-a/exports/company=${companyId}/period=${month}/_manifest.json` }),
        );
      const body = JSON.parse(await manifest.Body!.transformToString()) as { period: string; objects: { format: string }[] };
      expect(body.period).toBe(month);
      expect(body.objects.map((o) => o.format)).toEqual(['csv', 'csv', 'csv']);
    });

    it('a refused key is exit 4 with the reason; a company the key does not act for fails without output files', async () => {
      const refused = await acctops(['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'refused'], {
        ACCTOPS_API_KEY: 'sbx_00000000unknownkeyunknownkey0000',
      });
      expect(refused.code).toBe(4);
      expect(refused.stdout).toMatch(/failed/);
      expect(refused.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^acctops: error: company .*failed.* \(.*\)$/)]);
      // The key's company was never learned: null in --json, as every absent value, not a placeholder.
      const refusedJson = await acctops(['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'refused'], {
        ACCTOPS_API_KEY: 'sbx_00000000unknownkeyunknownkey0000',
      });
      expect(parseJson<{ companies: { companyId: string | null; status: string }[] }>(refusedJson).companies).toEqual([
        expect.objectContaining({ companyId: null, status: 'failed' }),
      ]);

      const other = sandbox.demo!.companies[0]!.publicId;
      const mismatch = await acctops(
        ['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--company', other, '--out', 'mismatch'],
        { ACCTOPS_API_KEY: key },
      );
      // Refused either way, so exit 4: the default dialect says company_mismatch, the minimal one
      // permission_denied as DRF would (both 403).
      expect(mismatch.code).toBe(4);
      expect(parseJson<{ companies: { status: string; error: { code: string } }[] }>(mismatch).companies[0]).toMatchObject({
        status: 'failed',
        error: { code: dialect === 'default' ? 'company_mismatch' : 'permission_denied' },
      });
      await expect(
        readFile(join(out.dir, 'mismatch', 'exports', `company=${other}`, `period=${month}`, '_manifest.json')),
      ).rejects.toThrow();
      // Failed before any data: nothing is left, not even the --out directory the write probe made.
      await expect(stat(join(out.dir, 'refused'))).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(stat(join(out.dir, 'mismatch'))).rejects.toMatchObject({ code: 'ENOENT' });
    });

    describe('a failed export leaves no directory it made, and keeps every one it did not', () => {
      const refusedKey = { ACCTOPS_API_KEY: 'sbx_wrongkey0000000000' };
      const exportTo = (target: string, baseUrl = sandbox.baseUrl, env: Record<string, string> = refusedKey) =>
        acctops(['export', '--base-url', baseUrl, '--month', month, '--out', target], env);

      it('a refused key (exit 4) and an unreachable service (exit 1): the new --out and its new parents are gone', async () => {
        const before = (await readdir(out.dir)).sort();
        expect((await exportTo('new-refused')).code).toBe(4);
        // Port 1: nothing listens there, the connection is refused at once.
        expect((await exportTo('new-parent/deeper/new-unreachable', 'http://127.0.0.1:1/api/v1', { ACCTOPS_API_KEY: key })).code).toBe(1);
        expect((await readdir(out.dir)).sort()).toEqual(before);
        expect(before).not.toContain('new-refused');
        expect(before).not.toContain('new-parent');
      });

      it('an existing --out, empty or with files of its own, is kept as it was; so is an existing parent of a new --out', async () => {
        await mkdir(join(out.dir, 'mine', 'sub'), { recursive: true });
        await writeFile(join(out.dir, 'mine', 'notes.txt'), 'mine\n');
        await mkdir(join(out.dir, 'empty-mine'));
        await mkdir(join(out.dir, 'parent-mine'));
        expect((await exportTo('mine')).code).toBe(4);
        expect((await exportTo('empty-mine')).code).toBe(4);
        expect((await exportTo('parent-mine/new')).code).toBe(4);
        expect((await readdir(join(out.dir, 'mine'), { recursive: true })).sort()).toEqual(['notes.txt', 'sub']);
        expect(await readFile(join(out.dir, 'mine', 'notes.txt'), 'utf8')).toBe('mine\n');
        expect(await readdir(join(out.dir, 'empty-mine'))).toEqual([]);
        expect(await readdir(join(out.dir, 'parent-mine'))).toEqual([]);
      });
    });

    it('a company that fails mid-export leaves no period, no staged file and no staging directory: --out, made by the run, is gone', async () => {
      // The service's count disagrees with the records it sends: the transactions are streamed (staged), then refused.
      await sandbox.admin.faults.add({ route: 'GET /accounting/transactions/', times: 'always', fault: { type: 'count_mismatch' } });
      try {
        const failed = await acctops(['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'failed'], {
          ACCTOPS_API_KEY: key,
        });
        expect(failed.code).not.toBe(0);
        // Learned from the key before the failure: the row names it.
        expect(parseJson<{ companies: { companyId: string | null; status: string }[] }>(failed).companies).toEqual([
          expect.objectContaining({ companyId, status: 'failed' }),
        ]);
      } finally {
        await sandbox.admin.faults.clear();
      }
      // Nothing of the run was left in it (no period, no staged file, no staging directory), so the directory it made went too.
      await expect(stat(join(out.dir, 'failed'))).rejects.toMatchObject({ code: 'ENOENT' });
    });

    describe('output errors end at once, say why and where on one stderr line, and leave no period behind', () => {
      const tree = async () => (await readdir(out.dir, { recursive: true })).sort();

      it.each([
        ['a regular file', 'a-file/exports', /a-file\/exports\/exports: a part of the path is a file, not a directory \(ENOTDIR\)/],
        ['a path under a device', '/dev/null/x', /\/dev\/null\/x\/exports: a part of the path is a file, not a directory \(ENOTDIR\)/],
        [
          'a directory under /proc (Node 20 mkdir -p loops there forever)',
          '/proc/acctops-forbidden',
          /\/proc\/acctops-forbidden\/exports: no such file or directory, .* \(ENOENT\)/,
        ],
        [
          'a symbolic link that points to itself',
          'loop/sub',
          /loop\/sub\/exports: too many levels of symbolic links, .* \(ELOOP\) \(name a real directory/,
        ],
        [
          'a new directory whose name is over 255 bytes',
          `new/${'z'.repeat(300)}`,
          /…z+\/exports: the path or a name in it is too long \(ENAMETOOLONG\)/,
        ],
      ])('--out on %s: exit 3 (configuration)', async (_what, target, cause) => {
        await writeFile(join(out.dir, 'a-file'), 'not a directory');
        await symlink('loop', join(out.dir, 'loop')).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST') throw error;
        });
        const before = await tree();
        const result = await acctops(['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', target], {
          ACCTOPS_API_KEY: key,
        });
        expect(result.code).toBe(3);
        const lines = result.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^acctops: error: --out cannot be written at \//);
        expect(result.stdout).toBe('');
        expect(lines[0]).toMatch(cause);
        if (target.startsWith('a-file')) expect(await readFile(join(out.dir, 'a-file'), 'utf8')).toBe('not a directory');
        expect(await tree()).toEqual(before);
      });

      it('--out to an S3 bucket that does not exist: exit 3, the bucket named with the cause', async () => {
        const result = await acctops(['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 's3://no-such-bucket/x'], {
          ACCTOPS_API_KEY: key,
          AWS_ENDPOINT_URL_S3: s3.endpoint,
          AWS_REGION: 'eu-central-1',
          AWS_ACCESS_KEY_ID: 'S3RVER',
          AWS_SECRET_ACCESS_KEY: 'S3RVER',
        });
        expect(result.code).toBe(3);
        expect(result.stderr.trim().split('\n')).toEqual([
          expect.stringMatching(/^acctops: error: --out cannot be written at s3:\/\/no-such-bucket\/x\/exports: NoSuchBucket/),
        ]);
      });

      it('--out to S3 without AWS credentials: exit 4, nothing written', async () => {
        const result = await acctops(
          ['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 's3://acctops-exports/no-creds'],
          {
            ACCTOPS_API_KEY: key,
            AWS_ENDPOINT_URL_S3: s3.endpoint,
            AWS_REGION: 'eu-central-1',
          },
        );
        expect(result.code).toBe(4);
        expect(result.stderr.trim().split('\n')).toEqual([
          expect.stringMatching(/^acctops: error: --out cannot be written at s3:\/\/acctops-exports\/no-creds\/exports: .*credentials/i),
        ]);
        const listed = await s3.client().send(new ListObjectsV2Command({ Bucket: 'acctops-exports', Prefix: 'no-creds/' }));
        expect(listed.Contents ?? []).toEqual([]);
      });
    });

    it('a symlink it cannot rewrite after the manifest: published, one error line naming the dataset and the way out, exit 5; the next export rewrites it', async () => {
      const period = join(out.dir, 'behind', 'exports', `company=${companyId}`, `period=${month}`);
      const symlinkPath = join(period, 'transactions', '_symlink', 'symlink.txt');
      const args = ['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'behind'];
      expect((await acctops(args, { ACCTOPS_API_KEY: key })).code).toBe(0);
      // A directory where the symlink goes: the rename of its new version onto it fails.
      await rm(symlinkPath);
      await mkdir(join(symlinkPath, 'blocker'), { recursive: true });

      const result = await acctops(['--json', ...args], { ACCTOPS_API_KEY: key });
      expect(result.code).toBe(5);
      const row = parseJson<{ companies: { status: string; staleSymlinks: string[]; runId: string }[] }>(result).companies[0]!;
      expect(row).toMatchObject({ status: 'completed', staleSymlinks: ['transactions'] });
      const manifest = JSON.parse(await readFile(join(period, '_manifest.json'), 'utf8')) as {
        runId: string;
        symlinks: { dataset: string; key: string; sha256: string }[];
      };
      expect(manifest.runId).toBe(row.runId);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({
        error: {
          companyId,
          code: 'athena_symlinks_stale',
          exitCode: 5,
          message: expect.stringMatching(
            new RegExp(
              `^${month} is published \\(${out.dir}/.*_manifest\\.json\\), but Athena still shows the previous export of transactions \\(its symlink could not be rewritten`,
            ),
          ),
          hint: expect.stringMatching(new RegExp(`^export ${month} again`)),
        },
      });
      // The other datasets followed the manifest.
      for (const link of manifest.symlinks.filter((l) => l.dataset !== 'transactions')) {
        expect(
          createHash('sha256')
            .update(await readFile(join(out.dir, 'behind', link.key)))
            .digest('hex'),
        ).toBe(link.sha256);
      }

      await rm(symlinkPath, { recursive: true });
      const again = await acctops(args, { ACCTOPS_API_KEY: key });
      expect(again.code).toBe(0);
      // No error line; only notes (the minimal dialect's tax reports have no period acctops reads).
      expect(again.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('acctops: note: '))).toEqual([]);
      expect(again.stdout).not.toMatch(/Athena/);
      const repaired = JSON.parse(await readFile(join(period, '_manifest.json'), 'utf8')) as typeof manifest;
      const link = repaired.symlinks.find((l) => l.dataset === 'transactions')!;
      expect(
        createHash('sha256')
          .update(await readFile(symlinkPath))
          .digest('hex'),
      ).toBe(link.sha256);
      expect(await readFile(symlinkPath, 'utf8')).toMatch(new RegExp(`/run=${repaired.runId}/part-00000\\.parquet\\n$`));
    });

    it('a re-export with fewer formats is refused (exit 2, naming --replace-formats) and changes nothing; with the flag it replaces them', async () => {
      const all = await acctops(['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'reexport'], { ACCTOPS_API_KEY: key });
      expect(all.code).toBe(0);
      const manifestPath = join(out.dir, 'reexport', 'exports', `company=${companyId}`, `period=${month}`, '_manifest.json');
      const symlinkPath = join(
        out.dir,
        'reexport',
        'exports',
        `company=${companyId}`,
        `period=${month}`,
        'transactions',
        '_symlink',
        'symlink.txt',
      );
      const before = { manifest: await readFile(manifestPath, 'utf8'), symlink: await readFile(symlinkPath, 'utf8') };
      expect(before.symlink).toMatch(/part-00000\.parquet\n$/);

      const refused = await acctops(['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'reexport', '--format', 'csv'], {
        ACCTOPS_API_KEY: key,
      });
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(/also has jsonl and parquet of categories, tax_reports and transactions .*--replace-formats/),
      ]);
      expect({ manifest: await readFile(manifestPath, 'utf8'), symlink: await readFile(symlinkPath, 'utf8') }).toEqual(before);
      const kept = JSON.parse(before.manifest) as { objects: { key: string }[] };
      for (const object of kept.objects) await expect(readFile(join(out.dir, 'reexport', object.key))).resolves.toBeDefined();

      const replaced = await acctops(
        ['export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'reexport', '--format', 'csv', '--replace-formats'],
        { ACCTOPS_API_KEY: key },
      );
      expect(replaced.code).toBe(0);
      const after = JSON.parse(await readFile(manifestPath, 'utf8')) as { objects: { format: string }[] };
      expect(after.objects.map((o) => o.format)).toEqual(['csv', 'csv', 'csv']);
      // The symlinks are emptied, in line with the manifest: Athena shows no rows, which one note says.
      expect(await readFile(symlinkPath, 'utf8')).toBe('');
      const athenaNotes = replaced.stderr.split('\n').filter((l) => l.includes('Athena'));
      expect(athenaNotes).toEqual([
        `acctops: note: ${companyId}: Athena shows no rows for categories, tax_reports, transactions of ${month} until it is exported with --format parquet again (e.g. --format csv,parquet): this export wrote no Parquet, and their symlinks list none`,
      ]);

      // Still so on the next export without Parquet; --json carries it as a field, and prints no note.
      const again = await acctops(
        ['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'reexport', '--format', 'csv'],
        {
          ACCTOPS_API_KEY: key,
        },
      );
      expect(again.code).toBe(0);
      expect(again.stderr).not.toMatch(/Athena/);
      const report = JSON.parse(again.stdout) as { companies: { athenaEmpty: string[] | null }[] };
      expect(report.companies.map((c) => c.athenaEmpty)).toEqual([['categories', 'tax_reports', 'transactions']]);

      // With Parquet again, the symlinks list it, and neither says anything.
      const restored = await acctops(['--json', 'export', '--base-url', sandbox.baseUrl, '--month', month, '--out', 'reexport'], {
        ACCTOPS_API_KEY: key,
      });
      expect(restored.code).toBe(0);
      expect((JSON.parse(restored.stdout) as { companies: { athenaEmpty: string[] | null }[] }).companies[0]!.athenaEmpty).toEqual([]);
      expect(await readFile(symlinkPath, 'utf8')).toMatch(/part-00000\.parquet\n$/);
    });
  });
});
