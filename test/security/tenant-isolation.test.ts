import { randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import fc from 'fast-check';
import { DirObjectStore } from '../../src/adapters/local/dir-object-store';
import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { MemoryExportQueue } from '../helpers/memory-export-queue';
import { MemoryReplayGuard } from '../helpers/memory-replay-guard';
import {
  COMPANY_KEY_TAGS,
  CompanyApiKeys,
  PURPOSE_COMPANY_KEY,
  serializeCompanyKeySecret,
  taggedKeyDirectory,
} from '../../src/core/api-keys';
import {
  AccountingClient,
  CompanyMismatchError,
  accessTokenAuth,
  apiKeyAuth,
  createAccountingClient,
  type CredentialProvider,
  type TransportRequest,
} from '../../src/core/accounting-api';
import { RequestEngine } from '../../src/core/accounting-api/request';
import { defaultRetryPolicy } from '../../src/core/accounting-api/retry';
import { EXPORT_EVENT_TYPES } from '../../src/core/exports/pipeline/export-events';
import { exportCompanyPeriod } from '../../src/core/exports/pipeline/export-company-period';
import type { ExportSource } from '../../src/core/exports/pipeline/export-jobs';
import { WEBHOOK_HEADERS, receiveExportWebhook, signWebhook } from '../../src/core/exports/pipeline/webhook';
import { ManualClock } from '../../src/core/shared/clock';
import { MemoryLogger, silentLogger } from '../../src/core/shared/logger';
import { MemoryMetrics } from '../../src/core/shared/metrics';
import { forgetRegisteredSecrets, keyPrefix } from '../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { call } from '../integration/sandbox/support';
import { CANARY, trackSecret } from '../helpers/canary';
import { listKeys } from '../helpers/export-fixtures';
import { client as secretsClient, secretStore, startSecretsManager, type RunningSecretsManager } from '../helpers/secrets-manager';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Tenant isolation (docs/security.md): a company's key or a user's token reads and exports that
 * company only. Checked twice over: the client refuses a request naming another company before
 * sending it (path, X-Company-Id, body), and the service (the sandbox, as docs/assumptions.md
 * specifies it) refuses what gets through anyway. The exporter writes nothing for a company its
 * credential does not act for, and the webhook serves only its configured companies.
 */

const clock = new ManualClock(Date.UTC(2026, 10, 2, 9, 0));
const READ = ['read_transactions', 'read_categories', 'read_tax_reports'] as const;
let sandbox: RunningSandbox;
let sm: RunningSecretsManager;
let companyA: string;
let companyB: string;
let keyA: string;
let keyB: string;
let tokenOfA: string;
let out: string;

beforeAll(async () => {
  [sandbox, sm] = await Promise.all([startSandbox({ clock, demo: false }), startSecretsManager({ clock })]);
  [companyA, companyB] = (await Promise.all(
    [0, 1].map(async (i) => (await sandbox.admin.createCompany({ name: `Tenant ${i}` })).publicId),
  )) as [string, string];
  for (const company of [companyA, companyB]) {
    await sandbox.admin.generateTransactions({ companyId: company, month: '2026-10', count: 120 });
    await sandbox.admin.addCategory({ companyId: company, name: `Only ${company}`, cashflowType: 'EXPENSE' });
    await sandbox.admin.addTaxReport({
      companyId: company,
      periodStart: '2026-10-01',
      periodEnd: '2026-10-31',
      amountDue: '10.00',
      currency: 'EUR',
    });
  }
  keyA = (await sandbox.admin.createApiKey({ companyId: companyA, permissions: [...READ, 'manage_api_keys'] })).key;
  keyB = (await sandbox.admin.createApiKey({ companyId: companyB, permissions: [...READ] })).key;
  await sandbox.admin.createInstitution({ id: CANARY.institutionId, secret: CANARY.institutionSecret });
  tokenOfA = (await sandbox.admin.createUser({ institutionId: CANARY.institutionId, companies: [companyA], issueTokens: true })).tokens!
    .accessToken;
  [keyA, keyB, tokenOfA].forEach(trackSecret);
  out = await mkdtemp(join(tmpdir(), 'acctops-tenants-'));
});

afterAll(async () => {
  await Promise.all([sandbox.stop(), sm.stop(), rm(out, { recursive: true, force: true })]);
  forgetRegisteredSecrets();
});

const requests = async () => (await sandbox.admin.stats()).requests;
const sdkClient = (credentials: CredentialProvider, companyId?: string) =>
  createAccountingClient({ baseUrl: sandbox.baseUrl, credentials, companyId, clock, retry: { maxAttempts: 1 } });

describe("company A's credential never reaches company B", () => {
  it("lists with A's key and with a token of A's user hold A's records only", async () => {
    for (const credentials of [apiKeyAuth(keyA), accessTokenAuth(tokenOfA, { companyId: companyA })]) {
      const client = sdkClient(credentials, companyA);
      expect((await client.companies.list().all()).map((c) => c.parsed.publicId)).toEqual([companyA]);
      const categories = (await client.categories.list().all()).map((c) => c.parsed.name);
      expect(categories).toContain(`Only ${companyA}`);
      expect(categories).not.toContain(`Only ${companyB}`);
      const count = (await client.transactions.list({ dateFrom: '2026-10-01', dateTo: '2026-10-31' }).all()).length;
      expect(count).toBe(
        (await sandbox.admin.transactionSummary({ companyId: companyA, dateFrom: '2026-10-01', dateTo: '2026-10-31' })).count,
      );
    }
  });

  it('the client refuses B in the path, in X-Company-Id and in the body before anything is sent', async () => {
    const sent: TransportRequest[] = [];
    const transport = (request: TransportRequest) => {
      sent.push(request);
      return Promise.reject(new Error('nothing may be sent'));
    };
    const scoped = (credentials: CredentialProvider, companyId?: string) =>
      new AccountingClient({ baseUrl: sandbox.baseUrl, credentials, companyId, transport, clock, retry: { maxAttempts: 1 } });
    await fc.assert(
      fc.asyncProperty(
        fc.uuid(),
        fc.uuid(),
        fc.constantFrom('apiKey', 'accessToken'),
        fc.constantFrom('path', 'header', 'companyId', 'company'),
        async (a, b, kind, where) => {
          fc.pre(a.toLowerCase() !== b.toLowerCase());
          const credentials =
            kind === 'apiKey' ? apiKeyAuth(CANARY.apiKey, { companyId: a }) : accessTokenAuth(CANARY.accessToken, { companyId: a });
          let attempt: Promise<unknown>;
          if (where === 'path') attempt = scoped(credentials).taxReports.list(b).all();
          else if (where === 'header') attempt = scoped(credentials, b).transactions.list().all();
          else
            attempt = engine(credentials, transport).send({
              method: 'POST',
              url: new URL(`${sandbox.baseUrl}/api-keys/`),
              auth: 'bearer',
              safety: 'unsafe',
              body: { name: 'x', [where]: b },
            });
          const error = await attempt.then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(CompanyMismatchError);
          expect((error as CompanyMismatchError).param).toBe(
            { path: 'company_pk', header: 'X-Company-Id', companyId: 'companyId', company: 'company' }[where],
          );
          expect(sent).toEqual([]);
        },
      ),
      { seed: 8, numRuns: 80 },
    );
    // The control: the same company in another spelling is not a mismatch, and goes out.
    await expect(
      scoped(apiKeyAuth(keyA, { companyId: companyA }))
        .taxReports.list(companyA.toUpperCase())
        .all(),
    ).rejects.not.toBeInstanceOf(CompanyMismatchError);
    expect(sent).toHaveLength(1);
  });

  it('the service refuses what a careless client would send: B in the path, in X-Company-Id and in the body', async () => {
    const refusals = await Promise.all([
      call(sandbox.baseUrl, `/companies/${companyB}/taxes/reports/`, { bearer: keyA }),
      call(sandbox.baseUrl, '/accounting/transactions/', { bearer: keyA, companyId: companyB }),
      call(sandbox.baseUrl, '/api-keys/', { bearer: keyA, body: { name: 'x', permissions: ['read_transactions'], companyId: companyB } }),
      call(sandbox.baseUrl, '/accounting/transactions/', { bearer: tokenOfA, companyId: companyB }),
      call(sandbox.baseUrl, `/companies/${companyB}/taxes/reports/`, { bearer: tokenOfA }),
    ]);
    for (const refusal of refusals) {
      expect(refusal.status).toBe(403);
      expect(refusal.text).not.toContain(`Only ${companyB}`);
    }
    expect(refusals.map((r) => (r.body as { error: { param: string } }).error.param)).toEqual([
      'company_pk',
      'X-Company-Id',
      'companyId',
      'X-Company-Id',
      'company_pk',
    ]);
  });
});

describe("the exporter never exports B with A's credential", () => {
  let exports = 0;
  async function exportB(credentials: CredentialProvider, source: ExportSource = { kind: 'apiKey' }) {
    const store = new DirObjectStore(join(out, `run-${++exports}`));
    const events = new MemoryEventPublisher();
    const before = await requests();
    const outcome = await exportCompanyPeriod(
      {
        store,
        events,
        clock: ManualClock.autoAdvancing(clock.now()),
        logger: new MemoryLogger(),
        metrics: new MemoryMetrics(),
        toolVersion: '0.1.0',
        baseUrl: sandbox.baseUrl,
      },
      {
        companyId: companyB,
        period: '2026-10',
        credentials,
        source,
        trigger: { kind: 'on_demand', requestId: 'tenant', via: 'event' },
        formats: ['jsonl', 'csv'],
      },
    );
    expect(outcome).toMatchObject({ status: 'failed', retryable: false, final: true });
    expect(await listKeys(store)).toEqual([]);
    expect(events.ofType(EXPORT_EVENT_TYPES.failed)).toEqual([
      expect.objectContaining({ detail: expect.objectContaining({ companyId: companyB }) }),
    ]);
    return { outcome, sent: (await requests()) - before };
  }

  it("A's key that knows its company: refused before sending, nothing written", async () => {
    const { outcome, sent } = await exportB(apiKeyAuth(keyA, { companyId: companyA }));
    expect(outcome).toMatchObject({ error: expect.any(CompanyMismatchError) });
    expect(sent).toBe(0);
  });

  it("A's key alone (its company unknown to the client): the service refuses X-Company-Id B, nothing written", async () => {
    const { outcome, sent } = await exportB(apiKeyAuth(keyA));
    expect(outcome).toMatchObject({ error: expect.objectContaining({ name: 'CompanyMismatchError', status: 403 }) });
    expect(sent).toBeGreaterThan(0);
  });

  it("a token of A's user: the service refuses B, nothing written", async () => {
    const { outcome } = await exportB(accessTokenAuth(tokenOfA), { kind: 'user', externalId: randomUUID() });
    expect(outcome).toMatchObject({ error: expect.objectContaining({ name: 'CompanyMismatchError', status: 403 }) });
  });

  it("B's secret holding A's key (a mis-filed secret) is refused before any request, nothing written", async () => {
    const sdk = secretsClient(sm);
    await sdk.send(
      new CreateSecretCommand({
        Name: `acctops/tenants/company/${companyB}/api-key`,
        SecretString: serializeCompanyKeySecret({
          apiKey: keyA,
          apiKeyId: randomUUID(),
          keyPrefix: keyPrefix(keyA),
          companyId: companyA,
          permissions: [...READ],
          createdAt: new Date(clock.now()).toISOString(),
        }),
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: companyB },
        ],
      }),
    );
    sdk.destroy();
    const keys = new CompanyApiKeys(secretStore(sm), taggedKeyDirectory(secretStore(sm)), { clock });
    const { outcome, sent } = await exportB(keys.credentials(companyB));
    expect(outcome).toMatchObject({
      error: expect.objectContaining({ name: 'ValidationError', issues: [expect.objectContaining({ path: 'companyId' })] }),
    });
    expect(sent).toBe(0);
  });

  it("B's own key exports B (the control: the refusals above are about the credential)", async () => {
    const store = new DirObjectStore(join(out, 'control'));
    const outcome = await exportCompanyPeriod(
      { store, clock: ManualClock.autoAdvancing(clock.now()), logger: silentLogger, toolVersion: '0.1.0', baseUrl: sandbox.baseUrl },
      {
        companyId: companyB,
        period: '2026-10',
        credentials: apiKeyAuth(keyB),
        source: { kind: 'apiKey' },
        trigger: { kind: 'on_demand', requestId: 'control', via: 'cli' },
        formats: ['csv'],
      },
    );
    expect(outcome.status).toBe('completed');
    expect((await listKeys(store)).every((k) => k.startsWith(`exports/company=${companyB}/`))).toBe(true);
  });
});

describe('the webhook serves its configured companies only', () => {
  it('a correctly signed request for any other company is 403 and enqueues nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.boolean(), async (other, upper) => {
        fc.pre(other.toLowerCase() !== companyA.toLowerCase());
        const queue = new MemoryExportQueue();
        const body = JSON.stringify({ id: `evt-${randomUUID()}`, companyId: upper ? other.toUpperCase() : other, period: '2026-10' });
        const timestamp = Math.floor(clock.now() / 1000);
        const response = await receiveExportWebhook(
          {
            secrets: { signingSecrets: () => Promise.resolve([CANARY.webhookSecret]) },
            replay: new MemoryReplayGuard(clock),
            queue,
            allowedCompanies: new Set([companyA]),
            clock,
            logger: silentLogger,
            metrics: new MemoryMetrics(),
          },
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              [WEBHOOK_HEADERS.timestamp]: String(timestamp),
              [WEBHOOK_HEADERS.signature]: signWebhook(CANARY.webhookSecret, timestamp, body),
            },
            body: Buffer.from(body),
          },
        );
        expect(response).toMatchObject({ status: 403, body: { error: { code: 'company_not_allowed' } } });
        expect(queue.messages).toEqual([]);
      }),
      { seed: 8, numRuns: 40 },
    );
  });
});

/** The client's request engine, for the one placement no public operation produces: a company in the body. */
function engine(credentials: CredentialProvider, transport: (request: TransportRequest) => Promise<never>): RequestEngine {
  return new RequestEngine({
    baseUrl: new URL(`${sandbox.baseUrl}/`),
    credentials,
    companyId: undefined,
    transport,
    timeoutMs: 1000,
    retry: { ...defaultRetryPolicy, maxAttempts: 1 },
    clock,
    random: () => 0,
    logger: silentLogger,
    onWarning: undefined,
    pageSize: 1000,
    maxPageSize: 1000,
    maxResponseBytes: 1 << 20,
  });
}
