import { Agent } from 'node:http';

/**
 * Static credentials for the local peers. They are not secrets: the peers accept any signature.
 * Setting them explicitly keeps the SDK from walking the default chain (and the network).
 */
export const LOCAL_REGION = 'eu-central-1';
export const localCredentials = { accessKeyId: 'AKIALOCALPEER000000', secretAccessKey: 'local-peer-not-a-secret' };

/**
 * One attempt per call, so a test sees exactly the calls it caused. Without keep-alive: a Node
 * server closes an idle socket after 5 s, and on a loaded machine the SDK could send on a socket
 * the peer was closing (ECONNRESET), which a single attempt does not survive. A new loopback
 * connection per call costs far less than that flake.
 */
export function localClientConfig(endpoint: string) {
  return {
    endpoint,
    region: LOCAL_REGION,
    credentials: localCredentials,
    maxAttempts: 1,
    requestHandler: { httpAgent: new Agent({ keepAlive: false }) },
  };
}
