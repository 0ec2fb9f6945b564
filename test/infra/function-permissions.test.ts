import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { roleStatements, synthAcctopsStack } from '../helpers/cdk';
import { sdkCallsOfHandlers, type FunctionSdkCalls } from '../helpers/sdk-call-graph';

/**
 * Every DynamoDB call a function's code can make is granted to its role, on that table, and
 * nothing more is. onboard-user once lacked dynamodb:UpdateItem on its documented path back for a
 * user in needs_attention (a lease, an update, a release): a role short of an action its code
 * needs shows only in AWS, as AccessDenied. The calls are derived from the code
 * (test/helpers/sdk-call-graph.ts), not listed by hand; what is listed here is which table each
 * DynamoDB adapter writes to, checked against the adapters' source.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const ADAPTERS = 'src/adapters/aws';

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

const logicalId = (construct: IConstruct) => {
  const element = construct.node.defaultChild as CfnElement;
  return element.stack.getLogicalId(element);
};

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

describe('function roles against the DynamoDB calls of their code', () => {
  const { stack, template } = synthAcctopsStack({ companies: [{ companyId: 'c0ffee00-0000-4000-8000-000000000001' }] });
  const functions = stack.node.findAll().filter((c): c is AcctopsFunction => c instanceof AcctopsFunction);
  const tableIds = new Set(Object.keys(template.findResources('AWS::DynamoDB::Table')));
  let calls: Map<string, FunctionSdkCalls>;

  beforeAll(() => {
    calls = sdkCallsOfHandlers(functions.map((fn) => fn.handlerDir));
  }, 180_000);

  /** `<function> dynamodb:<Action> <VARIABLE>` for every call its code can make. */
  const derived = (fn: AcctopsFunction): string[] =>
    [
      ...new Set(
        calls
          .get(fn.handlerDir)!
          .commands.filter((c) => DYNAMODB_PACKAGES.includes(c.sdkPackage))
          .map((c) => {
            const table = ADAPTER_TABLES[c.file];
            if (!table) throw new Error(`${c.file} sends ${c.command}: add its table to ADAPTER_TABLES`);
            return `${fn.handlerDir} ${dynamoAction(c.sdkPackage, c.command)} ${table}`;
          }),
      ),
    ].sort();

  /** The table logical id each of the function's variables names (a `Ref` in its environment). */
  const tableVariables = (fn: AcctopsFunction): Map<string, string> => {
    const resource = template.findResources('AWS::Lambda::Function')[logicalId(fn)]!;
    const variables = (resource.Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
    return new Map(
      Object.entries(variables).flatMap(([name, value]) => {
        const ref = (value as { Ref?: string }).Ref;
        return ref !== undefined && tableIds.has(ref) ? [[name, ref] as [string, string]] : [];
      }),
    );
  };

  /** `<function> dynamodb:<Action> <VARIABLE>` for every grant of its role on a table it names (or an index of it). */
  const granted = (fn: AcctopsFunction): string[] => {
    const variables = tableVariables(fn);
    const statements = roleStatements(template, logicalId(fn.executionRole)) as Statement[];
    const grants = statements
      .filter((s) => s.Effect === 'Allow')
      .flatMap((s) =>
        [s.Action]
          .flat()
          .filter((a) => a.startsWith('dynamodb:'))
          .flatMap((action) =>
            [...variables]
              .filter(([, table]) => JSON.stringify(s.Resource).includes(`"${table}"`))
              .map(([name]) => `${fn.handlerDir} ${action} ${name}`),
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
    expect(derived(functions.find((f) => f.handlerDir === 'onboard-user')!)).toEqual([
      'onboard-user dynamodb:GetItem TOKEN_TABLE_NAME',
      'onboard-user dynamodb:PutItem TOKEN_TABLE_NAME',
      'onboard-user dynamodb:UpdateItem TOKEN_TABLE_NAME',
    ]);
    expect(derived(functions.find((f) => f.handlerDir === 'plan-token-refresh')!)).toEqual([
      'plan-token-refresh dynamodb:Query TOKEN_TABLE_NAME',
    ]);
  });

  it('grants every function each DynamoDB action its code can send, on that table', () => {
    const missing = functions.flatMap((fn) => {
      const grants = new Set(granted(fn));
      return derived(fn).filter((call) => !grants.has(call));
    });
    expect(missing).toEqual([]);
  });

  it('grants no function a DynamoDB action its code never sends', () => {
    const unused = functions.flatMap((fn) => {
      const calls = new Set(derived(fn));
      return granted(fn).filter((grant) => !calls.has(grant));
    });
    expect(unused).toEqual([]);
  });
});
