import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { CreateSecretCommand, PutSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyStructuredResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDbRegistryTable } from '../../../src/adapters/aws/dynamodb-company-registry';
import { CompanyRegistry, type RegisteredCompany } from '../../../src/core/companies/company-registry';
import { DynamoDbTokenStore } from '../../../src/adapters/aws/dynamodb-token-store';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY } from '../../../src/core/api-keys/key-directory';
import { serializeCompanyKeySecret } from '../../../src/core/api-keys/company-key-secret';
import { EXPORT_EVENT_TYPES } from '../../../src/core/exports/pipeline/export-events';
import { decodeJob } from '../../../src/core/exports/pipeline/export-jobs';
import type { MonthlyPlanReport, OverdueReport } from '../../../src/core/exports/pipeline/monthly-export';
import { signWebhook } from '../../../src/core/exports/pipeline/webhook';
import { forgetRegisteredSecrets, keyPrefix } from '../../../src/core/shared/redact';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { LOCAL_REGION } from '../../helpers/aws-credentials';
import { startAwsRecorder, type AwsRecorder, type RecordedMessage } from '../../helpers/aws-recorder';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { listKeys } from '../../helpers/export-fixtures';
import { startS3, type LocalS3 } from '../../helpers/s3rver';
import { client as secretsClient, startSecretsManager, type RunningSecretsManager } from '../../helpers/secrets-manager';
import { CANARY } from '../../helpers/canary';
import { captureStdout, lambdaContexts, loadHandler, type LambdaHandler } from '../../helpers/lambda';
import { TEST_DIALECTS, expiryOf } from '../../helpers/dialects';
import { createTokenTable, createRegistryTable, createRunLedgerTable, createReplayTable } from '../../helpers/dynamodb-tables';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // The export functions end to end: the real handler modules (environment read at load, the real
  // AWS SDK clients pointed at local peers through AWS_ENDPOINT_URL_*) against the sandbox, s3rver,
  // dynalite, the Secrets Manager emulator and a recorder of SQS and EventBridge calls. The
  // recorder's messages are fed to the worker as SQS would deliver them.

  const BUCKET = 'acctops-test-exports';
  const RUNS_TABLE = 'acctops-test-export-runs';
  const REPLAY_TABLE = 'acctops-test-webhook-replay';
  const TOKEN_TABLE = 'acctops-test-tokens';
  const REGISTRY_TABLE = 'acctops-test-companies';
  const BUS = 'acctops-test-exports';
  const WEBHOOK_SECRET = CANARY.webhookSecret;

  let sandbox: RunningSandbox;
  let s3: LocalS3;
  let dynamo: LocalDynamo;
  let ddb: DynamoDBClient;
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let recorder: AwsRecorder;
  let queueUrl: string;
  let keyed: string;
  let userOnly: string;
  let notServed: string;
  let externalId: string;
  const secrets: string[] = [WEBHOOK_SECRET];
  const saved = { ...process.env };
  const stdout: string[] = [];
  let write: jest.SpyInstance;

  const handlers = {} as {
    plan: LambdaHandler<MonthlyPlanReport>;
    check: LambdaHandler<OverdueReport>;
    worker: LambdaHandler<SQSBatchResponse>;
    request: LambdaHandler<{ companyId: string; periods: string[] }>;
    webhook: LambdaHandler<APIGatewayProxyStructuredResultV2>;
  };

  const context = lambdaContexts({ remainingMs: 900_000 });

  /** `ExportRequested` from a producer other than ours (the CLI and the webhook check the request first). */
  const requestFromPartner = (detail: Record<string, unknown>) =>
    handlers.request({ id: randomUUID(), 'detail-type': 'ExportRequested', source: 'partner.backoffice', detail }, context());

  /** A read key of the company, in a secret tagged as the key-rotation construct tags it (an imported one may have any name). */
  async function storeReadKey(companyId: string, name: string) {
    const key = await sandbox.admin.createApiKey({ companyId, permissions: ['read_transactions', 'read_categories', 'read_tax_reports'] });
    secrets.push(key.key);
    const secretString = serializeCompanyKeySecret({
      apiKey: key.key,
      apiKeyId: key.publicId,
      keyPrefix: keyPrefix(key.key),
      companyId,
      permissions: key.permissions,
      createdAt: new Date().toISOString(),
    });
    const tags = [
      { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
      { Key: COMPANY_KEY_TAGS.company, Value: companyId },
    ];
    await sdk.send(new CreateSecretCommand({ Name: name, SecretString: secretString, Tags: tags }));
    return key;
  }

  beforeAll(async () => {
    [sandbox, s3, dynamo, sm, recorder] = await Promise.all([
      startSandbox({ dialect, demo: false }),
      startS3([BUCKET]),
      startDynamo(),
      startSecretsManager(),
      startAwsRecorder(),
    ]);
    ddb = dynamo.client();
    sdk = secretsClient(sm);
    queueUrl = recorder.queueUrl('acctops-test-exports.fifo');
    await Promise.all([
      createRunLedgerTable(ddb, RUNS_TABLE),
      createReplayTable(ddb, REPLAY_TABLE),
      createTokenTable(ddb, TOKEN_TABLE),
      createRegistryTable(ddb, REGISTRY_TABLE),
    ]);

    const institution = await sandbox.admin.createInstitution({ id: 'inst-export-functions' });
    [keyed, userOnly, notServed] = (await Promise.all([0, 1, 2].map(async () => (await sandbox.admin.createCompany()).publicId))) as [
      string,
      string,
      string,
    ];
    const now = new Date();
    const month = `${new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15)).toISOString().slice(0, 7)}`;
    for (const company of [keyed, userOnly, notServed]) await sandbox.admin.generateTransactions({ companyId: company, month, count: 150 });

    // The keyed company's API key lives in a tagged secret, as the key-rotation construct keeps it.
    await storeReadKey(keyed, `acctops/test/company/${keyed}`);
    // The keyed company is registered; a removed one is not planned.
    const registry = new CompanyRegistry(new DynamoDbRegistryTable({ client: ddb, tableName: REGISTRY_TABLE }), {
      defaultFormats: ['jsonl', 'csv', 'parquet'],
    });
    await registry.add({ companyId: keyed }, Date.now());
    await registry.add({ companyId: notServed }, Date.now());
    await registry.remove(notServed, Date.now());
    // A user reaching both companies: the keyed one is exported with its key, the other through the user.
    const user = await sandbox.admin.createUser({
      institutionId: institution.id,
      externalId: randomUUID(),
      companies: [keyed, userOnly],
      issueTokens: true,
    });
    externalId = user.externalId!;
    secrets.push(user.tokens!.accessToken, user.tokens!.refreshToken);
    await new DynamoDbTokenStore({ client: ddb, tableName: TOKEN_TABLE }).create(
      {
        externalId,
        username: user.username,
        email: user.email,
        ...user.tokens!,
        accessTokenExpiresAt: expiryOf(user.tokens!.accessToken, Date.now()),
      },
      Date.now(),
    );
    const webhookSecret = await sdk.send(new CreateSecretCommand({ Name: 'acctops/test/export-webhook', SecretString: WEBHOOK_SECRET }));

    Object.assign(process.env, {
      ACCTOPS_STAGE: 'test',
      LOG_LEVEL: 'debug',
      AWS_REGION: LOCAL_REGION,
      // s3rver checks signatures against its built-in key pair; the other peers accept any.
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
      AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_REQUIRED',
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.endpoint,
      AWS_ENDPOINT_URL_SQS: recorder.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: recorder.endpoint,
      ACCTOPS_BASE_URL: sandbox.baseUrl,
      ACCTOPS_TOOL_VERSION: '0.1.0',
      EXPORT_BUCKET_NAME: BUCKET,
      EXPORT_QUEUE_URL: queueUrl,
      EXPORT_EVENT_BUS_NAME: BUS,
      EXPORT_RUNS_TABLE_NAME: RUNS_TABLE,
      TOKEN_TABLE_NAME: TOKEN_TABLE,
      COMPANY_REGISTRY_TABLE_NAME: REGISTRY_TABLE,
      EXPORT_FORMATS: 'jsonl,csv,parquet',
      EXPORT_TIME_ZONE: 'Europe/Berlin',
      EXPORT_MAX_RECEIVE_COUNT: '3',
      WEBHOOK_SECRET_ARN: webhookSecret.ARN!,
      WEBHOOK_REPLAY_TABLE_NAME: REPLAY_TABLE,
    });
    write = captureStdout(stdout);
    handlers.plan = loadHandler('plan-monthly-export');
    handlers.check = loadHandler('check-monthly-export');
    handlers.worker = loadHandler('export-period');
    handlers.request = loadHandler('request-export');
    handlers.webhook = loadHandler('receive-export-webhook');
  });

  afterAll(async () => {
    write.mockRestore();
    process.env = saved;
    sdk.destroy();
    ddb.destroy();
    await Promise.all([sandbox.stop(), s3.stop(), dynamo.stop(), sm.stop(), recorder.stop()]);
    forgetRegisteredSecrets();
  });

  let delivered = 0;
  /** Every message recorded since the last call, as one SQS batch per message (first delivery). */
  function undelivered(): RecordedMessage[] {
    const out = recorder.messages.slice(delivered);
    delivered = recorder.messages.length;
    return out;
  }

  function sqsEvent(messages: RecordedMessage[], receiveCount = 1): SQSEvent {
    return {
      Records: messages.map((m, i) => ({
        messageId: `msg-${randomUUID()}`,
        receiptHandle: `rh-${i}`,
        body: m.body,
        attributes: {
          ApproximateReceiveCount: String(receiveCount),
          SentTimestamp: String(Date.now()),
          SenderId: 'AIDA',
          ApproximateFirstReceiveTimestamp: String(Date.now()),
          MessageGroupId: m.groupId,
          MessageDeduplicationId: m.deduplicationId,
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:eu-central-1:123456789012:acctops-test-exports.fifo',
        awsRegion: LOCAL_REGION,
      })),
    };
  }

  /** Works the queue until nothing new arrives, like the event source mapping with batch size 1. */
  async function runWorker(): Promise<SQSBatchResponse[]> {
    const responses: SQSBatchResponse[] = [];
    for (let batch = undelivered(); batch.length > 0; batch = undelivered()) {
      for (const message of batch) responses.push(await handlers.worker(sqsEvent([message]), context()));
    }
    return responses;
  }

  const schedulerEvent = (schedule: string) => ({
    source: 'acctops.scheduler',
    schedule,
    scheduledAt: new Date().toISOString(),
    executionId: `exec-${randomUUID()}`,
  });

  const events = (type: string) => recorder.events.filter((e) => e.detailType === type);

  describe('export functions', () => {
    let period: string;

    it('plan-monthly-export plans last month (Berlin) for the registered key companies (not removed ones) and the active users, on the FIFO queue', async () => {
      const report = await handlers.plan(schedulerEvent('monthly-export'), context());
      period = report.period;
      expect(report).toMatchObject({ companies: 1, users: 1, repeated: false });
      const messages = recorder.messages.slice(delivered);
      expect(messages.map((m) => [m.queueUrl, m.groupId])).toEqual([
        [queueUrl, `${keyed}#${period}`],
        [queueUrl, `user#${externalId}`],
      ]);
      expect(messages.every((m) => /^[0-9a-f]{64}$/.test(m.deduplicationId ?? ''))).toBe(true);
      expect(
        events(EXPORT_EVENT_TYPES.monthlyStarted).map((e) => [e.source, e.eventBusName, (e.detail as { companies: string[] }).companies]),
      ).toEqual([['acctops.exports', BUS, [keyed]]]);
    });

    it('export-period exports every company of the run into S3 and publishes the results and the run summary', async () => {
      const responses = await runWorker();
      expect(responses.every((r) => r.batchItemFailures.length === 0)).toBe(true);

      const completed = events(EXPORT_EVENT_TYPES.completed).map(
        (e) => e.detail as { companyId: string; manifestUrl: string; source: { kind: string } },
      );
      expect(completed.map((d) => [d.companyId, d.source.kind]).sort()).toEqual(
        [
          [keyed, 'apiKey'],
          [userOnly, 'user'],
        ].sort(),
      );
      for (const detail of completed)
        expect(detail.manifestUrl).toBe(`s3://${BUCKET}/exports/company=${detail.companyId}/period=${period}/_manifest.json`);
      const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
      expect(await store.head(`exports/company=${keyed}/period=${period}/_manifest.json`)).toBeDefined();
      expect(events(EXPORT_EVENT_TYPES.monthlyFinished).map((e) => e.detail)).toEqual([
        expect.objectContaining({ period, expected: 2, completed: 2, failed: 0 }),
      ]);
      const emf = stdout.filter((line) => line.includes('"_aws"') && line.includes('ExportCompleted'));
      expect(emf.length).toBeGreaterThanOrEqual(2);
      expect(JSON.parse(emf[0]!)).toMatchObject({ Stage: 'test', Function: 'export-period', ExportCompleted: 1 });
      // What the event says of the month, as metrics operators can alarm on: under Stage and Function
      // only, 0 when nothing was repeated, dated outside the month or left behind in Athena.
      const publish = JSON.parse(emf[0]!) as { _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] } };
      expect(publish).toMatchObject({ ExportDuplicatesDropped: 0, ExportOutsidePeriod: 0, ExportStaleSymlinks: 0 });
      const directive = publish._aws.CloudWatchMetrics.find((d) => d.Metrics.some((m) => m.Name === 'ExportStaleSymlinks'))!;
      expect(directive.Dimensions).toEqual([['Stage', 'Function']]);
      for (const detail of events(EXPORT_EVENT_TYPES.completed).map((e) => e.detail))
        expect(detail).toMatchObject({
          duplicatesDropped: { transactions: 0 },
          transactionsOutsidePeriod: 0,
          transactionsNextDayDropped: 0,
          staleSymlinks: [],
        });
    });

    it('export-period hands back only the malformed message of a batch', async () => {
      const good: RecordedMessage = {
        queueUrl,
        body: JSON.stringify({
          type: 'export',
          companyId: keyed,
          period,
          formats: ['csv'],
          source: { kind: 'apiKey' },
          trigger: { kind: 'on_demand', requestId: 'batch', via: 'event' },
        }),
      };
      const bad: RecordedMessage = { queueUrl, body: '{"type":"export"}' };
      const event = sqsEvent([good, bad]);
      const response = await handlers.worker(event, context());
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[1]!.messageId }] });
    });

    it("export-period labels transactions sent without a currency with the company's registered one (registry on dynalite)", async () => {
      const registry = new CompanyRegistry(new DynamoDbRegistryTable({ client: ddb, tableName: REGISTRY_TABLE }), {
        defaultFormats: ['jsonl', 'csv', 'parquet'],
      });
      await registry.add({ companyId: keyed, defaultCurrency: 'jpy' }, Date.now());
      await sandbox.admin.configure({ transactionCurrency: false });
      try {
        const job: RecordedMessage = {
          queueUrl,
          body: JSON.stringify({
            type: 'export',
            companyId: keyed,
            period,
            formats: ['jsonl', 'csv', 'parquet'],
            source: { kind: 'apiKey' },
            trigger: { kind: 'on_demand', requestId: 'registered-currency', via: 'event' },
          }),
        };
        const before = events(EXPORT_EVENT_TYPES.completed).length;
        expect(await handlers.worker(sqsEvent([job]), context())).toEqual({ batchItemFailures: [] });
        expect(events(EXPORT_EVENT_TYPES.completed)).toHaveLength(before + 1);
        const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
        const manifest = JSON.parse(
          Buffer.from((await store.get(`exports/company=${keyed}/period=${period}/_manifest.json`))!).toString('utf8'),
        ) as { datasets: { transactions: { totals: { currency: string; amount: string; amountMinor: string }[] } } };
        const totals = manifest.datasets.transactions.totals;
        expect(totals.length).toBeGreaterThan(0);
        // JPY has no fraction digits: the amount is the minor units themselves.
        for (const t of totals) expect([t.currency, t.amount]).toEqual(['JPY', t.amountMinor]);
      } finally {
        await sandbox.admin.configure({ transactionCurrency: true });
        await registry.add({ companyId: keyed, defaultCurrency: 'EUR' }, Date.now());
      }
    });

    it('check-monthly-export finds nothing overdue after the run', async () => {
      const report = await handlers.check(schedulerEvent('monthly-export-check'), context());
      expect(report).toMatchObject({ period, overdue: 0, overdueCompanies: [] });
    });

    it('request-export turns an ExportRequested event into one job per month of the range', async () => {
      const before = recorder.messages.length;
      const eventId = randomUUID();
      const result = await handlers.request(
        {
          id: eventId,
          'detail-type': 'ExportRequested',
          source: 'partner.backoffice',
          detail: { companyId: userOnly, from: '2026-01-20', to: '2026-03', userExternalId: externalId, formats: ['csv'] },
        },
        context(),
      );
      expect(result).toEqual({ companyId: userOnly, periods: ['2026-01', '2026-02', '2026-03'] });
      const jobs = recorder.messages.slice(before).map((m) => ({ group: m.groupId, job: decodeJob(m.body) }));
      expect(jobs.map((j) => j.group)).toEqual(['2026-01', '2026-02', '2026-03'].map((p) => `${userOnly}#${p}`));
      expect(jobs[0]!.job).toMatchObject({
        source: { kind: 'user', externalId },
        formats: ['csv'],
        trigger: { kind: 'on_demand', requestId: eventId, via: 'event' },
      });
      // A sender's own request id (acctops export in AWS mode) is the jobs' request id, recorded in the manifest (decision 109).
      const sent = recorder.messages.length;
      await handlers.request(
        {
          id: randomUUID(),
          'detail-type': 'ExportRequested',
          source: 'acctops.cli',
          detail: { companyId: userOnly, period: '2026-02', userExternalId: externalId, formats: ['csv'], requestId: 'cli-own-id' },
        },
        context(),
      );
      expect(recorder.messages.slice(sent).map((m) => decodeJob(m.body).trigger)).toEqual([
        { kind: 'on_demand', requestId: 'cli-own-id', via: 'event' },
      ]);
      await expect(
        handlers.request(
          { id: 'x', 'detail-type': 'ExportRequested', detail: { companyId: userOnly, period: '2026-02', requestId: 'no spaces' } },
          context(),
        ),
      ).rejects.toMatchObject({ name: 'ValidationError', field: 'detail.requestId' });
      await expect(
        handlers.request({ id: 'x', 'detail-type': 'ExportRequested', detail: { companyId: userOnly } }, context()),
      ).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'detail.period',
      });
      expect(recorder.messages.length).toBe(before + 4);
      undelivered();
    });

    it('request-export refuses a month after the current one (FuturePeriodError naming the field) before anything is queued', async () => {
      const before = recorder.messages.length;
      await expect(requestFromPartner({ companyId: keyed, period: '2099-01', formats: ['csv'] })).rejects.toMatchObject({
        name: 'FuturePeriodError',
        code: 'period_in_future',
        field: 'detail.period',
      });
      await expect(requestFromPartner({ companyId: keyed, from: '2098-11', to: '2099-01-15' })).rejects.toMatchObject({
        name: 'FuturePeriodError',
        field: 'detail.to',
      });
      // A mistyped year: before 2000-01 is refused as well (EarlyPeriodError), not exported empty.
      await expect(requestFromPartner({ companyId: keyed, period: '0226-10', formats: ['csv'] })).rejects.toMatchObject({
        name: 'EarlyPeriodError',
        code: 'period_too_early',
        field: 'detail.period',
      });
      await expect(requestFromPartner({ companyId: keyed, from: '1999-11', to: '2000-01-15' })).rejects.toMatchObject({
        name: 'EarlyPeriodError',
        field: 'detail.from',
      });
      expect(recorder.messages.length).toBe(before);
    });

    it('export-period refuses a removed company whose key secret outlived the removal (imported by the stack): ExportFailed company_removed, not retried, nothing read or written', async () => {
      // `companies remove` keeps a secret the stack imports (cdk.json existingSecretArn): the key is still found by its tags.
      const key = await storeReadKey(notServed, `legacy/erp/${notServed}`);
      // Any producer on the exports bus may ask (the CLI and the webhook refuse a removed company themselves).
      await requestFromPartner({ companyId: notServed, period, formats: ['csv'] });
      const failedBefore = events(EXPORT_EVENT_TYPES.failed).length;
      const responses = await runWorker();
      // Final at once: handing it back would only ask again.
      expect(responses).toEqual([{ batchItemFailures: [] }]);
      expect(
        events(EXPORT_EVENT_TYPES.failed)
          .slice(failedBefore)
          .map((e) => e.detail),
      ).toEqual([
        expect.objectContaining({
          companyId: notServed,
          period,
          errorClass: 'CompanyRemovedExportError',
          errorCode: 'company_removed',
          retryable: false,
        }),
      ]);
      const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
      expect(await listKeys(store, `exports/company=${notServed}/`)).toEqual([]);
      // The service was not asked with the company's key.
      expect((await sandbox.admin.listApiKeys({ companyId: notServed })).find((k) => k.publicId === key.publicId)!.lastUsedAt).toBeNull();
    });

    it('export-period refuses a company whose registry entry fails its schema: ExportFailed company_entry_damaged naming the field, not retried, nothing read or written', async () => {
      const damaged = (await sandbox.admin.createCompany()).publicId;
      await sandbox.admin.generateTransactions({ companyId: damaged, month: period, count: 20 });
      const key = await storeReadKey(damaged, `acctops/test/company/${damaged}`);
      // A hand edit past the CLI: active, a readable currency and no removal, but a field the schema refuses.
      await new DynamoDbRegistryTable({ client: ddb, tableName: REGISTRY_TABLE }).putItem({
        companyId: damaged,
        formats: ['csv'],
        rotationDays: 'thirty',
        defaultCurrency: 'EUR',
      } as unknown as RegisteredCompany);
      await requestFromPartner({ companyId: damaged, period, formats: ['csv'] });
      const failedBefore = events(EXPORT_EVENT_TYPES.failed).length;
      const completedBefore = events(EXPORT_EVENT_TYPES.completed).length;
      const linesBefore = stdout.length;
      const responses = await runWorker();
      // Deleted at once: redelivering it would read the same entry.
      expect(responses).toEqual([{ batchItemFailures: [] }]);
      expect(events(EXPORT_EVENT_TYPES.completed)).toHaveLength(completedBefore);
      expect(
        events(EXPORT_EVENT_TYPES.failed)
          .slice(failedBefore)
          .map((e) => e.detail),
      ).toEqual([
        expect.objectContaining({
          companyId: damaged,
          period,
          errorClass: 'CompanyEntryDamagedExportError',
          errorCode: 'company_entry_damaged',
          retryable: false,
          attempts: 1,
          previousExport: false,
        }),
      ]);
      const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
      expect(await listKeys(store, `exports/company=${damaged}/`)).toEqual([]);
      expect((await sandbox.admin.listApiKeys({ companyId: damaged })).find((k) => k.publicId === key.publicId)!.lastUsedAt).toBeNull();
      // The log names the company, the field and the repair, never the field's value.
      const failedLine = stdout
        .slice(linesBefore)
        .join('')
        .split('\n')
        .find((line) => line.includes('"export failed"'));
      expect(failedLine).toBeDefined();
      expect(failedLine).toContain(damaged);
      expect(failedLine).toContain('rotationDays');
      expect(failedLine).toContain('CompanyRegistryTableName');
      expect(failedLine).toContain(`acctops companies add --company ${damaged}`);
      expect(failedLine).not.toContain('thirty');
    });

    describe('receive-export-webhook', () => {
      const urlEvent = (body: string, headers: Record<string, string>, method = 'POST') => ({
        version: '2.0',
        rawPath: '/',
        headers,
        body,
        isBase64Encoded: false,
        requestContext: { http: { method, path: '/', sourceIp: '203.0.113.7' }, requestId: randomUUID() },
      });
      const signedEvent = (body: string, options: { secret?: string; timestamp?: number } = {}) => {
        const ts = options.timestamp ?? Math.floor(Date.now() / 1000);
        return urlEvent(body, {
          // Mixed case on purpose: the handler must not depend on how a proxy spells header names.
          'Content-Type': 'application/json',
          'X-Acctops-Timestamp': String(ts),
          'X-Acctops-Signature': signWebhook(options.secret ?? WEBHOOK_SECRET, ts, body),
        });
      };

      it('answers 202 to a signed request and enqueues the export; a replay is 409 and enqueues nothing (dynalite)', async () => {
        const before = recorder.messages.length;
        const body = JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: '2026-09' });
        const accepted = await handlers.webhook(signedEvent(body), context());
        expect(accepted.statusCode).toBe(202);
        expect(JSON.parse(accepted.body!)).toMatchObject({ accepted: true, exports: [{ companyId: keyed, period: '2026-09' }] });
        expect(recorder.messages.slice(before).map((m) => m.groupId)).toEqual([`${keyed}#2026-09`]);

        const replay = await handlers.webhook(signedEvent(body), context());
        expect(replay.statusCode).toBe(409);
        expect(recorder.messages.length).toBe(before + 1);
        undelivered();
      });

      it('refuses a bad signature, a stale timestamp, a wrong content type, an oversized body and a company it does not serve, enqueueing nothing', async () => {
        const before = recorder.messages.length;
        const body = () => JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: '2026-09' });
        const stale = Math.floor(Date.now() / 1000) - 301;
        const cases: [unknown, number][] = [
          [signedEvent(body(), { secret: 'whsec_wrong_wrong_wrong_wrong_wrong_00' }), 401],
          [signedEvent(body(), { timestamp: stale }), 401],
          [{ ...signedEvent(body()), headers: { ...signedEvent(body()).headers, 'Content-Type': 'text/plain' } }, 415],
          [signedEvent(JSON.stringify({ id: 'evt_big', companyId: keyed, period: '2026-09', pad: 'x'.repeat(70_000) })), 413],
          [signedEvent(JSON.stringify({ id: `evt_${randomUUID()}`, companyId: notServed, period: '2026-09' })), 403],
          [signedEvent(JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: 'September' })), 400],
          [{ ...signedEvent(body()), requestContext: { http: { method: 'GET' } } }, 405],
        ];
        for (const [event, status] of cases) {
          const response = await handlers.webhook(event, context());
          expect([response.statusCode, response.headers?.['content-type']]).toEqual([status, 'application/json']);
          expect(JSON.parse(response.body!)).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
        }
        expect(recorder.messages.length).toBe(before);
      });

      it('counts a scanner apart from the alarmed metric and logs where every refusal came from', async () => {
        const n = stdout.length;
        const scanner = {
          ...urlEvent('', { 'user-agent': 'Mozilla/5.0 (scanner)' }, 'GET'),
          requestContext: { http: { method: 'GET', path: '/', sourceIp: '198.51.100.23', userAgent: 'Mozilla/5.0 (scanner)' } },
        };
        expect((await handlers.webhook(scanner, context())).statusCode).toBe(405);
        const future = signedEvent(JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: '2099-01' }));
        const refused = await handlers.webhook(
          { ...future, requestContext: { http: { method: 'POST', sourceIp: '192.0.2.44', userAgent: 'partner/1.0' } } },
          context(),
        );
        expect(refused.statusCode).toBe(400);
        expect(JSON.parse(refused.body!)).toMatchObject({ error: { code: 'period_in_future', issues: [{ path: 'period' }] } });

        const lines = stdout.slice(n).join('').split('\n').filter(Boolean);
        const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.message === 'webhook refused');
        expect(logged.map((l) => [l.metric, l.sourceIp, l.userAgent])).toEqual([
          ['WebhookUnsigned', '198.51.100.23', 'Mozilla/5.0 (scanner)'],
          ['WebhookRejected', '192.0.2.44', 'partner/1.0'],
        ]);
        // The metrics as EMF writes them: the scanner's request is not in the alarmed one.
        const emf = lines.filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l) as Record<string, unknown>);
        expect(emf.map((m) => [m.WebhookUnsigned, m.WebhookRejected])).toEqual([
          [1, undefined],
          [undefined, 1],
        ]);
      });

      it('accepts a quoted UTF-8 charset and a body that begins with a byte order mark (signed as sent)', async () => {
        const before = recorder.messages.length;
        const quoted = signedEvent(JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: '2026-08' }));
        const quotedResponse = await handlers.webhook(
          { ...quoted, headers: { ...quoted.headers, 'Content-Type': 'application/json; charset="UTF-8"' } },
          context(),
        );
        expect(quotedResponse.statusCode).toBe(202);

        const bytes = Buffer.concat([
          Buffer.from([0xef, 0xbb, 0xbf]),
          Buffer.from(JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: '2026-08' })),
        ]);
        const ts = Math.floor(Date.now() / 1000);
        const withMark = {
          ...urlEvent(bytes.toString('base64'), {
            'content-type': 'application/json',
            'x-acctops-timestamp': String(ts),
            'x-acctops-signature': signWebhook(WEBHOOK_SECRET, ts, bytes),
          }),
          isBase64Encoded: true,
        };
        expect((await handlers.webhook(withMark, context())).statusCode).toBe(202);
        expect(recorder.messages.length).toBe(before + 2);
        undelivered();
      });

      it('accepts the previous secret after the secret is changed', async () => {
        const newSecret = 'whsec_canary_new_0123456789abcdef0123';
        secrets.push(newSecret);
        await sdk.send(new PutSecretValueCommand({ SecretId: 'acctops/test/export-webhook', SecretString: newSecret }));
        const fresh = loadHandler<APIGatewayProxyStructuredResultV2>('receive-export-webhook');
        // The webhook's allowlist is the registry (a removed company, notServed, is refused above).
        const body = () => JSON.stringify({ id: `evt_${randomUUID()}`, companyId: keyed, period: '2026-08' });
        expect((await fresh(signedEvent(body(), { secret: newSecret }), context())).statusCode).toBe(202);
        expect((await fresh(signedEvent(body(), { secret: WEBHOOK_SECRET }), context())).statusCode).toBe(202);
        undelivered();
      });
    });

    it('no secret (API key, user tokens, webhook secrets) in any log line, event, message or exported object', async () => {
      const texts = [...stdout, JSON.stringify(recorder.events), JSON.stringify(recorder.messages)];
      const store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
      for (const key of await listKeys(store, 'exports/')) {
        const bytes = Buffer.from((await store.get(key))!);
        texts.push(bytes.toString('latin1'), key.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : '');
      }
      expect(texts.length).toBeGreaterThan(30);
      for (const text of texts) for (const secret of secrets) expect(text.includes(secret)).toBe(false);
      // Not vacuous: the logs do carry the pipeline's identifiers.
      expect(stdout.some((line) => line.includes(externalId))).toBe(true);
    });
  });
});
