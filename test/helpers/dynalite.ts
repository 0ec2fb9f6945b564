import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localClientConfig } from './aws-credentials';

export interface LocalDynamo {
  endpoint: string;
  client(): DynamoDBClient;
  stop(): Promise<void>;
}

/** Starts an in-memory dynalite on an ephemeral port. Tables become ACTIVE at once. */
export async function startDynamo(): Promise<LocalDynamo> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    client: () => new DynamoDBClient(localClientConfig(endpoint)),
    stop: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}
