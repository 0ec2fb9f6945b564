import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { apiKeyAuth, createAccountingClient } from '../../../src/core/accounting-api';
import { exportCompanyPeriod } from '../../../src/core/exports/pipeline/export-company-period';
import { ManualClock } from '../../../src/core/shared/clock';
import { silentLogger } from '../../../src/core/shared/logger';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { runDirectExport } from '../../helpers/run-direct-export';
import { TEST_DIALECTS } from '../../helpers/dialects';

/**
 * A service whose company publicIds are upper case and compared exactly (spec §4.2 rule 1:
 * `{company_pk}` is the company's publicId). Our records keep the id in lower case; what we send
 * back is the service's own spelling (docs/architecture.md, decision 68).
 */
describe.each(TEST_DIALECTS)('%s dialect: a service that spells company ids in upper case', (dialect) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 5, 8, 0));
  let sandbox: RunningSandbox;
  let root: string;
  let company: string;
  let key: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, demo: false, clock, companyIdCase: 'upper' });
    root = await mkdtemp(join(tmpdir(), 'acctops-company-spelling-'));
    company = (await sandbox.admin.createCompany()).publicId;
    await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count: 30 });
    await sandbox.admin.addCategory({ companyId: company, name: 'Rent' });
    await sandbox.admin.addTaxReport({ companyId: company, periodStart: '2026-10-01', periodEnd: '2026-10-31' });
    key = (await sandbox.admin.createApiKey({ companyId: company, permissions: ['full_access'] })).key;
  });
  afterAll(async () => {
    await sandbox.stop();
    await rm(root, { recursive: true, force: true });
    forgetRegisteredSecrets();
  });

  it('the sandbox option: publicIds in upper case, and a lower-case X-Company-Id is refused (an exact comparison)', async () => {
    expect(company).toBe(company.toUpperCase());
    expect(company).not.toBe(company.toLowerCase());
    const client = (companyId: string) =>
      createAccountingClient({ baseUrl: sandbox.baseUrl, credentials: apiKeyAuth(key), companyId, logger: silentLogger });
    await expect(client(company.toLowerCase()).companies.list().all()).rejects.toMatchObject({ status: 403 });
    expect((await client(company).companies.list().all()).map((c) => c.parsed.publicId)).toEqual([company]);
  });

  it.each([
    ['learned from the key', undefined],
    ['named in lower case (as the CLI passes --company)', 'lower'],
    ['named in upper case', 'upper'],
  ] as const)('a direct export with the company %s: sends the service’s spelling, keeps ours in lower case', async (_, named) => {
    await sandbox.admin.resetStats();
    const dir = join(root, named ?? 'learned');
    const summary = await runDirectExport({
      baseUrl: sandbox.baseUrl,
      apiKey: key,
      month: '2026-10',
      outDir: dir,
      toolVersion: '0.1.0',
      ...(named === undefined ? {} : { companyId: named === 'lower' ? company.toLowerCase() : company }),
    });
    expect(summary.company).toBe(company.toLowerCase());
    expect(summary.manifestKey).toBe(`exports/company=${company.toLowerCase()}/period=2026-10/_manifest.json`);
    expect(summary.datasets.transactions!.records).toBe(30);
    expect(summary.datasets.tax_reports!.records).toBe(1);
    const log = await sandbox.admin.requestLog();
    expect(log.filter((r) => r.status !== 200)).toEqual([]);
    expect(log.map((r) => r.path)).toContain(`/api/v1/companies/${company}/taxes/reports/`);
  });

  it('the pipeline’s export of a company named in lower case (registry, jobs) reads it in the service’s spelling', async () => {
    const outcome = await exportCompanyPeriod(
      { store: new DirObjectStore(join(root, 'pipeline')), clock, logger: silentLogger, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl },
      {
        companyId: company.toLowerCase(),
        period: '2026-10',
        credentials: apiKeyAuth(key, { companyId: company.toLowerCase() }),
        source: { kind: 'apiKey' },
        trigger: { kind: 'on_demand', requestId: 'test', via: 'cli' },
        formats: ['jsonl'],
      },
    );
    expect(outcome).toMatchObject({ status: 'completed', summary: { company: company.toLowerCase() } });
  });
});
