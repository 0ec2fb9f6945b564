import type { DynamoDbRegistryTable } from '../../src/adapters/aws/dynamodb-company-registry';
import { OperatorClients } from '../../src/adapters/aws/operator-clients';
import { CliConfigError } from '../errors';
import type { Session } from '../session';

/** The stack output that names the registry table (lib/constructs/company-registry.ts). */
export const REGISTRY_OUTPUT = 'CompanyRegistryTableName';

/**
 * The registry table of the named stack: `--output CompanyRegistryTableName=<table>` if given,
 * else the stack's output, as the token table is found for `users list`. Loaded only in AWS mode,
 * so local commands never load the DynamoDB client.
 */
export async function awsRegistryTable(session: Session): Promise<DynamoDbRegistryTable> {
  const region = session.flags.region ?? session.env.AWS_REGION ?? session.env.AWS_DEFAULT_REGION;
  const clients = new OperatorClients({ region });
  const override = (session.flags.output ?? []).find((pair) => pair.startsWith(`${REGISTRY_OUTPUT}=`));
  const tableName = override ? override.slice(REGISTRY_OUTPUT.length + 1) : (await clients.stackOutputs(session.stack!))[REGISTRY_OUTPUT];
  if (tableName === undefined) {
    throw new CliConfigError(
      `stack ${session.stack!} has no output ${REGISTRY_OUTPUT} (needed to read the company registry)`,
      `pass --output ${REGISTRY_OUTPUT}=<table>, or deploy a stack version that has the registry`,
    );
  }
  return clients.registryTable(tableName);
}
