import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { EventBridgePublisher } from './eventbridge-publisher';
import { DynamoDbRegistryTable } from './dynamodb-company-registry';
import { DynamoDbTokenStore } from './dynamodb-token-store';
import { LambdaFunctionInvoker } from './function-invoker';
import { EventBridgeRevocationScheduler } from './revocation-scheduler';
import { AwsSecretStore } from './secrets-manager';
import { readStackOutputs } from './stack-outputs';

/**
 * The AWS side of the `acctops` CLI's AWS mode, built on the default credential chain (profile,
 * SSO, environment) and the given region. Endpoints follow the SDK's own `AWS_ENDPOINT_URL_*`
 * variables, which is how tests point them at local fakes. Nothing here reads a secret unless a
 * command asks for it.
 */
export class OperatorClients {
  private readonly config: { region?: string };

  constructor(options: { region?: string } = {}) {
    this.config = options.region ? { region: options.region } : {};
  }

  stackOutputs(stackName: string): Promise<Record<string, string>> {
    return readStackOutputs(stackName, this.config);
  }

  functions(): LambdaFunctionInvoker {
    return new LambdaFunctionInvoker(this.config);
  }

  secrets(): AwsSecretStore {
    return new AwsSecretStore(this.config);
  }

  tokenStore(tableName: string): DynamoDbTokenStore {
    return new DynamoDbTokenStore({ client: new DynamoDBClient(this.config), tableName });
  }

  /** The company registry's table (`acctops companies`). */
  registryTable(tableName: string): DynamoDbRegistryTable {
    return new DynamoDbRegistryTable({ client: new DynamoDBClient(this.config), tableName });
  }

  /** Events to a bus (e.g. ExportRequested to the exports bus), with the given `source`. */
  events(eventBusName: string, source: string): EventBridgePublisher {
    return new EventBridgePublisher({ client: new EventBridgeClient(this.config), eventBusName, source });
  }

  /** The pending revocations of the schedule group (listing needs no target or role). */
  revocationScheduler(groupName: string): EventBridgeRevocationScheduler {
    return new EventBridgeRevocationScheduler({ groupName, client: this.config });
  }
}
