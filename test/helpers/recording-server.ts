import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export async function startRecordingServer(respond: (request: RecordedRequest) => CannedResponse = () => EMPTY_PAGE): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(request);
      const answer = respond(request);
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
