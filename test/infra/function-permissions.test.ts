import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { IConstruct } from 'constructs';
import { EXPORT_LAYOUT } from '../../contract/exports';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { EventBridgeRevocationScheduler } from '../../src/adapters/aws/revocation-scheduler';
import { COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY, companyKeySecretName } from '../../src/core/api-keys/key-directory';
import { synthAcctopsStack } from '../helpers/cdk';
import { sdkCallsOfHandlers, type FunctionSdkCalls, type SdkCommand } from '../helpers/sdk-call-graph';

/**
 * Every AWS call a function's code can make is granted to its role, on that resource, and nothing
 * more is (decisions 64 and 69 in docs/architecture.md). onboard-user once lacked
 * dynamodb:UpdateItem on its documented path back for a user in needs_attention (a lease, an
 * update, a release): a role short of an action its code needs shows only in AWS, as
 * AccessDenied; a role with an action nothing sends breaks least privilege. The calls are derived
 * from the code (test/helpers/sdk-call-graph.ts), not listed by hand; what is listed here is how a
 * command becomes IAM actions (AWS's Service Authorization Reference) and which resource each
 * adapter module sends to, by the variable that names it.
 *
 * Checked both ways, action and resource (and condition): dynamodb, secretsmanager, s3, sqs,
 * events, scheduler and iam. Not derived from calls, so not checked here: logs (the function's own
 * log group, AcctopsFunction) and kms. Which KMS actions a call through DynamoDB, SQS, S3 or
 * Secrets Manager makes on the caller's behalf is documented per service, not per operation
 * (multipart uploads need kms:Decrypt; a DynamoDB read of a CMK table, kms:Decrypt), so the key
 * grants stay with the bind* access levels that make them, on the resource's own key and through
 * its service (kms:ViaService), and with test/security/iam-matrix.test.ts.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const ADAPTERS = 'src/adapters/aws';
const STAGE = 'test';
const IMPORTED_SECRET_ARN = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acctops/imported-key-AbCdEf';

/** The table each DynamoDB adapter module sends its commands to, by the variable that names it. */
const ADAPTER_TABLES: Record<string, string> = {
  [`${ADAPTERS}/dynamodb-token-store.ts`]: 'TOKEN_TABLE_NAME',
  [`${ADAPTERS}/dynamodb-token-reader.ts`]: 'TOKEN_TABLE_NAME',
  [`${ADAPTERS}/dynamodb-run-ledger.ts`]: 'EXPORT_RUNS_TABLE_NAME',
  [`${ADAPTERS}/dynamodb-company-registry.ts`]: 'COMPANY_REGISTRY_TABLE_NAME',
  [`${ADAPTERS}/dynamodb-registry-entry.ts`]: 'COMPANY_REGISTRY_TABLE_NAME',
  [`${ADAPTERS}/dynamodb-rotation-check-index.ts`]: 'COMPANY_REGISTRY_TABLE_NAME',
  [`${ADAPTERS}/dynamodb-replay-guard.ts`]: 'WEBHOOK_REPLAY_TABLE_NAME',
};

/** The queue each SQS adapter module sends to, by the variable that names it (its runtime reads it). */
const ADAPTER_QUEUES: Record<string, string> = {
  [`${ADAPTERS}/sqs-export-queue.ts`]: 'EXPORT_QUEUE_URL',
  [`${ADAPTERS}/sqs-refresh-queue.ts`]: 'REFRESH_QUEUE_URL',
  [`${ADAPTERS}/sqs-rotation-check-queue.ts`]: 'ROTATION_CHECK_QUEUE_URL',
};

/** The bucket of the one S3 adapter a function builds (export-runtime-s3.ts), by its variable. */
const ADAPTER_BUCKETS: Record<string, string> = {
  [`${ADAPTERS}/s3-object-store.ts`]: 'EXPORT_BUCKET_NAME',
};

/** The schedule group of the Scheduler adapter, and the role its schedules run as (Target.RoleArn). */
const ADAPTER_SCHEDULES: Record<string, { group: string; role: string }> = {
  [`${ADAPTERS}/revocation-scheduler.ts`]: { group: 'REVOCATION_SCHEDULE_GROUP', role: 'REVOCATION_SCHEDULER_ROLE_ARN' },
};

/**
 * Which secret a Secrets Manager call reaches is data (an ARN from a variable, a name found by
 * tag), which a call graph does not follow; the code on the call's path tells the uses apart.
 * Company key secrets are named by no variable: found by tag (ListSecrets), or named by the
 * rotation event or the revocation, all in this code. A call on a path through it is on them;
 * any other is on the one secret the function's variables name (two would fail as ambiguous).
 */
const COMPANY_KEY_CODE = 'src/core/api-keys/';

/** The IAM action of a DynamoDB command: the document client's names, then the low-level client's. */
const DOCUMENT_COMMANDS: Record<string, string> = {
  GetCommand: 'GetItem',
  PutCommand: 'PutItem',
  UpdateCommand: 'UpdateItem',
  DeleteCommand: 'DeleteItem',
  QueryCommand: 'Query',
  ScanCommand: 'Scan',
  BatchGetCommand: 'BatchGetItem',
  BatchWriteCommand: 'BatchWriteItem',
  TransactGetCommand: 'TransactGetItems',
  TransactWriteCommand: 'TransactWriteItems',
};
const DYNAMODB_PACKAGES = ['@aws-sdk/lib-dynamodb', '@aws-sdk/client-dynamodb'];

function dynamoAction(sdkPackage: string, command: string): string {
  const name = sdkPackage === '@aws-sdk/lib-dynamodb' ? DOCUMENT_COMMANDS[command] : command.replace(/Command$/, '');
  if (!name) throw new Error(`${sdkPackage} ${command}: add its IAM action to DOCUMENT_COMMANDS`);
  return `dynamodb:${name}`;
}

/**
 * The IAM actions each command needs: AWS's Service Authorization Reference, the "API operations"
 * and "Actions" tables of
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssecretsmanager.html,
 * list_amazons3.html, list_amazonsqs.html, list_amazoneventbridge.html and
 * list_amazoneventbridgescheduler.html. Listed one by one, never guessed from the name: a command
 * not here fails the test until someone looks it up.
 */
const COMMAND_ACTIONS: Record<string, Record<string, readonly string[]>> = {
  '@aws-sdk/client-secrets-manager': {
    GetSecretValueCommand: ['secretsmanager:GetSecretValue'],
    PutSecretValueCommand: ['secretsmanager:PutSecretValue'],
    DescribeSecretCommand: ['secretsmanager:DescribeSecret'],
    UpdateSecretVersionStageCommand: ['secretsmanager:UpdateSecretVersionStage'],
    ListSecretVersionIdsCommand: ['secretsmanager:ListSecretVersionIds'],
    ListSecretsCommand: ['secretsmanager:ListSecrets'],
  },
  '@aws-sdk/client-s3': {
    PutObjectCommand: ['s3:PutObject'],
    // A multipart upload is authorized as PutObject at every step but the abort.
    CreateMultipartUploadCommand: ['s3:PutObject'],
    UploadPartCommand: ['s3:PutObject'],
    CompleteMultipartUploadCommand: ['s3:PutObject'],
    AbortMultipartUploadCommand: ['s3:AbortMultipartUpload'],
    // S3 answers a missing key with NoSuchKey (GetObject) or NotFound (HeadObject), which the object
    // store reads as "absent", only to a caller that may also ListBucket the bucket; anyone else
    // gets 403 AccessDenied (S3 API Reference, GetObject and HeadObject, "Permissions"). S3 judges
    // that ListBucket with the key as s3:prefix, so a prefix-conditioned grant answers 404 under it.
    GetObjectCommand: ['s3:GetObject', 's3:ListBucket'],
    HeadObjectCommand: ['s3:GetObject', 's3:ListBucket'],
    ListObjectsV2Command: ['s3:ListBucket'],
    DeleteObjectsCommand: ['s3:DeleteObject'],
  },
  '@aws-sdk/client-sqs': {
    SendMessageCommand: ['sqs:SendMessage'],
    // Batch actions are authorized as their single action.
    SendMessageBatchCommand: ['sqs:SendMessage'],
  },
  '@aws-sdk/client-eventbridge': {
    PutEventsCommand: ['events:PutEvents'],
  },
  '@aws-sdk/client-scheduler': {
    // A schedule with a target role needs iam:PassRole of that role (the dependent action of both).
    CreateScheduleCommand: ['scheduler:CreateSchedule', 'iam:PassRole'],
    UpdateScheduleCommand: ['scheduler:UpdateSchedule', 'iam:PassRole'],
    GetScheduleCommand: ['scheduler:GetSchedule'],
    ListSchedulesCommand: ['scheduler:ListSchedules'],
  },
};

/** Actions the Service Authorization Reference gives no resource type: their statement says `*`. */
const UNSCOPED_ACTIONS = new Set(['secretsmanager:ListSecrets', 'scheduler:ListSchedules']);

/**
 * What Lambda itself does with the function's role (not its code): the Lambda Developer Guide's
 * "Execution role permissions" of an Amazon SQS event source (with-sqs.html) name ReceiveMessage,
 * DeleteMessage and GetQueueAttributes; an asynchronous invocation's destination or dead-letter
 * queue needs SendMessage (invocation-async-retain-records.html).
 */
const EVENT_SOURCE_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];
const DESTINATION_ACTIONS = ['sqs:SendMessage'];

/** Action prefixes held to the calls here; the others a role may hold, and why not here. */
const CHECKED = ['dynamodb', 'secretsmanager', 's3', 'sqs', 'events', 'scheduler', 'iam'];
const NOT_DERIVED = ['logs', 'kms'];

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Json = Record<string, unknown>;
interface TemplateResource {
  Type: string;
  Properties?: Json;
}
interface Statement {
  Effect: string;
  Action?: string | string[];
  NotAction?: unknown;
  Resource?: unknown;
  NotResource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** An intrinsic as text: `${Id}` for a Ref, `${Id.Arn}` for an attribute, joins joined. */
function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(text).join(',');
  const v = value as Json;
  if (v && typeof v === 'object') {
    if ('Ref' in v) return `\${${String(v.Ref)}}`;
    if ('Fn::GetAtt' in v) return `\${${(v['Fn::GetAtt'] as string[]).join('.')}}`;
    if ('Fn::Join' in v) {
      const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
      return parts.map(text).join(separator);
    }
  }
  return JSON.stringify(value);
}

/** ` if StringEquals key=value; …`, keys and values sorted: a grant's conditions are part of what it allows. */
function conditionText(condition: Statement['Condition']): string {
  const parts = Object.entries(condition ?? {})
    .flatMap(([operator, keys]) =>
      Object.entries(keys).map(
        ([key, values]) =>
          `${operator} ${key}=${list(values as unknown)
            .map(text)
            .sort()
            .join(',')}`,
      ),
    )
    .sort();
  return parts.length > 0 ? ` if ${parts.join('; ')}` : '';
}

const accountArn = (service: string, resource: string) =>
  `arn:\${AWS::Partition}:${service}:\${AWS::Region}:\${AWS::AccountId}:${resource}`;

/** The name of the schedules the scheduler makes, and the role it puts in them, as its code does it. */
async function revocationScheduleShape(): Promise<{ namePrefix: string; passesRole: boolean }> {
  const client = new SchedulerClient({ region: 'eu-central-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const sent: { input: { Name?: string; Target?: { RoleArn?: string } } }[] = [];
  jest.spyOn(client, 'send').mockImplementation(((command: (typeof sent)[number]) => {
    sent.push(command);
    return Promise.resolve({});
  }) as never);
  const apiKeyId = '5a0c1f2e-3d4b-4a6c-8e7f-9a0b1c2d3e4f';
  await new EventBridgeRevocationScheduler({ client, groupName: 'group', targetArn: 'arn:target', roleArn: 'arn:role' }).schedule({
    secretId: 'secret',
    companyId: 'c0ffee00-0000-4000-8000-000000000001',
    apiKeyId,
    keyPrefix: 'sbx_AbCdEfGh',
    revokeAt: 0,
    rotationToken: 'token',
  });
  const input = sent[0]!.input;
  if (!input.Name?.endsWith(apiKeyId)) throw new Error(`a schedule's name no longer ends in its key id: ${input.Name}`);
  return { namePrefix: input.Name.slice(0, -apiKeyId.length), passesRole: input.Target?.RoleArn === 'arn:role' };
}

describe('function roles against the calls of their code', () => {
  const { stack, template } = synthAcctopsStack({
    companies: [
      { companyId: 'c0ffee00-0000-4000-8000-000000000001' },
      { companyId: 'c0ffee00-0000-4000-8000-000000000002', existingSecretArn: IMPORTED_SECRET_ARN },
    ],
  });
  const resources = template.toJSON().Resources as Record<string, TemplateResource>;
  const functions = stack.node.findAll().filter((c): c is AcctopsFunction => c instanceof AcctopsFunction);
  const tableIds = new Set(Object.keys(template.findResources('AWS::DynamoDB::Table')));
  let calls: Map<string, FunctionSdkCalls>;
  let schedules: { namePrefix: string; passesRole: boolean };

  beforeAll(async () => {
    calls = sdkCallsOfHandlers(functions.map((fn) => fn.handlerDir));
    schedules = await revocationScheduleShape();
  }, 180_000);

  const commandsOf = (fn: AcctopsFunction): SdkCommand[] => calls.get(fn.handlerDir)!.commands;
  const functionResource = (fn: AcctopsFunction) => resources[logicalId(fn)]!;
  const variables = (fn: AcctopsFunction) =>
    ((functionResource(fn).Properties!.Environment as { Variables?: Json } | undefined)?.Variables ?? {}) as Json;

  /** Every statement of a role: its attached policies, and inline or managed ones (none, asserted). */
  const statementsOf = (roleId: string): Statement[] =>
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy')
      .filter((r) => list(r.Properties?.Roles as { Ref: string }[]).some((role) => role.Ref === roleId))
      .flatMap((r) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement);

  /** The resource a variable names (by reference, or by its name), by its logical id, if it is of that type. */
  const named = (fn: AcctopsFunction, variable: string, type: string): string => {
    const value = variables(fn)[variable] as string | { Ref?: string; 'Fn::GetAtt'?: string[] } | undefined;
    const id =
      typeof value === 'string'
        ? Object.keys(resources).find((key) => resources[key]!.Type === type && resources[key]!.Properties?.Name === value)
        : (value?.Ref ?? value?.['Fn::GetAtt']?.[0]);
    if (id === undefined || resources[id]?.Type !== type) {
      throw new Error(`${fn.handlerDir}'s code uses ${variable}, which does not name an ${type} in its environment`);
    }
    return id;
  };

  /** The one variable of the function that names a resource of `type` (for adapters one runtime builds per bus or secret). */
  const theVariableOf = (fn: AcctopsFunction, type: string, orDefaultBus = false): string => {
    const matching = Object.entries(variables(fn)).filter(([name, value]) => {
      const ref = (value as { Ref?: string }).Ref;
      if (ref !== undefined) return resources[ref]?.Type === type;
      // The account's default bus is not in the template: a bus variable names it by name.
      return orDefaultBus && value === 'default' && name.endsWith('EVENT_BUS_NAME');
    });
    if (matching.length !== 1) {
      throw new Error(`${fn.handlerDir}: ${matching.length} variables name an ${type}; its calls' resource is ambiguous`);
    }
    return matching[0]![0];
  };

  const companyKeySecrets = (action: string): string[] =>
    [
      accountArn('secretsmanager', `secret:acctops/${STAGE}/company/*`) +
        conditionText({
          StringEquals: {
            [`aws:ResourceTag/${COMPANY_KEY_TAGS.stage}`]: STAGE,
            [`aws:ResourceTag/${COMPANY_KEY_TAGS.purpose}`]: PURPOSE_COMPANY_KEY,
          },
        }),
      // An imported secret (cdk.json existingSecretArn) has its own name and perhaps no tags: by its ARN.
      IMPORTED_SECRET_ARN,
    ].map((resource) => `${action} ${resource}`);

  /** `<action> <resource><conditions>` for one IAM action of a command the function's code can send. */
  const resourcesOf = (fn: AcctopsFunction, command: SdkCommand, action: string): string[] => {
    if (UNSCOPED_ACTIONS.has(action)) return [`${action} *`];
    const service = action.split(':')[0];
    if (service === 'secretsmanager') {
      if (command.callers.some((file) => file.startsWith(COMPANY_KEY_CODE))) return companyKeySecrets(action);
      const secret = named(fn, theVariableOf(fn, 'AWS::SecretsManager::Secret'), 'AWS::SecretsManager::Secret');
      return [`${action} \${${secret}}`];
    }
    if (service === 's3') {
      const variable = ADAPTER_BUCKETS[command.file];
      if (!variable) throw new Error(`${command.file} sends ${command.command}: add its bucket to ADAPTER_BUCKETS`);
      const bucket = named(fn, variable, 'AWS::S3::Bucket');
      // Every key is made under the layout's root (contract/exports.ts), so grants stop there.
      const objects = `${EXPORT_LAYOUT.root}/*`;
      if (action === 's3:ListBucket') return [`${action} \${${bucket}.Arn}${conditionText({ StringLike: { 's3:prefix': objects } })}`];
      return [`${action} \${${bucket}.Arn}/${objects}`];
    }
    if (service === 'sqs') {
      const variable = ADAPTER_QUEUES[command.file];
      if (!variable) throw new Error(`${command.file} sends ${command.command}: add its queue to ADAPTER_QUEUES`);
      return [`${action} \${${named(fn, variable, 'AWS::SQS::Queue')}.Arn}`];
    }
    if (service === 'events') {
      const variable = theVariableOf(fn, 'AWS::Events::EventBus', true);
      if (variables(fn)[variable] === 'default') return [`${action} ${accountArn('events', 'event-bus/default')}`];
      return [`${action} \${${named(fn, variable, 'AWS::Events::EventBus')}.Arn}`];
    }
    const scheduler = ADAPTER_SCHEDULES[command.file];
    if (!scheduler) throw new Error(`${command.file} sends ${command.command}: add its schedule group to ADAPTER_SCHEDULES`);
    if (action === 'iam:PassRole') {
      if (!schedules.passesRole) return [];
      const role = named(fn, scheduler.role, 'AWS::IAM::Role');
      return [`${action} \${${role}.Arn}${conditionText({ StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } })}`];
    }
    named(fn, scheduler.group, 'AWS::Scheduler::ScheduleGroup');
    const group = text(variables(fn)[scheduler.group]);
    return [`${action} ${accountArn('scheduler', `schedule/${group}/${schedules.namePrefix}*`)}`];
  };

  /** What Lambda does with the role: poll the queues that invoke it, send failed invocations on. */
  const lambdaNeeds = (fn: AcctopsFunction): string[] => {
    const id = logicalId(fn);
    const queueArn = (arn: unknown, where: string): string => {
      const queue = (arn as { 'Fn::GetAtt'?: string[] })['Fn::GetAtt']?.[0];
      if (queue === undefined || resources[queue]?.Type !== 'AWS::SQS::Queue') throw new Error(`${fn.handlerDir}: ${where} is not a queue`);
      return text(arn);
    };
    const ofFunction = (r: TemplateResource) => (r.Properties?.FunctionName as { Ref?: string } | undefined)?.Ref === id;
    const sources = Object.values(resources)
      .filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && ofFunction(r))
      .flatMap((r) => EVENT_SOURCE_ACTIONS.map((a) => `${a} ${queueArn(r.Properties!.EventSourceArn, 'an event source')}`));
    const deadLetter = (functionResource(fn).Properties!.DeadLetterConfig as { TargetArn?: unknown } | undefined)?.TargetArn;
    const destinations = Object.values(resources)
      .filter((r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && ofFunction(r))
      .flatMap((r) =>
        Object.values((r.Properties!.DestinationConfig ?? {}) as Record<string, { Destination: unknown }>).map((d) => d.Destination),
      )
      .concat(deadLetter === undefined ? [] : [deadLetter])
      .flatMap((arn) => DESTINATION_ACTIONS.map((a) => `${a} ${queueArn(arn, 'a destination')}`));
    return [...sources, ...destinations];
  };

  /** `<function> <action> <resource><conditions>` for everything the function's code and Lambda need of `services`. */
  const derived = (fn: AcctopsFunction, services: readonly string[]): string[] => {
    const fromCode = commandsOf(fn)
      .filter((c) => !DYNAMODB_PACKAGES.includes(c.sdkPackage))
      .flatMap((c) => {
        const actions = COMMAND_ACTIONS[c.sdkPackage]?.[c.command];
        if (!actions) throw new Error(`${c.sdkPackage} ${c.command} (${c.file}): add its IAM actions to COMMAND_ACTIONS`);
        return actions.flatMap((action) => resourcesOf(fn, c, action));
      });
    return [...new Set([...fromCode, ...lambdaNeeds(fn)])]
      .filter((grant) => services.includes(grant.split(':')[0]!))
      .map((grant) => `${fn.handlerDir} ${grant}`)
      .sort();
  };

  /** `<function> <action> <resource><conditions>` for every action of `services` its role allows. */
  const granted = (fn: AcctopsFunction, services: readonly string[]): string[] => {
    const grants = statementsOf(logicalId(fn.executionRole)).flatMap((s) => {
      if (s.Effect !== 'Allow' || s.NotAction !== undefined || s.NotResource !== undefined) {
        throw new Error(`${fn.handlerDir}: a statement this test cannot read: ${JSON.stringify(s)}`);
      }
      return list(s.Action)
        .filter((a) => services.includes(a.split(':')[0]!))
        .flatMap((a) => list(s.Resource).map((r) => `${fn.handlerDir} ${a} ${text(r)}${conditionText(s.Condition)}`));
    });
    return [...new Set(grants)].sort();
  };

  describe('DynamoDB', () => {
    /** `<function> dynamodb:<Action> <VARIABLE>` for every call its code can make. */
    const derivedDynamo = (fn: AcctopsFunction): string[] =>
      [
        ...new Set(
          commandsOf(fn)
            .filter((c) => DYNAMODB_PACKAGES.includes(c.sdkPackage))
            .map((c) => {
              const table = ADAPTER_TABLES[c.file];
              if (!table) throw new Error(`${c.file} sends ${c.command}: add its table to ADAPTER_TABLES`);
              return `${fn.handlerDir} ${dynamoAction(c.sdkPackage, c.command)} ${table}`;
            }),
        ),
      ].sort();

    /** The table logical id each of the function's variables names (a `Ref` in its environment). */
    const tableVariables = (fn: AcctopsFunction): Map<string, string> =>
      new Map(
        Object.entries(variables(fn)).flatMap(([name, value]) => {
          const ref = (value as { Ref?: string }).Ref;
          return ref !== undefined && tableIds.has(ref) ? [[name, ref] as [string, string]] : [];
        }),
      );

    /**
     * `<function> dynamodb:<Action> <VARIABLE>` for every grant of its role on a table it names (or an
     * index of it); a grant on anything else keeps its resource, so that it shows as unused.
     */
    const grantedDynamo = (fn: AcctopsFunction): string[] => {
      const tables = [...tableVariables(fn)];
      const grants = statementsOf(logicalId(fn.executionRole)).flatMap((s) =>
        list(s.Action)
          .filter((a) => a.startsWith('dynamodb:'))
          .flatMap((action) =>
            list(s.Resource).map((resource) => {
              const variable = tables.find(([, table]) => JSON.stringify(resource).includes(`"${table}"`))?.[0];
              return `${fn.handlerDir} ${action} ${variable ?? text(resource)}`;
            }),
          ),
      );
      return [...new Set(grants)].sort();
    };

    it('knows the table of every adapter module that makes a DynamoDB command, and of no other', () => {
      const makers = readdirSync(path.join(ROOT, ADAPTERS))
        .map((file) => `${ADAPTERS}/${file}`)
        .filter((file) => {
          const text = readFileSync(path.join(ROOT, file), 'utf8');
          return /from '@aws-sdk\/(lib|client)-dynamodb'/.test(text) && /new \w+Command\(/.test(text);
        })
        .sort();
      expect(makers).toEqual(Object.keys(ADAPTER_TABLES).sort());
    });

    it('derives calls from the code: the token functions, as their use cases are written', () => {
      // Not vacuous: the derivation finds the lease updates of onboard's path back and the
      // planner's query, and no write in the planner.
      expect(derivedDynamo(functions.find((f) => f.handlerDir === 'onboard-user')!)).toEqual([
        'onboard-user dynamodb:GetItem TOKEN_TABLE_NAME',
        'onboard-user dynamodb:PutItem TOKEN_TABLE_NAME',
        'onboard-user dynamodb:UpdateItem TOKEN_TABLE_NAME',
      ]);
      expect(derivedDynamo(functions.find((f) => f.handlerDir === 'plan-token-refresh')!)).toEqual([
        'plan-token-refresh dynamodb:Query TOKEN_TABLE_NAME',
      ]);
    });

    it('grants every function each DynamoDB action its code can send, on that table', () => {
      const missing = functions.flatMap((fn) => {
        const grants = new Set(grantedDynamo(fn));
        return derivedDynamo(fn).filter((call) => !grants.has(call));
      });
      expect(missing).toEqual([]);
    });

    it('grants no function a DynamoDB action its code never sends, nor one on a table it does not name', () => {
      const unused = functions.flatMap((fn) => {
        const calls = new Set(derivedDynamo(fn));
        return grantedDynamo(fn).filter((grant) => !calls.has(grant));
      });
      expect(unused).toEqual([]);
    });
  });

  describe('Secrets Manager, S3, SQS, EventBridge, Scheduler and iam:PassRole', () => {
    const SERVICES = CHECKED.filter((s) => s !== 'dynamodb');
    const of = (name: string) => functions.find((f) => f.handlerDir === name)!;

    it('holds every function role in policies this test reads: no inline or managed policy, only the services it knows', () => {
      const roles = functions.map((fn) => resources[logicalId(fn.executionRole)]!);
      expect(
        roles.flatMap((r) => [...list(r.Properties?.Policies as unknown[]), ...list(r.Properties?.ManagedPolicyArns as unknown[])]),
      ).toEqual([]);
      const prefixes = new Set(
        functions.flatMap((fn) => statementsOf(logicalId(fn.executionRole)).flatMap((s) => list(s.Action).map((a) => a.split(':')[0]!))),
      );
      expect([...prefixes].filter((p) => !CHECKED.includes(p) && !NOT_DERIVED.includes(p))).toEqual([]);
    });

    it('names variables the adapters read, and modules that make the commands functions send', () => {
      const adapterSource = readdirSync(path.join(ROOT, ADAPTERS))
        .map((file) => readFileSync(path.join(ROOT, ADAPTERS, file), 'utf8'))
        .join('\n');
      const listedVariables = [
        ...Object.values(ADAPTER_TABLES),
        ...Object.values(ADAPTER_QUEUES),
        ...Object.values(ADAPTER_BUCKETS),
        ...Object.values(ADAPTER_SCHEDULES).flatMap((s) => [s.group, s.role]),
      ];
      expect(
        listedVariables.filter((variable) => !adapterSource.includes(`'${variable}'`) && !adapterSource.includes(`${variable}:`)),
      ).toEqual([]);
      const makers = new Set(functions.flatMap((fn) => commandsOf(fn).map((c) => c.file)));
      const listed = [...Object.keys(ADAPTER_QUEUES), ...Object.keys(ADAPTER_BUCKETS), ...Object.keys(ADAPTER_SCHEDULES)];
      expect(listed.filter((file) => !makers.has(file))).toEqual([]);
    });

    it('derives calls from the code: the exporter’s S3 calls, the doctor’s company keys, the rotation’s schedules and role', () => {
      // Not vacuous: multipart and HeadObject become PutObject and GetObject, ListObjectsV2 the
      // prefix-limited ListBucket, DeleteObjects DeleteObject; the company keys are the tagged
      // name pattern and the imported ARN; CreateSchedule passes the schedules' role.
      const bucket = logicalId(stack.exports.bucket);
      expect(derived(of('export-period'), ['s3'])).toEqual(
        [
          `export-period s3:AbortMultipartUpload \${${bucket}.Arn}/exports/*`,
          `export-period s3:DeleteObject \${${bucket}.Arn}/exports/*`,
          `export-period s3:GetObject \${${bucket}.Arn}/exports/*`,
          `export-period s3:ListBucket \${${bucket}.Arn} if StringLike s3:prefix=exports/*`,
          `export-period s3:PutObject \${${bucket}.Arn}/exports/*`,
        ].sort(),
      );
      expect(derived(of('check-key-rotations'), ['secretsmanager']).filter((g) => g.includes('GetSecretValue'))).toEqual(
        companyKeySecrets('secretsmanager:GetSecretValue')
          .map((g) => `check-key-rotations ${g}`)
          .sort(),
      );
      expect(companyKeySecretName(STAGE, 'c0ffee00-0000-4000-8000-000000000001')).toMatch(new RegExp(`^acctops/${STAGE}/company/`));
      expect(derived(of('check-health'), ['secretsmanager'])).toEqual([
        `check-health secretsmanager:GetSecretValue \${${logicalId(stack.institutionSecret)}}`,
      ]);
      const passRole = derived(of('rotate-api-key'), ['iam']);
      expect(passRole).toEqual([
        `rotate-api-key iam:PassRole \${${logicalId(stack.keyRotation.revocationSchedulerRole)}.Arn} if StringEquals iam:PassedToService=scheduler.amazonaws.com`,
      ]);
      expect(schedules.namePrefix).toBe('revoke-');
      expect(derived(of('refresh-tokens'), ['sqs'])).toEqual(
        EVENT_SOURCE_ACTIONS.map((a) => `refresh-tokens ${a} \${${logicalId(stack.tokens.queue)}.Arn}`).sort(),
      );
    });

    it('grants every function each action its code (and Lambda for it) needs, on that resource', () => {
      const missing = functions.flatMap((fn) => {
        const grants = new Set(granted(fn, SERVICES));
        return derived(fn, SERVICES).filter((call) => !grants.has(call));
      });
      expect(missing).toEqual([]);
    });

    it('grants no function an action nothing sends, nor one on another resource or under other conditions', () => {
      const unused = functions.flatMap((fn) => {
        const needs = new Set(derived(fn, SERVICES));
        return granted(fn, SERVICES).filter((grant) => !needs.has(grant));
      });
      expect(unused).toEqual([]);
    });
  });
});
