import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ManualClock } from '../../../src/core/shared/clock';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { DuckDb } from '../../helpers/duckdb';
import { runDirectExport } from '../../helpers/run-direct-export';
import { TEST_DIALECTS } from '../../helpers/dialects';

/**
 * ISO 8601 forms other than the common one (spec §2: "ISO 8601 with timezone"), sent by the service
 * in a month's transactions: each is exported, the raw JSONL keeps its text as sent, and CSV and
 * Parquet (read by DuckDB, which shares no code with our writers) carry the same text, the instant
 * in UTC, the offset and the local date as written.
 */
const FORMS = [
  { valueDate: '2026-10-20T10:00:00,5+02:00', utc: '2026-10-20T08:00:00.500Z', offset: 120, local: '2026-10-20' },
  { valueDate: '20261021T100000+0200', utc: '2026-10-21T08:00:00.000Z', offset: 120, local: '2026-10-21' },
  { valueDate: '2026-10-22T10:00:00+02', utc: '2026-10-22T08:00:00.000Z', offset: 120, local: '2026-10-22' },
  // October as written, November in UTC: the local date decides the month.
  { valueDate: '20261031T233000,25-02', utc: '2026-11-01T01:30:00.250Z', offset: -120, local: '2026-10-31' },
  { valueDate: '2026-10-23T09:00:00Z', utc: '2026-10-23T09:00:00.000Z', offset: 0, local: '2026-10-23' },
];

describe.each(TEST_DIALECTS)('%s dialect: a month whose timestamps come in other ISO 8601 forms', (dialect) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 5, 8, 0));
  let sandbox: RunningSandbox;
  let root: string;
  let duck: DuckDb;

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, demo: false, clock });
    root = await mkdtemp(join(tmpdir(), 'acctops-timestamp-forms-'));
    duck = await DuckDb.open();
  });
  afterAll(async () => {
    duck.close();
    await sandbox.stop();
    await rm(root, { recursive: true, force: true });
    forgetRegisteredSecrets();
  });

  it('exports every record: the text as sent, its instant, offset and local date in CSV and Parquet', async () => {
    const company = (await sandbox.admin.createCompany()).publicId;
    const { publicIds } = await sandbox.admin.addTransactions({
      companyId: company,
      transactions: FORMS.map(({ valueDate }, i) => ({ valueDate, amount: -100 - i, currency: 'EUR' })),
    });
    const key = (await sandbox.admin.createApiKey({ companyId: company, permissions: ['full_access'] })).key;
    const summary = await runDirectExport({ baseUrl: sandbox.baseUrl, apiKey: key, month: '2026-10', outDir: root, toolVersion: '0.1.0' });
    expect(summary.datasets.transactions!.records).toBe(FORMS.length);
    expect(summary.manifest.datasets.transactions).not.toHaveProperty('outsidePeriod');

    const object = (format: string) =>
      join(root, summary.manifest.objects.find((o) => o.dataset === 'transactions' && o.format === format)!.key);
    const raw = gunzipSync(await readFile(object('jsonl'))).toString('utf8');
    for (const { valueDate } of FORMS) expect(raw).toContain(`"valueDate":"${valueDate}"`);

    const expected = FORMS.map((f, i) => ({ public_id: publicIds[i]!, ...f }));
    const columns = `public_id, value_date, value_date_utc, value_date_offset_minutes::INTEGER AS offset, value_date_local::VARCHAR AS local`;
    for (const from of [
      `read_parquet('${object('parquet')}')`,
      `read_csv('${object('csv')}', header = true, delim = ',', quote = '"', escape = '"', types = {'value_date_utc': 'TIMESTAMPTZ', 'value_date_local': 'DATE'})`,
    ]) {
      const rows = await duck.rows(`SET TimeZone = 'UTC'; SELECT ${columns} FROM ${from} ORDER BY public_id`);
      const got = rows.map((r) => ({
        public_id: r.public_id,
        valueDate: r.value_date,
        utc: new Date(Date.parse(String(r.value_date_utc).replace(' ', 'T').replace(/\+00$/, 'Z'))).toISOString(),
        offset: Number(r.offset),
        local: r.local,
      }));
      expect(got).toEqual([...expected].sort((a, b) => (a.public_id < b.public_id ? -1 : 1)));
    }
  });
});
