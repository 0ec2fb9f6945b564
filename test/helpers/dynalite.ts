import { Agent, createServer, request as httpRequest } from 'node:http';
import dynalite from 'dynalite';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LOCAL_REGION, localClientConfig, localCredentials } from './aws-credentials';
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

export interface DynamoFaults {
  endpoint: string;
  /**
   * A client as the functions make it (`new DynamoDBClient({})`: the SDK's default retry strategy
   * and attempts), pointed at the proxy, so an injected fault meets the production retries.
   */
  client(): DynamoDBClient;
  /** The next `count` calls of `operation` (`GetItem`, …) are answered with `error` (DynamoDB's wire form, status 400). */
  inject(fault: { operation: string; count: number | 'always'; error?: string }): void;
  clear(): void;
  /** Calls per operation, answered or failed, and the failures per error. */
  readonly stats: { calls: Record<string, number>; errors: Record<string, number> };
  stop(): Promise<void>;
}

const THROTTLED = 'ProvisionedThroughputExceededException';

/**
 * A proxy in front of dynalite that fails chosen operations the way DynamoDB does on the wire
 * (`{"__type": "com.amazonaws.dynamodb.v20120810#<error>", "message": …}`, 400), and forwards the
 * rest. dynalite injects no faults, and a stub in place of the client would skip the SDK's own
 * error parsing and retries, which are what a throttled table meets first.
 */
export async function startDynamoFaults(target: LocalDynamo): Promise<DynamoFaults> {
  const stats = { calls: {} as Record<string, number>, errors: {} as Record<string, number> };
  let fault: { operation: string; remaining: number; error: string } | undefined;
  const upstream = new URL(target.endpoint);
  const server = createServer((req, res) => {
    const operation = String(req.headers['x-amz-target'] ?? '').replace(/^DynamoDB_\d+\./, '');
    stats.calls[operation] = (stats.calls[operation] ?? 0) + 1;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (fault && fault.operation === operation && fault.remaining > 0) {
        fault.remaining -= 1;
        stats.errors[fault.error] = (stats.errors[fault.error] ?? 0) + 1;
        const body = JSON.stringify({
          __type: `com.amazonaws.dynamodb.v20120810#${fault.error}`,
          message: fault.error === THROTTLED ? 'The level of configured provisioned throughput for the table was exceeded.' : 'injected',
        });
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        return;
      }
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent: false },
        (answer) => {
          res.writeHead(answer.statusCode ?? 500, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  const endpoint = await listenOnLoopback(server);
  return {
    endpoint,
    client: () =>
      new DynamoDBClient({
        endpoint,
        region: LOCAL_REGION,
        credentials: localCredentials,
        // No keep-alive (aws-credentials.ts, localClientConfig): a reset socket would be one more, unplanned, retry.
        requestHandler: { httpAgent: new Agent({ keepAlive: false }) },
      }),
    inject: ({ operation, count, error = THROTTLED }) => {
      fault = { operation, remaining: count === 'always' ? Number.POSITIVE_INFINITY : count, error };
    },
    clear: () => {
      fault = undefined;
    },
    stats,
    stop: () => closeServer(server),
  };
}
