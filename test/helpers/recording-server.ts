import { createServer, type IncomingHttpHeaders } from 'node:http';
import { closeServer, listenOn, listenOnLoopback } from './loopback';

/**
 * A tiny HTTP server on 127.0.0.1, port 0, that records every request it gets: the "foreign
 * host" of credential-leak tests (did anything reach it, and with which headers?) and a stand-in
 * for a misbehaving upstream (a redirect, a closed port).
 */

export interface RecordedRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface CannedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface RecordingServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  port: number;
  requests: RecordedRequest[];
  stop(): Promise<void>;
}

/** An empty list page: what a foreign host would have to answer to look like the service. */
const EMPTY_PAGE: CannedResponse = {
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ count: 0, next: null, previous: null, results: [] }),
};

/**
 * `host`: the address to listen on, 127.0.0.1 unless given (a test of what the CLI refuses to send
 * to a host that is not loopback listens on one of this machine's other addresses, nonLoopbackAddress).
 */
export async function startRecordingServer(
  respond: (request: RecordedRequest) => CannedResponse = () => EMPTY_PAGE,
  host?: string,
): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const answer = respond(request);
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  const origin = host === undefined ? await listenOnLoopback(server) : await listenOn(server, host);
  let stopped: Promise<void> | undefined;
  return {
    origin,
    port: Number(new URL(origin).port),
    requests,
    stop: () => (stopped ??= closeServer(server)),
  };
}
