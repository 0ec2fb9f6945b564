import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canaryApiKey, expectNoCanaries, trackSecret } from '../helpers/canary';
import { parseJson, runAcctops, tempStateDir, type CliResult } from '../helpers/cli';
import { startRecordingServer, type CannedResponse, type RecordedRequest, type RecordingServer } from '../helpers/recording-server';

/**
 * `acctops export` in direct mode against a hand-written service (not the sandbox) that does what
 * the sandbox's defaults never do at once: the second page of transactions starts with the first
 * page's last record again while `count` holds, and a record dated in August comes back for July.
 * The report, its JSON and the manifest must say both; the files must hold the repeated record once.
 */
describe('acctops export: notes of records repeated across pages and dated outside the month', () => {
  const MONTH = '2026-07';
  const COMPANY = '5b0e3c1a-7d2f-4e6a-9c8b-0a1b2c3d4e5f';
  const KEY = canaryApiKey('export-notes');
  const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  const tx = (n: number, valueDate: string, amount: number) => ({
    publicId: id(n),
    amount,
    currency: 'EUR',
    cashflowType: amount < 0 ? 'EXPENSE' : 'INCOME',
    valueDate,
    description: `payment ${n}`,
    category: null,
    bankAccount: null,
  });
  const T1 = tx(1, '2026-07-01T09:00:00+02:00', -1000);
  const T2 = tx(2, '2026-07-15T12:00:00+02:00', -2500);
  const T3 = tx(3, '2026-07-31T23:30:00-02:00', 4000);
  // August as written: outside July, though the service returned it for July.
  const T4 = tx(4, '2026-08-01T00:10:00+02:00', -700);

  let service: RecordingServer;
  let out: { dir: string; remove(): Promise<void> };
  /** The transactions' pages the service answers with; `count` is the records it holds. */
  let transactionPages: unknown[][] = [];
  let transactionCount = 0;
  /** When set, the transactions' answer to each query (one page); else `transactionPages`, whatever the query. */
  let transactionsFor: ((url: URL) => unknown[]) | undefined;
  const outputs: CliResult[] = [];

  const ok = (body: unknown): CannedResponse => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  function respond(request: RecordedRequest): CannedResponse {
    const url = new URL(request.url, service.origin);
    const page = Number(url.searchParams.get('page') ?? '1');
    const list = (pages: unknown[][], count: number) => {
      const next = new URL(url);
      next.searchParams.set('page', String(page + 1));
      return ok({ count, next: page < pages.length ? next.href : null, previous: null, results: pages[page - 1] ?? [] });
    };
    switch (url.pathname) {
      case '/api/v1/companies/':
        return ok({ publicId: COMPANY, name: 'Notes GmbH' });
      case `/api/v1/companies/${COMPANY}/taxes/reports/`:
        return list([[]], 0);
      case '/api/v1/accounting/categories/':
        return list([[{ publicId: id(90), name: 'Office' }]], 1);
      case '/api/v1/accounting/transactions/': {
        const answer = transactionsFor?.(url);
        return answer ? list([answer], answer.length) : list(transactionPages, transactionCount);
      }
      default:
        return { status: 404, headers: { 'content-type': 'application/json' }, body: '{"detail":"Not found."}' };
    }
  }

  const exportTo = async (target: string, json: boolean, ...extra: string[]) => {
    const result = await runAcctops(
      [
        ...(json ? ['--json'] : []),
        'export',
        '--base-url',
        `${service.origin}/api/v1`,
        '--month',
        MONTH,
        '--format',
        'csv',
        '--out',
        target,
        ...extra,
      ],
      { env: { ACCTOPS_API_KEY: KEY }, cwd: out.dir },
    );
    outputs.push(result);
    return result;
  };
  const manifestOf = async (target: string) =>
    JSON.parse(await readFile(join(out.dir, target, `exports/company=${COMPANY}/period=${MONTH}/_manifest.json`), 'utf8')) as {
      datasets: Record<
        string,
        { records: number; duplicatesDropped?: number; outsidePeriod?: number; dateTo?: unknown; totals: { amountMinor: string }[] }
      >;
      objects: { key: string; dataset: string }[];
    };

  interface Row {
    records: Record<string, number>;
    totals: { amountMinor: string; records: number }[];
    duplicatesDropped: Record<string, number> | null;
    transactionsOutsidePeriod: number | null;
    transactionsDateTo: { setting: string; read: string; lastDayRecords: number; lastDayRepeats: number; nextDayDropped: number } | null;
  }

  beforeAll(async () => {
    trackSecret(KEY);
    service = await startRecordingServer(respond);
    out = await tempStateDir();
  });
  beforeEach(() => {
    transactionsFor = undefined;
    service.requests.splice(0);
  });
  afterAll(async () => {
    expectNoCanaries(
      outputs.map((o) => `${o.stdout}\n${o.stderr}`),
      'acctops output',
    );
    await service.stop();
    await out.remove();
  });

  it('writes the repeated record once, keeps the August one, and says both in the report, its JSON and the manifest', async () => {
    // Four records; page 2 starts with page 1's last again.
    transactionPages = [
      [T1, T2],
      [T2, T3, T4],
    ];
    transactionCount = 4;

    const human = await exportTo('moved', false);
    expect(human.code).toBe(0);
    // Notes go to stderr (docs/cli.md), stdout is the report.
    expect(human.stdout).not.toContain('note:');
    const notes = human.stderr.split('\n').filter((line) => line.startsWith('acctops: note: '));
    expect(notes).toEqual([
      expect.stringContaining(
        `${COMPANY}: the service sent records again on a later page (the list changed while it was read): 1 of transactions, each written once`,
      ),
      expect.stringContaining(`${COMPANY}: 1 transaction(s) the service returned for ${MONTH} are dated outside it`),
    ]);
    expect(notes.join('\n')).not.toContain(id(2));

    const json = await exportTo('moved-json', true);
    expect(json.code).toBe(0);
    const row = parseJson<{ companies: Row[] }>(json).companies[0]!;
    expect(row.records).toEqual({ transactions: 4, tax_reports: 0, categories: 1 });
    expect(row.duplicatesDropped).toEqual({ transactions: 1, tax_reports: 0, categories: 0 });
    expect(row.transactionsOutsidePeriod).toBe(1);
    // T2 once: -1000 - 2500 + 4000 - 700.
    expect(row.totals.reduce((n, t) => n + BigInt(t.amountMinor), 0n)).toBe(-200n);
    expect(row.totals.reduce((n, t) => n + t.records, 0)).toBe(4);

    const manifest = await manifestOf('moved-json');
    expect(manifest.datasets.transactions).toMatchObject({ records: 4, duplicatesDropped: 1, outsidePeriod: 1 });
    expect(manifest.datasets.categories).not.toHaveProperty('duplicatesDropped');
    const csvKey = manifest.objects.find((o) => o.dataset === 'transactions')!.key;
    const csv = (await readFile(join(out.dir, 'moved-json', csvKey), 'utf8')).trimEnd().split('\r\n');
    expect(csv.slice(1).map((line) => line.split(',')[0])).toEqual([id(1), id(2), id(3), id(4)]);
  });

  it('says nothing of either when the pages do not overlap and every record is of the month', async () => {
    transactionPages = [[T1, T2], [T3]];
    transactionCount = 3;

    const human = await exportTo('still', false);
    expect(human.code).toBe(0);
    expect(human.stdout).not.toContain('note:');
    expect(human.stderr).not.toContain('note:');
    const row = parseJson<{ companies: Row[] }>(await exportTo('still-json', true)).companies[0]!;
    expect(row.duplicatesDropped).toEqual({ transactions: 0, tax_reports: 0, categories: 0 });
    expect(row.transactionsOutsidePeriod).toBe(0);
    // This service ignores the dates, so the probe finds records: inclusive, nothing read again.
    expect(row.transactionsDateTo).toEqual({
      setting: 'detect',
      read: 'inclusive',
      lastDayRecords: 0,
      lastDayRepeats: 0,
      nextDayDropped: 0,
    });
    const manifest = await manifestOf('still-json');
    expect(manifest.datasets.transactions).not.toHaveProperty('duplicatesDropped');
    expect(manifest.datasets.transactions).not.toHaveProperty('outsidePeriod');
  });

  it('an inclusive service whose probe finds nothing: the last day read again is written once; the report, its JSON and the manifest say so and name --date-to inclusive', async () => {
    // Inclusive by each record's own date, except that equal ends (the probe) find nothing.
    const held = [T1, T2, T3];
    transactionsFor = (url) => {
      const from = url.searchParams.get('date_from')!;
      const to = url.searchParams.get('date_to')!;
      return from === to ? [] : held.filter((t) => t.valueDate.slice(0, 10) >= from && t.valueDate.slice(0, 10) <= to);
    };

    const human = await exportTo('misread', false);
    expect(human.code).toBe(0);
    const notes = human.stderr.split('\n').filter((line) => line.startsWith('acctops: note: '));
    // One note, of the last day; the repeat is not said again as a page's.
    expect(notes).toEqual([
      `acctops: note: ${COMPANY}: the last day of ${MONTH}, read on its own because date_to was taken as exclusive (as its probe found), repeated 1 of its 1 transaction(s) the month already held: dropped, each written once and counted once in the totals; the service's date_to includes its day: use --date-to inclusive (docs/exports.md, "The last day of a range")`,
    ]);
    expect(human.stdout).not.toContain('note:');

    const json = await exportTo('misread-json', true);
    expect(json.code).toBe(0);
    const row = parseJson<{ companies: Row[] }>(json).companies[0]!;
    expect(row.records.transactions).toBe(3);
    expect(row.duplicatesDropped).toEqual({ transactions: 1, tax_reports: 0, categories: 0 });
    expect(row.transactionsDateTo).toEqual({
      setting: 'detect',
      read: 'exclusive',
      lastDayRecords: 1,
      lastDayRepeats: 1,
      nextDayDropped: 0,
    });
    // T3 once: -1000 - 2500 + 4000.
    expect(row.totals.reduce((n, t) => n + BigInt(t.amountMinor), 0n)).toBe(500n);
    const manifest = await manifestOf('misread-json');
    expect(manifest.datasets.transactions).toMatchObject({
      records: 3,
      duplicatesDropped: 1,
      dateTo: { setting: 'detect', read: 'exclusive', lastDayRecords: 1, lastDayRepeats: 1 },
    });
    const csvKey = manifest.objects.find((o) => o.dataset === 'transactions')!.key;
    const csv = (await readFile(join(out.dir, 'misread-json', csvKey), 'utf8')).trimEnd().split('\r\n');
    expect(csv.slice(1).map((line) => line.split(',')[0])).toEqual([id(1), id(2), id(3)]);

    // Set exclusive, the same repeat is dropped; set inclusive, the last day is not read again.
    const set = parseJson<{ companies: Row[] }>(await exportTo('set-exclusive', true, '--date-to', 'exclusive')).companies[0]!;
    expect(set.transactionsDateTo).toEqual({
      setting: 'exclusive',
      read: 'exclusive',
      lastDayRecords: 1,
      lastDayRepeats: 1,
      nextDayDropped: 0,
    });
    expect(set.records.transactions).toBe(3);
    service.requests.splice(0);
    const inclusive = await exportTo('set-inclusive', false, '--date-to', 'inclusive');
    expect(inclusive.stderr).not.toContain('note:');
    const asked = service.requests.map((r) => new URL(r.url, service.origin)).filter((u) => u.pathname.endsWith('/transactions/'));
    expect(asked.map((u) => u.searchParams.get('date_from'))).toEqual([`${MONTH}-01`]);
    expect((await manifestOf('set-inclusive')).datasets.transactions).toMatchObject({
      records: 3,
      dateTo: { setting: 'inclusive', read: 'inclusive', lastDayRecords: 0, lastDayRepeats: 0 },
    });
  });
});
