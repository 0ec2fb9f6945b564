import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { TransportFailure, httpTransport, type TransportRequest } from '../../../src/core/accounting-api';

/**
 * The default transport over a real loopback server: what fetch did (the transport it replaced),
 * it does, and a failure is classified as the fetch transport classifies it.
 */
describe('httpTransport', () => {
  let server: http.Server;
  let base: string;
  const sockets = new Set<Socket>();
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  const agents = () => ({ http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) });

  beforeAll(async () => {
    server = http.createServer((req, res) => handler(req, res));
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const request = (overrides: Partial<TransportRequest> = {}): TransportRequest => ({
    method: 'GET',
    url: `${base}/api/v1/x/`,
    headers: { accept: 'application/json' },
    timeoutMs: 5000,
    ...overrides,
  });
  const failureOf = async (promise: Promise<unknown>) => {
    const error = await promise.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportFailure);
    return error as TransportFailure;
  };

  it('sends method, headers and body; returns status, lower-case headers, the text and its bytes; follows no redirect', async () => {
    const seen: { method?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
    handler = (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        Object.assign(seen, { method: req.method, headers: req.headers, body });
        res.setHeader('X-Request-Id', 'req_1');
        res.setHeader('Location', '/elsewhere');
        res.setHeader('Set-Cookie', ['a=1', 'b=2']);
        res.writeHead(302);
        res.end('{"name":"Müller € 😀"}');
      });
    };
    const response = await httpTransport(agents())(
      request({ method: 'POST', body: '{"ü":1}', headers: { 'content-type': 'application/json', authorization: 'Bearer t' } }),
    );
    expect(seen).toMatchObject({ method: 'POST', body: '{"ü":1}' });
    expect(seen.headers).toMatchObject({ 'content-type': 'application/json', authorization: 'Bearer t', 'content-length': '8' });
    expect(seen.headers!['accept-encoding']).toContain('gzip');
    expect(response.status).toBe(302);
    expect(response.headers).toMatchObject({ 'x-request-id': 'req_1', location: '/elsewhere', 'set-cookie': 'a=1, b=2' });
    expect(response.body).toBe('{"name":"Müller € 😀"}');
    expect(Buffer.from(response.bytes!).equals(Buffer.from(response.body, 'utf8'))).toBe(true);
  });

  it('decompresses a gzip body, as fetch does, and counts the limit in decompressed bytes', async () => {
    const text = JSON.stringify({ results: Array.from({ length: 2000 }, (_, i) => ({ i })) });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync(text));
    };
    const transport = httpTransport(agents());
    expect((await transport(request({ maxBodyBytes: 1 << 20 }))).body).toBe(text);
    const failure = await failureOf(transport(request({ maxBodyBytes: 1000 })));
    expect(failure).toMatchObject({ kind: 'too_large', limitBytes: 1000, status: 200 });
  });

  it('refuses a declared length over the limit before reading, and stops an endless body at the limit and closes it', async () => {
    let closed: Promise<void> = Promise.resolve();
    handler = (req, res) => {
      if (req.url!.includes('declared')) {
        res.writeHead(200, { 'content-length': '5000' });
        res.write('x'.repeat(10));
        return;
      }
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'.repeat(1024)), 1);
      closed = new Promise((resolve) =>
        res.on('close', () => {
          clearInterval(timer);
          resolve();
        }),
      );
    };
    const transport = httpTransport(agents());
    expect(await failureOf(transport(request({ url: `${base}/declared`, maxBodyBytes: 4096 })))).toMatchObject({
      kind: 'too_large',
      limitBytes: 4096,
      status: 200,
    });
    expect(await failureOf(transport(request({ url: `${base}/endless`, maxBodyBytes: 64 * 1024 })))).toMatchObject({ kind: 'too_large' });
    await closed; // the server saw the connection go: nothing keeps streaming
  });

  it('hands the first bytes of a 2xx body to onBodyStart once, before the rest arrives; not for an error status; a throwing hook changes nothing', async () => {
    const parts = ['{"count":2,"next":"n",', '"previous":null,', '"results":[]}'];
    let release: () => void = () => undefined;
    handler = (req, res) => {
      res.writeHead(req.url!.includes('503') ? 503 : 200);
      res.write(parts[0]);
      // The rest only once the hook has seen the head (or after a moment for a status without one).
      const rest = () => res.end(parts.slice(1).join(''));
      release = rest;
      if (req.url!.includes('503')) setTimeout(rest, 20);
    };
    const heads: string[] = [];
    const transport = httpTransport(agents());
    const response = await transport(
      request({
        onBodyStart: (head) => {
          heads.push(Buffer.from(head).toString());
          release();
        },
      }),
    );
    expect(response.body).toBe(parts.join(''));
    expect(heads).toEqual([parts[0]]);

    heads.length = 0;
    await transport(request({ url: `${base}/503`, onBodyStart: (head) => heads.push(Buffer.from(head).toString()) }));
    expect(heads).toEqual([]);

    const despite = await transport(
      request({
        onBodyStart: () => {
          setImmediate(release);
          throw new Error('hook fault');
        },
      }),
    );
    expect(despite.body).toBe(parts.join(''));
  });

  it('reports a body that breaks off as a reset: the request was processed', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('{"partial":');
      setTimeout(() => req.socket.destroy(), 10);
    };
    expect(await failureOf(httpTransport(agents())(request()))).toMatchObject({ kind: 'reset' });
  });

  it('reports nothing listening as refused (ECONNREFUSED): nothing was sent, and a later attempt may connect (not final)', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await failureOf(httpTransport(agents())(request({ url: `http://127.0.0.1:${port}/x` })))).toMatchObject({
      kind: 'refused',
      code: 'ECONNREFUSED',
      final: false,
    });
  });

  it('reports no answer in time as timeout, and https:// to an http server as a refused TLS handshake, named as fetch named it', async () => {
    handler = () => undefined; // never answers
    expect(await failureOf(httpTransport(agents())(request({ timeoutMs: 100 })))).toMatchObject({ kind: 'timeout' });
    for (const socket of sockets) socket.destroy();

    handler = (_req, res) => res.end('{}');
    const failure = await failureOf(httpTransport(agents())(request({ url: base.replace('http:', 'https:') + '/x' })));
    expect(failure).toMatchObject({ kind: 'refused', code: 'ERR_SSL_WRONG_VERSION_NUMBER', final: true });
  });

  it('keeps the connection alive between requests of one transport', async () => {
    const remotePorts = new Set<number>();
    handler = (req, res) => {
      remotePorts.add(req.socket.remotePort!);
      res.end('{}');
    };
    const transport = httpTransport(agents());
    for (let i = 0; i < 3; i++) await transport(request());
    expect(remotePorts.size).toBe(1);
  });

  it('refuses a URL it cannot send, before connecting, as final: the same URL is refused again', async () => {
    expect(await failureOf(httpTransport(agents())(request({ url: 'ftp://127.0.0.1/x' })))).toMatchObject({
      kind: 'refused',
      code: 'unsupported protocol ftp:',
      final: true,
    });
    expect(await failureOf(httpTransport(agents())(request({ url: 'not a url' })))).toMatchObject({
      kind: 'refused',
      code: 'invalid url',
      final: true,
    });
  });
});
