import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as SandboxModule from '../../sandbox';
import { expectNoCanaries } from '../helpers/canary';
import { parseJson, runCliInProcess, tempStateDir, trackStateSecrets, type CliResult } from '../helpers/cli';

/** The embedded service of each command sends transactions without a currency, as one that follows the spec alone may. */
jest.mock('../../sandbox', () => {
  const actual = jest.requireActual<typeof SandboxModule>('../../sandbox');
  return {
    ...actual,
    startSandbox: async (...args: Parameters<typeof actual.startSandbox>) => {
      const sandbox = await actual.startSandbox(...args);
      await sandbox.admin.configure({ transactionCurrency: false });
      return sandbox;
    },
  };
});

const MONTH = '2026-10';

interface Row {
  companyId: string;
  status: string;
  transactionsWithDefaultCurrency: number | null;
  defaultCurrency: string | null;
  totals: { currency: string; amount: string; amountMinor: string }[] | null;
  manifestUrl: string | null;
}
interface Report {
  defaultCurrency: string | null;
  companies: Row[];
}

/**
 * `acctops export` in the local mode reads each company's default currency from the registry, as
 * the deployed worker does, and `--default-currency` still wins. Through runCli in process (what
 * the binary runs), so that the embedded sandbox can be told to drop the transactions' currency.
 */
describe("acctops export (local mode): the registry's default currency of a company", () => {
  let state: { dir: string; remove(): Promise<void> };
  const outputs: CliResult[] = [];
  const acctops = (...args: string[]): Promise<CliResult> => runCliInProcess(state.dir, args, outputs);
  let companies: string[];

  beforeAll(async () => {
    state = await tempStateDir();
    const listed = await acctops('--json', 'companies', 'list');
    expect(listed.code).toBe(0);
    companies = parseJson<{ companies: { companyId: string }[] }>(listed).companies.map((c) => c.companyId);
    expect(companies.length).toBeGreaterThanOrEqual(2);
  });
  afterAll(async () => {
    await trackStateSecrets(state.dir);
    expectNoCanaries(outputs.splice(0), 'acctops output');
    await state.remove();
  });

  const exported = async (...extra: string[]) => {
    const result = await acctops('--json', 'export', '--month', MONTH, '--format', 'csv', ...extra);
    expect(result.code).toBe(0);
    return parseJson<Report>(result);
  };
  const row = (report: Report, companyId: string) => report.companies.find((c) => c.companyId === companyId)!;

  it("labels a company's transactions with its registered currency (JPY: no fraction digits), the others EUR", async () => {
    const [jpy, other] = companies as [string, string];
    expect((await acctops('companies', 'add', '--company', jpy, '--default-currency', 'JPY')).code).toBe(0);
    const report = await exported();
    // No one currency for the run: each company's own.
    expect(report.defaultCurrency).toBeNull();
    const registered = row(report, jpy);
    expect(registered).toMatchObject({ status: 'completed', defaultCurrency: 'JPY' });
    expect(registered.transactionsWithDefaultCurrency).toBeGreaterThan(0);
    expect(new Set(registered.totals!.map((t) => t.currency))).toEqual(new Set(['JPY']));
    for (const t of registered.totals!) expect(t.amount).toBe(t.amountMinor);
    expect(row(report, other)).toMatchObject({ status: 'completed', defaultCurrency: 'EUR' });
    expect(new Set(row(report, other).totals!.map((t) => t.currency))).toEqual(new Set(['EUR']));

    // The CSV itself: the amount column is the minor units, as JPY has no fraction digits.
    const manifestPath = new URL(registered.manifestUrl!).pathname;
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { objects: { key: string; dataset: string; format: string }[] };
    const csvKey = manifest.objects.find((o) => o.dataset === 'transactions' && o.format === 'csv')!.key;
    const root = manifestPath.slice(0, manifestPath.indexOf('/exports/company='));
    const [header, ...lines] = (await readFile(join(root, csvKey), 'utf8')).trimEnd().split(/\r?\n/);
    const columns = header!.split(',');
    const [amount, minor, currency] = ['amount', 'amount_minor', 'currency'].map((c) => columns.indexOf(c));
    const cells = lines.map((l) => l.split(',')).filter((c) => c.length === columns.length);
    expect(cells.length).toBeGreaterThan(0);
    for (const c of cells) expect([c[amount!], c[currency!]]).toEqual([c[minor!], 'JPY']);

    const text = await acctops('export', '--month', MONTH, '--format', 'csv', '--company', jpy);
    expect(text.code).toBe(0);
    expect(text.stderr).toMatch(/transaction\(s\) without a currency from the service, labelled JPY/);
    expect(text.stderr).toContain(`\`acctops companies add --company ${jpy} --default-currency <ISO code>\``);
  });

  it('--default-currency wins over the registered currency, for every company of the run', async () => {
    const [jpy, other] = companies as [string, string];
    const report = await exported('--default-currency', 'chf');
    expect(report.defaultCurrency).toBe('CHF');
    for (const companyId of [jpy, other]) {
      expect(row(report, companyId)).toMatchObject({ status: 'completed', defaultCurrency: 'CHF' });
      expect(new Set(row(report, companyId).totals!.map((t) => t.currency))).toEqual(new Set(['CHF']));
    }
    // The registry is left as it was.
    const listed = parseJson<{ companies: { companyId: string; defaultCurrency: string | null }[] }>(
      await acctops('--json', 'companies', 'list'),
    );
    expect(listed.companies.find((c) => c.companyId === jpy)?.defaultCurrency).toBe('JPY');
  });
});
