import { manifestKey } from '../../../src/core/exports/formats/layout';
import { droppedFormats, periodExported, readManifest, type Manifest } from '../../../src/core/exports/formats/manifest';
import { parsePeriod } from '../../../src/core/exports/formats/period';
import { ManifestError } from '../../../src/core/exports/formats/period-errors';
import { COMPANY } from '../../helpers/export-fixtures';

const PERIOD = parsePeriod('2026-10');
const KEY = manifestKey(COMPANY, PERIOD);
const SHA = 'a'.repeat(64);

/** A month whose transactions a later run wrote, while its categories were carried over from an earlier one. */
function manifest(overrides: Partial<Manifest> = {}): Manifest {
  const object = (dataset: 'transactions' | 'categories', format: 'jsonl' | 'csv', runId: string) => ({
    key: `${dataset}/run=${runId}/part-00000.${format}`,
    dataset,
    format,
    contentType: 'text/plain',
    records: 1,
    bytes: 10,
    sha256: SHA,
  });
  return {
    schemaVersion: 1,
    company: COMPANY,
    period: '2026-10',
    runId: 'run-2',
    generatedAt: '2026-11-01T02:00:00.000Z',
    tool: { name: 'acctops', version: '0.1.0' },
    source: { baseUrl: 'https://api.example.test/api/v1', query: { dateFrom: '2026-10-01', dateTo: '2026-10-31' } },
    datasets: {
      transactions: {
        runId: 'run-2',
        generatedAt: '2026-11-01T02:00:00.000Z',
        records: 1,
        totals: [{ currency: 'EUR', cashflowType: null, records: 1, amount: '-49.99', amountMinor: '-4999' }],
      },
      categories: { runId: 'run-1', generatedAt: '2026-11-01T01:00:00.000Z', records: 1, totals: [] },
    },
    objects: [object('transactions', 'jsonl', 'run-2'), object('categories', 'jsonl', 'run-1'), object('categories', 'csv', 'run-1')],
    symlinks: [],
    ...overrides,
  };
}

const storeOf = (value: unknown) => ({
  get: (key: string) => Promise.resolve(key === KEY ? new TextEncoder().encode(JSON.stringify(value)) : undefined),
});

describe('manifest', () => {
  it('refuses a schema version it does not know, and an amount that is not an exact decimal', async () => {
    await expect(readManifest(storeOf(manifest()), KEY)).resolves.toMatchObject({ runId: 'run-2' });
    await expect(readManifest(storeOf({ ...manifest(), schemaVersion: 2 }), KEY)).rejects.toThrow(ManifestError);
    for (const amount of ['-49,99', '49.99 EUR', '']) {
      const datasets = {
        transactions: { ...manifest().datasets.transactions!, totals: [{ ...manifest().datasets.transactions!.totals[0]!, amount }] },
      };
      await expect(readManifest(storeOf(manifest({ datasets })), KEY)).rejects.toThrow(ManifestError);
    }
  });

  it('counts a month as exported only when its manifest was made after the month ended in the time zone', async () => {
    const exported = (generatedAt: string, timeZone = 'Europe/Berlin') =>
      periodExported(storeOf(manifest({ generatedAt })), COMPANY, PERIOD, timeZone);
    // 23:30 on 31 October in Berlin: the month was still running.
    await expect(exported('2026-10-31T22:30:00.000Z')).resolves.toBe(false);
    await expect(exported('2026-10-31T23:00:00.000Z')).resolves.toBe(true);
    await expect(exported('2026-10-31T23:00:00.000Z', 'America/New_York')).resolves.toBe(false);
    await expect(periodExported(storeOf({ schemaVersion: 1 }), COMPANY, PERIOD, 'Europe/Berlin')).resolves.toBe(false);
  });

  it('names each dropped format once, with the run that wrote its dataset', () => {
    expect(droppedFormats(manifest(), ['categories', 'transactions'], ['jsonl'])).toEqual([
      { dataset: 'categories', format: 'csv', runId: 'run-1' },
    ]);
    expect(droppedFormats(manifest(), ['transactions'], ['jsonl'])).toEqual([]);
  });
});
