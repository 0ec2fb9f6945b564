import dynalite from 'dynalite';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localClientConfig } from './aws-credentials';
import { closeServer, listenOnLoopback } from './loopback';

export interface LocalDynamo {
  endpoint: string;
  client(): DynamoDBClient;
  stop(): Promise<void>;
}

/**
 * Starts an in-memory dynalite on an ephemeral port. Tables become ACTIVE at once.
 *
 * One way it differs from DynamoDB: index entries that share their partition and sort key are told
 * apart by only 24 bits of an MD5 of the item's key (dynalite 4.0.0, db/index.js `hashPrefix`), so
 * among hundreds of such ties some overwrite each other and vanish from the index. Give items that
 * a test puts in bulk distinct sort keys (the refresh benchmark's seed spreads its expiries by 1 ms).
 */
export async function startDynamo(): Promise<LocalDynamo> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const endpoint = await listenOnLoopback(server);
  return {
    endpoint,
    client: () => new DynamoDBClient(localClientConfig(endpoint)),
    stop: () => closeServer(server),
  };
}
