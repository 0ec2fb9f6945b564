import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { CreateSecretCommand, PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { DynamoDbRegistryTable } from '../../src/adapters/aws/dynamodb-company-registry';
import { registryEntryReader } from '../../src/adapters/aws/dynamodb-registry-entry';
import { DynamoDbTokenStore } from '../../src/adapters/aws/dynamodb-token-store';
import { DynamoDbRunLedger } from '../../src/adapters/aws/dynamodb-run-ledger';
import { S3ObjectStore } from '../../src/adapters/aws/s3-object-store';
import { AwsSecretStore } from '../../src/adapters/aws/secrets-manager';
import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { MemoryExportQueue } from '../helpers/memory-export-queue';
import {
  COMPANY_KEY_TAGS,
  CompanyApiKeys,
  PURPOSE_COMPANY_KEY,
  serializeCompanyKeySecret,
  taggedKeyDirectory,
  type CompanyKeySecret,
} from '../../src/core/api-keys';
import { createAccountingClient, fetchTransport, type CredentialProvider, type Transport } from '../../src/core/accounting-api';
import { cachedInstitutionCredential } from '../../src/core/credentials/institution-credential';
import { institutionCredentialProvider } from '../../src/core/credentials/institution-provider';
import { CompanyRegistry } from '../../src/core/companies/company-registry';
import { registryCurrency, type CompanyCurrency } from '../../src/core/exports/pipeline/company-currency';
import { EXPORT_EVENT_TYPES } from '../../src/core/exports/pipeline/export-events';
import { exportCompanyPeriod, type ExportOutcome } from '../../src/core/exports/pipeline/export-company-period';
import { processExportBatch } from '../../src/core/exports/pipeline/export-worker';
import { planMonthlyExport } from '../../src/core/exports/pipeline/monthly-export';
import type { ExportSource } from '../../src/core/exports/pipeline/export-jobs';
import { FORMATS } from '../../src/core/exports/formats/datasets';
import { manifestKey } from '../../src/core/exports/formats/layout';
import { type Manifest } from '../../src/core/exports/formats/manifest';
import type { ObjectStore } from '../../src/core/exports/formats/object-store';
import { parsePeriod, periodRange } from '../../src/core/exports/formats/period';
import { userTokenCredentials } from '../../src/core/exports/pipeline/user-token-credentials';
import { ManualClock } from '../../src/core/shared/clock';
import { MemoryLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { forgetRegisteredSecrets, keyPrefix } from '../../src/core/shared/redact';
import { TokenLifecycle } from '../../src/core/tokens/token-lifecycle';
import type { Fault, RunningSandbox } from '../../sandbox';
import { startSandbox } from '../../sandbox';
import { LOCAL_REGION, localCredentials } from '../helpers/aws-credentials';
import { CANARY, expectNoCanaries, trackSecret } from '../helpers/canary';
import { startDynamo, startDynamoFaults, type LocalDynamo } from '../helpers/dynalite';
import { snapshot } from '../helpers/export-fixtures';
import { startRecordingServer } from '../helpers/recording-server';
import { instrumentS3, startS3, type LocalS3 } from '../helpers/s3rver';
import { client as secretsClient, secretStore, startSecretsManager, type RunningSecretsManager } from '../helpers/secrets-manager';
import { RotationWorld } from '../integration/api-keys/support';
import { matrixColumn } from './harness';
import { firstRequestTimesOut, sleepingClock } from './support';
import { createTokenTable, createRunLedgerTable, createRegistryTable } from '../helpers/dynamodb-tables';

/**
 * The monthly-export column of the fault matrix (docs/reliability.md): one company-month of the
 * monthly run, `exportCompanyPeriod` with a monthly trigger, reading the sandbox through the
 * export client (page size 1000, count mismatches fatal) and writing to s3rver through the real
 * S3 client. The company's API key comes from its secret in the Secrets Manager emulator through
 * CompanyApiKeys (as the worker gets it); a user's token from the DynamoDB token store (dynalite).
 */

const BUCKET = 'acctops-exports';
const PERIOD = '2026-10';
const BIG_PERIOD = '2026-09';
const TRANSACTIONS = 'GET /accounting/transactions/';
const MINUTE = 60_000;

const clock = new ManualClock(Date.UTC(2026, 10, 1, 3, 0));
const logger = new MemoryLogger();
let sandbox: RunningSandbox;
let s3: LocalS3;
let sm: RunningSecretsManager;
let sdk: SecretsManagerClient;
let dynamo: LocalDynamo;
let ddb: DynamoDBClient;
let company: string;
let initialKey: CompanyKeySecret;
let secretArn: string;

beforeAll(async () => {
  [sandbox, s3, sm, dynamo] = await Promise.all([
    startSandbox({ clock, demo: false, amountEncoding: 'mixed' }),
    startS3([BUCKET]),
    startSecretsManager({ clock }),
    startDynamo(),
  ]);
  sdk = secretsClient(sm);
  ddb = dynamo.client();
  company = (await sandbox.admin.createCompany({ name: 'Matrix GmbH', currency: 'EUR' })).publicId;
  await sandbox.admin.generateTransactions({ companyId: company, month: PERIOD, count: 2500 });
  for (let i = 0; i < 3; i++) await sandbox.admin.addCategory({ companyId: company, name: `Category ${i}`, cashflowType: 'EXPENSE' });
  await sandbox.admin.addTaxReport({
    companyId: company,
    periodStart: '2026-10-01',
    periodEnd: '2026-10-31',
    amountDue: '1234.56',
    currency: 'EUR',
  });
  initialKey = await newKey();
  secretArn = (
    await sdk.send(
      new CreateSecretCommand({
        Name: `acctops/matrix/company/${company}/api-key`,
        SecretString: serializeCompanyKeySecret(initialKey),
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: company },
        ],
      }),
    )
  ).ARN!;
  await sandbox.admin.createInstitution({ id: CANARY.institutionId, secret: CANARY.institutionSecret });
});

afterEach(async () => {
  await sandbox.admin.faults.clear();
  sm.admin.clearFaults();
});

afterAll(async () => {
  sdk.destroy();
  ddb.destroy();
  await Promise.all([sandbox.stop(), s3.stop(), sm.stop(), dynamo.stop()]);
  forgetRegisteredSecrets();
});

const READ = ['read_transactions', 'read_categories', 'read_tax_reports'] as const;

async function newKey(): Promise<CompanyKeySecret> {
  const created = await sandbox.admin.createApiKey({
    companyId: company,
    permissions: [...READ],
    name: `export-${randomUUID().slice(0, 8)}`,
  });
  trackSecret(created.key);
  return {
    apiKey: created.key,
    apiKeyId: created.publicId,
    keyPrefix: keyPrefix(created.key),
    companyId: company,
    permissions: [...READ],
    createdAt: created.createdAt,
  };
}

/** The company's key as the export worker gets it: CompanyApiKeys over the tagged secret. */
function companyKeys(store = secretStore(sm)): CompanyApiKeys {
  return new CompanyApiKeys(store, taggedKeyDirectory(store), { clock, logger });
}

let prefixes = 0;

interface RunOptions {
  credentials?: CredentialProvider;
  source?: ExportSource;
  period?: string;
  /** Runs before a request leaves, with its URL: a fault in the middle of an export. */
  beforeRequest?: (url: URL) => Promise<void>;
  /** The first request this matches gets the short timeout (the sandbox holds it). */
  timesOut?: (url: URL) => boolean;
  /** The attempt is the queue's last delivery (ExportFailed is published). */
  last?: boolean;
  companyId?: string;
  baseUrl?: string;
  /** The company's registry entry, as the deployed worker reads it when an export starts. */
  companyCurrency?: CompanyCurrency;
}

/**
 * One prefix of the bucket per cell: each cell's periods are its own. Parts of 5 MiB, S3's
 * minimum, so that the 6.5 MiB CSV of the multipart cell is a multipart upload.
 */
function newStore(client: S3Client = s3.client()): S3ObjectStore {
  return new S3ObjectStore({ client, bucket: BUCKET, prefix: `cell-${++prefixes}`, partSize: 5 * 1024 * 1024 });
}

async function run(store: ObjectStore, options: RunOptions = {}) {
  const events = new MemoryEventPublisher();
  const metrics = new MemoryMetrics();
  const clientClock = sleepingClock(clock);
  const real = options.timesOut ? firstRequestTimesOut((r) => options.timesOut!(new URL(r.url))) : fetchTransport();
  const transport: Transport = async (request) => {
    await options.beforeRequest?.(new URL(request.url));
    return real(request);
  };
  const outcome = await exportCompanyPeriod(
    {
      store,
      events,
      clock: clientClock,
      logger,
      metrics,
      toolVersion: '0.1.0',
      baseUrl: options.baseUrl ?? sandbox.baseUrl,
      client: { transport },
      ...(options.companyCurrency ? { companyCurrency: options.companyCurrency } : {}),
    },
    {
      companyId: options.companyId ?? company,
      period: options.period ?? PERIOD,
      credentials: options.credentials ?? companyKeys().credentials(company),
      source: options.source ?? { kind: 'apiKey' },
      trigger: { kind: 'monthly', runId: 'm202610-matrix' },
      formats: ['jsonl', 'csv', 'parquet'],
      attempt: { number: options.last ? 3 : 1, last: options.last ?? false },
    },
  );
  expectNoCanaries([events.events, outcome.status === 'failed' ? outcome.error : outcome.summary.manifest], 'export outcome and events');
  if (outcome.status === 'completed') {
    // Every object the export wrote (gzip inflated), the manifest included, holds no credential.
    for (const key of [outcome.summary.manifestKey, ...outcome.summary.manifest.objects.map((o) => o.key)])
      expectNoCanaries(await store.get(key), key);
  }
  return { outcome, events, metrics, sleeps: clientClock.sleeps };
}

function completed(outcome: ExportOutcome) {
  if (outcome.status !== 'completed') throw outcome.error;
  return outcome.summary;
}

/** The manifest holds every record of the month once, with the service's exact totals per currency and type. */
async function expectExact(manifest: Manifest, period = PERIOD): Promise<void> {
  const truth = await sandbox.admin.transactionSummary({ companyId: company, ...periodRange(parsePeriod(period)) });
  const dataset = manifest.datasets.transactions!;
  expect(dataset.records).toBe(truth.count);
  const totals: Record<string, Record<string, string>> = {};
  for (const t of dataset.totals) (totals[t.currency] ??= {})[t.cashflowType ?? 'null'] = t.amountMinor;
  expect(totals).toEqual(truth.totals);
}

/** A first, complete export of the period, and the bytes of everything under the period. */
async function baseline(store: ObjectStore, period = PERIOD) {
  const { outcome } = await run(store, { period });
  completed(outcome);
  return snapshot(store, `exports/company=${company}/period=${period}/`);
}

async function expectUnchanged(store: ObjectStore, before: Record<string, string>, period = PERIOD): Promise<void> {
  expect(await snapshot(store, `exports/company=${company}/period=${period}/`)).toEqual(before);
}

const fault = (route: string, f: Fault, options: { page?: number; times?: number | 'always' } = {}) =>
  // The first page goes out without a `page` parameter: a rule for it matches the route's first request.
  sandbox.admin.faults.add({
    route,
    times: options.times ?? 1,
    fault: f,
    ...(options.page && options.page > 1 ? { query: { page: String(options.page) } } : {}),
  });

/** The fault hits a middle page; the client's retry reads it again and the export is exact. */
async function recoveredMidStream(route: string, f: Fault, page: number, options: RunOptions = {}) {
  const store = newStore();
  await fault(route, f, { page });
  const { outcome, sleeps, metrics } = await run(store, options);
  const summary = completed(outcome);
  await expectExact(summary.manifest);
  expect(metrics.sum('ExportCompleted')).toBe(1);
  return { summary, sleeps, store };
}

async function objectOf(store: ObjectStore, manifest: Manifest, format: 'jsonl' | 'csv'): Promise<string> {
  const object = manifest.objects.find((o) => o.dataset === 'transactions' && o.format === format)!;
  const bytes = Buffer.from((await store.get(object.key))!);
  return (format === 'jsonl' ? gunzipSync(bytes) : bytes).toString('utf8');
}

/** The attempt fails; the period's previous complete export is byte-identical and nothing of the attempt is left. */
async function noPartialData(route: string, f: Fault, options: { page?: number; times?: number | 'always' } = {}) {
  const store = newStore();
  const before = await baseline(store);
  await fault(route, f, options);
  const { outcome, events, metrics } = await run(store);
  expect(outcome).toMatchObject({ status: 'failed', retryable: true, final: false });
  await expectUnchanged(store, before);
  expect(metrics.sum('ExportAttemptFailed')).toBe(1);
  // Not the last delivery: the queue retries, no ExportFailed yet.
  expect(events.events).toEqual([]);
  return outcome;
}

/** A failure that will not heal: ExportFailed at once (metric and event), no manifest for the period. */
async function typedFailure(
  outcome: ExportOutcome,
  events: MemoryEventPublisher,
  metrics: MemoryMetrics,
  store: ObjectStore,
  errorClass: string,
) {
  expect(outcome).toMatchObject({ status: 'failed', final: true });
  expect(metrics.sum('ExportFailed')).toBe(1);
  expect(events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([
    expect.objectContaining({ detail: expect.objectContaining({ companyId: company, period: PERIOD, errorClass, previousExport: false }) }),
  ]);
  expect(await store.head(manifestKey(company, parsePeriod(PERIOD)))).toBeUndefined();
  return 'typed_failure' as const;
}

/**
 * An institution user of the company, onboarded into a fresh DynamoDB token store, and the
 * TokenLifecycle that keeps its token fresh (the refresh worker).
 */
async function onboardExporter() {
  const tableName = `matrix-export-tokens-${randomUUID().slice(0, 8)}`;
  await createTokenTable(ddb, tableName);
  const tokens = new DynamoDbTokenStore({ client: ddb, tableName });
  const secret = (
    await sdk.send(
      new CreateSecretCommand({
        Name: `acctops/matrix/institution-${tableName}`,
        SecretString: `${CANARY.institutionId}:${CANARY.institutionSecret}`,
      }),
    )
  ).ARN!;
  const refresher = new TokenLifecycle({
    store: tokens,
    institution: createAccountingClient({
      baseUrl: sandbox.baseUrl,
      credentials: institutionCredentialProvider(cachedInstitutionCredential(secretStore(sm), secret, { clock })),
      clock,
      logger,
    }).institution,
    clock,
    logger,
    metrics: new MemoryMetrics(),
    settings: { marginMs: 15 * MINUTE },
  });
  const user = { externalId: randomUUID(), username: `exporter-${tableName}`, email: `exporter-${tableName.slice(-8)}@example.test` };
  await sandbox.admin.createUser({ ...user, institutionId: CANARY.institutionId, companies: [company] });
  await refresher.onboard(user);
  return { tokens, user, refresher };
}

matrixColumn('monthlyExport', {
  'rate-limit': async () => {
    const { sleeps } = await recoveredMidStream(TRANSACTIONS, { type: 'status', status: 429, retryAfter: 1 }, 2);
    expect(sleeps).toEqual([1000]);
    return 'recovered';
  },

  'status-500': async () => {
    const { sleeps } = await recoveredMidStream(TRANSACTIONS, { type: 'status', status: 500 }, 2);
    expect(sleeps).toHaveLength(1);
    return 'recovered';
  },

  'status-502': async () => {
    const { sleeps, summary } = await recoveredMidStream('GET /companies/{company_pk}/taxes/reports/', { type: 'status', status: 502 }, 1);
    expect(sleeps).toHaveLength(1);
    expect(summary.datasets.tax_reports?.records).toBe(1);
    return 'recovered';
  },

  'status-503': async () => {
    const outcome = await noPartialData(TRANSACTIONS, { type: 'status', status: 503 }, { page: 2, times: 'always' });
    expect(outcome).toMatchObject({ error: expect.objectContaining({ name: 'ServerError', status: 503 }) });
    return 'no_partial_data';
  },

  timeout: async () => {
    // Held on the sandbox's manual clock: the first attempt at page 2 never answers in time.
    await recoveredMidStream(TRANSACTIONS, { type: 'slow', delayMs: 24 * 60 * MINUTE }, 2, {
      timesOut: (url) => url.pathname.endsWith('/accounting/transactions/') && url.searchParams.get('page') === '2',
    });
    return 'recovered';
  },

  reset: async () => {
    const { sleeps } = await recoveredMidStream(TRANSACTIONS, { type: 'reset', phase: 'partial' }, 2);
    expect(sleeps).toHaveLength(1);
    return 'recovered';
  },

  'malformed-json': async () => {
    const outcome = await noPartialData(TRANSACTIONS, { type: 'malformed_json' }, { page: 2 });
    expect(outcome).toMatchObject({ error: expect.objectContaining({ name: 'ResponseValidationError' }) });
    return 'no_partial_data';
  },

  'drift-missing-field': async () => {
    const store = newStore();
    await fault(TRANSACTIONS, { type: 'drop_field', field: 'amount' }, { page: 2 });
    const { outcome, events, metrics } = await run(store, { last: true });
    expect(outcome).toMatchObject({
      error: expect.objectContaining({ name: 'ResponseValidationError', field: expect.stringMatching(/amount/) }),
    });
    return typedFailure(outcome, events, metrics, store, 'ResponseValidationError');
  },

  'drift-extra-fields': async () => {
    const { summary, store } = await recoveredMidStream(
      TRANSACTIONS,
      { type: 'extra_fields', fields: { vatRate: '19.00', labels: ['a'] } },
      1,
    );
    const lines = (await objectOf(store, summary.manifest, 'jsonl')).trimEnd().split('\n');
    expect(lines.filter((l) => (JSON.parse(l) as { vatRate?: string }).vatRate === '19.00')).toHaveLength(1000);
    expect((await objectOf(store, summary.manifest, 'csv')).split('\n')[0]).not.toContain('vatRate');
    return 'recovered';
  },

  'drift-unknown-enum': async () => {
    const { summary } = await recoveredMidStreamTolerant(
      TRANSACTIONS,
      { type: 'unknown_enum', field: 'cashflowType', value: 'TRANSFER' },
      1,
    );
    const totals = summary.manifest.datasets.transactions!.totals;
    expect(totals.filter((t) => t.cashflowType === 'TRANSFER').map((t) => t.records)).toEqual([1000]);
    return 'recovered';
  },

  'page-loop': async () => {
    const store = newStore();
    await fault(TRANSACTIONS, { type: 'next_loop' }, { page: 2 });
    const { outcome, events, metrics } = await run(store);
    expect(outcome).toMatchObject({ retryable: false, error: expect.objectContaining({ name: 'PaginationError', reason: 'next_loop' }) });
    return typedFailure(outcome, events, metrics, store, 'PaginationError');
  },

  'page-count-mismatch': async () => {
    const outcome = await noPartialData(TRANSACTIONS, { type: 'count_mismatch', delta: 1 }, { page: 1 });
    expect(outcome).toMatchObject({ error: expect.objectContaining({ name: 'ExportCountMismatchError' }) });
    return 'no_partial_data';
  },

  'page-foreign-next': async () => {
    const foreign = await startRecordingServer();
    try {
      const store = newStore();
      await fault(
        TRANSACTIONS,
        { type: 'foreign_next', url: `${foreign.origin}/elsewhere/api/v1/accounting/transactions/?page=2` },
        { page: 1 },
      );
      const { outcome, events, metrics } = await run(store);
      expect(outcome).toMatchObject({
        retryable: false,
        error: expect.objectContaining({ name: 'PaginationError', reason: 'foreign_next' }),
      });
      expect(foreign.requests).toEqual([]);
      return await typedFailure(outcome, events, metrics, store, 'PaginationError');
    } finally {
      await foreign.stop();
    }
  },

  'page-result-set-change': async () => {
    const store = newStore();
    await fault(TRANSACTIONS, { type: 'result_set_change', insert: 1 }, { page: 1 });
    const first = await run(store);
    expect(first.outcome).toMatchObject({
      status: 'failed',
      retryable: true,
      error: expect.objectContaining({ name: 'ExportCountMismatchError' }),
    });
    expect(await store.head(manifestKey(company, parsePeriod(PERIOD)))).toBeUndefined();
    // The queue's redelivery reads the list afresh.
    const second = await run(store);
    const summary = completed(second.outcome);
    await expectExact(summary.manifest);
    const ids = (await objectOf(store, summary.manifest, 'jsonl'))
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { publicId: string }).publicId);
    expect(new Set(ids).size).toBe(ids.length);
    return 'consistent';
  },

  'page-overlap': async () => {
    const store = newStore();
    await fault(TRANSACTIONS, { type: 'page_overlap', items: 3 }, { page: 2 });
    const summary = completed((await run(store)).outcome);
    await expectExact(summary.manifest);
    expect(summary.manifest.datasets.transactions!.duplicatesDropped).toBe(3);
    const ids = (await objectOf(store, summary.manifest, 'jsonl'))
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { publicId: string }).publicId);
    expect(ids).toHaveLength(summary.manifest.datasets.transactions!.records);
    expect(new Set(ids).size).toBe(ids.length);
    return 'consistent';
  },

  'token-expires-mid-export': async () => {
    const { tokens, user, refresher } = await onboardExporter();
    const issued = (await tokens.get(user.externalId))!;

    const before = (await sandbox.admin.stats()).byRouteAndStatus[TRANSACTIONS]?.['401'] ?? 0;
    let moved = false;
    const { outcome } = await run(newStore(), {
      source: { kind: 'user', externalId: user.externalId },
      credentials: userTokenCredentials(tokens, user.externalId, { clock, companyId: company, logger }),
      beforeRequest: async (url) => {
        if (moved || !url.pathname.endsWith('/accounting/transactions/') || url.searchParams.get('page') !== '2') return;
        moved = true;
        // Between pages the access token expires at the service, and the refresh worker renews it.
        clock.advance(31 * MINUTE);
        await expect(refresher.refresh(user.externalId)).resolves.toMatchObject({ result: 'refreshed' });
      },
    });
    const summary = completed(outcome);
    await expectExact(summary.manifest);
    expect(moved).toBe(true);
    expect((await tokens.get(user.externalId))!.accessToken).not.toBe(issued.accessToken);
    // Page 2 went out once with the expired token, was refused, and was repeated with the new one.
    expect((await sandbox.admin.stats()).byRouteAndStatus[TRANSACTIONS]?.['401']).toBe(before + 1);
    return 'recovered';
  },

  'key-revoked-mid-export': async () => {
    const before = (await sandbox.admin.stats()).byRouteAndStatus[TRANSACTIONS]?.['401'] ?? 0;
    const old = (await secretStore(sm).readSecret(secretArn)).value;
    let rotated = false;
    const { outcome } = await run(newStore(), {
      beforeRequest: async (url) => {
        if (rotated || !url.pathname.endsWith('/accounting/transactions/') || url.searchParams.get('page') !== '2') return;
        rotated = true;
        // A rotation finishes and the old key's grace period ends while the export is between pages.
        const replacement = await newKey();
        await sdk.send(new PutSecretValueCommand({ SecretId: secretArn, SecretString: serializeCompanyKeySecret(replacement) }));
        await sandbox.admin.revokeApiKey({ publicId: initialKey.apiKeyId });
      },
    });
    const summary = completed(outcome);
    await expectExact(summary.manifest);
    expect(rotated).toBe(true);
    expect((await secretStore(sm).readSecret(secretArn)).value).not.toBe(old);
    expect((await sandbox.admin.stats()).byRouteAndStatus[TRANSACTIONS]?.['401']).toBe(before + 1);
    return 'recovered';
  },

  's3-multipart-failure': async () => {
    await sandbox.admin.generateTransactions({ companyId: company, month: BIG_PERIOD, count: 30_000 });
    const client = s3.client();
    let failing = false;
    const { parts } = instrumentS3(
      client,
      ({ key, part }) => failing && part === 2 && key.endsWith('/part-00000.csv') && key.includes('/transactions/'),
    );
    const store = newStore(client);
    const before = await baseline(store, BIG_PERIOD);
    expect([...parts].some(([key, n]) => key.endsWith('.csv') && n >= 2)).toBe(true);
    parts.clear();
    failing = true;
    const { outcome, metrics } = await run(store, { period: BIG_PERIOD });
    expect(outcome).toMatchObject({ status: 'failed', retryable: true, error: expect.objectContaining({ name: 'ObjectStoreError' }) });
    expect([...parts].some(([key, n]) => key.endsWith('.csv') && n >= 2)).toBe(true);
    await expectUnchanged(store, before, BIG_PERIOD);
    expect(metrics.sum('ExportAttemptFailed')).toBe(1);
    return 'no_partial_data';
  },

  'dynamodb-conditional': async () => {
    // The company is in the stage's list (its API key) and reachable by an institution user: two sources.
    const { tokens } = await onboardExporter();
    const tableName = `matrix-ledger-${randomUUID().slice(0, 8)}`;
    await createRunLedgerTable(ddb, tableName);
    const ledger = new DynamoDbRunLedger({ client: ddb, tableName, clock });
    const queue = new MemoryExportQueue();
    const events = new MemoryEventPublisher();
    const metrics = new MemoryMetrics();
    const deps = { ledger, queue, events, clock, logger, metrics };
    const plan = await planMonthlyExport(deps, {
      scheduledAt: '2026-11-01T03:00:00+01:00',
      executionId: `matrix-${tableName}`,
      timeZone: 'Europe/Berlin',
      companies: [company],
      users: tokens,
      formats: ['csv'],
    });
    expect(plan).toMatchObject({ period: PERIOD, companies: 1, users: 1 });

    const store = newStore();
    const worker = {
      ...deps,
      exporter: { store, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl },
      credentials: (source: ExportSource, companyId?: string) =>
        source.kind === 'apiKey'
          ? companyKeys().credentials(companyId!)
          : userTokenCredentials(tokens, source.externalId, { clock, companyId }),
      maxReceiveCount: 3,
    };
    // The export job and the user's discovery run at once: the discovery finds the company already
    // taken by the API-key source (its conditional put fails) and enqueues nothing.
    const messages = queue.drain().map((m, i) => ({ messageId: `m${i}`, body: m.body, receiveCount: 1 }));
    const reports = await Promise.all(messages.map((m) => processExportBatch(worker, [m])));
    expect(reports.flatMap((r) => r.results.map((x) => x.result)).sort()).toEqual(['completed', 'discovered']);
    expect(queue.messages).toEqual([]);
    const tally = await ledger.tally(plan.runId);
    expect(tally).toMatchObject({ expected: 1, completed: 1, failed: 0, openCompanies: [], pendingDiscoveries: 0 });
    expect(events.ofType(EXPORT_EVENT_TYPES.completed)).toHaveLength(1);
    expect(events.ofType(EXPORT_EVENT_TYPES.monthlyFinished)).toEqual([
      expect.objectContaining({ detail: expect.objectContaining({ runId: plan.runId, expected: 1, completed: 1, failed: 0 }) }),
    ]);
    return 'consistent';
  },

  'secrets-throttling': async () => {
    // The production store: the SDK's default (standard) retry strategy.
    const store = new AwsSecretStore({ endpoint: sm.endpoint, region: LOCAL_REGION, credentials: localCredentials });
    sm.admin.resetStats();
    sm.admin.injectFault({ operation: 'GetSecretValue', count: 1 });
    const { outcome } = await run(newStore(), { credentials: companyKeys(store).credentials(company) });
    await expectExact(completed(outcome).manifest);
    expect(sm.admin.stats().errors.ThrottlingException).toBe(1);
    return 'recovered';
  },

  'registry-read-throttled': async () => {
    const tableName = `matrix-registry-${randomUUID().slice(0, 8)}`;
    await createRegistryTable(ddb, tableName);
    await new CompanyRegistry(new DynamoDbRegistryTable({ client: ddb, tableName }), { defaultFormats: FORMATS }).add(
      { companyId: company, defaultCurrency: 'EUR' },
      clock.now(),
    );
    const faults = await startDynamoFaults(dynamo);
    const client = faults.client();
    try {
      // As the worker's root wires it (export-worker-runtime.ts), on a client with the SDK's default retries.
      const companyCurrency = registryCurrency(registryEntryReader({ client, tableName }));
      const store = newStore();
      const before = await baseline(store);
      faults.inject({ operation: 'GetItem', count: 'always' });
      const requests = (await sandbox.admin.stats()).requests;
      const logged = logger.lines.length;

      const first = await run(store, { companyCurrency });
      expect(first.outcome).toMatchObject({
        status: 'failed',
        retryable: true,
        final: false,
        error: expect.objectContaining({ name: 'ProvisionedThroughputExceededException' }),
      });
      // Every attempt of the client's default strategy (DynamoDB's own default count) met the throttle.
      const attempts = await client.config.maxAttempts();
      expect(attempts).toBeGreaterThan(1);
      expect(faults.stats.errors).toEqual({ ProvisionedThroughputExceededException: attempts });
      // The currency is asked before the first page: the service saw nothing of the attempt.
      expect((await sandbox.admin.stats()).requests).toBe(requests);
      await expectUnchanged(store, before);
      expect(first.metrics.sum('ExportAttemptFailed')).toBe(1);
      expect(first.events.events).toEqual([]);
      const failure = logger
        .entries()
        .slice(logged)
        .find((e) => e.message === 'export attempt failed; the queue will retry');
      expect(failure).toMatchObject({
        level: 'warn',
        companyId: company,
        period: PERIOD,
        retryable: true,
        // DynamoDB's message says "the table"; the worker reads other tables too.
        error: expect.objectContaining({
          name: 'ProvisionedThroughputExceededException',
          message: expect.stringContaining(`company registry table ${tableName}`),
        }),
      });

      // The queue's last delivery: ExportFailed, still retryable, so the worker hands the message to the DLQ for a redrive.
      const last = await run(store, { companyCurrency, last: true });
      expect(last.outcome).toMatchObject({ status: 'failed', retryable: true, final: true });
      expect(last.metrics.sum('ExportFailed')).toBe(1);
      expect(last.events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([
        expect.objectContaining({
          detail: expect.objectContaining({
            companyId: company,
            period: PERIOD,
            errorClass: 'ProvisionedThroughputExceededException',
            retryable: true,
            previousExport: true,
          }),
        }),
      ]);
      await expectUnchanged(store, before);

      faults.clear();
      const redriven = await run(store, { companyCurrency });
      await expectExact(completed(redriven.outcome).manifest);
      expect(faults.stats.calls.GetItem).toBe(2 * attempts + 1);
    } finally {
      client.destroy();
      await faults.stop();
    }
    return 'no_partial_data';
  },

  'lambda-timeout-rotation': async () => {
    const world = await RotationWorld.start(['manage_api_keys', ...READ]);
    try {
      await world.sandbox.admin.generateTransactions({ companyId: world.companyId, month: PERIOD, count: 1200 });
      world.sm.admin.setRotationMode('manual');
      await world.startRotation();
      await world.sm.admin.runRotationStep(world.secretArn, 'createSecret');
      // The rotation function dies here: AWSPENDING holds a new, working key; AWSCURRENT the old one.
      const pending = world.fullKeys().find((k) => k !== world.initialKey.apiKey)!;
      expect(pending).toBeDefined();
      const exportWith = async () => {
        await world.sandbox.admin.resetStats();
        const { outcome } = await run(newStore(), {
          baseUrl: world.sandbox.baseUrl,
          companyId: world.companyId,
          credentials: new CompanyApiKeys(world.store, world.directory, { clock: world.clock }).credentials(world.companyId),
        });
        expect(completed(outcome).manifest.datasets.transactions?.records).toBe(1200);
        return new Set(
          (await world.sandbox.admin.requestLog()).map((r) =>
            r.credential?.kind === 'api_key' ? r.credential.prefix : r.credential?.kind,
          ),
        );
      };
      expect(await exportWith()).toEqual(new Set([world.initialKey.keyPrefix]));

      await world.sm.admin.retryRotation(world.secretArn);
      expect(world.sm.admin.rotation(world.secretArn)).toMatchObject({ status: 'succeeded' });
      expect(await exportWith()).toEqual(new Set([keyPrefix(pending)]));
    } finally {
      await world.stop();
    }
    return 'consistent';
  },
});

/** Like recoveredMidStream, for a fault that changes what the service reports: no exactness against its own totals. */
async function recoveredMidStreamTolerant(route: string, f: Fault, page: number) {
  const store = newStore();
  await fault(route, f, { page });
  const { outcome } = await run(store);
  const summary = completed(outcome);
  const truth = await sandbox.admin.transactionSummary({ companyId: company, ...periodRange(parsePeriod(PERIOD)) });
  expect(summary.manifest.datasets.transactions!.records).toBe(truth.count);
  const sum = (values: string[]) => values.reduce((a, b) => a + BigInt(b), 0n);
  expect(sum(summary.manifest.datasets.transactions!.totals.map((t) => t.amountMinor))).toBe(sum(Object.values(truth.totals.EUR ?? {})));
  return { summary };
}
