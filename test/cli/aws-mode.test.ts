import { randomUUID } from 'node:crypto';
import { CreateSecretCommand, DescribeSecretCommand, GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { EventBridgeRevocationScheduler } from '../../src/adapters/aws/revocation-scheduler';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY } from '../../src/core/api-keys';
import { canarySecret, expectNoCanaries, trackSecret } from '../helpers/canary';
import { client } from '../helpers/secrets-manager';
import { localClientConfig } from '../helpers/aws-credentials';
import { DOCTOR_REPORT_FIELDS, KEY_STATUS_ROW_FIELDS, onboardArgs, parseJson, runAcctops, type CliResult } from '../helpers/cli';
import { startRecordingServer, type CannedResponse, type RecordedRequest, type RecordingServer } from '../helpers/recording-server';
import { startScheduler, type RunningScheduler } from '../helpers/scheduler';
import { ROTATION_LAMBDA, RotationWorld } from '../integration/api-keys/support';
import { instrumentS3, startS3, type LocalS3 } from '../helpers/s3rver';
import { startDynamo, type LocalDynamo } from '../helpers/dynalite';
import { DynamoDbTokenStore } from '../../src/adapters/aws/dynamodb-token-store';
import { createRegistryTable, createTokenTable } from '../helpers/dynamodb-tables';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { S3ObjectStore } from '../../src/adapters/aws/s3-object-store';
import { directExport } from '../../src/core/exports/pipeline/direct-export';
import { DEFAULT_EXPORT_DEADLINE, dueExportPeriod } from '../../src/core/exports/pipeline/export-deadline';
import { monthOf } from '../../sandbox/seed';

/**
 * AWS mode through the real binary, with every AWS service replaced by a local peer the real SDK
 * talks to (the SDK honours AWS_ENDPOINT_URL_<SERVICE>): a fake CloudFormation answering
 * DescribeStacks, a fake Lambda recording invocations, the Secrets Manager emulator with our
 * rotation function registered, and a fake EventBridge Scheduler. What this cannot show is IAM,
 * the real services' behaviour and the deployed functions themselves.
 */
describe('acctops CLI: AWS mode against local fakes', () => {
  const STACK = 'acctops-test';
  const outputs: Record<string, string> = {
    OnboardUserFunctionName: 'acctops-test-onboard-user',
    RevokeUserFunctionName: 'acctops-test-revoke-user',
    RecoverUserFunctionName: 'acctops-test-recover-user',
    CheckHealthFunctionName: 'acctops-test-check-health',
    CheckKeyRotationsFunctionName: 'acctops-test-check-key-rotations',
    KeyRevocationScheduleGroup: 'acctops-test-revocations',
    ExportBucketName: 'acctops-test-exports',
    ExportEventBusName: 'acctops-test-exports',
    CompanyRegistryTableName: 'acctops-test-companies',
  };
  /** Not a stack output here (the doctor's test reads its absence): passed with --output where needed. */
  const TOKEN_TABLE_NAME = 'acctops-test-tokens';
  let cloudFormation: RecordingServer;
  let lambda: RecordingServer;
  let scheduler: RunningScheduler;
  let eventBridge: RecordingServer;
  let s3: LocalS3;
  let dynamo: LocalDynamo;
  let world: RotationWorld;
  const lambdaAnswers = new Map<string, (payload: unknown) => { status?: number; error?: string; body: unknown }>();
  /** GetFunctionConfiguration's LoggingConfig.LogGroup by function; a function not here has no readable configuration. */
  const logGroups = new Map<string, string>();
  const results: CliResult[] = [];
  /** The stack's revocation schedule group, as the rotation function schedules into it in AWS. */
  const stackScheduler = () =>
    new EventBridgeRevocationScheduler({
      groupName: outputs.KeyRevocationScheduleGroup!,
      targetArn: 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-revoke-api-key',
      roleArn: 'arn:aws:iam::000000000000:role/acctops-test-scheduler',
      client: localClientConfig(scheduler.endpoint),
    });

  const describeStacks = (request: RecordedRequest): CannedResponse => {
    const name = new URLSearchParams(request.body).get('StackName');
    if (name !== STACK) {
      return {
        status: 400,
        headers: { 'content-type': 'text/xml' },
        body: `<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id ${name} does not exist</Message></Error><RequestId>r1</RequestId></ErrorResponse>`,
      };
    }
    const members = Object.entries(outputs)
      .map(([k, v]) => `<member><OutputKey>${k}</OutputKey><OutputValue>${v}</OutputValue></member>`)
      .join('');
    return {
      status: 200,
      headers: { 'content-type': 'text/xml' },
      body: `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member><StackName>${STACK}</StackName><StackId>arn:aws:cloudformation:eu-central-1:000000000000:stack/${STACK}/1</StackId><CreationTime>2026-01-01T00:00:00Z</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus><Outputs>${members}</Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></DescribeStacksResponse>`,
    };
  };

  const invocations = (fn: string) =>
    lambda.requests
      .filter((r) => r.url === `/2015-03-31/functions/${fn}/invocations`)
      .map((r) => JSON.parse(r.body) as Record<string, unknown>);

  beforeAll(async () => {
    cloudFormation = await startRecordingServer(describeStacks);
    lambda = await startRecordingServer((request): CannedResponse => {
      const configured = /\/functions\/([^/]+)\/configuration$/.exec(request.url)?.[1];
      if (configured !== undefined) {
        const group = logGroups.get(configured);
        if (group === undefined)
          return {
            status: 403,
            headers: { 'content-type': 'application/json', 'x-amzn-errortype': 'AccessDeniedException' },
            body: JSON.stringify({ Message: 'not authorized to perform lambda:GetFunctionConfiguration' }),
          };
        return {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ FunctionName: configured, LoggingConfig: { LogFormat: 'JSON', LogGroup: group } }),
        };
      }
      const fn = /\/functions\/([^/]+)\/invocations/.exec(request.url)?.[1] ?? '';
      const answer = lambdaAnswers.get(fn)?.(JSON.parse(request.body));
      if (!answer)
        return {
          status: 404,
          headers: { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' },
          body: JSON.stringify({ Message: `Function not found: ${fn}` }),
        };
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (answer.error) headers['x-amz-function-error'] = answer.error;
      return { status: 200, headers, body: JSON.stringify(answer.body) };
    });
    scheduler = await startScheduler();
    s3 = await startS3([outputs.ExportBucketName!]);
    dynamo = await startDynamo();
    const dynamoClient = dynamo.client();
    await createRegistryTable(dynamoClient, outputs.CompanyRegistryTableName!);
    await createTokenTable(dynamoClient, TOKEN_TABLE_NAME);
    dynamoClient.destroy();
    eventBridge = await startRecordingServer(() => ({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] }),
    }));
    world = await RotationWorld.start(['manage_api_keys', 'read_transactions', 'read_categories', 'read_tax_reports']);
    world.sm.admin.configureRotation(world.secretArn, { lambdaArn: ROTATION_LAMBDA, rules: { AutomaticallyAfterDays: 30 } });
    trackSecret(world.initialKey.apiKey);
  });
  afterAll(async () => {
    for (const v of world.fullKeys()) trackSecret(v);
    expectNoCanaries(
      results.map((r) => `${r.stdout}\n${r.stderr}`),
      'acctops output',
    );
    await world.stop();
    await scheduler.stop();
    await eventBridge.stop();
    await s3.stop();
    await dynamo.stop();
    await lambda.stop();
    await cloudFormation.stop();
  });

  const acctops = async (args: string[], env: Record<string, string> = {}) => {
    const result = await runAcctops(['--stack', STACK, ...args], {
      env: {
        AWS_REGION: 'eu-central-1',
        // s3rver checks for its own key pair; the other fakes accept any.
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
        AWS_MAX_ATTEMPTS: '1',
        AWS_ENDPOINT_URL_CLOUDFORMATION: cloudFormation.origin,
        AWS_ENDPOINT_URL_EVENTBRIDGE: eventBridge.origin,
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
        AWS_ENDPOINT_URL_LAMBDA: lambda.origin,
        AWS_ENDPOINT_URL_SECRETS_MANAGER: world.sm.endpoint,
        AWS_ENDPOINT_URL_SCHEDULER: scheduler.endpoint,
        ...env,
      },
    });
    results.push(result);
    return result;
  };

  it('users onboard, revoke and recover invoke the functions the stack outputs name, with the documented payloads', async () => {
    const user = { externalId: randomUUID(), username: 'erin', email: 'erin@example.test' };
    lambdaAnswers.set(outputs.OnboardUserFunctionName!, () => ({
      body: { externalId: user.externalId, result: 'created', status: 'active', accessTokenExpiresAt: 1_800_000 },
    }));
    lambdaAnswers.set(outputs.RevokeUserFunctionName!, (p) => ({
      body: { externalId: (p as { externalId: string }).externalId, result: 'revoked' },
    }));
    lambdaAnswers.set(outputs.RecoverUserFunctionName!, (p) => ({
      body: {
        externalId: (p as { externalId: string }).externalId,
        result: 'recovered',
        previousStatus: 'revoked',
        accessTokenExpiresAt: 1,
      },
    }));

    const onboard = await acctops(['--json', ...onboardArgs(user)]);
    expect(onboard.code).toBe(0);
    expect(parseJson(onboard)).toEqual({
      externalId: user.externalId,
      result: 'created',
      status: 'active',
      accessTokenExpiresAt: new Date(1_800_000).toISOString(),
    });
    expect(invocations(outputs.OnboardUserFunctionName!)).toEqual([user]);
    expect(cloudFormation.requests.some((r) => new URLSearchParams(r.body).get('Action') === 'DescribeStacks')).toBe(true);

    expect((await acctops(['users', 'revoke', '--user', user.externalId])).code).toBe(0);
    expect(invocations(outputs.RevokeUserFunctionName!)).toEqual([{ externalId: user.externalId }]);
    const recovered = await acctops(['users', 'recover', '--user', user.externalId, '--reactivate']);
    expect(recovered.code).toBe(0);
    expect(recovered.stdout).toMatch(/recovered \(was revoked\)/);
    expect(invocations(outputs.RecoverUserFunctionName!)).toEqual([{ externalId: user.externalId, reactivate: true }]);
  });

  it("a function error is exit 1 in one line naming the log group from the function's configuration; an unknown stack is exit 3", async () => {
    lambdaAnswers.set(outputs.RevokeUserFunctionName!, () => ({
      error: 'Unhandled',
      body: { errorType: 'TokenBusyError', errorMessage: 'user is being worked on; try again' },
    }));
    logGroups.set(outputs.RevokeUserFunctionName!, '/acctops/test/revoke-user');
    const failed = await acctops(['users', 'revoke', '--user', randomUUID()]);
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim().split('\n')).toEqual([
      'acctops: error: acctops-test-revoke-user failed: TokenBusyError: user is being worked on; try again (see its logs: aws logs tail /acctops/test/revoke-user --since 1h)',
    ]);
    expect(lambda.requests.filter((r) => r.url.endsWith('/configuration')).map((r) => `${r.method} ${r.url}`)).toEqual([
      `GET /2015-03-31/functions/${outputs.RevokeUserFunctionName!}/configuration`,
    ]);

    // Without lambda:GetFunctionConfiguration the function's error is still the one reported, with how to find its group.
    logGroups.delete(outputs.RevokeUserFunctionName!);
    const unreadable = await acctops(['users', 'revoke', '--user', randomUUID()]);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr.trim()).toBe(
      'acctops: error: acctops-test-revoke-user failed: TokenBusyError: user is being worked on; try again ' +
        '(its log group: aws lambda get-function-configuration --function-name acctops-test-revoke-user --query LoggingConfig.LogGroup)',
    );
    const unknown = await runAcctops(['--stack', 'acctops-nope', 'users', 'list'], {
      env: {
        AWS_REGION: 'eu-central-1',
        AWS_ACCESS_KEY_ID: 'AKIALOCALPEER000000',
        AWS_SECRET_ACCESS_KEY: 'x',
        AWS_MAX_ATTEMPTS: '1',
        AWS_ENDPOINT_URL_CLOUDFORMATION: cloudFormation.origin,
      },
    });
    results.push(unknown);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/stack acctops-nope does not exist.*--region/);
  });

  it("a user the deployed function does not know (its TokenNotFoundError) is exit 3 naming --user, not the function's failure", async () => {
    const notFound = (p: unknown) => ({
      error: 'Unhandled',
      body: {
        errorType: 'TokenNotFoundError',
        errorMessage: `no token record for external_id ${(p as { externalId: string }).externalId}`,
      },
    });
    lambdaAnswers.set(outputs.RevokeUserFunctionName!, notFound);
    lambdaAnswers.set(outputs.RecoverUserFunctionName!, notFound);
    const ghost = randomUUID();
    for (const command of ['revoke', 'recover']) {
      const result = await acctops(['users', command, '--user', ghost]);
      expect({ command, code: result.code, stdout: result.stdout }).toEqual({ command, code: 3, stdout: '' });
      expect(result.stderr).toBe(
        `acctops: error: --user ${ghost}: no such user in this deployment (acctops holds no token record for it) ` +
          '(`acctops users list` lists the known users; `acctops users onboard` adds one)\n',
      );
    }
    expect(invocations(outputs.RevokeUserFunctionName!).at(-1)).toEqual({ externalId: ghost });
  });

  it("recover: the function's refusals of the user read as in the local mode (disabled: ask the service owner; 404: onboard again), exit 1", async () => {
    const user = randomUUID();
    const failing = (errorType: string, errorMessage: string) => () => ({ error: 'Unhandled', body: { errorType, errorMessage } });
    logGroups.set(outputs.RecoverUserFunctionName!, '/acctops/test/recover-user');

    lambdaAnswers.set(
      outputs.RecoverUserFunctionName!,
      failing(
        'AuthenticationError',
        'authentication failed (401, user_disabled, on POST /api/v1/institution/users/token/retrieve/): The user is disabled.',
      ),
    );
    const disabled = await acctops(['--json', 'users', 'recover', '--user', user]);
    expect(disabled.code).toBe(1);
    expect(JSON.parse(disabled.stderr)).toMatchObject({
      error: { code: 'user_disabled', hint: expect.stringMatching(/ask the service owner/) },
    });

    lambdaAnswers.set(
      outputs.RecoverUserFunctionName!,
      failing('NotFoundError', 'not found (404, not_found, on POST /api/v1/institution/users/token/retrieve/): No user matches.'),
    );
    const gone = await acctops(['users', 'recover', '--user', user]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(
      new RegExp(`^acctops: error: --user ${user}: the service no longer knows this user .*acctops users onboard --external-id ${user}`),
    );

    // Any other 401 stays the function's failure, with its log group.
    lambdaAnswers.set(
      outputs.RecoverUserFunctionName!,
      failing('AuthenticationError', 'authentication failed (401, institution_invalid, on POST /api/v1/institution/users/token/retrieve/)'),
    );
    const other = await acctops(['users', 'recover', '--user', user]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/failed: AuthenticationError: .*aws logs tail \/acctops\/test\/recover-user/);
  });

  it("onboard: the function's ApiValidationError names the option of the refused field, as in the local mode; other failures stay the function's", async () => {
    const user = { externalId: randomUUID(), username: 'u'.repeat(151), email: 'long@example.test' };
    const name = outputs.OnboardUserFunctionName!;
    const failing = (errorType: string, errorMessage: string) => () => ({ error: 'Unhandled', body: { errorType, errorMessage } });
    logGroups.set(name, '/acctops/test/onboard-user');
    try {
      lambdaAnswers.set(
        name,
        failing(
          'ApiValidationError',
          'request refused as invalid (400, invalid_request, on POST /api/v1/institution/users/create/, request id req_1): field username: Ensure this field has no more than 150 characters.',
        ),
      );
      const refused = await acctops(onboardArgs(user));
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' });
      expect(refused.stderr).toBe(
        'acctops: error: --username: the service refused it: acctops-test-onboard-user failed: ApiValidationError: request refused as invalid (400, invalid_request, on POST /api/v1/institution/users/create/, request id req_1): field username: Ensure this field has no more than 150 characters. ' +
          '(nothing was registered: the API spec sets no length or character rule for a username, so acctops checks only that it is not blank and at most 512 characters; onboard again with a --username the service accepts)\n',
      );
      const json = await acctops(['--json', ...onboardArgs(user)]);
      expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'invalid_request', exitCode: 1 } });

      // A 400 that names no field: the three options, not the service to check.
      lambdaAnswers.set(
        name,
        failing('ApiValidationError', 'request refused as invalid (400, on POST /api/v1/institution/users/create/): Bad request.'),
      );
      const unnamed = await acctops(onboardArgs(user));
      expect(unnamed.code).toBe(1);
      expect(unnamed.stderr).toMatch(
        /^acctops: error: the service refused the user's details: .*\(nothing was registered: check --username, --email and --external-id against what the service accepts, then onboard again\)\n$/,
      );

      // Anything else is the function's failure, with its log group.
      lambdaAnswers.set(name, failing('ServerError', 'server error (503, on POST /api/v1/institution/users/create/)'));
      const other = await acctops(onboardArgs(user));
      expect(other.code).toBe(1);
      expect(other.stderr).toMatch(/failed: ServerError: .*aws logs tail \/acctops\/test\/onboard-user/);
    } finally {
      lambdaAnswers.delete(name);
      logGroups.delete(name);
    }
  });

  it('recover --force: sent as force: true; a function deployed before it refuses the field and is asked again without', async () => {
    const user = randomUUID();
    const name = outputs.RecoverUserFunctionName!;
    const sent = () => invocations(name).length;
    const refusesForce = (answer: (p: { externalId: string }) => unknown) => (p: unknown) =>
      'force' in (p as object)
        ? {
            error: 'Unhandled',
            body: { errorType: 'ValidationError', errorMessage: 'invalid recover-user event: (root): unknown field(s) force' },
          }
        : { body: answer(p as { externalId: string }) };

    // The current function.
    lambdaAnswers.set(name, (p) => ({
      body: {
        externalId: (p as { externalId: string }).externalId,
        ...((p as { force?: boolean }).force
          ? { result: 'recovered', previousStatus: 'active', accessTokenExpiresAt: 2_000_000, changed: true }
          : { result: 'already_active', previousStatus: 'active', accessTokenExpiresAt: 1_000_000, changed: false }),
      },
    }));
    let before = sent();
    const plain = await acctops(['users', 'recover', '--user', user]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain(`run \`acctops users recover --user ${user} --force\``);
    const forced = await acctops(['--json', 'users', 'recover', '--user', user, '--force']);
    expect(forced.code).toBe(0);
    expect(parseJson(forced)).toMatchObject({ result: 'recovered', previousStatus: 'active', changed: true });
    expect(invocations(name).slice(before)).toEqual([{ externalId: user }, { externalId: user, force: true }]);

    // A function from before `already_active` and `changed`: it retrieved for an active user anyway.
    lambdaAnswers.set(
      name,
      refusesForce((p) => ({ externalId: p.externalId, result: 'recovered', previousStatus: 'active', accessTokenExpiresAt: 2_000_000 })),
    );
    before = sent();
    const old = await acctops(['--json', 'users', 'recover', '--user', user, '--force']);
    expect(old.code).toBe(0);
    expect(parseJson(old)).toEqual({
      externalId: user,
      result: 'recovered',
      previousStatus: 'active',
      accessTokenExpiresAt: new Date(2_000_000).toISOString(),
      changed: true,
    });
    expect(invocations(name).slice(before)).toEqual([{ externalId: user, force: true }, { externalId: user }]);

    // One that knows already_active but not force left the user as it was: not what --force asked.
    lambdaAnswers.set(
      name,
      refusesForce((p) => ({
        externalId: p.externalId,
        result: 'already_active',
        previousStatus: 'active',
        accessTokenExpiresAt: 1,
        changed: false,
      })),
    );
    const between = await acctops(['--json', 'users', 'recover', '--user', user, '--force']);
    expect(between.code).toBe(1);
    expect(between.stdout).toBe('');
    expect(JSON.parse(between.stderr)).toMatchObject({ error: { code: 'force_not_deployed', hint: expect.stringMatching(/cdk deploy/) } });
  });

  it('an output the stack does not export is exit 3 naming it and --output; named with --output, the planner is invoked as its schedule does', async () => {
    const missing = await acctops(['tokens', 'refresh', '--all']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/no output PlanTokenRefreshFunctionName.*--output PlanTokenRefreshFunctionName=<value>/);

    lambdaAnswers.set('acctops-test-plan', () => ({ body: { enqueued: 7, pages: 1, complete: true, overdue: 0, plannedAt: 0 } }));
    const planned = await acctops(['--output', 'PlanTokenRefreshFunctionName=acctops-test-plan', '--json', 'tokens', 'refresh', '--all']);
    expect(planned.code).toBe(0);
    expect(parseJson(planned)).toMatchObject({ mode: 'enqueued', planned: 7 });
    expect(invocations('acctops-test-plan')).toEqual([
      {
        source: 'acctops.scheduler',
        schedule: 'token-refresh',
        scheduledAt: expect.any(String),
        executionId: expect.stringMatching(/^acctops-cli-/),
      },
    ]);
  });

  /** A user in the stage's token table, as onboarding leaves it (tokens that expire in an hour). */
  async function tokenUser(): Promise<string> {
    const externalId = randomUUID();
    const client = dynamo.client();
    await new DynamoDbTokenStore({ client, tableName: TOKEN_TABLE_NAME }).create(
      {
        externalId,
        username: `user-${externalId.slice(0, 8)}`,
        email: 'user@example.test',
        accessToken: `at-${randomUUID()}`,
        refreshToken: `rt-${randomUUID()}`,
        accessTokenExpiresAt: Date.now() + 3_600_000,
      },
      Date.now(),
    );
    client.destroy();
    return externalId;
  }

  it("tokens refresh --user invokes the worker with one SQS-shaped record; a user it failed is exit 5 naming the worker's log group", async () => {
    const externalId = await tokenUser();
    lambdaAnswers.set('acctops-test-refresh', (p) => ({
      body: { batchItemFailures: [{ itemIdentifier: (p as { Records: { messageId: string }[] }).Records[0]!.messageId }] },
    }));
    logGroups.set('acctops-test-refresh', '/acctops/test/refresh-tokens');
    const failed = await acctops([
      '--output',
      'RefreshTokensFunctionName=acctops-test-refresh',
      '--output',
      `TokenTableName=${TOKEN_TABLE_NAME}`,
      '--json',
      'tokens',
      'refresh',
      '--user',
      externalId,
    ]);
    expect(failed.code).toBe(5);
    expect(parseJson(failed)).toMatchObject({
      outcomes: [{ externalId, result: 'failed', errorClass: 'see the log group /acctops/test/refresh-tokens' }],
    });
    expect(invocations('acctops-test-refresh')).toEqual([
      {
        Records: [{ messageId: expect.stringMatching(/^acctops-cli-/), body: expect.stringContaining(externalId), eventSource: 'aws:sqs' }],
      },
    ]);
  });

  it('tokens refresh --user says what the worker did from the record, not "refreshed" for any answer without a failure', async () => {
    // The worker answers nothing for a user it skipped: the record, unchanged, says it was not due.
    const externalId = await tokenUser();
    const before = invocations('acctops-test-refresh').length;
    lambdaAnswers.set('acctops-test-refresh', () => ({ body: { batchItemFailures: [] } }));
    const refresh = (user: string) =>
      acctops([
        ...['--output', 'RefreshTokensFunctionName=acctops-test-refresh', '--output', `TokenTableName=${TOKEN_TABLE_NAME}`],
        ...['--json', 'tokens', 'refresh', '--user', user],
      ]);
    const skipped = await refresh(externalId);
    expect(skipped.code).toBe(0);
    expect(parseJson(skipped)).toMatchObject({ outcomes: [{ externalId, result: 'not_due' }], counts: { not_due: 1 } });
    expect(invocations('acctops-test-refresh')).toHaveLength(before + 1);

    // A user the table does not hold is exit 3, as in every command that names one, and no worker is invoked for it.
    const unknown = randomUUID();
    const missing = await refresh(unknown);
    expect({ code: missing.code, stdout: missing.stdout }).toEqual({ code: 3, stdout: '' });
    expect(JSON.parse(missing.stderr)).toMatchObject({
      error: { exitCode: 3, code: 'unknown_user', message: expect.stringContaining(`--user ${unknown}`) },
    });
    expect(invocations('acctops-test-refresh')).toHaveLength(before + 1);

    // A revoked user is said as revoked with the way back (exit 1), and no worker is invoked for it.
    const revoked = await tokenUser();
    const client = dynamo.client();
    const store = new DynamoDbTokenStore({ client, tableName: TOKEN_TABLE_NAME });
    const leased = await store.acquireLease(revoked, 'test-owner', Date.now() + 60_000, Date.now());
    await store.markStatus(revoked, { status: 'revoked' }, { owner: 'test-owner', expectedVersion: leased!.version, now: Date.now() });
    client.destroy();
    const refused = await refresh(revoked);
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' });
    expect(JSON.parse(refused.stderr)).toMatchObject({
      error: {
        exitCode: 1,
        code: 'user_revoked',
        message: `--user ${revoked}: the user is revoked; nothing was refreshed`,
        hint: expect.stringContaining(`\`acctops users recover --user ${revoked} --reactivate\``),
      },
    });
    expect(invocations('acctops-test-refresh')).toHaveLength(before + 1);

    // A user in needs_attention, which no refresh picks up again: said as such with the runbook's way back (exit 1), no worker invoked.
    const refusedUser = await tokenUser();
    const client2 = dynamo.client();
    const store2 = new DynamoDbTokenStore({ client: client2, tableName: TOKEN_TABLE_NAME });
    const leased2 = await store2.acquireLease(refusedUser, 'test-owner', Date.now() + 60_000, Date.now());
    await store2.markStatus(
      refusedUser,
      { status: 'needs_attention', errorClass: 'AuthenticationError', errorCode: 'user_disabled' },
      { owner: 'test-owner', expectedVersion: leased2!.version, now: Date.now() },
    );
    client2.destroy();
    const attention = await refresh(refusedUser);
    expect({ code: attention.code, stdout: attention.stdout }).toEqual({ code: 1, stdout: '' });
    expect(JSON.parse(attention.stderr)).toMatchObject({
      error: {
        exitCode: 1,
        code: 'user_needs_attention',
        message: `--user ${refusedUser}: the user needs attention (its refresh and retrieve were refused); nothing was refreshed`,
        hint: expect.stringContaining(`\`acctops users recover --user ${refusedUser}\``),
      },
    });
    expect(invocations('acctops-test-refresh')).toHaveLength(before + 1);
  });

  it('keys rotate calls RotateSecret: the emulator runs our rotation function against the service; keys status lists the scheduler group', async () => {
    const rotated = await acctops(['--json', 'keys', 'rotate', '--company', world.companyId]);
    expect(rotated.code).toBe(0);
    const report = parseJson<{ state: string; previousKeyPrefix: string; keyPrefix: string }>(rotated);
    expect(report).toMatchObject({ state: 'completed', previousKeyPrefix: world.initialKey.keyPrefix });
    expect(report.keyPrefix).toBe((await world.current()).keyPrefix);
    expect(report.keyPrefix).not.toBe(world.initialKey.keyPrefix);

    // A pending revocation in the stack's schedule group, as the rotation function would create it in AWS.
    await stackScheduler().schedule({
      secretId: world.secretArn,
      companyId: world.companyId,
      apiKeyId: world.initialKey.apiKeyId,
      keyPrefix: world.initialKey.keyPrefix,
      revokeAt: Date.now() + 30 * 60_000,
      rotationToken: 'a'.repeat(36),
    });
    // keys status reads the stage's registry (issue 15): the company is registered, as a deployed stage seeds its companies.
    expect((await acctops(['companies', 'add', '--company', world.companyId])).code).toBe(0);
    // --rotation-days reaches the key secret's schedule through RotateSecret (RotateImmediately false): no rotation starts.
    const days = await acctops([
      ...[
        '--output',
        `RotateApiKeyFunctionArn=${ROTATION_LAMBDA}`,
        '--output',
        'SecretsKeyArn=arn:aws:kms:eu-central-1:000000000000:key/test',
      ],
      ...['--json', 'companies', 'add', '--company', world.companyId, '--rotation-days', '11'],
    ]);
    expect(parseJson(days)).toMatchObject({ keyRotation: { result: 'updated', rotationDays: 11 } });
    const described = await client(world.sm).send(new DescribeSecretCommand({ SecretId: world.secretArn }));
    expect(described.RotationRules?.AutomaticallyAfterDays).toBe(11);
    expect(Object.values(described.VersionIdsToStages ?? {}).flat()).not.toContain('AWSPENDING');
    const noBaseUrl = await acctops(['keys', 'status']);
    expect(noBaseUrl.code).toBe(3);
    expect(noBaseUrl.stderr).toMatch(/ACCTOPS_BASE_URL/);
    const status = await acctops(['--json', 'keys', 'status'], { ACCTOPS_BASE_URL: world.sandbox.baseUrl });
    expect(status.code).toBe(0);
    const row = parseJson<{
      companies: { companyId: string; keyPrefix: string; permissions: string[]; pendingRevocations: { keyPrefix: string }[] }[];
    }>(status).companies[0]!;
    expect(row).toMatchObject({
      companyId: world.companyId,
      keyPrefix: report.keyPrefix,
      pendingRevocations: [{ keyPrefix: world.initialKey.keyPrefix }],
    });
    expect(row.permissions.sort()).toEqual(['manage_api_keys', 'read_categories', 'read_tax_reports', 'read_transactions']);
    // Every key there (README: an absent value is null): the stack's schedules revoke old keys, so revokedBefore is null.
    const document = parseJson<{ revokedBefore: unknown; companies: object[] }>(status);
    expect(Object.keys(document).sort()).toEqual(['companies', 'now', 'revokedBefore']);
    expect(document.revokedBefore).toBeNull();
    expect(Object.keys(document.companies[0]!).sort()).toEqual(KEY_STATUS_ROW_FIELDS);
    expect(document.companies[0]).toMatchObject({ error: null });

    // Without ACCTOPS_BASE_URL, the stack's ServiceBaseUrl output is the service (the permissions come from it).
    outputs.ServiceBaseUrl = world.sandbox.baseUrl;
    try {
      const fromStack = await acctops(['--json', 'keys', 'status']);
      expect(fromStack.code).toBe(0);
      expect(parseJson<{ companies: { permissions: string[] }[] }>(fromStack).companies[0]!.permissions.sort()).toEqual(row.permissions);
    } finally {
      delete outputs.ServiceBaseUrl;
    }
  });

  // After the test above: the initial key (the leaked one) is pending in the stack's schedule group, replaced by a plain rotation.
  it('keys rotate --revoke-previous-now revokes the previous key and every older key pending in the schedule group, and deletes their schedules (decision 107)', async () => {
    const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
    const innocent = await world.current();
    const scheduleName = `revoke-${world.initialKey.apiKeyId}`;
    expect(scheduler.schedules().map((s) => s.Name)).toEqual([scheduleName]);
    expect(await world.statusWith(world.initialKey.apiKey)).toEqual({ status: 200 });
    const deletes = scheduler.calls.DeleteSchedule ?? 0;

    const rotated = await acctops(['--json', 'keys', 'rotate', '--company', world.companyId, '--revoke-previous-now'], env);
    expect(rotated.code).toBe(0);
    const report = parseJson<{ previousKeyPrefix: string; previousKeyRevoked: string; olderKeysRevoked: unknown[] }>(rotated);
    expect(report).toMatchObject({
      previousKeyPrefix: innocent.keyPrefix,
      previousKeyRevoked: 'revoked',
      previousKeyScheduleError: null,
      olderKeysRevoked: [
        {
          keyPrefix: world.initialKey.keyPrefix,
          apiKeyId: world.initialKey.apiKeyId,
          outcome: 'revoked',
          error: null,
          scheduleError: null,
        },
      ],
    });
    expect(await world.statusWith(world.initialKey.apiKey)).toMatchObject({ status: 401 });
    expect(await world.statusWith(innocent.apiKey)).toMatchObject({ status: 401 });
    // Each key revoked now has its schedule deleted: the older key's; the previous key has none here, so none is asked (decision 113).
    expect(scheduler.schedules().map((s) => s.Name)).toEqual([]);
    expect(scheduler.calls.DeleteSchedule).toBe(deletes + 1);
    const status = parseJson<{ companies: { pendingRevocations: unknown[] }[] }>(
      await acctops(['--json', 'keys', 'status', '--company', world.companyId], env),
    );
    expect(status.companies[0]!.pendingRevocations).toEqual([]);

    // Repeated, by the schedule's key and by the previous key (never scheduled here): already_revoked, exit 0.
    for (const prefix of [world.initialKey.keyPrefix, innocent.keyPrefix]) {
      const again = await acctops(['--json', 'keys', 'revoke-pending', '--company', world.companyId, '--prefix', prefix], env);
      expect(again.code).toBe(0);
      expect(parseJson(again)).toMatchObject({ keys: [{ keyPrefix: prefix, outcome: 'already_revoked', error: null }] });
    }
  });

  it('keys rotate --revoke-previous-now whose DeleteSchedule is refused reports the previous key revoked and its schedule left (exit 5); revoke-pending --prefix then deletes it', async () => {
    const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
    const previous = await world.current();
    // The revocation the rotation function schedules in AWS for the key a rotation replaces.
    await stackScheduler().schedule({
      secretId: world.secretArn,
      companyId: world.companyId,
      apiKeyId: previous.apiKeyId,
      keyPrefix: previous.keyPrefix,
      revokeAt: Date.now() + 30 * 60_000,
      rotationToken: 'e'.repeat(36),
    });
    const scheduleName = `revoke-${previous.apiKeyId}`;

    scheduler.denied.add('DeleteSchedule');
    try {
      const rotated = await acctops(['--json', 'keys', 'rotate', '--company', world.companyId, '--revoke-previous-now'], env);
      expect(rotated.code).toBe(5);
      const report = parseJson<{ previousKeyScheduleError: { message: string; hint: string } }>(rotated);
      expect(report).toMatchObject({
        state: 'completed',
        previousKeyPrefix: previous.keyPrefix,
        previousKeyRevoked: 'revoked',
        previousKeyRevokeError: null,
        previousKeyScheduleError: { code: 'schedule_delete_failed', exitCode: 5 },
        olderKeysRevoked: [],
      });
      expect(report.previousKeyScheduleError.message).toContain(`DeleteSchedule failed for ${scheduleName}`);
      // The message itself says the key is revoked and which permission is missing (decision 113).
      expect(report.previousKeyScheduleError.message).toContain(
        `key ${previous.keyPrefix}… was revoked, but its revocation schedule could not be deleted: the operator's credentials lack scheduler:DeleteSchedule on ${scheduleName}`,
      );
      expect(report.previousKeyScheduleError.hint).toContain('scheduler:DeleteSchedule');
      expect(report.previousKeyScheduleError.hint).toContain(
        `keys revoke-pending --company ${world.companyId} --prefix ${previous.keyPrefix}\``,
      );
      expect(JSON.parse(rotated.stderr)).toEqual({
        error: { ...report.previousKeyScheduleError, companyId: world.companyId, keyPrefix: previous.keyPrefix },
      });
      expect(await world.statusWith(previous.apiKey)).toMatchObject({ status: 401 });
      expect(scheduler.schedules().map((s) => s.Name)).toEqual([scheduleName]);
    } finally {
      scheduler.denied.delete('DeleteSchedule');
    }

    const again = await acctops(['--json', 'keys', 'revoke-pending', '--company', world.companyId, '--prefix', previous.keyPrefix], env);
    expect(again.code).toBe(0);
    expect(parseJson(again)).toMatchObject({ keys: [{ keyPrefix: previous.keyPrefix, outcome: 'already_revoked', scheduleError: null }] });
    expect(scheduler.schedules().map((s) => s.Name)).toEqual([]);
  });

  it('keys rotate --revoke-previous-now without scheduler:DeleteSchedule succeeds when the previous key has no schedule (never made, or gone): exit 0, no DeleteSchedule asked (decision 113)', async () => {
    const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
    const previous = await world.current();
    expect(scheduler.schedules().map((s) => s.Name)).toEqual([]);
    const deletes = scheduler.calls.DeleteSchedule ?? 0;
    scheduler.denied.add('DeleteSchedule');
    try {
      const rotated = await acctops(['--json', 'keys', 'rotate', '--company', world.companyId, '--revoke-previous-now'], env);
      expect(rotated.stderr).not.toContain('schedule_delete_failed');
      expect(rotated.code).toBe(0);
      expect(parseJson(rotated)).toMatchObject({
        state: 'completed',
        previousKeyPrefix: previous.keyPrefix,
        previousKeyRevoked: 'revoked',
        previousKeyRevokeError: null,
        previousKeyScheduleError: null,
        olderKeysRevoked: [],
      });
      expect(await world.statusWith(previous.apiKey)).toMatchObject({ status: 401 });
      expect(scheduler.calls.DeleteSchedule ?? 0).toBe(deletes);
    } finally {
      scheduler.denied.delete('DeleteSchedule');
    }
  });

  it('a malformed ACCTOPS_BASE_URL or ServiceBaseUrl output is configuration (exit 3) naming it, for keys status and keys install; never echoed', async () => {
    const pasted = `q${randomUUID().replaceAll('-', '')}`;
    const commands = [
      ['keys', 'status'],
      ['keys', 'install', '--company', world.companyId],
    ];
    for (const args of commands) {
      // Plain http to a host that is not loopback has no opt-in here: a stage's baseUrl is https (decision 92).
      for (const url of [
        'not a url',
        `http://127.0.0.1:9/api/v1?apikey=${pasted}`,
        `ftp://127.0.0.1/api/v1`,
        'http://127.0.0.1:9/',
        `http://${pasted}.invalid/api/v1`,
      ]) {
        const result = await acctops(args, { ACCTOPS_BASE_URL: url, ACCTOPS_API_KEY: world.initialKey.apiKey });
        expect(result.code).toBe(3);
        expect(result.stderr.trim().split('\n')).toHaveLength(1);
        expect(result.stderr).toMatch(/^acctops: error: ACCTOPS_BASE_URL is not usable: .*\(set it to the stage's baseUrl/);
        expect(result.stderr).not.toContain(pasted);
        expect(result.stdout).toBe('');
      }
      // Empty or blank is refused too, not read as unset (README, "Credentials").
      for (const url of ['', ' ']) {
        const result = await acctops(args, { ACCTOPS_BASE_URL: url, ACCTOPS_API_KEY: world.initialKey.apiKey });
        expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 3, stdout: '' });
        expect(result.stderr.trim().split('\n')).toEqual([
          "acctops: error: ACCTOPS_BASE_URL is empty (set it to the stage's baseUrl ending in /api/v1, or unset it to use the stack's ServiceBaseUrl output)",
        ]);
      }
      // Unset, the stack's output is the URL: a malformed one is the stack's configuration, named as such.
      outputs.ServiceBaseUrl = 'ftp://127.0.0.1/api/v1';
      try {
        const fromStack = await acctops(args, { ACCTOPS_API_KEY: world.initialKey.apiKey });
        expect(fromStack.code).toBe(3);
        expect(fromStack.stderr).toMatch(/^acctops: error: the stack output ServiceBaseUrl is not usable: .*--output ServiceBaseUrl=<url>/);
      } finally {
        delete outputs.ServiceBaseUrl;
      }
    }
  });

  it("institution set-secret puts a new AWSCURRENT version on the stack's secret and invokes check-health", async () => {
    const created = await client(world.sm).send(
      new CreateSecretCommand({ Name: 'acctops-test/institution', SecretString: 'inst-1:placeholder-value' }),
    );
    outputs.InstitutionSecretArn = created.ARN!;
    lambdaAnswers.set(outputs.CheckHealthFunctionName!, () => ({
      body: { ok: true, checkedAt: '2026-11-02T09:00:00.000Z', probes: [{ name: 'service-reachable', ok: true, durationMs: 4 }] },
    }));
    const value = `inst-1:${canarySecret('aws-institution')}`;
    const set = await acctops(['--json', 'institution', 'set-secret'], { ACCTOPS_INSTITUTION: value });
    expect(set.code).toBe(0);
    expect(parseJson(set)).toMatchObject({
      secret: 'acctops-test/institution',
      institutionId: 'inst-1',
      verified: true,
      previousVersionId: created.VersionId,
      rolledBack: false,
    });
    // The function's answer has no detail or error for a passing probe: --json has both keys, null.
    const document = parseJson<{ probes: object[] }>(set);
    expect(Object.keys(document).sort()).toEqual([
      'alreadyRolledBack',
      'institutionId',
      'previousVersionId',
      'probes',
      'rolledBack',
      'secret',
      'verified',
      'versionId',
    ]);
    expect(document.probes).toEqual([{ name: 'service-reachable', ok: true, durationMs: 4, detail: null, error: null }]);
    expect((await client(world.sm).send(new GetSecretValueCommand({ SecretId: created.ARN }))).SecretString).toBe(value);
    expect(invocations(outputs.CheckHealthFunctionName!)).toContainEqual({});

    // Rolled back twice (on-call unsure whether the first ran): the second moves nothing.
    const back = await acctops(['--json', 'institution', 'set-secret', '--rollback']);
    expect(back.code).toBe(0);
    expect(parseJson(back)).toMatchObject({ rolledBack: true, alreadyRolledBack: false, versionId: created.VersionId });
    const again = await acctops(['--json', 'institution', 'set-secret', '--rollback']);
    expect(again.code).toBe(0);
    expect(parseJson(again)).toMatchObject({ rolledBack: true, alreadyRolledBack: true, versionId: created.VersionId });
    const current = await client(world.sm).send(new GetSecretValueCommand({ SecretId: created.ARN }));
    expect(current.SecretString).toBe('inst-1:placeholder-value');
  });

  it('export requests the month from the deployed pipeline for every active company of the registry (ExportRequested each on the exports bus)', async () => {
    // Registered: the key's company, and one without a key (the pipeline reports its failure);
    // removed: one that is not requested, although it is still in the registry.
    const keyless = 'dddddddd-0000-4000-8000-000000000004';
    const removed = 'eeeeeeee-0000-4000-8000-000000000005';
    for (const id of [world.companyId, keyless, removed]) expect((await acctops(['companies', 'add', '--company', id])).code).toBe(0);
    expect((await acctops(['companies', 'remove', '--company', removed])).code).toBe(0);

    const requested = await acctops(['--json', 'export', '--month', '2026-10', '--format', 'csv,parquet', '--no-wait']);
    expect(requested.code).toBe(0);
    const expected = [world.companyId, keyless].sort();
    expect(parseJson(requested)).toMatchObject({
      mode: 'aws',
      month: '2026-10',
      companies: expected.map((companyId) => ({ companyId, status: 'requested' })),
    });
    const body = JSON.parse(eventBridge.requests.at(-1)!.body) as {
      Entries: { EventBusName: string; Source: string; DetailType: string; Detail: string }[];
    };
    expect(body.Entries).toHaveLength(2);
    expect(body.Entries[0]).toMatchObject({
      EventBusName: outputs.ExportEventBusName,
      Source: 'acctops.cli',
      DetailType: 'ExportRequested',
    });
    const details = body.Entries.map((e) => JSON.parse(e.Detail) as { requestId?: string });
    // One request id the command chose, which the pipeline's manifests record for its wait (decision 109).
    const requestId = details[0]?.requestId;
    expect(requestId).toMatch(/^cli-[0-9a-f-]{36}$/);
    expect(details).toEqual(expected.map((companyId) => ({ companyId, period: '2026-10', formats: ['csv', 'parquet'], requestId })));

    // A ACCTOPS_BASE_URL left over from the runbook (with the key a direct export reads) leaves this
    // the AWS mode: the request goes to the pipeline, the service at that URL is not asked, and a note
    // says the variable is not read (decision 75).
    const leftover = await startRecordingServer();
    try {
      const sentBefore = eventBridge.requests.length;
      const aws = await acctops(['export', '--month', '2026-10', '--company', world.companyId, '--no-wait'], {
        ACCTOPS_BASE_URL: `${leftover.origin}/api/v1`,
        ACCTOPS_API_KEY: world.initialKey.apiKey,
      });
      expect(aws.code).toBe(0);
      expect(aws.stdout).toMatch(/^Export of 2026-10 \(aws mode, /);
      expect(aws.stderr).toMatch(
        /^acctops: note: ACCTOPS_BASE_URL \(environment\) is not used by export in AWS mode, which --stack picks: the export is requested from the pipeline of acctops-test/,
      );
      expect(eventBridge.requests).toHaveLength(sentBefore + 1);
      const sent = JSON.parse(eventBridge.requests.at(-1)!.body) as { Entries: { DetailType: string; Detail: string }[] };
      expect(sent.Entries.map((e) => [e.DetailType, JSON.parse(e.Detail) as unknown])).toEqual([
        ['ExportRequested', { companyId: world.companyId, period: '2026-10', requestId: expect.stringMatching(/^cli-/) }],
      ]);
      // Each command its own.
      expect((JSON.parse(sent.Entries[0]!.Detail) as { requestId: string }).requestId).not.toBe(requestId);
      expect(leftover.requests).toEqual([]);
    } finally {
      await leftover.stop();
    }

    // --replace-formats reaches the pipeline in the event (the worker then allows the narrower re-export).
    const replaced = await acctops([
      '--json',
      'export',
      '--month',
      '2026-10',
      '--company',
      world.companyId,
      '--format',
      'csv',
      '--replace-formats',
      '--no-wait',
    ]);
    expect(replaced.code).toBe(0);
    const last = JSON.parse(eventBridge.requests.at(-1)!.body) as { Entries: { Detail: string }[] };
    expect(JSON.parse(last.Entries[0]!.Detail)).toEqual({
      companyId: world.companyId,
      period: '2026-10',
      formats: ['csv'],
      replaceFormats: true,
      requestId: expect.stringMatching(/^cli-/),
    });

    // The pre-check is not a permission export --company needs: a registry the operator's role cannot
    // read (here, a table that is not there) leaves the decision to the pipeline, and the request goes out.
    const registryTable = outputs.CompanyRegistryTableName!;
    outputs.CompanyRegistryTableName = 'acctops-registry-not-readable';
    try {
      const unchecked = await acctops(['--json', 'export', '--month', '2026-10', '--company', world.companyId, '--no-wait']);
      expect(unchecked.code).toBe(0);
      const sent = JSON.parse(eventBridge.requests.at(-1)!.body) as { Entries: { Detail: string }[] };
      expect(JSON.parse(sent.Entries[0]!.Detail)).toMatchObject({ companyId: world.companyId, period: '2026-10' });
    } finally {
      outputs.CompanyRegistryTableName = registryTable;
    }

    // The deployed worker reads the stage's names: the flag would be silently lost, so it is refused.
    const before = eventBridge.requests.length;
    const named = await acctops(['export', '--month', '2026-10', '--tax-report-fields', 'periodEnd=endDate', '--no-wait']);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain('exports.taxReportFields');
    expect(eventBridge.requests).toHaveLength(before);
    // So would the default currency: the deployed worker reads the company's from the registry,
    // and the refusal names that way.
    const gbp = await acctops(['export', '--month', '2026-10', '--company', world.companyId, '--default-currency', 'GBP', '--no-wait']);
    expect(gbp.code).toBe(2);
    expect(gbp.stderr).toContain('--default-currency is for the local and direct modes');
    expect(gbp.stderr).toContain(`acctops --stack ${STACK} companies add --company ${world.companyId} --default-currency <ISO code>`);
    expect(eventBridge.requests).toHaveLength(before);
    // The month is judged in the stage's time zone, as request-export judges it: the export reads the
    // stack's ExportTimeZone output, and one that is no zone is configuration, before anything is sent.
    const badZone = await acctops(['--output', 'ExportTimeZone=Mars/Base', 'export', '--month', '2026-10', '--no-wait']);
    expect(badZone.code).toBe(3);
    expect(badZone.stderr).toContain('the stack output ExportTimeZone is not an IANA time zone');
    expect(eventBridge.requests).toHaveLength(before);
    // A month after the current one everywhere is refused before the stack is read.
    const describes = cloudFormation.requests.length;
    const future = await acctops(['export', '--month', '2999-01', '--no-wait']);
    expect(future.code).toBe(2);
    expect(future.stderr).toContain('--month is after the current month');
    expect(cloudFormation.requests).toHaveLength(describes);
    // That way, in AWS mode: the stage's registry table holds it (what the worker reads).
    const registered = await acctops(['--json', 'companies', 'add', '--company', keyless, '--default-currency', 'gbp']);
    expect(registered.code).toBe(0);
    expect(parseJson(registered)).toMatchObject({ result: 'updated', company: { companyId: keyless, defaultCurrency: 'GBP' } });
    const dynamoClient = dynamo.client();
    try {
      const item = await DynamoDBDocumentClient.from(dynamoClient).send(
        new GetCommand({ TableName: outputs.CompanyRegistryTableName!, Key: { companyId: keyless } }),
      );
      expect(item.Item).toMatchObject({ companyId: keyless, defaultCurrency: 'GBP' });
    } finally {
      dynamoClient.destroy();
    }
    const listed = parseJson<{ companies: { companyId: string; defaultCurrency: string | null }[] }>(
      await acctops(['--json', 'companies', 'list']),
    );
    expect(listed.companies.map((c) => [c.companyId, c.defaultCurrency])).toContainEqual([keyless, 'GBP']);
    expect(listed.companies.map((c) => [c.companyId, c.defaultCurrency])).toContainEqual([world.companyId, null]);
    // Nine CLI processes in one test.
  }, 240_000);

  it('a company whose registry item fails its schema: export --company and companies add are exit 3 naming the field and the runbook; nothing is requested', async () => {
    const damaged = 'ffffffff-0000-4000-8000-000000000006';
    const dynamoClient = dynamo.client();
    try {
      await DynamoDBDocumentClient.from(dynamoClient).send(
        new PutCommand({
          TableName: outputs.CompanyRegistryTableName!,
          Item: { companyId: damaged, formats: ['csv'], rotationDays: 'thirty' },
        }),
      );
    } finally {
      dynamoClient.destroy();
    }
    const before = eventBridge.requests.length;
    // Removed again at the end, as the runbook does, so that later tests see a readable registry.
    const removeItem = async () => {
      const cleanup = dynamo.client();
      try {
        await DynamoDBDocumentClient.from(cleanup).send(
          new DeleteCommand({ TableName: outputs.CompanyRegistryTableName!, Key: { companyId: damaged } }),
        );
      } finally {
        cleanup.destroy();
      }
    };
    try {
      for (const args of [
        ['export', '--month', '2026-10', '--company', damaged, '--no-wait'],
        ['companies', 'add', '--company', damaged],
      ]) {
        const refused = await acctops(['--json', ...args]);
        expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 3, stdout: '' });
        expect(JSON.parse(refused.stderr)).toMatchObject({
          error: {
            exitCode: 3,
            code: 'company_entry_damaged',
            message: `--company ${damaged}: its company registry entry is damaged (rotationDays: expected number); nothing was done`,
            hint: expect.stringContaining('CompanyRegistryTableName, then `acctops companies add --company'),
          },
        });
      }
    } finally {
      await removeItem();
    }
    expect(eventBridge.requests).toHaveLength(before);
  });

  it('a company the stage does not know is exit 3 naming --company in every command; a removed one is said to be removed, with the restore', async () => {
    const ghost = randomUUID();
    const eventsBefore = eventBridge.requests.length;
    for (const args of [
      ['keys', 'rotate', '--company', ghost],
      ['keys', 'status', '--company', ghost],
      ['export', '--month', '2026-10', '--company', ghost, '--no-wait'],
      ['companies', 'remove', '--company', ghost],
      ['companies', 'restore', '--company', ghost],
    ]) {
      const result = await acctops(['--json', ...args]);
      expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 3, stdout: '' });
      expect(JSON.parse(result.stderr)).toEqual({
        error: {
          exitCode: 3,
          code: 'unknown_company',
          message: expect.stringMatching(
            new RegExp(`^--company ${ghost}: no such company in this deployment \\(not in the company registry`),
          ),
          hint: '`acctops companies list` lists the known companies',
        },
      });
    }
    // Nothing was requested of the pipeline for it.
    expect(eventBridge.requests).toHaveLength(eventsBefore);

    // A company with a key secret of the stage, removed: the secret is scheduled for deletion, the registry records when.
    const removed = randomUUID();
    await client(world.sm).send(
      new CreateSecretCommand({
        Name: `acctops/test/company/${removed}/api-key`,
        SecretString: '{}',
        Tags: [
          { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
          { Key: COMPANY_KEY_TAGS.company, Value: removed },
          { Key: COMPANY_KEY_TAGS.stage, Value: 'test' },
        ],
      }),
    );
    expect((await acctops(['companies', 'add', '--company', removed])).code).toBe(0);
    const removal = await acctops(['--json', 'companies', 'remove', '--company', removed]);
    expect(removal.code).toBe(0);
    const { company, key } = parseJson<{ company: { removedAt: string }; key: { result: string; deletionDate: string } }>(removal);
    expect(key.result).toBe('scheduled');
    for (const args of [
      ['keys', 'rotate', '--company', removed],
      ['keys', 'status', '--company', removed],
      ['export', '--month', '2026-10', '--company', removed, '--no-wait'],
    ]) {
      const result = await acctops(args);
      expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 3, stdout: '' });
      expect(result.stderr).toBe(
        `acctops: error: --company ${removed}: the company was removed on ${company.removedAt}; its key secret is deleted for good on ${key.deletionDate} unless the company is restored ` +
          `(\`acctops companies restore --company ${removed}\` brings it back with its key secret and rotation, within the recovery window)\n`,
      );
    }
    expect(eventBridge.requests).toHaveLength(eventsBefore);
  });

  it('doctor invokes check-health and the rotation doctor (dry run unless --repair) and reports what it could not check', async () => {
    lambdaAnswers.set(outputs.CheckHealthFunctionName!, () => ({
      body: {
        ok: false,
        checkedAt: '2026-11-02T09:00:00.000Z',
        probes: [
          { name: 'institution-credential-readable', ok: true, durationMs: 3, detail: 'institution inst-1' },
          {
            name: 'service-reachable',
            ok: false,
            durationMs: 2000,
            error: { name: 'TimeoutError', code: 'timeout', message: 'no answer within 2000 ms' },
          },
        ],
      },
    }));
    // A finding that names no key (as the function's JSON has it: no apiKeyId, keyPrefix or versionId key).
    const finding = {
      type: 'rotation_disabled',
      companyId: world.companyId,
      secret: 's',
      repaired: true,
      detail: 'rotation turned on again',
    };
    lambdaAnswers.set(outputs.CheckKeyRotationsFunctionName!, () => ({ body: { checkedAt: 0, companies: 1, findings: [finding] } }));
    // A stack without the ExportTimeZone and ExportDueAfterHours outputs: the doctor judges by the defaults.
    const month = dueExportPeriod(Date.now(), DEFAULT_EXPORT_DEADLINE.timeZone, DEFAULT_EXPORT_DEADLINE.dueAfterHours).text;
    const later = monthOf(Date.parse(`${month}-15T00:00:00Z`), 1);
    const current = await world.current();
    const exportInto = (period: string) =>
      directExport({
        baseUrl: world.sandbox.baseUrl,
        apiKey: current.apiKey,
        month: period,
        store: new S3ObjectStore({ client: s3.client(), bucket: outputs.ExportBucketName! }),
        toolVersion: 'test',
        formats: ['csv'],
      });
    // A later month exported on demand: the month the doctor expects is still missing.
    await exportInto(later);
    const missing = await acctops(['--json', 'doctor']);
    expect(missing.code).toBe(5);
    const missingReport = parseJson<{ findings: string[]; exports: { companies: unknown[] } }>(missing);
    expect(missingReport.exports.companies).toEqual([
      expect.objectContaining({ companyId: world.companyId, lastPeriod: later, overdue: true }),
    ]);
    expect(missingReport.findings).toContain(
      `company ${world.companyId} has no export of ${month} (last: ${later}): \`acctops export --month ${month} --company ${world.companyId}\``,
    );
    // The month the doctor expects, exported into the stack's bucket as the pipeline would.
    await exportInto(month);
    const doctor = await acctops(['--json', 'doctor']);
    expect(doctor.code).toBe(5);
    const report = parseJson<{
      mode: string;
      findings: string[];
      tokens: { skipped: string };
      exports: { companies: { companyId: string; lastPeriod: string; overdue: boolean }[] };
    }>(doctor);
    expect(report.mode).toBe('aws');
    expect(report.findings).toEqual(['probe service-reachable failed: no answer within 2000 ms']);
    expect(report.tokens.skipped).toMatch(/TokenTableName/);
    expect(report.exports.companies).toEqual([expect.objectContaining({ companyId: world.companyId, lastPeriod: later, overdue: false })]);
    // Every key there: the local mode's sections are null, the function answers' absent fields too.
    const document = parseJson<Record<string, unknown> & { health: { probes: unknown[] }; rotations: { findings: unknown[] } }>(doctor);
    expect(Object.keys(document).sort()).toEqual(DOCTOR_REPORT_FIELDS);
    // The pending revocations that will fail when their schedule fires: none here (decision 107).
    expect(document).toMatchObject({ companySecrets: null, revokedKeys: [], damagedStateFiles: null });
    expect(document.health.probes).toEqual([
      { name: 'institution-credential-readable', ok: true, durationMs: 3, detail: 'institution inst-1', error: null },
      {
        name: 'service-reachable',
        ok: false,
        durationMs: 2000,
        detail: null,
        error: { name: 'TimeoutError', code: 'timeout', message: 'no answer within 2000 ms' },
      },
    ]);
    expect(document.rotations.findings).toEqual([{ ...finding, apiKeyId: null, keyPrefix: null, versionId: null }]);
    expect(invocations(outputs.CheckKeyRotationsFunctionName!)).toEqual([{ repair: false }, { repair: false }]);
    await acctops(['doctor', '--repair']);
    expect(invocations(outputs.CheckKeyRotationsFunctionName!)).toEqual([{ repair: false }, { repair: false }, { repair: true }]);
  });

  it('doctor: Athena symlinks behind a manifest committed moments ago are a publish in progress: `publishing`, not a finding (exit 0)', async () => {
    lambdaAnswers.set(outputs.CheckHealthFunctionName!, () => ({
      body: { ok: true, checkedAt: '2026-11-02T09:00:00.000Z', probes: [{ name: 'service-reachable', ok: true, durationMs: 5 }] },
    }));
    lambdaAnswers.set(outputs.CheckKeyRotationsFunctionName!, () => ({ body: { checkedAt: 0, companies: 1, findings: [] } }));
    const month = dueExportPeriod(Date.now(), DEFAULT_EXPORT_DEADLINE.timeZone, DEFAULT_EXPORT_DEADLINE.dueAfterHours).text;
    const current = await world.current();
    // A publish caught between its manifest and its symlinks, as the doctor may find one of the stack's functions:
    // the same state as a symlink write that failed, moments after the commit.
    const client = s3.client();
    instrumentS3(client, ({ command, key }) => command === 'PutObjectCommand' && key.endsWith('/transactions/_symlink/symlink.txt'));
    const published = await directExport({
      baseUrl: world.sandbox.baseUrl,
      apiKey: current.apiKey,
      month,
      store: new S3ObjectStore({ client, bucket: outputs.ExportBucketName! }),
      toolVersion: 'test',
      // csv as well: the month may hold an earlier export in csv, which a re-export must keep.
      formats: ['csv', 'parquet'],
    });
    expect(published.staleSymlinks).toEqual(['transactions']);

    const doctor = await acctops(['--json', 'doctor']);
    expect(doctor.code).toBe(0);
    const report = parseJson<{
      findings: string[];
      exports: { companies: { companyId: string; staleSymlinks: unknown[]; publishing: { period: string; datasets: string[] }[] }[] };
    }>(doctor);
    expect(report.findings).toEqual([]);
    const row = report.exports.companies.find((c) => c.companyId === world.companyId)!;
    expect(row.staleSymlinks).toEqual([]);
    expect(row.publishing).toEqual([{ period: month, datasets: ['transactions'], committedAt: expect.stringMatching(/Z$/) }]);

    const text = await acctops(['doctor']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`publishing (${month})`);
    expect(text.stdout).toContain(`  publishing: company ${world.companyId}, ${month}: its manifest was committed at `);
    expect(text.stdout).toContain('No findings.');
  });

  it("doctor expects the month due by the stack's own deadline (ExportTimeZone, ExportDueAfterHours); a malformed one skips the exports section", async () => {
    // The latest deadline there is (27 days), read in a zone far from Berlin: the doctor takes it from the outputs.
    const deadline = { timeZone: 'Pacific/Kiritimati', dueAfterHours: 648 };
    const judged = (extra: Record<string, string>) =>
      acctops([...Object.entries(extra).flatMap(([k, v]) => ['--output', `${k}=${v}`]), '--json', 'doctor']);
    const deployed = await judged({ ExportTimeZone: deadline.timeZone, ExportDueAfterHours: String(deadline.dueAfterHours) });
    expect(parseJson<{ exports: { expectedPeriod: string } }>(deployed).exports.expectedPeriod).toBe(
      dueExportPeriod(Date.now(), deadline.timeZone, deadline.dueAfterHours).text,
    );
    for (const [key, value] of [
      ['ExportDueAfterHours', '12h'],
      ['ExportDueAfterHours', '649'],
      ['ExportTimeZone', 'Europe/Berlinn'],
    ] as const) {
      const bad = await judged({ [key]: value });
      const report = parseJson<{ exports: { skipped: string } }>(bad);
      expect(report.exports.skipped).toMatch(new RegExp(`^the stack output ${key} is not `));
      expect(report.exports.skipped).not.toContain(value);
    }
  });
  describe('a removed company whose key secret the stack imports (cdk.json existingSecretArn)', () => {
    /** What `companies restore` needs of the stack besides the registry (as the --rotation-days test passes them). */
    const keyOutputs = [
      ...['--output', `RotateApiKeyFunctionArn=${ROTATION_LAMBDA}`],
      ...['--output', 'SecretsKeyArn=arn:aws:kms:eu-central-1:000000000000:key/test'],
    ];
    const imported = { companyId: '', secretArn: '', name: '', apiKey: '', apiKeyId: '' };
    const describeImported = () => client(world.sm).send(new DescribeSecretCommand({ SecretId: imported.secretArn }));
    const currentKeyId = async () =>
      (
        JSON.parse((await client(world.sm).send(new GetSecretValueCommand({ SecretId: imported.secretArn }))).SecretString!) as {
          apiKeyId: string;
        }
      ).apiKeyId;

    beforeAll(async () => {
      // A company of the stage's cdk.json whose secret the stack imports by ARN: its own name, tagged by
      // the runbook "Install a company API key" (step 2), rotating on the stack's RotationSchedule.
      imported.companyId = (await world.sandbox.admin.createCompany({ name: 'Imported Key AG' })).publicId;
      const key = await world.sandbox.admin.createApiKey({
        companyId: imported.companyId,
        permissions: ['manage_api_keys', 'read_transactions', 'read_categories', 'read_tax_reports'],
      });
      trackSecret(key.key);
      imported.apiKey = key.key;
      imported.apiKeyId = key.publicId;
      imported.name = `legacy/erp/${imported.companyId}`;
      const created = await client(world.sm).send(
        new CreateSecretCommand({
          Name: imported.name,
          SecretString: JSON.stringify({
            apiKey: key.key,
            apiKeyId: key.publicId,
            keyPrefix: key.prefix,
            companyId: imported.companyId,
            permissions: key.permissions,
            createdAt: key.createdAt,
          }),
          Tags: [
            { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
            { Key: COMPANY_KEY_TAGS.company, Value: imported.companyId },
            { Key: COMPANY_KEY_TAGS.stage, Value: 'test' },
          ],
        }),
      );
      imported.secretArn = created.ARN!;
      world.sm.admin.configureRotation(imported.secretArn, { lambdaArn: ROTATION_LAMBDA, rules: { AutomaticallyAfterDays: 30 } });
      // Seeded into the registry, as the stack seeds a cdk.json company.
      expect((await acctops(['companies', 'add', '--company', imported.companyId])).code).toBe(0);
    });

    it('companies remove turns its rotation off and keeps the secret, which is not ours, saying what a deploy does and how to drop the company; a rotation coming due then starts nothing', async () => {
      const removal = await acctops(['--json', 'companies', 'remove', '--company', imported.companyId]);
      expect(removal.code).toBe(0);
      expect(parseJson(removal)).toMatchObject({
        result: 'removed',
        key: {
          result: 'kept_imported',
          secret: imported.name,
          rotationStopped: true,
          deletionDate: null,
          scheduledAt: null,
          recoveryWindowDays: null,
        },
        undo: `acctops companies restore --company ${imported.companyId}`,
      });
      const described = await describeImported();
      expect({ enabled: described.RotationEnabled, deleted: described.DeletedDate }).toEqual({ enabled: false, deleted: undefined });
      // Rotation off: when the schedule comes due, Secrets Manager invokes nothing, so no key is made for the company.
      expect(await world.sm.admin.rotateOnSchedule(imported.secretArn)).toBeUndefined();
      expect(await currentKeyId()).toBe(imported.apiKeyId);

      // Again: already removed; the secret is still there, its rotation already off.
      const again = await acctops(['companies', 'remove', '--company', imported.companyId]);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain(`Company ${imported.companyId}: already removed`);
      expect(again.stdout).toContain(
        `Key secret ${imported.name} is imported by the stack (cdk.json existingSecretArn), not acctops's to delete: kept; its rotation was off already.`,
      );
      expect(again.stdout).toMatch(/the next `cdk deploy` leaves rotation off unless the schedule itself changes/);
      expect(again.stdout).toMatch(
        /drop the company from the stage's `companies` in cdk\.json and deploy \(docs\/runbooks\.md, "Add or remove a company"\)/,
      );
      expect(again.stdout).not.toMatch(/deleted for good/);
    });

    it('keys rotate, keys status --company, keys revoke-pending, keys install and export --company refuse it (exit 3, company_removed) though its secret is found; doctor leaves its exports out', async () => {
      const rotations = world.sm.admin.stats().calls.RotateSecret ?? 0;
      const puts = world.sm.admin.stats().calls.PutSecretValue ?? 0;
      const eventsBefore = eventBridge.requests.length;
      const removedAt = parseJson<{ companies: { companyId: string; removedAt: string }[] }>(
        await acctops(['--json', 'companies', 'list']),
      ).companies.find((c) => c.companyId === imported.companyId)!.removedAt;
      for (const args of [
        ['keys', 'rotate', '--company', imported.companyId],
        ['keys', 'status', '--company', imported.companyId],
        ['keys', 'revoke-pending', '--company', imported.companyId],
        ['keys', 'install', '--company', imported.companyId],
        ['export', '--month', '2026-10', '--company', imported.companyId, '--no-wait'],
      ]) {
        // The service's URL and the key to install, which a command would need past the refusal (export: none, it is direct mode's).
        const env: Record<string, string> =
          args[0] === 'export'
            ? {}
            : { ACCTOPS_BASE_URL: world.sandbox.baseUrl, ...(args[1] === 'install' ? { ACCTOPS_API_KEY: imported.apiKey } : {}) };
        const result = await acctops([...keyOutputs, '--json', ...args], env);
        expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 3, stdout: '' });
        expect(JSON.parse(result.stderr)).toEqual({
          error: {
            exitCode: 3,
            code: 'company_removed',
            message: `--company ${imported.companyId}: the company was removed on ${removedAt}; its key secret ${imported.name} stays, imported by the stack (not acctops's to delete)`,
            hint: `\`acctops companies restore --company ${imported.companyId}\` brings it back and turns its key secret's rotation on again`,
          },
        });
      }
      // Nothing asked of Secrets Manager's rotation, nothing stored, nothing requested of the pipeline.
      expect(world.sm.admin.stats().calls.RotateSecret ?? 0).toBe(rotations);
      expect(world.sm.admin.stats().calls.PutSecretValue ?? 0).toBe(puts);
      expect(eventBridge.requests).toHaveLength(eventsBefore);
      expect(await currentKeyId()).toBe(imported.apiKeyId);

      // The monthly planner leaves it out, so the doctor expects no export of it (it reported one overdue every run).
      lambdaAnswers.set(outputs.CheckHealthFunctionName!, () => ({
        body: { ok: true, checkedAt: '2026-11-02T09:00:00.000Z', probes: [] },
      }));
      lambdaAnswers.set(outputs.CheckKeyRotationsFunctionName!, () => ({ body: { checkedAt: 0, companies: 0, findings: [] } }));
      const doctor = parseJson<{ findings: string[]; exports: { companies: { companyId: string }[] } }>(
        await acctops(['--json', 'doctor']),
      );
      expect(doctor.exports.companies.map((c) => c.companyId)).not.toContain(imported.companyId);
      expect(doctor.findings.filter((f) => f.includes(imported.companyId))).toEqual([]);
    });

    it('companies restore turns its rotation back on as remove found it, the secret untouched; a rotation coming due then runs', async () => {
      const restored = await acctops([...keyOutputs, '--json', 'companies', 'restore', '--company', imported.companyId]);
      expect(restored.code).toBe(0);
      expect(parseJson(restored)).toMatchObject({ result: 'readded', key: 'kept_imported', rotationDays: 30 });
      const text = await acctops([...keyOutputs, 'companies', 'restore', '--company', imported.companyId]);
      expect(text.stdout).toContain(`Key secret ${imported.name} (imported by the stack) was kept; rotation on, every 30 days.`);
      const described = await describeImported();
      expect({
        enabled: described.RotationEnabled,
        lambda: described.RotationLambdaARN,
        days: described.RotationRules?.AutomaticallyAfterDays,
      }).toEqual({
        enabled: true,
        lambda: ROTATION_LAMBDA,
        days: 30,
      });
      expect(described.DeletedDate).toBeUndefined();
      expect(await currentKeyId()).toBe(imported.apiKeyId);
      expect(await world.sm.admin.rotateOnSchedule(imported.secretArn)).toMatchObject({ status: 'succeeded' });
      expect(await currentKeyId()).not.toBe(imported.apiKeyId);
      for (const value of (await client(world.sm).send(new GetSecretValueCommand({ SecretId: imported.secretArn }))).SecretString!.split(
        '"',
      ))
        if (value.startsWith('sbx_')) trackSecret(value);
    });
  });

  describe("keys install says which KMS key encrypts the company's secret", () => {
    const SECRETS_KEY = 'arn:aws:kms:eu-central-1:000000000000:key/test';
    const keyOutputs = [...['--output', `RotateApiKeyFunctionArn=${ROTATION_LAMBDA}`], ...['--output', `SecretsKeyArn=${SECRETS_KEY}`]];
    const CMK = 'arn:aws:kms:eu-central-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab';
    type Installed = {
      secret: string;
      rotation: string;
      encryption: { kmsKeyId: string | null; awsManagedKey: boolean; stageMustNameKey: boolean };
    };

    /** A registered company with a live key; with `kmsKeyId`, its secret imported by the stack under that key (or the AWS managed one: null). */
    const company = async (name: string, imported?: { kmsKeyId: string | null }) => {
      const companyId = (await world.sandbox.admin.createCompany({ name })).publicId;
      const key = await world.sandbox.admin.createApiKey({
        companyId,
        permissions: ['manage_api_keys', 'read_transactions', 'read_categories', 'read_tax_reports'],
      });
      trackSecret(key.key);
      if (imported !== undefined) {
        await client(world.sm).send(
          new CreateSecretCommand({
            Name: `legacy/erp/${companyId}`,
            SecretString: JSON.stringify({ placeholder: true }),
            ...(imported.kmsKeyId === null ? {} : { KmsKeyId: imported.kmsKeyId }),
            Tags: [
              { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
              { Key: COMPANY_KEY_TAGS.company, Value: companyId },
              { Key: COMPANY_KEY_TAGS.stage, Value: 'test' },
            ],
          }),
        );
      }
      expect((await acctops(['companies', 'add', '--company', companyId])).code).toBe(0);
      return { companyId, apiKey: key.key };
    };
    const install = (c: { companyId: string; apiKey: string }, json: boolean) =>
      acctops([...keyOutputs, ...(json ? ['--json'] : []), 'keys', 'install', '--company', c.companyId], {
        ACCTOPS_BASE_URL: world.sandbox.baseUrl,
        ACCTOPS_API_KEY: c.apiKey,
      });

    it('warns, on stderr and with --json too, that the stage must name the customer managed key of an imported secret', async () => {
      const c = await company('Own Key GmbH', { kmsKeyId: CMK });
      const json = await install(c, true);
      expect(json.code).toBe(0);
      expect(parseJson<Installed>(json)).toMatchObject({
        secret: `legacy/erp/${c.companyId}`,
        rotation: 'stack_managed',
        encryption: { kmsKeyId: CMK, awsManagedKey: false, stageMustNameKey: true },
      });
      const warning =
        `acctops: warning: secret legacy/erp/${c.companyId} is imported by the stack and encrypted with customer managed KMS key ${CMK}: ` +
        `the stage must name that key's ARN as the company's existingSecretKmsKeyArn in cdk.json (companies[], company ${c.companyId}) and be deployed, ` +
        'else its rotation fails with AccessDenied from KMS';
      expect(json.stderr).toContain(warning);
      const text = await install(c, false);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain(`  encrypted with KMS key ${CMK} (customer managed).`);
      expect(text.stderr.trim().split('\n')).toEqual([expect.stringContaining(warning)]);
    });

    it('warns of nothing for an imported secret under the AWS managed key, nor for a secret it creates with the stack key', async () => {
      const awsManaged = await company('Managed Key GmbH', { kmsKeyId: null });
      const json = await install(awsManaged, true);
      expect(json.code).toBe(0);
      expect(parseJson<Installed>(json).encryption).toEqual({ kmsKeyId: null, awsManagedKey: true, stageMustNameKey: false });
      expect(json.stderr).not.toContain('warning');
      expect((await install(awsManaged, false)).stdout).toContain('  encrypted with the AWS managed key aws/secretsmanager.');

      const created = await company('Stack Key GmbH');
      const made = await install(created, true);
      expect(made.code).toBe(0);
      expect(parseJson<Installed>(made)).toMatchObject({
        secret: `acctops/test/company/${created.companyId}/api-key`,
        encryption: { kmsKeyId: SECRETS_KEY, awsManagedKey: false, stageMustNameKey: false },
      });
      expect(made.stderr).not.toContain('warning');
    });

    it('names the key an install replaced, which revoke-pending --prefix revokes; companies remove --revoke-keys revokes the current key (decision 105)', async () => {
      const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
      const first = await company('Replaced Key GmbH');
      expect((await install(first, true)).code).toBe(0);
      const replaced = parseJson<{ keyPrefix: string }>(await install(first, true)).keyPrefix;
      const next = await world.sandbox.admin.createApiKey({
        companyId: first.companyId,
        permissions: ['manage_api_keys', 'read_transactions', 'read_categories', 'read_tax_reports'],
      });
      trackSecret(next.key);
      const second = await install({ companyId: first.companyId, apiKey: next.key }, false);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(
        `the key it replaced, ${replaced}…, stays valid at the service: revoke it now with \`acctops keys revoke-pending --company ${first.companyId} --prefix ${replaced}\``,
      );
      expect(second.stdout).not.toContain(first.apiKey);
      expect(await world.statusWith(first.apiKey)).toEqual({ status: 200 });
      // keys status names it while it stays valid with nothing pending (decision 107), by prefix only.
      const replacedKey = async () =>
        parseJson<{ companies: { replacedKey: { keyPrefix: string } | null }[] }>(
          await acctops(['--json', 'keys', 'status', '--company', first.companyId], env),
        ).companies[0]!.replacedKey;
      expect(await replacedKey()).toMatchObject({ keyPrefix: replaced });
      const shown = await acctops(['keys', 'status', '--company', first.companyId], env);
      expect(shown.stdout).toContain(`${first.companyId}: the previous key ${replaced}… (the key an install replaced`);
      expect(shown.stdout).not.toContain(first.apiKey);

      const revoked = await acctops(
        [...keyOutputs, '--json', 'keys', 'revoke-pending', '--company', first.companyId, '--prefix', replaced],
        env,
      );
      expect(revoked.code).toBe(0);
      expect(parseJson(revoked)).toMatchObject({ keys: [{ keyPrefix: replaced, outcome: 'revoked', error: null }] });
      expect(await world.statusWith(first.apiKey)).toMatchObject({ status: 401 });
      expect(await world.statusWith(next.key)).toEqual({ status: 200 });
      expect(await replacedKey()).toBeNull();

      const removal = await acctops([...keyOutputs, '--json', 'companies', 'remove', '--company', first.companyId, '--revoke-keys'], env);
      expect(removal.code).toBe(0);
      expect(parseJson(removal)).toMatchObject({
        key: { result: 'scheduled' },
        keys: {
          current: { apiKeyId: next.publicId },
          pending: [],
          revoked: [{ apiKeyId: next.publicId, outcome: 'revoked' }],
          unread: null,
        },
      });
      expect(await world.statusWith(next.key)).toMatchObject({ status: 401 });
      // A retry: the secret is scheduled for deletion, the registry item names what was revoked (decision 112).
      const again = await acctops([...keyOutputs, '--json', 'companies', 'remove', '--company', first.companyId, '--revoke-keys'], env);
      expect(again.code).toBe(0);
      expect(parseJson(again)).toMatchObject({
        result: 'already_removed',
        keys: { current: { apiKeyId: next.publicId }, pending: [], revoked: [{ apiKeyId: next.publicId, outcome: 'already_revoked' }] },
      });
    });

    /** A company with two installed keys, the first pending revocation in the stack's group as a rotation schedules it. */
    const companyWithPendingRevocation = async (name: string) => {
      const target = await company(name);
      const first = parseJson<{ apiKeyId: string; keyPrefix: string; secretArn: string }>(await install(target, true));
      const next = await world.sandbox.admin.createApiKey({
        companyId: target.companyId,
        permissions: ['manage_api_keys', 'read_transactions', 'read_categories', 'read_tax_reports'],
      });
      trackSecret(next.key);
      expect((await install({ companyId: target.companyId, apiKey: next.key }, false)).code).toBe(0);
      const revokeAt = Date.now() + 30 * 60_000;
      await stackScheduler().schedule({
        secretId: first.secretArn,
        companyId: target.companyId,
        apiKeyId: first.apiKeyId,
        keyPrefix: first.keyPrefix,
        revokeAt,
        rotationToken: 'd'.repeat(36),
      });
      const scheduleName = `revoke-${first.apiKeyId}`;
      expect(scheduler.schedules().map((s) => s.Name)).toContain(scheduleName);
      return { target, first, next, scheduleName, revokeAt };
    };

    it("doctor names a removed company's pending revocation as blocked, in the local doctor's words (exit 5); remove --revoke-keys deletes the revoked keys' schedules (decision 107)", async () => {
      const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
      lambdaAnswers.set(outputs.CheckHealthFunctionName!, () => ({
        body: { ok: true, checkedAt: '2026-11-02T09:00:00.000Z', probes: [] },
      }));
      lambdaAnswers.set(outputs.CheckKeyRotationsFunctionName!, () => ({ body: { checkedAt: 0, companies: 0, findings: [] } }));
      const { target, first, next, scheduleName, revokeAt } = await companyWithPendingRevocation('Blocked Revocation GmbH');
      const blocked =
        `old key ${first.keyPrefix}… of company ${target.companyId} cannot be revoked: the company's key secret is scheduled for deletion (the company was removed), ` +
        "and the revocation needs the company's current key, which only that secret holds; it stays valid at the service: " +
        `\`acctops companies restore --company ${target.companyId}\` (within the recovery window), then \`acctops companies remove --company ${target.companyId} --revoke-keys\`, ` +
        "which revokes it and the company's current key before removing the company again";
      type Report = {
        findings: string[];
        revokedKeys: { keyPrefix: string; outcome: string; error: string | null; code: string | null }[];
      };
      const ours = (report: Report) => report.revokedKeys.filter((r) => r.keyPrefix === first.keyPrefix);

      // While the company is served, its pending revocation is not blocked.
      const before = await acctops(['--json', 'doctor']);
      expect(ours(parseJson<Report>(before))).toEqual([]);
      expect(parseJson<Report>(before).findings).not.toContain(blocked);

      const plain = await acctops([...keyOutputs, 'companies', 'remove', '--company', target.companyId], env);
      expect(plain.code).toBe(0);
      // Told at remove time: the schedule left behind by name, what it will do, and the way out (decision 113).
      const scheduleGroup = outputs.KeyRevocationScheduleGroup!;
      expect(plain.stderr.trim().split('\n')).toEqual([
        `acctops: warning: company ${target.companyId}: revocation schedule ${scheduleName} in ${scheduleGroup} (old key ${first.keyPrefix}…, still valid) ` +
          `fires at ${new Date(revokeAt).toISOString()} and fails (the company's key secret is scheduled for deletion), ` +
          'and its invocation lands in the dead-letter queue (the FailedInvocations alarm); the key stays valid: before it fires, ' +
          `\`acctops companies restore --company ${target.companyId}\`, then \`acctops companies remove --company ${target.companyId} --revoke-keys\` ` +
          '(revokes the key, deletes the schedule)',
      ]);
      expect(plain.stdout).toContain(`the old key(s) pending revocation ${first.keyPrefix}… (revocation due `);
      const doctor = await acctops(['--json', 'doctor']);
      expect(doctor.code).toBe(5);
      const report = parseJson<Report>(doctor);
      expect(report.findings).toContain(blocked);
      expect(ours(report)).toEqual([
        {
          keyPrefix: first.keyPrefix,
          outcome: `blocked (its schedule fires ${new Date(revokeAt).toISOString()} and fails)`,
          error: blocked,
          code: 'revocation_secret_deleted',
        },
      ]);
      const text = await acctops(['doctor']);
      expect(text.code).toBe(5);
      expect(text.stdout).toContain(`  old key ${first.keyPrefix}… pending revocation: blocked (its schedule fires `);
      expect(text.stdout).not.toContain('..');
      expect(scheduler.schedules().map((s) => s.Name)).toContain(scheduleName);

      // The way out the finding names: restore, then remove --revoke-keys, which also deletes the schedule.
      expect((await acctops([...keyOutputs, 'companies', 'restore', '--company', target.companyId])).code).toBe(0);
      const deletes = scheduler.calls.DeleteSchedule ?? 0;
      const removal = await acctops([...keyOutputs, '--json', 'companies', 'remove', '--company', target.companyId, '--revoke-keys'], env);
      expect(removal.code).toBe(0);
      expect(parseJson(removal)).toMatchObject({
        keys: {
          pending: [{ apiKeyId: first.apiKeyId }],
          revoked: [{ apiKeyId: first.apiKeyId, outcome: 'revoked' }, { apiKeyId: next.publicId }],
        },
      });
      expect(await world.statusWith(target.apiKey)).toMatchObject({ status: 401 });
      expect(scheduler.schedules().map((s) => s.Name)).not.toContain(scheduleName);
      expect(scheduler.calls.DeleteSchedule).toBe(deletes + 1);
      const after = parseJson<Report>(await acctops(['--json', 'doctor']));
      expect(ours(after)).toEqual([]);
      expect(after.findings).not.toContain(blocked);

      // Without the schedule group the section is skipped, saying why; the others still run.
      const group = outputs.KeyRevocationScheduleGroup!;
      delete outputs.KeyRevocationScheduleGroup;
      try {
        const unread = await acctops(['--json', 'doctor']);
        expect(parseJson<{ revokedKeys: { skipped: string } }>(unread).revokedKeys.skipped).toMatch(/KeyRevocationScheduleGroup/);
        expect((await acctops(['doctor'])).stdout).toMatch(/\n {2}pending revocations not checked: .*KeyRevocationScheduleGroup/);
      } finally {
        outputs.KeyRevocationScheduleGroup = group;
      }
    });

    it('remove --revoke-keys whose DeleteSchedule is refused removes nothing (exit 5, schedule_delete_failed) and leaves the current key valid; run again, it goes on', async () => {
      const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
      const { target, first, next, scheduleName } = await companyWithPendingRevocation('Schedule Denied GmbH');
      const status = async () =>
        parseJson<{ companies: { companyId: string; status: string }[] }>(await acctops(['--json', 'companies', 'list'])).companies.find(
          (c) => c.companyId === target.companyId,
        )?.status;
      const args = [...keyOutputs, '--json', 'companies', 'remove', '--company', target.companyId, '--revoke-keys'];

      scheduler.denied.add('DeleteSchedule');
      try {
        const refused = await acctops(args, env);
        expect(refused.code).toBe(5);
        expect(refused.stdout).toBe('');
        const error = (JSON.parse(refused.stderr) as { error: { code: string; message: string; hint: string } }).error;
        expect(error.code).toBe('schedule_delete_failed');
        expect(error.message).toContain(
          `company ${target.companyId}: the old keys pending revocation were revoked, but their revocation schedules could not all be deleted (`,
        );
        expect(error.message).toContain(`nothing was removed, and the current key ${next.prefix}… was not revoked`);
        expect(error.hint).toContain(`acctops companies remove --company ${target.companyId} --revoke-keys\` again`);
      } finally {
        scheduler.denied.delete('DeleteSchedule');
      }
      expect(await world.statusWith(target.apiKey)).toMatchObject({ status: 401 });
      expect(await world.statusWith(next.key)).toEqual({ status: 200 });
      expect(await status()).toBe('active');
      expect(scheduler.schedules().map((s) => s.Name)).toContain(scheduleName);

      const again = await acctops(args, env);
      expect(again.code).toBe(0);
      expect(parseJson(again)).toMatchObject({
        keys: {
          revoked: [
            { apiKeyId: first.apiKeyId, outcome: 'already_revoked' },
            { apiKeyId: next.publicId, outcome: 'revoked' },
          ],
        },
      });
      expect(await world.statusWith(next.key)).toMatchObject({ status: 401 });
      expect(await status()).toBe('removed');
      expect(scheduler.schedules().map((s) => s.Name)).not.toContain(scheduleName);
    });

    it('keys revoke-pending deletes the schedule of each key it revoked, so a plain remove after it leaves the doctor no false revocation_secret_deleted (decision 107)', async () => {
      const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
      lambdaAnswers.set(outputs.CheckHealthFunctionName!, () => ({
        body: { ok: true, checkedAt: '2026-11-02T09:00:00.000Z', probes: [] },
      }));
      lambdaAnswers.set(outputs.CheckKeyRotationsFunctionName!, () => ({ body: { checkedAt: 0, companies: 0, findings: [] } }));
      const { target, first, next, scheduleName } = await companyWithPendingRevocation('Early Revocation GmbH');
      const deletes = scheduler.calls.DeleteSchedule ?? 0;

      const revoked = await acctops([...keyOutputs, '--json', 'keys', 'revoke-pending', '--company', target.companyId], env);
      expect(revoked.code).toBe(0);
      expect(parseJson(revoked)).toMatchObject({
        keys: [{ apiKeyId: first.apiKeyId, keyPrefix: first.keyPrefix, outcome: 'revoked', error: null, scheduleError: null }],
      });
      expect(revoked.stderr).toBe('');
      expect(await world.statusWith(target.apiKey)).toMatchObject({ status: 401 });
      expect(await world.statusWith(next.key)).toEqual({ status: 200 });
      expect(scheduler.schedules().map((s) => s.Name)).not.toContain(scheduleName);
      expect(scheduler.calls.DeleteSchedule).toBe(deletes + 1);

      // The plain remove the runbook allows once the old keys are revoked: nothing is left to fire into its deleted secret.
      expect((await acctops([...keyOutputs, 'companies', 'remove', '--company', target.companyId], env)).code).toBe(0);
      const doctor = parseJson<{ findings: string[]; revokedKeys: { keyPrefix: string }[] }>(await acctops(['--json', 'doctor']));
      expect(doctor.revokedKeys.filter((r) => r.keyPrefix === first.keyPrefix)).toEqual([]);
      expect(doctor.findings.filter((f) => f.includes(first.keyPrefix) || f.includes(target.companyId))).toEqual([]);
    });

    it('keys revoke-pending whose DeleteSchedule is refused reports the key revoked and the schedule left, naming it and scheduler:DeleteSchedule (exit 5); run again, it deletes it', async () => {
      const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
      const { target, first, next, scheduleName } = await companyWithPendingRevocation('Early Schedule Denied GmbH');
      const args = [...keyOutputs, 'keys', 'revoke-pending', '--company', target.companyId, '--prefix', first.keyPrefix];
      type Row = {
        outcome: string;
        error: unknown;
        scheduleError: { code: string; message: string; exitCode: number; hint: string } | null;
      };

      scheduler.denied.add('DeleteSchedule');
      try {
        const refused = await acctops(['--json', ...args], env);
        expect(refused.code).toBe(5);
        // The revocation is not hidden: the report is on stdout, the row revoked, its schedule error beside it.
        const row = parseJson<{ keys: Row[] }>(refused).keys;
        expect(row).toMatchObject([{ outcome: 'revoked', error: null, scheduleError: { code: 'schedule_delete_failed', exitCode: 5 } }]);
        const error = (JSON.parse(refused.stderr) as { error: { code: string; keyPrefix: string; message: string; hint: string } }).error;
        expect(error).toEqual({ ...row[0]!.scheduleError, keyPrefix: first.keyPrefix });
        expect(error.message).toContain(
          `key ${first.keyPrefix}… was revoked, but its revocation schedule could not be deleted: the operator's credentials lack scheduler:DeleteSchedule on ${scheduleName} (`,
        );
        expect(error.message).toContain(`DeleteSchedule failed for ${scheduleName}`);
        expect(error.hint).toContain('scheduler:DeleteSchedule');
        expect(error.hint).toContain(`acctops keys revoke-pending --company ${target.companyId} --prefix ${first.keyPrefix}\``);
        expect(await world.statusWith(target.apiKey)).toMatchObject({ status: 401 });
        expect(scheduler.schedules().map((s) => s.Name)).toContain(scheduleName);

        // Repeated in text: already_revoked, the schedule still refused, said on stderr in one line.
        const text = await acctops(args, env);
        expect(text.code).toBe(5);
        expect(text.stdout).toContain(`  ${first.keyPrefix}…  already_revoked (its revocation schedule could NOT be deleted`);
        expect(text.stderr.trim().split('\n')).toEqual([
          expect.stringMatching(
            new RegExp(
              `^acctops: error: company ${target.companyId}: key ${first.keyPrefix}… was revoked already, but .*${scheduleName}.*scheduler:DeleteSchedule`,
            ),
          ),
        ]);
      } finally {
        scheduler.denied.delete('DeleteSchedule');
      }

      const again = await acctops(['--json', ...args], env);
      expect(again.code).toBe(0);
      expect(parseJson(again)).toMatchObject({ keys: [{ outcome: 'already_revoked', error: null, scheduleError: null }] });
      expect(scheduler.schedules().map((s) => s.Name)).not.toContain(scheduleName);
      expect(await world.statusWith(next.key)).toEqual({ status: 200 });
    });

    it('a plain remove after a refused DeleteSchedule says the key is revoked already and names the schedule left to fail, with the command that deletes it (decision 113)', async () => {
      const env = { ACCTOPS_BASE_URL: world.sandbox.baseUrl };
      const { target, first, scheduleName, revokeAt } = await companyWithPendingRevocation('Schedule Left GmbH');
      const group = outputs.KeyRevocationScheduleGroup!;
      scheduler.denied.add('DeleteSchedule');
      try {
        const refused = await acctops(
          [...keyOutputs, 'keys', 'revoke-pending', '--company', target.companyId, '--prefix', first.keyPrefix],
          env,
        );
        expect(refused.code).toBe(5);
      } finally {
        scheduler.denied.delete('DeleteSchedule');
      }
      expect(await world.statusWith(target.apiKey)).toMatchObject({ status: 401 });

      const removal = await acctops([...keyOutputs, '--json', 'companies', 'remove', '--company', target.companyId], env);
      expect(removal.code).toBe(0);
      const pending = parseJson<{ keys: { pending: { keyPrefix: string; schedule: unknown; revokedAt: string | null }[] } }>(removal).keys
        .pending;
      expect(pending).toEqual([
        expect.objectContaining({ keyPrefix: first.keyPrefix, schedule: { name: scheduleName, group }, revokedAt: expect.any(String) }),
      ]);
      expect(removal.stderr.trim().split('\n')).toEqual([
        `acctops: warning: company ${target.companyId}: revocation schedule ${scheduleName} in ${group} (old key ${first.keyPrefix}…, revoked already) ` +
          `fires at ${new Date(revokeAt).toISOString()} and fails (the company's key secret is scheduled for deletion), ` +
          'and its invocation lands in the dead-letter queue (the FailedInvocations alarm); ' +
          `delete it before then: \`aws scheduler delete-schedule --group-name ${group} --name ${scheduleName}\` (scheduler:DeleteSchedule)`,
      ]);
      expect(scheduler.schedules().map((s) => s.Name)).toContain(scheduleName);
    });
  });
});
