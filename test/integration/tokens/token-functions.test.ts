import { randomUUID } from 'node:crypto';
import { CreateSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDbTokenStore } from '../../../src/adapters/aws/dynamodb-token-store';
import { forgetRegisteredSecrets } from '../../../src/core/shared/redact';
import type { PlanReport } from '../../../src/core/tokens/plan-refresh';
import type { OnboardResult, RecoverResult, RevokeResult } from '../../../src/core/tokens/token-lifecycle';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { LOCAL_REGION, localCredentials } from '../../helpers/aws-credentials';
import { startAwsRecorder, type AwsRecorder } from '../../helpers/aws-recorder';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { client as secretsClient, startSecretsManager, type RunningSecretsManager } from '../../helpers/secrets-manager';
import { CANARY } from '../../helpers/canary';
import { captureStdout, lambdaContexts, loadHandler, type LambdaHandler } from '../../helpers/lambda';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { createTokenTable } from '../../helpers/dynamodb-tables';
import { dueShardOf, TOKEN_TABLE } from '../../../src/core/tokens/token-table';

describe.each(TEST_DIALECTS)('%s dialect', (dialect) => {
  // The token functions end to end: the real handler modules (environment read at load, the real
  // AWS SDK clients pointed at local peers through AWS_ENDPOINT_URL_*) against the sandbox,
  // dynalite, the Secrets Manager emulator and a recorder of SQS and EventBridge calls.

  const INSTITUTION_ID = 'inst-functions';
  const INSTITUTION_SECRET = CANARY.institutionSecret;
  const TABLE = 'acctops-test-tokens';
  const BUS = 'acctops-test-tokens';

  let sandbox: RunningSandbox;
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;
  let dynamo: LocalDynamo;
  let ddb: DynamoDBClient;
  let recorder: AwsRecorder;
  let store: DynamoDbTokenStore;
  let queueUrl: string;
  const saved = { ...process.env };
  const stdout: string[] = [];
  let write: jest.SpyInstance;
  const seenTokens = new Set<string>();

  const handlers = {} as {
    onboard: LambdaHandler<OnboardResult>;
    plan: LambdaHandler<PlanReport>;
    refresh: LambdaHandler<SQSBatchResponse>;
    revoke: LambdaHandler<RevokeResult>;
    recover: LambdaHandler<RecoverResult>;
  };

  const context = lambdaContexts({ remainingMs: 120_000 });
  /** The JSON log lines written to stdout since `from` (its length before), EMF documents left out. */
  const logLinesSince = (from: number) =>
    stdout
      .slice(from)
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{') && !line.includes('"_aws"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  beforeAll(async () => {
    sandbox = await startSandbox({ dialect, demo: false });
    await sandbox.admin.createInstitution({ id: INSTITUTION_ID, secret: INSTITUTION_SECRET });
    sm = await startSecretsManager();
    sdk = secretsClient(sm);
    const secret = await sdk.send(
      new CreateSecretCommand({ Name: 'acctops/test/institution-credential', SecretString: `${INSTITUTION_ID}:${INSTITUTION_SECRET}` }),
    );
    dynamo = await startDynamo();
    ddb = dynamo.client();
    await createTokenTable(ddb, TABLE);
    store = new DynamoDbTokenStore({ client: ddb, tableName: TABLE });
    recorder = await startAwsRecorder();
    queueUrl = recorder.queueUrl('acctops-test-token-refresh');

    Object.assign(process.env, {
      ACCTOPS_STAGE: 'test',
      LOG_LEVEL: 'debug',
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: sm.endpoint,
      AWS_ENDPOINT_URL_SQS: recorder.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: recorder.endpoint,
      TOKEN_TABLE_NAME: TABLE,
      INSTITUTION_SECRET_ARN: secret.ARN!,
      ACCTOPS_BASE_URL: sandbox.baseUrl,
      TOKEN_EVENT_BUS_NAME: BUS,
      REFRESH_QUEUE_URL: queueUrl,
      // Longer than the sandbox's 30-minute tokens: every token is due at once, no clock to move.
      TOKEN_REFRESH_MARGIN_SECONDS: '3600',
    });
    write = captureStdout(stdout);
    handlers.onboard = loadHandler('onboard-user');
    handlers.plan = loadHandler('plan-token-refresh');
    handlers.refresh = loadHandler('refresh-tokens');
    handlers.revoke = loadHandler('revoke-user');
    handlers.recover = loadHandler('recover-user');
  });

  afterAll(async () => {
    write.mockRestore();
    process.env = saved;
    sdk.destroy();
    ddb.destroy();
    await Promise.all([sandbox.stop(), sm.stop(), dynamo.stop(), recorder.stop()]);
    forgetRegisteredSecrets();
  });

  let users = 0;
  const newUser = () => {
    const n = ++users;
    return { externalId: randomUUID(), username: `fn-user-${n}`, email: `fn-user-${n}@example.test` };
  };

  /** Every record of the table, tokens included, as JSON: to prove an invocation changed nothing. */
  async function tableSnapshot(): Promise<string> {
    const records = [];
    let cursor: string | null = null;
    do {
      const page = await store.list({ limit: 100, cursor });
      for (const summary of page.items) {
        const record = (await store.get(summary.externalId))!;
        seenTokens.add(record.accessToken).add(record.refreshToken);
        records.push(record);
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    return JSON.stringify(records.sort((a, b) => a.externalId.localeCompare(b.externalId)));
  }

  const schedulerEvent = () => ({
    source: 'acctops.scheduler',
    schedule: 'token-refresh',
    scheduledAt: new Date().toISOString(),
    executionId: `exec-${randomUUID()}`,
  });

  function sqsEvent(bodies: string[]): SQSEvent {
    return {
      Records: bodies.map((body, i) => ({
        messageId: `msg-${randomUUID()}`,
        receiptHandle: `rh-${i}`,
        body,
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: String(Date.now()),
          SenderId: 'AIDA',
          ApproximateFirstReceiveTimestamp: String(Date.now()),
        },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:eu-central-1:123456789012:acctops-test-token-refresh',
        awsRegion: LOCAL_REGION,
      })),
    };
  }

  describe('token functions', () => {
    const onboarded: string[] = [];

    it('onboard-user registers users and returns no token', async () => {
      for (let i = 0; i < 3; i++) {
        const user = newUser();
        const result = await handlers.onboard(user, context());
        expect(result).toEqual({
          externalId: user.externalId,
          result: 'created',
          status: 'active',
          accessTokenExpiresAt: expect.any(Number),
        });
        onboarded.push(user.externalId);
      }
      expect((await sandbox.admin.stats()).usersCreated).toBe(3);
      await tableSnapshot();
    });

    it('onboard-user refuses a malformed event naming the field, storing nothing', async () => {
      const before = await tableSnapshot();
      const user = newUser();
      await expect(handlers.onboard({ ...user, email: 'not-an-email' }, context())).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'email',
      });
      await expect(handlers.onboard({ ...user, refreshToken: 'x' }, context())).rejects.toMatchObject({ name: 'ValidationError' });
      expect(await tableSnapshot()).toBe(before);
    });

    it('plan-token-refresh enqueues every due user to SQS, one message each', async () => {
      const report = await handlers.plan(schedulerEvent(), context());
      expect(report).toMatchObject({ enqueued: 3, complete: true });
      expect(recorder.messages.map((m) => m.queueUrl)).toEqual([queueUrl, queueUrl, queueUrl]);
      expect(recorder.messages.map((m) => (JSON.parse(m.body) as { externalId: string }).externalId).sort()).toEqual([...onboarded].sort());
      expect(recorder.calls['AmazonSQS.SendMessageBatch']).toBe(1);
    });

    it('plan-token-refresh refuses a malformed scheduler event: a ValidationError, nothing enqueued, no record changed', async () => {
      const before = await tableSnapshot();
      const sent = recorder.messages.length;
      await expect(handlers.plan({ ...schedulerEvent(), scheduledAt: 'yesterday' }, context())).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'scheduledAt',
      });
      await expect(handlers.plan({ source: 'aws.events', detail: {} }, context())).rejects.toMatchObject({ name: 'ValidationError' });
      await expect(handlers.plan(null, context())).rejects.toMatchObject({ name: 'ValidationError' });
      expect(recorder.messages.length).toBe(sent);
      expect(await tableSnapshot()).toBe(before);
    });

    it('refresh-tokens refreshes a batch and reports only the malformed message as a failure', async () => {
      const before = await sandbox.admin.stats();
      const event = sqsEvent([...recorder.messages.map((m) => m.body), '{"externalId":"123"}']);
      const response = await handlers.refresh(event, context());
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[3]!.messageId }] });
      const after = await sandbox.admin.stats();
      for (const id of onboarded) {
        expect((after.refreshesPerUser[id] ?? 0) - (before.refreshesPerUser[id] ?? 0)).toBe(1);
        expect(await store.get(id)).toMatchObject({ status: 'active', version: 2, leaseOwner: null });
      }
      const failure = stdout.find((line) => line.includes('malformed refresh request'));
      expect(failure).toMatch(/externalId: invalid/);
      await tableSnapshot();
    });

    it('refresh-tokens refuses a malformed SQS event: a ValidationError, no record changed', async () => {
      const before = await tableSnapshot();
      const good = sqsEvent([JSON.stringify({ externalId: onboarded[0], dueAt: 0 })]);
      await expect(handlers.refresh({ Records: [] }, context())).rejects.toMatchObject({ name: 'ValidationError', field: 'Records' });
      await expect(handlers.refresh({ Records: [{ ...good.Records[0], eventSource: 'aws:sns' }] }, context())).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'Records[0].eventSource',
      });
      await expect(handlers.refresh({ detail: good }, context())).rejects.toMatchObject({ name: 'ValidationError' });
      expect(await tableSnapshot()).toBe(before);
    });

    it('refresh-tokens publishes TokenRefreshFailed to EventBridge for a user it cannot recover, and recover-user brings it back', async () => {
      const [broken] = onboarded;
      const { userId } = await sandbox.admin.findUser({ institutionId: INSTITUTION_ID, externalId: broken });
      await sandbox.admin.disableUser({ userId });
      const response = await handlers.refresh(sqsEvent([JSON.stringify({ externalId: broken, dueAt: 0 })]), context());
      expect(response).toEqual({ batchItemFailures: [] });
      expect(await store.get(broken!)).toMatchObject({ status: 'needs_attention', lastErrorClass: 'AuthenticationError' });
      expect(recorder.events).toEqual([
        {
          eventBusName: BUS,
          source: 'acctops.tokens',
          detailType: 'TokenRefreshFailed',
          detail: expect.objectContaining({
            externalId: broken,
            errorClass: 'AuthenticationError',
            refreshErrorClass: 'InvalidGrantError',
          }),
        },
      ]);
      const emf = stdout.filter((line) => line.includes('"_aws"') && line.includes('TokenNeedsAttention'));
      expect(emf).toHaveLength(1);
      expect(JSON.parse(emf[0]!)).toMatchObject({ Stage: 'test', Function: 'refresh-tokens', TokenNeedsAttention: 1 });

      await sandbox.admin.enableUser({ userId });
      await expect(handlers.recover({ externalId: broken }, context())).resolves.toMatchObject({
        result: 'recovered',
        previousStatus: 'needs_attention',
      });
      expect(await store.get(broken!)).toMatchObject({ status: 'active' });
      await tableSnapshot();
    });

    it('recover-user leaves an active user as it is unless force: true; a force that is not a boolean is a ValidationError naming it', async () => {
      const user = newUser();
      await handlers.onboard(user, context());
      const before = await store.get(user.externalId);
      await expect(handlers.recover({ externalId: user.externalId }, context())).resolves.toEqual({
        externalId: user.externalId,
        result: 'already_active',
        previousStatus: 'active',
        accessTokenExpiresAt: before!.accessTokenExpiresAt,
        changed: false,
      });
      expect(await store.get(user.externalId)).toEqual(before);

      const snapshot = await tableSnapshot();
      for (const force of ['yes', 1, null]) {
        await expect(handlers.recover({ externalId: user.externalId, force }, context())).rejects.toMatchObject({
          name: 'ValidationError',
          field: 'force',
        });
      }
      expect(await tableSnapshot()).toBe(snapshot);

      await expect(handlers.recover({ externalId: user.externalId, force: true }, context())).resolves.toMatchObject({
        externalId: user.externalId,
        result: 'recovered',
        previousStatus: 'active',
        changed: true,
      });
      const after = await store.get(user.externalId);
      expect(after).toMatchObject({ status: 'active', version: before!.version + 1 });
      expect(after!.accessToken).not.toBe(before!.accessToken);
      // Force is not reactivate: a revoked user stays revoked.
      await handlers.revoke({ externalId: user.externalId }, context());
      await expect(handlers.recover({ externalId: user.externalId, force: true }, context())).rejects.toMatchObject({
        name: 'UserRevokedError',
      });
    });

    it('revoke-user revokes a user, which the planner then never enqueues', async () => {
      const revoked = onboarded[1]!;
      await expect(handlers.revoke({ externalId: revoked }, context())).resolves.toEqual({ externalId: revoked, result: 'revoked' });
      await expect(handlers.revoke({ externalId: 'not-a-uuid' }, context())).rejects.toMatchObject({
        name: 'ValidationError',
        field: 'externalId',
      });
      const sent = recorder.messages.length;
      await handlers.plan(schedulerEvent(), context());
      const planned = recorder.messages.slice(sent).map((m) => (JSON.parse(m.body) as { externalId: string }).externalId);
      expect(planned.sort()).toEqual([onboarded[0]!, onboarded[2]!].sort());
    });

    it('an upper-case externalId is one user: stored and sent in lower case, found by any case (decision 77)', async () => {
      const user = newUser();
      const upper = user.externalId.toUpperCase();
      await expect(handlers.onboard({ ...user, externalId: upper }, context())).resolves.toMatchObject({
        externalId: user.externalId,
        result: 'created',
      });
      expect(await store.get(user.externalId)).toMatchObject({ externalId: user.externalId });
      // The service was sent the lower-case spelling: the sandbox compares external_id exactly.
      await expect(sandbox.admin.findUser({ institutionId: INSTITUTION_ID, externalId: user.externalId })).resolves.toMatchObject({
        username: user.username,
      });
      await expect(handlers.onboard({ ...user }, context())).resolves.toMatchObject({ result: 'already_onboarded' });
      // Found by the upper-case id; active, so left as it is (decision 103).
      await expect(handlers.recover({ externalId: upper }, context())).resolves.toMatchObject({ result: 'already_active', changed: false });
      await expect(handlers.revoke({ externalId: upper }, context())).resolves.toEqual({ externalId: user.externalId, result: 'revoked' });
      expect(await store.get(user.externalId)).toMatchObject({ status: 'revoked' });
      await tableSnapshot();
    });

    it('a record the older code stored in upper case is found by its lower-case id, and the service is sent its spelling', async () => {
      const user = newUser();
      const upper = user.externalId.toUpperCase();
      // As the older code left it: the service knows the user in upper case, and so does the record's key.
      const atService = await sandbox.admin.createUser({ ...user, externalId: upper, institutionId: INSTITUTION_ID, issueTokens: true });
      await store.create(
        {
          ...user,
          accessToken: atService.tokens!.accessToken,
          refreshToken: atService.tokens!.refreshToken,
          accessTokenExpiresAt: Date.now(),
        },
        Date.now(),
      );
      const doc = DynamoDBDocumentClient.from(ddb);
      const { Item } = await doc.send(new GetCommand({ TableName: TABLE, Key: { externalId: user.externalId }, ConsistentRead: true }));
      await doc.send(
        new PutCommand({
          TableName: TABLE,
          Item: { ...Item, externalId: upper, [TOKEN_TABLE.dueIndex.partitionKey.name]: dueShardOf(upper) },
        }),
      );
      await doc.send(new DeleteCommand({ TableName: TABLE, Key: { externalId: user.externalId } }));

      await expect(handlers.onboard(user, context())).resolves.toMatchObject({ externalId: upper, result: 'already_onboarded' });
      // Found by the lower-case id; active, so left as it is (decision 103): the refresh is the first write.
      await expect(handlers.recover({ externalId: user.externalId }, context())).resolves.toMatchObject({
        result: 'already_active',
        changed: false,
      });
      const refreshed = await handlers.refresh(sqsEvent([JSON.stringify({ externalId: upper, dueAt: 0 })]), context());
      expect(refreshed).toEqual({ batchItemFailures: [] });
      expect(await store.get(user.externalId)).toMatchObject({ externalId: upper, status: 'active', version: 2 });
      await expect(handlers.revoke({ externalId: user.externalId }, context())).resolves.toEqual({
        externalId: user.externalId,
        result: 'revoked',
      });
      expect(await store.get(upper)).toMatchObject({ externalId: upper, status: 'revoked' });
      expect((await store.list({ limit: 100 })).items.filter((i) => i.externalId.toLowerCase() === user.externalId)).toHaveLength(1);
      await tableSnapshot();
    });

    it("a failure line keeps the invocation's requestId; the service's is serviceRequestId (decision 77)", async () => {
      const user = newUser();
      await handlers.onboard(user, context());
      // A 503 on refresh (never retried: it rotates) sends the user through retrieve, whose own 503 is retried once.
      await sandbox.admin.faults.add({ route: 'POST /institution/users/token/refresh/', times: 1, fault: { type: 'status', status: 503 } });
      await sandbox.admin.faults.add({
        route: 'POST /institution/users/token/retrieve/',
        times: 1,
        fault: { type: 'status', status: 503 },
      });
      try {
        const from = stdout.length;
        const invocation = context();
        const response = await handlers.refresh(sqsEvent([JSON.stringify({ externalId: user.externalId, dueAt: 0 })]), invocation);
        expect(response).toEqual({ batchItemFailures: [] });
        const lines = logLinesSince(from);
        const failures = lines.filter((l) =>
          ['refresh outcome unknown; recovering through retrieve', 'accounting api request will be retried'].includes(l.message as string),
        );
        expect(failures.map((l) => l.message).sort()).toEqual([
          'accounting api request will be retried',
          'refresh outcome unknown; recovering through retrieve',
        ]);
        for (const line of lines) expect(line.requestId).toBe(invocation.awsRequestId);
        for (const line of failures) expect(line.serviceRequestId).toMatch(/^req_[0-9a-f]{16}$/);
        expect(await store.get(user.externalId)).toMatchObject({ status: 'active', version: 2 });
      } finally {
        await sandbox.admin.faults.clear();
      }
    });

    it('a failed invocation of a user function names the user on its failure line (logFields)', async () => {
      const user = newUser();
      await handlers.onboard(user, context());
      await sandbox.admin.faults.add({
        route: 'POST /institution/users/token/retrieve/',
        times: 'always',
        fault: { type: 'status', status: 503 },
      });
      try {
        const from = stdout.length;
        await expect(handlers.recover({ externalId: user.externalId, force: true }, context())).rejects.toThrow();
        const lines = logLinesSince(from);
        expect(lines.find((l) => l.message === 'invocation failed')).toMatchObject({
          level: 'ERROR',
          function: 'recover-user',
          externalId: user.externalId,
          error: expect.objectContaining({ status: 503 }),
        });
      } finally {
        await sandbox.admin.faults.clear();
      }
    });

    it('writes no token and no secret to stdout (canary scan of every log line and metric document)', async () => {
      await tableSnapshot();
      const text = stdout.join('');
      expect(stdout.length).toBeGreaterThan(20);
      expect(seenTokens.size).toBeGreaterThanOrEqual(8);
      for (const value of [INSTITUTION_SECRET, ...seenTokens]) expect(text.includes(value)).toBe(false);
      expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{5,}\.eyJ/);
    });
  });
});
