import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbRegistryTable } from '../../../src/adapters/aws/dynamodb-company-registry';
import { registryEntryReader } from '../../../src/adapters/aws/dynamodb-registry-entry';
import { FileRegistryTable, MemoryRegistryTable } from '../../../src/adapters/local/file-company-registry';
import { writePrivateJsonFile } from '../../../src/adapters/local/private-json-file';
import {
  CompanyNotRegisteredError,
  CompanyRegistry,
  RegistryItemInvalidError,
  activeCompanyPages,
  type RegisteredCompany,
  type RegistryTable,
} from '../../../src/core/companies/company-registry';
import { ValidationError } from '../../../src/core/shared/errors';
import { CURRENCY_CODE_EXPECTED } from '../../../contract/currency';
import { registryCurrency } from '../../../src/core/exports/pipeline/company-currency';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { localClientConfig } from '../../helpers/aws-credentials';
import { startDynamo, startDynamoFaults, type LocalDynamo } from '../../helpers/dynalite';
import { createRegistryTable } from '../../helpers/dynamodb-tables';

const A = '6f1c2a3b-0000-4000-8000-00000000000a';
const B = '6f1c2a3b-0000-4000-8000-00000000000b';
const T0 = Date.parse('2026-11-01T00:00:00Z');
const T1 = Date.parse('2026-11-02T00:00:00Z');

interface Subject {
  registry: CompanyRegistry;
  logger: MemoryLogger;
  /** Writes a raw item past the registry, as a hand edit or another version would. */
  plant(item: Record<string, unknown>): Promise<void>;
}

let dynamo: LocalDynamo;
let client: DynamoDBClient;
let tables = 0;
let dir: string;

beforeAll(async () => {
  dynamo = await startDynamo();
  client = dynamo.client();
  dir = await mkdtemp(join(tmpdir(), 'acctops-registry-'));
});
afterAll(async () => {
  client.destroy();
  await dynamo.stop();
  await rm(dir, { recursive: true, force: true });
});

const subjects: [string, () => Promise<Subject>][] = [
  [
    'memory',
    () => {
      const table = new MemoryRegistryTable();
      const logger = new MemoryLogger();
      return Promise.resolve({
        registry: new CompanyRegistry(table, { defaultFormats: ['jsonl'], logger }),
        logger,
        plant: (item) => {
          table.items[String(item.companyId)] = item;
          return Promise.resolve();
        },
      });
    },
  ],
  [
    'local file',
    async () => {
      const path = join(dir, `companies-${++tables}.json`);
      const table = new FileRegistryTable({ path });
      const logger = new MemoryLogger();
      return {
        registry: new CompanyRegistry(table, { defaultFormats: ['jsonl'], logger }),
        logger,
        plant: async (item) => {
          const { readFile } = await import('node:fs/promises');
          const file = JSON.parse(
            await readFile(path, 'utf8').catch(() => '{"format":"acctops.company-registry","formatVersion":1,"items":{}}'),
          ) as {
            items: Record<string, unknown>;
          };
          file.items[String(item.companyId)] = item;
          await writePrivateJsonFile(path, file);
        },
      };
    },
  ],
  [
    'DynamoDB on dynalite',
    async () => {
      const tableName = `registry-${++tables}`;
      await createRegistryTable(client, tableName);
      const logger = new MemoryLogger();
      const doc = DynamoDBDocumentClient.from(client);
      return {
        registry: new CompanyRegistry(new DynamoDbRegistryTable({ client, tableName }), { defaultFormats: ['jsonl'], logger }),
        logger,
        plant: async (item) => {
          await doc.send(new PutCommand({ TableName: tableName, Item: item }));
        },
      };
    },
  ],
];

describe.each(subjects)('company registry (%s)', (_name, make) => {
  let s: Subject;
  beforeEach(async () => {
    s = await make();
  });

  it('adds a company with the default formats, lower-casing its id', async () => {
    const { result, company } = await s.registry.add({ companyId: A.toUpperCase() }, T0);
    expect(result).toBe('added');
    expect(company).toEqual({
      companyId: A,
      formats: ['jsonl'],
      addedAt: '2026-11-01T00:00:00.000Z',
      updatedAt: '2026-11-01T00:00:00.000Z',
    });
    expect(await s.registry.get(A)).toEqual(company);
  });

  it('is idempotent: the same add twice changes nothing, other settings update, addedAt stays', async () => {
    await s.registry.add({ companyId: A, formats: ['csv', 'parquet'], rotationDays: 30 }, T0);
    const again = await s.registry.add({ companyId: A, formats: ['parquet', 'csv'], rotationDays: 30 }, T1);
    expect(again.result).toBe('unchanged');
    expect(again.company.updatedAt).toBe('2026-11-01T00:00:00.000Z');
    const changed = await s.registry.add({ companyId: A, rotationDays: 7 }, T1);
    expect(changed.result).toBe('updated');
    expect(changed.company).toMatchObject({ formats: ['csv', 'parquet'], rotationDays: 7, addedAt: '2026-11-01T00:00:00.000Z' });
  });

  it('keeps a default currency (upper case) through a round trip; an entry written without it reads as none, and keeps none', async () => {
    const { company } = await s.registry.add({ companyId: A, defaultCurrency: 'jpy' }, T0);
    expect(company.defaultCurrency).toBe('JPY');
    expect(await s.registry.get(A)).toEqual(company);
    expect((await s.registry.listPage()).items).toEqual([company]);
    // Other settings leave it; the same code again is no change; another replaces it.
    expect((await s.registry.add({ companyId: A, rotationDays: 7 }, T1)).company).toMatchObject({
      defaultCurrency: 'JPY',
      rotationDays: 7,
    });
    expect((await s.registry.add({ companyId: A, defaultCurrency: 'JPY' }, T1)).result).toBe('unchanged');
    expect((await s.registry.add({ companyId: A, defaultCurrency: 'GBP' }, T1)).company.defaultCurrency).toBe('GBP');

    // An item of an older version: no defaultCurrency attribute at all (EUR, as before).
    const old = { companyId: B, formats: ['csv'], rotationDays: 30, addedAt: '2026-10-01T00:00:00Z', updatedAt: '2026-10-01T00:00:00Z' };
    await s.plant(old);
    expect(await s.registry.get(B)).toEqual(old);
    expect((await s.registry.listPage()).skipped).toEqual([]);
    const updated = await s.registry.add({ companyId: B, formats: ['csv', 'parquet'] }, T1);
    expect(updated.result).toBe('updated');
    expect(updated.company).not.toHaveProperty('defaultCurrency');
    expect(await s.registry.get(B)).not.toHaveProperty('defaultCurrency');
  });

  it('refuses a default currency that is not an ISO 4217 code the runtime knows, naming the field, never the value', async () => {
    for (const bad of ['XYZ', 'EURO', 'E1R', '', 'sk_live_pasted']) {
      const refused = s.registry.add({ companyId: A, defaultCurrency: bad }, T0);
      await expect(refused).rejects.toBeInstanceOf(ValidationError);
      await expect(refused).rejects.toMatchObject({
        issues: [{ path: 'defaultCurrency', message: CURRENCY_CODE_EXPECTED }],
      });
      await expect(refused).rejects.not.toThrow(/sk_live/);
    }
    expect(await s.registry.get(A)).toBeNull();
    // A hand-written item with a malformed one is skipped with a finding, as any other bad field.
    await s.plant({ companyId: B, formats: ['csv'], defaultCurrency: 'euro', addedAt: '2026-11-01T00:00:00Z' });
    const page = await s.registry.listPage();
    expect(page.items).toEqual([]);
    expect(page.skipped).toEqual([{ key: B, position: 1, issues: [{ path: 'defaultCurrency', message: expect.any(String) as unknown }] }]);
    await expect(s.registry.get(B)).rejects.toBeInstanceOf(RegistryItemInvalidError);
    // null, as `companies list --json` prints "none", reads as none: the company stays EUR, and
    // the export worker's reader of the one field agrees.
    await s.plant({ companyId: B, formats: ['csv'], defaultCurrency: null, addedAt: '2026-11-01T00:00:00Z' });
    expect(await s.registry.get(B)).not.toHaveProperty('defaultCurrency', expect.anything());
    expect(await registryCurrency(async () => ({ companyId: B, defaultCurrency: null }))(B)).toBeUndefined();
  });

  it('removes by marking, reports a second removal, and re-adds with the first addedAt', async () => {
    await s.registry.add({ companyId: A }, T0);
    expect((await s.registry.remove(A, T1)).result).toBe('removed');
    expect((await s.registry.get(A))?.removedAt).toBe('2026-11-02T00:00:00.000Z');
    expect((await s.registry.remove(A, T1)).result).toBe('already_removed');
    const back = await s.registry.add({ companyId: A }, T1);
    expect(back.result).toBe('readded');
    expect(back.company.removedAt).toBeUndefined();
    expect(back.company.addedAt).toBe('2026-11-01T00:00:00.000Z');
  });

  it('refuses to remove a company it never had, and malformed input by field', async () => {
    await expect(s.registry.remove(B, T0)).rejects.toBeInstanceOf(CompanyNotRegisteredError);
    await expect(s.registry.add({ companyId: 'not-a-uuid' }, T0)).rejects.toMatchObject({ issues: [{ path: 'companyId' }] });
    await expect(s.registry.add({ companyId: A, rotationDays: 0 }, T0)).rejects.toMatchObject({ issues: [{ path: 'rotationDays' }] });
    await expect(s.registry.listPage({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });

  it('pages through every company exactly once, and skips removed ones for planners', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `6f1c2a3b-0000-4000-8000-${String(i).padStart(12, '0')}`);
    for (const id of ids) await s.registry.add({ companyId: id }, T0);
    await s.registry.remove(ids[3]!, T1);
    const seen: string[] = [];
    let pages = 0;
    for await (const page of s.registry.pages(10)) {
      pages++;
      expect(page.items.length).toBeLessThanOrEqual(10);
      seen.push(...page.items.map((c) => c.companyId));
    }
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(seen.sort()).toEqual([...ids].sort());
    const active: string[] = [];
    for await (const page of activeCompanyPages(s.registry, 7)) active.push(...page.items.map((c) => c.companyId));
    expect(active.sort()).toEqual(ids.filter((id) => id !== ids[3]).sort());
  });

  it('skips an item that fails its schema with a finding naming fields, never values', async () => {
    await s.registry.add({ companyId: A }, T0);
    await s.plant({ companyId: B, formats: ['xlsx'], addedAt: 'sk_live_0123456789abcdef', updatedAt: '2026-11-01T00:00:00Z' });
    await s.plant({
      companyId: 'sk_live_secretsecret',
      formats: ['csv'],
      addedAt: '2026-11-01T00:00:00Z',
      updatedAt: '2026-11-01T00:00:00Z',
    });
    const items: RegisteredCompany[] = [];
    const skipped = [];
    for await (const page of s.registry.pages()) {
      items.push(...page.items);
      skipped.push(...page.skipped);
    }
    expect(items.map((c) => c.companyId)).toEqual([A]);
    expect(skipped.map((f) => f.key).sort()).toEqual(['(malformed key)', B].sort());
    expect(
      skipped
        .find((f) => f.key === B)
        ?.issues.map((i) => i.path)
        .sort(),
    ).toEqual(['addedAt', 'formats[0]']);
    const logged = s.logger.lines.join('\n');
    expect(logged).toContain('company registry item skipped');
    expect(logged).not.toContain('sk_live');
    await expect(s.registry.get(B)).rejects.toBeInstanceOf(RegistryItemInvalidError);
  });
});

it('the local file is private (0600)', async () => {
  const path = join(dir, 'private.json');
  await new CompanyRegistry(new FileRegistryTable({ path }), { defaultFormats: ['csv'] }).add({ companyId: A }, T0);
  expect((await stat(path)).mode & 0o777).toBe(0o600);
});

describe('a throttled registry table (DynamoDB)', () => {
  // The functions that read the registry reach other tables too; DynamoDB's message says "the table".
  it('names the table and the call in the message, and keeps the SDK error (class, name, request metadata)', async () => {
    const tableName = `registry-throttled-${++tables}`;
    await createRegistryTable(client, tableName);
    await new CompanyRegistry(new DynamoDbRegistryTable({ client, tableName }), { defaultFormats: ['jsonl'] }).add({ companyId: A }, T0);
    const faults = await startDynamoFaults(dynamo);
    // One attempt: the SDK's retries are the reliability matrix's subject, not the message's.
    const throttled = new DynamoDBClient(localClientConfig(faults.endpoint));
    try {
      const table = new DynamoDbRegistryTable({ client: throttled, tableName });
      const calls: [string, () => Promise<unknown>][] = [
        ['GetItem', () => table.getItem(A)],
        // The export worker's reader of a company's entry (registryCurrency), apart from the table class.
        ['GetItem', () => registryEntryReader({ client: throttled, tableName })(A)],
        ['Scan', () => table.scanPage({ cursor: null, limit: 10 })],
        ['PutItem', () => table.putItem({ companyId: B, formats: ['jsonl'] })],
      ];
      for (const [operation, call] of calls) {
        faults.inject({ operation, count: 1 });
        const error = await call().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(ProvisionedThroughputExceededException);
        expect(error).toMatchObject({
          name: 'ProvisionedThroughputExceededException',
          message: `DynamoDB ${operation} on the company registry table ${tableName} failed: The level of configured provisioned throughput for the table was exceeded.`,
          $metadata: expect.objectContaining({ httpStatusCode: 400 }),
        });
      }
      expect(faults.stats.errors).toEqual({ ProvisionedThroughputExceededException: 4 });
      // Unthrottled, the same calls answer as before.
      await expect(table.getItem(A)).resolves.toMatchObject({ companyId: A });
    } finally {
      throttled.destroy();
      await faults.stop();
    }
  });
});

describe.each([
  ['memory', () => Promise.resolve(new MemoryRegistryTable())],
  [
    'DynamoDB on dynalite',
    async () => {
      const tableName = `registry-race-${++tables}`;
      await createRegistryTable(client, tableName);
      return new DynamoDbRegistryTable({ client, tableName });
    },
  ],
] as [string, () => Promise<RegistryTable>][])('two operators writing one company at once (%s)', (_name, make) => {
  /**
   * The table as one operator's command sees it: its first read of the company is answered, then the
   * other operator's command runs to its end before this one goes on (decision 109).
   */
  function meanwhile(table: RegistryTable, other: () => Promise<unknown>): RegistryTable {
    let done = false;
    return {
      getItem: async (companyId) => {
        const item = await table.getItem(companyId);
        if (!done) {
          done = true;
          await other();
        }
        return item;
      },
      putItem: (item, expected) => table.putItem(item, expected),
      scanPage: (request) => table.scanPage(request),
    };
  }
  const registryOn = (table: RegistryTable) => new CompanyRegistry(table, { defaultFormats: ['jsonl'] });

  it('a removal made while an add is being written is not undone by it: the add brings the company back and says so', async () => {
    const table = await make();
    await registryOn(table).add({ companyId: A }, T0);
    let removed: Awaited<ReturnType<CompanyRegistry['remove']>> | undefined;
    const adding = registryOn(meanwhile(table, async () => (removed = await registryOn(table).remove(A, T1))));
    const added = await adding.add({ companyId: A, defaultCurrency: 'GBP' }, T1 + 1000);
    expect(removed?.result).toBe('removed');
    // Without the check the add wrote the entry it had read, active: `updated`, and the removal was gone unsaid.
    expect(added.result).toBe('readded');
    expect(await registryOn(table).get(A)).toMatchObject({ defaultCurrency: 'GBP', addedAt: new Date(T0).toISOString() });
  });

  it('a setting changed while a removal is being written is kept by it', async () => {
    const table = await make();
    await registryOn(table).add({ companyId: A }, T0);
    const removing = registryOn(meanwhile(table, () => registryOn(table).add({ companyId: A, defaultCurrency: 'GBP' }, T1)));
    expect((await removing.remove(A, T1 + 1000)).result).toBe('removed');
    const stored = await registryOn(table).get(A);
    expect(stored).toMatchObject({ defaultCurrency: 'GBP', removedAt: new Date(T1 + 1000).toISOString() });
  });

  it('a key deletion recorded while the company is restored does not remove it again', async () => {
    const table = await make();
    await registryOn(table).add({ companyId: A }, T0);
    await registryOn(table).remove(A, T1);
    const recording = registryOn(meanwhile(table, () => registryOn(table).add({ companyId: A }, T1 + 500)));
    await recording.recordKeyDeletion(A, { deletionDate: '2026-12-02T00:00:00.000Z', recoveryWindowDays: 30 }, T1 + 1000);
    const stored = await registryOn(table).get(A);
    expect(stored?.removedAt).toBeUndefined();
    expect(stored?.keyDeletion).toBeUndefined();
  });
});
