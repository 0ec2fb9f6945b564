import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { EventBridgePublisher } from './eventbridge-publisher';
import { DynamoDbRegistryTable } from './dynamodb-company-registry';
import { DynamoDbTokenStore } from './dynamodb-token-store';
import { LambdaFunctionInvoker } from './function-invoker';
import { EventBridgeRevocationScheduler } from './revocation-scheduler';
import { AwsSecretProvisioner } from './secret-provisioner';
import { AwsSecretStore } from './secrets-manager';
import { readStackOutputs } from './stack-outputs';
import { AwsSetupError, configuredRegion } from './aws-setup-error';

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

  /** Resolves the region and the credentials the clients would use, without calling a service. */
  async preflight(): Promise<{ region: string }> {
    const client = new CloudFormationClient(this.config);
    try {
      const region = await configuredRegion(client.config);
      try {
        await client.config.credentials();
      } catch (error) {
        throw new AwsSetupError(
          'no AWS credentials were found (environment, AWS_PROFILE, SSO, instance role)',
          'aws_credentials_missing',
          error,
        );
      }
      return { region };
    } finally {
      client.destroy();
    }
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

  /** CreateSecret, RotateSecret, CancelRotateSecret, DeleteSecret, RestoreSecret (`keys install`, `companies remove|restore`). */
  secretLifecycle(): AwsSecretProvisioner {
    return new AwsSecretProvisioner(this.config);
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
