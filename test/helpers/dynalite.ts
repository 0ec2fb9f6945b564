import dynalite from 'dynalite';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localClientConfig } from './aws-credentials';
import { closeServer, listenOnLoopback } from './loopback';

export interface LocalDynamo {
  endpoint: string;
  client(): DynamoDBClient;
  stop(): Promise<void>;
}

/** Starts an in-memory dynalite on an ephemeral port. Tables become ACTIVE at once. */
export async function startDynamo(): Promise<LocalDynamo> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const endpoint = await listenOnLoopback(server);
  return {
    endpoint,
    client: () => new DynamoDBClient(localClientConfig(endpoint)),
    stop: () => closeServer(server),
  };
}
